"""Malformed headers and bodies get RocketMQ error codes with precise remarks, and the NameServer
keeps serving; odd but legal peers (binary headers, JSON numbers as extField values) are served."""

from __future__ import annotations

import json
import re
import struct
import zlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol import headers as H
from broker.protocol.bodies import ClusterInfo
from broker.protocol.codes import RequestCode, ResponseCode, SerializeType
from broker.protocol.remoting import RemotingCommand
from tests.broker.namesrv.helpers import raw_call, registration, request, topic_table

BROKER = "127.0.0.1:10911"
ANSWERS_TO_BAD_INPUT = {ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR, ResponseCode.INVALID_PARAMETER}


def register_with(ext: dict[str, str], body: bytes | None = None) -> RemotingCommand:
    cmd = registration("C1", "broker-a", BROKER, 0, topic_table("T"))
    cmd.ext_fields.update(ext)
    if body is not None:
        cmd.body = body
    return cmd


def assert_answered(answer: RemotingCommand) -> None:
    """An error code meant for bad input, not a handler crash the transport turned into one."""
    assert answer.code in ANSWERS_TO_BAD_INPUT, answer
    assert not re.match(r"\w+(Error|Exception): ", answer.remark or ""), answer.remark


def assert_serving(addr: str) -> None:
    answer = raw_call(addr, request(RequestCode.GET_BROKER_CLUSTER_INFO))
    assert answer.code == ResponseCode.SUCCESS
    ClusterInfo.from_json(answer.body or b"{}")


def test_register_broker_header_and_body_errors(threaded_namesrv: str) -> None:
    addr = threaded_namesrv
    missing = register_with({})
    del missing.ext_fields["brokerAddr"]
    cases: list[tuple[RemotingCommand, int, str]] = [
        (missing, ResponseCode.INVALID_PARAMETER, "'brokerAddr' is required"),
        (register_with({"brokerId": "master"}), ResponseCode.INVALID_PARAMETER, "'brokerId'"),
        (register_with({"bodyCrc32": "12345"}), ResponseCode.SYSTEM_ERROR, "crc32 not match"),
        (register_with({"bodyCrc32": "0"}, b"{not json"), ResponseCode.SYSTEM_ERROR, "Failed to decode"),
        (register_with({"bodyCrc32": "0", "compressed": "true"}), ResponseCode.SYSTEM_ERROR, "inflate"),
        (
            register_with({"bodyCrc32": "0"}, b'{"topicConfigSerializeWrapper":{"topicConfigTable":[]}}'),
            ResponseCode.SYSTEM_ERROR,
            "topicConfigTable",
        ),
    ]
    for cmd, code, remark in cases:
        answer = raw_call(addr, cmd)
        assert answer.code == code and remark in (answer.remark or ""), (cmd.ext_fields, answer.remark)
    assert_serving(addr)


def test_other_bodies_and_headers_are_checked(threaded_namesrv: str) -> None:
    addr = threaded_namesrv
    ident = H.QueryDataVersionRequestHeader(brokerName="b", brokerAddr=BROKER, clusterName="C1", brokerId=0)
    for cmd, code, remark in (
        (
            request(RequestCode.QUERY_DATA_VERSION, ident),
            ResponseCode.SYSTEM_ERROR,
            "needs the broker's DataVersion",
        ),
        (
            request(RequestCode.QUERY_DATA_VERSION, ident, body=b"[1]"),
            ResponseCode.SYSTEM_ERROR,
            "DataVersion",
        ),
        (
            request(
                RequestCode.REGISTER_TOPIC_IN_NAMESRV, H.RegisterTopicRequestHeader(topic="X"), body=b"\xff"
            ),
            ResponseCode.SYSTEM_ERROR,
            "UTF-8",
        ),
        (request(RequestCode.GET_ROUTEINFO_BY_TOPIC), ResponseCode.INVALID_PARAMETER, "'topic' is required"),
        (
            request(RequestCode.PUT_KV_CONFIG, ext_fields={"namespace": "n", "key": "k"}),
            ResponseCode.INVALID_PARAMETER,
            "'value' is required",
        ),
        (request(RequestCode.BROKER_HEARTBEAT), ResponseCode.INVALID_PARAMETER, "'clusterName'"),
    ):
        answer = raw_call(addr, cmd)
        assert answer.code == code and remark in (answer.remark or ""), (cmd.code, answer.remark)
    assert_serving(addr)


def test_binary_headers_and_json_number_values_are_served(threaded_namesrv: str) -> None:
    addr = threaded_namesrv
    binary = raw_call(addr, request(RequestCode.GET_BROKER_CLUSTER_INFO), SerializeType.ROCKETMQ)
    assert binary.code == ResponseCode.SUCCESS
    # ali-ons style: numbers and booleans as extField values, language of another client
    header = json.dumps(
        {
            "code": RequestCode.REGISTER_BROKER,
            "language": "NODE_JS",
            "version": 401,
            "opaque": 7,
            "flag": 0,
            "extFields": {
                "brokerName": "js",
                "brokerAddr": "127.0.0.1:20911",
                "clusterName": "C9",
                "haServerAddr": "127.0.0.1:20912",
                "brokerId": 0,
                "compressed": False,
            },
        }
    ).encode()
    body = b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"J":{"topicName":"J","perm":6}}}}'
    frame = struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body
    answer = raw_call(addr, frame)
    assert (answer.code, answer.opaque) == (ResponseCode.SUCCESS, 7)


EXT_KEYS = st.sampled_from(
    [
        "brokerName",
        "brokerAddr",
        "clusterName",
        "haServerAddr",
        "brokerId",
        "heartbeatTimeoutMillis",
        "enableActingMaster",
        "compressed",
        "bodyCrc32",
        "namespace",
        "key",
        "value",
        "__ZONE_NAME",
    ]
) | st.text(max_size=6)
EXT_VALUES = (
    st.text(max_size=16)
    | st.integers().map(str)
    | st.sampled_from(["true", "false", "0", "-1", "", " 7 ", "9" * 40, "0x10"])
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
BODIES = (
    st.none()
    | st.binary(max_size=120)
    | st.binary(max_size=120).map(zlib.compress)
    | JSON_VALUES.map(lambda v: json.dumps({"topicConfigSerializeWrapper": v}).encode())
    | JSON_VALUES.map(lambda v: json.dumps(v).encode())
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ext=st.dictionaries(EXT_KEYS, EXT_VALUES, max_size=12), body=BODIES)
def test_fuzzed_register_broker_is_answered(
    threaded_namesrv: str, ext: dict[str, str], body: bytes | None
) -> None:
    cmd = request(RequestCode.REGISTER_BROKER, ext_fields=ext, body=body)
    assert_answered(raw_call(threaded_namesrv, cmd))
    assert_serving(threaded_namesrv)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ext=st.dictionaries(EXT_KEYS, EXT_VALUES, max_size=8), body=BODIES)
def test_fuzzed_put_kv_config_is_answered(
    threaded_namesrv: str, ext: dict[str, str], body: bytes | None
) -> None:
    answer = raw_call(threaded_namesrv, request(RequestCode.PUT_KV_CONFIG, ext_fields=ext, body=body))
    assert_answered(answer)
    if answer.code == ResponseCode.SUCCESS:
        get = H.GetKVConfigRequestHeader(namespace=ext["namespace"], key=ext["key"])
        assert raw_call(threaded_namesrv, request(RequestCode.GET_KV_CONFIG, get)).ext_fields == {
            "value": ext["value"]
        }
