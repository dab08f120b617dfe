"""Broker settings: RocketMQ's own key names, TOML, --set and NAMESRV_ADDR, and precise errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.server.config import load_broker_settings
from broker.settings import SettingsError, parse_properties


def test_broker_conf_properties_with_rocketmq_names(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# sample\nbrokerClusterName = C1\nbrokerName=broker-b\nbrokerId : 1\n! comment\n"
        "flushDiskType = SYNC_FLUSH\nfileReservedTime=48\nmessageDelayLevel=1s 2s \\\n 3s\n"
        "storePathRootDir=" + str(tmp_path / "s") + "\n"
    )
    broker, store = load_broker_settings(conf)
    assert (broker.broker_cluster_name, broker.broker_name, broker.broker_id) == ("C1", "broker-b", 1)
    assert store.flush_disk_type == "SYNC_FLUSH" and store.sync_flush
    assert store.file_reserved_time_hours == 48
    assert store.delay_levels_ms == [1000, 2000, 3000]
    assert store.store_path == tmp_path / "s"


def test_toml_tables_env_and_overrides_in_order(tmp_path: Path) -> None:
    conf = tmp_path / "rmq.toml"
    conf.write_text('[broker]\nbrokerName = "t1"\nlisten_port = 1\n[store]\nmaxMessageSize = 1024\n')
    broker, store = load_broker_settings(
        conf, ["listenPort=2", "autoCreateTopicEnable=false"], {"NAMESRV_ADDR": "10.0.0.1:9876;10.0.0.2:9876"}
    )
    assert (broker.broker_name, broker.listen_port, broker.auto_create_topic_enable) == ("t1", 2, False)
    assert store.max_message_size == 1024
    assert broker.namesrv_addrs == ["10.0.0.1:9876", "10.0.0.2:9876"]
    flag_wins, _ = load_broker_settings(None, ["namesrvAddr=1.1.1.1:1"], {"NAMESRV_ADDR": "2.2.2.2:2"})
    assert flag_wins.namesrv_addrs == ["1.1.1.1:1"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("brokerNmae=x", "unknown setting 'brokerNmae' (--set)"),
        ("listenPort=abc", "setting listenPort (--set): 'abc' is not an integer"),
        ("autoCreateTopicEnable=yes", "is not true or false"),
        ("brokerRole=LEADER", "brokerRole: 'LEADER' is not one of ASYNC_MASTER, SYNC_MASTER, SLAVE"),
        ("flushDiskType=SOMETIMES", "flushDiskType: 'SOMETIMES' is not ASYNC_FLUSH or SYNC_FLUSH"),
        ("messageDelayLevel=1x", "bad delay level '1x'"),
        ("novalue", "--set expects KEY=VALUE"),
    ],
)
def test_bad_settings_name_the_key(override: str, message: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_broker_settings(None, [override], {})
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_file_lines_name_file_and_line(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=a\njust words\n")
    with pytest.raises(SettingsError, match=r"broker.conf line 2: expected key=value"):
        load_broker_settings(conf)
    with pytest.raises(SettingsError, match="cannot read configuration file"):
        load_broker_settings(tmp_path / "missing.conf")
    bad_toml = tmp_path / "x.toml"
    bad_toml.write_text("brokerName = \n")
    with pytest.raises(SettingsError, match=r"x.toml"):
        load_broker_settings(bad_toml)


def test_properties_parser_keeps_colons_in_values() -> None:
    assert parse_properties("namesrvAddr=1.2.3.4:9876\nk: v\n", "t") == [
        ("namesrvAddr", "1.2.3.4:9876"),
        ("k", "v"),
    ]
