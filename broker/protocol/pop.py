"""POP consumption on the wire: the remoting headers of POP_MESSAGE (200050), ACK_MESSAGE (200051) and
CHANGE_MESSAGE_INVISIBLETIME (200053), and the receipt every popped message carries.

The receipt is RocketMQ's POP "extra info", ``startOffset popTime invisibleTime reviveQid topicType
brokerName queueId queueOffset``: the POP_CK property of a message popped over remoting, and the
receipt handle of one received over gRPC. The broker and the SDK both read and write it here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar

from broker.protocol import properties as message_properties
from broker.protocol.headers import CommandHeader, RpcRequestHeader
from broker.protocol.names import RETRY_PREFIX

MAX_POP_NUMS = 32  # messages per POP_MESSAGE
MAX_INVISIBLE_MS = 12 * 3600 * 1000


@dataclass(kw_only=True, slots=True)
class PopMessageRequestHeader(RpcRequestHeader):
    consumerGroup: str
    topic: str
    queueId: int  # -1: any readable queue of the topic on this broker
    maxMsgNums: int
    invisibleTime: int
    pollTime: int  # long polling, ms
    bornTime: int
    initMode: int  # where a group new to a queue starts: 0 its first message, 1 its end
    expType: str | None = None
    exp: str | None = None
    order: bool | None = False
    attemptId: str | None = None


@dataclass(kw_only=True, slots=True)
class PopMessageResponseHeader(CommandHeader):
    popTime: int
    invisibleTime: int
    reviveQid: int
    restNum: int
    startOffsetInfo: str | None = None
    msgOffsetInfo: str | None = None
    orderCountInfo: str | None = None


@dataclass(kw_only=True, slots=True)
class AckMessageRequestHeader(RpcRequestHeader):
    consumerGroup: str
    topic: str
    queueId: int
    extraInfo: str
    offset: int


@dataclass(kw_only=True, slots=True)
class ChangeInvisibleTimeRequestHeader(RpcRequestHeader):
    consumerGroup: str
    topic: str
    queueId: int
    extraInfo: str
    offset: int
    invisibleTime: int


@dataclass(kw_only=True, slots=True)
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    popTime: int
    invisibleTime: int
    reviveQid: int


class Receipt(NamedTuple):
    """One delivery of a popped message. ``pop_time`` is the delivery's generation: a redelivery or
    a changed invisible time gives the message a new one, and a receipt with an older one is expired.
    A tuple: a consumer builds and reads one per message (a frozen dataclass costs three times as
    much to build)."""

    start_offset: int
    pop_time: int
    invisible_ms: int
    revive_qid: int
    topic_type: str  # "0" normal topic, "1" retry topic (RocketMQ's flag; always "0" here)
    broker_name: str
    queue_id: int
    offset: int

    def encode(self) -> str:
        return (
            f"{self.start_offset} {self.pop_time} {self.invisible_ms} {self.revive_qid} {self.topic_type} "
            f"{self.broker_name} {self.queue_id} {self.offset}"
        )

    def ack_header(self, group: str, topic: str) -> AckMessageRequestHeader:
        """The ACK_MESSAGE header that acks this delivery as ``group``."""
        return AckMessageRequestHeader(
            consumerGroup=group, topic=topic, queueId=self.queue_id, extraInfo=self.encode(),
            offset=self.offset, bname=self.broker_name,
        )  # fmt: skip

    def renewed(self, pop_time: int, invisible_ms: int) -> Receipt:
        """The receipt after the invisible time was changed to ``invisible_ms`` at ``pop_time``."""
        return self._replace(pop_time=pop_time, invisible_ms=invisible_ms)

    @classmethod
    def decode(cls, text: str, offset: int | None = None) -> Receipt:
        """Raises ValueError naming the problem. ``offset`` fills in a 7-field (older) extra info."""
        parts = (text or "").split(" ")
        if len(parts) == 7 and offset is not None:
            parts.append(str(offset))
        if len(parts) < 8:
            raise ValueError(f"receipt handle {text!r:.80} does not have 8 space-separated fields")
        try:
            return cls(
                int(parts[0]), int(parts[1]), int(parts[2]), int(parts[3]), parts[4], parts[5],
                int(parts[6]), int(parts[7]),
            )  # fmt: skip
        except ValueError:
            raise ValueError(f"receipt handle {text!r:.80} has a field that is not a number") from None


def start_offsets(info: str | None) -> dict[str, int]:
    """A POP answer's startOffsetInfo (``retryFlag queueId startOffset`` entries joined by ``;``) by
    ``retryFlag@queueId``: with the answer's popTime, invisibleTime and reviveQid, what a client needs
    to build the receipts of a broker that does not put them into the messages (Apache RocketMQ's)."""
    out: dict[str, int] = {}
    for entry in (info or "").split(";"):
        parts = entry.split(" ")
        if len(parts) == 3 and parts[2].lstrip("-").isdigit():
            out[f"{parts[0]}@{parts[1]}"] = int(parts[2])
    return out


class PoppedMessage(Protocol):
    """What the receipt helpers read of a popped message (a client's message or a decoded record)."""

    @property
    def topic(self) -> str: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def properties(self) -> dict[str, str]: ...
    @property
    def tags(self) -> str | None: ...


M = TypeVar("M", bound=PoppedMessage)


def add_receipts(messages: list[M], answer: PopMessageResponseHeader, broker_name: str) -> None:
    """Gives each message without a POP_CK receipt (an Apache RocketMQ broker sends none for normal
    topics) the one the answer's header implies, as Java's client builds it."""
    starts: dict[str, int] | None = None
    for msg in messages:
        if message_properties.POP_CK in msg.properties:
            continue
        if starts is None:
            starts = start_offsets(answer.startOffsetInfo)
        retry = "1" if msg.topic.startswith(RETRY_PREFIX) else "0"
        start = starts.get(f"{retry}@{msg.queue_id}", msg.queue_offset)
        receipt = Receipt(
            start, answer.popTime, answer.invisibleTime, answer.reviveQid, retry,
            broker_name, msg.queue_id, msg.queue_offset,
        )  # fmt: skip
        msg.properties[message_properties.POP_CK] = receipt.encode()


def tag_strays(messages: list[M], tags: set[str]) -> tuple[list[M], list[M]]:
    """``messages`` split into those whose tag is one of ``tags`` (all, when ``tags`` is empty) and
    the strays: the broker filters by tag hash, so a tag whose hash collides gets through. A stray
    is acked, as Java's client does, not left to come back."""
    if not tags:
        return messages, []
    kept: list[M] = []
    strays: list[M] = []
    for msg in messages:
        (kept if msg.tags in tags else strays).append(msg)
    return kept, strays
