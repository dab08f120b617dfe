import contextlib
import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.protocol.codes import LanguageCode, RequestCode, SerializeType
from broker.protocol.remoting import (
    MAX_FRAME_LENGTH,
    SEPARATE_BODY_BYTES,
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    decode_binary_header,
    decode_frame,
    decode_json_header,
    encode_binary_header,
    encode_command,
    encode_frame,
    encode_json_header,
    make_request,
    make_response,
    mark_serialize_type,
)
from tests.vectors import wire_item

VECTORS = [
    "get_route_request_json",
    "get_route_response_json",
    "get_route_request_rocketmq_binary",
    "send_message_v2_request_json",
]


def _frame(header: bytes, body: bytes = b"", stype: int = 0) -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), (stype << 24) | len(header)) + header + body


@pytest.mark.parametrize("name", VECTORS)
def test_vectors_decode_and_reencode_byte_for_byte(name: str) -> None:
    item = wire_item(name)
    raw = bytes.fromhex(item["hex"])
    assert len(raw) == item["length"]
    (cmd,) = FrameDecoder().feed(raw)
    if "header_json" in item:
        assert json.loads(item["header_json"])["opaque"] == cmd.opaque
    assert encode_command(cmd) == raw


def test_route_request_fields() -> None:
    (cmd,) = FrameDecoder().feed(bytes.fromhex(wire_item("get_route_request_json")["hex"]))
    assert (cmd.code, cmd.opaque, cmd.version, cmd.language) == (105, 1, 479, LanguageCode.JAVA)
    assert cmd.ext_fields == {"topic": "TopicTest"}
    assert not cmd.is_response and not cmd.is_oneway and cmd.body is None
    (binary,) = FrameDecoder().feed(bytes.fromhex(wire_item("get_route_request_rocketmq_binary")["hex"]))
    assert binary.serialize_type is SerializeType.ROCKETMQ
    assert (binary.code, binary.opaque, binary.version, binary.ext_fields) == (105, 1, 479, cmd.ext_fields)


def test_response_vector_header_is_95_bytes() -> None:
    item = wire_item("get_route_response_json")
    (cmd,) = FrameDecoder().feed(bytes.fromhex(item["hex"]))
    assert cmd.is_response and cmd.code == 0
    assert cmd.body == item["body"].encode()
    assert len(item["header_json"]) == 95


def test_binary_header_sizes_match_upstream() -> None:
    cmd = RemotingCommand(code=103, language=LanguageCode.JAVA, version=2333, opaque=0, flag=0)
    header = encode_binary_header(cmd)
    assert len(header) == 21
    assert struct.unpack_from(">h", header, 0)[0] == 103
    assert header[2] == 0
    assert struct.unpack_from(">h", header, 3)[0] == 2333
    assert struct.unpack_from(">i", header, 13)[0] == 0
    cmd.remark = "Sample Remark"
    assert len(encode_binary_header(cmd)) == 34
    cmd.remark = None
    cmd.ext_fields = {"key": "value"}
    header = encode_binary_header(cmd)
    assert len(header) == 35
    assert struct.unpack_from(">i", header, 17)[0] == 14
    assert decode_binary_header(header).ext_fields == {"key": "value"}


def test_mark_serialize_type() -> None:
    assert mark_serialize_type(SerializeType.JSON, 261) == bytes.fromhex("00000105")
    assert mark_serialize_type(SerializeType.ROCKETMQ, 16777215) == bytes.fromhex("01FFFFFF")


def test_binary_header_cannot_carry_pop_codes() -> None:
    cmd = make_request(RequestCode.POP_MESSAGE)
    with pytest.raises(ProtocolError, match="16 bits"):
        encode_command(cmd, SerializeType.ROCKETMQ)
    assert decode_frame(encode_command(cmd)[4:]).code == RequestCode.POP_MESSAGE


def test_binary_empty_strings_decode_as_absent() -> None:
    cmd = RemotingCommand(code=1, remark="", ext_fields={"a": "", "b": "x"})
    decoded = decode_binary_header(encode_binary_header(cmd))
    assert decoded.remark is None and decoded.ext_fields == {"b": "x"}


def test_ali_ons_header_numbers_and_booleans_become_java_strings() -> None:
    header = (
        b'{"code":14,"extFields":{"consumerGroup":"g","topic":"t","queueId":0,"setZeroIfNotFound":false,'
        b'"commitOffset":12345678901,"gone":null},"flag":0,"language":"JAVA","opaque":3,'
        b'"serializeTypeCurrentRPC":"JSON","version":317}'
    )
    cmd = decode_json_header(header)
    assert cmd.ext_fields == {
        "consumerGroup": "g",
        "topic": "t",
        "queueId": "0",
        "setZeroIfNotFound": "false",
        "commitOffset": "12345678901",
    }


def test_cpp_header_language_and_extra_fields() -> None:
    header = (
        b'{"code":10,"language":"CPP","version":0,"opaque":9,"flag":0,"remark":"",'
        b'"extFields":{"AccessKey":"","OnsChannel":"ALIYUN","Signature":"abc","topic":"T"},"unknown":[1,2]}'
    )
    cmd = decode_json_header(header)
    assert cmd.language is LanguageCode.CPP and cmd.opaque == 9 and cmd.remark == ""
    assert cmd.ext_fields["OnsChannel"] == "ALIYUN"
    assert decode_json_header(b'{"code":10,"language":1}').language is LanguageCode.CPP


def test_json_header_missing_or_null_ext_fields() -> None:
    assert decode_json_header(b'{"code":0,"flag":1,"extFields":null}').ext_fields == {}
    assert decode_json_header(b'{"code":0,"flag":1}').is_response


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b"[1]", "must be an object"),
        (b'{"code":"abc"}', "'code' must be an integer"),
        (b'{"code":true}', "'code' must be an integer"),
        (b'{"code":1,"opaque":99999999999}', "out of the 32-bit range"),
        (b'{"code":1,"extFields":[1]}', "'extFields' must be an object"),
        (b'{"code":1,"language":{}}', "'language'"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"code":', "does not parse"),
        (b"[" * 10000, "does not parse"),
        (b"[" * 100000, "relaxed JSON headers may have at most 16384 bytes"),
    ],
)
def test_bad_json_headers_raise_protocol_error(header: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode_json_header(header)


def test_relaxed_json_headers_are_read_up_to_their_limit() -> None:
    relaxed = b"{code:10,extFields:{topic:'T'}}"  # fastjson's bare keys and single quotes
    assert decode_json_header(relaxed).ext_fields == {"topic": "T"}
    with pytest.raises(ProtocolError, match=f"{len(relaxed)} bytes is not standard JSON"):
        decode_json_header(relaxed, lenient_limit=len(relaxed) - 1)
    standard = b'{"code":10,"extFields":{"topic":"' + b"x" * 100_000 + b'"}}'
    assert decode_json_header(standard, lenient_limit=16).code == 10  # standard JSON: no such limit


def test_make_response_echoes_opaque() -> None:
    request = make_request(RequestCode.HEART_BEAT, body=b"{}", oneway=True, opaque=42)
    assert request.is_oneway and request.opaque == 42
    response = make_response(request, 0, "ok")
    assert response.is_response and response.opaque == 42 and response.remark == "ok"


def test_decoder_reassembles_split_and_coalesced_frames() -> None:
    frames = [
        encode_command(make_request(RequestCode.PULL_MESSAGE, body=bytes(range(200)), opaque=n))
        for n in range(3)
    ]
    stream = b"".join(frames)
    decoder = FrameDecoder()
    got = []
    for i in range(0, len(stream), 7):
        got += [c.opaque for c in decoder.feed(stream[i : i + 7])]
    assert got == [0, 1, 2] and decoder.buffered == 0
    assert [c.opaque for c in FrameDecoder().feed(stream)] == [0, 1, 2]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (struct.pack(">i", -1), "below the 4-byte minimum"),
        (struct.pack(">i", 2), "below the 4-byte minimum"),
        (struct.pack(">i", MAX_FRAME_LENGTH), "exceeds the"),
        (bytes.fromhex("16030100"), "exceeds the"),  # a TLS ClientHello
        (_frame(b"{}")[:4] + struct.pack(">i", 50) + b"{}", "header length 50 exceeds"),
        (_frame(b"{}", stype=7), "unknown serialize type 7"),
        (_frame(b"\x00\x01", stype=1), "ROCKETMQ header too short"),
    ],
)
def test_malformed_frames(data: bytes, message: str) -> None:
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError, match=message):
        list(decoder.feed(data))
    with pytest.raises(ProtocolError):  # the stream stays failed
        list(decoder.feed(b""))


def test_binary_header_lengths_are_checked() -> None:
    fixed = struct.pack(">hBhii", 1, 0, 0, 0, 0)
    with pytest.raises(ProtocolError, match="remark length 100"):
        decode_binary_header(fixed + struct.pack(">i", 100))
    with pytest.raises(ProtocolError, match="remark length -1"):
        decode_binary_header(fixed + struct.pack(">i", -1) + bytes(4))
    with pytest.raises(ProtocolError, match="extField value length"):
        decode_binary_header(
            fixed + struct.pack(">ii", 0, 8) + struct.pack(">h", 1) + b"k" + b"\x00\x00\x00\x09" + b"x"
        )


def test_valid_request_before_garbage_is_still_delivered() -> None:
    good = encode_command(make_request(RequestCode.HEART_BEAT, opaque=5))
    frames = FrameDecoder().feed(good + struct.pack(">i", -5))
    assert next(frames).opaque == 5
    with pytest.raises(ProtocolError):
        next(frames)


_text = st.text(max_size=20)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i16 = st.integers(-(2**15), 2**15 - 1)


@given(
    code=_i16,
    language=st.sampled_from(LanguageCode),
    version=_i16,
    opaque=_i32,
    flag=_i32,
    remark=st.none() | _text,
    ext=st.dictionaries(_text, _text, max_size=5),
    body=st.none() | st.binary(min_size=1, max_size=64),
    stype=st.sampled_from(SerializeType),
)
def test_command_round_trip(
    code: int,
    language: LanguageCode,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext: dict[str, str],
    body: bytes | None,
    stype: SerializeType,
) -> None:
    cmd = RemotingCommand(code, language, version, opaque, flag, remark, ext, body, stype)
    (decoded,) = FrameDecoder().feed(encode_command(cmd))
    if stype is SerializeType.ROCKETMQ:  # Java's binary form cannot tell "" from null
        cmd.remark = cmd.remark or None
        cmd.ext_fields = {k: v for k, v in ext.items() if k and v}
    assert decoded == cmd


@given(st.lists(st.binary(max_size=64), max_size=8))
def test_fuzz_decoder_only_raises_protocol_error(chunks: list[bytes]) -> None:
    decoder = FrameDecoder()
    try:
        for chunk in chunks:
            list(decoder.feed(chunk))
    except ProtocolError:
        pass


@given(st.binary(max_size=200), st.integers(0, 255))
def test_fuzz_framed_headers_only_raise_protocol_error(header: bytes, stype: int) -> None:
    # A well-formed frame around random header bytes reaches the JSON and binary header decoders.
    with contextlib.suppress(ProtocolError):
        list(FrameDecoder().feed(_frame(header, b"body", stype % 3)))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_fuzz_json_header_values_only_raise_protocol_error(value: object) -> None:
    for key in ("code", "language", "opaque", "remark", "extFields", "flag"):
        with contextlib.suppress(ProtocolError):
            decode_json_header(json.dumps({key: value}).encode())


@given(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.one_of(st.none(), st.text()),
    st.dictionaries(st.text(), st.text(), max_size=6),
)
def test_json_header_is_what_a_sorted_compact_json_encoder_writes(
    code: int, opaque: int, remark: str | None, ext: dict[str, str]
) -> None:
    """The header written field by field equals json.dumps of the same object, keys sorted."""
    cmd = RemotingCommand(code, opaque=opaque, remark=remark, ext_fields=ext, flag=1)
    obj: dict[str, object] = {
        "code": code, "flag": 1, "language": "JAVA", "opaque": opaque, "serializeTypeCurrentRPC": "JSON",
        "version": cmd.version,
    }  # fmt: skip
    if remark is not None:
        obj["remark"] = remark
    if ext:
        obj["extFields"] = ext
    expected = json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    try:
        wire = encode_json_header(cmd)
    except UnicodeEncodeError:  # a lone surrogate cannot be sent at all
        with pytest.raises(UnicodeEncodeError):
            expected.encode("utf-8")
        return
    assert wire == expected.encode("utf-8")
    assert decode_json_header(wire).ext_fields == ext


def test_json_header_with_non_string_ext_values_still_encodes() -> None:
    cmd = RemotingCommand(0, opaque=7, ext_fields={"b": 2, "a": True})  # type: ignore[dict-item]
    assert encode_json_header(cmd) == (
        b'{"code":0,"extFields":{"a":true,"b":2},"flag":0,"language":"JAVA","opaque":7,'
        b'"serializeTypeCurrentRPC":"JSON","version":' + str(cmd.version).encode() + b"}"
    )


@pytest.mark.parametrize("size", [0, 1024, SEPARATE_BODY_BYTES - 1, SEPARATE_BODY_BYTES, 1 << 20])
def test_a_large_body_is_framed_without_a_copy(size: int) -> None:
    body = bytes(size)
    cmd = make_request(RequestCode.PULL_MESSAGE, body=body)
    first, rest = encode_frame(cmd)
    assert first + rest == encode_command(cmd)
    assert (decode_frame((first + rest)[4:]).body or b"") == body
    if size >= SEPARATE_BODY_BYTES:
        assert rest is body  # written as it is, not copied into the frame
    else:
        assert rest == b""  # one buffer to write
