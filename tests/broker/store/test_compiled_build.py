"""The hot modules run compiled where the build made their extensions, and say so."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from broker import compiled
from broker.store import message_store

RMQ = Path(sys.executable).with_name("rmq")
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _can_compile() -> bool:
    compiler = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    return importlib.util.find_spec("mypyc") is not None and shutil.which(compiler) is not None


def _version(**env: str) -> str:
    done = subprocess.run(
        [RMQ, "--version"], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    return done.stdout.rstrip()


@pytest.mark.skipif(os.environ.get("RMQ_NO_ACCEL") == "1", reason="RMQ_NO_ACCEL=1 runs the sources")
@pytest.mark.skipif(not _can_compile(), reason="no mypyc or no C compiler: the sources run")
def test_the_store_runs_compiled_after_make_install() -> None:
    """`make install` builds the hot modules beside their sources; this process and the `rmq`
    executable run them, `rmq --version` says so, and RMQ_NO_ACCEL=1 runs the sources all the same."""
    assert message_store.__file__ is not None
    assert message_store.__file__.endswith(SUFFIX), "no extensions beside the sources: run `make install`"
    assert compiled.running()
    assert _version().endswith("(hot modules compiled with mypyc)")
    assert _version(RMQ_NO_ACCEL="1").endswith("(plain Python sources)")


def test_no_accel_runs_every_broker_module_from_its_source() -> None:
    probe = (
        "import broker.store.message_store as m, broker.grpc.service as s\n"
        "from broker import compiled\n"
        "print(m.__file__, s.__file__, compiled.running())"
    )
    env = {**os.environ, "RMQ_NO_ACCEL": "1"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    store, service, running = done.stdout.split()
    assert store.endswith("broker/store/message_store.py") and service.endswith("broker/grpc/service.py")
    assert running == "False"
