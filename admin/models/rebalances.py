"""A consumer group's rebalance history, as ``rmq group rebalances`` and the Groups screen show it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FlappingQueue", "GroupRebalances", "QueueHolding", "QueueMove"]


@dataclass(frozen=True, slots=True)
class QueueHolding:
    topic: str
    broker_name: str
    queue_id: int
    client_id: str
    since_timestamp: int  # when this client took the queue
    online: bool  # the client is connected to the broker now


@dataclass(frozen=True, slots=True)
class QueueMove:
    timestamp: int
    topic: str
    broker_name: str
    queue_id: int
    from_client: str
    to_client: str


@dataclass(frozen=True, slots=True)
class FlappingQueue:
    topic: str
    broker_name: str
    queue_id: int
    moves: int  # within the window


@dataclass(frozen=True, slots=True)
class GroupRebalances:
    group: str
    holders: list[QueueHolding]  # by topic, broker, queue
    moves: list[QueueMove]  # oldest first
    flapping: list[FlappingQueue]  # queues that moved more than flap_moves times within flap_window_ms
    flap_moves: int
    flap_window_ms: int
    brokers_without_history: list[str]  # brokers that keep none (not rmqkit)
