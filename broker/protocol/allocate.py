"""Queue allocation strategies: which of a topic's queues one consumer of a group takes (in the SDK's
rebalance, and on the broker for clients that let it balance).

Every strategy answers exactly what the RocketMQ Java client answers for the same inputs. Callers pass
``mq_all`` and ``cid_all`` sorted (the rebalancer does), because every consumer must see the same
order to agree on a split.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol

from broker.protocol.bodies import MessageQueue


class AllocateStrategy(Protocol):
    """What a custom strategy implements."""

    name: str

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]: ...


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """Java's argument checks; False when the current consumer is not (yet) in the group list."""
    if not current_cid:
        raise ValueError("current consumer id is empty")
    if not mq_all:
        raise ValueError("no message queue to allocate")
    if not cid_all:
        raise ValueError("no consumer id to allocate to")
    return current_cid in cid_all


class AllocateAveragely:
    """Contiguous blocks: the first ``len(mq) % len(cid)`` consumers get one queue more."""

    name = "AVG"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        index = cid_all.index(current_cid)
        n_mq, n_cid = len(mq_all), len(cid_all)
        mod = n_mq % n_cid
        bigger = mod > 0 and index < mod  # the first ``mod`` consumers take one queue more
        size = 1 if n_mq <= n_cid else n_mq // n_cid + int(bigger)
        start = index * size if bigger else index * size + mod
        count = min(size, n_mq - start)
        return [mq_all[(start + i) % n_mq] for i in range(count)]


class AllocateAveragelyByCircle:
    """Round robin: consumer ``i`` takes queues ``i``, ``i + n``, ``i + 2n`` ..."""

    name = "AVG_BY_CIRCLE"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        index = cid_all.index(current_cid)
        return list(mq_all[index :: len(cid_all)])


def md5_hash(key: str) -> int:
    """The ring position of ConsistentHashRouter's MD5 hash: the first 4 digest bytes, unsigned."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


def java_queue_string(mq: MessageQueue) -> str:
    """Java's ``MessageQueue.toString()``, which is what the consistent hash routes."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.brokerName}, queueId={mq.queueId}]"


class AllocateConsistentHash:
    """Consumers on an MD5 hash ring with ``virtual_nodes`` points each; a queue goes to the next point."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = 10, hash_function: Callable[[str], int] = md5_hash) -> None:
        if virtual_nodes < 0:
            raise ValueError(f"illegal virtual node count: {virtual_nodes}")
        self.virtual_nodes = virtual_nodes
        self.hash = hash_function

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        ring: dict[int, str] = {}
        for cid in cid_all:
            for i in range(self.virtual_nodes):
                ring[self.hash(f"{cid}-{i}")] = cid  # a later node on the same point replaces it
        if not ring:
            return []
        points = sorted(ring)
        result = []
        for mq in mq_all:
            at = bisect.bisect_left(points, self.hash(java_queue_string(mq)))
            if ring[points[at % len(points)]] == current_cid:
                result.append(mq)
        return result


class MachineRoomResolver(Protocol):
    def broker_deploy_in(self, mq: MessageQueue) -> str: ...

    def consumer_deploy_in(self, client_id: str) -> str: ...


class AllocateMachineRoomNearby:
    """Queues go to consumers in their broker's machine room; rooms without consumers are shared by all.

    ``inner`` splits each room's queues; the resolver names the room of a queue and of a consumer.
    """

    def __init__(self, inner: AllocateStrategy, resolver: MachineRoomResolver) -> None:
        self.inner = inner
        self.resolver = resolver
        self.name = f"MACHINE_ROOM_NEARBY-{inner.name}"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        queues_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            queues_by_room.setdefault(self._room(self.resolver.broker_deploy_in(mq), mq), []).append(mq)
        consumers_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            consumers_by_room.setdefault(self._room(self.resolver.consumer_deploy_in(cid), cid), []).append(
                cid
            )
        my_room = self.resolver.consumer_deploy_in(current_cid)
        result: list[MessageQueue] = []
        mine = queues_by_room.pop(my_room, [])
        if mine:
            result += self.inner.allocate(group, current_cid, mine, consumers_by_room[my_room])
        for room in sorted(queues_by_room):
            if room not in consumers_by_room:
                result += self.inner.allocate(group, current_cid, queues_by_room[room], cid_all)
        return result

    @staticmethod
    def _room(room: str, of: object) -> str:
        if not room:
            raise ValueError(f"machine room is empty for {of}")
        return room
