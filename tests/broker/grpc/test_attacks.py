"""The gRPC port under attack (``tests/broker/grpc/attacks.py``): each hostile client runs for a moment
against ``rmq up`` while a normal client sends and looks routes up beside it. The broker never dies, its peak
memory stays within MEMORY_BOUND of what it held before the attacks, the normal client's every send and
lookup completes, and floods of control frames are ended with GOAWAY(ENHANCE_YOUR_CALM). Latencies are
recorded by ``python -m benchmarks attacks``, not asserted here."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from broker.protocol.http2 import ENHANCE_YOUR_CALM, PREFACE
from tests.broker.grpc.attacks import ATTACKS, Attack, MiB, Node, NormalClient, prepare, rmq_up, run_attack

pytestmark = pytest.mark.servers

MEMORY_BOUND = 256 * MiB  # over the broker's resident memory before the attacks, at its peak
SECONDS = 1.5  # each attack's length
IDLE_MS = 3000  # the broker's grpcClientIdleTimeMills here, so that idle connections close in the test


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, int]]:
    """The broker, warmed up by the normal client, and its resident memory then."""
    with rmq_up(tmp_path_factory.mktemp("attacks") / "store", f"grpcClientIdleTimeMills={IDLE_MS}") as up:
        prepare(up)
        with NormalClient(up) as warm:
            time.sleep(1.0)
        assert not warm.failures, warm.failures
        yield up, up.memory()[0]


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_the_broker_serves_others_through_an_attack(node: tuple[Node, int], attack: Attack) -> None:
    up, baseline = node
    with NormalClient(up) as normal:
        outcome = run_attack(up, attack, SECONDS)
        time.sleep(0.2)  # the normal client's calls under way finish
    assert up.alive(), f"the broker died under {attack.name}"
    peak = up.memory()[1]
    growth = peak - baseline
    assert growth <= MEMORY_BOUND, f"{attack.name}: the broker's peak grew by {growth / MiB:.0f} MiB"
    assert not normal.failures, normal.failures[:5]
    for name in ("remoting_send", "route_lookup", "grpc_query_route"):
        assert normal.latencies.get(name), f"the normal client's {name} never completed under {attack.name}"
    if attack.calm_down:
        assert outcome.goaway == ENHANCE_YOUR_CALM and outcome.closed, outcome


OPENINGS = {"preface": PREFACE, "half_frame": PREFACE + b"\0\0\x10\x04", "silent": b""}


@pytest.mark.parametrize("opening", OPENINGS.values(), ids=OPENINGS.keys())
def test_an_idle_connection_is_closed(node: tuple[Node, int], opening: bytes) -> None:
    up, _ = node
    with socket.create_connection(("127.0.0.1", up.grpc_port), timeout=10 * IDLE_MS / 1000) as sock:
        sock.sendall(opening)
        began = time.monotonic()
        while sock.recv(65536):  # the server's SETTINGS, then its GOAWAY, then the end
            pass
        assert time.monotonic() - began >= IDLE_MS / 1000 * 0.9
