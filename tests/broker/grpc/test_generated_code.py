"""The protobuf classes and typing stubs committed beside messaging.proto are what it generates."""

from __future__ import annotations

from pathlib import Path

import pytest

import generate_proto

pytestmark = pytest.mark.servers  # runs protoc


def test_the_generated_code_is_current(tmp_path: Path) -> None:
    generate_proto.generate(tmp_path)
    for name in ("messaging_pb2.py", "messaging_pb2.pyi"):
        committed = (generate_proto.PROTO_DIR / name).read_text()
        assert committed == (tmp_path / name).read_text(), f"{name} is stale: run `make proto`, commit it"
