"""Child of the compaction crash test: writes new values, then compacts and SIGKILLs itself at one
chosen moment of the compaction (or, for the last moment, lets the parent kill it after it finished).

Run as ``python -m tests.broker.store.compaction_worker STORE ATTEMPT``; ATTEMPT picks the moment from
:data:`MOMENTS`.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.store import compaction_log
from tests.broker.store.test_compaction import MOMENTS, NEW_VALUES, new_values, open_compacting, write


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _killing(
    fn: Callable[..., Any], calls: int, when: Callable[..., bool] = lambda *a: True, *, after: bool = False
) -> Any:
    """``fn`` that SIGKILLs the process at its ``calls``-th call for which ``when`` holds (before the
    call runs, or ``after`` it)."""
    seen = [0]

    def wrapped(*args: Any) -> Any:
        hit = False
        if when(*args):
            seen[0] += 1
            hit = seen[0] == calls
        if hit and not after:
            _die()
        result = fn(*args)
        if hit:
            _die()
        return result

    return wrapped


def main() -> None:
    root, attempt = Path(sys.argv[1]), int(sys.argv[2])
    moment = MOMENTS[attempt % len(MOMENTS)]
    store = open_compacting(root)
    write(store, new_values(attempt), NEW_VALUES)
    store.compaction.feed()
    if moment == "rewriting":  # while the compacted files are written
        compaction_log.KeyedLog.append = _killing(compaction_log.KeyedLog.append, 20)  # type: ignore[method-assign]
    elif moment == "marked":  # the swap is recorded, no old file deleted yet
        compaction_log.CompactionLog._apply_swap = _killing(compaction_log.CompactionLog._apply_swap, 1)  # type: ignore[method-assign]
    elif moment == "deleted":  # old files deleted (phase "move" recorded), none moved up yet
        compaction_log._write_synced = _killing(
            compaction_log._write_synced, 1, lambda _path, text: '"move"' in text, after=True
        )
    elif moment == "moving":  # one compacted file moved up, the rest still below
        compaction_log.os.replace = _killing(  # type: ignore[assignment]
            os.replace,
            2,
            lambda src, dst: (
                compaction_log.COMPACTING in str(src) and compaction_log.COMPACTING not in str(dst)
            ),
        )
    print("compacting", flush=True)
    store.compaction.compact_all()
    print("done", flush=True)
    time.sleep(60)


if __name__ == "__main__":
    main()
