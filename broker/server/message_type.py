"""Topic message types (RocketMQ 5's ``message.type`` topic attribute).

A topic is created with ``attributes "+message.type=FIFO"`` (UPDATE_AND_CREATE_TOPIC); a topic
without the attribute accepts every type (like RocketMQ's UNSPECIFIED/MIXED), except that a topic
created with ``order=true`` counts as FIFO.
The gRPC route answers ``accept_message_types`` from it and POP delivers FIFO topics in order.
"""

from __future__ import annotations

from enum import Enum

from broker.protocol import properties as P
from broker.protocol.bodies import TopicConfig

MESSAGE_TYPE_ATTRIBUTE = "message.type"


class TopicMessageType(Enum):
    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    MIXED = "MIXED"


_DELAY_PROPERTIES = (P.DELAY, P.TIMER_DELIVER_MS, P.TIMER_DELAY_SEC, P.TIMER_DELAY_MS)


def sent_message_type(props: dict[str, str]) -> TopicMessageType:
    """The type of a message being sent, from its properties (TopicMessageType.parseFromMessageProperty:
    transactional, then delayed, then FIFO)."""
    if props.get(P.TRAN_MSG) == "true":
        return TopicMessageType.TRANSACTION
    if any(k in props for k in _DELAY_PROPERTIES):
        return TopicMessageType.DELAY
    if P.SHARDING_KEY in props:
        return TopicMessageType.FIFO
    return TopicMessageType.NORMAL


def topic_message_type(config: TopicConfig | None) -> TopicMessageType:
    """The topic's type; UNSPECIFIED (a topic from before message types: any message goes) when the
    attribute is missing, FIFO for a topic created with ``order=true``."""
    if config is None:
        return TopicMessageType.UNSPECIFIED
    value = (config.attributes or {}).get(MESSAGE_TYPE_ATTRIBUTE, "").upper()
    if value in TopicMessageType.__members__ and value != "UNSPECIFIED":
        return TopicMessageType[value]
    return TopicMessageType.FIFO if config.order else TopicMessageType.UNSPECIFIED
