"""A small store written by MessageStore, shared read-only by the CLI tests (copy it to damage it)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage
from cli.main import app

TOPIC = "T"
BINARY_TOPIC = "Bin"
COUNT = 60  # ~1.3 KB each: two 64 KiB CommitLog files
BINARY_BODY = bytes(range(256))


@dataclass(frozen=True)
class Msg:
    index: int
    topic: str
    queue_id: int
    queue_offset: int
    offset: int  # CommitLog offset
    size: int
    msg_id: str
    uniq_key: str
    body: bytes


@dataclass(frozen=True)
class BuiltStore:
    path: Path
    messages: list[Msg]

    def of_topic(self, topic: str) -> list[Msg]:
        return [m for m in self.messages if m.topic == topic]


def body_of(i: int) -> bytes:
    return (f"message {i} " * 200).encode()[:1300]


def uniq_of(i: int) -> str:
    return f"AC14151100001BB4AAC2{i:012X}"


def build_store(root: Path) -> BuiltStore:
    cfg = StoreConfig(
        store_path=root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue_units=100,
        max_hash_slot_num=100,
        max_index_num=400,
    )
    store = MessageStore(cfg)
    store.start()
    puts = [
        PutMessage(
            TOPIC, i % 2, body_of(i), {"TAGS": f"tag{i % 3}", "KEYS": f"k{i} shared", "UNIQ_KEY": uniq_of(i)}
        )
        for i in range(COUNT)
    ]
    puts.append(PutMessage(BINARY_TOPIC, 0, BINARY_BODY, {"TAGS": "bin", "UNIQ_KEY": uniq_of(COUNT)}))
    messages: list[Msg] = []
    try:
        for i, put in enumerate(puts):
            result = store.put_messages([put])
            assert result.ok, result.remark
            messages.append(
                Msg(
                    i,
                    put.topic,
                    put.queue_id,
                    result.queue_offsets[0],
                    result.offsets[0],
                    result.sizes[0],
                    result.msg_ids[0],
                    put.properties["UNIQ_KEY"],
                    put.body,
                )
            )
    finally:
        store.shutdown()
    return BuiltStore(root, messages)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltStore:
    return build_store(tmp_path_factory.mktemp("store"))


@pytest.fixture
def damaged(built: BuiltStore, tmp_path: Path) -> BuiltStore:
    """A private copy of the store that a test may modify."""
    copy = tmp_path / "store"
    shutil.copytree(built.path, copy)
    return BuiltStore(copy, built.messages)


@pytest.fixture
def rmq() -> Callable[..., Result]:
    """Run ``rmq`` in-process: ``rmq("store", "info", path)``."""
    runner = CliRunner()

    def invoke(*args: object) -> Result:
        return runner.invoke(app, [str(a) for a in args])

    return invoke
