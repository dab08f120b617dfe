"""Installs the official RocketMQ 5 gRPC clients into ``<repo>/.cache/peers`` (git-ignored), the
same way ``tests/peers/install.py`` installs the remoting peers (file lock, version marker):

* rocketmq-python-client 5.1.2 (PyPI) in its own venv ``.cache/peers/py5-venv`` (its top-level
  ``rocketmq`` module must not meet the project's venv or the C++ client's);
* rocketmq-client-nodejs 1.0.8 (npm) in ``.cache/peers/node5``.

With ``RMQ_SKIP_PEERS=1`` the ``ensure_*`` functions skip the calling test instead.
Run ``python -m tests.broker.grpc.peers5`` to warm the cache.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.peers.install import (
    PEERS_DIR,
    PeerInstallError,
    _base_python,
    _locked,
    _read_marker,
    _run,
    _skip,
    _write_marker,
    node_executable,
    peers_skipped,
)

PY5_VERSION = "5.1.2"
NODE5_VERSION = "1.0.8"
PY5_VENV = PEERS_DIR / "py5-venv"
NODE5_PREFIX = PEERS_DIR / "node5"


def py5_python() -> Path:
    return PY5_VENV / "bin" / "python"


def _py5_ready() -> bool:
    return _read_marker(PY5_VENV).get("rocketmq-python-client") == PY5_VERSION and py5_python().exists()


def install_python5_client() -> Path:
    if _py5_ready():
        return py5_python()
    with _locked("py5"):
        if _py5_ready():
            return py5_python()
        if not py5_python().exists():
            if PY5_VENV.exists():
                shutil.rmtree(PY5_VENV)
            _run(
                [_base_python(), "-m", "venv", str(PY5_VENV)],
                "creating the Python 5 client's venv",
                timeout=300,
            )
        python = str(py5_python())
        _run(
            [
                python,
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "-q",
                f"rocketmq-python-client=={PY5_VERSION}",
            ],
            f"installing rocketmq-python-client=={PY5_VERSION} from PyPI",
        )
        _run(
            [python, "-c", "from rocketmq import Producer, SimpleConsumer, PushConsumer"],
            "loading rocketmq-python-client",
            timeout=120,
        )
        _write_marker(PY5_VENV, {"rocketmq-python-client": PY5_VERSION})
    return py5_python()


def ensure_python5_client() -> Path:
    if peers_skipped():
        _skip("rocketmq-python-client is not installed for this run")
    return install_python5_client()


def _node5_package() -> Path:
    return NODE5_PREFIX / "node_modules" / "rocketmq-client-nodejs"


def _node5_present() -> bool:
    try:
        meta = json.loads((_node5_package() / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("version") == NODE5_VERSION


def install_nodejs5_client() -> Path:
    modules = NODE5_PREFIX / "node_modules"
    if _read_marker(NODE5_PREFIX).get("rocketmq-client-nodejs") == NODE5_VERSION and _node5_present():
        return modules
    with _locked("node5"):
        node = node_executable()
        if not _node5_present():
            npm = shutil.which("npm")
            if npm is None:
                raise PeerInstallError("installing rocketmq-client-nodejs needs npm (Debian package `npm`)")
            NODE5_PREFIX.mkdir(parents=True, exist_ok=True)
            _run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(NODE5_PREFIX),
                    "--prefer-offline",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    f"rocketmq-client-nodejs@{NODE5_VERSION}",
                ],
                f"installing rocketmq-client-nodejs {NODE5_VERSION} from npm",
            )
            if not _node5_present():
                raise PeerInstallError(f"npm finished but {_node5_package()} is not version {NODE5_VERSION}")
        _run(
            [node, "-e", "require('rocketmq-client-nodejs')"],
            "loading rocketmq-client-nodejs",
            60,
            NODE5_PREFIX,
        )
        _write_marker(NODE5_PREFIX, {"rocketmq-client-nodejs": NODE5_VERSION})
    return modules


def ensure_nodejs5_client() -> Path:
    if peers_skipped():
        _skip("rocketmq-client-nodejs is not installed for this run")
    return install_nodejs5_client()


def main() -> int:
    try:
        print(f"rocketmq-python-client {PY5_VERSION}: {install_python5_client()}")
        print(f"rocketmq-client-nodejs {NODE5_VERSION}: NODE_PATH={install_nodejs5_client()}")
    except PeerInstallError as exc:
        print(f"peer install failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
