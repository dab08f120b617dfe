"""The bodies of LIST_TIMER_MESSAGES and CANCEL_TIMER_MESSAGE: a round trip, and any bytes either read
or refused with BodyError (a broker's garbled answer never crashes the admin tools)."""

from __future__ import annotations

import contextlib
import json

from hypothesis import given
from hypothesis import strategies as st

from broker.protocol.bodies import BodyError
from broker.protocol.timers import PendingTimer, TimerCancelBody, TimerListBody

TIMER = PendingTimer(
    "Orders", 3, "7F0000011E2C18B4AAC2", "k1 k2", "TagA", 1_800_000_001_000, 1_800_000_000_000, 12
)


def test_bodies_round_trip() -> None:
    listed = TimerListBody([TIMER], True, 5)
    assert TimerListBody.from_json(listed.to_json()) == listed
    assert b'"deliverTimestamp": 1800000001000' in listed.to_json()
    assert TimerCancelBody.from_json(TimerCancelBody([TIMER]).to_json()).cancelled == [TIMER]
    assert TimerListBody.from_json(b"") == TimerListBody([], False, 0)


_SCALAR = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
_KEYS = st.sampled_from(["timers", "cancelled", "more", "offsetBehind", "topic", "queueId", "msgId",
                         "deliverTimestamp", "storeTimestamp", "bodySize"])  # fmt: skip
_TIMER = st.dictionaries(_KEYS, _SCALAR, max_size=8)
_BODY = st.dictionaries(_KEYS, _SCALAR | st.lists(_TIMER | _SCALAR, max_size=2), max_size=4)


@given(st.one_of(st.binary(max_size=200), _BODY.map(lambda d: json.dumps(d).encode())))
def test_any_bytes_are_read_or_refused(raw: bytes) -> None:
    for decode in (TimerListBody.from_json, TimerCancelBody.from_json):
        with contextlib.suppress(BodyError):
            decode(raw)
