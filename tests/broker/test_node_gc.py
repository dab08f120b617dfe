"""A serving node settles the garbage collector and the C heap once it is up (see broker.node.settle_gc and
settle_heap)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from broker.node import GC_THRESHOLDS, settle_gc

ROOT = Path(__file__).resolve().parents[2]


def test_settle_gc_freezes_what_is_alive_and_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    try:
        settle_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_run_until_signal_settles_gc_after_start(tmp_path: Path) -> None:
    """In its own process, as `rmq up` runs it: the thresholds change once the node is up."""
    script = textwrap.dedent(
        f"""
        import asyncio, gc, os, signal
        from pathlib import Path
        from broker.namesrv.config import NamesrvConfig
        from broker.node import Node, NodePlan, run_until_signal

        namesrv = NamesrvConfig.in_folder(Path({str(tmp_path)!r}))
        namesrv.listen_port = 0
        seen = []

        def started(node):
            seen.append(gc.get_threshold())
            os.kill(os.getpid(), signal.SIGINT)

        asyncio.run(run_until_signal(Node(NodePlan(namesrv=namesrv)), None, started))
        print(seen[0])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(GC_THRESHOLDS)


# Two ~1 MB blocks alive at once, as a pull answer's records and its frame were; after a smaller block
# was freed first, glibc's own thresholds give the heap back after each answer and fault it in again.
HEAP_PATTERN = """
import resource
def faults_per_answer():
    small = bytes(300_000)
    del small
    data = bytes(1_000_000)
    def answer():
        a = data[1:]; b = a[1:]; del a, b
    for _ in range(5): answer()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(100): answer()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 100
"""


def _faults(tmp_path: Path, serve: bool) -> float:
    script = HEAP_PATTERN + textwrap.dedent(
        f"""
        import asyncio, os, signal
        from pathlib import Path
        from broker.namesrv.config import NamesrvConfig
        from broker.node import Node, NodePlan, run_until_signal

        seen = []
        def started(node):
            seen.append(faults_per_answer())
            os.kill(os.getpid(), signal.SIGINT)

        if {serve!r}:
            namesrv = NamesrvConfig.in_folder(Path({str(tmp_path)!r}))
            namesrv.listen_port = 0
            asyncio.run(run_until_signal(Node(NodePlan(namesrv=namesrv)), None, started))
        else:
            seen.append(faults_per_answer())
        print(seen[0])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.strip().splitlines()[-1])


def test_a_serving_node_keeps_freed_heap_for_the_next_large_answer(tmp_path: Path) -> None:
    assert _faults(tmp_path, serve=False) > 100  # the C library's own thresholds: a fault per page
    assert _faults(tmp_path, serve=True) < 1
