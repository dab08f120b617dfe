"""IndexFile benchmark: put throughput and key lookup latency in a default-geometry index file.

Full mode fills 5,000,000 entries of a 5,000,000-slot / 20,000,000-entry file (the RocketMQ default,
420 MB sparse) in a temporary folder; quick mode puts 400,000. Keys are generated outside the timed
loops. UNIQ_KEYs have the real shape: a per-producer head and 12 changing hex digits.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from broker.store.index_service import IndexService

TOPIC = "BenchTopic"
UNIQ_HEAD = "7F0000010F4C18B4AAC2"  # IP, pid and classloader hash of one producer
T0 = 1_700_000_000_000
CHUNK = 50_000


def _uniq(n: int) -> str:
    return f"{UNIQ_HEAD}{n:012X}"


def _put_phase(service: IndexService, first: int, count: int, with_key: bool) -> float:
    """Put messages ``first .. first+count-1``; returns the seconds spent inside put_message."""
    put = service.put_message
    spent = 0.0
    for start in range(first, first + count, CHUNK):
        batch = [
            (_uniq(n), f"order-{n}" if with_key else None, n * 256, T0 + n // 100)
            for n in range(start, min(start + CHUNK, first + count))
        ]
        began = time.perf_counter()
        for uniq, keys, phy, ts in batch:
            put(TOPIC, uniq, keys, phy, ts)
        spent += time.perf_counter() - began
    return spent


def _percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def run(quick: bool) -> list[dict[str, object]]:
    uniq_only = 200_000 if quick else 2_500_000  # one entry each
    with_key = 100_000 if quick else 1_250_000  # two entries each
    lookups = 5_000 if quick else 20_000
    with tempfile.TemporaryDirectory(prefix="bench_index_") as tmp:
        service = IndexService(Path(tmp) / "index")
        service.load()
        spent_uniq = _put_phase(service, 0, uniq_only, with_key=False)
        spent_keys = _put_phase(service, uniq_only, with_key, with_key=True)
        entries = service.files()[-1].index_count - 1

        rng = random.Random(42)
        total = uniq_only + with_key
        latencies: list[float] = []
        misses = 0
        for _ in range(lookups):
            n = rng.randrange(total)
            key = f"order-{n}" if n >= uniq_only and rng.random() < 0.5 else _uniq(n)
            began = time.perf_counter()
            found = service.query(TOPIC, key, 64, 0, T0 + total)
            latencies.append((time.perf_counter() - began) * 1e6)
            misses += n * 256 not in found
        service.close()
    if misses:
        raise AssertionError(f"{misses} of {lookups} lookups missed their message")
    latencies.sort()
    geometry = f"{entries:,} entries in a 5,000,000-slot file"
    return [
        {
            "name": "index_put_uniq_key",
            "value": round(uniq_only / spent_uniq),
            "unit": "msg/s",
            "limit": 100_000.0,
            "note": f"messages with a UNIQ_KEY only (1 entry each); limit is a floor; {geometry}",
        },
        {
            "name": "index_put_uniq_and_key",
            "value": round(with_key / spent_keys),
            "unit": "msg/s",
            "limit": 50_000.0,
            "note": f"messages with a UNIQ_KEY and a KEYS value (2 entries); limit is a floor; {geometry}",
        },
        {
            "name": "index_lookup_p50",
            "value": round(_percentile(latencies, 0.50), 1),
            "unit": "us",
            "limit": None,
            "note": f"query() of a random stored key, {lookups:,} lookups; {geometry}",
        },
        {
            "name": "index_lookup_p99",
            "value": round(_percentile(latencies, 0.99), 1),
            "unit": "us",
            "limit": 1000.0,
            "note": f"query() of a random stored key; limit is a ceiling; {geometry}",
        },
    ]


if __name__ == "__main__":
    for result in run(quick="--quick" in sys.argv):
        print(f"{result['name']:<26} {result['value']:>12} {result['unit']:<6} {result['note']}")
