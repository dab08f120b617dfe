"""Deciding a request under RocketMQ 5's access control (``authenticationEnabled`` /
``authorizationEnabled``) with the users and ACLs of :mod:`broker.acl.auth_store`.

Authentication: the request is signed as with plain ACL, the username as AccessKey and the password as
SecretKey; an unknown or disabled user, or a wrong signature, is refused. Authorization: a Super user
may do everything; a Normal user needs, for every resource the request touches, a policy entry that
allows one of the request's actions from the client's address, and the entry that decides (the most
specific, Deny first) must not be a Deny. What a request touches follows upstream: the contexts its
authorization builder makes for clients' codes, the ``@RocketMQAction`` annotations of the request
headers for the others; codes that change the broker but name no resource need ``Cluster`` Update.

Refusals name the user, the resource and the action, never a password.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from broker.acl.auth_store import Action, AuthStore, Decision, Resource, ResourceType, UserStatus, UserType
from broker.acl.checker import Denial, Refusal
from broker.acl.permissions import ADMIN_CODES, ANY, PUB, Need
from broker.protocol.bodies import BodyError
from broker.protocol.codes import RequestCode as R
from broker.protocol.group_bodies import HeartbeatData, LockBatchRequestBody
from broker.protocol.names import DLQ_PREFIX, RETRY_PREFIX
from broker.protocol.remoting import RemotingCommand

A = Action
T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
READ_ACTIONS = (A.SUB, A.GET)  # reading a topic's messages: consuming it, or looking messages up


@dataclass(frozen=True, slots=True)
class AuthNeed:
    resource: Resource
    actions: tuple[Action, ...]  # any one of them, granted, will do

    def describe(self) -> str:
        return f"{'|'.join(a.value for a in self.actions)} on {self.resource.key}"


def topic_resource(name: str) -> Resource:
    """A topic, or the group of a retry topic (upstream checks the group of ``%RETRY%g``)."""
    if name.startswith(RETRY_PREFIX):
        return group_resource(name)
    return Resource(T, name)


def group_resource(name: str) -> Resource:
    for prefix in (RETRY_PREFIX, DLQ_PREFIX):
        name = name.removeprefix(prefix)
    return Resource(G, name)


def from_plain(need: Need) -> AuthNeed:
    """A plain-ACL need (a topic or ``%RETRY%group`` and PUB/SUB/ANY bits) in these terms."""
    actions = (A.PUB, A.SUB) if need.perm & ANY else (A.PUB,) if need.perm & PUB else (A.SUB,)
    return AuthNeed(topic_resource(need.resource), actions)


# == what each remoting code needs ===============================================================
Fields = dict[str, str]


def _f(fields: Fields, key: str) -> str:
    return (fields.get(key) or "").strip()


def _send(topic_key: str) -> Callable[[RemotingCommand, Fields], Iterator[AuthNeed]]:
    def needs(request: RemotingCommand, fields: Fields) -> Iterator[AuthNeed]:
        topic = _f(fields, topic_key)
        retry = topic.startswith(RETRY_PREFIX)  # a consumer's re-delivery: Sub on its group
        yield AuthNeed(topic_resource(topic), (A.SUB,) if retry else (A.PUB,))

    return needs


def _consume(
    topic_key: str, group_key: str, *actions: Action
) -> Callable[[RemotingCommand, Fields], Iterator[AuthNeed]]:
    """Upstream: the topic (a retry topic is covered by the group) and the group."""

    def needs(request: RemotingCommand, fields: Fields) -> Iterator[AuthNeed]:
        topic, group = _f(fields, topic_key), _f(fields, group_key)
        if topic and not topic.startswith(RETRY_PREFIX):
            yield AuthNeed(Resource(T, topic), actions)
        if group:
            yield AuthNeed(group_resource(group), actions)

    return needs


def _heartbeat(request: RemotingCommand, fields: Fields) -> Iterator[AuthNeed]:
    try:
        data = HeartbeatData.from_json(request.body or b"{}")
    except BodyError:
        return  # the handler answers the malformed body
    for consumer in data.consumerDataSet:
        if consumer.groupName:
            yield AuthNeed(group_resource(consumer.groupName), (A.SUB,))
        for sub in consumer.subscriptionDataSet:
            if sub.topic and not sub.topic.startswith(RETRY_PREFIX):
                yield AuthNeed(Resource(T, sub.topic), (A.SUB,))


def _lock(request: RemotingCommand, fields: Fields) -> Iterator[AuthNeed]:
    try:
        body = LockBatchRequestBody.from_json(request.body or b"{}")
    except BodyError:
        return
    if body.consumerGroup:
        yield AuthNeed(group_resource(body.consumerGroup), (A.SUB,))
    for mq in body.mqSet:
        if mq.topic and not mq.topic.startswith(RETRY_PREFIX):
            yield AuthNeed(Resource(T, mq.topic), (A.SUB,))


BUILT: dict[int, Callable[[RemotingCommand, Fields], Iterator[AuthNeed]]] = {
    R.SEND_MESSAGE: _send("topic"),
    R.SEND_MESSAGE_V2: _send("b"),
    R.SEND_BATCH_MESSAGE: _send("b"),
    R.SEND_REPLY_MESSAGE: _send("topic"),
    R.SEND_REPLY_MESSAGE_V2: _send("b"),
    R.RECALL_MESSAGE: _send("topic"),
    R.END_TRANSACTION: _send("topic"),
    R.CONSUMER_SEND_MSG_BACK: _consume("", "group", A.SUB),
    R.PULL_MESSAGE: _consume("topic", "consumerGroup", A.SUB),
    R.LITE_PULL_MESSAGE: _consume("topic", "consumerGroup", A.SUB),
    R.QUERY_MESSAGE: _consume("topic", "", A.SUB, A.GET),
    R.HEART_BEAT: _heartbeat,
    R.UNREGISTER_CLIENT: _consume("", "consumerGroup", A.SUB),
    R.GET_CONSUMER_LIST_BY_GROUP: _consume("", "consumerGroup", A.SUB, A.GET),
    R.QUERY_CONSUMER_OFFSET: _consume("topic", "consumerGroup", A.SUB, A.GET),
    R.UPDATE_CONSUMER_OFFSET: _consume("topic", "consumerGroup", A.SUB, A.UPDATE),
    R.LOCK_BATCH_MQ: _lock,
    R.UNLOCK_BATCH_MQ: _lock,
}


@dataclass(frozen=True, slots=True)
class Annotated:
    """A header's ``@RocketMQAction``: its actions, whether it falls back to the cluster, and the
    ``@RocketMQResource`` fields (type, field, separator)."""

    actions: tuple[Action, ...]
    cluster: bool = False
    fields: tuple[tuple[ResourceType, str, str], ...] = ()


def _at(
    *actions: Action, cluster: bool = False, **fields: ResourceType | tuple[ResourceType, str]
) -> Annotated:
    specs = tuple((v, k, "") if isinstance(v, ResourceType) else (v[0], k, v[1]) for k, v in fields.items())
    return Annotated(actions, cluster, specs)


CLUSTER_UPDATE = _at(A.UPDATE, cluster=True)
CLUSTER_GET = _at(A.GET, cluster=True)
CLUSTER_GETS = (
    R.AUTH_GET_USER,
    R.AUTH_LIST_USER,
    R.AUTH_GET_ACL,
    R.AUTH_LIST_ACL,
    R.GET_ALL_PRODUCER_INFO,
    R.GET_BROKER_CONSUME_STATS,
    R.GET_ALL_CONSUMER_CONNECTIONS,
    R.GET_PRODUCER_CONNECTION_LIST,
    R.VIEW_BROKER_STATS_DATA,
    R.EXPORT_ROCKSDB_CONFIG_TO_JSON,
    R.GET_KV_CONFIG,
    R.GET_KVLIST_BY_NAMESPACE,
)
ANNOTATED: dict[int, Annotated] = {
    R.ACK_MESSAGE: _at(A.SUB, consumerGroup=G, topic=T),
    R.CHANGE_MESSAGE_INVISIBLETIME: _at(A.SUB, consumerGroup=G, topic=T),
    R.PEEK_MESSAGE: _at(A.SUB, topic=T, consumerGroup=G),
    R.POP_MESSAGE: _at(A.SUB, consumerGroup=G, topic=T),
    R.NOTIFICATION: _at(A.SUB, consumerGroup=G, topic=T),
    R.POLLING_INFO: _at(A.GET, consumerGroup=G, topic=T),
    R.CHECK_TRANSACTION_STATE: _at(A.PUB, topic=T),
    R.CLONE_GROUP_OFFSET: _at(A.UPDATE, destGroup=G, topic=T),
    R.CONSUME_MESSAGE_DIRECTLY: _at(A.SUB, consumerGroup=G, topic=T),
    R.DELETE_SUBSCRIPTIONGROUP: _at(A.DELETE, groupName=G),
    R.DELETE_TOPIC_IN_BROKER: _at(A.DELETE, topic=T),
    R.GET_CONSUMER_CONNECTION_LIST: _at(A.GET, consumerGroup=G),
    R.GET_REBALANCE_HISTORY: _at(A.GET, consumerGroup=G),
    R.GET_CONSUMER_RUNNING_INFO: _at(A.GET, consumerGroup=G),
    R.GET_CONSUME_STATS: _at(A.GET, consumerGroup=G, topic=T, topicList=(T, ";")),
    R.GET_EARLIEST_MSG_STORETIME: _at(A.GET, topic=T),
    R.GET_MAX_OFFSET: _at(A.GET, topic=T),
    R.GET_MIN_OFFSET: _at(A.GET, topic=T),
    R.GET_SUBSCRIPTIONGROUP_CONFIG: _at(A.GET, group=G),
    R.GET_TOPIC_CONFIG: _at(A.GET, topic=T),
    R.GET_TOPIC_STATS_INFO: _at(A.GET, topic=T),
    R.GET_TOPICS_STATS_INFO: _at(A.GET, topicList=(T, ";")),
    R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: _at(A.GET, topic=T, group=G),
    R.INVOKE_BROKER_TO_RESET_OFFSET: _at(A.UPDATE, group=G, topic=T),
    R.QUERY_CONSUME_QUEUE: _at(A.GET, topic=T, consumerGroup=G),
    R.QUERY_CONSUME_TIME_SPAN: _at(A.GET, topic=T, group=G),
    R.QUERY_CORRECTION_OFFSET: _at(A.GET, filterGroups=(G, ","), compareGroup=G, topic=T),
    R.QUERY_SUBSCRIPTION_BY_CONSUMER: _at(A.GET, group=G, topic=T),
    R.QUERY_TOPICS_BY_CONSUMER: _at(A.GET, group=G),
    R.QUERY_TOPIC_CONSUME_BY_WHO: _at(A.GET, topic=T),
    R.RESUME_CHECK_HALF_MESSAGE: _at(A.UPDATE, topic=T),
    R.SEARCH_OFFSET_BY_TIMESTAMP: _at(A.GET, topic=T),
    R.UPDATE_AND_CREATE_TOPIC: _at(A.CREATE, topic=T),
    R.UPDATE_AND_CREATE_TOPIC_LIST: _at(A.CREATE, cluster=True),
    R.UPDATE_AND_GET_GROUP_FORBIDDEN: _at(A.UPDATE, group=G, topic=T),
    R.VIEW_MESSAGE_BY_ID: _at(A.GET, topic=T),
    R.GET_BROKER_MEMBER_GROUP: _at(A.GET, cluster=True, clusterName=C),
    R.QUERY_DATA_VERSION: _at(A.GET, cluster=True, clusterName=C),
    **dict.fromkeys(CLUSTER_GETS, CLUSTER_GET),
}


def remoting_needs(request: RemotingCommand, cluster: str) -> list[AuthNeed]:
    """The resources a remoting request touches and the actions it does on them."""
    fields = request.ext_fields
    built = BUILT.get(request.code)
    if built is not None:
        return [n for n in built(request, fields) if n.resource.name]
    spec = ANNOTATED.get(request.code)
    if spec is None:
        return [AuthNeed(Resource(C, cluster), (A.UPDATE,))] if request.code in ADMIN_CODES else []
    out: list[AuthNeed] = []
    for kind, key, separator in spec.fields:
        values = _f(fields, key).split(separator) if separator else [_f(fields, key)]
        for value in (v.strip() for v in values):
            if value:
                resource = (
                    topic_resource(value)
                    if kind is T
                    else group_resource(value)
                    if kind is G
                    else Resource(kind, value)
                )
                out.append(AuthNeed(resource, spec.actions))
    if not out and spec.cluster:
        out.append(AuthNeed(Resource(C, cluster), spec.actions))
    return out


# == the decision ================================================================================
class AuthChecker:
    """Authentication and authorization over one broker's users and ACLs."""

    def __init__(
        self,
        store: AuthStore,
        *,
        authentication: bool,
        authorization: bool,
        whitelists: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
        cluster: Callable[[], str] = lambda: "",
    ) -> None:
        self.authentication = authentication
        self.authorization = authorization
        self.authentication_whitelist, self.authorization_whitelist = whitelists
        self.cluster = cluster
        self.store = store

    def check(
        self,
        *,
        host: str,
        username: str | None,
        verify: Callable[[str], bool],
        needs: Sequence[AuthNeed],
        codes: Sequence[str],
    ) -> Refusal | None:
        """None when the request may run. ``verify(password)`` checks its signature; ``codes`` are the
        names the white lists may know it by (a request code, or a gRPC method and message name)."""
        store = self.store
        name = codes[0] if codes else "?"
        if self.authentication and not any(c in self.authentication_whitelist for c in codes):
            if not username:
                return Refusal(
                    Denial.UNAUTHENTICATED, f"request {name} is not signed: no AccessKey (username) given"
                )
            user = store.users.get(username)
            if user is None:
                return Refusal(Denial.UNAUTHENTICATED, f"user {username} does not exist")
            if user.user_status is UserStatus.DISABLE:
                return Refusal(Denial.UNAUTHENTICATED, f"user {username} is disabled")
            if not verify(user.password):
                return Refusal(Denial.UNAUTHENTICATED, f"signature check failed for user {username}")
        if not self.authorization or not needs or any(c in self.authorization_whitelist for c in codes):
            return None
        return self._authorize(store, host, username, needs)

    def _authorize(
        self, store: AuthStore, host: str, username: str | None, needs: Sequence[AuthNeed]
    ) -> Refusal | None:
        if not username:
            return Refusal(Denial.FORBIDDEN, f"request needs {needs[0].describe()}, but names no user")
        user = store.users.get(username)
        if user is None:
            return Refusal(Denial.FORBIDDEN, f"user {username} does not exist")
        if user.user_status is UserStatus.DISABLE:
            return Refusal(Denial.UNAUTHENTICATED, f"user {username} is disabled")
        if user.user_type is UserType.SUPER:
            return None
        acl = store.acls.get(username)
        for need in needs:
            entry = acl.matching(need.resource, need.actions, host) if acl is not None else None
            if entry is None or entry.decision is Decision.DENY:
                why = (
                    "no policy allows it"
                    if entry is None
                    else f"denied by the policy entry of {entry.resource.key}"
                )
                return Refusal(
                    Denial.FORBIDDEN, f"User:{username} may not {need.describe()} from {host}: {why}"
                )
        return None
