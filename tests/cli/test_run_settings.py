"""RocketMQ's key spellings (brokerIP1, fileReservedTime ...) accepted and shown, help texts with their
bracketed parts, no stray completion options, the NameServer's files beside the node's store, and
the HA and gRPC ports following the broker port."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from broker.namesrv.config import DEFAULT_HOME, NamesrvConfig
from broker.server.config import DEFAULT_STORE, BrokerConfig, load_broker_settings, settings_target
from broker.settings import SettingsTarget
from broker.store.config import StoreConfig
from cli import run
from cli.main import app

# RocketMQ's names (BrokerConfig / MessageStoreConfig) of settings whose snake_case differs from them
ROCKETMQ_NAMES = {
    "brokerIP1": "broker_ip1",
    "brokerIP2": "broker_ip2",
    "checkCRCOnRecover": "check_crc_on_recover",
    "storePathRootDir": "store_path",
    "fileReservedTime": "file_reserved_time_hours",
    "flushIntervalCommitLog": "flush_interval_commit_log_ms",
    "flushIntervalConsumeQueue": "flush_interval_consume_queue_ms",
    "syncFlushTimeout": "sync_flush_timeout_ms",
    "cleanResourceInterval": "clean_resource_interval_ms",
    "maxTransferCountOnMessageInMemory": "max_transfer_count_on_message",
    "maxTransferBytesOnMessageInMemory": "max_transfer_bytes_on_message",
}
INTERNAL_SPELLINGS = {
    "brokerIp1",
    "brokerIp2",
    "checkCrcOnRecover",
    "storePath",
    "fileReservedTimeHours",
    "flushIntervalCommitLogMs",
    "flushIntervalConsumeQueueMs",
    "syncFlushTimeoutMs",
    "cleanResourceIntervalMs",
    "maxTransferCountOnMessage",
    "maxTransferBytesOnMessage",
    "extra",
}


def _target() -> SettingsTarget:
    return settings_target(BrokerConfig(), StoreConfig(store_path=Path("/tmp/s")))


# -- 1. brokerIP1 and the other acronym keys -----------------------------------------------------
def test_broker_ip_keys_from_set_and_toml(tmp_path: Path) -> None:
    broker, _ = load_broker_settings(None, ["brokerIP1=10.0.0.5", "brokerIP2=10.0.1.5"], {})
    assert (broker.broker_ip1, broker.broker_ip2) == ("10.0.0.5", "10.0.1.5")
    conf = tmp_path / "rmq.toml"
    conf.write_text('[broker]\nbrokerIP1 = "10.0.0.6"\n[store]\ncheckCRCOnRecover = false\n')
    broker, store = load_broker_settings(conf)
    assert broker.broker_ip1 == "10.0.0.6" and store.check_crc_on_recover is False
    assert broker.broker_ip2 == "10.0.0.6"  # RocketMQ: brokerIP2 is brokerIP1 unless set
    assert broker.ha_server_addr == "10.0.0.6:10912"
    properties = tmp_path / "broker.conf"
    properties.write_text("brokerIP1=10.0.0.7\n")
    assert load_broker_settings(properties)[0].broker_ip1 == "10.0.0.7"
    # the spellings accepted before stay accepted
    assert load_broker_settings(None, ["broker_ip1=10.0.0.8"], {})[0].broker_ip1 == "10.0.0.8"


def test_cli_accepts_broker_ip1(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plans = _capture_plans(monkeypatch)
    result = _rmq("broker", "--store", tmp_path / "s", "--set", "brokerIP1=10.0.0.5", "--no-http")
    assert result.exit_code == 0, result.output
    assert plans[0].broker.broker_ip1 == "10.0.0.5"


# -- 2. settings shown under RocketMQ's names ------------------------------------------------------
def test_settings_are_shown_under_rocketmq_names() -> None:
    target = _target()
    shown = target.as_properties()
    assert set(ROCKETMQ_NAMES) <= set(shown)
    assert not INTERNAL_SPELLINGS & set(shown)
    assert shown["fileReservedTime"] == "72" and shown["storePathRootDir"] == "/tmp/s"
    assert target.keys() == sorted(shown)
    for key, name in ROCKETMQ_NAMES.items():
        assert target.index[key][1] == name and target.key(name) == key


def test_every_shown_key_is_accepted_back() -> None:
    shown = _target().as_properties()
    other = _target()
    other.apply(shown.items(), "GET_BROKER_CONFIG")
    assert other.as_properties() == shown


def test_namesrv_keys_unchanged() -> None:
    shown = SettingsTarget(NamesrvConfig()).as_properties()
    assert {"kvConfigPath", "configStorePath", "listenPort", "orderMessageEnable"} <= set(shown)


# -- 3. help texts keep their bracketed parts -----------------------------------------------------
@pytest.mark.parametrize(
    ("command", "texts"),
    [
        (
            ("topic", "create"),
            [
                "NameServer address(es) [env NAMESRV_ADDR, profile].",
                "Profile of ~/.config/rmq/config.toml [env RMQ_PROFILE].",
                "Seconds to wait for each answer [profile, default 5].",
                "table, json or text [profile, default table].",
                "Only this broker [default: the brokers of -c, or of the only cluster].",
            ],
        ),
        (("up",), ["Store folder [default: ~/.rmqkit/store].", "RocketMQ 5 gRPC port [default: 8081"]),
        (("broker",), ["Listen port [default: 10911].", "Store folder [default: ~/.rmqkit/store]."]),
        (("namesrv",), ["Listen port [default: 9876].", "[default: ~/.rmqkit/namesrv]"]),
        (("namesrv", "kv", "get"), ["Key [default: every key]."]),
        (("completion", "show"), ["bash, zsh or fish [default: from $SHELL]."]),
        (
            ("broker", "config", "get"),
            [
                "NameServer address(es) [env NAMESRV_ADDR, profile].",
                "Broker address [default: the only broker registered].",
            ],
        ),
    ],
)
def test_help_keeps_bracketed_text(command: tuple[str, ...], texts: list[str]) -> None:
    result = _rmq(*command, "--help")
    assert result.exit_code == 0, result.output
    flat = " ".join(line.strip(" │") for line in result.output.splitlines())
    for text in texts:
        assert text in flat, flat
    assert " ." not in flat  # what an eaten "[...]" leaves behind


# -- 4. no --install-completion / --show-completion on single commands -----------------------------
@pytest.mark.parametrize("command", ["up", "dashboard"])
def test_no_stray_completion_options(command: str) -> None:
    help_text = _rmq(command, "--help").output
    assert "--help" in help_text
    assert "--install-completion" not in help_text and "--show-completion" not in help_text
    assert _rmq(command, "--show-completion").exit_code == 2


# -- 5. the NameServer's files beside the node's store ----------------------------------------------
def test_up_keeps_namesrv_files_in_its_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plans = _capture_plans(monkeypatch)
    for store in ("a", "b"):
        assert _rmq("up", "--store", tmp_path / store, "--no-http").exit_code == 0
    assert [p.namesrv.kv_config_path for p in plans] == [
        tmp_path / "a" / "namesrv" / "kvConfig.json",
        tmp_path / "b" / "namesrv" / "kvConfig.json",
    ]
    assert plans[0].namesrv.config_store_path == tmp_path / "a" / "namesrv" / "namesrv.properties"
    assert _rmq("up", "--no-http").exit_code == 0  # the default store keeps the default folder
    assert plans[-1].store.store_path == DEFAULT_STORE
    assert plans[-1].namesrv.kv_config_path == DEFAULT_HOME / "kvConfig.json"


def test_namesrv_dir_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plans = _capture_plans(monkeypatch)
    assert _rmq("namesrv", "--no-http").exit_code == 0
    assert _rmq("namesrv", "--dir", tmp_path / "ns", "--no-http").exit_code == 0
    explicit = tmp_path / "kv.json"
    assert _rmq("namesrv", "--dir", tmp_path / "ns", "--set", f"kvConfigPath={explicit}").exit_code == 0
    assert [p.namesrv.kv_config_path for p in plans] == [
        DEFAULT_HOME / "kvConfig.json",
        tmp_path / "ns" / "kvConfig.json",
        explicit,
    ]
    assert plans[2].namesrv.config_store_path == tmp_path / "ns" / "namesrv.properties"


# -- 6. HA and gRPC ports follow the broker port -------------------------------------------------
@pytest.mark.parametrize(
    ("listen_port", "overrides", "ports"),
    [
        (None, [], (10911, 10912, 8081)),
        (20911, [], (20911, 20912, 8081)),
        (0, [], (0, 0, 0)),
        (20911, ["haListenPort=30000"], (20911, 30000, 8081)),
        (20911, ["haListenPort=10912"], (20911, 10912, 8081)),  # set, even to the default
        (0, ["grpcPort=9000", "haListenPort=9001"], (0, 9001, 9000)),
        (0, ["grpcPort=-1"], (0, 0, -1)),
        (None, ["listenPort=20911"], (20911, 20912, 8081)),
        (65535, [], (65535, 0, 8081)),
    ],
)
def test_ports_follow_the_broker_port(
    listen_port: int | None, overrides: list[str], ports: tuple[int, int, int]
) -> None:
    broker, _ = load_broker_settings(None, overrides, {}, listen_port=listen_port)
    assert (broker.listen_port, broker.ha_listen_port, broker.grpc_port) == ports


def test_up_ports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plans = _capture_plans(monkeypatch)
    store = ("--store", tmp_path / "s")
    assert _rmq("up").exit_code == 0
    assert _rmq("up", *store, "--broker-port", "20911").exit_code == 0
    assert _rmq("up", *store, "--broker-port", "0", "--namesrv-port", "0", "--http-port", "0").exit_code == 0
    assert _rmq("up", *store, "--broker-port", "0", "--grpc-port", "7000").exit_code == 0
    assert _rmq("up", *store, "--broker-port", "0", "--set", "haListenPort=7001").exit_code == 0
    config = tmp_path / "broker.toml"
    config.write_text("listenPort = 21911\nhttpPort = 21914\n")
    assert _rmq("up", *store, "-c", config).exit_code == 0  # a file's ports apply unless flags say otherwise
    assert _rmq("up", *store, "-c", config, "--broker-port", "22911", "--http-port", "22914").exit_code == 0
    seen = [
        (
            p.namesrv.listen_port,
            p.broker.listen_port,
            p.broker.ha_listen_port,
            p.http_port,
            p.broker.grpc_port,
        )
        for p in plans
    ]
    assert seen == [
        (9876, 10911, 10912, 10914, 8081),  # the documented defaults
        (9876, 20911, 20912, 10914, 8081),
        (0, 0, 0, 0, 0),
        (9876, 0, 0, 10914, 7000),
        (9876, 0, 7001, 10914, 0),
        (9876, 21911, 21912, 21914, 8081),
        (9876, 22911, 22912, 22914, 8081),
    ]


def test_banner_shows_the_ports_in_use(tmp_path: Path) -> None:
    from broker.node import Node, NodePlan

    broker, store = load_broker_settings(
        None, ["listenHost=127.0.0.1", "grpcPort=-1"], {}, store_path=tmp_path / "s", listen_port=0
    )
    store.mapped_file_size_commit_log = 1 << 20
    store.mapped_file_size_consume_queue_units = 1000
    namesrv = NamesrvConfig.in_folder(run.namesrv_folder(store.store_path))
    namesrv.listen_port = 0

    async def main() -> tuple[list[str], int, int]:
        node = Node(NodePlan(namesrv=namesrv, broker=broker, store=store))
        await node.start()
        try:
            assert node.broker is not None and node.namesrv is not None
            node.namesrv.kv_config.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
            return node.describe(), node.broker.ha_service.port, node.broker.config.listen_port
        finally:
            await node.stop()

    lines, ha_port, port = asyncio.run(main())
    assert "broker-a:4" in (tmp_path / "s" / "namesrv" / "kvConfig.json").read_text()
    assert ha_port not in (0, 10912) and port != 0
    assert f"HA          127.0.0.1:{ha_port} (slaves replicate from here)" in lines
    assert lines.index(next(line for line in lines if line.startswith("HA "))) == 2  # after the broker
    assert f"127.0.0.1:{port}, store" in lines[1]


# -- helpers ---------------------------------------------------------------------------------------
def _rmq(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "250", "NAMESRV_ADDR": ""})


def _capture_plans(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    plans: list[Any] = []

    def fake_run(plan: Any, banner: list[str], after_start: Callable[..., None] | None = None) -> None:
        plans.append(plan)

    monkeypatch.setattr(run, "_run", fake_run)
    return plans


@pytest.fixture(autouse=True)
def _no_real_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "rmq" / "config.toml"))
    yield
