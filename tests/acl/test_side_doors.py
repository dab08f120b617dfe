"""The side doors of access control stay shut, under plain ACL and under users and ACL policies, on a node
built as ``rmq up`` builds it (its NameServer takes the broker's access settings; the broker signs its
registrations): unsigned or under-privileged broker registrations and NameServer writes are refused
naming what is missing; message lookups, pulls, POP, gRPC receives, send-backs and trace queries are
checked against the real topic of the messages they would hand out; legitimate clients still work."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
import pytest

from broker.acl.client import secure
from broker.acl.signer import GRPC_DATE_TIME, Credentials, grpc_authorization
from broker.client.message import Message
from broker.client.producer import Producer
from broker.client.remoting_client import RemotingClient
from broker.grpc.schema import PB
from broker.namesrv.config import NamesrvConfig
from broker.namesrv.server import NameServer
from broker.node import Node, NodePlan
from broker.protocol.auth_bodies import AclRequestHeader
from broker.protocol.bodies import TopicConfig, TopicRouteData
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionGroupConfig
from broker.protocol.msgid import decode_offset_msg_id
from broker.protocol.names import SCHEDULE_TOPIC
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import RemotingCommand, make_request
from broker.protocol.trace import TRACE_TOPIC, TraceRecord, TraceType, encode
from broker.server.config import load_broker_settings
from cli.run import up_plan
from tests.acl.conftest import security
from tests.acl.test_auth_codes import ROOT, AuthNode, acl, create_user, entry
from tests.peers.conftest import LoopThread

pytestmark = pytest.mark.servers

OPEN, SECRET, GROUP = "SideOpen", "SideSecret", "side-cg"
PLAIN_ADMIN = Credentials("side-admin", "side-admin-secret-1")
READER = Credentials("side-reader", "side-reader-secret-2")
SERVICE = "apache.rocketmq.v2.MessagingService"
# another broker's address under the real broker's name, id 0: what would redirect its clients
FAKE_REGISTRATION = {"brokerName": "side-broker", "brokerAddr": "127.0.0.1:1", "brokerId": "0",
                     "clusterName": "DefaultCluster", "haServerAddr": "127.0.0.1:2"}  # fmt: skip
SMALL_STORE = ["mappedFileSizeCommitLog=4194304", "mappedFileSizeConsumeQueueUnits=10000",
               "maxHashSlotNum=10000", "maxIndexNum=40000"]  # fmt: skip

PLAIN_ACL = f"""\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: {PLAIN_ADMIN.access_key}
    secretKey: {PLAIN_ADMIN.secret_key}
    admin: true
  - accessKey: {READER.access_key}
    secretKey: {READER.secret_key}
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms:
      - {SECRET}=DENY
"""


@dataclass
class Side:
    mode: str
    n: AuthNode
    admin: Credentials  # may do everything

    @property
    def node(self) -> Node:
        return self.n.node

    def broker(
        self, code: int, ext: dict[str, str], who: Credentials | None, body: bytes | None = None
    ) -> Any:
        return self._call(self.n.broker_addr, code, ext, who, body)

    def namesrv(
        self, code: int, ext: dict[str, str], who: Credentials | None, body: bytes | None = None
    ) -> Any:
        return self._call(self.n.namesrv, code, ext, who, body)

    def _call(
        self, addr: str, code: int, ext: dict[str, str], who: Credentials | None, body: bytes | None
    ) -> RemotingCommand:
        async def go() -> RemotingCommand:
            client = RemotingClient()
            if who is not None:
                secure(client, security(who))
            try:
                return await client.invoke(addr, make_request(code, ext_fields=dict(ext), body=body))
            finally:
                await client.close()

        return self.n.loop.run(go())

    def send(self, message: Message) -> int:
        """Send as the admin; the message's CommitLog offset."""

        async def go() -> str:
            async with Producer("side-pg", self.n.namesrv, credentials=self.admin) as producer:
                return (await producer.send(message)).offset_msg_id

        return decode_offset_msg_id(self.n.loop.run(go())).offset


def _start(tmp: Path, mode: str) -> Side:
    if mode == "plain":
        (tmp / "plain_acl.yml").write_text(PLAIN_ACL)
        settings = ["aclEnable=true", f"aclFile={tmp / 'plain_acl.yml'}"]
    else:
        root = json.dumps({"username": ROOT.access_key, "password": ROOT.secret_key})
        settings = [
            "authenticationEnabled=true",
            "authorizationEnabled=true",
            f"initAuthenticationUser={root}",
        ]
    overrides = [*settings, *SMALL_STORE, "listenHost=127.0.0.1", "brokerName=side-broker", "grpcPort=0"]
    plan = up_plan(None, overrides, tmp / "store", 0, 0, {})  # no innerClient...: rmq up picks the admin
    loop = LoopThread()
    node = Node(plan)
    loop.run(node.start())
    n = AuthNode(loop, node, tmp)
    broker = node.broker
    assert broker is not None

    async def seed() -> None:
        for topic in (OPEN, SECRET):
            broker.topics.put(TopicConfig(topicName=topic, readQueueNums=1, writeQueueNums=1))
        broker.groups.put(SubscriptionGroupConfig(groupName=GROUP))

    loop.run(seed())
    if mode == "plain":
        return Side(mode, n, PLAIN_ADMIN)
    assert create_user(n, READER.access_key, READER.secret_key).code == ResponseCode.SUCCESS
    policy = acl(
        f"User:{READER.access_key}",
        entry("Topic:*", "Pub", "Sub", "Get"),
        entry(f"Topic:{SECRET}", "Pub", "Sub", "Get", decision="Deny"),
        entry("Group:*", "Sub"),
    )
    assert (
        n.call(RequestCode.AUTH_CREATE_ACL, AclRequestHeader(subject=policy.subject or ""), policy).code == 0
    )
    return Side(mode, n, ROOT)


@pytest.fixture(scope="module", params=["plain", "users"])
def side(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    s = _start(tmp_path_factory.mktemp(f"side-{request.param}"), request.param)
    try:
        yield s
    finally:
        s.n.stop()


def _refused(response: RemotingCommand, *words: str) -> None:
    assert response.code == ResponseCode.NO_PERMISSION, (response.code, response.remark)
    assert all(w in (response.remark or "") for w in words), response.remark


def _route(s: Side, topic: str) -> TopicRouteData:
    r = s.namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, None)
    assert r.code == ResponseCode.SUCCESS, r.remark
    return TopicRouteData.from_json(r.body)


def test_namesrv_takes_the_brokers_access_settings(side: Side) -> None:
    r = side.namesrv(RequestCode.GET_NAMESRV_CONFIG, {}, side.admin)
    props = dict(line.split("=", 1) for line in (r.body or b"").decode().splitlines())
    key = "aclEnable" if side.mode == "plain" else "authenticationEnabled"
    assert props[key] == "true"
    assert side.admin.secret_key not in (r.body or b"").decode()  # the credentials it signs with
    # the broker registered, signed: clients find it
    assert [bd.brokerAddrs[0] for bd in _route(side, OPEN).brokerDatas] == [side.n.broker_addr]


def test_namesrv_refuses_unsigned_and_unprivileged_broker_codes_and_writes(side: Side) -> None:
    fake = FAKE_REGISTRATION
    for code in (RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.BROKER_HEARTBEAT):
        _refused(side.namesrv(code, fake, None), "not signed", "innerClientAuthenticationCredentials",
                 "brokerWhiteRemoteAddresses")  # fmt: skip
        _refused(side.namesrv(code, fake, READER), READER.access_key)
        _refused(side.namesrv(code, fake, Credentials(READER.access_key, "wrong-pass")), "signature")
    writes = [
        (RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}),
        (RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": OPEN}),
        (RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "side-broker"}),
    ]
    for code, ext in writes:
        _refused(side.namesrv(code, ext, None), "not signed")
        _refused(side.namesrv(code, ext, READER), READER.access_key)
    r = side.namesrv(RequestCode.UPDATE_NAMESRV_CONFIG, {}, None, body=b"orderMessageEnable=true\n")
    _refused(r, "not signed")
    # nothing of it took effect: the route still points at the real broker, with write permission
    route = _route(side, OPEN)
    assert [bd.brokerAddrs for bd in route.brokerDatas] == [{0: side.n.broker_addr}]
    assert route.queueDatas[0].perm & 2


def _view(s: Side, offset: int, who: Credentials, topic: str | None = None) -> RemotingCommand:
    ext = {"offset": str(offset)} | ({"topic": topic} if topic else {})
    return s.broker(RequestCode.VIEW_MESSAGE_BY_ID, ext, who)


def test_view_by_id_checks_the_stored_topic(side: Side) -> None:
    secret = side.send(Message(SECRET, b"secret-body"))
    opened = side.send(Message(OPEN, b"open-body"))
    for claimed in (None, OPEN):
        r = _view(side, secret, READER, claimed)
        _refused(r, SECRET)
        assert b"secret-body" not in (r.body or b"")
    assert b"open-body" in (_view(side, opened, READER).body or b"")
    assert b"secret-body" in (_view(side, secret, side.admin).body or b"")


def test_parked_messages_are_read_only_through_their_own_topic(side: Side) -> None:
    key = f"parked-{side.mode}"
    parked = side.send(Message(SECRET, b"delayed-secret", keys=[key], delay_time_level=18))  # 2 h
    _refused(_view(side, parked, READER), SECRET)
    now = int(time.time() * 1000)
    query = {"topic": SCHEDULE_TOPIC, "key": key, "maxNum": "32", "beginTimestamp": "0",
             "endTimestamp": str(now + 60_000)}  # fmt: skip
    _refused(side.broker(RequestCode.QUERY_MESSAGE, query, READER), SECRET)
    pull = {"consumerGroup": GROUP, "topic": SCHEDULE_TOPIC, "queueId": "17", "queueOffset": "0",
            "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subVersion": "0"}  # fmt: skip
    _refused(side.broker(RequestCode.PULL_MESSAGE, pull, READER), SCHEDULE_TOPIC, "their own topics")
    _refused(side.broker(RequestCode.PULL_MESSAGE, pull, side.admin), SCHEDULE_TOPIC)
    pop = {"consumerGroup": GROUP, "topic": SCHEDULE_TOPIC, "queueId": "-1", "maxMsgNums": "32",
           "invisibleTime": "60000", "pollTime": "0", "bornTime": str(now), "initMode": "0"}  # fmt: skip
    _refused(side.broker(RequestCode.POP_MESSAGE, pop, READER), SCHEDULE_TOPIC)
    received = _grpc_receive(side, SCHEDULE_TOPIC)
    assert received[0].status.code == 40300 and SCHEDULE_TOPIC in received[0].status.message  # FORBIDDEN
    assert not any(r.HasField("message") for r in received)


def _grpc_receive(s: Side, topic: str) -> list[Any]:
    async def go() -> list[Any]:
        date_time = "20250101T000000Z"
        metadata = (
            ("x-mq-client-id", "side-grpc-client"),
            (GRPC_DATE_TIME, date_time),
            ("authorization", grpc_authorization(READER, date_time)),
        )
        request = PB.ReceiveMessageRequest(
            group=PB.Resource(name=GROUP),
            message_queue=PB.MessageQueue(topic=PB.Resource(name=topic), id=-1),
            filter_expression=PB.FilterExpression(type=1, expression="*"),
            batch_size=8,
            auto_renew=False,
        )
        request.invisible_duration.seconds = 60
        request.long_polling_timeout.seconds = 1
        async with grpc.aio.insecure_channel(s.n.endpoints) as channel:
            call = channel.unary_stream(
                f"/{SERVICE}/ReceiveMessage",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=PB.ReceiveMessageResponse.FromString,
            )(request, metadata=metadata, timeout=20)
            return [answer async for answer in call]

    return s.n.loop.run(go())


def test_send_back_copies_only_what_the_sender_may_read(side: Side) -> None:
    secret = side.send(Message(SECRET, b"secret-body"))
    opened = side.send(Message(OPEN, b"open-body"))

    def back(offset: int, origin: str) -> RemotingCommand:
        ext = {"offset": str(offset), "group": GROUP, "delayLevel": "0", "originTopic": origin}
        return side.broker(RequestCode.CONSUMER_SEND_MSG_BACK, ext, READER)

    _refused(back(secret, OPEN), SECRET)  # the claimed origin does not matter
    assert back(opened, OPEN).code == ResponseCode.SUCCESS


def test_trace_queries_reveal_only_readable_topics(side: Side) -> None:
    for topic in (SECRET, OPEN):
        record = TraceRecord(TraceType.Pub, f"trace-{topic}", int(time.time() * 1000), "DefaultRegion",
                             "side-pg", topic=topic)  # fmt: skip
        side.send(Message(TRACE_TOPIC, encode(record).encode(), keys=[f"trace-{topic}-{side.mode}"]))

    def query(topic: str) -> RemotingCommand:
        ext = {"topic": TRACE_TOPIC, "key": f"trace-{topic}-{side.mode}", "maxNum": "32",
               "beginTimestamp": "0", "endTimestamp": str(int(time.time() * 1000) + 60_000)}  # fmt: skip
        return side.broker(RequestCode.QUERY_MESSAGE, ext, READER)

    _refused(query(SECRET), SECRET)
    assert query(OPEN).code == ResponseCode.SUCCESS


def test_a_half_message_is_resolved_only_by_who_may_publish_to_its_topic(side: Side) -> None:
    props = encode_properties(
        {"TRAN_MSG": "true", "PGROUP": "side-tx-pg", "UNIQ_KEY": f"side-tx-{side.mode}"}
    )
    ext = {"a": "side-tx-pg", "b": SECRET, "c": "TBW102", "d": "4", "e": "0", "f": "4",
           "g": str(int(time.time() * 1000)), "h": "0", "i": props, "j": "0", "k": "false"}  # fmt: skip
    sent = side.broker(RequestCode.SEND_MESSAGE_V2, ext, side.admin, body=b"half-secret")
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    end = {
        "producerGroup": "side-tx-pg",
        "tranStateTableOffset": sent.ext_fields["queueOffset"],
        "commitLogOffset": str(decode_offset_msg_id(sent.ext_fields["msgId"]).offset),
        "commitOrRollback": "12",  # rollback
        "fromTransactionCheck": "false",
        "msgId": sent.ext_fields["msgId"],
    }
    _refused(side.broker(RequestCode.END_TRANSACTION, end, READER), SECRET)  # a 4.x producer names no topic
    claimed = side.broker(RequestCode.END_TRANSACTION, end | {"topic": OPEN}, READER)
    assert claimed.code == ResponseCode.SYSTEM_ERROR and "topic wrong" in (claimed.remark or "")
    assert side.broker(RequestCode.END_TRANSACTION, end, side.admin).code == ResponseCode.SUCCESS


def test_a_lone_namesrv_with_users_knows_its_own_super_users(tmp_path: Path) -> None:
    """``rmq namesrv`` with users and policies: the Super users of its settings, kept in its folder."""
    root = json.dumps({"username": ROOT.access_key, "password": ROOT.secret_key})
    auth = {"authentication_enabled": True, "authorization_enabled": True, "init_authentication_user": root}
    ns_config = NamesrvConfig(listen_port=0, kv_config_path=tmp_path / "ns" / "kvConfig.json", **auth)
    loop = LoopThread()
    ns = NameServer(ns_config, host="127.0.0.1")
    loop.run(ns.start())
    try:
        inner = json.dumps({"accessKey": ROOT.access_key, "secretKey": ROOT.secret_key})
        settings = [*SMALL_STORE, "listenHost=127.0.0.1", "grpcPort=-1", "httpPort=0",
                    f"namesrvAddr={ns.address}", f"innerClientAuthenticationCredentials={inner}"]  # fmt: skip
        broker, store = load_broker_settings(None, settings, {}, store_path=tmp_path / "store", listen_port=0)
        node = Node(NodePlan(broker=broker, store=store))
        loop.run(node.start())
        try:
            assert node.broker is not None and node.broker.ready  # registered, signed as root
            assert (tmp_path / "ns" / "auth" / "users.json").exists()
        finally:
            loop.run(node.stop(), timeout=60)

        async def unsigned_register() -> RemotingCommand:
            client = RemotingClient()
            try:
                request = make_request(RequestCode.REGISTER_BROKER, ext_fields=dict(FAKE_REGISTRATION))
                return await client.invoke(ns.address, request)
            finally:
                await client.close()

        _refused(loop.run(unsigned_register()), "not signed")
    finally:
        loop.run(ns.stop())
        loop.close()
