"""The import graph of ``src/binlake``: layers import downward, and the only cycle is the event registry's.

Every ``import`` that runs (at module level or inside a function, not under ``TYPE_CHECKING``) is an edge; the
strongly connected components of that graph are its cycles.  The event families register themselves when
``binlake.events.base`` loads ``binlake.events.families`` on first use (:func:`binlake.events.base.registry`), which
imports them all, each importing ``base``: that one edge is the registry's and is left out.  Any other cycle is a
layering error (such as events and the row decoder importing each other).  Imports only for type checkers are
not edges: they never run.

The same check on ``import binlake``: the package stays cheap to import (the public names load on first use).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
REGISTRY_EDGES = {("binlake.events.base", "binlake.events.families")}


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "binlake").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _runtime_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The binlake modules ``name`` imports when it runs (``from pkg import submodule`` names the submodule)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.orelse:
                    visit_one(stmt)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            resolved = resolve(target)
            if resolved is not None and resolved != name and resolved.startswith("binlake"):
                found.add(resolved)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycle_but_the_event_registry() -> None:
    modules = _modules()
    graph = {
        name: {t for t in _runtime_imports(name, path, modules) if (name, t) not in REGISTRY_EDGES}
        for name, path in modules.items()
    }
    assert len(graph) > 60
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_registry_edge_is_the_only_one_left_out() -> None:
    """With the registry edge back in, the event families form the one cycle (so the check above is not vacuous)."""
    modules = _modules()
    graph = {name: _runtime_imports(name, path, modules) for name, path in modules.items()}
    (cycle,) = _cycles(graph)
    assert {"binlake.events.base", "binlake.events.families", "binlake.events.rows"} <= set(cycle)
    assert all(m.startswith("binlake.events.") for m in cycle)


@pytest.mark.parametrize("name", ["binlake"])
def test_importing_the_package_loads_nothing_else(name: str) -> None:
    """``import binlake`` imports no other binlake module (the public names load on first use)."""
    code = f"import sys, {name}; print(sorted(m for m in sys.modules if m.startswith('binlake')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['binlake']"
