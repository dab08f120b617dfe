"""Session-wide test settings."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


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
