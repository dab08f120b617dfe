"""``rmq bench consume`` against a running node: what its prefill leaves behind."""

from __future__ import annotations

import json
from collections.abc import Callable

from typer.testing import Result

from tests.cli.online.conftest import Cluster

Rmq = Callable[..., Result]


def test_consume_prefill_spreads_over_every_queue(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv)
    bench = rmq("bench", "consume", *ns, "-t", "BenchSpread", "--queues", "4", "--prefill", "512",
                "--size", "64", "--duration", "0.2", "--no-baseline", "-o", "json")  # fmt: skip
    assert bench.exit_code == 0, bench.stderr
    status = json.loads(rmq("topic", "status", "BenchSpread", *ns, "-o", "json").stdout)
    held = {q["queueId"]: q["maxOffset"] - q["minOffset"] for q in status["queues"]}
    assert sorted(held) == [0, 1, 2, 3]
    assert sum(held.values()) >= 512 and min(held.values()) >= 96, held  # 4 x 128, give or take a batch
