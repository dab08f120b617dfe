"""The gRPC port of a broker with ACL on under the header attacks: header lists, HPACK references and
Huffman-coded values, some of them in the ``authorization`` header the broker must decode before it
knows who calls. Its memory stays bounded, it never dies, and a normal client that signs its calls is
served throughout (remoting sends, route lookups and gRPC QueryRoute)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acl.conftest import ACL_YAML, ADMIN
from tests.grpc.attacks import HEADER_ATTACKS, Attack, MiB, Node, NormalClient, prepare, rmq_up, run_attack
from tests.grpc.test_attacks import MEMORY_BOUND, SECONDS

pytestmark = pytest.mark.servers


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Node, int]]:
    tmp: Path = tmp_path_factory.mktemp("attacks-acl")
    (tmp / "plain_acl.yml").write_text(ACL_YAML)
    with rmq_up(tmp / "store", "aclEnable=true", f"aclFile={tmp / 'plain_acl.yml'}") as up:
        prepare(up, ADMIN)
        with NormalClient(up, credentials=ADMIN) as warm:
            time.sleep(1.0)
        assert not warm.failures, warm.failures
        yield up, up.memory()[0]


@pytest.mark.parametrize("attack", HEADER_ATTACKS, ids=[a.name for a in HEADER_ATTACKS])
def test_a_broker_with_acl_serves_signed_clients_through_header_attacks(
    node: tuple[Node, int], attack: Attack
) -> None:
    up, baseline = node
    with NormalClient(up, credentials=ADMIN) as normal:
        run_attack(up, attack, SECONDS)
        time.sleep(0.2)
    assert up.alive(), f"the broker died under {attack.name}"
    growth = up.memory()[1] - baseline
    assert growth <= MEMORY_BOUND, f"{attack.name}: the broker's peak grew by {growth / MiB:.0f} MiB"
    assert not normal.failures, normal.failures[:5]
    for name in ("remoting_send", "route_lookup", "grpc_query_route"):
        assert normal.latencies.get(name), f"the normal client's {name} never completed under {attack.name}"
