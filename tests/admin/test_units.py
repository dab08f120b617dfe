"""Figures for people: durations, byte counts and the broker's runtime values."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admin.resent_marks import OffsetRanges
from admin.timeparse import parse_duration
from admin.units import duration, runtime_value, size


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0s"), (42_500, "42s"), (245_000, "4m 05s"), (7_380_000, "2h 03m"), (273_600_000, "3d 04h")],
)
def test_duration(ms: int, text: str) -> None:
    assert duration(ms) == text


@pytest.mark.parametrize(
    ("count", "text"), [(512, "512 B"), (1536, "1.5 KiB"), (20 * 2**30, "20.0 GiB"), (3 * 2**40, "3.0 TiB")]
)
def test_size(count: int, text: str) -> None:
    assert size(count) == text


def test_runtime_values_in_units() -> None:
    now_ms = int(time.time() * 1000)
    assert runtime_value("earliestMessageTimeStamp", str(now_ms)) == time.strftime(
        "%Y-%m-%d %H:%M:%S", time.localtime(now_ms / 1000)
    )
    assert runtime_value("commitLogMaxOffset", str(3 * 2**20)) == "3.0 MiB"
    assert runtime_value("dispatchBehindBytes", "0") == "0 B"
    assert runtime_value("commitLogDiskRatio", "0.42") == "42.0%"
    assert runtime_value("putTps", "12.5 11.0 10.2") == "12.5 11.0 10.2"


def test_durations_typed() -> None:
    assert [parse_duration(t) for t in ("90s", "5m", "2h", "1d", "500ms", "30")] == [
        90_000, 300_000, 7_200_000, 86_400_000, 500, 30_000,
    ]  # fmt: skip


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)  # a loaded machine draws slowly
@given(st.sets(st.integers(0, 2_000), max_size=60), st.integers(0, 2_000))
def test_offset_ranges_hold_exactly_what_was_added(offsets: set[int], probe: int) -> None:
    ranges = OffsetRanges().union(offsets)
    again = OffsetRanges.parse(ranges.format())
    assert again == ranges
    assert (probe in again) == (probe in offsets)
