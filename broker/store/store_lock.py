"""The store's ``lock`` (exclusive, so two brokers never share a store) and ``abort`` marker."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from broker.store.errors import StoreLockedError


class StoreLock:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd: int | None = None

    @property
    def abort_path(self) -> Path:
        return self.root / "abort"

    def acquire(self) -> bool:
        """Take the lock; returns whether the previous run ended cleanly (no abort marker)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            # flock also refuses a second open in this process; lockf is the POSIX lock Java's
            # FileChannel.tryLock takes, so a Java broker and we exclude each other too
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLockedError(
                f"store {self.root} is in use by another process (pid {self.holder_pid() or 'unknown'})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, b"lock")
        self._fd = fd
        clean = not self.abort_path.exists()
        self.abort_path.write_text(str(os.getpid()))
        return clean

    def held_by_a_writer(self) -> bool:
        """Whether a broker of this project holds the lock now (its flock, which conflicts with another
        open of the file even in the same process). A POSIX lock test is left out: releasing one would
        drop every POSIX lock this process holds on the file, a writer's in this process included."""
        try:
            fd = os.open(self.root / "lock", os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    def holder_pid(self) -> int | None:
        try:
            text = self.abort_path.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def release(self, clean: bool = True) -> None:
        if clean:
            self.abort_path.unlink(missing_ok=True)
        if self._fd is not None:
            fcntl.lockf(self._fd, fcntl.LOCK_UN)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
