"""Session-wide test settings."""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# A loaded machine (CI on two cores) can stall one draw for seconds: slowness is not what these
# property tests check, so neither a deadline nor the too-slow health check applies.
settings.register_profile("rmqkit", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rmqkit")


@pytest.fixture(autouse=True, scope="session")
def _private_profiles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Keep the user's ~/.config/rmq untouched: `rmq up` in tests writes its `local` profile here,
    and subprocesses inherit the variable."""
    path = tmp_path_factory.mktemp("rmq-config") / "config.toml"
    old = os.environ.get("RMQ_CONFIG")
    os.environ["RMQ_CONFIG"] = str(path)
    yield path
    if old is None:
        os.environ.pop("RMQ_CONFIG", None)
    else:
        os.environ["RMQ_CONFIG"] = old


# What starting a server or a subprocess looks like in a test module or in a fixture (and the module
# that defines it): such tests get the ``servers`` marker, so ``pytest -m "not servers"`` is the quick
# unit subset. ``_no_servers_unmarked`` below fails an unmarked test that starts one anyway.
_STARTS_SERVERS = re.compile(
    r"\brunning(_\w+)?\(|\bstart_\w+\(|_broker\(|\bLiveBroker\b|\b(Node|NameServer|Broker|RemotingServer|GrpcServer|NativeGrpcServer"
    r"|HttpEndpoint|LoopThread|RmqUpProcess)\(|\bsubprocess\b|\bPopen\b|\bcreate_server\(|\bstart_server\("
    r"|\bserve_grpc\(|\bserving\(|\brun_until_signal\(|\.start\(\)|\bserver_process\(|\bbroker_process\b|--embedded"
)
_ROOT_CONFTEST = Path(__file__).resolve()


@functools.cache
def _file_starts_servers(path: str) -> bool:
    if Path(path).resolve() == _ROOT_CONFTEST:
        return False
    try:
        source = Path(path).read_text(encoding="utf-8")
    except OSError:
        return False
    return _STARTS_SERVERS.search(source) is not None


def _fixture_starts_servers(fn: Any) -> bool:
    try:
        module = inspect.getsourcefile(fn)
        if module is None or Path(module).resolve() == _ROOT_CONFTEST:
            return False
        return _STARTS_SERVERS.search(inspect.getsource(fn)) is not None or _file_starts_servers(module)
    except (OSError, TypeError):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test whose module, or a fixture it uses, starts servers or subprocesses."""
    for item in items:
        if item.get_closest_marker("servers") is not None:
            continue
        starts = _file_starts_servers(str(item.path))
        info = getattr(item, "_fixtureinfo", None)
        if not starts and info is not None:
            starts = any(_fixture_starts_servers(d[-1].func) for d in info.name2fixturedefs.values() if d)
        if starts:
            item.add_marker(pytest.mark.servers)


class ServerInUnitTest(AssertionError):
    """An unmarked test started a server or a subprocess."""


@pytest.fixture(autouse=True)
def _no_servers_unmarked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the quick subset quick: a test without the ``servers`` marker may not listen on a socket or
    start a process (mark it ``@pytest.mark.servers``, or let the collection hook above see it)."""
    if request.node.get_closest_marker("servers") is not None:
        return

    def refuse(*args: object, **kwargs: object) -> None:
        raise ServerInUnitTest(f"{request.node.nodeid} starts a server or a process: mark it servers")

    monkeypatch.setattr(socket.socket, "listen", refuse)
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    # asyncio's own loops listen through socket.socket (uvloop's do not): back after the test
    monkeypatch.setattr(asyncio.events, "_event_loop_policy", None)
