"""Run the peer-client drivers from tests and turn their JSON lines into typed results.

Every driver prints one JSON object per line on stdout (see ``drivers/_common.js`` and
``drivers/_cppkit.py``); the last is a ``summary``. Exit codes: 0 goal reached, 1 not reached,
2 bad command line, 3 client library failed to load.

Blocking use::

    result = run_cpp_producer(namesrv, "TopicA", count=3, tags="TagA", key_prefix="k")
    result.check()                      # raises DriverFailed (with stderr and client-log tails) unless rc 0
    assert [m.queue_offset for m in result.sent] == [0, 1, 2]

Background use (start a consumer, produce, then collect)::

    with start_alions_consumer(namesrv, "TopicA", group="G1", expect=3, timeout=60) as consumer:
        consumer.wait_for("assigned", timeout=30)
        run_alions_producer(namesrv, "TopicA", count=3).check()
        result = consumer.finish()
    assert sorted(m.body for m in result.consumed) == [b"hello-0", b"hello-1", b"hello-2"]

Each run gets ``HOME`` pointed at a scratch folder (the clients write logs under ``$HOME/logs``); pass
``home=tmp_path / "x"`` to keep it, otherwise a temporary folder is used and removed afterwards.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, ParamSpec, TypedDict, Unpack

from tests.peers import install

DRIVERS = Path(__file__).resolve().parent / "drivers"
Client = Literal["alions", "cpp"]
# how much longer than the driver's own --timeout the runner waits before killing it
KILL_MARGIN = 15.0
TAIL_LINES = 40
P = ParamSpec("P")


class DriverError(AssertionError):
    """A driver run that did not do what the test needed (message carries the diagnostics)."""


class DriverFailed(DriverError):
    pass


class DriverTimeout(DriverError):
    pass


@dataclass(frozen=True)
class SentMessage:
    index: int | None
    msg_id: str | None
    queue_id: int | None  # None for the C++ client (its C API does not report it)
    queue_offset: int | None
    status: str
    tags: str | None
    keys: str | None


@dataclass(frozen=True)
class ReceivedMessage:
    topic: str
    tags: str | None
    keys: str | None
    body: bytes
    msg_id: str | None
    queue_id: int
    queue_offset: int
    reconsume_times: int
    commit_log_offset: int | None
    properties: dict[str, str]
    action: str | None  # "ok" / "fail" for push consumers, None for the pull consumer
    queue_topic: str | None  # ali-ons: the queue it came from (e.g. %RETRY%group)
    raw: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class ErrorEvent:
    name: str
    message: str
    code: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)


@dataclass
class DriverResult:
    driver: str
    argv: list[str]
    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    stdout_noise: list[str]  # stdout lines that were not JSON objects
    client_log: str  # tail of the client's own log files under $HOME/logs
    elapsed: float

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == kind]

    @property
    def summary(self) -> dict[str, Any]:
        found = self.of("summary")
        if not found:
            raise DriverFailed(self.describe("the driver printed no summary line"))
        return found[-1]

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def sent(self) -> list[SentMessage]:
        return [
            SentMessage(
                index=e.get("index"),
                msg_id=e.get("msgId"),
                queue_id=_opt_int(e.get("queueId")),
                queue_offset=_opt_int(e.get("queueOffset")),
                status=str(e.get("status")),
                tags=e.get("tags"),
                keys=e.get("keys"),
            )
            for e in self.of("sent")
        ]

    @property
    def received(self) -> list[ReceivedMessage]:
        """Every delivery, including the ones the driver failed on purpose (--fail-first)."""
        return [_received(e) for e in self.of("received")]

    @property
    def consumed(self) -> list[ReceivedMessage]:
        """Deliveries the consumer accepted."""
        return [m for m in self.received if m.action != "fail"]

    @property
    def errors(self) -> list[ErrorEvent]:
        """Client errors, send errors, driver timeouts and (C++) connection failures."""
        return [
            ErrorEvent(
                name=str(e.get("name", "Error")),
                message=str(e.get("error", "")),
                code=None if e.get("code") is None else str(e.get("code")),
                raw=e,
            )
            for e in self.events
            if e.get("event") in ("error", "send_error")
        ]

    def check(self) -> DriverResult:
        """Returns self when the driver reached its goal (exit 0), else raises DriverFailed."""
        if self.returncode != 0:
            raise DriverFailed(self.describe(f"exit code {self.returncode}"))
        return self

    def describe(self, problem: str) -> str:
        lines = [
            f"{self.driver} failed: {problem} after {self.elapsed:.1f}s",
            f"  argv: {' '.join(self.argv)}",
        ]
        errors = self.errors
        if errors:
            lines.append(f"  {len(errors)} error event(s), first ones:")
            lines += [f"    {e.name}: {e.message[:300]}" for e in errors[:8]]
        if self.events:
            lines.append(f"  last event: {json.dumps(self.events[-1])[:500]}")
        if self.stdout_noise:
            lines.append("  non-JSON stdout: " + " | ".join(self.stdout_noise[-5:])[:500])
        lines.append(_tail_block("stderr", self.stderr))
        if self.client_log:  # already cut to the last lines of each file
            lines.append("  client log:")
            lines += ["    " + line for line in self.client_log.splitlines()]
        return "\n".join(lines)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _received(e: dict[str, Any]) -> ReceivedMessage:
    props = e.get("properties") or {}
    return ReceivedMessage(
        topic=str(e.get("topic")),
        tags=e.get("tags"),
        keys=e.get("keys"),
        body=base64.b64decode(e.get("body") or ""),
        msg_id=e.get("msgId"),
        queue_id=int(e.get("queueId", -1)),
        queue_offset=int(e.get("queueOffset", -1)),
        reconsume_times=int(e.get("reconsumeTimes", 0)),
        commit_log_offset=_opt_int(e.get("commitLogOffset")),
        properties={str(k): str(v) for k, v in props.items()},
        action=e.get("action"),
        queue_topic=e.get("queueTopic"),
        raw=e,
    )


def _tail_block(title: str, text: str) -> str:
    lines = text.rstrip().splitlines()
    if not lines:
        return f"  {title}: (empty)"
    shown = lines[-TAIL_LINES:]
    header = f"  {title} (last {len(shown)} of {len(lines)} lines):"
    return "\n".join([header, *("    " + line for line in shown)])


def _client_log_tail(home: Path) -> str:
    logs = home / "logs"
    if not logs.is_dir():
        return ""
    chunks = []
    for path in sorted(p for p in logs.rglob("*") if p.is_file()):
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        chunks.append(f"== {path.relative_to(home)} ==")
        chunks += lines[-TAIL_LINES:]
    return "\n".join(chunks)


def _command(client: Client, script: str) -> tuple[list[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "NODE_"))}
    if client == "alions":
        env["NODE_PATH"] = str(install.ensure_ali_ons())
        return [install.node_executable(), str(DRIVERS / script)], env
    env["PYTHONUNBUFFERED"] = "1"
    return [str(install.ensure_cpp_client()), str(DRIVERS / script)], env


class DriverProcess:
    """A driver running in the background; use as a context manager so it is always reaped."""

    def __init__(
        self,
        client: Client,
        script: str,
        args: Sequence[str],
        *,
        timeout: float,
        home: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        cmd, full_env = _command(client, script)
        self._own_home = home is None
        self.home = Path(tempfile.mkdtemp(prefix="rmq-peer-home-")) if home is None else home
        self.home.mkdir(parents=True, exist_ok=True)
        full_env["HOME"] = str(self.home)
        full_env.update(env or {})
        self.driver = script
        self.argv = [*cmd, *args]
        self.kill_after = timeout + KILL_MARGIN
        self.events: list[dict[str, Any]] = []
        self.arrived: list[float] = []  # time.monotonic() when each event was read, as events
        self.noise: list[str] = []
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: list[str] = []
        self._started = time.monotonic()
        self._result: DriverResult | None = None
        self._proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=full_env,
            start_new_session=True,
        )
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict):
                self.arrived.append(time.monotonic())  # first: events[i] always has arrived[i]
                self.events.append(event)
                self._lines.put(event)
            else:
                self.noise.append(line)
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line)

    def wait_for(self, kind: str, timeout: float = 30.0) -> dict[str, Any]:
        """Blocks until the driver prints an event of this kind (already printed ones count too)."""
        seen = 0
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events[seen:]:
                if event.get("event") == kind:
                    return event
            seen = len(self.events)
            left = deadline - time.monotonic()
            if left <= 0:
                raise DriverTimeout(self._snapshot().describe(f"no {kind!r} event within {timeout:g}s"))
            try:
                item = self._lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if item is None:  # stdout closed: the driver is ending
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=5)
                for event in self.events[seen:]:
                    if event.get("event") == kind:
                        return event
                raise DriverFailed(self.finish().describe(f"exited before printing a {kind!r} event"))

    def finish(self) -> DriverResult:
        """Waits for the driver to end (killing it past its timeout) and returns its result."""
        if self._result is not None:
            return self._result
        left = self.kill_after - (time.monotonic() - self._started)
        timed_out = False
        try:
            self._proc.wait(timeout=max(left, 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
            self._kill()
        self._result = self._collect()
        if timed_out:
            raise DriverTimeout(self._result.describe(f"still running after {self.kill_after:g}s, killed"))
        return self._result

    def stop(self) -> DriverResult:
        """Ends the driver now (SIGTERM, then SIGKILL) and returns what it printed."""
        if self._result is None:
            self._kill()
            self._result = self._collect()
        return self._result

    def _kill(self) -> None:
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, 15)
                self._proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                if self._proc.poll() is None:
                    os.killpg(self._proc.pid, 9)
                    self._proc.wait()

    def _collect(self) -> DriverResult:
        for reader in self._readers:
            reader.join(timeout=5)
        result = self._snapshot()
        if self._own_home:
            shutil.rmtree(self.home, ignore_errors=True)
        return result

    def _snapshot(self) -> DriverResult:
        return DriverResult(
            driver=self.driver,
            argv=self.argv,
            returncode=self._proc.returncode if self._proc.returncode is not None else -1,
            events=list(self.events),
            stderr="".join(self._stderr),
            stdout_noise=list(self.noise),
            client_log=_client_log_tail(self.home),
            elapsed=time.monotonic() - self._started,
        )

    def __enter__(self) -> DriverProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_driver(
    client: Client,
    script: str,
    args: Sequence[str],
    *,
    timeout: float,
    home: Path | None = None,
    env: dict[str, str] | None = None,
) -> DriverProcess:
    """Starts any driver script with raw arguments; ``timeout`` is the driver's own --timeout."""
    return DriverProcess(client, script, args, timeout=timeout, home=home, env=env)


def _blocking(start: Callable[P, DriverProcess]) -> Callable[P, DriverResult]:
    """The ``run_*`` form of a ``start_*`` function: start the driver, wait for its end, return its result."""

    def run(*args: P.args, **kwargs: P.kwargs) -> DriverResult:
        with start(*args, **kwargs) as proc:
            return proc.finish()

    return run


run_driver = _blocking(start_driver)


# --- typed front ends -------------------------------------------------------------------------------


class ProducerFlags(TypedDict, total=False):
    """What every producer driver takes; ``tags`` rotate per message: tags[i % len]."""

    group: str | None
    count: int  # default 1
    tags: str | Sequence[str] | None
    key_prefix: str | None
    body: str  # default "hello"
    body_size: int
    delay_level: int


def _producer_args(namesrv: str, topic: str, timeout: float, flags: ProducerFlags) -> list[str]:
    args = [namesrv, topic, "--count", str(flags.get("count", 1)), "--body", flags.get("body", "hello")]
    args += ["--timeout", f"{timeout:g}"]
    if group := flags.get("group"):
        args += ["--group", group]
    if tags := flags.get("tags"):
        args += ["--tags", tags if isinstance(tags, str) else ",".join(tags)]
    if (key_prefix := flags.get("key_prefix")) is not None:
        args += ["--key-prefix", key_prefix]
    if body_size := flags.get("body_size"):
        args += ["--body-size", str(body_size)]
    if delay_level := flags.get("delay_level"):
        args += ["--delay-level", str(delay_level)]
    return args


def run_alions_producer(
    namesrv: str,
    topic: str,
    *,
    timeout: float = 30.0,
    home: Path | None = None,
    **flags: Unpack[ProducerFlags],
) -> DriverResult:
    """Sends ``count`` messages (SEND_MESSAGE_V2)."""
    args = _producer_args(namesrv, topic, timeout, flags)
    return run_driver("alions", "alions_producer.js", args, timeout=timeout, home=home)


def run_cpp_producer(
    namesrv: str,
    topic: str,
    *,
    properties: dict[str, str] | None = None,
    batch: bool = False,
    timeout: float = 30.0,
    home: Path | None = None,
    **flags: Unpack[ProducerFlags],
) -> DriverResult:
    """Sends ``count`` messages (SEND_MESSAGE v1 header, or one SEND_BATCH_MESSAGE with ``batch``)."""
    args = _producer_args(namesrv, topic, timeout, flags)
    for name, value in (properties or {}).items():
        args += ["--property", f"{name}={value}"]
    if batch:
        args.append("--batch")
    return run_driver("cpp", "cpp_producer.py", args, timeout=timeout, home=home)


class ConsumerFlags(TypedDict, total=False):
    """What every push consumer driver takes: ``expect`` messages, failing the first ``fail_first``
    deliveries on purpose, then staying ``linger`` seconds more."""

    group: str | None
    tags: str  # default "*"
    expect: int | None
    fail_first: int
    linger: float


def _consumer_args(namesrv: str, topic: str, timeout: float, flags: ConsumerFlags) -> list[str]:
    args = [namesrv, topic, "--tags", flags.get("tags", "*"), "--timeout", f"{timeout:g}"]
    if group := flags.get("group"):
        args += ["--group", group]
    if (expect := flags.get("expect")) is not None:
        args += ["--expect", str(expect)]
    if fail_first := flags.get("fail_first"):
        args += ["--fail-first", str(fail_first)]
    if linger := flags.get("linger"):
        args += ["--linger", f"{linger:g}"]
    return args


def start_alions_consumer(
    namesrv: str,
    topic: str,
    *,
    from_where: Literal["first", "last", "timestamp"] = "first",
    timeout: float = 60.0,
    home: Path | None = None,
    **flags: Unpack[ConsumerFlags],
) -> DriverProcess:
    """An ali-ons push consumer in the background; it prints ``assigned`` after each rebalance."""
    args = [*_consumer_args(namesrv, topic, timeout, flags), "--from", from_where]
    linger = flags.get("linger", 0.0)
    return start_driver("alions", "alions_consumer.js", args, timeout=timeout + linger, home=home)


run_alions_consumer = _blocking(start_alions_consumer)


def start_cpp_push_consumer(
    namesrv: str,
    topic: str,
    *,
    threads: int = 1,
    timeout: float = 60.0,
    home: Path | None = None,
    **flags: Unpack[ConsumerFlags],
) -> DriverProcess:
    """A C++ push consumer in the background (always CONSUME_FROM_LAST_OFFSET for a new group)."""
    args = [*_consumer_args(namesrv, topic, timeout, flags), "--threads", str(threads)]
    linger = flags.get("linger", 0.0)
    return start_driver("cpp", "cpp_push_consumer.py", args, timeout=timeout + linger, home=home)


run_cpp_push_consumer = _blocking(start_cpp_push_consumer)


def run_cpp_pull_consumer(
    namesrv: str,
    topic: str,
    *,
    group: str | None = None,
    tags: str = "*",
    expect: int | None = None,
    timeout: float = 30.0,
    max_num: int = 32,
    home: Path | None = None,
) -> DriverResult:
    """Pulls every queue from offset 0; without ``expect`` it stops once all queues are drained."""
    args = [namesrv, topic, "--tags", tags, "--timeout", f"{timeout:g}", "--max-num", str(max_num)]
    if group:
        args += ["--group", group]
    if expect is not None:
        args += ["--expect", str(expect)]
    return run_driver("cpp", "cpp_pull_consumer.py", args, timeout=timeout, home=home)
