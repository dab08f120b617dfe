"""``rmq cluster up|down|ps``: a local master/slave cluster, one process per server.

``up`` starts one NameServer and, per master, a broker set (master + slaves sharing a brokerName),
each with its own store folder, ports and log file under DIR, and writes ``DIR/cluster.json`` with
their pids and ports; ``down`` stops what that file lists; ``ps`` shows it with liveness.
Ports from --base-port: the NameServer gets N, broker k gets N+10(k+1) and its HA port N+10(k+1)+2.
With ``--controllers 1|3`` the brokers run in controller mode (the controllers elect each set's
master, and elect another when it dies); controller i listens on N+3+2i and replicates on the port
after it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated

import typer

from admin.errors import BadInput, NotFound, OperationFailed
from cli.output import OutputFormat, OutputOption, Section, Table, emit

STATE_FILE = "cluster.json"
DEFAULT_DIR = Path("~/.rmqkit/cluster").expanduser()
START_TIMEOUT = 60.0  # a store recovering after a kill on a loaded machine
STOP_TIMEOUT = 10.0

DirOpt = Annotated[Path, typer.Option("--dir", help="Folder for stores, logs and the state file.")]


@dataclass(frozen=True, slots=True)
class Member:
    """One process of the local cluster."""

    name: str
    role: str  # NAMESRV, CONTROLLER, ASYNC_MASTER, SYNC_MASTER, SLAVE or AUTO (the controllers decide)
    broker_name: str
    broker_id: int
    port: int
    ha_port: int
    pid: int
    store: str
    log: str
    config: str = ""  # a settings file every member reads (-c), e.g. access control; "" = none
    controllers: str = ""  # controller mode: "id-host:port;..." of every controller
    settings: tuple[str, ...] = ()  # KEY=VALUE broker settings of `up --set` (brokers only)


@dataclass(frozen=True, slots=True)
class MemberState:
    name: str
    role: str
    broker_name: str | None  # None for the NameServer
    broker_id: int
    pid: int
    port: int
    ha_port: int | None  # None for the NameServer
    alive: bool


def _alive(pid: int) -> bool:
    if pid <= 0:  # never started; and kill(0 or -n) would signal whole process groups
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _spawn(args: list[str], log: Path) -> int:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from cli.main import main; sys.exit(main())", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # survives this command; `down` stops it
        )
    return proc.pid


def member_args(directory: Path, namesrv: str, member: Member) -> list[str]:
    """The ``rmq`` arguments that run ``member``; the NameServer keeps its files in the cluster's folder."""
    config = ["-c", member.config] if member.config else []
    if member.role == "NAMESRV":
        return [
            "namesrv",
            "--port",
            str(member.port),
            "--no-http",
            "--dir",
            str(directory / "namesrv"),
            *config,
        ]
    if member.role == "CONTROLLER":
        return [
            "controller",
            "--port",
            str(member.port),
            "--dir",
            member.store,
            "--log-level",
            "INFO",
            "--set",
            f"controllerPeers={member.controllers}",
            "--set",
            f"controllerSelfId={member.name.rsplit('-', 1)[1]}",
        ]
    return [*broker_args(namesrv, member), *config]


def broker_args(namesrv: str, member: Member) -> list[str]:
    settings: dict[str, object] = {
        "brokerClusterName": "LocalCluster",
        "brokerName": member.broker_name,
        "brokerId": member.broker_id,
        "brokerRole": member.role,
        "haListenPort": member.ha_port,
        "brokerIP1": "127.0.0.1",
    }
    if member.role == "AUTO":
        addrs = ";".join(peer.partition("-")[2] for peer in member.controllers.split(";"))
        settings = {
            **settings,
            "brokerRole": "SLAVE",
            "enableControllerMode": "true",
            "controllerAddr": addrs,
            "allAckInSyncStateSet": "true",
            **CONTROLLER_MODE_TIMING,
        }
    args = ["broker", "-n", namesrv, "--port", str(member.port), "--store", member.store]
    args += ["--no-http", "--grpc-port", "-1", "--log-level", "INFO"]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    for item in member.settings:  # the operator's own settings come last and win
        args += ["--set", item]
    return args


def plan(
    directory: Path,
    masters: int,
    slaves: int,
    base_port: int,
    sync: bool,
    config: Path | None = None,
    controllers: int = 0,
    settings: tuple[str, ...] = (),
) -> list[Member]:
    """The processes to start (pids still 0): NameServer, controllers, then each master before its
    slaves (in controller mode every broker of a set starts alike and the controllers pick)."""
    conf = str(config.expanduser().resolve()) if config is not None else ""
    members = [Member("namesrv", "NAMESRV", "", 0, base_port, 0, 0, "", str(directory / "namesrv.log"), conf)]
    peers = ";".join(f"n{i}-127.0.0.1:{base_port + 3 + 2 * i}" for i in range(controllers))
    for i in range(controllers):
        name, port = f"controller-n{i}", base_port + 3 + 2 * i
        store = directory / name
        members.append(
            Member(name, "CONTROLLER", "", 0, port, port + 1, 0, str(store), f"{store}.log", conf, peers)
        )
    k = 0
    for m in range(masters):
        broker_name = f"broker-{chr(ord('a') + m)}"
        for broker_id in range(slaves + 1):
            k += 1
            port = base_port + 10 * k
            role = "SLAVE" if broker_id else "SYNC_MASTER" if sync else "ASYNC_MASTER"
            role = "AUTO" if controllers else role
            name = f"{broker_name}-{broker_id}"
            store = directory / name
            log = f"{store}.log"
            members.append(
                Member(
                    name,
                    role,
                    broker_name,
                    broker_id,
                    port,
                    port + 2,
                    0,
                    str(store),
                    log,
                    conf,
                    peers,
                    settings,
                )
            )
    return members


def read_state(directory: Path) -> list[Member]:
    path = directory / STATE_FILE
    try:
        data = json.loads(path.read_text())
        return [Member(**{**m, "settings": tuple(m.get("settings", ()))}) for m in data["members"]]
    except FileNotFoundError:
        raise NotFound(f"no local cluster in {directory} ({STATE_FILE} not found)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise OperationFailed(f"{path}: unreadable state file: {exc}") from None


def start(
    directory: Path,
    masters: int,
    slaves: int,
    base_port: int,
    sync: bool,
    config: Path | None = None,
    controllers: int = 0,
    settings: tuple[str, ...] = (),
) -> list[Member]:
    """Start every process, wait until each listens, and write the state file."""
    if masters < 1 or slaves < 0:
        raise BadInput("--masters must be at least 1 and --slaves-per-master at least 0")
    if controllers not in (0, 1, 3):
        raise BadInput("--controllers must be 1 or 3 (or 0: fixed roles, no controller)")
    if (directory / STATE_FILE).exists() and any(_alive(m.pid) for m in read_state(directory)):
        raise BadInput(f"a local cluster is already running from {directory}; `rmq cluster down` first")
    directory.mkdir(parents=True, exist_ok=True)
    if config is not None and not config.expanduser().is_file():
        raise BadInput(f"--config {config}: no such file")
    bad = [item for item in settings if "=" not in item]
    if bad:
        raise BadInput(f"--set {bad[0]!r}: expected KEY=VALUE")
    members = plan(directory, masters, slaves, base_port, sync, config, controllers, tuple(settings))
    busy = [m.port for m in members if _listening(m.port)]
    if busy:
        raise BadInput(f"port(s) {', '.join(map(str, busy))} already in use; choose another --base-port")
    namesrv = f"127.0.0.1:{base_port}"
    started: list[Member] = []
    try:
        for member in members:
            pid = _spawn(member_args(directory, namesrv, member), Path(member.log))
            started.append(Member(**{**asdict(member), "pid": pid}))
            _write_state(directory, started)
            _wait_listening(started[-1])
    except BaseException:
        stop(directory)  # all or nothing
        raise
    return started


def _write_state(directory: Path, members: list[Member]) -> None:
    tmp = directory / f"{STATE_FILE}.tmp"
    tmp.write_text(json.dumps({"members": [asdict(m) for m in members]}, indent=1))
    tmp.replace(directory / STATE_FILE)


def _wait_listening(member: Member) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not _listening(member.port):
        if not _alive(member.pid):
            raise OperationFailed(f"{member.name} exited at start; see {member.log}")
        if time.monotonic() > deadline:
            raise OperationFailed(f"{member.name} is not listening on {member.port}; see {member.log}")
        time.sleep(0.05)


def restart(directory: Path, name: str) -> Member:
    """Start member ``name`` of the state file again (after it died) with the same settings."""
    members = read_state(directory)
    member = next((m for m in members if m.name == name), None)
    if member is None:
        raise NotFound(f"no member {name} in {directory / STATE_FILE}")
    if _alive(member.pid):
        raise BadInput(f"{name} is still running (pid {member.pid})")
    namesrv = next(f"127.0.0.1:{m.port}" for m in members if m.role == "NAMESRV")
    member = replace(member, pid=_spawn(member_args(directory, namesrv, member), Path(member.log)))
    _write_state(directory, [member if m.name == name else m for m in members])
    _wait_listening(member)
    return member


def stop(directory: Path) -> list[MemberState]:
    """SIGTERM brokers (slaves first), then the NameServer; SIGKILL what outlives the grace time."""
    members = read_state(directory)
    order = sorted(members, key=lambda m: (m.role == "NAMESRV", m.role == "CONTROLLER", -m.broker_id))
    for member in order:
        if _alive(member.pid):
            os.kill(member.pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT
            while _alive(member.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(member.pid):
                os.kill(member.pid, signal.SIGKILL)
    (directory / STATE_FILE).unlink(missing_ok=True)
    return status(members)


def status(members: list[Member]) -> list[MemberState]:
    return [_state(m) for m in members]


def _state(m: Member) -> MemberState:
    return MemberState(
        m.name, m.role, m.broker_name or None, m.broker_id, m.pid, m.port, m.ha_port or None, _alive(m.pid)
    )


# controller mode of a local cluster: a dead master is noticed within 3 s (RocketMQ's default is 10 s)
CONTROLLER_MODE_TIMING = {
    "controllerHeartBeatTimeoutMills": 3000,
    "brokerHeartbeatInterval": 500,
    "syncBrokerMetadataPeriod": 500,
    "haMaxTimeSlaveNotCatchup": 5000,
}


def _table(states: list[MemberState]) -> list[Section]:
    return [
        Table(
            ["name", "role", "broker", "id", "pid", "port", "HA port", "alive"],
            [
                (
                    s.name,
                    s.role,
                    s.broker_name,
                    None if s.role in ("NAMESRV", "CONTROLLER") else s.broker_id,
                    s.pid,
                    s.port,
                    s.ha_port,
                    "yes" if s.alive else "no",
                )
                for s in states
            ],
        )
    ]


def up(
    masters: Annotated[int, typer.Option("--masters", help="Broker sets (one master each).")] = 2,
    slaves_per_master: Annotated[int, typer.Option("--slaves-per-master", help="Slaves per master.")] = 1,
    directory: DirOpt = DEFAULT_DIR,
    base_port: Annotated[int, typer.Option("--base-port", help="NameServer port; brokers follow.")] = 19876,
    sync: Annotated[bool, typer.Option("--sync", help="SYNC_MASTER instead of ASYNC_MASTER.")] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "-c", "--config", help="Settings file every member reads (e.g. aclEnable, aclFile, TLS)."
        ),
    ] = None,
    controllers: Annotated[
        int,
        typer.Option(
            "--controllers",
            help="1 or 3: controller mode, where controllers elect each set's master (automatic failover).",
        ),
    ] = 0,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="A setting of every broker (repeatable)."),
    ] = None,
    output: OutputOption = OutputFormat.TABLE,
) -> None:
    """Start a local master/slave cluster: one NameServer and a process per broker."""
    states = status(
        start(
            directory.expanduser(),
            masters,
            slaves_per_master,
            base_port,
            sync,
            config,
            controllers,
            tuple(set_ or ()),
        )
    )
    emit(output, states, lambda: _table(states))


def down(directory: DirOpt = DEFAULT_DIR, output: OutputOption = OutputFormat.TABLE) -> None:
    """Stop the local cluster started by `rmq cluster up`."""
    states = stop(directory.expanduser())
    emit(output, states, lambda: _table(states))


def ps(directory: DirOpt = DEFAULT_DIR, output: OutputOption = OutputFormat.TABLE) -> None:
    """The processes of the local cluster: role, ports and whether each is alive."""
    states = status(read_state(directory.expanduser()))
    emit(output, states, lambda: _table(states))
