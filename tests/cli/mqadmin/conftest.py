"""A NameServer + broker with deterministic data for the mqadmin golden tests: topic ``Orders``
(4 queues, 12 messages with keys ``order-N``), group ``orders-cg`` (offsets at 2 per queue, online
through a heartbeat), and an in-process ``mqadmin`` runner."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.online.conftest import GROUP, MESSAGES, TOPIC, Cluster, node_plan, seeded_cluster

__all__ = ["GROUP", "MESSAGES", "TOPIC", "Cluster", "Run"]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def captured(main: Callable[[list[str]], int], *args: object) -> Run:
    """A CLI entry point's ``main`` run in-process on ``args``, its stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return Run(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The data of :func:`seeded_cluster` on a node without HTTP, HA or gRPC listeners."""
    plan = node_plan(tmp_path_factory.mktemp("mqadmin-store"), http=False, ha_listen_port=0, grpc_port=-1)
    with seeded_cluster(plan) as running:
        yield running


@pytest.fixture
def mqadmin(node: Cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Run]:
    """Run ``mqadmin`` in-process against :func:`node`: ``mqadmin("topicRoute", "-t", "Orders")``."""
    from cli.mqadmin import main

    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("NAMESRV_ADDR", node.namesrv)

    def invoke(*args: object) -> Run:
        return captured(main, *args)

    return invoke


@pytest.fixture
def rmq_alias(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., tuple[int, str]]:
    """Run ``rmq <camelCaseCommand> …`` in-process: (exit code, stdout)."""
    from cli.main import main

    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))

    def invoke(*args: str) -> tuple[int, str]:
        run = captured(main, *args)
        return run.code, run.out

    return invoke
