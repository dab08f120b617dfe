"""Compiles the hot modules with mypyc into a build folder apart from the sources.

    python build_accel.py [--out build/accel] [--if-stale]

``make install`` runs it; ``broker.compiled`` then loads the compiled modules in place of their
sources for as long as the sources keep the size and modification time the manifest recorded (an
edit falls back to the source until the next ``make install``). The same source is compiled: there is
no second implementation.
The folder holds only the extension files and ``manifest.json``: a ``.so`` next to its ``.py`` would
shadow every later edit of it, the trap of an editable install.

Nothing is required: without mypyc or a C compiler, or with ``RMQ_NO_ACCEL=1``, it says why and exits 0,
and everything runs as pure Python. ``RMQ_ACCEL_STRICT=1`` turns those cases into failures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from broker.compiled import BUILD_DIR, MANIFEST, ROOT, ext_suffix, fresh_build, module_name, source_key

# Hot paths: store append, dispatch, index and recovery scan; remoting frames, connections and sends;
# gRPC's HTTP/2 frames, header blocks and calls, and its sends.
# Modules not listed stay interpreted.
ACCEL_MODULES = (
    "broker/protocol/javahash.py",
    "broker/protocol/properties.py",
    "broker/protocol/names.py",
    "broker/protocol/message.py",
    "broker/protocol/header_codec.py",
    "broker/store/mapped_file.py",
    "broker/store/commitlog.py",
    "broker/store/consume_queue.py",
    "broker/store/index_file.py",
    "broker/store/index_service.py",
    "broker/store/dispatch.py",
    "broker/store/message_store.py",
    "broker/protocol/remoting.py",
    "broker/remoting/channel.py",
    "broker/remoting/client.py",
    "broker/remoting/errors.py",
    "broker/server/messaging/send.py",
    "broker/server/send_message_processor.py",
    "broker/server/write_bursts.py",
    "broker/server/instrument.py",
    "broker/server/header_limits.py",
    "broker/server/flow_control.py",
    "broker/server/long_polling.py",
    "broker/server/stats.py",
    "broker/protocol/hpack_codec.py",
    "broker/protocol/http2.py",
    "broker/grpc/http2.py",
    "broker/grpc/calls.py",
    "broker/grpc/convert.py",
    "broker/grpc/send_rpc.py",
    "broker/grpc/pop_rpc.py",
    "broker/grpc/clients.py",
    "broker/grpc/service.py",
    "broker/grpc/guard.py",
)


def _skip(reason: str) -> int:
    strict = os.environ.get("RMQ_ACCEL_STRICT") == "1"
    print(f"build_accel: {'error' if strict else 'skipped'}: {reason}", file=sys.stderr)
    return 1 if strict else 0


def _compile(staging: Path) -> str | None:
    """Compile ``ACCEL_MODULES`` from a copy of the sources in ``staging``; None or why it failed."""
    shutil.copytree(ROOT / "broker", staging / "broker", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    env = {**os.environ, "MYPYC_OPT_LEVEL": os.environ.get("MYPYC_OPT_LEVEL", "3")}
    cmd = [sys.executable, "-m", "mypyc", *ACCEL_MODULES]
    done = subprocess.run(cmd, cwd=staging, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return "mypyc failed:\n" + "\n".join((done.stdout + done.stderr).splitlines()[-20:])
    return None


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
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    keys = {source: source_key(ROOT / source) for source in ACCEL_MODULES}
    try:
        failure = _compile(staging)
        if failure is not None:
            return _skip(failure)
        shutil.rmtree(staging / "build")  # setuptools' objects and a second copy of each extension
        # keep the extension files only; the copied sources and C files must never be run or read
        for path in sorted(staging.rglob("*"), reverse=True):
            if path.is_file() and not path.name.endswith(ext_suffix()):
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        groups = [p.name.removesuffix(ext_suffix()) for p in staging.glob(f"*__mypyc{ext_suffix()}")]
        if len(groups) != 1:
            return _skip(f"expected one shared mypyc library in the build, found {len(groups)}")
        manifest = {"ext_suffix": ext_suffix(), "group": groups[0], "sources": keys}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"build_accel: compiled {len(ACCEL_MODULES)} modules into {out}", file=sys.stderr)
    return 0


def _up_to_date(out: Path) -> bool:
    """A build of exactly ``ACCEL_MODULES``, from exactly their current sources."""
    files = fresh_build(out)
    wanted = {module_name(source) for source in ACCEL_MODULES}
    return files is not None and {name for name in files if not name.endswith("__mypyc")} == wanted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=BUILD_DIR, help="the build folder (default build/accel)")
    parser.add_argument(
        "--if-stale", action="store_true", help="do nothing when the build matches the sources"
    )
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    if out == ROOT or (ROOT in out.parents and out.parts[len(ROOT.parts)] != "build"):
        parser.error("--out must be outside the source tree or under its build/ folder")
    if args.if_stale and _up_to_date(out):
        return 0
    return build(out)


if __name__ == "__main__":
    sys.exit(main())
