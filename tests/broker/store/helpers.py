"""Small-geometry stores and deterministic messages for the store tests."""

from __future__ import annotations

import random
from pathlib import Path

from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage

TOPIC = "CrashT"


def small_config(root: Path, **overrides: object) -> StoreConfig:
    cfg = StoreConfig(
        store_path=root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue_units=100,
        max_hash_slot_num=64,
        max_index_num=300,
    )
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


def body_for(seq: int) -> bytes:
    rng = random.Random(seq)
    return rng.randbytes(rng.randint(0, 3000))


def uniq_for(seq: int) -> str:
    return f"{seq:032X}"


def message_for(seq: int) -> PutMessage:
    return PutMessage(
        topic=TOPIC,
        queue_id=seq % 3,
        body=body_for(seq),
        properties={"TAGS": f"tag{seq % 4}", "KEYS": f"key-{seq} shared", "UNIQ_KEY": uniq_for(seq)},
        born_timestamp=1_700_000_000_000 + seq,
    )


def seq_of(uniq: str) -> int:
    return int(uniq, 16)


def open_store(root: Path, **overrides: object) -> MessageStore:
    store = MessageStore(small_config(root, **overrides))
    store.start()
    return store
