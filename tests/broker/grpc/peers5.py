"""Installs the official RocketMQ 5 gRPC clients into ``<repo>/.cache/peers`` (git-ignored), the
same way ``tests/peers/install.py`` installs the remoting peers (file lock, version marker):

* rocketmq-python-client 5.1.2 (PyPI) in its own venv ``.cache/peers/py5-venv`` (its top-level
  ``rocketmq`` module must not meet the project's venv or the C++ client's);
* rocketmq-client-nodejs 1.0.8 (npm) in ``.cache/peers/node5``.

With ``RMQ_SKIP_PEERS=1`` the ``ensure_*`` functions skip the calling test instead.
Run ``python -m tests.broker.grpc.peers5`` to warm the cache.
"""

from __future__ import annotations

from pathlib import Path

from tests.peers.install import (
    PEERS_DIR,
    _read_marker,
    _run,
    _write_marker,
    install_main,
    install_once,
    make_venv,
    node_executable,
    npm_install,
    npm_ready,
    pip_install,
    skip_unless_installed,
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
    install_once("py5", _py5_ready, _install_python5_client)
    return py5_python()


def _install_python5_client() -> None:
    if not py5_python().exists():
        make_venv(PY5_VENV, "the Python 5 client's venv")
    python = str(py5_python())
    pip_install(python, f"rocketmq-python-client=={PY5_VERSION}")
    _run(
        [python, "-c", "from rocketmq import Producer, SimpleConsumer, PushConsumer"],
        "loading rocketmq-python-client",
        timeout=120,
    )
    _write_marker(PY5_VENV, {"rocketmq-python-client": PY5_VERSION})


def ensure_python5_client() -> Path:
    return skip_unless_installed("rocketmq-python-client", install_python5_client)


def _node5_ready() -> bool:
    return npm_ready(NODE5_PREFIX, "rocketmq-client-nodejs", NODE5_VERSION)


def _install_nodejs5_client() -> None:
    npm_install(NODE5_PREFIX, "rocketmq-client-nodejs", NODE5_VERSION, node_executable())
    _write_marker(NODE5_PREFIX, {"rocketmq-client-nodejs": NODE5_VERSION})


def install_nodejs5_client() -> Path:
    install_once("node5", _node5_ready, _install_nodejs5_client)
    return NODE5_PREFIX / "node_modules"


def ensure_nodejs5_client() -> Path:
    return skip_unless_installed("rocketmq-client-nodejs", install_nodejs5_client)


def main() -> int:
    return install_main(
        [
            (f"rocketmq-python-client {PY5_VERSION}", install_python5_client),
            (f"rocketmq-client-nodejs {NODE5_VERSION}", lambda: f"NODE_PATH={install_nodejs5_client()}"),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
