"""The public surface of ``import binlake``: what the README's "From Python" promises is there, in one place.

``binlake/__init__.py`` names each public name three times (the imports type checkers read, ``__all__``, and the
module each name loads from on first use): these tests keep them equal, and check that every event class and every
error class is exported.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import binlake
from binlake import errors
from binlake.events.base import Event, registry


def test_the_readme_import_line_works() -> None:
    code = "from binlake import read_events, Decoder, BinlogError, RowsEvent, TableMapEvent, ABSENT; print(ABSENT)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "ABSENT\n"


def test_the_three_lists_agree() -> None:
    tree = ast.parse(Path(binlake.__file__).read_text(encoding="utf-8"))
    checking = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    imported = {
        alias.name: node.module for node in checking.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    assert imported == binlake._PUBLIC
    assert binlake.__all__ == sorted(binlake._PUBLIC)


def test_every_name_loads_from_its_module() -> None:
    for name in binlake.__all__:
        value = getattr(binlake, name)
        module = sys.modules[binlake._PUBLIC[name]]
        assert getattr(module, name) is value, name
    assert set(binlake.__all__) <= set(dir(binlake))


def test_every_event_class_and_error_is_exported() -> None:
    exported = {getattr(binlake, name) for name in binlake.__all__}
    assert registry()  # loads every event family
    classes = {
        cls
        for module in list(sys.modules.values())
        if getattr(module, "__name__", "").startswith("binlake.events.")
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, Event) and cls.__module__ == module.__name__
    }
    assert len(classes) > 30 and classes <= exported, sorted(c.__name__ for c in classes - exported)
    error_classes = {
        cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.BinlogError)
    }
    assert len(error_classes) == 14 and error_classes <= exported


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        binlake.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_the_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The code of the README's "From Python", on the bundled example binlog."""
    repo = Path(__file__).resolve().parents[1]
    readme = (repo / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(code.replace('"binlog.000042"', repr(str(repo / "examples" / "example-bin.000001"))), {})
    out = capsys.readouterr().out
    assert "WRITE_ROWS_EVENT" in out and "insert shop orders" in out
