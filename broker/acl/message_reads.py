"""What a read of message data touches, whatever the request names: the real topic of every stored
message it returns (REAL_TOPIC while the message is parked for a delay, a timer or a transaction), and
for message traces also the topics the trace records describe. Sans-IO.

Lookups (VIEW_MESSAGE_BY_ID by CommitLog offset, QUERY_MESSAGE by key) are checked on their answer,
so an offset or a key of another topic gives nothing away. Pulls, POP and gRPC receives read one
topic's queues, whose messages are that topic's; the parking topics alone hold other topics' messages,
so under access control no client may read them (the messages are read through their own topics
once due).
"""

from __future__ import annotations

from broker.protocol.codes import RequestCode as R
from broker.protocol.message import RecordError, decode_records
from broker.protocol.names import PARKING_TOPICS, real_topic
from broker.protocol.trace import TRACE_TOPIC, TraceFormatError, decode

# answered at once with stored records, byte for byte
LOOKUP_CODES = frozenset({R.VIEW_MESSAGE_BY_ID, R.QUERY_MESSAGE})
# read the queues of the topic in this header field
QUEUE_READ_CODES: dict[int, str] = dict.fromkeys(
    (R.PULL_MESSAGE, R.LITE_PULL_MESSAGE, R.POP_MESSAGE, R.PEEK_MESSAGE), "topic"
)


def answer_topics(body: bytes) -> set[str] | None:
    """The topics a lookup's answer reveals (None when its records cannot be read back)."""
    topics: set[str] = set()
    try:
        for rec in decode_records(body):
            topics.add(real_topic(rec.topic, rec.properties))
            if rec.topic == TRACE_TOPIC:
                topics.update(r.topic for r in decode(rec.body.decode("utf-8", "replace")) if r.topic)
    except (RecordError, TraceFormatError, ValueError):
        return None
    return topics


def parked_read(topic: str) -> str | None:
    """Why the queues of ``topic`` may not be read by clients, or None when they may."""
    if topic.strip() in PARKING_TOPICS:
        return (
            f"topic {topic.strip()} holds other topics' messages (delayed, timed or in a transaction); "
            "they are read through their own topics"
        )
    return None
