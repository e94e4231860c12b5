"""Where the tasks of an ingest, a snapshot and a current-state merge run: one small :class:`Runner` protocol,
``map(fn, items) -> results``, with this process as one runner (:class:`InProcessRunner`) and Spark's executors as
another (:class:`binlake.spark.runner.SparkRunner`).  The code that plans the tasks and lands their results knows
no more of where they ran.

Every item and every result is a :class:`Record`: a typed value with its own JSON, read back by its class's
``from_json`` (which checks its format version where it has one): a decode task's
:class:`~binlake.lake.records.Split` in and :class:`~binlake.lake.records.TaskReport` out, a snapshot's
:class:`~binlake.lake.records.SnapshotChunk` and :class:`~binlake.lake.records.ChunkDone`, a merge's
:class:`~binlake.lake.merge.MergeTask` and :class:`~binlake.lake.merge.MergeResult`.  A runner of other processes
sends them as :func:`pack` text (the class named beside its JSON, classes of ``binlake`` only) and reads them with
:func:`unpack`, so a driver and executors of different binlake versions fail with a clear message instead of
unpickling one another's classes.  :class:`InProcessRunner` hands them over as they are: there is no process
boundary, and a small batch's merge takes a few milliseconds, of which its records' JSON would be a good part.

``fn`` goes to the tasks pickled (a module-level function by its name, a :func:`functools.partial` or closure
whole with what it binds: the batch's plan, never a secret).  A :class:`~binlake.errors.BinlogError` a task raises
reaches the caller as itself, with its file and position.

Example::

    reports = runner.map(partial(write_task, lake, layouts, schemas, pk, plan), splits)  # a TaskReport per Split
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from binlake.lake.records import LakeFormatError

__all__ = ["InProcessRunner", "Record", "Runner", "pack", "unpack"]


class Record(Protocol):
    """A value that crosses to a task or back: its JSON (text, or a JSON object), which its class's ``from_json``
    reads back."""

    def to_json(self) -> str | dict[str, Any]: ...


In = TypeVar("In", bound=Record)
Out = TypeVar("Out", bound=Record)


class Runner(Protocol):
    """Runs ``fn`` on every item (possibly in other processes, side by side); the results in the items' order.  A
    :class:`~binlake.errors.BinlogError` raised by ``fn`` reaches the caller as itself."""

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]: ...


def pack(value: Record) -> str:
    """``value`` as JSON text naming its class (``module:QualName``) beside its own JSON."""
    kind = type(value)
    return json.dumps({"type": f"{kind.__module__}:{kind.__qualname__}", "record": value.to_json()})


def unpack(text: str) -> Any:
    """The record :func:`pack` wrote; :class:`~binlake.lake.records.LakeFormatError` when it is not one of
    binlake's classes or this binlake cannot read it (another version's)."""
    v = json.loads(text)
    module, _, name = str(v["type"]).partition(":")
    if module != "binlake" and not module.startswith("binlake."):
        raise LakeFormatError(f"a task record of class {v['type']!r}: not one of binlake's")
    kind = getattr(importlib.import_module(module), name, None)
    if kind is None:
        raise LakeFormatError(f"a task record of class {v['type']!r}, which this binlake does not have")
    try:
        return kind.from_json(v["record"])
    except (KeyError, TypeError, ValueError) as e:
        raise LakeFormatError(f"a task record of class {v['type']!r} this binlake cannot read ({e!r})") from e


class InProcessRunner:
    """The tasks in this process, one after the other, their records handed over as they are (each task's memory
    is bounded by its own input, so running them in turn keeps the process's peak to one task's)."""

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
        return [fn(item) for item in items]
