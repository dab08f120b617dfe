"""Which build of the hot modules runs: their mypyc extensions or their sources.

The package build (``setup.py``) compiles the hot modules with mypyc into extension modules beside
their sources, which Python imports in place of the ``.py`` files: nothing is checked at import.
``RMQ_NO_ACCEL=1`` in the environment runs the sources all the same (to compare, or to rule the build
out when hunting a bug): ``broker/__init__.py`` then puts :class:`SourcesFirst` in front of the import
system, and only then.
"""

from __future__ import annotations

import importlib.machinery
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

_SOURCES = (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES)


def running() -> bool:
    """True when the hot modules run compiled (one of them stands for all: they load as one group)."""
    from broker.protocol import javahash

    return not (javahash.__file__ or "").endswith(".py")


class SourcesFirst:
    """A meta path finder that finds ``broker`` modules as their sources, never their extensions
    (importlib.abc is not imported: it costs ~6 ms at every start)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is None or not fullname.startswith("broker."):
            return None
        for entry in path:
            spec = importlib.machinery.FileFinder(entry, _SOURCES).find_spec(fullname, target)
            if spec is not None and spec.loader is not None:
                return spec
        return None
