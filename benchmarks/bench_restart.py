"""Store restart benchmark: the time a store of default geometry (1 GiB CommitLog files) takes to
start again after a clean shutdown and after a SIGKILL, with a torn record at the end, beside the
time the same store takes to walk its records (the work recovery cannot avoid)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore

Result = dict[str, object]
REPO = Path(__file__).resolve().parents[1]
# the child appends, leaves half a record past the end and kills itself, as a crash would
_CRASH = """
import os, signal, sys
from pathlib import Path
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, PutMessage
store = MessageStore(StoreConfig(store_path=Path(sys.argv[1])))
store.start()
body = b"x" * 1024
for i in range(0, int(sys.argv[2]), 32):
    batch = [PutMessage("BenchTopic", k % 8, body, {"KEYS": f"k{i + k}"}) for k in range(32)]
    res = store.put_messages(batch)
record = store.record_at(res.offsets[-1]) or b""
last = store.commitlog.files.last
last.mm[last.wrote : last.wrote + 100] = record[:100]
os.kill(os.getpid(), signal.SIGKILL)
"""


def _start(root: Path) -> tuple[float, MessageStore]:
    began = time.perf_counter()
    store = MessageStore(StoreConfig(store_path=root))
    store.start()
    return time.perf_counter() - began, store


def run(quick: bool) -> list[Result]:
    n = 50_000 if quick else 200_000
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench_restart_", dir=os.environ.get("RMQ_BENCH_DIR")) as tmp:
        root = Path(tmp)
        subprocess.run([sys.executable, "-c", _CRASH, str(root), str(n)], cwd=REPO, check=False)
        crash_s, store = _start(root)
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        report = store.recovery
        assert report is not None and not report.clean_shutdown
        walk_began = time.perf_counter()
        scan = store.commitlog.scan(report.scanned_from)
        walk_s = time.perf_counter() - walk_began
        store.shutdown()
        clean_s, store = _start(root)
        store.shutdown()
    data = f"{scan.bytes / 2**20:,.0f} MiB of records in a 1 GiB file"
    results.append(
        {
            "name": "restart_after_sigkill",
            "value": round(crash_s, 2),
            "unit": "s",
            "target": 5.0,
            "baseline": "walk of the records recovery checks",
            "baseline_value": round(walk_s, 2),
            "note": f"{data}; cut {report.truncated_bytes} torn bytes; peak RSS {peak_mib:,.0f} MiB",
        }
    )
    results.append(
        {
            "name": "restart_clean",
            "value": round(clean_s, 2),
            "unit": "s",
            "target": 5.0,
            "baseline": "walk of the records recovery checks",
            "baseline_value": round(walk_s, 2),
            "note": data,
        }
    )
    return results
