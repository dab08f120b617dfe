"""JSON request/response bodies as dataclasses, with one generic codec.

Attribute names are the Java JSON property names. Decoding follows the type annotations and is as
lenient as fastjson: unknown keys ignored, missing keys defaulted, numbers given as strings
accepted, enums by name or ordinal (always normalised to the name), map keys bare, quoted or, for
``MessageQueue``-keyed maps, JSON objects. Encoding writes fastjson's default form (sorted keys,
nulls omitted, integer map keys bare, ``MessageQueue`` keys as objects) or, for route answers to new
clients, standard JSON (see :func:`route_wants_standard_json`).

The writer is our own rather than :func:`lenient_json.dumps_fastjson` because fastjson writes
object-valued map keys, which no JSON library can produce.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import struct
import time
import types
import typing
import zlib
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Any, Self

from broker.protocol import lenient_json
from broker.protocol.codes import V4_9_4, V5_0_0
from broker.protocol.remoting import ProtocolError

_MAX_SAFE_INTEGER = (1 << 53) - 1  # beyond this, BrowserCompatible output quotes longs


class BodyError(ProtocolError):
    """A body that is not the JSON (or binary) shape its code requires; names the offending path."""


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---------------------------------------------------------------------------------------------
# enums (fastjson writes names; C++ clients send ordinals)


class ConsumeType(IntEnum):
    CONSUME_ACTIVELY = 0  # pull
    CONSUME_PASSIVELY = 1  # push
    CONSUME_POP = 2


class MessageModel(IntEnum):
    BROADCASTING = 0
    CLUSTERING = 1


class ConsumeFromWhere(IntEnum):
    CONSUME_FROM_LAST_OFFSET = 0
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = 1
    CONSUME_FROM_MIN_OFFSET = 2
    CONSUME_FROM_MAX_OFFSET = 3
    CONSUME_FROM_FIRST_OFFSET = 4
    CONSUME_FROM_TIMESTAMP = 5


class TopicFilterType(IntEnum):
    SINGLE_TAG = 0
    MULTI_TAG = 1


# ---------------------------------------------------------------------------------------------
# writer


def _write(value: Any, standard: bool) -> str:
    if value is None:
        return "null"
    if isinstance(value, Enum):
        return json.dumps(value.name)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f'"{value}"' if standard and abs(value) > _MAX_SAFE_INTEGER else str(value)
    if isinstance(value, float | str):
        return json.dumps(value, ensure_ascii=standard)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        members = sorted(
            (f.name, getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not None
        )
        return "{" + ",".join(f"{json.dumps(k)}:{_write(v, standard)}" for k, v in members) + "}"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: _sort_key(kv[0]))
        return "{" + ",".join(f"{_write_key(k, standard)}:{_write(v, standard)}" for k, v in items) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        return "[" + ",".join(_write(v, standard) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as a body value")


def _write_key(key: Any, standard: bool) -> str:
    if isinstance(key, int) and not isinstance(key, bool):
        return f'"{key}"' if standard else str(key)
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=standard)
    return _write(key, standard)  # fastjson writes object keys as objects


def _sort_key(key: Any) -> Any:
    if dataclasses.is_dataclass(key) and not isinstance(key, type):
        return dataclasses.astuple(key)
    return key


# ---------------------------------------------------------------------------------------------
# reader


def _string_end(text: str, start: int) -> int:
    quote = text[start]
    i = start + 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _quote_object_keys(text: str) -> str:
    """Turn fastjson's object-valued keys into string keys holding that object's JSON text."""
    out: list[str] = []
    stack: list[str] = []
    expect_key = False
    i = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
            expect_key = False
            continue
        if c == "{" and expect_key:
            j = i
            depth = 0
            while j < len(text):
                if text[j] in "\"'":
                    j = _string_end(text, j)
                    continue
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
                if depth == 0:
                    break
            out.append(json.dumps(text[i:j]))
            i = j
            expect_key = False
            continue
        if c in "{[":
            stack.append(c)
            expect_key = c == "{"
        elif c in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif c == ",":
            expect_key = bool(stack) and stack[-1] == "{"
        elif not c.isspace():
            expect_key = False
        out.append(c)
        i += 1
    return "".join(out)


def load_json(data: bytes | str, what: str = "body") -> Any:
    """Parse fastjson output: standard JSON first, then bare/single-quoted keys, then object keys."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        try:
            return lenient_json.loads(text)
        except lenient_json.LenientJSONError:
            return lenient_json.loads(_quote_object_keys(text))
    except UnicodeDecodeError as exc:
        raise BodyError(f"{what} is not UTF-8 (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:  # ValueError also covers numbers beyond int()'s digit limit
        raise BodyError(f"{what} is not JSON: {exc}") from None


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _fail(path: str, expected: str, value: Any) -> BodyError:
    return BodyError(f"{path}: expected {expected}, got {value!r:.80}")


_OPTIONAL_OF: dict[Any, Any] = {}  # ``X | None`` -> X


def _convert(hint: Any, value: Any, path: str) -> Any:
    if hint is Any:
        return value
    if isinstance(hint, types.UnionType):  # ``X | None``
        if value is None:
            return None
        inner = _OPTIONAL_OF.get(hint)
        if inner is None:
            inner = _OPTIONAL_OF[hint] = next(arg for arg in typing.get_args(hint) if arg is not type(None))
        hint = inner
    if type(value) is hint and hint in _SCALARS:  # most values: nothing to do
        return value
    shape = _SHAPES.get(hint)
    if shape is None:
        shape = _SHAPES[hint] = _shape(hint)
    origin = shape[0]
    if origin is list:
        if not isinstance(value, list):
            raise _fail(path, "an array", value)
        item_hint = shape[1]
        return [_convert(item_hint, v, f"{path}[{n}]") for n, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(path, "an object", value)
        key_hint, value_hint = shape[1], shape[2]
        return {
            _convert_key(key_hint, k, path): _convert(value_hint, v, f"{path}.{k}") for k, v in value.items()
        }
    if origin is _DATACLASS:
        if not isinstance(value, dict):
            raise _fail(path, "an object", value)
        return _from_obj(typing.cast(type, hint), value, path)
    if origin is IntEnum:
        by_name: dict[str, IntEnum] = shape[1]
        if isinstance(value, str):
            member = by_name.get(value.strip().upper())
            if member is not None:
                return member
        if isinstance(value, int) and not isinstance(value, bool) and value in hint._value2member_map_:
            return hint(value)
        raise _fail(path, f"a {hint.__name__} name or ordinal", value)
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if isinstance(value, int):
            return value != 0
        raise _fail(path, "a boolean", value)
    if hint is int or hint is float:
        if isinstance(value, bool):
            raise _fail(path, "a number", value)
        if hint is int and isinstance(value, float) and not value.is_integer():
            raise _fail(path, "an integer", value)
        if not isinstance(value, int | float | str):
            raise _fail(path, "a number", value)
        try:
            return hint(value.strip() if isinstance(value, str) else value)
        except (ValueError, OverflowError):
            raise _fail(path, "a number", value) from None
    if hint is str:
        if isinstance(value, dict | list):
            raise _fail(path, "a string", value)
        return value if isinstance(value, str) else _write(value, False)
    raise TypeError(f"{path}: unsupported body type {hint!r}")


_DATACLASS = object()  # the shape of a dataclass hint
# hint -> (list, item) | (dict, key, value) | (_DATACLASS,) | (IntEnum, members by name) | (None,)
_SHAPES: dict[Any, tuple[Any, ...]] = {}


def _shape(hint: Any) -> tuple[Any, ...]:
    """What :func:`_convert` needs to know about ``hint``, worked out once per hint."""
    origin = typing.get_origin(hint)
    if origin is list or origin is dict:
        return (origin, *typing.get_args(hint))
    if dataclasses.is_dataclass(hint):
        return (_DATACLASS,)
    if isinstance(hint, type) and issubclass(hint, IntEnum):
        return (IntEnum, dict(hint.__members__))
    return (None,)


def _convert_key(hint: Any, key: str, path: str) -> Any:
    if hint is str and type(key) is str:
        return key
    if dataclasses.is_dataclass(hint):
        return _convert(hint, load_json(key, f"{path} key"), f"{path} key")
    return _convert(hint, key, f"{path} key")


_SCALARS = (str, int, bool)
# per dataclass: (field name, type hint, the plain scalar type when the hint is one, or ``X | None``)
_FIELD_PLANS: dict[type, list[tuple[str, Any, type | None]]] = {}


def _field_plan(cls: type) -> list[tuple[str, Any, type | None]]:
    plan = _FIELD_PLANS.get(cls)
    if plan is None:
        hints = _hints(cls)
        plan = []
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
            plain = [a for a in args if a is not type(None)]
            scalar = plain[0] if len(plain) == 1 and plain[0] in _SCALARS else None
            plan.append((f.name, hint, scalar))
        _FIELD_PLANS[cls] = plan
    return plan


def _from_obj(cls: type, obj: dict[str, Any], path: str) -> Any:
    kwargs = {}
    for name, hint, scalar in _field_plan(cls):
        value = obj.get(name)
        if value is None:
            continue
        # a value already of its field's scalar type needs no conversion (most of them)
        kwargs[name] = value if type(value) is scalar else _convert(hint, value, f"{path}.{name}")
    return cls(**kwargs)


class JsonBody:
    """Mixin for body dataclasses: ``to_json`` / ``from_json`` through the generic codec."""

    __slots__ = ()

    def to_json(self, *, standard: bool = False) -> bytes:
        return _write(self, standard).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        return cls.from_obj(load_json(data, cls.__name__))

    @classmethod
    def from_obj(cls, obj: Any) -> Self:
        """Build from already-parsed JSON (e.g. one element of a larger document)."""
        if not isinstance(obj, dict):
            raise _fail(cls.__name__, "an object", obj)
        result: Self = _from_obj(cls, obj, cls.__name__)
        return result


# ---------------------------------------------------------------------------------------------
# shared pieces


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue(JsonBody):
    """Hashable (it keys offset tables); sorts by topic, brokerName, queueId like the tools."""

    topic: str = ""
    brokerName: str = ""
    queueId: int = 0


@dataclass(slots=True)
class DataVersion(JsonBody):
    counter: int = 0
    stateVersion: int = 0
    timestamp: int = field(default_factory=_now_ms)


@dataclass(slots=True)
class TopicConfig(JsonBody):
    topicName: str | None = None
    readQueueNums: int = 16
    writeQueueNums: int = 16
    perm: int = 6  # read | write
    topicFilterType: TopicFilterType = TopicFilterType.SINGLE_TAG
    topicSysFlag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)

    def encode_text(self) -> str:
        """The space-separated form used inside the compressed RegisterBrokerBody."""
        attrs = _write(self.attributes, False)
        return (
            f"{self.topicName} {self.readQueueNums} {self.writeQueueNums} {self.perm} "
            f"{self.topicFilterType.name} {attrs}"
        )

    @classmethod
    def decode_text(cls, text: str) -> TopicConfig:
        parts = text.split(" ")
        if len(parts) < 5:
            raise BodyError(f"topic config text needs 5 fields: {text!r:.80}")
        config = cls(
            topicName=parts[0],
            readQueueNums=_convert(int, parts[1], "readQueueNums"),
            writeQueueNums=_convert(int, parts[2], "writeQueueNums"),
            perm=_convert(int, parts[3], "perm"),
            topicFilterType=_convert(TopicFilterType, parts[4], "topicFilterType"),
        )
        # Java ignores attributes it cannot parse (values may contain the separator).
        if len(parts) > 5:
            with contextlib.suppress(BodyError):
                config.attributes = _convert(dict[str, str], load_json(parts[5]), "attributes")
        return config


@dataclass(slots=True)
class CreateTopicListRequestBody(JsonBody):
    """UPDATE_AND_CREATE_TOPIC_LIST (18). Attribute keys carry their ``+``/``-`` sign here, as in
    UPDATE_AND_CREATE_TOPIC's ``attributes`` text."""

    topicConfigList: list[TopicConfig] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# routes and cluster


@dataclass(slots=True)
class QueueData(JsonBody):
    brokerName: str | None = None
    readQueueNums: int = 0
    writeQueueNums: int = 0
    perm: int = 0
    topicSysFlag: int = 0


@dataclass(slots=True)
class BrokerData(JsonBody):
    cluster: str | None = None
    brokerName: str | None = None
    brokerAddrs: dict[int, str] = field(default_factory=dict)  # brokerId (0 = master) -> "ip:port"
    zoneName: str | None = None
    enableActingMaster: bool = False


@dataclass(slots=True)
class TopicRouteData(JsonBody):
    queueDatas: list[QueueData] = field(default_factory=list)
    brokerDatas: list[BrokerData] = field(default_factory=list)
    filterServerTable: dict[str, list[str]] = field(default_factory=dict)
    orderTopicConf: str | None = None
    topicQueueMappingByBroker: dict[str, Any] | None = None  # static topics only


def encode_route(
    broker_datas: list[bytes],
    queue_datas: list[bytes],
    filter_servers: dict[str, list[str]],
    *,
    standard: bool,
) -> bytes:
    """``TopicRouteData(queue_datas, broker_datas, filter_servers).to_json(standard=standard)`` from
    its brokers and queues encoded one by one (the NameServer keeps those: a route of a hundred
    brokers is then a join). Fields in the writer's order; the ones left None are not written."""
    return b"".join(
        (
            b'{"brokerDatas":[',
            b",".join(broker_datas),
            b'],"filterServerTable":',
            _write(filter_servers, standard).encode("utf-8"),
            b',"queueDatas":[',
            b",".join(queue_datas),
            b"]}",
        )
    )


def route_wants_standard_json(version: int, accept_standard_json_only: bool | None) -> bool:
    """The NameServer's rule: standard JSON for clients from V4_9_4 on or when they ask for it."""
    return version >= V4_9_4 or bool(accept_standard_json_only)


@dataclass(slots=True)
class ClusterInfo(JsonBody):
    brokerAddrTable: dict[str, BrokerData] = field(default_factory=dict)
    clusterAddrTable: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class TopicList(JsonBody):
    topicList: list[str] = field(default_factory=list)
    brokerAddr: str | None = None


@dataclass(slots=True)
class GroupList(JsonBody):
    groupList: list[str] = field(default_factory=list)


@dataclass(slots=True)
class KVTable(JsonBody):
    table: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# broker registration


@dataclass(slots=True)
class TopicConfigSerializeWrapper(JsonBody):
    """topics.json and the topic part of a registration."""

    topicConfigTable: dict[str, TopicConfig] = field(default_factory=dict)
    dataVersion: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True)
class TopicConfigAndMappingSerializeWrapper(TopicConfigSerializeWrapper):
    topicQueueMappingInfoMap: dict[str, Any] = field(default_factory=dict)
    topicQueueMappingDetailMap: dict[str, Any] = field(default_factory=dict)
    mappingDataVersion: DataVersion = field(default_factory=DataVersion)


_MAX_INFLATED = 256 * 1024 * 1024  # refuse compression bombs in REGISTER_BROKER bodies
_I32 = struct.Struct(">i")


class _Reader:
    """Length-prefixed sections of the inflated compressed registration body."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def int32(self, what: str) -> int:
        if self._pos + 4 > len(self._data):
            raise BodyError(f"compressed RegisterBrokerBody ends before {what}")
        value: int = _I32.unpack_from(self._data, self._pos)[0]
        self._pos += 4
        if value < 0:
            raise BodyError(f"compressed RegisterBrokerBody has a negative {what}: {value}")
        return value

    def chunk(self, what: str) -> bytes:
        length = self.int32(f"{what} length")
        if self._pos + length > len(self._data):
            raise BodyError(f"compressed RegisterBrokerBody {what} is truncated")
        self._pos += length
        return self._data[self._pos - length : self._pos]


@dataclass(slots=True)
class RegisterBrokerBody(JsonBody):
    topicConfigSerializeWrapper: TopicConfigAndMappingSerializeWrapper = field(
        default_factory=TopicConfigAndMappingSerializeWrapper
    )
    filterServerList: list[str] = field(default_factory=list)

    def encode(self, compressed: bool = False) -> bytes:
        """JSON, or the deprecated zlib form (header ``compressed=true``) in the V5 layout."""
        if not compressed:
            return self.to_json()
        wrapper = self.topicConfigSerializeWrapper
        sections = [wrapper.dataVersion.to_json(), _I32.pack(len(wrapper.topicConfigTable))]
        sections += [c.encode_text().encode("utf-8") for c in wrapper.topicConfigTable.values()]
        sections.append(_write(self.filterServerList, False).encode("utf-8"))
        mappings = [_write(m, False).encode("utf-8") for m in wrapper.topicQueueMappingInfoMap.values()]
        raw = bytearray()
        for n, section in enumerate(sections):
            # The topic count (section 1) is a bare int; everything else is length-prefixed.
            raw += section if n == 1 else _I32.pack(len(section)) + section
        raw += _I32.pack(len(mappings))
        for m in mappings:
            raw += _I32.pack(len(m)) + m
        return zlib.compress(bytes(raw), 9)

    @classmethod
    def decode(
        cls, data: bytes, compressed: bool = False, broker_version: int = V5_0_0
    ) -> RegisterBrokerBody:
        if not compressed:
            return cls.from_json(data)
        inflater = zlib.decompressobj()
        try:
            raw = inflater.decompress(data, _MAX_INFLATED)
        except zlib.error as exc:
            raise BodyError(f"compressed RegisterBrokerBody does not inflate: {exc}") from None
        if inflater.unconsumed_tail:
            raise BodyError(f"compressed RegisterBrokerBody inflates beyond {_MAX_INFLATED} bytes")
        reader = _Reader(raw)
        wrapper = TopicConfigAndMappingSerializeWrapper(
            dataVersion=DataVersion.from_json(reader.chunk("dataVersion"))
        )
        for _ in range(reader.int32("topic count")):
            config = TopicConfig.decode_text(reader.chunk("topic config").decode("utf-8", "replace"))
            wrapper.topicConfigTable[config.topicName or ""] = config
        filter_servers = _convert(list[str], load_json(reader.chunk("filterServerList")), "filterServerList")
        if broker_version >= V5_0_0:
            for _ in range(reader.int32("mapping count")):
                info = load_json(reader.chunk("topic queue mapping"))
                if not isinstance(info, dict):
                    raise _fail("topicQueueMappingInfo", "an object", info)
                wrapper.topicQueueMappingInfoMap[str(info.get("topic"))] = info
        return cls(topicConfigSerializeWrapper=wrapper, filterServerList=filter_servers)
