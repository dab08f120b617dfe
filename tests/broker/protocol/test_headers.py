import contextlib
import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.protocol.codes import RequestCode
from broker.protocol.headers import (
    REQUEST_HEADERS,
    BoundaryType,
    CommandHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader,
    GetRouteInfoRequestHeader,
    HeaderFieldError,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    RegisterBrokerRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    decode_send_message_header,
)
from broker.protocol.remoting import FrameDecoder, ProtocolError, decode_json_header
from tests.vectors import wire_item


def test_send_v2_vector_to_v1_and_back() -> None:
    (cmd,) = FrameDecoder().feed(bytes.fromhex(wire_item("send_message_v2_request_json")["hex"]))
    v1 = decode_send_message_header(cmd.code, cmd.ext_fields)
    assert v1.producerGroup == "ProducerGroupA" and v1.topic == "TopicTest" and v1.defaultTopic == "TBW102"
    assert (v1.defaultTopicQueueNums, v1.queueId, v1.sysFlag, v1.flag) == (4, 0, 0, 0)
    assert v1.bornTimestamp == 1700000000000 and v1.reconsumeTimes == 0
    assert v1.unitMode is False and v1.batch is False and v1.bname == "broker-a"
    assert v1.properties is not None and v1.properties.startswith("TAGS\x01TagA\x02")
    assert SendMessageRequestHeaderV2.from_v1(v1).to_ext_fields() == cmd.ext_fields


def test_send_v1_code_uses_long_names() -> None:
    v1 = SendMessageRequestHeader(
        producerGroup="g",
        topic="t",
        defaultTopic="TBW102",
        defaultTopicQueueNums=4,
        queueId=-1,
        sysFlag=0,
        bornTimestamp=1,
        flag=0,
    )
    assert decode_send_message_header(RequestCode.SEND_MESSAGE, v1.to_ext_fields()) == v1


def test_ali_ons_numbers_and_booleans_parse() -> None:
    cmd = decode_json_header(
        b'{"code":14,"extFields":{"consumerGroup":"g","topic":"t","queueId":3,"setZeroIfNotFound":false}}'
    )
    header = QueryConsumerOffsetRequestHeader.parse(cmd.ext_fields)
    assert header.queueId == 3 and header.setZeroIfNotFound is False


def test_cpp_extra_fields_are_ignored_but_kept_on_command() -> None:
    ext = {"topic": "T", "AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "s"}
    header = GetRouteInfoRequestHeader.parse(ext)
    assert header.topic == "T" and header.acceptStandardJsonOnly is None
    assert header.to_ext_fields() == {"topic": "T"}


def test_missing_fields_are_lenient_until_checked() -> None:
    header = PullMessageRequestHeader.from_ext_fields({"topic": "T"})
    assert header.consumerGroup is None
    with pytest.raises(
        HeaderFieldError, match="PullMessageRequestHeader: field 'consumerGroup' is required"
    ) as err:
        header.check_required()
    assert err.value.field == "consumerGroup"
    assert GetRouteInfoRequestHeader.from_ext_fields(None).topic is None


@pytest.mark.parametrize("bad", ["abc", "", "1.5", "0x10", "1_000", "٣"])
def test_bad_number_names_the_field(bad: str) -> None:
    with pytest.raises(HeaderFieldError, match="field 'queueId' is not an integer") as err:
        GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": bad})
    assert isinstance(err.value, ProtocolError)


def test_numbers_are_lenient_about_sign_and_spaces() -> None:
    header = GetMaxOffsetRequestHeader.parse({"topic": "T", "queueId": " +7 "})
    assert header.queueId == 7 and header.committed is True


@pytest.mark.parametrize(("text", "expected"), [("true", True), ("TRUE", True), ("yes", False), ("1", False)])
def test_booleans_follow_java_parse_boolean(text: str, expected: bool) -> None:
    assert RegisterBrokerRequestHeader.from_ext_fields({"compressed": text}).compressed is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("UPPER", BoundaryType.UPPER),
        ("upper", BoundaryType.UPPER),
        ("LOWER", BoundaryType.LOWER),
        ("x", BoundaryType.LOWER),
    ],
)
def test_boundary_type(text: str, expected: BoundaryType) -> None:
    header = SearchOffsetRequestHeader.parse(
        {"topic": "T", "queueId": "0", "timestamp": "5", "boundaryType": text}
    )
    assert header.boundaryType is expected
    assert (
        SearchOffsetRequestHeader(
            topic="T", queueId=0, timestamp=5, boundaryType=BoundaryType.UPPER
        ).to_ext_fields()["boundaryType"]
        == "UPPER"
    )


def test_java_defaults_and_field_names() -> None:
    reset = ResetOffsetRequestHeader.parse({"group": "g", "topic": "t", "timestamp": "9", "isForce": "true"})
    assert (reset.queueId, reset.offset, reset.isForce) == (-1, None, True)
    create = CreateTopicRequestHeader(
        topic="T",
        defaultTopic="TBW102",
        readQueueNums=8,
        writeQueueNums=8,
        perm=6,
        topicFilterType="SINGLE_TAG",
    )
    assert create.to_ext_fields() == {
        "topic": "T",
        "defaultTopic": "TBW102",
        "readQueueNums": "8",
        "writeQueueNums": "8",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "order": "false",
        "force": "false",
    }
    assert DeleteSubscriptionGroupRequestHeader.parse(
        {"groupName": "g", "removeOffset": "true"}
    ).clean_offsets
    stats = GetConsumeStatsRequestHeader.parse({"consumerGroup": "g", "topic": "a", "topicList": "b;a;;c"})
    assert stats.topics == ["a", "b", "c"]


def test_response_header_round_trip() -> None:
    header = SendMessageResponseHeader(msgId="C0A8", queueId=1, queueOffset=2**40, transactionId="U")
    assert SendMessageResponseHeader.parse(header.to_ext_fields()) == header


_ALL_HEADERS = sorted(set(REQUEST_HEADERS.values()), key=lambda c: c.__name__)
_SAMPLES = {"str": "v", "int": -7, "bool": True, "BoundaryType": BoundaryType.UPPER}


def _sample(f: dataclasses.Field[object]) -> object:
    return next(value for name, value in _SAMPLES.items() if name in str(f.type))


@pytest.mark.parametrize("cls", _ALL_HEADERS, ids=lambda c: c.__name__)
def test_every_header_round_trips_with_every_field_set(cls: type[CommandHeader]) -> None:
    header = cls(**{f.name: _sample(f) for f in dataclasses.fields(cls)})
    assert cls.parse(header.to_ext_fields()) == header


@given(st.data())
def test_fuzz_header_decoding_only_raises_protocol_error(data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from(_ALL_HEADERS))
    keys = st.sampled_from([f.name for f in dataclasses.fields(cls)]) | st.text(max_size=10)
    ext = data.draw(st.dictionaries(keys, st.text(max_size=12), max_size=10))
    with contextlib.suppress(ProtocolError):
        cls.parse(ext)


@given(st.data())
def test_send_v2_parsed_straight_to_v1_matches_parse_then_to_v1(data: st.DataObject) -> None:
    """What the send path decodes in one step equals the two-step form, errors included."""
    names = [f.name for f in dataclasses.fields(SendMessageRequestHeaderV2)]
    full = SendMessageRequestHeaderV2(
        **{f.name: _sample(f) for f in dataclasses.fields(SendMessageRequestHeaderV2)}
    ).to_ext_fields()
    dropped = data.draw(st.sets(st.sampled_from(names)))
    spoiled = data.draw(
        st.dictionaries(st.sampled_from(names), st.sampled_from(["", "x", " 7 ", "-1"]), max_size=3)
    )
    ext = {k: v for k, v in full.items() if k not in dropped} | spoiled
    try:
        expected: object = SendMessageRequestHeaderV2.parse(ext).to_v1()
    except HeaderFieldError as exc:
        expected = str(exc)
    try:
        got: object = SendMessageRequestHeaderV2.parse_v1(ext)
    except HeaderFieldError as exc:
        got = str(exc)
    assert got == expected
    if isinstance(got, str) and "field" in got:
        assert any(f"field {name!r}" in got for name in names)  # names the one-letter field sent
