"""The optional compiled extensions (``_speedups.c``, ``_columnar.c``, ``_framing.c``), imported where ``pip install``
built them.

Setting the environment variable ``BINLAKE_PURE_PYTHON`` (to anything non-empty) turns them all off: every path then
runs its pure-Python twin, which gives the same values and errors (CI runs the row tests both ways).

Example::

    _speedups = compiled("_speedups")   # the module, or None (not built, or BINLAKE_PURE_PYTHON set)
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "compiled"]

PURE_PYTHON_ENV = "BINLAKE_PURE_PYTHON"


def compiled(name: str) -> ModuleType | None:
    """The extension module ``binlake.<name>``, or ``None`` when it was not built or ``BINLAKE_PURE_PYTHON`` is set."""
    if os.environ.get(PURE_PYTHON_ENV):
        return None
    try:
        return importlib.import_module(f"binlake.{name}")
    except ImportError:
        return None
