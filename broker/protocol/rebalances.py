"""The body of GET_REBALANCE_HISTORY (rmqkit's own code): which client holds each queue of a group on
one broker, the moves of queues from one client to another, and the queues that moved so often they
flap. JSON, camelCase."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from broker.protocol.bodies import BodyError


@dataclass(frozen=True, slots=True)
class QueueHolder:
    topic: str
    queue_id: int
    client_id: str
    since_ms: int  # when this client took the queue (first seen pulling it)
    online: bool  # the client is connected to the broker now


@dataclass(frozen=True, slots=True)
class QueueMove:
    at_ms: int
    topic: str
    queue_id: int
    before: str  # the client that held the queue
    after: str  # the client that took it


@dataclass(frozen=True, slots=True)
class FlappingQueue:
    topic: str
    queue_id: int
    moves: int  # within the window


@dataclass(slots=True)
class RebalanceHistoryBody:
    holders: list[QueueHolder]
    moves: list[QueueMove]  # oldest first
    flapping: list[FlappingQueue]
    flap_moves: int  # a queue is flapping once it moved more often than this ...
    flap_window_ms: int  # ... within this long

    def to_json(self) -> bytes:
        data = {
            "holders": [
                {"topic": h.topic, "queueId": h.queue_id, "clientId": h.client_id,
                 "sinceTimestamp": h.since_ms, "online": h.online}
                for h in self.holders
            ],
            "moves": [
                {"timestamp": m.at_ms, "topic": m.topic, "queueId": m.queue_id, "from": m.before,
                 "to": m.after}
                for m in self.moves
            ],
            "flapping": [{"topic": f.topic, "queueId": f.queue_id, "moves": f.moves} for f in self.flapping],
            "flapMoves": self.flap_moves,
            "flapWindowMillis": self.flap_window_ms,
        }  # fmt: skip
        return json.dumps(data).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> RebalanceHistoryBody:
        try:
            data = json.loads(raw)
            return cls(
                [
                    QueueHolder(str(h["topic"]), int(h["queueId"]), str(h["clientId"]),
                                int(h["sinceTimestamp"]), bool(h["online"]))
                    for h in _items(data, "holders")
                ],
                [
                    QueueMove(int(m["timestamp"]), str(m["topic"]), int(m["queueId"]), str(m["from"]),
                              str(m["to"]))
                    for m in _items(data, "moves")
                ],
                [FlappingQueue(str(f["topic"]), int(f["queueId"]), int(f["moves"]))
                 for f in _items(data, "flapping")],
                int(data["flapMoves"]),
                int(data["flapWindowMillis"]),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BodyError(f"a rebalance history cannot be read: {exc!r}") from None


def _items(data: Any, key: str) -> list[Any]:
    items = data[key]
    if not isinstance(items, list):
        raise TypeError(f"{key} is not a list")
    return items
