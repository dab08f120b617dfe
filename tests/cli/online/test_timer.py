"""``rmq timer list|cancel`` against a real NameServer + broker: pending timers listed by topic and due
time, cancelled by message id or key without a recall handle, and a cancelled timer never delivered."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from typer.testing import Result

from broker.client.remoting_client import RemotingClient
from broker.protocol.msgid import UniqKeyGenerator
from tests.broker.server.delivery.conftest import pull_all
from tests.cli.online.conftest import TOPIC, Cluster, json_out, send

pytestmark = pytest.mark.servers

Rmq = Callable[..., Result]
QUEUE = 3
SOON_MS = 8_000  # due soon, yet after the commands before its cancel have run on a busy machine


def _park(cluster: Cluster, delays_ms: list[int], key: str) -> list[str]:
    """Send one timer message per delay to queue 3 of Orders; their UNIQ_KEYs."""
    gen = UniqKeyGenerator()
    ids = [gen.next() for _ in delays_ms]

    async def go() -> None:
        client = RemotingClient()
        try:
            for uniq, delay in zip(ids, delays_ms, strict=True):
                await send(client, cluster.broker, TOPIC, b"later", QUEUE, TIMER_DELAY_MS=str(delay),
                           KEYS=f"{key} {uniq}", UNIQ_KEY=uniq)  # fmt: skip
        finally:
            await client.close()

    cluster.call(go())
    return ids


def _delivered(cluster: Cluster, ids: list[str]) -> list[str]:
    async def go() -> list[str]:
        client = RemotingClient()
        try:
            got = await pull_all(client, cluster.broker, TOPIC, QUEUE)
        finally:
            await client.close()
        return [m.uniq_key or "" for m in got if m.uniq_key in ids]

    return cluster.call(go())


def test_list_and_cancel_by_id_and_key(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    sent = time.monotonic()
    ids = _park(cluster, [600_000, 601_000, 602_000, SOON_MS], "batch-a")
    deadline = time.monotonic() + 60
    while True:  # stored, then on the broker's wheel a moment later (longer on a busy machine)
        listed = json_out(rmq("timer", "list", "-t", TOPIC, "--from", "+1m", *ns))
        far = [t for t in listed["timers"] if t["msgId"] in ids]
        if len(far) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [t["msgId"] for t in far] == ids[:3]  # by due time; the one due soon is outside --from
    assert far[0]["keys"] == f"batch-a {ids[0]}" and far[0]["queueId"] == QUEUE and far[0]["topic"] == TOPIC
    assert far[0]["deliverTimestamp"] >= int(time.time() * 1000) + 590_000
    assert json_out(rmq("timer", "list", "-t", TOPIC, "--limit", "1", *ns))["more"] is True

    by_id = json_out(rmq("timer", "cancel", TOPIC, "--id", ids[0], "-y", *ns))
    assert [t["msgId"] for t in by_id["cancelled"]] == [ids[0]]
    by_key = json_out(rmq("timer", "cancel", TOPIC, "--key", ids[1], "-y", *ns))
    assert [t["msgId"] for t in by_key["cancelled"]] == [ids[1]]
    soon = json_out(rmq("timer", "cancel", TOPIC, "--id", ids[3], "-y", *ns))
    assert [t["msgId"] for t in soon["cancelled"]] == [ids[3]]
    left = json_out(rmq("timer", "list", "-t", TOPIC, *ns))
    assert [t["msgId"] for t in left["timers"] if t["msgId"] in ids] == [ids[2]]

    again = rmq("timer", "cancel", TOPIC, "--id", ids[0], "-y", *ns)
    assert again.exit_code == 1 and "already cancelled" in again.stderr
    assert len(again.stderr.splitlines()) == 1
    unknown = rmq("timer", "cancel", TOPIC, "--key", "no-such-key", "-y", *ns)
    assert unknown.exit_code == 1 and "waiting" in unknown.stderr
    both = rmq("timer", "cancel", TOPIC, "--id", ids[2], "--key", "batch-a", "-y", *ns)
    assert both.exit_code == 2
    bad_time = rmq("timer", "list", "--from", "soon", *ns)
    assert bad_time.exit_code == 2 and "not a time" in bad_time.stderr

    time.sleep(max(0.0, sent + SOON_MS / 1000 + 1.5 - time.monotonic()))  # the cancelled soon one never comes
    assert _delivered(cluster, ids) == []
    table = rmq("timer", "list", "-t", TOPIC, "-n", cluster.namesrv)
    assert table.exit_code == 0 and ids[2] in table.stdout
