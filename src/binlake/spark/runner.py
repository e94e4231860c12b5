"""The :class:`~binlake.lake.runner.Runner` on Spark: each item a task of its own on the executors, as many at a time
as the cluster has task slots.

``fn`` and the items are pickled into the tasks (cloudpickle: a closure or a :func:`functools.partial` goes whole,
so it must hold nothing secret: the snapshot's tasks read the server's password where they run).  A
:class:`~binlake.errors.BinlogError` a task raises comes back to the driver as a value and is raised there as
itself (Spark would wrap it in its own exception, losing the file and position).

Example::

    runner = SparkRunner(build_session("local[*]"))
    reports = progress.run("decode", lambda: runner.map(task, splits))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from binlake.errors import BinlogError
from binlake.spark.session import context_of

__all__ = ["SparkRunner"]

T = TypeVar("T")
R = TypeVar("R")


def _guarded(fn: Callable[[T], R]) -> Callable[[Iterator[T]], Iterator[R | BinlogError]]:
    """A partition's work: ``fn`` of each item, a BinlogError passed back as a value (:meth:`SparkRunner.map`
    raises it on the driver)."""

    def run(items: Iterator[T]) -> Iterator[R | BinlogError]:
        try:
            for item in items:
                yield fn(item)
        except BinlogError as e:
            yield e

    return run


class SparkRunner:
    """Runs tasks on ``spark``: a SparkSession or SparkContext, or a :class:`~concurrent.futures.Future` of one still
    starting (resolved when the first tasks run: ``binlake ingest`` plans meanwhile)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        if not items:
            return []
        rdd = context_of(self.spark).parallelize(list(items), len(items))
        rows: list[R | BinlogError] = rdd.mapPartitions(_guarded(fn)).collect()
        for row in rows:
            if isinstance(row, BinlogError):
                raise row
        return [row for row in rows if not isinstance(row, BinlogError)]

    @property
    def cores(self) -> int:
        """The task slots to size work for: the context's ``defaultParallelism``."""
        return int(getattr(context_of(self.spark), "defaultParallelism", 1) or 1)

    def tasks(self) -> tuple[int, int]:
        """(completed, total) tasks of the active stages (what :class:`~binlake.ingest.progress.Progress` shows); none
        while the context is still starting or failed to (the failure is the caller's to raise, from :meth:`map`, not
        the progress thread's)."""
        if isinstance(self.spark, Future) and (not self.spark.done() or self.spark.exception() is not None):
            return 0, 0
        tracker = context_of(self.spark).statusTracker()
        done = total = 0
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return done, total
