"""Remoting frames and RemotingCommand, sans-IO.

A frame is ``i32 length | i32 (serializeType << 24 | headerLength) | header | body``. The header is
either fastjson-style JSON or the compact ROCKETMQ binary form; both decode to one
:class:`RemotingCommand`. Decoders are lenient where Java is (numbers and booleans as extField
values, language as name or ordinal, unknown keys) and raise :class:`ProtocolError` for everything
that cannot be a frame, so a server can drop exactly the offending connection.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson

from broker.protocol import lenient_json
from broker.protocol.codes import CURRENT_VERSION, LanguageCode, ResponseCode, SerializeType, language_of

MAX_FRAME_LENGTH = 16 * 1024 * 1024  # whole frame including the length field, as Netty counts it
# The tolerant reader of fastjson's relaxed forms is pure Python: a JSON header that is not standard
# JSON is only read up to this size, so one such frame holds the event loop for milliseconds, not
# seconds. Standard JSON headers (what every client writes) have no limit
# but the frame's.
LENIENT_HEADER_LIMIT = 16 * 1024
RESPONSE_FLAG = 1 << 0
ONEWAY_FLAG = 1 << 1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag: 13 bytes
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_HEADER_LENGTH_MASK = 0xFFFFFF
# lenient_json.dumps' exact output; one encoder object instead of a new one per json.dumps call
_dump_json = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode
# The language names peers actually send, for the fast path of decode_json_header
_LANGUAGE_NAMES: dict[str, LanguageCode] = dict(LanguageCode.__members__)
_SERIALIZE_TYPES = {int(t): t for t in SerializeType}
# Enum.name is an interpreted property: the names by ordinal, for encoding
_LANGUAGE_NAME_OF = {int(code): code.name for code in LanguageCode}


class ProtocolError(ValueError):
    """Bytes or fields that violate the remoting protocol; the message says exactly what and where."""


class ExtFieldsHeader(Protocol):
    """Anything that renders itself as extFields (the typed headers in :mod:`broker.protocol.headers`)."""

    def to_ext_fields(self) -> dict[str, str]: ...


# init=False with a hand-written __init__: mypyc compiles that one, while the one dataclass would
# generate stays interpreted, a Python call per command (or per message) on the hot paths.
@dataclass(slots=True, init=False)
class RemotingCommand:
    code: int
    language: LanguageCode
    version: int
    opaque: int
    flag: int
    remark: str | None
    ext_fields: dict[str, str]
    body: bytes | None
    serialize_type: SerializeType

    def __init__(
        self,
        code: int,
        language: LanguageCode = LanguageCode.JAVA,  # peers expect a broker to look like the Java one
        version: int = CURRENT_VERSION,
        opaque: int = 0,
        flag: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes | None = None,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        self.code = code
        self.language = language
        self.version = version
        self.opaque = opaque
        self.flag = flag
        self.remark = remark
        self.ext_fields = {} if ext_fields is None else ext_fields
        self.body = body
        self.serialize_type = serialize_type

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def encode(self, serialize_type: SerializeType | None = None) -> bytes:
        return encode_command(self, serialize_type)


_opaque_counter = itertools.count()


def next_opaque() -> int:
    """Process-wide request id, kept non-negative so it survives every header form."""
    return next(_opaque_counter) & 0x7FFFFFFF


def make_request(
    code: int,
    header: ExtFieldsHeader | None = None,
    *,
    body: bytes | None = None,
    oneway: bool = False,
    ext_fields: Mapping[str, str] | None = None,
    opaque: int | None = None,
    language: LanguageCode = LanguageCode.JAVA,
    version: int = CURRENT_VERSION,
) -> RemotingCommand:
    """A request; ``ext_fields`` adds keys beyond the typed header (ACL fields, ``_UNIQUE_KEY_QUERY``)."""
    fields = header.to_ext_fields() if header is not None else {}
    if ext_fields:
        fields.update(ext_fields)
    return RemotingCommand(
        code=code,
        language=language,
        version=version,
        opaque=next_opaque() if opaque is None else opaque,
        flag=ONEWAY_FLAG if oneway else 0,
        ext_fields=fields,
        body=body,
    )


def make_response(
    request: RemotingCommand,
    code: int = ResponseCode.SUCCESS,
    remark: str | None = None,
    *,
    header: ExtFieldsHeader | None = None,
    body: bytes | None = None,
) -> RemotingCommand:
    """The answer to ``request``: same opaque, response flag set."""
    return RemotingCommand(
        code=code,
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        remark=remark,
        ext_fields=header.to_ext_fields() if header is not None else {},
        body=body,
    )


# ---------------------------------------------------------------------------------------------
# JSON header


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """fastjson's bean form: keys sorted, nulls (and an absent extFields map) omitted.

    orjson writes the common header (string remark and extFields values) several times faster than
    json's encoder; any other value goes through the generic encoder, whose output it matches."""
    obj: dict[str, Any] = {
        "code": int(cmd.code),
        "flag": int(cmd.flag),
        "language": _LANGUAGE_NAME_OF[int(cmd.language)],
        "opaque": int(cmd.opaque),
        "serializeTypeCurrentRPC": "JSON",
        "version": int(cmd.version),
    }
    remark = cmd.remark
    if remark is not None:
        if type(remark) is not str:
            return _encode_json_header_generic(cmd)
        obj["remark"] = remark
    ext = cmd.ext_fields
    if ext:
        values: Mapping[str, object] = ext  # typed str; any other value goes to the generic encoder
        for value in values.values():
            if type(value) is not str:
                return _encode_json_header_generic(cmd)
        obj["extFields"] = ext
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # a key that is not a string, a lone surrogate
        return _encode_json_header_generic(cmd)


def _encode_json_header_generic(cmd: RemotingCommand) -> bytes:
    obj: dict[str, Any] = {
        "code": cmd.code,
        "flag": cmd.flag,
        "language": cmd.language.name,
        "opaque": cmd.opaque,
        "serializeTypeCurrentRPC": SerializeType.JSON.name,
        "version": cmd.version,
    }
    if cmd.remark is not None:
        obj["remark"] = cmd.remark
    if cmd.ext_fields:
        obj["extFields"] = cmd.ext_fields
    return _dump_json(obj).encode("utf-8")


def _java_string(value: Any) -> str:
    """What Java's String.valueOf gives for a JSON scalar that fastjson stored in a String map."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return lenient_json.dumps(value)


def _header_int(obj: Mapping[str, Any], name: str) -> int:
    value = obj.get(name)
    if value is None:
        return 0  # fastjson leaves a missing int field at its default
    if isinstance(value, bool):
        raise ProtocolError(f"header field {name!r} must be an integer, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ProtocolError(f"header field {name!r} must be an integer, got {value!r}") from None
    if not isinstance(value, int):
        raise ProtocolError(f"header field {name!r} must be an integer, got {value!r}")
    if not _I32_MIN <= value <= _I32_MAX:
        raise ProtocolError(f"header field {name!r} is out of the 32-bit range: {value}")
    return value


def _is_i32(value: object) -> bool:
    return type(value) is int and _I32_MIN <= value <= _I32_MAX


def _loads_leniently(data: bytes | memoryview) -> Any:
    """fastjson's relaxed JSON (bare keys, single quotes, NaN), with the errors worded."""
    try:
        return lenient_json.loads(str(data, "utf-8"))
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"JSON header is not UTF-8 (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:  # ValueError also covers numbers beyond int()'s digit limit
        raise ProtocolError(f"JSON header does not parse: {exc}") from None


def decode_json_header(
    data: bytes | memoryview, lenient_limit: int = LENIENT_HEADER_LIMIT
) -> RemotingCommand:
    """Parse a JSON header; the caller sets the body and serialize type from the frame. A header that
    is not standard JSON is read leniently only when it is at most ``lenient_limit`` bytes long."""
    try:
        obj = orjson.loads(data)  # standard JSON, what peers send: twice as fast as json's scanner
    except orjson.JSONDecodeError:
        if len(data) > lenient_limit:
            raise ProtocolError(
                f"JSON header of {len(data)} bytes is not standard JSON, and relaxed JSON headers "
                f"may have at most {lenient_limit} bytes"
            ) from None
        obj = _loads_leniently(data)
    if not isinstance(obj, dict):
        raise ProtocolError(f"JSON header must be an object, got {type(obj).__name__}")
    # Fast path for what every peer sends: int fields, a language name, string-only extFields.
    code, version = obj.get("code", 0), obj.get("version", 0)
    opaque, flag = obj.get("opaque", 0), obj.get("flag", 0)
    remark = obj.get("remark")
    raw_ext = obj.get("extFields")
    name = obj.get("language", "JAVA")
    language = _LANGUAGE_NAMES.get(name) if type(name) is str else None
    if (
        language is not None
        and _is_i32(code)
        and _is_i32(version)
        and _is_i32(opaque)
        and _is_i32(flag)
        and (remark is None or type(remark) is str)
        and (raw_ext is None or (type(raw_ext) is dict and all(type(v) is str for v in raw_ext.values())))
    ):
        ext = {} if raw_ext is None else raw_ext
        return RemotingCommand(code, language, version, opaque, flag, remark, ext)
    return _decode_json_header_leniently(obj)


def _decode_json_header_leniently(obj: dict[str, Any]) -> RemotingCommand:
    """Java's conversions: numbers as strings, language ordinals, scalar extField values."""
    language = obj.get("language")
    if language is not None and (isinstance(language, bool) or not isinstance(language, str | int)):
        raise ProtocolError(f"header field 'language' must be a name or an ordinal, got {language!r}")
    remark = obj.get("remark")
    raw_ext = obj.get("extFields")
    if raw_ext is not None and not isinstance(raw_ext, dict):
        raise ProtocolError(f"header field 'extFields' must be an object, got {type(raw_ext).__name__}")
    return RemotingCommand(
        code=_header_int(obj, "code"),
        language=LanguageCode.JAVA if language is None else language_of(language),
        version=_header_int(obj, "version"),
        opaque=_header_int(obj, "opaque"),
        flag=_header_int(obj, "flag"),
        remark=None if remark is None else _java_string(remark),
        ext_fields={k: _java_string(v) for k, v in (raw_ext or {}).items() if v is not None},
    )


# ---------------------------------------------------------------------------------------------
# ROCKETMQ binary header


def _check_i16(name: str, value: int) -> None:
    if not -32768 <= value <= 32767:
        raise ProtocolError(f"{name} {value} does not fit the ROCKETMQ header's 16 bits; use JSON")


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    _check_i16("code", cmd.code)
    _check_i16("version", cmd.version)
    parts = [_FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag)]
    remark = cmd.remark.encode("utf-8") if cmd.remark else b""
    parts += (_I32.pack(len(remark)), remark)
    ext: list[bytes] = []
    for key, value in cmd.ext_fields.items():
        kb = key.encode("utf-8")
        vb = value.encode("utf-8")
        if len(kb) > 32767:
            raise ProtocolError(f"extField name of {len(kb)} bytes does not fit the ROCKETMQ header")
        ext += (_I16.pack(len(kb)), kb, _I32.pack(len(vb)), vb)
    ext_block = b"".join(ext)
    parts += (_I32.pack(len(ext_block)), ext_block)
    return b"".join(parts)


def _read_len(view: memoryview, pos: int, fmt: struct.Struct, limit: int, what: str) -> tuple[int, int]:
    """Read a length prefix at ``pos`` and check that many bytes follow before ``limit``."""
    if pos + fmt.size > limit:
        raise ProtocolError(f"ROCKETMQ header truncated at byte {pos}: missing {what} length")
    (length,) = fmt.unpack_from(view, pos)
    pos += fmt.size
    if length < 0 or length > limit - pos:
        raise ProtocolError(f"ROCKETMQ header {what} length {length} at byte {pos - fmt.size} exceeds header")
    return length, pos


def decode_binary_header(data: bytes | memoryview) -> RemotingCommand:
    view = memoryview(data)
    size = len(view)
    if size < _FIXED.size:
        raise ProtocolError(f"ROCKETMQ header too short: {size} bytes, the fixed part is {_FIXED.size}")
    code, language, version, opaque, flag = _FIXED.unpack_from(view, 0)
    length, pos = _read_len(view, _FIXED.size, _I32, size, "remark")
    # Java turns zero-length strings into null, and so do we.
    remark = str(view[pos : pos + length], "utf-8", "replace") or None
    ext_length, pos = _read_len(view, pos + length, _I32, size, "extFields")
    end = pos + ext_length
    ext: dict[str, str] = {}
    while pos < end:
        key_length, pos = _read_len(view, pos, _I16, end, "extField key")
        key = str(view[pos : pos + key_length], "utf-8", "replace")
        value_length, pos = _read_len(view, pos + key_length, _I32, end, "extField value")
        value = str(view[pos : pos + value_length], "utf-8", "replace")
        pos += value_length
        if key and value:
            ext[key] = value
    return RemotingCommand(
        code=code,
        language=language_of(language),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        serialize_type=SerializeType.ROCKETMQ,
    )


# ---------------------------------------------------------------------------------------------
# frames


SEPARATE_BODY_BYTES: Final = 64 * 1024  # a body at least this large is written apart from its frame


def encode_frame(cmd: RemotingCommand, serialize_type: SerializeType | None = None) -> tuple[bytes, bytes]:
    """A complete frame as (a first part, the rest): a large body is the rest as it is, so a pull
    answer's megabyte of records is not copied once more to be framed (and a heap that grows and
    shrinks by such copies costs page faults on every answer); a small one is joined into the first
    part, one buffer being cheaper to write than two."""
    stype = cmd.serialize_type if serialize_type is None else serialize_type
    header = encode_binary_header(cmd) if stype is SerializeType.ROCKETMQ else encode_json_header(cmd)
    body = cmd.body or b""
    length = 4 + len(header) + len(body)
    if length + 4 > MAX_FRAME_LENGTH:
        raise ProtocolError(f"frame of {length + 4} bytes exceeds the {MAX_FRAME_LENGTH}-byte maximum")
    head = (_I32.pack(length), mark_serialize_type(stype, len(header)), header)
    if len(body) < SEPARATE_BODY_BYTES:
        return b"".join((*head, body)), b""
    return b"".join(head), body


def encode_command(cmd: RemotingCommand, serialize_type: SerializeType | None = None) -> bytes:
    """A complete frame; ``serialize_type`` overrides the command's own (servers reply in theirs)."""
    return b"".join(encode_frame(cmd, serialize_type))


def mark_serialize_type(serialize_type: SerializeType, header_length: int) -> bytes:
    """The second int of a frame (upstream's ``markProtocolType``)."""
    return _I32.pack((serialize_type << 24) | (header_length & _HEADER_LENGTH_MASK))


def decode_frame(
    frame: bytes | bytearray | memoryview, lenient_limit: int = LENIENT_HEADER_LIMIT
) -> RemotingCommand:
    """Decode one frame without its leading length field (``lenient_limit``: see decode_json_header)."""
    view = memoryview(frame)
    if len(view) < 4:
        raise ProtocolError(f"frame of {len(view)} bytes has no header-length field")
    (marker,) = _I32.unpack_from(view, 0)
    stype = (marker >> 24) & 0xFF
    header_length = marker & _HEADER_LENGTH_MASK
    if header_length > len(view) - 4:
        raise ProtocolError(
            f"header length {header_length} exceeds the {len(view) - 4} bytes left in the frame"
        )
    header = view[4 : 4 + header_length]
    if stype == SerializeType.JSON:
        cmd = decode_json_header(header, lenient_limit)
    elif stype == SerializeType.ROCKETMQ:
        cmd = decode_binary_header(header)
    else:
        raise ProtocolError(f"unknown serialize type {stype}")
    cmd.serialize_type = _SERIALIZE_TYPES[stype]
    body = view[4 + header_length :]
    cmd.body = bytes(body) if len(body) else None
    return cmd


class FrameDecoder:
    """Reassembles frames from a byte stream: feed it what the socket gave, iterate the commands.

    After a :class:`ProtocolError` the stream has lost its framing, so the decoder stays failed and
    re-raises; the connection must be closed.
    """

    def __init__(
        self, max_frame_length: int = MAX_FRAME_LENGTH, lenient_limit: int = LENIENT_HEADER_LIMIT
    ) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._max = max_frame_length
        self._lenient_limit = lenient_limit
        self._error: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[RemotingCommand]:
        """Append ``data`` now; the returned iterator yields each complete command in order."""
        if self._error is not None:
            raise self._error
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data
        return self._frames()

    def _frames(self) -> Iterator[RemotingCommand]:
        while self._error is None and len(self._buf) - self._pos >= 4:
            try:
                (length,) = _I32.unpack_from(self._buf, self._pos)
                if length < 4:
                    raise ProtocolError(f"frame length {length} is below the 4-byte minimum")
                if length + 4 > self._max:
                    raise ProtocolError(f"frame length {length} exceeds the {self._max}-byte maximum")
                end = self._pos + 4 + length
                if end > len(self._buf):
                    return
                frame = self._buf[self._pos + 4 : end]
                self._pos = end
                cmd = decode_frame(frame, self._lenient_limit)
            except ProtocolError as exc:
                self._error = exc
                raise
            yield cmd
