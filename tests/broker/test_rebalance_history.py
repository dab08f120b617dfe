"""The broker's rebalance history: moves, the settle rule, flapping, its bounds and its file on their
own; then a running broker fed by pulls over the wire, with its flapping settings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.protocol.bodies import BodyError, MessageModel, TopicConfig
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, SubscriptionData
from broker.protocol.rebalances import FlappingQueue, QueueMove, RebalanceHistoryBody
from broker.remoting.client import RemotingClient
from broker.server.rebalance_history import SETTLE_MS, Limits, RebalanceHistory
from tests.broker.conftest import async_test, call, pull, running_broker


class Clock:
    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def __call__(self) -> float:
        return self.ms / 1000

    def tick(self, ms: int = 2 * SETTLE_MS) -> None:
        self.ms += ms


def _history(tmp_path: Path, clock: Clock, **limits: int) -> RebalanceHistory:
    return RebalanceHistory(tmp_path, Limits(**limits), clock)


def test_a_queue_taken_by_another_client_is_a_move_and_a_first_take_is_not(tmp_path: Path) -> None:
    clock = Clock()
    history = _history(tmp_path, clock)
    for qid in range(4):
        history.pulled("G", "T", qid, "A")
    body = history.history("G", 0, {"A"})
    assert body is not None and not body.moves
    assert [(h.queue_id, h.client_id, h.online) for h in body.holders] == [(q, "A", True) for q in range(4)]
    clock.tick()
    history.pulled("G", "T", 2, "B")
    history.pulled("G", "T", 2, "B")  # still B's: nothing new
    body = history.history("G", 0, {"B"})
    assert body is not None
    assert body.moves == [QueueMove(clock.ms, "T", 2, "A", "B")]
    assert [(h.client_id, h.online) for h in body.holders] == [("A", False)] * 2 + [("B", True), ("A", False)]
    assert history.history("other", 0, set()) is None


def test_since_leaves_out_older_moves(tmp_path: Path) -> None:
    clock = Clock()
    history = _history(tmp_path, clock)
    history.pulled("G", "T", 0, "A")
    clock.tick()
    history.pulled("G", "T", 0, "B")
    clock.tick()
    history.pulled("G", "T", 0, "A")
    body = history.history("G", clock.ms, set())
    assert body is not None and [m.after for m in body.moves] == ["A"]


def test_a_pull_the_old_holder_sent_before_it_heard_of_the_move_is_not_a_move_back(tmp_path: Path) -> None:
    clock = Clock()
    history = _history(tmp_path, clock)
    history.pulled("G", "T", 0, "A")
    clock.tick()
    history.pulled("G", "T", 0, "B")
    clock.tick(SETTLE_MS // 2)
    history.pulled("G", "T", 0, "A")  # in flight when the rebalance happened
    history.pulled("G", "T", 0, "B")
    clock.tick(SETTLE_MS + 1)
    history.pulled("G", "T", 0, "A")  # A really took it back
    body = history.history("G", 0, set())
    assert body is not None and [(m.before, m.after) for m in body.moves] == [("A", "B"), ("B", "A")]


def test_a_queue_that_keeps_moving_is_flagged_as_flapping_until_it_settles(tmp_path: Path) -> None:
    clock = Clock()
    history = _history(tmp_path, clock, flap_moves=3, flap_window_ms=60_000)
    history.pulled("G", "T", 0, "A")
    history.pulled("G", "T", 1, "A")
    clock.tick()
    history.pulled("G", "T", 1, "B")  # one move: a rebalance, not flapping
    for client in ("B", "A", "B"):
        clock.tick()
        history.pulled("G", "T", 0, client)
    body = history.history("G", 0, set())
    assert body is not None and not body.flapping  # three moves: not more than three
    clock.tick()
    history.pulled("G", "T", 0, "A")
    body = history.history("G", 0, set())
    assert body is not None and body.flapping == [FlappingQueue("T", 0, 4)]
    assert (body.flap_moves, body.flap_window_ms) == (3, 60_000)
    clock.tick(60_000)
    body = history.history("G", 0, set())
    assert body is not None and not body.flapping and len(body.moves) == 5


def test_the_bounds_hold_with_many_groups_queues_and_clients(tmp_path: Path) -> None:
    clock = Clock()
    history = _history(tmp_path, clock, per_group=10, max_moves=50, max_queues=100)
    for rnd in range(30):
        clock.tick()
        for g in range(20):
            for qid in range(8):
                history.pulled(f"G{g}", "T", qid, f"client-{(rnd + qid) % 7}")
    bodies = [history.history(f"G{g}", 0, set()) for g in range(20)]
    kept = [b for b in bodies if b is not None]
    assert sum(len(b.holders) for b in kept) == 100  # 160 queues pulled: the first 100 followed
    assert all(len(b.moves) <= 10 for b in kept)
    assert sum(len(b.moves) for b in kept) <= 50
    newest = max(m.at_ms for b in kept for m in b.moves)
    assert newest == clock.ms  # the oldest moves went, not the newest


def test_the_file_keeps_the_history_across_a_restart(tmp_path: Path) -> None:
    clock = Clock()
    history = _history(tmp_path, clock)
    history.pulled("G", "T", 0, "A")
    clock.tick()
    history.pulled("G", "T", 0, "B")
    assert history.dirty
    history.persist()
    assert not history.dirty
    again = _history(tmp_path, clock)
    again.load()
    assert again.history("G", 0, set()) == history.history("G", 0, set())
    clock.tick()
    again.pulled("G", "T", 0, "B")  # the holder came back with the file: no move
    again.pulled("G", "T", 0, "C")
    body = again.history("G", 0, set())
    assert body is not None and [(m.before, m.after) for m in body.moves] == [("A", "B"), ("B", "C")]


@pytest.mark.parametrize(
    "text", ["", "{", '{"format": 99, "groups": {}}', '{"format": 1, "groups": {"G": 3}}']
)
def test_an_unreadable_file_starts_an_empty_history(tmp_path: Path, text: str) -> None:
    (tmp_path / "rebalanceHistory.json").write_text(text)
    history = _history(tmp_path, Clock())
    history.load()
    assert history.history("G", 0, set()) is None


def test_the_body_round_trips_and_refuses_garbage() -> None:
    history = _history(Path("/nonexistent"), Clock())
    history.pulled("G", "T", 0, "A")
    body = history.history("G", 0, {"A"})
    assert body is not None
    assert RebalanceHistoryBody.from_json(body.to_json()) == body
    for raw in (b"", b"[]", b'{"holders": 1}', b"\xff"):
        with pytest.raises(BodyError):
            RebalanceHistoryBody.from_json(raw)


def _heartbeat(client_id: str, group: str, model: MessageModel) -> bytes:
    consumer = ConsumerData(
        groupName=group, messageModel=model, subscriptionDataSet=[SubscriptionData(topic="T", subString="*")]
    )
    return HeartbeatData(clientID=client_id, consumerDataSet=[consumer]).to_json()


@pytest.mark.servers
@async_test
async def test_pulls_of_a_clustering_group_are_recorded_with_the_broker_s_flapping_settings(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path, rebalance_flap_moves=1, rebalance_flap_window_mills=60_000) as (
        broker,
        admin,
    ):
        peers = {name: RemotingClient() for name in ("A", "B", "X", "Y")}
        try:
            broker.topics.put(TopicConfig(topicName="T", readQueueNums=1, writeQueueNums=1))
            for name, peer in peers.items():
                group, model = (
                    ("CG", MessageModel.CLUSTERING) if name in "AB" else ("BG", MessageModel.BROADCASTING)
                )
                answer = await call(peer, broker, RequestCode.HEART_BEAT, body=_heartbeat(name, group, model))
                assert answer.code == ResponseCode.SUCCESS
            # A, then B (the queue moves), then A again once the move settled (it moves back)
            for name, group in [("A", "CG"), ("B", "CG"), ("", ""), ("A", "CG"), ("X", "BG"), ("Y", "BG")]:
                if not name:
                    await asyncio.sleep(SETTLE_MS / 1000 + 0.1)
                    continue
                answer = await pull(peers[name], broker, "T", 0, 0, consumerGroup=group)
                assert answer.code == ResponseCode.PULL_NOT_FOUND, answer.remark
            answer = await call(admin, broker, RequestCode.GET_REBALANCE_HISTORY, consumerGroup="CG")
            body = RebalanceHistoryBody.from_json(answer.body or b"")
            assert [(m.before, m.after) for m in body.moves] == [("A", "B"), ("B", "A")]
            assert body.flapping == [FlappingQueue("T", 0, 2)]
            assert (body.flap_moves, body.flap_window_ms) == (1, 60_000)
            assert [(h.client_id, h.online) for h in body.holders] == [("A", True)]
            answer = await call(admin, broker, RequestCode.GET_REBALANCE_HISTORY, consumerGroup="BG")
            assert (
                answer.code == ResponseCode.SUCCESS
                and not RebalanceHistoryBody.from_json(answer.body or b"").holders
            )
            answer = await call(admin, broker, RequestCode.GET_REBALANCE_HISTORY, consumerGroup="nobody")
            assert answer.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
            answer = await call(admin, broker, RequestCode.GET_REBALANCE_HISTORY, consumerGroup="CG",
                                beginTimestamp="soon")  # fmt: skip
            assert answer.code == ResponseCode.INVALID_PARAMETER
        finally:
            for peer in peers.values():
                await peer.close()
