"""NameServer settings pointing into the test's own folder, and one NameServer shared by the
property tests, running in a thread of its own so blocking sockets can hammer it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.namesrv.config import NamesrvConfig
from broker.namesrv.server import NameServer
from tests.broker.namesrv.helpers import config_in


@pytest.fixture
def config(tmp_path: Path) -> NamesrvConfig:
    return config_in(tmp_path)


@pytest.fixture(scope="module")
def threaded_namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a NameServer running on its own event loop thread for the whole module."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    ns = NameServer(config_in(tmp_path_factory.mktemp("threaded")), "127.0.0.1")
    asyncio.run_coroutine_threadsafe(ns.start(), loop).result(5)
    try:
        yield ns.address
    finally:
        asyncio.run_coroutine_threadsafe(ns.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
