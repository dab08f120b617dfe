"""Names RocketMQ reserves: the retry and dead-letter prefixes, the system topics and groups, and the
kind of a topic by its name.
"""

from __future__ import annotations

from enum import StrEnum

from broker.protocol.names import DLQ_PREFIX, RETRY_PREFIX

__all__ = [
    "DLQ_PREFIX",
    "RETRY_PREFIX",
    "SYSTEM_GROUPS",
    "SYSTEM_GROUP_PREFIX",
    "SYSTEM_TOPICS",
    "SYSTEM_TOPIC_PREFIXES",
    "TOOLS_GROUP",
    "TopicKind",
    "is_system_group",
    "topic_kind",
]


TOOLS_GROUP = "TOOLS_CONSUMER"  # mqadmin's MixAll.TOOLS_CONSUMER_GROUP
# Topics RocketMQ creates for itself (TopicValidator.SYSTEM_TOPIC_SET and the rmq_sys_ prefix); a
# broker's own name and its cluster's name are system topics too (brokerTopicEnable, clusterTopicEnable).
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "rmq_sys_wheel_timer",
    }
)
SYSTEM_TOPIC_PREFIXES = ("rmq_sys_", "RMQ_SYS_")


# Groups brokers create for themselves and for tools (MixAll's system consumer groups)
SYSTEM_GROUPS = frozenset(
    {
        TOOLS_GROUP,
        "FILTERSRV_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
    }
)
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(SYSTEM_GROUP_PREFIX)


class TopicKind(StrEnum):
    NORMAL = "normal"
    RETRY = "retry"
    DLQ = "dlq"
    SYSTEM = "system"


def topic_kind(topic: str, system_names: frozenset[str] = frozenset()) -> TopicKind:
    """Classify a topic by name; ``system_names`` adds broker and cluster names."""
    if topic.startswith(RETRY_PREFIX):
        return TopicKind.RETRY
    if topic.startswith(DLQ_PREFIX):
        return TopicKind.DLQ
    if topic in SYSTEM_TOPICS or topic in system_names or topic.startswith(SYSTEM_TOPIC_PREFIXES):
        return TopicKind.SYSTEM
    return TopicKind.NORMAL
