"""Broker settings (RocketMQ's BrokerConfig names) and how they are loaded: defaults < file
(TOML or broker.conf) < environment (``NAMESRV_ADDR``) < ``--set`` flags."""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from broker.acl.settings import SecuritySettings
from broker.settings import SettingsError, SettingsTarget, parse_overrides, read_settings_file
from broker.store.config import StoreConfig

DEFAULT_STORE = Path("~/.rmqkit/store").expanduser()
BROKER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE")


@dataclass(slots=True)
class BrokerConfig(SecuritySettings):  # + aclEnable, aclFile, tls* (broker/acl/settings.py)
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = socket.gethostname().split(".")[0] or "DEFAULT_BROKER"
    broker_id: int = 0
    broker_ip1: str = "127.0.0.1"  # the address clients reach; also the store host of MessageIds
    listen_host: str = "0.0.0.0"
    listen_port: int = 10911
    namesrv_addr: str = ""  # "host:port;host:port"
    broker_permission: int = 6
    broker_role: str = "ASYNC_MASTER"
    ha_listen_port: int = 10912  # 0 = any free port
    ha_master_address: str = ""  # a slave's fixed master HA address; empty = the NameServer's answer
    ha_send_heartbeat_interval: int = 5000
    ha_housekeeping_interval: int = 20_000  # a silent peer is dropped after this long
    ha_transfer_batch_size: int = 256 * 1024
    ha_max_gap_not_in_sync: int = 256 * 1024 * 1024
    ha_verify_window_bytes: int = 1024 * 1024  # resent on connect so a diverged slave notices
    slave_read_enable: bool = False
    slave_read_threshold_bytes: int = 0  # a pull further behind goes to the slave; 0 = 40% of RAM
    slave_sync_interval_ms: int = 10_000  # metadata sync master -> slave (SlaveSynchronize)
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    register_name_server_period: int = 30_000
    flush_consumer_offset_interval: int = 5000
    flush_delay_offset_interval: int = 10_000
    channel_expired_timeout: int = 120_000
    server_channel_max_idle_time_seconds: int = 120
    wait_time_mills_in_send_queue: int = 200
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 30_000
    reject_transaction_message: bool = False
    recall_message_enable: bool = False  # RECALL_MESSAGE / RecallMessage are refused until switched on
    allow_recall_when_broker_not_writeable: bool = True
    enable_property_filter: bool = False
    notify_consumer_ids_changed_enable: bool = True
    use_server_side_reset_offset: bool = True
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    serialize_type: str = "JSON"
    http_port: int = 10914  # Prometheus /metrics, /healthz, /readyz; 0 turns it off
    grpc_port: int = 8081  # RocketMQ 5 gRPC MessagingService; 0 = any free port, -1 = off

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.replace(",", ";").split(";") if a.strip()]

    def validate(self) -> None:
        if self.broker_role.upper() not in BROKER_ROLES:
            raise SettingsError(
                f"setting brokerRole: {self.broker_role!r} is not one of {', '.join(BROKER_ROLES)}"
            )
        self.broker_role = self.broker_role.upper()
        if not 0 <= self.broker_permission <= 7:
            raise SettingsError(f"setting brokerPermission: {self.broker_permission} is not within 0..7")
        self.validate_security()
        if self.serialize_type.upper() not in ("JSON", "ROCKETMQ"):
            raise SettingsError(f"setting serializeType: {self.serialize_type!r} is not JSON or ROCKETMQ")


# RocketMQ keys whose names or units differ from the store's fields
STORE_ALIASES = {
    "storePathRootDir": "store_path",
    "mappedFileSizeConsumeQueueUnits": "mapped_file_size_consume_queue_units",
    "flushIntervalCommitLog": "flush_interval_commit_log_ms",
    "flushIntervalConsumeQueue": "flush_interval_consume_queue_ms",
    "syncFlushTimeout": "sync_flush_timeout_ms",
    "checkCRCOnRecover": "check_crc_on_recover",
    "fileReservedTime": "file_reserved_time_hours",
    "cleanResourceInterval": "clean_resource_interval_ms",
    "maxTransferCountOnMessageInMemory": "max_transfer_count_on_message",
    "maxTransferBytesOnMessageInMemory": "max_transfer_bytes_on_message",
}


def settings_target(broker: BrokerConfig, store: StoreConfig) -> SettingsTarget:
    return SettingsTarget(broker, store, aliases=STORE_ALIASES)


def load_broker_settings(
    config_file: Path | None = None,
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    *,
    store_path: Path | None = None,
) -> tuple[BrokerConfig, StoreConfig]:
    broker = BrokerConfig()
    store = StoreConfig(store_path=store_path or DEFAULT_STORE)
    target = settings_target(broker, store)
    if config_file is not None:
        target.apply(read_settings_file(config_file), str(config_file))
    environ = env or {}
    if environ.get("NAMESRV_ADDR") and not any(
        k.startswith(("namesrvAddr", "namesrv_addr")) for k in overrides
    ):
        target.apply([("namesrvAddr", environ["NAMESRV_ADDR"])], "environment NAMESRV_ADDR")
    target.apply(parse_overrides(overrides), "--set")
    if store_path is not None:
        store.store_path = store_path
    broker.validate()
    if store.flush_disk_type.upper() not in ("ASYNC_FLUSH", "SYNC_FLUSH"):
        raise SettingsError(
            f"setting flushDiskType: {store.flush_disk_type!r} is not ASYNC_FLUSH or SYNC_FLUSH"
        )
    store.flush_disk_type = store.flush_disk_type.upper()
    try:
        store.delay_levels_ms  # noqa: B018 - parsed now so that a bad value fails at start
    except ValueError as exc:
        raise SettingsError(f"setting messageDelayLevel: {exc}") from None
    return broker, store
