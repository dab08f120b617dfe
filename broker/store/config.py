"""Store settings, named as RocketMQ's MessageStoreConfig names them where one exists.

A field whose name or unit differs from RocketMQ's key carries that key in its metadata (see
:func:`broker.settings.key_name`): files, flags and GET_BROKER_CONFIG use RocketMQ's name.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
GEOMETRY_FILE = "config/storeGeometry.json"


@lru_cache(maxsize=16)
def parse_delay_levels(text: str) -> tuple[int, ...]:
    """``"1s 5s 1m"`` -> milliseconds per level; raises ValueError naming the bad entry.

    Cached: the send path asks for the levels on every delayed message, and the setting may change
    at run time (a new value is simply a new cache entry)."""
    levels: list[int] = []
    for item in text.split():
        unit = item[-1:]
        if unit not in _UNITS or not item[:-1].isdigit():
            raise ValueError(f"bad delay level {item!r} (expected a number followed by s, m, h or d)")
        levels.append(int(item[:-1]) * _UNITS[unit])
    if not levels:
        raise ValueError("messageDelayLevel is empty")
    return tuple(levels)


def _key(name: str) -> dict[str, str]:
    """Field metadata: RocketMQ's key for a field whose name or unit differs from it."""
    return {"key": name}


@dataclass(slots=True)
class StoreConfig:
    store_path: Path = field(metadata=_key("storePathRootDir"))
    mapped_file_size_commit_log: int = 1 << 30
    mapped_file_size_consume_queue_units: int = 300_000
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 20_000_000
    message_index_enable: bool = True
    max_message_size: int = 4 * 1024 * 1024
    flush_disk_type: str = "ASYNC_FLUSH"
    flush_interval_commit_log_ms: int = field(default=500, metadata=_key("flushIntervalCommitLog"))
    flush_interval_consume_queue_ms: int = field(default=1000, metadata=_key("flushIntervalConsumeQueue"))
    sync_flush_timeout_ms: int = field(default=5000, metadata=_key("syncFlushTimeout"))
    check_crc_on_recover: bool = field(default=True, metadata=_key("checkCRCOnRecover"))
    file_reserved_time_hours: int = field(default=72, metadata=_key("fileReservedTime"))
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    disk_space_clean_forcibly_ratio: int = 85
    disk_space_warning_level_ratio: int = 90
    clean_resource_interval_ms: int = field(default=10_000, metadata=_key("cleanResourceInterval"))
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    max_transfer_count_on_message: int = field(default=32, metadata=_key("maxTransferCountOnMessageInMemory"))
    max_transfer_bytes_on_message: int = field(
        default=256 * 1024, metadata=_key("maxTransferBytesOnMessageInMemory")
    )
    max_filter_message_count: int = 16_000
    os_page_cache_busy_time_out_mills: int = 1000  # an append holding the lock longer: flow control
    timer_wheel_enable: bool = True
    timer_max_delay_sec: int = 3 * 86_400
    timer_precision_ms: int = 1000
    # a timer due further ahead than this many precision steps waits in a slot this far ahead and is
    # then parked again (RocketMQ's roll): any delay fits a wheel of fixed span; upstream's default
    timer_roll_window_slots: int = 2 * 86_400
    mapped_file_size_timer_log: int = 100 * 1024 * 1024
    data_read_ahead_enable: bool = True  # False: CommitLog maps are madvised MADV_RANDOM
    # bytes of CommitLog kept in the page cache behind the flushed position; 0 = the kernel decides
    commit_log_cache_window: int = 0
    # compaction topics (cleanup.policy=COMPACTION); RocketMQ's names and defaults
    enable_compaction: bool = True
    compaction_mapped_file_size: int = 100 * 1024 * 1024
    compaction_cq_mapped_file_size: int = 10 * 1024 * 1024
    compaction_schedule_interval_ms: int = field(
        default=15 * 60 * 1000, metadata=_key("compactionScheduleInternal")
    )
    max_offset_map_size: int = 100 * 1024 * 1024
    # ConsumeQueue files mapped at once (each map also holds a descriptor); more are mapped on use
    # in place of ones not used lately, so a store of many queues stays under the kernel's limit
    max_mapped_consume_queue_files: int = 16_384
    extra: dict[str, Any] = field(default_factory=dict, metadata={"internal": True})  # not a setting

    @property
    def sync_flush(self) -> bool:
        return self.flush_disk_type.upper() == "SYNC_FLUSH"

    @property
    def delay_levels_ms(self) -> list[int]:
        return list(parse_delay_levels(self.message_delay_level))

    def geometry(self) -> dict[str, int]:
        return {
            "mappedFileSizeCommitLog": self.mapped_file_size_commit_log,
            "mappedFileSizeConsumeQueueUnits": self.mapped_file_size_consume_queue_units,
            "maxHashSlotNum": self.max_hash_slot_num,
            "maxIndexNum": self.max_index_num,
        }

    def write_geometry(self) -> None:
        """Record file sizes so offline tools can open a store written with non-default sizes."""
        path = self.store_path / GEOMETRY_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.geometry(), indent=1))

    @classmethod
    def for_existing(cls, store_path: Path) -> StoreConfig:
        """Settings for reading a store folder: its recorded geometry, else RocketMQ's defaults
        with the CommitLog and ConsumeQueue file sizes taken from the files themselves."""
        cfg = cls(store_path=store_path)
        geo_path = store_path / GEOMETRY_FILE
        try:
            geo = json.loads(geo_path.read_text())
            cfg.mapped_file_size_commit_log = int(geo["mappedFileSizeCommitLog"])
            cfg.mapped_file_size_consume_queue_units = int(geo["mappedFileSizeConsumeQueueUnits"])
            cfg.max_hash_slot_num = int(geo["maxHashSlotNum"])
            cfg.max_index_num = int(geo["maxIndexNum"])
            return cfg
        except (OSError, ValueError, KeyError, TypeError):
            pass
        commitlog = sorted((store_path / "commitlog").glob("[0-9]" * 20))
        if commitlog:
            cfg.mapped_file_size_commit_log = commitlog[0].stat().st_size
        cq_files = sorted((store_path / "consumequeue").glob("*/*/" + "[0-9]" * 20))
        if cq_files:
            cfg.mapped_file_size_consume_queue_units = cq_files[0].stat().st_size // 20
        return cfg

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["store_path"] = str(self.store_path)
        return d

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]
