"""The gRPC attack suite, timed: each attack of ``tests/broker/grpc/attacks.py`` runs against
``rmq up`` while a normal client sends over remoting, looks routes up at the NameServer and asks
the gRPC port for routes on its own connection. Per attack: the normal client's worst p99 of the
three (the target is 1 s), each one's p99, how much the broker's peak memory grew, and what the
broker did to the attacker.
A first row runs the normal client alone, for scale.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from tests.broker.grpc.attacks import (
    ATTACKS,
    Attack,
    MiB,
    Node,
    NormalClient,
    Outcome,
    prepare,
    rmq_up,
    run_attack,
)

Result = dict[str, object]
OPERATIONS = ("remoting_send", "route_lookup", "grpc_query_route")
TARGET_US = 1_000_000


def _fate(outcome: Outcome) -> str:
    if outcome.goaway is not None:
        return f"GOAWAY({outcome.goaway}) after {outcome.sent / MiB:.1f} MiB"
    if outcome.closed:
        return f"closed after {outcome.sent / MiB:.1f} MiB"
    rate = outcome.sent / MiB / max(outcome.seconds, 1e-9)
    return f"served, {outcome.sent / MiB:.1f} MiB taken in ({rate:.1f} MiB/s)"


def _row(name: str, node: Node, baseline: int, attack: Attack | None, seconds: float) -> Result:
    with NormalClient(node) as normal:
        if attack is None:
            time.sleep(seconds)
            fate = "no attack"
        else:
            fate = _fate(run_attack(node, attack, seconds))
        time.sleep(0.2)
    p99 = {op: normal.p99(op) * 1e6 for op in OPERATIONS}
    worst = max(p99.values())
    growth = (node.memory()[1] - baseline) / MiB
    failed = f"; {len(normal.failures)} failed: {normal.failures[0]}" if normal.failures else ""
    return {
        "name": name,
        "value": round(worst),
        "unit": "us",
        "target": TARGET_US,
        "note": f"p99 send {p99['remoting_send'] / 1e3:.0f} ms, lookup {p99['route_lookup'] / 1e3:.0f} ms, "
        f"QueryRoute {p99['grpc_query_route'] / 1e3:.0f} ms; broker peak +{growth:.0f} MiB "
        f"(alive: {node.alive()}); attacker: {fate}{failed}",
    }


def run(quick: bool) -> list[Result]:
    seconds = 1.5 if quick else 5.0
    rows: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench_attacks_") as tmp, rmq_up(Path(tmp) / "store") as node:
        prepare(node)
        with NormalClient(node):
            time.sleep(1.0)  # warm-up
        baseline = node.memory()[0]
        rows.append(_row("attack_none_normal_client_p99", node, baseline, None, seconds))
        for attack in ATTACKS:
            rows.append(_row(f"attack_{attack.name}_normal_client_p99", node, baseline, attack, seconds))
    return rows
