"""The examples in the docstrings of ``src/binlake`` run, and say what they print.

Every module whose source holds a ``>>>`` example is imported and its docstrings' examples run with
:mod:`doctest` (the module's own names in scope, as ``python -m doctest`` does).  A module that needs an optional
package which is not installed (the ``spark`` extra: pyspark, pyarrow, deltalake, pandas) is skipped, saying which;
CI installs them all.
"""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
# packages some modules import at module level that `pip install binlake` does not bring
OPTIONAL = {"pyspark", "pyarrow", "deltalake", "pandas"}


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(_name(p) for p in (SRC / "binlake").rglob("*.py") if ">>>" in p.read_text(encoding="utf-8"))


def _import(name: str) -> object:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing = (e.name or "").split(".")[0]
        if missing in OPTIONAL:
            pytest.skip(f"{name} needs {missing}, not installed (pip install 'binlake[spark]')")
        raise


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name: str) -> None:
    module = _import(name)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name) if t.examples]
    assert tests, f"{name} shows >>> examples, but none in a docstring doctest finds"
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()
    assert runner.tries > 0


def test_every_example_is_found() -> None:
    """The modules above hold the examples there are (so a change in how they are found cannot skip them)."""
    assert len(MODULES) > 60
    count = sum(p.read_text(encoding="utf-8").count(">>> ") for p in (SRC / "binlake").rglob("*.py"))
    assert count > 200
