"""The import graph of ``src/binlake``: no cycle between modules, layers of packages that import downward only, and
no private name taken from another module.

Every ``import`` is an edge: at module level or inside a function, and under ``TYPE_CHECKING`` too for the layers
(a lower layer names no upper layer's types; it takes a Protocol instead, as the decoder takes the DDL tracker
through :class:`binlake.events.context.DdlTracker`).  The module-cycle check counts the imports that run: a
module may name a sibling's types for a type checker while the sibling imports it.

The layers, top to bottom, are those of the design's ARCHITECTURE.md (:data:`LAYERS`); a module imports its own
layer or those below.  Packages (``binlake.X``, and the subpackages of a package) form no cycle, whatever their
layers.  Today's exceptions are listed, each edge named, in :data:`KNOWN_VIOLATIONS`: the check tolerates those
and reports them (a warning), fails on any other, and fails on an entry that no longer happens, so the list can
only shrink.

The same checks on ``import binlake``: the package stays cheap to import (the public names load on first use).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# The layers, top to bottom: each a name and the packages or modules in it (a package stands for all it holds).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("cli", ("binlake.cli", "binlake.__main__")),
    ("spark", ("binlake.spark",)),
    ("snapshot", ("binlake.snapshot",)),
    ("ingest", ("binlake.ingest",)),
    ("lake", ("binlake.lake",)),
    ("render", ("binlake.render",)),
    ("changes", ("binlake.changes",)),
    # the package's face (binlake/__init__.py): the public names of the sources and the core, loaded on first use
    ("api", ("binlake",)),
    (
        "sources",
        (
            "binlake.reader",
            "binlake.binlogs",
            "binlake.storage",
            "binlake.replication",
            "binlake.crypto",
            "binlake.recovery",
            "binlake.metrics",
        ),
    ),
    ("transactions", ("binlake.transactions",)),
    ("sql", ("binlake.sql", "binlake.schema", "binlake.columns")),
    (
        "core",
        (
            "binlake.decoder",
            "binlake.rowdecoder",
            "binlake.events",
            "binlake.values",
            "binlake.coltypes",
            "binlake.codes",
            "binlake.wire",
            "binlake.errors",
            "binlake.version",
            "binlake.trace",
            "binlake._compiled",
            "binlake._speedups",
            "binlake._framing",
            "binlake._columnar",
        ),
    ),
]
# beside the layers: test tooling, which may import any layer and which no layer imports
ASIDE = ("binlake.testing",)

# (importer, imported) module edges that break the layers today, tolerated until the change that removes them.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    """Every module of binlake by name: its source, or its stub (``.pyi``) for a compiled extension."""
    out: dict[str, Path] = {}
    for path in sorted((SRC / "binlake").rglob("*.py*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if path.suffix == ".py" or name not in out:
            out[name] = path
    return out


def _imports(name: str, path: Path, modules: Mapping[str, Path]) -> dict[str, bool]:
    """The binlake modules ``name`` imports, each with whether an import of it runs (False: only under
    ``TYPE_CHECKING``).  ``from pkg import submodule`` names the submodule."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    found: dict[str, bool] = {}

    def visit(node: ast.AST, runs: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.body:
                    visit_one(stmt, False)
                for stmt in child.orelse:
                    visit_one(stmt, runs)
                continue
            visit_one(child, runs)

    def visit_one(node: ast.AST, runs: bool) -> None:
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
                found[resolved] = found.get(resolved, False) or runs
        visit(node, runs)

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return found


def _graph(*, runtime_only: bool) -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {t for t, runs in _imports(name, path, modules).items() if runs or not runtime_only}
        for name, path in modules.items()
    }


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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


def _within(module: str, unit: str) -> bool:
    """Is ``module`` the unit or in it (the root package ``binlake`` in LAYERS is its own module only)?"""
    return module == unit or (unit != "binlake" and module.startswith(unit + "."))


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module`` (0 is the top), ``None`` for the tooling aside."""
    if any(_within(module, a) for a in ASIDE):
        return None
    best: tuple[int, int] | None = None  # (length of the longest match, layer)
    for i, (_, units) in enumerate(LAYERS):
        for unit in units:
            if _within(module, unit) and (best is None or len(unit) > best[0]):
                best = (len(unit), i)
    if best is None:
        raise LookupError(f"{module} is in no layer: place it in LAYERS")
    return best[1]


def _unit(module: str, package: str) -> str | None:
    """The child of ``package`` (a subpackage or a module) that holds ``module``; ``None`` for the package itself
    or a module outside it."""
    if not module.startswith(package + "."):
        return None
    return package + "." + module[len(package) + 1 :].split(".")[0]


def violations(graph: Mapping[str, Iterable[str]]) -> dict[tuple[str, str], str]:
    """Every module edge of ``graph`` that breaks the layers: an import of a higher layer (or of the tooling), or,
    inside one layer, an import between two packages that import each other, directly or around a cycle.  The
    packages are the children of ``binlake`` (its subpackages and top-level modules, as the layers name them) and
    the subpackages of each package; modules inside a package may name each other's types (the module check above
    keeps their imports that run acyclic).  A cycle through two layers holds an upward import, reported as such."""
    out: dict[tuple[str, str], str] = {}
    edges = [(a, b) for a, targets in graph.items() for b in targets]
    for a, b in edges:
        la, lb = layer_of(a), layer_of(b)
        if lb is None and la is not None:
            out[(a, b)] = "imports the test tooling"
        elif la is not None and lb is not None and lb < la:
            out[(a, b)] = f"upward: {LAYERS[la][0]} imports {LAYERS[lb][0]}"
    names = {*graph, *(b for _, b in edges)}
    packages = {".".join(m.split(".")[:i]) for m in names for i in range(1, m.count(".") + 1)}
    for package in sorted(packages):
        units: dict[str, set[str]] = {}
        for a, b in edges:
            ua, ub = _unit(a, package), _unit(b, package)
            if ua is None or ub is None or ua == ub or layer_of(a) != layer_of(b):
                continue
            if package == "binlake" or (ua in packages and ub in packages):
                units.setdefault(ua, set()).add(ub)
        for cycle in _cycles(units):
            members = set(cycle)
            for a, b in edges:
                ua, ub = _unit(a, package), _unit(b, package)
                if ua in members and ub in members and ua != ub and layer_of(a) == layer_of(b):
                    out.setdefault((a, b), "a cycle between packages: " + " <-> ".join(cycle))
    return out


def test_no_import_cycle_between_modules() -> None:
    graph = _graph(runtime_only=True)
    assert len(graph) > 60
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_module_has_a_layer() -> None:
    for name in _modules():
        layer_of(name)  # raises for a module outside every layer


def test_layers_import_downward_and_packages_form_no_cycle() -> None:
    """Type-only imports included; the known violations are tolerated (and reported), and must still happen."""
    found = violations(_graph(runtime_only=False))
    new = {edge: why for edge, why in found.items() if edge not in KNOWN_VIOLATIONS}
    assert new == {}, "imports against the layers (ARCHITECTURE.md): " + "; ".join(
        f"{a} -> {b} ({why})" for (a, b), why in sorted(new.items())
    )
    gone = sorted(set(KNOWN_VIOLATIONS) - set(found))
    assert gone == [], f"fixed, so take them off KNOWN_VIOLATIONS: {gone}"
    if KNOWN_VIOLATIONS:
        warnings.warn(
            f"{len(KNOWN_VIOLATIONS)} known layer violations tolerated: "
            + "; ".join(f"{a} -> {b}" for a, b in sorted(KNOWN_VIOLATIONS)),
            stacklevel=1,
        )


def test_the_layer_check_finds_what_breaks_the_layers() -> None:
    """Upward imports, type-only or not, package cycles inside one layer and inside a package, the tooling."""
    graph = {
        "binlake.events.context": {"binlake.schema"},  # core -> sql: upward
        "binlake.reader": {"binlake.storage"},  # one layer, importing each other: a cycle
        "binlake.storage": {"binlake.reader"},
        "binlake.render.dump.printer": {"binlake.render.changes.sql"},  # two subpackages importing each other
        "binlake.render.changes.sql": {"binlake.render.dump.rowtext"},
        "binlake.render.dump.rowtext": set(),
        "binlake.decoder": {"binlake.testing.mariadb", "binlake.events.base"},  # the tooling; and a fine edge
        "binlake.schema": {"binlake.events.query"},  # sql -> core: fine
        "binlake.cli.ingest": {"binlake"},  # the public names, from above: fine
        "binlake.testing.mariadb": {"binlake.spark.session"},  # the tooling imports anything
    }
    found = violations(graph)
    assert set(found) == {
        ("binlake.events.context", "binlake.schema"),
        ("binlake.reader", "binlake.storage"),
        ("binlake.storage", "binlake.reader"),
        ("binlake.render.dump.printer", "binlake.render.changes.sql"),
        ("binlake.render.changes.sql", "binlake.render.dump.rowtext"),
        ("binlake.decoder", "binlake.testing.mariadb"),
    }
    assert found[("binlake.events.context", "binlake.schema")] == "upward: core imports sql"
    with pytest.raises(LookupError):
        layer_of("binlake.newthing")


def test_type_only_imports_count_for_the_layers() -> None:
    modules = _modules()
    imports = _imports("binlake.reader", modules["binlake.reader"], modules)
    assert imports["binlake._framing"] is False  # the compiled module's stub, named under TYPE_CHECKING only
    assert imports["binlake.decoder"] is True


# -- the command line ------------------------------------------------------------------------------------------------

# where argparse may be imported: the command line, and the test tooling's own small commands
ARGPARSE_HOMES = ("binlake.cli", "binlake.testing")


def argparse_importers(modules: Mapping[str, Path]) -> list[str]:
    """The modules outside :data:`ARGPARSE_HOMES` that import argparse (at module level or in a function, a doctest
    aside): a library module takes typed arguments, and its command line lives in ``binlake.cli``."""
    out = []
    for name, path in modules.items():
        if path.suffix != ".py" or any(_within(name, home) for home in ARGPARSE_HOMES):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(n == "argparse" or n.startswith("argparse.") for n in names):
                out.append(f"{name} (line {node.lineno})")
    return sorted(out)


def test_argparse_is_imported_only_by_the_command_line() -> None:
    modules = _modules()
    assert "binlake.cli.report" in modules  # (the command line is where this check expects it)
    assert argparse_importers(modules) == []


def test_the_argparse_check_finds_them(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    import argparse\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("from argparse import Namespace\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("import argparse\n", encoding="utf-8")
    (tmp_path / "d.py").write_text('"""\n>>> import argparse\n"""\n', encoding="utf-8")
    modules = {
        "binlake.lake.a": tmp_path / "a.py",
        "binlake.render.b": tmp_path / "b.py",
        "binlake.cli.c": tmp_path / "c.py",
        "binlake.d": tmp_path / "d.py",
    }
    assert argparse_importers(modules) == ["binlake.lake.a (line 2)", "binlake.render.b (line 1)"]


# -- private names -------------------------------------------------------------------------------------------------


def private_names_taken(name: str, path: Path, modules: Mapping[str, Path]) -> list[str]:
    """Where module ``name`` takes a private name (``_x``, not a dunder) of another binlake module: ``from m import
    _x``, or ``m._x`` on a name bound to module ``m``.  Private *modules* (``binlake._speedups``) are fine: the
    underscore marks a module private to the package, whose names are shared inside it (h11's way)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound: dict[str, str] = {}  # local name -> the binlake module it is
    out: list[str] = []

    def private(attr: str) -> bool:
        return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            if not base.startswith("binlake"):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in modules:
                    bound[a.asname or a.name] = full
                elif private(a.name):
                    out.append(f"line {node.lineno}: from {base} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("binlake"):
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            dotted = ast.unparse(node.value)
            head, _, rest = dotted.partition(".")
            if head in bound:
                module = bound[head] + ("." + rest if rest else "")
                if module in modules and f"{module}.{node.attr}" not in modules and module != name:
                    out.append(f"line {node.lineno}: {dotted}.{node.attr}")
    return out


def test_no_private_name_is_taken_from_another_module() -> None:
    modules = _modules()
    taken = {
        name: found
        for name, path in modules.items()
        if path.suffix == ".py" and (found := private_names_taken(name, path, modules))
    }
    assert taken == {}


def test_the_private_name_check_finds_them(tmp_path: Path) -> None:
    modules = _modules()
    code = (
        "import binlake.render.dump.rowtext as rt\n"
        "import binlake\n"
        "from binlake import _speedups, __version__\n"
        "from binlake.render.dump.rowtext import _RENDER, RowText\n"
        "from binlake.render.dump import rowtext\n"
        "x = rt._line_texts, rowtext._SQL, binlake.render.dump.rowtext._SQL, rt.__name__, _speedups.x\n"
    )
    (tmp_path / "m.py").write_text(code, encoding="utf-8")
    found = private_names_taken("binlake.render.m", tmp_path / "m.py", modules)
    assert found == [
        "line 4: from binlake.render.dump.rowtext import _RENDER",
        "line 6: rt._line_texts",
        "line 6: rowtext._SQL",
        "line 6: binlake.render.dump.rowtext._SQL",
    ]


def private_attributes(tree: ast.Module) -> set[str]:
    """The private names (``_x``, not dunders) the classes of a module define: ``self._x = ...`` or ``cls._x =
    ...`` in a method, and the fields, methods and class attributes of their bodies."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            out.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    out.add(stmt.target.id)
                elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    out.add(stmt.name)
                elif isinstance(stmt, ast.Assign):
                    out.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return {a for a in out if a.startswith("_") and not (a.startswith("__") and a.endswith("__"))}


def foreign_private_attributes(tree: ast.Module, own: set[str], others: Mapping[str, set[str]]) -> list[str]:
    """Where a module touches ``x._a`` (``x`` not ``self`` or ``cls``) for a private ``_a`` that no class of its own
    defines but a class of another module does: one module reaching into another's objects (as dump's event
    printers once did into the printer's 20 private fields)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        if (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")) or node.attr in own:
            continue
        owners = sorted(m for m, attrs in others.items() if node.attr in attrs)
        if owners:
            out.append(f"line {node.lineno}: {ast.unparse(node)} ({', '.join(owners)})")
    return out


def test_no_private_attribute_of_another_modules_class_is_touched() -> None:
    trees = {
        name: ast.parse(path.read_text(encoding="utf-8")) for name, path in _modules().items() if path.suffix == ".py"
    }
    defined = {name: private_attributes(tree) for name, tree in trees.items()}
    touched = {
        name: found
        for name, tree in trees.items()
        if (found := foreign_private_attributes(tree, defined[name], {m: a for m, a in defined.items() if m != name}))
    }
    assert touched == {}


def test_the_private_attribute_check_finds_them() -> None:
    printer = ast.parse(
        "class P:\n    _size: int = 0\n    def __init__(self):\n        self._out = []\n    def _emit(self, t): ...\n"
    )
    handler = ast.parse("def h(p):\n    p._emit(p._header(1)); p._out.append(2); self._own = 1; p.__class__\n")
    defined = private_attributes(printer)
    assert defined == {"_size", "_out", "_emit"}
    assert foreign_private_attributes(handler, set(), {"m.printer": defined}) == [
        "line 2: p._emit (m.printer)",
        "line 2: p._out (m.printer)",
    ]


@pytest.mark.parametrize("name", ["binlake"])
def test_importing_the_package_loads_nothing_else(name: str) -> None:
    """``import binlake`` imports no other binlake module than the one holding its version (the public names load
    on first use)."""
    code = f"import sys, {name}; print(sorted(m for m in sys.modules if m.startswith('binlake')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['binlake', 'binlake.version']"
