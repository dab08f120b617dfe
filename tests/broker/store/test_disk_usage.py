"""The disk usage retention acts on is counted as ``df`` and RocketMQ count it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.store.message_store import default_disk_usage


def test_reserved_blocks_do_not_count_as_used(tmp_path: Path) -> None:
    st = os.statvfs(tmp_path)
    used = st.f_blocks - st.f_bfree
    available = st.f_bavail  # blocks reserved for root are neither used nor available
    assert default_disk_usage(tmp_path) == pytest.approx(used / (used + available), abs=1e-3)
