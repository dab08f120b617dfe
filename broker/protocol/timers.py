"""The bodies of LIST_TIMER_MESSAGES and CANCEL_TIMER_MESSAGE (rmqkit's own codes): JSON, camelCase."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from broker.protocol.bodies import BodyError


@dataclass(slots=True)
class PendingTimer:
    """One pending timer message."""

    topic: str
    queue_id: int
    msg_id: str  # its UNIQ_KEY
    keys: str
    tags: str
    deliver_ms: int  # the end of its slot: it is delivered at this time or soon after
    store_ms: int
    body_size: int

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "queueId": self.queue_id, "msgId": self.msg_id, "keys": self.keys,
                "tags": self.tags, "deliverTimestamp": self.deliver_ms, "storeTimestamp": self.store_ms,
                "bodySize": self.body_size}  # fmt: skip

    @classmethod
    def from_dict(cls, d: Any) -> PendingTimer:
        try:
            return cls(str(d["topic"]), int(d["queueId"]), str(d["msgId"]), str(d.get("keys", "")),
                       str(d.get("tags", "")), int(d["deliverTimestamp"]), int(d["storeTimestamp"]),
                       int(d["bodySize"]))  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BodyError(f"a pending timer entry cannot be read: {exc!r}") from None


@dataclass(slots=True)
class TimerListBody:
    timers: list[PendingTimer]
    more: bool  # the broker stopped at the limit or at its scan budget
    offset_behind: int  # timer messages stored but not yet in the wheel (not listed)

    def to_json(self) -> bytes:
        data = {
            "timers": [t.to_dict() for t in self.timers],
            "more": self.more,
            "offsetBehind": self.offset_behind,
        }
        return json.dumps(data).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> TimerListBody:
        data = _load(raw)
        try:
            return cls(_timers(data, "timers"), bool(data.get("more")), int(data.get("offsetBehind", 0)))
        except (TypeError, ValueError) as exc:
            raise BodyError(f"a timer list cannot be read: {exc}") from None


@dataclass(slots=True)
class TimerCancelBody:
    cancelled: list[PendingTimer]

    def to_json(self) -> bytes:
        return json.dumps({"cancelled": [t.to_dict() for t in self.cancelled]}).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> TimerCancelBody:
        return cls(_timers(_load(raw), "cancelled"))


def _timers(data: dict[str, Any], key: str) -> list[PendingTimer]:
    items = data.get(key, [])
    if not isinstance(items, list):
        raise BodyError(f"{key} is not a list")
    return [PendingTimer.from_dict(t) for t in items]


def _load(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise BodyError(f"a timer answer is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BodyError("a timer answer is not a JSON object")
    return data
