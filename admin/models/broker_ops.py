"""Per-broker operations: how a group reads a topic (PULL or POP, set with setConsumeMode) and the
CommitLog read-ahead mode; a cluster's load figures (exportMetrics)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BrokerMetrics",
    "ClientVersion",
    "ClusterMetrics",
    "ConsumeMode",
    "ConsumeModes",
    "MetricsTotals",
    "ReadAheadChange",
    "ReadAheadChanges",
]


@dataclass(frozen=True, slots=True)
class ConsumeMode:
    """How ``group`` reads ``topic`` on one broker, as QUERY_ASSIGNMENT hands it to consumers."""

    broker_name: str
    address: str
    mode: str  # PULL or POP
    pop_share_queue_num: int  # POP: also the queues of this many consumers after each one
    stored: bool  # False: nothing set on this broker, its default (PULL) applies


@dataclass(frozen=True, slots=True)
class ConsumeModes:
    topic: str
    group: str
    brokers: list[ConsumeMode]


@dataclass(frozen=True, slots=True)
class ReadAheadChange:
    """One broker's answer to SET_COMMITLOG_READ_MODE."""

    address: str
    master: str | None  # the master a slave replicates; None for a master or a broker named with -b
    remark: str


@dataclass(frozen=True, slots=True)
class ReadAheadChanges:
    random: bool  # True: read-ahead off (MADV_RANDOM); False: the kernel's default (MADV_NORMAL)
    brokers: list[ReadAheadChange]


@dataclass(frozen=True, slots=True)
class ClientVersion:
    """A language and protocol version seen among the consumers of a broker's groups."""

    language: str
    version: int  # RocketMQ's version number (479 = V5_3_3)


@dataclass(frozen=True, slots=True)
class BrokerMetrics:
    """One master's load, as ``exportMetrics`` reports it. Text fields are the broker's own text
    (None: the broker does not report it); rates are messages per second over the last minute."""

    broker_name: str
    address: str
    cpu_num: str | None  # the clientCallbackExecutorThreads setting: a Java broker's processor count
    total_mem_kbytes: str | None  # runtime key totalMemKBytes
    commitlog_disk_ratio: str | None
    consume_queue_disk_ratio: str | None
    normal_in_tps: float  # putTps, first figure
    normal_out_tps: float  # getTransferredTps, first figure
    trans_in_tps: float  # half messages (RMQ_SYS_TRANS_HALF_TOPIC)
    schedule_in_tps: float  # delayed messages parked (SCHEDULE_TOPIC_XXXX)
    normal_one_day_in: int  # messages put from yesterday's midnight to today's
    normal_one_day_out: int  # messages got in that day
    trans_one_day_in: int  # half messages stored in the last 24 hours
    schedule_one_day_in: int  # delayed messages parked in the last 24 hours
    message_average_size: float | None  # bytes per message put since the broker started
    topics: int  # topics other than retry, dead-letter and system ones
    groups: int  # groups other than system ones
    clients: list[ClientVersion]  # of the consumers online in those groups


@dataclass(frozen=True, slots=True)
class MetricsTotals:
    """The sums over a cluster's masters."""

    normal_in_tps: float
    normal_out_tps: float
    trans_in_tps: float
    schedule_in_tps: float
    normal_one_day_in: int
    normal_one_day_out: int
    trans_one_day_in: int
    schedule_one_day_in: int


@dataclass(frozen=True, slots=True)
class ClusterMetrics:
    cluster: str
    brokers: list[BrokerMetrics]  # by broker name
    totals: MetricsTotals
