"""The CommitLog: every message of every topic, appended to 20-digit-named mapped files.

A record never spans files: when one does not fit, an 8-byte blank marker closes the file and
the record starts the next one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from broker.protocol.message import (
    BLANK_MAGIC,
    BLANK_SIZE,
    POS_PHYSICAL_OFFSET,
    RecordError,
    RecordLayout,
    check_crc,
    read_layout,
)
from broker.protocol.properties import PROPERTY_SEP
from broker.store.mapped_file import DEFAULT_MAX_ZERO_RUN, MappedFile, MappedFileQueue

DEFAULT_FILE_SIZE: Final = 1 << 30
_BLANK: Final = struct.Struct(">ii")
_I64: Final = struct.Struct(">q")
_PROPERTY_SEP: Final = ord(PROPERTY_SEP)


@dataclass(slots=True, frozen=True)
class ScanProblem:
    """A place where a CommitLog walk stopped: the file, the offset and why."""

    file: str
    offset: int
    reason: str


@dataclass(slots=True)
class ScanResult:
    end: int  # offset just after the last valid record
    records: int
    bytes: int
    problem: ScanProblem | None


class CommitLog:
    def __init__(
        self,
        directory: Path,
        file_size: int = DEFAULT_FILE_SIZE,
        *,
        read_only: bool = False,
        max_body_size: int = 4 << 20,
    ) -> None:
        # a torn record's body may be zeros: the search for written bytes past a cut looks further
        self.files = MappedFileQueue(
            directory, file_size, read_only=read_only, max_zero_run=max_body_size + DEFAULT_MAX_ZERO_RUN
        )

    @property
    def file_size(self) -> int:
        return self.files.file_size

    @property
    def min_offset(self) -> int:
        return self.files.min_offset

    @property
    def max_offset(self) -> int:
        return self.files.max_offset

    def load(self) -> None:
        self.files.load()

    # -- writing -------------------------------------------------------------------------------
    def next_write_offset(self, size: int) -> int:
        """Where a record of ``size`` bytes will start (after a blank marker if it does not fit)."""
        last = self.files.last
        if last is None:
            return self.files.max_offset
        if size + BLANK_SIZE > last.remaining:
            return last.file_end
        return last.file_from + last.wrote

    def writable(self, size: int) -> MappedFile:
        """The file the next record of ``size`` bytes goes to, closing the current one if needed."""
        if size + BLANK_SIZE > self.file_size:
            raise ValueError(
                f"a record of {size} bytes cannot fit a CommitLog file of {self.file_size} bytes"
            )
        last = self.files.last
        if last is not None and size + BLANK_SIZE > last.remaining:
            # the marker says how many bytes are left; the rest of the file counts as written
            last.append(_BLANK.pack(last.remaining, BLANK_MAGIC))
            last.wrote = last.size
        return self.files.writable_file(self.files.max_offset)

    def append_raw(self, offset: int, data: bytes | memoryview) -> None:
        """Append bytes copied from a master at exactly ``offset`` (replication).

        The master's files have the same size, so its blank markers close our files at the
        same places; data never spans a file boundary because the master never sends it so.
        """
        if offset != self.files.max_offset:
            raise ValueError(
                f"replicated bytes start at {offset}, but the CommitLog ends at {self.max_offset}"
            )
        pos = 0
        while pos < len(data):
            mf = self.files.writable_file(offset + pos)
            n = min(mf.remaining, len(data) - pos)
            mf.append(data[pos : pos + n])
            pos += n

    # -- reading -------------------------------------------------------------------------------
    def read(self, offset: int, size: int) -> bytes | None:
        mf = self.files.find(offset)
        if mf is None:
            return None
        rel = offset - mf.file_from
        if rel + size > mf.wrote:
            return None
        return mf.mm[rel : rel + size]

    def read_raw(self, offset: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` written bytes from ``offset`` within one file (replication source)."""
        mf = self.files.find(offset)
        if mf is None:
            return b""
        rel = offset - mf.file_from
        return mf.mm[rel : min(mf.wrote, rel + max_bytes)]

    def layout_at(self, offset: int) -> tuple[MappedFile, RecordLayout] | None:
        """The validated record that starts exactly at ``offset``, or None."""
        mf = self.files.find(offset)
        if mf is None:
            return None
        rel = offset - mf.file_from
        try:
            layout = read_layout(mf.mm, rel, mf.wrote)
        except RecordError:
            return None
        if layout.magic == BLANK_MAGIC or _I64.unpack_from(mf.mm, rel + POS_PHYSICAL_OFFSET)[0] != offset:
            return None
        return mf, layout

    def record_at(self, offset: int) -> bytes | None:
        found = self.layout_at(offset)
        if found is None:
            return None
        mf, layout = found
        rel = offset - mf.file_from
        return mf.mm[rel : rel + layout.total_size]

    def store_timestamp_at(self, offset: int) -> int | None:
        found = self.layout_at(offset)
        return None if found is None else found[1].store_timestamp

    # -- walking -------------------------------------------------------------------------------
    def walk(
        self, start: int, *, check_body_crc: bool = True
    ) -> Iterator[tuple[MappedFile, int, RecordLayout]]:
        """Yield ``(file, position, layout)`` for each valid record from ``start``.

        The walk ends at the first byte that is not a record; :meth:`scan` says why.
        """
        for _mf, pos, layout, problem in self._walk(start, check_body_crc):
            if problem is None and layout is not None:
                yield _mf, pos, layout

    def scan(self, start: int, *, check_body_crc: bool = True) -> ScanResult:
        """Walk from ``start`` and report where the valid records end and why."""
        end, records, size = start, 0, 0
        for mf, pos, layout, problem in self._walk(start, check_body_crc):
            if problem is not None:
                return ScanResult(end, records, size, problem)
            assert layout is not None
            records += 1
            size += layout.total_size
            end = mf.file_from + pos + layout.total_size
        return ScanResult(end, records, size, None)

    def _walk(
        self, start: int, check_body_crc: bool
    ) -> Iterator[tuple[MappedFile, int, RecordLayout | None, ScanProblem | None]]:
        files = self.files.files
        i = next((k for k, f in enumerate(files) if f.file_from <= start < f.file_end), None)
        if i is None:
            return
        pos = start - files[i].file_from
        while i < len(files):
            mf = files[i]
            mm = mf.mm
            limit = mf.wrote
            file_from = mf.file_from
            while pos < limit:
                if limit - pos < 8 or _BLANK.unpack_from(mm, pos) == (0, 0):
                    return  # clean end of the written data
                torn: ScanProblem | None = None
                try:
                    layout = read_layout(mm, pos, limit)
                except RecordError as exc:
                    torn = ScanProblem(mf.path.name, file_from + pos, str(exc))
                # yielded outside the handler, so that the reader's own errors are not chained to it
                if torn is not None:
                    yield mf, pos, None, torn
                    return
                if layout.magic == BLANK_MAGIC:
                    if layout.total_size != mf.size - pos:
                        reason = f"blank marker of {layout.total_size} bytes does not close the file"
                        yield mf, pos, None, ScanProblem(mf.path.name, file_from + pos, reason)
                        return
                    break
                phys = _I64.unpack_from(mm, pos + POS_PHYSICAL_OFFSET)[0]
                if phys != file_from + pos:
                    reason = f"record claims physical offset {phys}"
                    yield mf, pos, None, ScanProblem(mf.path.name, file_from + pos, reason)
                    return
                if check_body_crc and not check_crc(mm, layout):
                    yield mf, pos, None, ScanProblem(mf.path.name, file_from + pos, "body CRC mismatch")
                    return
                props_len = layout.props_len
                if props_len and mm[layout.props_pos + props_len - 1] != _PROPERTY_SEP:
                    # the sizes and the body are whole but the last bytes never reached the file: a
                    # write cut at a page by SIGKILL (every writer ends each property with 0x02)
                    reason = "properties end without their separator: the record's end was never written"
                    yield mf, pos, None, ScanProblem(mf.path.name, file_from + pos, reason)
                    return
                yield mf, pos, layout, None
                pos += layout.total_size
            else:
                if i + 1 < len(files) and limit < mf.size:
                    return  # a file that is not full is the last one with data
            i += 1
            pos = 0

    def truncate(self, offset: int) -> None:
        self.files.truncate(offset)

    def flush(self) -> int:
        return self.files.flush()

    def close(self) -> None:
        self.files.close()
