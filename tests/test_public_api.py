"""The public surface of ``import binlake``: what "From Python" (docs/python.md) promises is there, in one place.

``binlake/__init__.py`` names each public name once, in the imports type checkers read; the module loads each name
from there on first use, and ``__all__`` is made from them.  These tests check that list works for type checkers
and at run time, and that every event class and every error class is exported.
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
from binlake.decoder import DECODERS
from binlake.events.base import Event


def test_the_readme_import_line_works() -> None:
    code = "from binlake import read_events, Decoder, BinlogError, RowsEvent, TableMapEvent, ABSENT; print(ABSENT)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "ABSENT\n"


def test_the_one_list_is_the_type_checking_imports() -> None:
    tree = ast.parse(Path(binlake.__file__).read_text(encoding="utf-8"))
    checking = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    aliases = [alias for node in checking.body if isinstance(node, ast.ImportFrom) for alias in node.names]
    assert len(aliases) == len(checking.body) > 50  # one name per import, nothing else in the block
    assert all(alias.asname == alias.name for alias in aliases)  # `X as X`: re-exported for mypy --strict
    imported = {
        alias.name: node.module for node in checking.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    assert imported == binlake._public()
    assert binlake.__all__ == sorted(imported)
    assert "Decoder" in binlake.__all__ and "__all__" not in vars(binlake)


def test_every_name_loads_from_its_module() -> None:
    for name in binlake.__all__:
        value = getattr(binlake, name)
        module = sys.modules[binlake._public()[name]]
        assert getattr(module, name) is value, name
    assert set(binlake.__all__) <= set(dir(binlake))


def test_every_event_class_and_error_is_exported() -> None:
    exported = {getattr(binlake, name) for name in binlake.__all__}
    assert DECODERS  # the decoder imports every event family
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
    assert len(error_classes) == 15 and error_classes <= exported


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        binlake.no_such_name  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize("page", ["README.md", "docs/python.md"])
def test_the_documented_example_runs(page: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The code of "From Python" (the README's and the documentation's), on the bundled example binlog."""
    repo = Path(__file__).resolve().parents[1]
    text = (repo / page).read_text(encoding="utf-8")
    section = text.split("From Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(code.replace('"binlog.000042"', repr(str(repo / "examples" / "example-bin.000001"))), {})
    out = capsys.readouterr().out
    assert "WRITE_ROWS_EVENT" in out and "insert shop orders" in out


def test_star_import_gives_every_public_name() -> None:
    code = (
        "from binlake import *; import binlake; "
        "print(sorted(k for k in dir() if not k.startswith('_') and k != 'binlake') == binlake.__all__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "True\n"
