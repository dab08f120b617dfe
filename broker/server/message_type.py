"""Topic message types (RocketMQ 5's ``message.type`` topic attribute).

A topic is created with ``attributes "+message.type=FIFO"`` (UPDATE_AND_CREATE_TOPIC); a topic
without the attribute accepts every type (like RocketMQ's UNSPECIFIED/MIXED), except that a topic
created with ``order=true`` counts as FIFO.
The gRPC route answers ``accept_message_types`` from it and POP delivers FIFO topics in order.
"""

from __future__ import annotations

from enum import Enum

from broker.protocol.bodies import TopicConfig

MESSAGE_TYPE_ATTRIBUTE = "message.type"


class TopicMessageType(Enum):
    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    MIXED = "MIXED"


def message_type_problem(attributes: dict[str, str]) -> str | None:
    """Why the ``message.type`` attribute value is not acceptable, or None (for admin validation)."""
    value = attributes.get(MESSAGE_TYPE_ATTRIBUTE)
    if value is None or value.upper() in TopicMessageType.__members__:
        return None
    allowed = ", ".join(TopicMessageType.__members__)
    return f"attribute {MESSAGE_TYPE_ATTRIBUTE}={value!r} is not one of {allowed}"


def topic_message_type(config: TopicConfig | None) -> TopicMessageType:
    """The topic's type; UNSPECIFIED (a topic from before message types: any message goes) when the
    attribute is missing, FIFO for a topic created with ``order=true``."""
    if config is None:
        return TopicMessageType.UNSPECIFIED
    value = (config.attributes or {}).get(MESSAGE_TYPE_ATTRIBUTE, "").upper()
    if value in TopicMessageType.__members__ and value != "UNSPECIFIED":
        return TopicMessageType[value]
    return TopicMessageType.FIFO if config.order else TopicMessageType.UNSPECIFIED
