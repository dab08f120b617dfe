"""Retention of CommitLog files: expired files go at ``deleteWhen`` or when the
disk is fuller than ``diskMaxUsedSpaceRatio``; above ``diskSpaceCleanForciblyRatio`` the oldest go
even unexpired; above ``diskSpaceWarningLevelRatio`` writes are refused until space returns.
Clock and disk usage are injected so the rules can be tested without filling a disk."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from broker.store.commitlog import CommitLog
from broker.store.config import StoreConfig

log = logging.getLogger(__name__)
MAX_FILES_PER_RUN = 10


@dataclass(slots=True)
class RetentionReport:
    disk_ratio: float
    disk_full: bool
    deleted_files: list[str] = field(default_factory=list)
    reason: str = ""


def _delete_hours(text: str) -> set[int]:
    hours: set[int] = set()
    for part in text.split(";"):
        part = part.strip()
        if part.isdigit():
            hours.add(int(part))
    return hours


class Retention:
    def __init__(
        self, config: StoreConfig, *, clock: Callable[[], float], disk_usage: Callable[[Path], float]
    ) -> None:
        self.config = config
        self.clock = clock
        self.disk_usage = disk_usage

    def _ratio(self, commitlog: CommitLog) -> float:
        path = commitlog.files.directory
        return self.disk_usage(path if path.exists() else self.config.store_path)

    def run(self, commitlog: CommitLog, *, manual: bool = False) -> RetentionReport:
        cfg = self.config
        ratio = self._ratio(commitlog)
        warning = min(max(cfg.disk_space_warning_level_ratio, 35), 90) / 100
        forcibly = min(max(cfg.disk_space_clean_forcibly_ratio, 30), 85) / 100
        report = RetentionReport(ratio, ratio > warning)
        now = self.clock()
        at_hour = dt.datetime.fromtimestamp(now).hour in _delete_hours(cfg.delete_when)
        over_space = ratio > cfg.disk_max_used_space_ratio / 100
        if not (manual or at_hour or over_space):
            return report
        report.reason = (
            "manual" if manual else ("disk usage" if over_space else f"deleteWhen={cfg.delete_when}")
        )
        reserved = cfg.file_reserved_time_hours * 3600
        for mf in list(commitlog.files.files[:-1]):
            if len(report.deleted_files) >= MAX_FILES_PER_RUN:
                break
            expired = mf.path.stat().st_mtime + reserved <= now
            force = self._ratio(commitlog) > forcibly
            if not (expired or force):
                break  # files are in age order: nothing later is expired either
            commitlog.files.delete_first()
            report.deleted_files.append(mf.path.name)
            log.info(
                "deleted CommitLog file %s (%s)", mf.path.name, "expired" if expired else "disk pressure"
            )
        report.disk_ratio = self._ratio(commitlog)
        report.disk_full = report.disk_ratio > warning
        return report
