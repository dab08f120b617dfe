"""The admin service directly: error mapping, a broker that does not answer, batching."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from admin.errors import BadInput, ConnectFailed, NotFound, OperationFailed, Timeout
from admin.models import GroupSpec, ResetKind, ResetTarget, TopicKind
from admin.service import AdminService
from admin.service.base import admin_error
from broker.client.admin_api import RemoteError
from broker.client.remoting_client import RemotingClosedError, RemotingConnectError, RemotingTimeoutError
from broker.protocol.codes import RequestCode, ResponseCode
from tests.cli.online.conftest import GROUP, TOPIC, Cluster

T = TypeVar("T")


def run(cluster: Cluster, fn: Callable[[AdminService], Awaitable[T]]) -> T:
    async def main() -> T:
        async with AdminService([cluster.namesrv], 5) as service:
            return await fn(service)

    return asyncio.run(main())


def test_error_mapping() -> None:
    refused = admin_error(RemotingConnectError("h:1", "connection refused"))
    assert (
        isinstance(refused, ConnectFailed)
        and refused.address == "h:1"
        and refused.reason == "connection refused"
    )
    assert isinstance(admin_error(RemotingClosedError("h:1")), ConnectFailed)
    assert isinstance(admin_error(RemotingTimeoutError("h:1", RequestCode.GET_BROKER_CONFIG, 1)), Timeout)
    missing = admin_error(RemoteError("h:1", 1, ResponseCode.TOPIC_NOT_EXIST, "topic[x] not exist"))
    assert isinstance(missing, NotFound) and "topic[x] not exist" in str(missing)
    failed = admin_error(RemoteError("h:1", 1, ResponseCode.SYSTEM_ERROR, "disk full"))
    assert isinstance(failed, OperationFailed) and str(failed) == "h:1 refused: disk full"
    assert admin_error(ValueError("x")) is None


def test_constructor_checks() -> None:
    with pytest.raises(BadInput):
        AdminService([], 5)
    with pytest.raises(BadInput):
        AdminService(["a:1"], 0)


def test_unreachable_broker_is_marked_not_hidden(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    async def fn(service: AdminService) -> None:
        async def down(addr: str) -> dict[str, str]:
            raise RemotingConnectError(addr, "connection refused")

        monkeypatch.setattr(service.api, "runtime_info", down)
        listing = await service.cluster_list()
        [broker] = listing.brokers
        assert broker.address == cluster.broker and not broker.reachable
        assert broker.error is not None and cluster.broker in broker.error
        status = await service.cluster_status()
        assert status.clusters[0].unreachable == 1

    run(cluster, fn)


def test_views_batch_requests_per_broker(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A view's requests do not grow with the number of topics or queues (no N+1)."""
    calls: list[int] = []

    async def fn(service: AdminService) -> None:
        original = service.api.call

        async def counting(addr: str, code: int, *args: object, **kwargs: object) -> object:
            calls.append(code)
            return await original(addr, code, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(service.api, "call", counting)
        topics = await service.topic_list(kinds=frozenset({TopicKind.NORMAL}))
        assert TOPIC in [t.name for t in topics.topics]
        assert sorted(calls) == sorted(
            [
                RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
                RequestCode.GET_BROKER_CLUSTER_INFO,
                RequestCode.GET_ALL_TOPIC_CONFIG,
            ]
        )
        calls.clear()
        lag = await service.group_lag(GROUP)
        assert lag.queues
        # the time behind reads the oldest unconsumed message: one pull per lagging queue, no more
        pulls = [c for c in calls if c == RequestCode.PULL_MESSAGE]
        assert len(pulls) <= sum(1 for q in lag.queues if q.diff > 0)
        calls[:] = [c for c in calls if c != RequestCode.PULL_MESSAGE]
        assert sorted(calls) == sorted(
            [
                RequestCode.GET_BROKER_CLUSTER_INFO,
                RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                RequestCode.GET_CONSUME_STATS,
            ]
        )
        calls.clear()
        await service.topic_describe(TOPIC)
        assert calls.count(RequestCode.GET_TOPIC_STATS_INFO) == 1

    run(cluster, fn)


def test_dry_run_by_time_matches_the_real_reset(cluster: Cluster) -> None:
    async def fn(service: AdminService) -> None:
        status = await service.topic_status(TOPIC)
        middle = sorted(q.last_updated for q in status.queues)[0]
        target = ResetTarget(ResetKind.TIME, middle)
        dry = await service.group_reset_offset(GROUP, target, TOPIC, dry_run=True)
        await service.group_create(GroupSpec("svc-copy"))
        await service.group_clone_offsets(GROUP, "svc-copy", TOPIC)
        real = await service.group_reset_offset("svc-copy", target, TOPIC)
        assert [q.target for q in dry.queues] == [q.target for q in real.queues]
        assert (await service.group_lag(GROUP, TOPIC)).queues[
            0
        ].consumer_offset == 2  # dry run changed nothing

    run(cluster, fn)


def test_cli_sends_share_one_uniq_key_generator() -> None:
    """Messages sent by one process in the same millisecond still get different UNIQ_KEYs."""
    from admin.service.messages import _uniq_keys

    now = 1_700_000_000_000
    assert _uniq_keys().next(now) != _uniq_keys().next(now)
