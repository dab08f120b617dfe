"""Executor-side writing: DataFrame rows to messages, sent with the SDK's producer.

Every row gets a deterministic UNIQ_KEY from (query id, batch id, partition id, row index), so a
retried task sends the same keys again and consumers can de-duplicate. A failed send fails the task
with the broker's message.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from broker.protocol import properties as P

if TYPE_CHECKING:
    from admin.pipelines.secure import SecureOptions

BATCH: Final = 128
COLUMNS: Final = {  # name -> the Spark types it may have
    "body": ("binary", "string"),
    "topic": ("string",),
    "tags": ("string",),
    "keys": ("string",),
    "shardingKey": ("string",),
    "properties": ("map<string,string>",),
}


@dataclass(frozen=True, slots=True)
class WriteSpec:
    namesrv: str
    topic: str | None
    producer_group: str
    rate: float | None  # messages per second per task
    timeout: float
    security: SecureOptions


def parse_write_options(options: Mapping[str, str], columns: Mapping[str, str]) -> WriteSpec:
    """Check the options and the ``columns`` (name -> Spark type) of a write, before any task runs."""
    from admin.pipelines.plan import OptionError
    from admin.pipelines.secure import parse_secure_options

    opts = {k.lower(): v for k, v in options.items()}
    names = set(columns)
    if "body" not in names:
        raise OptionError("the rocketmq sink needs a column named body (binary or string)")
    unknown = names - set(COLUMNS)
    if unknown:
        raise OptionError(f"the rocketmq sink does not know the column(s) {', '.join(sorted(unknown))}")
    for name, kind in columns.items():
        if kind not in COLUMNS[name]:
            raise OptionError(
                f"the rocketmq sink's column {name} must be {' or '.join(COLUMNS[name])}, not {kind}: cast it"
            )
    namesrv = opts.get("nameserver")
    if not namesrv:
        raise OptionError("the rocketmq sink needs the option nameServer")
    topic = opts.get("topic")
    if not topic and "topic" not in names:
        raise OptionError("give the option topic or a topic column")
    rate = float(opts["ratelimit"]) if opts.get("ratelimit") else None
    return WriteSpec(
        namesrv, topic, opts.get("producergroup") or "rmqkit-spark", rate, float(opts.get("timeout") or 10),
        parse_secure_options(opts),
    )  # fmt: skip


def uniq_key(query: str, batch: int, partition: int, row: int) -> str:
    """32 upper-case hex digits, the same for the same row of the same (retried) task."""
    return hashlib.sha1(f"{query}/{batch}/{partition}/{row}".encode()).hexdigest()[:32].upper()


def _message(row: Mapping[str, Any], spec: WriteSpec, key: str) -> Any:
    from broker.client.message import Message

    body = row["body"]
    if body is None:
        raise ValueError("a row has a null body")
    topic = row.get("topic") or spec.topic
    if not topic:
        raise ValueError("a row has no topic (and the option topic is not set)")
    props = dict(row.get("properties") or {})
    msg = Message(topic, body.encode() if isinstance(body, str) else bytes(body), properties=props)
    if row.get("tags"):
        msg.tags = row["tags"]
    if row.get("keys"):
        msg.properties[P.KEYS] = row["keys"]
    if row.get("shardingKey"):
        msg.sharding_key = row["shardingKey"]
    msg.properties[P.UNIQ_KEY] = key
    return msg


def send_rows(rows: Iterable[Any], spec: WriteSpec, query: str, batch_id: int, partition: int) -> int:
    """Send every row; returns how many were sent. The task's rows all become messages first, so a bad
    row (a null body, no topic) fails the task before any of its messages is sent."""
    messages = []
    for index, row in enumerate(rows):
        values = row.asDict() if hasattr(row, "asDict") else dict(row)
        try:
            messages.append(_message(values, spec, uniq_key(query, batch_id, partition, index)))
        except ValueError as exc:
            raise ValueError(
                f"row {index} of task {partition}: {exc}; nothing of this task was sent"
            ) from None
    return asyncio.run(_send(messages, spec))


async def _send(messages: list[Any], spec: WriteSpec) -> int:
    from broker.client.message import MQClientError
    from broker.client.producer import Producer, hash_selector

    security = spec.security.client_security()
    producer = Producer(
        spec.producer_group, spec.namesrv, send_timeout=spec.timeout,
        credentials=security.credentials if security else None,
        ssl_context=security.ssl_context if security else None,
    )  # fmt: skip
    await producer.start()
    sent = 0
    began = time.monotonic()
    pending: list[Any] = []

    async def flush() -> None:
        nonlocal sent
        if not pending:
            return
        try:
            by_topic: dict[str, list[Any]] = {}
            for m in pending:
                by_topic.setdefault(m.topic, []).append(m)
            for msgs in by_topic.values():
                await producer.send_batch(msgs)
        except MQClientError as exc:
            raise RuntimeError(f"sending to RocketMQ failed: {exc}") from exc
        sent += len(pending)
        pending.clear()

    try:
        for msg in messages:
            if msg.sharding_key:
                try:
                    await producer.send(msg, selector=hash_selector)
                except MQClientError as exc:
                    raise RuntimeError(f"sending to RocketMQ failed: {exc}") from exc
                sent += 1
            else:
                pending.append(msg)
                if len(pending) >= BATCH:
                    await flush()
            if spec.rate:
                ahead = (sent + len(pending)) / spec.rate - (time.monotonic() - began)
                if ahead > 0:
                    await flush()
                    await asyncio.sleep(ahead)
        await flush()
    finally:
        await producer.shutdown()
    return sent
