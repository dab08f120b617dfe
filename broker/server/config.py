"""Broker settings (RocketMQ's BrokerConfig names) and how they are loaded: defaults < file
(TOML or broker.conf) < environment (``NAMESRV_ADDR``) < ``--set`` flags.

Ports that follow the broker's own unless set: haListenPort is listenPort + 1 (RocketMQ's rule; any
free port when listenPort is 0), and with listenPort 0 the gRPC port is any free one too.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path

from broker.acl.settings import SecuritySettings
from broker.protocol.request_mode import MessageRequestMode
from broker.settings import SettingsError, SettingsTarget, camel, parse_overrides, read_settings_file
from broker.store.config import StoreConfig

DEFAULT_STORE = Path("~/.rmqkit/store").expanduser()
BROKER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE")


@dataclass(slots=True)
class BrokerConfig(SecuritySettings):  # + aclEnable, aclFile, tls* (broker/acl/settings.py)
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = socket.gethostname().split(".")[0] or "DEFAULT_BROKER"
    broker_id: int = 0
    # the address clients reach; also the store host of MessageIds
    broker_ip1: str = field(default="127.0.0.1", metadata={"key": "brokerIP1"})
    # the address slaves reach the HA port at; empty = brokerIP1
    broker_ip2: str = field(default="", metadata={"key": "brokerIP2"})
    listen_host: str = "0.0.0.0"
    listen_port: int = 10911
    namesrv_addr: str = ""  # "host:port;host:port"
    broker_permission: int = 6
    broker_role: str = "ASYNC_MASTER"
    ha_listen_port: int = 10912  # 0 = any free port; listenPort + 1 unless set (load_broker_settings)
    ha_master_address: str = ""  # a slave's fixed master HA address; empty = the NameServer's answer
    ha_send_heartbeat_interval: int = 5000
    ha_housekeeping_interval: int = 20_000  # a silent peer is dropped after this long
    ha_transfer_batch_size: int = 256 * 1024
    ha_max_gap_not_in_sync: int = 256 * 1024 * 1024
    ha_verify_window_bytes: int = 1024 * 1024  # resent on connect so a diverged slave notices
    slave_read_enable: bool = False
    # controller mode: the controller picks the master of the group and its broker ids
    enable_controller_mode: bool = False
    controller_addr: str = ""  # every controller, "host:port;host:port"
    controller_heart_beat_timeout_mills: int = 10_000  # the controller elects after this much silence
    broker_heartbeat_interval: int = 1000  # ms between heartbeats to every controller
    sync_broker_metadata_period: int = 1000  # ms between asking the controller for the group's master
    all_ack_in_sync_state_set: bool = False  # a send is acknowledged once every in-sync replica has it
    ha_max_time_slave_not_catchup: int = 15_000  # ms a replica may lag before it leaves the SyncStateSet
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
    compressed_register: bool = False  # every full registration zlib-compressed, not only large ones
    flush_consumer_offset_interval: int = 5000
    flush_delay_offset_interval: int = 10_000
    channel_expired_timeout: int = 120_000
    server_channel_max_idle_time_seconds: int = 120
    wait_time_mills_in_send_queue: int = 200
    # message appends on the event loop instead of the store-writer thread (~10-20 % more sends/s,
    # less CPU per send); after an append stalled in the kernel they go to the thread for a minute,
    # where [PC_SYNCHRONIZED] answers can turn sends away meanwhile (broker/server/write_bursts.py)
    append_on_event_loop: bool = True
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 30_000
    reject_transaction_message: bool = False
    recall_message_enable: bool = False  # RECALL_MESSAGE / RecallMessage are refused until switched on
    allow_recall_when_broker_not_writeable: bool = True
    enable_topic_message_type_check: bool = True  # gRPC sends must match the topic's message.type
    enable_mixed_message_type: bool = False  # whether a topic may be created with message.type=MIXED
    enable_property_filter: bool = False
    notify_consumer_ids_changed_enable: bool = True
    use_server_side_reset_offset: bool = True
    # a queue that changed hands more often than this within the window is flapping (rmq group rebalances)
    rebalance_flap_moves: int = 3
    rebalance_flap_window_mills: int = 300_000
    # QUERY_ASSIGNMENT (clients that let the brokers balance): false hands every consumer all queues
    server_load_balancer_enable: bool = True
    # the mode of a topic@group nobody set with setConsumeMode: PULL or POP (retry topics stay PULL)
    default_message_request_mode: str = "PULL"
    # popShareQueueNum of that default when it is POP; -1 (any value < 1): every consumer pops every queue
    default_pop_share_queue_num: int = -1
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    serialize_type: str = "JSON"
    http_port: int = 10914  # Prometheus /metrics, /healthz, /readyz; 0 turns it off
    grpc_port: int = 8081  # RocketMQ 5 gRPC MessagingService; 0 = any free port, -1 = off
    # what one gRPC connection may make the broker hold or do (docs/grpc.md, "Limits")
    grpc_client_idle_time_mills: int = 120_000  # a connection silent both ways this long is closed
    grpc_max_concurrent_streams: int = 256  # announced; more streams get REFUSED_STREAM
    grpc_max_calls_in_flight: int = 128  # handlers running at once; further calls wait their turn
    grpc_max_header_list_size: int = 16 * 1024  # announced; a longer request header list ends the connection
    grpc_control_frame_burst: int = 1000  # PING, SETTINGS, WINDOW_UPDATE, RST_STREAM ... each, at once
    grpc_control_frames_per_second: int = 100  # and each one's steady rate, beyond 4 per stream opened

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def ha_server_addr(self) -> str:
        """Where slaves replicate from: ``brokerIP2:haListenPort`` (brokerIP1 when brokerIP2 is empty)."""
        return f"{self.broker_ip2 or self.broker_ip1}:{self.ha_listen_port}"

    @property
    def controller_addrs(self) -> list[str]:
        return [a.strip() for a in self.controller_addr.replace(",", ";").split(";") if a.strip()]

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.replace(",", ";").split(";") if a.strip()]

    def validate(self) -> None:
        if self.broker_role.upper() not in BROKER_ROLES:
            raise SettingsError(
                f"setting brokerRole: {self.broker_role!r} is not one of {', '.join(BROKER_ROLES)}"
            )
        self.broker_role = self.broker_role.upper()
        if self.enable_controller_mode and not self.controller_addrs:
            raise SettingsError("setting enableControllerMode: controllerAddr names no controller")
        if not 0 <= self.broker_permission <= 7:
            raise SettingsError(f"setting brokerPermission: {self.broker_permission} is not within 0..7")
        self.validate_security()
        if not self.broker_ip2:  # RocketMQ's brokerIP2 is brokerIP1 unless set
            self.broker_ip2 = self.broker_ip1
        if self.default_message_request_mode.upper() not in MessageRequestMode.__members__:
            raise SettingsError(
                f"setting defaultMessageRequestMode: {self.default_message_request_mode!r} is not PULL or POP"
            )
        self.default_message_request_mode = self.default_message_request_mode.upper()
        for key in (
            "grpc_client_idle_time_mills",
            "grpc_max_concurrent_streams",
            "grpc_max_calls_in_flight",
            "grpc_max_header_list_size",
            "grpc_control_frame_burst",
            "grpc_control_frames_per_second",
        ):
            if getattr(self, key) < 1:
                raise SettingsError(f"setting {camel(key)}: {getattr(self, key)} is not a positive number")
        if self.serialize_type.upper() not in ("JSON", "ROCKETMQ"):
            raise SettingsError(f"setting serializeType: {self.serialize_type!r} is not JSON or ROCKETMQ")


def settings_target(broker: BrokerConfig, store: StoreConfig) -> SettingsTarget:
    """Both configurations under one key space (RocketMQ's keys are in the fields' metadata)."""
    return SettingsTarget(broker, store)


def follow_listen_port(broker: BrokerConfig, explicit: Set[str]) -> None:
    """Ports derived from the broker's listen port, unless their settings are in ``explicit``.

    haListenPort becomes listenPort + 1 as in RocketMQ (any free port when listenPort is 0, or when
    listenPort + 1 is not a port); with listenPort 0 a gRPC port left at its default becomes any free
    port too, so that a second node on one machine does not lose its HA or gRPC port to the first."""
    port = broker.listen_port
    if "ha_listen_port" not in explicit:
        broker.ha_listen_port = port + 1 if 0 < port < 65535 else 0
    if port == 0 and "grpc_port" not in explicit and broker.grpc_port > 0:
        broker.grpc_port = 0


def load_broker_settings(
    config_file: Path | None = None,
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    *,
    store_path: Path | None = None,
    listen_port: int | None = None,
) -> tuple[BrokerConfig, StoreConfig]:
    """The settings of a broker; ``store_path`` and ``listen_port`` (flags) win over every source."""
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
    if listen_port is not None:
        broker.listen_port = listen_port
    follow_listen_port(broker, target.applied)
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
