"""Where the tasks of an ingest or a snapshot run: one small :class:`Runner` protocol, ``map(fn, items) -> results``,
with this process as one runner (:class:`InProcessRunner`) and Spark's executors as another
(:class:`binlake.spark.runner.SparkRunner`).  The code that plans the tasks and lands their results knows no more
of where they ran.

``fn`` and each item may cross to another process (pickled); a task returns the JSON of a typed, versioned record
(:mod:`binlake.lake.records`' :class:`~binlake.lake.records.TaskReport`, :class:`~binlake.lake.records.ChunkDone`),
which the caller reads back, so a driver and executors of different binlake versions fail with a clear message
instead of unpickling one another's classes.  A :class:`~binlake.errors.BinlogError` a task raises reaches the
caller as itself, with its file and position.

Example::

    reports = [TaskReport.from_json(r) for r in runner.map(task, splits)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

__all__ = ["InProcessRunner", "Runner"]

T = TypeVar("T")
R = TypeVar("R")


class Runner(Protocol):
    """Runs ``fn`` on every item (possibly in other processes, side by side); the results in the items' order.  A
    :class:`~binlake.errors.BinlogError` raised by ``fn`` reaches the caller as itself."""

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]: ...


class InProcessRunner:
    """The tasks in this process, one after the other (so the process's peak memory is one task's)."""

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(item) for item in items]
