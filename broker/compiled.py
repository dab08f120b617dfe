"""Runs the hot modules from their mypyc build when a fresh one exists, else from their sources.

``make install`` compiles the hot modules (store append, dispatch, index and recovery; remoting frames,
connections and sends: ``ACCEL_MODULES`` in ``build_accel.py``) with mypyc into ``build/accel``, a
folder apart from the sources: an extension module next
to its ``.py`` would shadow every later edit of it. The build's manifest records the size and
modification time of each source it was compiled from (what ``make`` trusts, and a ``stat`` per file
is all an ``import broker`` pays: no source is read); the compiled modules are used only while every
one of those sources still has them and the interpreter is the one they were built for. They are
compiled as one group that calls across modules natively, so it is all of them or none.
``RMQ_NO_ACCEL=1`` runs the sources.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build" / "accel"
MANIFEST = "manifest.json"


def source_key(path: Path) -> list[int]:
    """What says a source is the one a build was made from: its size and modification time (ns)."""
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def module_name(source: str) -> str:
    """``broker/store/commitlog.py`` -> ``broker.store.commitlog``."""
    return source.removesuffix(".py").replace("/", ".")


def ext_suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[0]


class _CompiledFinder:
    """A meta path finder (importlib.abc is not imported: it costs ~6 ms at every start) that finds
    the listed modules as the extension files of the build."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        so = self.files.get(fullname)
        return None if so is None else importlib.util.spec_from_file_location(fullname, so)


def fresh_build(build: Path = BUILD_DIR, root: Path = ROOT) -> dict[str, Path] | None:
    """Module name -> extension file of a build made from exactly the current sources, or None."""
    try:
        manifest = json.loads((build / MANIFEST).read_text())
        if manifest["ext_suffix"] != ext_suffix():
            return None
        files = {manifest["group"]: build / (manifest["group"] + ext_suffix())}
        for source, key in manifest["sources"].items():
            if source_key(root / source) != key:
                return None
            files[module_name(source)] = build / (source.removesuffix(".py") + ext_suffix())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no build, or not one this code can trust: run the sources
    return files if all(p.is_file() for p in files.values()) else None


def install() -> bool:
    """Put the fresh build, if any, in front of the sources for the modules it compiled."""
    if os.environ.get("RMQ_NO_ACCEL") == "1":
        return False
    files = fresh_build()
    if files is None:
        return False
    sys.meta_path.insert(0, _CompiledFinder(files))
    return True


ACTIVE = install()
