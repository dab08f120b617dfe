"""Dead-letter queues: ``%DLQ%<group>``, one queue, perm 6, created on first use.

A dead letter keeps RETRY_TOPIC and ORIGIN_MESSAGE_ID and is marked with DLQ_ORIGIN_TOPIC (the topic
it was first sent to) and DLQ_ORIGIN_MESSAGE_ID (the id clients know it by), which is what
:func:`broker.client.dlq_ops.resend_dead_letters` and 5.x clients read back.
"""

from __future__ import annotations

from broker.protocol import properties as P
from broker.protocol.bodies import TopicConfig
from broker.protocol.names import dlq_topic
from broker.server.topic_config import PERM_READ, PERM_WRITE, TopicConfigManager

DLQ_QUEUE_NUMS = 1


def ensure_dlq(topics: TopicConfigManager, group: str) -> TopicConfig:
    return topics.ensure(dlq_topic(group), DLQ_QUEUE_NUMS, PERM_READ | PERM_WRITE)


def mark_dead_letter(props: dict[str, str], topic: str, offset_msg_id: str | None = None) -> None:
    """Mark a message bound for a DLQ; ``topic`` is where it was consumed from (maybe %RETRY%)."""
    props.pop(P.DELAY, None)
    props.setdefault(P.DLQ_ORIGIN_TOPIC, props.get(P.RETRY_TOPIC) or topic)
    origin_id = props.get(P.UNIQ_KEY) or props.get(P.ORIGIN_MESSAGE_ID) or offset_msg_id
    if origin_id:
        props.setdefault(P.DLQ_ORIGIN_MESSAGE_ID, origin_id)
