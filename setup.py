"""The package build: the hot modules compiled with mypyc beside their sources, as black and mypy ship.

A wheel (``pip install .``, ``python -m build``) holds, next to each module listed under
``[tool.rmqkit] compiled`` in pyproject.toml, its extension module, which Python imports in place of
the ``.py``: an installed rmqkit runs the compiled code with nothing to check at import. The same
sources are compiled: there is no second implementation.

Pure Python instead, with the reason printed: ``RMQ_NO_ACCEL=1``, no mypyc (it ships with mypy) or no
C compiler; ``RMQ_ACCEL_STRICT=1`` turns those into failures. An editable install (``pip install -e``)
stays pure: its sources are the working tree, where an extension would shadow every later edit;
``make install`` builds the extensions in place (``setup.py build_ext --inplace``) and rebuilds them
whenever a compiled source changes.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tomllib
from pathlib import Path

from setuptools import Extension, setup  # type: ignore[import-untyped,unused-ignore]

ROOT = Path(__file__).resolve().parent
# the commands that build extensions; metadata, sdist and editable builds compile nothing
BUILDS = {"build", "build_ext", "bdist_wheel", "install"}


def compiled_modules() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        modules: list[str] = tomllib.load(f)["tool"]["rmqkit"]["compiled"]
    return modules


def _skip(reason: str) -> list[Extension]:
    if os.environ.get("RMQ_ACCEL_STRICT") == "1":
        sys.exit(f"setup.py: error: cannot compile the hot modules: {reason}")
    print(f"setup.py: the hot modules stay plain Python: {reason}", file=sys.stderr)
    return []


def extensions() -> list[Extension]:
    if not BUILDS & set(sys.argv[1:]):
        return []
    if os.environ.get("RMQ_NO_ACCEL") == "1":
        return _skip("RMQ_NO_ACCEL=1")
    try:
        from mypyc.build import mypycify
    except ImportError:
        return _skip("mypyc is not installed (it ships with mypy)")
    compiler = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return _skip(f"no C compiler ({compiler})")
    # Type errors are `make typecheck`'s to find (strict, with every dependency present); the build
    # reads no mypy configuration, so an isolated build environment without the runtime dependencies
    # compiles the same modules, with those dependencies' values typed Any.
    flags = ["--config-file=", "--ignore-missing-imports"]
    # one shared library: the modules call each other natively, so they load all together or not at all
    return mypycify(flags + compiled_modules(), group_name="rmqkit", opt_level="3")


setup(ext_modules=extensions())
