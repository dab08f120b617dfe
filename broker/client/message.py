"""Messages as the SDK shows them: what a producer sends, what a consumer receives, what a send returns,
and the SDK's typed errors."""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Final

from broker.protocol import properties as message_properties
from broker.protocol.bodies import MessageQueue
from broker.protocol.codes import ResponseCode, name_of
from broker.protocol.message import (
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    MessageRecord,
    ScannedRecord,
    pack_host,
    read_head,
    unpack_host,
)
from broker.protocol.msgid import create_offset_msg_id
from broker.protocol.properties import decode_properties

log = logging.getLogger(__name__)

ZLIB_COMPRESSION_FLAG = 0x300  # compression type bits for ZLIB (0 is read as ZLIB too)
_ZLIB_TYPES = (0, 3)


class MQClientError(Exception):
    """A client-side failure: bad arguments, no route, the broker unreachable after all retries."""


class MQBrokerError(MQClientError):
    """The broker answered with an error code."""

    def __init__(self, code: int, remark: str | None) -> None:
        super().__init__(f"{name_of(code, response=True)} ({code}): {remark or 'no remark'}")
        self.code = code
        self.remark = remark


class Message:
    """A message to send. ``properties`` is the single source of truth for tags, keys and delay."""

    def __init__(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: list[str] | str | None = None,
        properties: dict[str, str] | None = None,
        delay_time_level: int = 0,
        flag: int = 0,
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self.properties: dict[str, str] = dict(properties or {})
        if tags is not None:
            self.tags = tags
        if keys is not None:
            self.keys = [keys] if isinstance(keys, str) else keys
        if delay_time_level:
            self.delay_time_level = delay_time_level

    @property
    def tags(self) -> str | None:
        return self.properties.get(message_properties.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(message_properties.TAGS, value or None)

    @property
    def keys(self) -> list[str]:
        return message_properties.split_keys(self.properties.get(message_properties.KEYS))

    @keys.setter
    def keys(self, value: list[str]) -> None:
        self._set(message_properties.KEYS, message_properties.KEY_SEPARATOR.join(value) or None)

    @property
    def delay_time_level(self) -> int:
        """Delay level 1..18 of the broker's messageDelayLevel table (0: deliver at once)."""
        return int(self.properties.get(message_properties.DELAY, "0"))

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self._set(message_properties.DELAY, str(level) if level else None)

    @property
    def sharding_key(self) -> str | None:
        """The key ordered messages are grouped by (``__SHARDINGKEY``); see ``hash_selector``."""
        return self.properties.get(message_properties.SHARDING_KEY)

    @sharding_key.setter
    def sharding_key(self, value: str | None) -> None:
        self._set(message_properties.SHARDING_KEY, value)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(message_properties.UNIQ_KEY)

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(topic={self.topic!r}, tags={self.tags!r}, body={len(self.body)} bytes)"


# Fields of a pulled message read from its record when one of them is first asked for, and the
# RecordHead field each comes from.
_DEFERRED: Final = {
    "flag": "flag",
    "queue_id": "queue_id",
    "commit_log_offset": "physical_offset",
    "born_timestamp": "born_timestamp",
    "_born_host": "born_host",
    "store_timestamp": "store_timestamp",
    "_store_host": "store_host",
    "reconsume_times": "reconsume_times",
    "prepared_transaction_offset": "prepared_transaction_offset",
    "body_crc": "body_crc",
}


class MessageExt(Message):
    """A stored message as a consumer (or a transaction checker) receives it.

    A pulled message (:meth:`received`) starts with its body, topic, queue offset and sys flag; it
    parses its properties when they are first read, and reads its other fields from the pulled bytes
    when one of them is first asked for, so a consumer pays only for what it looks at.
    """

    broker_name: str
    sys_flag: int
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    born_timestamp: int
    store_timestamp: int
    reconsume_times: int
    prepared_transaction_offset: int
    body_crc: int
    _born_host: bytes  # packed, as in the record
    _store_host: bytes
    _properties: dict[str, str] | None  # None until first read: then parsed from the two below
    _raw: bytes  # a pulled message's response body, holding its record ...
    _record_at: int  # ... from here (until the _DEFERRED fields are read) ...
    _properties_at: int  # ... with its properties from here ...
    _record_end: int  # ... to here
    _properties_extra: dict[str, str] | None  # added on parsing (the pull's MIN_OFFSET/MAX_OFFSET)

    def __init__(self, record: MessageRecord, broker_name: str = "") -> None:
        super().__init__(record.topic, record.body, properties=record.properties, flag=record.flag)
        self._properties_extra = None
        self.broker_name = broker_name
        self.sys_flag = record.sys_flag
        self.queue_id = record.queue_id
        self.queue_offset = record.queue_offset
        self.commit_log_offset = record.physical_offset
        self.born_timestamp = record.born_timestamp
        self._born_host = pack_host(record.born_host)
        self.store_timestamp = record.store_timestamp
        self._store_host = record.store_host_raw
        self.reconsume_times = record.reconsume_times
        self.prepared_transaction_offset = record.prepared_transaction_offset
        self.body_crc = record.body_crc
        if self.sys_flag & COMPRESSED_FLAG:
            self._inflate()

    @classmethod
    def received(
        cls,
        raw: bytes,
        scanned: list[ScannedRecord],
        broker_name: str = "",
        extra_properties: dict[str, str] | None = None,
    ) -> list[MessageExt]:
        """The messages of the records that :func:`scan_records` found in ``raw``; ``extra_properties``
        (shared, not copied) join each message's own properties. One loop for the whole pull: a
        consumer's hot path. Each message keeps ``raw`` to read its other fields from on demand."""
        new = cls.__new__
        messages: list[MessageExt] = []
        append = messages.append
        for at, sys_flag, queue_offset, body, topic, properties_at, end in scanned:
            msg = new(cls)
            msg._raw = raw
            msg._record_at = at
            msg._properties_at = properties_at
            msg._record_end = end
            msg.sys_flag = sys_flag
            msg.queue_offset = queue_offset
            msg.body = body
            msg.topic = topic
            msg._properties = None
            msg._properties_extra = extra_properties
            msg.broker_name = broker_name
            if sys_flag & COMPRESSED_FLAG:
                msg._inflate()
            append(msg)
        return messages

    if not TYPE_CHECKING:  # mypy keeps checking attribute names; at run time this serves _DEFERRED

        def __getattr__(self, name: str) -> object:
            """Called only for attributes not set yet: the deferred fields of a pulled message."""
            fields = self.__dict__
            if name in _DEFERRED and "_record_at" in fields:
                head = read_head(fields["_raw"], fields.pop("_record_at"))
                for attr, field in _DEFERRED.items():
                    fields.setdefault(attr, getattr(head, field))  # keep what was assigned already
                return fields[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property  # an attribute of Message; parsed on first read here
    def properties(self) -> dict[str, str]:
        props = self._properties
        if props is None:
            # like Java's client, bytes that are not UTF-8 read as U+FFFD rather than failing the pull
            text = str(self._raw[self._properties_at : self._record_end], "utf-8", "replace")
            props = self._properties = decode_properties(text)
            if self._properties_extra:
                props.update(self._properties_extra)
        return props

    @properties.setter
    def properties(self, value: dict[str, str]) -> None:
        self._properties = value

    def _inflate(self) -> None:
        kind = (self.sys_flag & COMPRESSION_TYPE_MASK) >> 8
        if kind not in _ZLIB_TYPES:
            log.warning("message %s uses compression type %d, left compressed", self.msg_id, kind)
            return
        self.body = zlib.decompress(self.body)
        self.sys_flag &= ~(COMPRESSED_FLAG | COMPRESSION_TYPE_MASK)

    @property
    def born_host(self) -> str:
        return unpack_host(self._born_host)

    @property
    def store_host(self) -> str:
        return unpack_host(self._store_host)

    @property
    def offset_msg_id(self) -> str:
        """The broker's id of the message: store host and CommitLog offset."""
        return create_offset_msg_id(self._store_host, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """UNIQ_KEY when the producer set one, else the broker's offset id (as Java clients show)."""
        return self.uniq_key or self.offset_msg_id

    @property
    def queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)

    def __repr__(self) -> str:
        return (
            f"MessageExt(topic={self.topic!r}, queue={self.queue_id}, offset={self.queue_offset}, "
            f"msg_id={self.msg_id}, tags={self.tags!r}, reconsume_times={self.reconsume_times})"
        )


class SendStatus(Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


SEND_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(slots=True, frozen=True)
class SendResult:
    """``msg_id`` is the UNIQ_KEY (comma-joined for a batch); ``offset_msg_id`` the broker's id."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    recall_handle: str | None = None  # a message parked for a delay: hand it to Producer.recall
