"""Generates the protobuf classes and their typing stubs from ``broker/grpc/proto/messaging.proto``.

    python generate_proto.py [--out DIR]

``make proto`` runs it after an edit of the .proto; the generated ``messaging_pb2.py`` and
``messaging_pb2.pyi`` are committed beside it (an installed rmqkit needs no protoc), and
``tests/broker/grpc/test_generated_code.py`` fails when they are not what this generates. Needs the ``dev``
extra: protoc from grpcio-tools, the stubs from mypy-protobuf.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent / "broker" / "grpc" / "proto"
PROTO = "messaging.proto"


def generate(out: Path) -> None:
    plugin = shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit("generate_proto: protoc-gen-mypy is missing: install the dev extra (mypy-protobuf)")
    cmd = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"--plugin=protoc-gen-mypy={plugin}",
        f"-I{PROTO_DIR}",
        f"--python_out={out}",
        f"--mypy_out={out}",
        PROTO,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"generate_proto: protoc failed:\n{done.stdout}{done.stderr}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=PROTO_DIR, help="where to write (default: beside the .proto)"
    )
    generate(parser.parse_args(argv).out)


if __name__ == "__main__":
    main()
