"""Where a lake's tasks run: one small :class:`Runner` protocol, ``map(fn, items) -> results``, with this process as
one runner (:class:`LocalRunner`) and Spark's executors as another (:class:`binlake.spark.runner.SparkRunner`).

What crosses to a task and back is a :class:`Record`: a typed, versioned record with its own JSON (as
:mod:`binlake.lake.records`' are), never a pickled object, so a driver and executors of different binlake versions
fail with a clear message instead of unpickling one another's classes.  ``fn`` itself is a module-level function,
which Spark pickles by its name.  :func:`pack` names the record's class beside its JSON (classes of ``binlake``
only), :func:`unpack` reads it back.  The local runner hands the records over as they are (no process boundary:
a small batch's merge is a few milliseconds, its records' JSON would be a good part of it).

Example::

    results = runner.map(merge_range, tasks)     # a MergeResult per MergeTask, in order
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from binlake.lake.records import LakeFormatError

__all__ = ["LocalRunner", "Record", "Runner", "pack", "unpack"]


class Record(Protocol):
    """A value that crosses to a task or back: its JSON text, and a class method reading it."""

    def to_json(self) -> str: ...


In = TypeVar("In", bound=Record)
Out = TypeVar("Out", bound=Record)


class Runner(Protocol):
    """Runs ``fn`` on every item (possibly in other processes, side by side); the results in the items' order.  A
    :class:`~binlake.errors.BinlogError` raised by ``fn`` reaches the caller as itself."""

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]: ...


def pack(value: Record) -> str:
    """``value`` as JSON naming its class (``module:QualName``) beside its own JSON."""
    kind = type(value)
    return json.dumps({"type": f"{kind.__module__}:{kind.__qualname__}", "record": value.to_json()})


def unpack(text: str) -> Any:
    """The record :func:`pack` wrote (its class's ``from_json`` checks its version)."""
    v = json.loads(text)
    module, _, name = str(v["type"]).partition(":")
    if module != "binlake" and not module.startswith("binlake."):
        raise LakeFormatError(f"a task record of class {v['type']!r}: not one of binlake's")
    kind = getattr(importlib.import_module(module), name, None)
    if kind is None:
        raise LakeFormatError(f"a task record of class {v['type']!r}, which this binlake does not have")
    return kind.from_json(v["record"])


class LocalRunner:
    """The tasks in this process, one after the other (each task's memory is bounded by its own input, so running
    them in turn keeps the process' peak to one task's)."""

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
        return [fn(item) for item in items]
