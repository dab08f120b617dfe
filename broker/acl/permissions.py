"""What each request needs (upstream's PlainAccessResource.parse and Permission), sans-IO.

Permissions are upstream's bit flags: DENY 1, ANY 2, PUB 4, SUB 8. A request needs a set of
(resource, permission) pairs, where a resource is a topic or a consumer group (a group is stored
under its retry topic ``%RETRY%<group>``, as upstream does), and some codes need an admin account.
Codes that are in neither table only need a valid signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum

from broker.protocol.bodies import BodyError
from broker.protocol.codes import RequestCode as R
from broker.protocol.group_bodies import HeartbeatData
from broker.protocol.names import RETRY_PREFIX
from broker.protocol.remoting import RemotingCommand

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3


class AclCode(IntEnum):
    """The 4.x plain ACL management codes (not in :mod:`broker.protocol.codes`)."""

    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    GET_BROKER_CLUSTER_ACL_CONFIG = 54


def perm_of(text: str) -> int:
    """``PUB``, ``SUB``, ``PUB|SUB`` (either order) or ``DENY``; anything else is DENY, as upstream."""
    value = text.strip().upper()
    if value == "PUB":
        return PUB
    if value == "SUB":
        return SUB
    if value in ("PUB|SUB", "SUB|PUB"):
        return PUB | SUB
    return DENY


def perm_name(perm: int) -> str:
    if perm & DENY:
        return "DENY"
    names = [n for n, bit in (("PUB", PUB), ("SUB", SUB)) if perm & bit]
    return "|".join(names) or ("ANY" if perm & ANY else "DENY")


def allows(needed: int, owned: int) -> bool:
    """Upstream's Permission.checkPermission."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def group_resource(group: str) -> str:
    return group if group.startswith(RETRY_PREFIX) else RETRY_PREFIX + group


def describe(resource: str) -> str:
    """``topic T`` or ``group G`` for refusal messages."""
    if resource.startswith(RETRY_PREFIX):
        return f"group {resource[len(RETRY_PREFIX) :]}"
    return f"topic {resource}"


@dataclass(frozen=True, slots=True)
class Need:
    resource: str  # a topic, or %RETRY%<group> for a group
    perm: int


# What a broker sends a NameServer about itself; brokerWhiteRemoteAddresses may send them unsigned.
BROKER_CODES: frozenset[int] = frozenset({R.REGISTER_BROKER, R.UNREGISTER_BROKER, R.BROKER_HEARTBEAT})
# What a NameServer answers anyone, as Apache RocketMQ's does; every other code it serves is a write.
NAMESRV_READS: frozenset[int] = frozenset(
    {
        R.GET_ROUTEINFO_BY_TOPIC, R.GET_BROKER_CLUSTER_INFO, R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        R.GET_TOPICS_BY_CLUSTER, R.GET_KV_CONFIG, R.GET_KVLIST_BY_NAMESPACE, R.QUERY_DATA_VERSION,
        R.GET_NAMESRV_CONFIG,
    }
)  # fmt: skip

# Codes only an admin account may send: upstream's five, plus every code that changes metadata,
# offsets, configuration, ACLs or files (upstream lets any account reset offsets; we do not).
ADMIN_CODES: frozenset[int] = frozenset(
    {
        R.UPDATE_AND_CREATE_TOPIC, R.UPDATE_AND_CREATE_TOPIC_LIST, R.UPDATE_BROKER_CONFIG,
        R.DELETE_TOPIC_IN_BROKER, R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, R.DELETE_SUBSCRIPTIONGROUP,
        R.UPDATE_AND_CREATE_STATIC_TOPIC, R.TRIGGER_DELETE_FILES, R.CLEAN_EXPIRED_CONSUMEQUEUE,
        R.CLEAN_UNUSED_TOPIC, R.DELETE_EXPIRED_COMMITLOG, R.CLONE_GROUP_OFFSET,
        R.RESET_CONSUMER_OFFSET_IN_BROKER, R.RESET_CONSUMER_OFFSET_IN_CONSUMER,
        R.RESET_CONSUMER_CLIENT_OFFSET, R.INVOKE_BROKER_TO_RESET_OFFSET, R.SUSPEND_CONSUMER,
        R.RESUME_CONSUMER, R.ADJUST_CONSUMER_THREAD_POOL, R.CONSUME_MESSAGE_DIRECTLY,
        R.RESUME_CHECK_HALF_MESSAGE, R.UPDATE_AND_GET_GROUP_FORBIDDEN, R.SET_MESSAGE_REQUEST_MODE,
        R.SET_COMMITLOG_READ_MODE, R.UPDATE_COLD_DATA_FLOW_CTR_CONFIG, R.REMOVE_COLD_DATA_FLOW_CTR_CONFIG,
        R.ADD_BROKER, R.REMOVE_BROKER, R.RESET_MASTER_FLUSH_OFFSET, R.CLEAN_BROKER_DATA,
        R.UPDATE_CONTROLLER_CONFIG, R.CONTROLLER_ELECT_MASTER,
        R.LIST_TIMER_MESSAGES, R.CANCEL_TIMER_MESSAGE,
        # NameServer
        R.PUT_KV_CONFIG, R.DELETE_KV_CONFIG, R.WIPE_WRITE_PERM_OF_BROKER, R.ADD_WRITE_PERM_OF_BROKER,
        R.DELETE_TOPIC_IN_NAMESRV, R.REGISTER_TOPIC_IN_NAMESRV, R.UPDATE_NAMESRV_CONFIG,
        # ACL management (4.x and 5.x codes)
        *AclCode, *range(R.AUTH_CREATE_USER, R.AUTH_LIST_ACL + 1),
    }
)  # fmt: skip


def _f(fields: Mapping[str, str], key: str) -> str:
    return (fields.get(key) or "").strip()


def _send(topic_key: str) -> Callable[[RemotingCommand], Iterator[Need]]:
    def needs(request: RemotingCommand) -> Iterator[Need]:
        topic = _f(request.ext_fields, topic_key)
        # a send to a retry topic is a consumer's re-delivery: it needs SUB on the group
        yield Need(topic, SUB if topic.startswith(RETRY_PREFIX) else PUB)

    return needs


def _topic_and_group(topic_key: str, group_key: str) -> Callable[[RemotingCommand], Iterator[Need]]:
    def needs(request: RemotingCommand) -> Iterator[Need]:
        topic, group = _f(request.ext_fields, topic_key), _f(request.ext_fields, group_key)
        if topic:
            yield Need(topic, SUB)
        if group:
            yield Need(group_resource(group), SUB)

    return needs


def _heartbeat(request: RemotingCommand) -> Iterator[Need]:
    try:
        data = HeartbeatData.from_json(request.body or b"{}")
    except BodyError:
        return  # the handler answers the malformed body
    for consumer in data.consumerDataSet:
        if consumer.groupName:
            yield Need(group_resource(consumer.groupName), SUB)
        for sub in consumer.subscriptionDataSet:
            if sub.topic:
                yield Need(sub.topic, SUB)


RESOURCE_NEEDS: dict[int, Callable[[RemotingCommand], Iterator[Need]]] = {
    R.SEND_MESSAGE: _send("topic"),
    R.SEND_MESSAGE_V2: _send("b"),
    R.SEND_BATCH_MESSAGE: _send("b"),
    R.SEND_REPLY_MESSAGE: _send("topic"),
    R.SEND_REPLY_MESSAGE_V2: _send("b"),
    R.RECALL_MESSAGE: _send("topic"),
    R.END_TRANSACTION: _send("topic"),
    # upstream wants PUB on the original topic here; a consumer re-delivering needs only SUB
    R.CONSUMER_SEND_MSG_BACK: _topic_and_group("originTopic", "group"),
    R.PULL_MESSAGE: _topic_and_group("topic", "consumerGroup"),
    R.LITE_PULL_MESSAGE: _topic_and_group("topic", "consumerGroup"),
    R.QUERY_MESSAGE: _topic_and_group("topic", ""),
    R.HEART_BEAT: _heartbeat,
    R.UNREGISTER_CLIENT: _topic_and_group("", "consumerGroup"),
    R.GET_CONSUMER_LIST_BY_GROUP: _topic_and_group("", "consumerGroup"),
    R.QUERY_CONSUMER_OFFSET: _topic_and_group("topic", "consumerGroup"),
    R.UPDATE_CONSUMER_OFFSET: _topic_and_group("topic", "consumerGroup"),
    R.POP_MESSAGE: _topic_and_group("topic", "consumerGroup"),
    R.PEEK_MESSAGE: _topic_and_group("topic", "consumerGroup"),
    R.ACK_MESSAGE: _topic_and_group("topic", "consumerGroup"),
    R.CHANGE_MESSAGE_INVISIBLETIME: _topic_and_group("topic", "consumerGroup"),
    R.NOTIFICATION: _topic_and_group("topic", "consumerGroup"),
}


def needs_of(request: RemotingCommand) -> list[Need]:
    """The resources a remoting request touches and the permission each needs."""
    fn = RESOURCE_NEEDS.get(request.code)
    return [n for n in fn(request) if n.resource] if fn is not None else []
