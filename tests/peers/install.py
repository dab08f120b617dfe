"""Installs the third-party peer clients into ``<repo>/.cache/peers`` (git-ignored).

* ali-ons 3.12.0 (npm, pure JavaScript): ``.cache/peers/node/node_modules/ali-ons``
* rocketmq 0.4.4 (PyPI, ctypes over the bundled librocketmq.so): ``.cache/peers/cpp-venv``, a venv
  of its own (its top-level ``rocketmq`` module must never meet the project's venv).

Each install is guarded by a file lock (pytest-xdist workers may race) and recorded in a marker file
with the versions, so a second call only reads that marker: no subprocess, no network.
Failures raise :class:`PeerInstallError` with the tool's output; with ``RMQ_SKIP_PEERS=1`` the
``ensure_*`` functions skip the calling test instead.

Run ``python -m tests.peers.install`` to warm the cache (e.g. in CI before the test run).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

ALI_ONS_VERSION = "3.12.0"
CPP_CLIENT_VERSION = "0.4.4"
MARKER = ".rmq-installed.json"

REPO_ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = REPO_ROOT / ".cache" / "peers"
NODE_PREFIX = PEERS_DIR / "node"
CPP_VENV = PEERS_DIR / "cpp-venv"

# Debian packages that provide the libraries librocketmq.so links against (besides the bundled libz)
_DEBIAN_HINTS = {
    "libstdc++.so.6": "libstdc++6",
    "libgcc_s.so.1": "libgcc-s1",
    "libm.so.6": "libc6",
    "libc.so.6": "libc6",
    "libdl.so.2": "libc6",
    "libpthread.so.0": "libc6",
    "librt.so.1": "libc6",
}


class PeerInstallError(RuntimeError):
    """A peer client could not be installed or does not work on this machine."""


def peers_skipped() -> bool:
    return os.environ.get("RMQ_SKIP_PEERS") == "1"


def _skip(reason: str) -> NoReturn:
    import pytest

    pytest.skip(f"RMQ_SKIP_PEERS=1: {reason}")


@contextmanager
def _locked(name: str) -> Iterator[None]:
    PEERS_DIR.mkdir(parents=True, exist_ok=True)
    with (PEERS_DIR / f"{name}.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def install_once(lock: str, ready: Callable[[], bool], install: Callable[[], None]) -> None:
    """``install()`` unless ``ready()``, under the file lock ``lock``: ``ready`` is asked again once the
    lock is held, so a worker that waited for another one's install finds it done."""
    if ready():
        return
    with _locked(lock):
        if not ready():
            install()


def skip_unless_installed(what: str, install: Callable[[], Path]) -> Path:
    """``install()``'s answer; with RMQ_SKIP_PEERS=1 the calling test is skipped instead."""
    if peers_skipped():
        _skip(f"{what} is not installed for this run")
    return install()


def install_main(installs: Sequence[tuple[str, Callable[[], object]]]) -> int:
    """An installer run as ``python -m``: each install in turn, with what it installed where."""
    try:
        for label, install in installs:
            print(f"{label}: {install()}")
    except PeerInstallError as exc:
        print(f"peer install failed: {exc}", file=sys.stderr)
        return 1
    return 0


def _read_marker(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_marker(folder: Path, data: dict[str, str]) -> None:
    tmp = folder / (MARKER + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(folder / MARKER)


def _run(cmd: list[str], what: str, timeout: float = 600, cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError as exc:
        raise PeerInstallError(f"{what}: {cmd[0]} is not installed ({exc})") from exc
    except subprocess.TimeoutExpired as exc:
        raise PeerInstallError(f"{what}: `{' '.join(cmd)}` did not finish within {timeout:.0f}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise PeerInstallError(f"{what}: `{' '.join(cmd)}` exited {proc.returncode}:\n{tail}")
    return proc.stdout


def npm_package_present(prefix: Path, package: str, version: str) -> bool:
    """Whether ``prefix``'s node_modules holds ``package`` at ``version``."""
    try:
        meta = json.loads((prefix / "node_modules" / package / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("version") == version


def npm_ready(prefix: Path, package: str, version: str) -> bool:
    """Recorded as installed and still there: what a second call checks (no subprocess)."""
    return _read_marker(prefix).get(package) == version and npm_package_present(prefix, package, version)


def npm_install(prefix: Path, package: str, version: str, node: str) -> None:
    """``package@version`` into ``prefix``'s node_modules unless it is there already, then prove that it
    and its dependencies load."""
    if not npm_package_present(prefix, package, version):
        _npm_install(prefix, package, version)
    _run([node, "-e", f"require('{package}')"], f"loading {package}", timeout=60, cwd=prefix)


def _npm_install(prefix: Path, package: str, version: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise PeerInstallError(f"installing {package} needs npm (Debian package `npm`)")
    prefix.mkdir(parents=True, exist_ok=True)
    _run(
        [
            npm,
            "install",
            "--prefix",
            str(prefix),
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            f"{package}@{version}",
        ],
        f"installing {package} {version} from npm",
    )
    if not npm_package_present(prefix, package, version):
        raise PeerInstallError(
            f"npm finished but {prefix / 'node_modules' / package} is not version {version}"
        )


def make_venv(venv: Path, what: str) -> str:
    """A fresh venv at ``venv`` (a half-made one from an interrupted run is removed); its python."""
    if venv.exists():
        shutil.rmtree(venv)
    _run([_base_python(), "-m", "venv", str(venv)], f"creating {what}", timeout=300)
    return str(venv / "bin" / "python")


def pip_install(python: str, requirement: str) -> None:
    _run(
        [python, "-m", "pip", "install", "--disable-pip-version-check", "-q", requirement],
        f"installing {requirement} from PyPI",
    )


# --- ali-ons --------------------------------------------------------------------------------------


def _ali_ons_ready() -> bool:
    return npm_ready(NODE_PREFIX, "ali-ons", ALI_ONS_VERSION)


def node_executable() -> str:
    node = shutil.which("node")
    if node is None:
        raise PeerInstallError("ali-ons needs Node.js (`node` is not on PATH; Debian package `nodejs`)")
    return node


def install_ali_ons() -> Path:
    """Installs ali-ons (if needed) and returns the ``node_modules`` folder to put on NODE_PATH."""
    install_once("node", _ali_ons_ready, _install_ali_ons)
    return NODE_PREFIX / "node_modules"


def _install_ali_ons() -> None:
    node = node_executable()
    node_version = _run([node, "--version"], "checking node").strip()
    major = node_version.lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 18:
        raise PeerInstallError(
            f"the ali-ons drivers need Node.js >= 18 (util.parseArgs), found {node_version}"
        )
    npm_install(NODE_PREFIX, "ali-ons", ALI_ONS_VERSION, node)
    _write_marker(NODE_PREFIX, {"ali-ons": ALI_ONS_VERSION, "node": node_version})


def ensure_ali_ons() -> Path:
    """``node_modules`` holding ali-ons; raises PeerInstallError, or skips with RMQ_SKIP_PEERS=1."""
    return skip_unless_installed("ali-ons", install_ali_ons)


# --- rocketmq 0.4.4 (C++ client) ------------------------------------------------------------------


def cpp_python() -> Path:
    return CPP_VENV / "bin" / "python"


def _cpp_ready() -> bool:
    return _read_marker(CPP_VENV).get("rocketmq") == CPP_CLIENT_VERSION and cpp_python().exists()


def _base_python() -> str:
    found = shutil.which("python3.11")
    if found:
        return found
    if sys.version_info[:2] == (3, 11):
        return getattr(sys, "_base_executable", sys.executable)
    raise PeerInstallError("the C++ client's venv needs python3.11 on PATH")


def missing_shared_libraries(library: Path) -> list[str]:
    """Libraries ``ldd`` cannot resolve for ``library`` (empty when all are present)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    out = _run([ldd, str(library)], f"ldd {library.name}", timeout=60)
    return [line.split("=>")[0].strip() for line in out.splitlines() if "not found" in line]


def install_cpp_client() -> Path:
    """Installs the ``rocketmq`` wheel into its own venv (if needed) and returns that venv's python."""
    install_once("cpp", _cpp_ready, _install_cpp_client)
    return cpp_python()


def _install_cpp_client() -> None:
    python = make_venv(CPP_VENV, "the C++ client's venv")
    pip_install(python, f"rocketmq=={CPP_CLIENT_VERSION}")
    libraries = sorted(CPP_VENV.glob("lib/python*/site-packages/rocketmq/librocketmq*.so*"))
    if not libraries:
        raise PeerInstallError("the rocketmq wheel installed without librocketmq.so (wrong platform wheel?)")
    missing = missing_shared_libraries(libraries[0])
    if missing:
        hints = ", ".join(f"{lib} (Debian: {_DEBIAN_HINTS.get(lib, '?')})" for lib in missing)
        raise PeerInstallError(f"librocketmq.so needs system libraries that are missing: {hints}")
    _run(
        [python, "-c", "import rocketmq.client"],
        "loading librocketmq.so through rocketmq.client",
        timeout=60,
    )
    version = _run([python, "-c", "import platform; print(platform.python_version())"], "python version")
    _write_marker(CPP_VENV, {"rocketmq": CPP_CLIENT_VERSION, "python": version.strip()})


def ensure_cpp_client() -> Path:
    """Python of the C++ client's venv; raises PeerInstallError, or skips with RMQ_SKIP_PEERS=1."""
    return skip_unless_installed("the rocketmq C++ client", install_cpp_client)


def main() -> int:
    return install_main(
        [
            (f"ali-ons {ALI_ONS_VERSION}", lambda: f"NODE_PATH={install_ali_ons()}"),
            (f"rocketmq {CPP_CLIENT_VERSION}", install_cpp_client),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
