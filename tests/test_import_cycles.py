"""No import cycles among perfprobe's modules: each layer depends only downward.

The rule: every `import perfprobe...` and `from perfprobe... import ...` (relative ones resolved)
in every module under perfprobe/ is an edge, wherever it is written — at module level, in a class
body, or inside a function. Function-level imports count: a lazy import (kept inside a function so
that `perfprobe --help` loads no numba, or so that a module loads only when its probe runs) defers
when the import happens, not what depends on what, and both cycles issue 26 named ran through one
(probe.py's lazy import of kernels/cuda_runtime.py, fleet/reports.py's lazy import of
fleet/baseline.py). Only imports under `if TYPE_CHECKING:` are left out, since they never run.

An edge goes to the module named: `from perfprobe.fleet import metrics` is an edge to
perfprobe.fleet.metrics, `from perfprobe.engine.config import RunConfig` to perfprobe.engine.config. The parent
packages Python initialises on the way (perfprobe.fleet's __init__) are not edges, or every package
would be in a cycle with its own submodules. Dynamic imports by name (registry.py's
`importlib.import_module(PROBE_MODULES[name])`, a probe's `measure_module`) are data, not edges.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import perfprobe

PACKAGE = Path(perfprobe.__file__).parent


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module under the package, by dotted name (a package by its own name, for __init__)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in the tree, at any depth, except those under `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted `name` that is a module of ours (None: not ours)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def edges_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The perfprobe modules that module `name` (at `path`) imports, anywhere in it."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            owners = [_owner(alias.name, modules) for alias in node.names]
        else:
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            owners = [_owner(f"{base}.{alias.name}", modules) for alias in node.names]
        targets.update(o for o in owners if o is not None and o != name)
    return targets


@cache
def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_names(package)
    return {name: edges_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of two or more modules (Tarjan), as one cycle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(_cycle_through(sorted(group), graph))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _cycle_through(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One closed path inside a strongly connected group, from its first module back to it."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    return paths[node] + [start]
                if nxt not in paths:
                    paths[nxt] = paths[node] + [nxt]
                    following.append(nxt)
        frontier = following
    return group  # unreachable for a strongly connected group


def test_the_walk_sees_the_package():
    graph = import_graph()
    assert len(graph) > 50 and "perfprobe.errors" in graph
    # a module-level edge, a function-level (lazy) one, a relative-free `from package import module`
    assert "perfprobe.errors" in graph["perfprobe.kernels.cuda_runtime"]
    assert "perfprobe.kernels.cuda_runtime" in graph["perfprobe.engine.probe"]
    assert "perfprobe.fleet.metrics" in graph["perfprobe.fleet.peers"]


def test_errors_is_a_leaf():
    assert import_graph()["perfprobe.errors"] == set()


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_a_planted_cycle_is_named(tmp_path):
    package = tmp_path / "perfprobe"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from perfprobe.sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def f():\n    from . import c\n")
    (package / "sub" / "c.py").write_text("import perfprobe.a\n")
    (package / "sub" / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import perfprobe.a\n")
    (package / "e.py").write_text("from perfprobe.sub.d import x\n")
    graph = import_graph(package)
    assert cycles(graph) == [["perfprobe.a", "perfprobe.sub.b", "perfprobe.sub.c", "perfprobe.a"]]
