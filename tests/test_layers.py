"""The layers of docs/architecture.md, checked on the import graph of the sources.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``, because each one
is an arrow a later change can turn into a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("broker", "admin", "cli")

# importer package -> packages it must never import
FORBIDDEN = {
    "broker.protocol": (
        "broker.remoting",
        "broker.client",
        "broker.server",
        "broker.namesrv",
        "broker.grpc",
        "broker.acl",
        "broker.store",
        "admin",
        "cli",
    ),
    "broker.store": ("broker.remoting", "broker.client", "broker.server", "broker.namesrv", "broker.grpc"),
    "broker.remoting": ("broker.client", "broker.server", "broker.namesrv", "broker.grpc", "broker.acl"),
    "broker.acl": ("broker.client", "broker.server", "broker.namesrv", "broker.grpc"),
    "broker.server": ("broker.client", "broker.grpc", "broker.node", "admin", "cli"),
    "broker.namesrv": ("broker.client", "broker.server", "broker.grpc", "admin", "cli"),
    "broker.grpc": ("broker.client", "broker.node", "admin", "cli"),
    "broker.client": ("broker.server", "broker.namesrv", "broker.grpc", "broker.node", "admin", "cli"),
    "admin": ("cli",),
}


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imported(tree: ast.AST, importer: str, is_package: bool) -> Iterator[str]:
    package = importer if is_package else importer.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if _is_module(sub) else base


@cache
def graph() -> dict[str, frozenset[str]]:
    """Project module -> the project modules it imports."""
    edges: dict[str, frozenset[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = module_of(path)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            targets = _imported(tree, name, path.name == "__init__.py")
            edges[name] = frozenset(t for t in targets if t.split(".")[0] in PACKAGES and t != name)
    return edges


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_sees_imports() -> None:
    """The walk itself finds what it must: a module-level, a relative-free from-import and a lazy one."""
    edges = graph()
    assert "broker.remoting.channel" in edges["broker.remoting.server"]
    assert "broker.protocol.remoting" in edges["broker.remoting.channel"]


@pytest.mark.parametrize("importer", sorted(FORBIDDEN))
def test_no_forbidden_arrow(importer: str) -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph().items()
        if _within(module, importer)
        for target in targets
        for banned in FORBIDDEN[importer]
        if _within(target, banned)
    )
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(wrong)


def _package(module: str) -> str:
    """``broker.server.ha.processor`` -> ``broker.server``; ``admin.service.base`` -> ``admin``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "broker" and len(parts) > 1 else parts[0]


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``edges`` (as the path around it), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_cycle_between_packages() -> None:
    """Servers, gRPC, ACL, transport, SDK, store and codecs import each other one way only."""
    edges: dict[str, set[str]] = {}
    for module, targets in graph().items():
        for target in targets:
            if _package(module) != _package(target):
                edges.setdefault(_package(module), set()).add(_package(target))
    assert _cycle(edges) is None, " -> ".join(_cycle(edges) or [])


def _reachable(edges: dict[str, frozenset[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen


def test_grpc_is_in_no_import_cycle_with_the_servers() -> None:
    """The gRPC service sits above the messaging core: nothing it reaches outside broker/grpc leads
    back to it (the package counted as one node)."""

    def node(module: str) -> str:
        return "broker.grpc" if _within(module, "broker.grpc") else module

    edges: dict[str, set[str]] = {}
    for module, targets in graph().items():
        edges.setdefault(node(module), set()).update(node(t) for t in targets if node(t) != node(module))
    frozen = {k: frozenset(v) for k, v in edges.items()}
    assert "broker.grpc" not in _reachable(frozen, "broker.grpc")
    assert _reachable({"a": frozenset({"b"}), "b": frozenset({"a"})}, "a") == {"a", "b"}


def test_grpc_calls_the_core_not_the_processors() -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph().items()
        if _within(module, "broker.grpc")
        for target in targets
        if target.endswith("_processor")
    )
    assert not wrong, "gRPC imports remoting processors:\n" + "\n".join(wrong)


SERVERS = ("broker.server", "broker.namesrv", "broker.controller", "broker.grpc", "broker.acl")


@pytest.mark.parametrize("package", SERVERS)
def test_no_cycle_inside_a_server_package(package: str) -> None:
    """Module by module, type-only imports counted: a part names what it uses as a Protocol of its
    own instead of importing the class that composes it."""
    edges = {
        module: {target for target in targets if _within(target, package)}
        for module, targets in graph().items()
        if _within(module, package)
    }
    assert _cycle(edges) is None, " -> ".join(_cycle(edges) or [])


def test_only_the_node_takes_the_whole_broker() -> None:
    """``Broker`` is the composition root: the processors, services and the messaging core it wires
    (and gRPC above them) name the broker parts they use as ``Protocol``s instead."""
    wrong = sorted(
        module
        for module, targets in graph().items()
        if (_within(module, "broker.server") or _within(module, "broker.grpc"))
        and module != "broker.server.broker"
        and "broker.server.broker" in targets
    )
    assert not wrong, "modules that import Broker instead of naming what they use: " + ", ".join(wrong)
