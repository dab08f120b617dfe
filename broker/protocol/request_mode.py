"""Bodies of the broker-side load balancing codes: SET_MESSAGE_REQUEST_MODE (401) stores how a group
reads a topic (PULL, or POP with queues shared among consumers), GET_ALL_MESSAGE_REQUEST_MODE (402)
answers every stored mode, and QUERY_ASSIGNMENT (400) gives a consumer its queues and their mode.

Field names are RocketMQ's, so fastjson peers read and write them unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from broker.protocol.bodies import JsonBody, MessageModel, MessageQueue


class MessageRequestMode(IntEnum):
    PULL = 0
    POP = 1  # consumers may share queues: the broker keeps per-message invisibility


@dataclass(slots=True)
class SetMessageRequestModeRequestBody(JsonBody):
    """One topic@group's mode; also the value type of ``messageRequestMode.json``."""

    topic: str | None = None
    consumerGroup: str | None = None
    mode: MessageRequestMode = MessageRequestMode.PULL
    # POP: each consumer also reads the queues of the N consumers after it in the sorted client list
    popShareQueueNum: int = 0


@dataclass(slots=True)
class MessageRequestModeSerializeWrapper(JsonBody):
    """topic -> group -> mode: the body of GET_ALL_MESSAGE_REQUEST_MODE and the file's content."""

    messageRequestModeMap: dict[str, dict[str, SetMessageRequestModeRequestBody]] = field(
        default_factory=dict
    )


@dataclass(slots=True)
class QueryAssignmentRequestBody(JsonBody):
    topic: str | None = None
    consumerGroup: str | None = None
    clientId: str | None = None
    strategyName: str | None = None
    messageModel: MessageModel | None = None


@dataclass(frozen=True, slots=True)
class MessageQueueAssignment(JsonBody):
    messageQueue: MessageQueue | None = None
    mode: MessageRequestMode = MessageRequestMode.PULL
    attachments: dict[str, str] | None = None


@dataclass(slots=True)
class QueryAssignmentResponseBody(JsonBody):
    """``None`` assignments tell the client to keep what it has (no answer this time)."""

    messageQueueAssignments: list[MessageQueueAssignment] | None = None
