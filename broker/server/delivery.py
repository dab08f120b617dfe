"""Re-putting parked messages (delay levels, timer) to their real topic: shared by both services.

The CommitLog is the journal of what was delivered: a re-put is an ordinary record of the real
topic that keeps the parked message's UNIQ_KEY, born time, reconsume count and body. After a crash
the services persisted their progress up to ``flushDelayOffsetInterval`` ago, so before re-putting
a message that was already due before the crash they look for that record through the IndexFile
(:func:`find_reput`) and skip the message when it is there: delivery stays exactly-once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from broker.protocol import properties as P
from broker.protocol.javahash import tags_code
from broker.protocol.message import MessageRecord, pack_host
from broker.server.long_polling import PullHoldService
from broker.server.stats import BrokerStats
from broker.server.store_access import StoreAccess
from broker.store.config_files import ConfigFile
from broker.store.message_store import MessageStore, PutMessage, PutResult, PutStatus, RecoveryReport

log = logging.getLogger(__name__)

# A failed put of these is the message's fault: retrying cannot help, so it is skipped.
PERMANENT_FAILURES = (PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED)
RETRY_AFTER_FAILURE_S = 10.0  # RocketMQ's DELAY_FOR_A_PERIOD
IDLE_POLL_S = 0.1  # RocketMQ's DELAY_FOR_A_WHILE
CLOCK_SLACK_MS = 1000
_INDEX_SCAN = 64


class ProgressFile:
    """A service's progress file: saves from any thread, never replacing a newer snapshot with an
    older one (a periodic save cancelled at shutdown may still be running beside the final one)."""

    def __init__(self, path: Path) -> None:
        self.file = ConfigFile(path)
        self._lock = threading.Lock()
        self._saved = 0

    def load(self) -> Any:
        return self.file.load()

    def save(self, version: int, text: str) -> None:
        with self._lock:
            if version > self._saved:
                self.file.save(text)
                self._saved = version


@dataclass(slots=True)
class Due:
    """One parked unit whose time has come: where it is parked (its queue offset, or its TimerLog
    position) and the re-put (None = skip it)."""

    queue_offset: int
    msg: PutMessage | None


def reput(rec: MessageRecord, topic: str, queue_id: int, props: dict[str, str]) -> PutMessage:
    """The parked record as a new message of ``topic``: born data and sysflag kept, stored now."""
    return PutMessage(
        topic=topic,
        queue_id=queue_id,
        body=rec.body,
        properties=props,
        flag=rec.flag,
        sys_flag=rec.sys_flag,
        born_timestamp=rec.born_timestamp,
        born_host=pack_host(rec.born_host),
        reconsume_times=rec.reconsume_times,
    )


def real_target(rec: MessageRecord) -> tuple[str, int] | None:
    """REAL_TOPIC / REAL_QID of a parked record, or None when they are missing or garbled."""
    topic = rec.properties.get(P.REAL_TOPIC)
    try:
        queue_id = int(rec.properties.get(P.REAL_QID, ""))
    except ValueError:
        return None
    return (topic, queue_id) if topic else None


def find_reput(store: MessageStore, rec: MessageRecord, msg: PutMessage, claimed: set[int]) -> bool:
    """Whether ``msg`` (the re-put of ``rec``) is already in the CommitLog; marks the match claimed.

    Matching on more than UNIQ_KEY and claiming each match once keeps two parked copies of one
    message (a producer's retried send) apart. Runs on a reader thread.
    """
    key = rec.uniq_key
    if not key or store.index is None:
        return False
    for found in store.query_by_key(msg.topic, key, _INDEX_SCAN, 0, 2**63 - 1, unique=True):
        phys = found.physical_offset
        if (
            phys > rec.physical_offset
            and phys not in claimed
            and found.queue_id == msg.queue_id
            and found.born_timestamp == rec.born_timestamp
            and found.reconsume_times == rec.reconsume_times
            and found.body_crc == rec.body_crc
        ):
            claimed.add(phys)
            return True
    return False


class DeliveryParts(StoreAccess, Protocol):
    """The parts of the broker a delivery of parked messages uses."""

    @property
    def store(self) -> MessageStore: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def holds(self) -> PullHoldService: ...

    @property
    def recovery(self) -> RecoveryReport | None: ...


def recovery_horizon(broker: DeliveryParts) -> int:
    """After a crash: the newest store time in the CommitLog. Units due later cannot have been
    re-put before the crash, so only units due by then need :func:`find_reput`. 0 after a clean stop."""
    report = broker.recovery
    if report is None or report.clean_shutdown:
        return 0
    newest = broker.store.dispatcher.last_store_timestamp or int(time.time() * 1000)
    return newest + CLOCK_SLACK_MS


def append_each(store: MessageStore, msgs: Sequence[PutMessage]) -> list[PutResult]:
    """Append each message as a batch of its own, all in one store write (writer thread); the results
    up to the first failure worth retrying later (the store refuses such a write as a whole)."""
    results = store.append_all([[msg] for msg in msgs])
    for i, result in enumerate(results):
        if not result.ok and result.status not in PERMANENT_FAILURES:
            return results[: i + 1]
    return results


async def deliver(broker: DeliveryParts, due: Sequence[Due]) -> int:
    """Re-put ``due`` in order; the number of units done (delivered or skipped) before a failure
    worth retrying. Held pulls of the real queues are woken as after a send."""
    msgs = [d.msg for d in due if d.msg is not None]
    results = await broker.write(append_each, broker.store, msgs) if msgs else []
    done = 0
    it = iter(results)
    for item in due:
        if item.msg is None:
            done += 1
            continue
        result = next(it, None)
        if result is None:
            break
        msg = item.msg
        if result.ok:
            broker.stats.record_put(msg.topic, 1, result.sizes[0])
            codes = {tags_code(msg.properties.get(P.TAGS))}
            broker.holds.notify(msg.topic, msg.queue_id, result.queue_offsets[0] + 1, codes)
        elif result.status in PERMANENT_FAILURES:
            log.error("dropping parked message for %s: %s", msg.topic, result.remark)
        else:
            log.warning("re-put to %s failed (%s); retrying later", msg.topic, result.remark)
            break
        done += 1
    return done
