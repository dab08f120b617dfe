"""The one dispatch step: a stored record -> its ConsumeQueue unit and IndexFile keys.

The append path builds requests from what it just wrote; recovery and a replicating slave
build them by parsing CommitLog bytes. Both go through :class:`Dispatcher`, so the queues
and indexes they produce are identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from broker.protocol import properties as message_properties
from broker.protocol.javahash import tags_code
from broker.protocol.message import (
    TRANSACTION_MASK,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    Buffer,
    RecordLayout,
)

# the parking topics, named here for the store's users too
from broker.protocol.names import SCHEDULE_TOPIC as SCHEDULE_TOPIC
from broker.protocol.names import TIMER_TOPIC as TIMER_TOPIC
from broker.protocol.properties import decode_properties
from broker.store.consume_queue import ConsumeQueue
from broker.store.index_service import IndexService
from broker.store.mapped_file import MapBudget


class DispatchRequest(NamedTuple):
    topic: str
    queue_id: int
    commitlog_offset: int
    size: int
    tags_code: int
    store_timestamp: int
    queue_offset: int
    keys: str | None
    uniq_key: str | None
    sys_flag: int


def in_consume_queue(sys_flag: int) -> bool:
    """Half and rollback records get no ConsumeQueue unit (and queue offset 0)."""
    return sys_flag & TRANSACTION_MASK not in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)


class TagsCodeRule:
    """tagsCode is the tag's Java hash, except in the delay topics where it is the delivery time."""

    def __init__(self, delay_levels_ms: Sequence[int]) -> None:
        self.delay_levels_ms = list(delay_levels_ms)

    def __call__(self, topic: str, props: dict[str, str], store_ts: int) -> int:
        if topic == SCHEDULE_TOPIC:
            try:
                level = int(props.get(message_properties.DELAY, "0"))
            except ValueError:
                level = 0
            if level > 0 and self.delay_levels_ms:
                return store_ts + self.delay_levels_ms[min(level, len(self.delay_levels_ms)) - 1]
            return store_ts
        if topic == TIMER_TOPIC:
            try:
                return int(props.get(message_properties.TIMER_OUT_MS, store_ts))
            except ValueError:
                return store_ts
        return tags_code(props.get(message_properties.TAGS))


def request_from_record(
    buf: Buffer, pos: int, layout: RecordLayout, phys: int, rule: TagsCodeRule
) -> DispatchRequest:
    """Parse what dispatch needs from the record at ``pos`` of ``buf`` (absolute offset ``phys``)."""
    topic = bytes(buf[layout.topic_pos : layout.topic_pos + layout.topic_len]).decode("utf-8", "replace")
    props = decode_properties(
        bytes(buf[layout.props_pos : layout.props_pos + layout.props_len]).decode("utf-8", "replace")
    )
    queue_id = int.from_bytes(buf[pos + 12 : pos + 16], "big", signed=True)
    queue_offset = int.from_bytes(buf[pos + 20 : pos + 28], "big", signed=True)
    return DispatchRequest(
        topic,
        queue_id,
        phys,
        layout.total_size,
        rule(topic, props, layout.store_timestamp),
        layout.store_timestamp,
        queue_offset,
        props.get(message_properties.KEYS),
        props.get(message_properties.UNIQ_KEY),
        layout.sys_flag,
    )


class ConsumeQueueTable:
    """Every ConsumeQueue of the store, created on first use (a queue's files come with its first
    message). The writer adds and removes queues in place; readers on other threads look up by key
    or iterate over a copy taken in one step (``list(...)``), never over the live dicts. The files
    share one :class:`MapBudget`: however many queues, at most ``max_mapped`` files are mapped."""

    def __init__(
        self, root: Path, units_per_file: int, *, read_only: bool = False, max_mapped: int = 16_384
    ) -> None:
        self.root = root
        self.units_per_file = units_per_file
        self.read_only = read_only
        self.budget = MapBudget(max_mapped)
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._by_topic: dict[str, dict[int, ConsumeQueue]] = {}
        # queues written since their last flush (the writer adds one after each put): a flush costs
        # the queues that took messages, not every queue of the store
        self.dirty: set[ConsumeQueue] = set()

    def load(self) -> None:
        if not self.root.is_dir():
            return
        for topic_dir in sorted(self.root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for qdir in sorted(topic_dir.iterdir()):
                if qdir.is_dir() and qdir.name.lstrip("-").isdigit():
                    self._new(topic_dir.name, int(qdir.name)).load()

    def _new(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = ConsumeQueue(
            self.root, topic, queue_id, self.units_per_file, read_only=self.read_only, budget=self.budget
        )
        self.queues[(topic, queue_id)] = cq
        self._by_topic.setdefault(topic, {})[queue_id] = cq
        return cq

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self.queues.get((topic, queue_id))
        return self._new(topic, queue_id) if cq is None else cq

    def of_topic(self, topic: str) -> list[ConsumeQueue]:
        return sorted(list((self._by_topic.get(topic) or {}).values()), key=lambda c: c.queue_id)

    def topics(self) -> list[str]:
        return sorted(list(self._by_topic))

    def remove_topic(self, topic: str) -> None:
        self.remove(self.of_topic(topic))

    def remove(self, doomed: Sequence[ConsumeQueue]) -> None:
        """Delete these queues' files, and their topic folders once empty."""
        for cq in doomed:
            self.queues.pop((cq.topic, cq.queue_id), None)
            self.dirty.discard(cq)
            same_topic = self._by_topic.get(cq.topic)
            if same_topic is not None:
                same_topic.pop(cq.queue_id, None)
                if not same_topic:
                    del self._by_topic[cq.topic]
            cq.destroy()
        for topic in {cq.topic for cq in doomed}:
            topic_dir = self.root / topic
            if topic_dir.is_dir() and not any(topic_dir.iterdir()):
                topic_dir.rmdir()

    def flush(self) -> None:
        for cq in list(self.dirty):
            self.dirty.discard(cq)
            cq.flush()
            if cq.unflushed:  # written meanwhile (the writer puts, then adds: none is missed)
                self.dirty.add(cq)

    def close(self) -> None:
        for cq in list(self.queues.values()):
            cq.close()


class Dispatcher:
    def __init__(self, queues: ConsumeQueueTable, index: IndexService | None) -> None:
        self.queues = queues
        self.index = index
        self.last_store_timestamp = 0

    def dispatch(self, requests: Sequence[DispatchRequest]) -> None:
        if not requests:
            return
        table = self.queues
        queues = table.queues
        dirty = table.dirty
        rollbacks = False
        for req in requests:
            tx = req.sys_flag & TRANSACTION_MASK
            if tx != TRANSACTION_PREPARED_TYPE and tx != TRANSACTION_ROLLBACK_TYPE:  # in_consume_queue
                key = (req.topic, req.queue_id)
                cq = queues.get(key) or table.find_or_create(*key)
                cq.put(req.queue_offset, req.commitlog_offset, req.size, req.tags_code)
                dirty.add(cq)
            elif tx == TRANSACTION_ROLLBACK_TYPE:
                rollbacks = True
        if self.index is not None:
            # a rollback record is not indexed; any other is, after its ConsumeQueue unit
            self.index.put_messages(
                [r for r in requests if r.sys_flag & TRANSACTION_MASK != TRANSACTION_ROLLBACK_TYPE]
                if rollbacks
                else requests
            )
        self.last_store_timestamp = requests[-1].store_timestamp
