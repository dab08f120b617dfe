import contextlib
import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.protocol.bodies import (
    BodyError,
    BrokerData,
    ClusterInfo,
    ConsumeFromWhere,
    ConsumeType,
    DataVersion,
    KVTable,
    MessageModel,
    MessageQueue,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicRouteData,
    route_wants_standard_json,
)
from broker.protocol.codes import LanguageCode
from broker.protocol.group_bodies import (
    ConsumerConnection,
    ConsumeStats,
    HeartbeatData,
    LockBatchRequestBody,
    OffsetWrapper,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicStatsTable,
)
from broker.protocol.remoting import ProtocolError
from tests.vectors import wire_item

STANDARD = wire_item("get_route_response_json")["body"].encode()
LEGACY = wire_item("route_body_legacy_fastjson")["body"].encode()


def test_route_vectors_decode_alike_and_reencode_exactly() -> None:
    route = TopicRouteData.from_json(STANDARD)
    assert route == TopicRouteData.from_json(LEGACY)
    assert route.brokerDatas[0].brokerAddrs == {0: "127.0.0.1:10911"}
    assert route.queueDatas == [QueueData("broker-a", 4, 4, 6, 0)]
    assert route.to_json(standard=True) == STANDARD
    assert route.to_json() == LEGACY


def test_route_json_rule() -> None:
    assert route_wants_standard_json(401, None)
    assert route_wants_standard_json(479, False)
    assert route_wants_standard_json(213, True)
    assert not route_wants_standard_json(400, None)


def test_standard_json_escapes_non_ascii_and_quotes_huge_longs() -> None:
    route = TopicRouteData(brokerDatas=[BrokerData("集群", "b", {2**60: "h:1"})])
    assert b'"\\u96c6\\u7fa4"' in route.to_json(standard=True)
    assert b'"1152921504606846976":"h:1"' in route.to_json(standard=True)
    assert "集群".encode() in route.to_json()


def test_consume_stats_object_keys_round_trip() -> None:
    stats = ConsumeStats(
        offsetTable={
            MessageQueue("T", "b", 1): OffsetWrapper(10, 8, 9, 1700),
            MessageQueue("T", "a", 0): OffsetWrapper(5, 5, 5, 0),
        },
        consumeTps=19.8,
    )
    text = stats.to_json()
    assert text.startswith(
        b'{"consumeTps":19.8,"offsetTable":{{"brokerName":"a","queueId":0,"topic":"T"}:{"brokerOffset":5,'
    )
    assert ConsumeStats.from_json(text) == stats


def test_object_keys_tolerate_whitespace_and_nested_strings() -> None:
    text = """{"offsetTable":{ {"brokerName":"b{,}","queueId":0,"topic":"T"} : 5 ,
              {'brokerName':'c','queueId':1,'topic':'T'}:7}}"""
    body = ResetOffsetBody.from_json(text)
    assert body.offsetTable == {MessageQueue("T", "b{,}", 0): 5, MessageQueue("T", "c", 1): 7}


def test_topic_stats_table_round_trip() -> None:
    table = TopicStatsTable({MessageQueue("T", "b", 0): TopicOffset(0, 3, 17)}, 1.5)
    assert TopicStatsTable.from_json(table.to_json()) == table


def test_heartbeat_accepts_cpp_integer_enums_and_normalises_to_names() -> None:
    cpp = b"""{"clientID":"10.0.0.1@123","producerDataSet":[],"consumerDataSet":[{"groupName":"g",
        "consumeType":1,"messageModel":1,"consumeFromWhere":0,"unitMode":false,
        "subscriptionDataSet":[{"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":5,
        "classFilterMode":false,"expressionType":"TAG"}]}]}"""
    ons = cpp.replace(b'"consumeType":1', b'"consumeType":"CONSUME_PASSIVELY"').replace(
        b'"consumeFromWhere":0', b'"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET"'
    )
    hb = HeartbeatData.from_json(cpp)
    assert hb == HeartbeatData.from_json(ons)
    consumer = hb.consumerDataSet[0]
    assert consumer.consumeType is ConsumeType.CONSUME_PASSIVELY
    assert consumer.messageModel is MessageModel.CLUSTERING
    assert consumer.consumeFromWhere is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    assert b'"consumeType":"CONSUME_PASSIVELY"' in hb.to_json()
    assert b'"messageModel":"CLUSTERING"' in hb.to_json()


def test_java_json_names_and_defaults() -> None:
    assert TopicConfig("T").to_json() == (
        b'{"attributes":{},"order":false,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG",'
        b'"topicName":"T","topicSysFlag":0,"writeQueueNums":16}'
    )
    assert DataVersion(3, 0, 99).to_json() == b'{"counter":3,"stateVersion":0,"timestamp":99}'
    assert HeartbeatData("c").to_json() == (
        b'{"clientID":"c","consumerDataSet":[],"heartbeatFingerprint":0,"producerDataSet":[],"withoutSub":false}'
    )
    group = SubscriptionGroupConfig("g").to_json()
    assert b'"groupRetryPolicy":{"type":"CUSTOMIZED"}' in group and b"subscriptionDataSet" not in group
    lock = LockBatchRequestBody("g", "c", False, [MessageQueue("T", "b", 0)])
    assert lock.to_json() == (
        b'{"clientId":"c","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"}],'
        b'"onlyThisBroker":false}'
    )


def test_cluster_info_and_connections() -> None:
    info = ClusterInfo({"broker-a": BrokerData("C", "broker-a", {0: "h:1", 1: "h:2"})}, {"C": ["broker-a"]})
    assert info.to_json().startswith(b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"h:1",1:"h:2"}')
    assert ClusterInfo.from_json(info.to_json()) == info
    conn = ConsumerConnection.from_json(b'{"connectionSet":[{"clientId":"c","language":"CPP","version":1}]}')
    assert conn.connectionSet[0].language is LanguageCode.CPP


def test_lenient_scalars_and_unknown_fields() -> None:
    table = KVTable.from_json(b'{"table":{"a":1,"b":true},"extra":[1]}')
    assert table.table == {"a": "1", "b": "true"}
    assert QueueData.from_json(b'{"perm":"6","readQueueNums":4.0}').perm == 6


@pytest.mark.parametrize(
    ("cls", "text", "message"),
    [
        (QueueData, b'{"perm":"rw"}', r"QueueData.perm: expected a number"),
        (HeartbeatData, b'{"consumerDataSet":[{"consumeType":"FOO"}]}', r"consumerDataSet\[0\].consumeType"),
        (HeartbeatData, b'{"consumerDataSet":{}}', "expected an array"),
        (ConsumeStats, b'{"offsetTable":{"x":{}}}', "offsetTable key"),
        (KVTable, b"[]", "expected an object"),
        (KVTable, b"{", "not JSON"),
        (KVTable, b"\xc3", "not UTF-8"),
        (KVTable, b"[" * 50000, "not JSON"),
    ],
)
def test_body_errors_name_the_path(cls: type[KVTable], text: bytes, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        cls.from_json(text)


def _register_body() -> RegisterBrokerBody:
    wrapper = TopicConfigAndMappingSerializeWrapper(
        topicConfigTable={
            "T": TopicConfig("T", 8, 8, 6, attributes={"+message.type": "NORMAL"}),
            "U": TopicConfig("U", 1, 2, 4),
        },
        dataVersion=DataVersion(7, 0, 1700000000000),
        topicQueueMappingInfoMap={"S": {"topic": "S", "totalQueues": 1, "bname": "b", "epoch": 0}},
    )
    return RegisterBrokerBody(wrapper, ["fs:1"])


def test_register_broker_body_json_round_trip() -> None:
    body = _register_body()
    assert RegisterBrokerBody.decode(body.encode()) == body


def test_register_broker_body_compressed_round_trip() -> None:
    body = _register_body()
    raw = zlib.decompress(body.encode(compressed=True))
    assert b'T 8 8 6 SINGLE_TAG {"+message.type":"NORMAL"}' in raw
    decoded = RegisterBrokerBody.decode(body.encode(compressed=True), compressed=True)
    wrapper = decoded.topicConfigSerializeWrapper
    assert wrapper.dataVersion == body.topicConfigSerializeWrapper.dataVersion
    assert wrapper.topicConfigTable == body.topicConfigSerializeWrapper.topicConfigTable
    assert wrapper.topicQueueMappingInfoMap == body.topicConfigSerializeWrapper.topicQueueMappingInfoMap
    assert decoded.filterServerList == ["fs:1"]
    old = RegisterBrokerBody.decode(body.encode(compressed=True), compressed=True, broker_version=400)
    assert old.topicConfigSerializeWrapper.topicQueueMappingInfoMap == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not zlib", "does not inflate"),
        (zlib.compress(b"\x00\x00"), "ends before"),
        (zlib.compress(b"\x00\x00\x00\x09{}"), "truncated"),
    ],
)
def test_register_broker_body_compressed_errors(data: bytes, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        RegisterBrokerBody.decode(data, compressed=True)


_BODIES = [TopicRouteData, HeartbeatData, ConsumeStats, ConsumerConnection, ClusterInfo, RegisterBrokerBody]


@given(st.sampled_from(_BODIES), st.binary(max_size=120) | st.text(max_size=120).map(str.encode))
def test_fuzz_body_decoding_only_raises_protocol_error(cls: type[KVTable], data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        cls.from_json(data)


@given(
    st.dictionaries(
        st.builds(MessageQueue, st.text(max_size=6), st.text(max_size=6), st.integers(0, 64)),
        st.builds(OffsetWrapper, st.integers(), st.integers(), st.integers(), st.integers()),
        max_size=4,
    ),
    st.floats(allow_nan=False, allow_infinity=False),
)
def test_consume_stats_round_trip(table: dict[MessageQueue, OffsetWrapper], tps: float) -> None:
    stats = ConsumeStats(table, tps)
    assert ConsumeStats.from_json(stats.to_json()) == stats


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6) | st.just(10**400),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=10,
)
_FIELD_NAMES = sorted(
    {
        "offsetTable",
        "consumeTps",
        "brokerDatas",
        "queueDatas",
        "brokerAddrs",
        "consumerDataSet",
        "consumeType",
        "subscriptionDataSet",
        "tagsSet",
        "connectionSet",
        "language",
        "brokerAddrTable",
        "clusterAddrTable",
        "topicConfigSerializeWrapper",
        "topicConfigTable",
        "dataVersion",
        "perm",
        "filterServerTable",
    }
)


@given(st.sampled_from(_BODIES), st.data())
def test_fuzz_structured_bodies_only_raise_protocol_error(cls: type[KVTable], data: st.DataObject) -> None:
    """Plausible keys with random values reach every converter, not just the JSON parser."""
    doc = data.draw(
        st.recursive(
            st.dictionaries(st.sampled_from(_FIELD_NAMES), _json_values, max_size=4),
            lambda children: st.dictionaries(
                st.sampled_from(_FIELD_NAMES), children | st.lists(children, max_size=2), max_size=3
            ),
            max_leaves=6,
        )
    )
    with contextlib.suppress(ProtocolError):
        cls.from_json(json.dumps(doc))
