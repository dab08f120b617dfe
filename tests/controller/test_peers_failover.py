"""Failover under third-party clients: the C++ client sends synchronously to a controller-mode group
(`rmq cluster up --controllers 1`, one master and two replicas) while its master is SIGKILLed; it
goes on sending without a restart, and an ali-ons consumer then reads every message the C++ client
saw acknowledged.

The C++ client (0.4.4) finds the new master only at its next route poll (every 30 s): the group
takes writes again within seconds (the SDK failover test measures that), but this producer comes
back later; the test waits for it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from cli import cluster_local
from tests.controller.test_failover import SMALL_STORE, _free_base_port
from tests.peers import install
from tests.peers.runner import run_alions_consumer, start_driver

pytestmark = pytest.mark.servers

TOPIC = "PeerFailover"
BEFORE_KILL = 40
AFTER_RESUME = 20


def _sent_ok(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in events if e.get("event") == "sent" and e.get("status") == "OK"]


def test_cpp_producer_survives_a_killed_master_and_ali_ons_reads_every_acknowledged_message(
    tmp_path: Path,
) -> None:
    install.ensure_cpp_client()
    install.ensure_ali_ons()
    base = _free_base_port()
    members = cluster_local.start(tmp_path, 1, 2, base, True, None, 1, SMALL_STORE)
    namesrv = f"127.0.0.1:{base}"
    try:
        args = [
            namesrv,
            TOPIC,
            "--count",
            "100000",
            "--body",
            "cf",
            "--interval-ms",
            "50",
            "--timeout",
            "120",
        ]
        with start_driver("cpp", "cpp_producer.py", args, timeout=120) as producer:
            producer.wait_for("ready")
            deadline = time.monotonic() + 60
            while len(_sent_ok(producer.events)) < BEFORE_KILL and time.monotonic() < deadline:
                time.sleep(0.05)
            first = next(m for m in members if m.role == "AUTO" and m.broker_id == 0)  # elected at start
            os.kill(first.pid, signal.SIGKILL)
            acked_at_kill = len(_sent_ok(producer.events))
            deadline = time.monotonic() + 90
            while (
                len(_sent_ok(producer.events)) < acked_at_kill + AFTER_RESUME and time.monotonic() < deadline
            ):
                time.sleep(0.1)
            result = producer.stop()
        acked = {str(e["index"]) for e in _sent_ok(result.events)}
        assert len(acked) >= acked_at_kill + AFTER_RESUME, "the C++ producer did not resume"
        consumed = run_alions_consumer(
            namesrv, TOPIC, group="peer-failover-cg", expect=len(acked), timeout=60
        )
        bodies = {m.body.decode().rstrip(".") for m in consumed.received}
        missing = sorted(i for i in acked if f"cf-{i}" not in bodies)
        assert not missing, f"{len(missing)} acknowledged messages not consumed: {missing[:10]}"
    finally:
        cluster_local.stop(tmp_path)
