"""The mypyc build of the hot modules is used only while it matches the sources exactly."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import broker
from broker import compiled
from broker.store import message_store

SOURCE = "broker/store/commitlog.py"


def _fake_build(tmp_path: Path, *, suffix: str | None = None) -> tuple[Path, Path]:
    """A source tree holding one hot module and a build compiled from exactly that source."""
    root = tmp_path / "src"
    (root / "broker/store").mkdir(parents=True)
    (root / SOURCE).write_text("X = 1\n")
    build = tmp_path / "build"
    (build / "broker/store").mkdir(parents=True)
    ext = compiled.ext_suffix()
    (build / ("group__mypyc" + ext)).write_bytes(b"")
    (build / ("broker/store/commitlog" + ext)).write_bytes(b"")
    sources = {SOURCE: compiled.source_key(root / SOURCE)}
    manifest = {"ext_suffix": suffix or ext, "group": "group__mypyc", "sources": sources}
    (build / compiled.MANIFEST).write_text(json.dumps(manifest))
    return build, root


def test_a_build_of_the_current_sources_is_used(tmp_path: Path) -> None:
    build, root = _fake_build(tmp_path)
    assert compiled.fresh_build(build, root) == {
        "group__mypyc": build / ("group__mypyc" + compiled.ext_suffix()),
        "broker.store.commitlog": build / ("broker/store/commitlog" + compiled.ext_suffix()),
    }


def test_an_edited_source_sends_every_module_back_to_the_sources(tmp_path: Path) -> None:
    build, root = _fake_build(tmp_path)
    built = (root / SOURCE).stat().st_mtime_ns
    (root / SOURCE).write_text("X = 2\n")
    os.utime(root / SOURCE, ns=(built + 10**9, built + 10**9))  # edited a second later
    assert compiled.fresh_build(build, root) is None


@pytest.mark.parametrize("damage", ["other python", "missing extension", "torn manifest", "no manifest"])
def test_a_build_that_cannot_be_trusted_is_ignored(tmp_path: Path, damage: str) -> None:
    build, root = _fake_build(tmp_path, suffix=".cpython-399-other.so" if damage == "other python" else None)
    if damage == "missing extension":
        (build / ("broker/store/commitlog" + compiled.ext_suffix())).unlink()
    elif damage == "torn manifest":
        (build / compiled.MANIFEST).write_text('{"ext_suffix": ')
    elif damage == "no manifest":
        (build / compiled.MANIFEST).unlink()
    assert compiled.fresh_build(build, root) is None


def _can_compile() -> bool:
    compiler = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    return importlib.util.find_spec("mypyc") is not None and shutil.which(compiler) is not None


@pytest.mark.skipif(os.environ.get("RMQ_NO_ACCEL") == "1", reason="RMQ_NO_ACCEL=1 runs the sources")
@pytest.mark.skipif(not _can_compile(), reason="no mypyc or no C compiler: the sources run")
def test_the_store_runs_compiled_after_make_install() -> None:
    """`make install` builds the hot modules; this process and the `rmq` executable (started after it)
    run them, and `rmq --version` says so."""
    assert compiled.fresh_build() is not None, "build/accel is missing or stale: run `make install`"
    assert broker.COMPILED
    assert message_store.__file__ is not None
    assert message_store.__file__.endswith(compiled.ext_suffix())
    rmq = Path(sys.executable).with_name("rmq")
    said = subprocess.run([rmq, "--version"], capture_output=True, text=True, check=True).stdout
    assert said.rstrip().endswith("(hot modules compiled with mypyc)")
    env = {**os.environ, "RMQ_NO_ACCEL": "1"}
    said = subprocess.run([rmq, "--version"], capture_output=True, text=True, check=True, env=env).stdout
    assert said.rstrip().endswith("(plain Python sources)")
