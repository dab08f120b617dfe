"""Optional mypyc build of the store's hot modules, kept out of the source tree.

    python build_accel.py [--out build/accel]

copies the packages to ``--out`` and compiles the modules in ``ACCEL_MODULES`` there, next to their
copied ``.py`` files; run from that folder to use them (``cd build/accel && python -m benchmarks`` or
``python -m pytest tests/store``). The
source tree never holds a ``.so``: one next to its ``.py`` would shadow every later edit of it, which is
the trap of an editable install. The same source is compiled: there is no second implementation.

Nothing is required: without mypyc or a C compiler, or with ``RMQ_NO_ACCEL=1``, it says why and exits 0,
and everything runs as pure Python. ``RMQ_ACCEL_STRICT=1`` turns those cases into failures (for CI).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PACKAGES = ("broker", "admin", "cli", "benchmarks", "tests")  # tests: to run them against the build
# Hot paths: append, dispatch, index and recovery scan. Modules not listed stay interpreted.
ACCEL_MODULES = (
    "broker/protocol/javahash.py",
    "broker/protocol/properties.py",
    "broker/protocol/message.py",
    "broker/store/mapped_file.py",
    "broker/store/commitlog.py",
    "broker/store/consume_queue.py",
    "broker/store/index_file.py",
    "broker/store/index_service.py",
    "broker/store/dispatch.py",
    "broker/store/message_store.py",
)


def _skip(reason: str) -> int:
    strict = os.environ.get("RMQ_ACCEL_STRICT") == "1"
    print(f"build_accel: {'error' if strict else 'skipped'}: {reason}", file=sys.stderr)
    return 1 if strict else 0


def _copy_tree(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    for package in PACKAGES:
        if (ROOT / package).is_dir():
            shutil.copytree(ROOT / package, out / package, ignore=ignore)


def build(out: Path) -> int:
    if os.environ.get("RMQ_NO_ACCEL") == "1":
        return _skip("RMQ_NO_ACCEL=1")
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return _skip("mypyc is not installed (it ships with mypy)")
    compiler = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return _skip(f"no C compiler ({compiler})")
    _copy_tree(out)
    env = {**os.environ, "MYPYC_OPT_LEVEL": os.environ.get("MYPYC_OPT_LEVEL", "3")}
    cmd = [sys.executable, "-m", "mypyc", *ACCEL_MODULES]
    done = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        shutil.rmtree(out, ignore_errors=True)  # never leave a half-compiled copy to be run
        return _skip(f"mypyc failed:\n{tail}")
    shutil.rmtree(out / "build", ignore_errors=True)  # C sources and objects; the .so files stay
    built = sorted(p.relative_to(out) for p in out.rglob("*.so"))
    print(f"build_accel: compiled {len(built)} extension(s) into {out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "accel", help="where the copy is built")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    if out == ROOT or (ROOT in out.parents and out.parts[len(ROOT.parts)] in PACKAGES):
        parser.error("--out must not be the source tree or inside one of its packages")
    return build(out)


if __name__ == "__main__":
    sys.exit(main())
