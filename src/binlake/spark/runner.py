"""The :class:`~binlake.lake.runner.Runner` on Spark: each item a task of its own on the executors, as many at a time
as the cluster has task slots.

Items go out and results come back as :func:`binlake.lake.runner.pack` text (typed records, not pickled objects);
``fn`` is pickled into the tasks (cloudpickle: a closure or a :func:`functools.partial` goes whole, so it must hold
nothing secret: the snapshot's tasks read the server's password where they run).  A
:class:`~binlake.errors.BinlogError` a task raises (a record it cannot read included) comes back to the driver as
a value and is raised there as itself (Spark would wrap it in its own exception, losing the file and position).

Example::

    runner = SparkRunner(build_session("local[*]"))
    reports = progress.run("decode", lambda: runner.map(task, splits))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

from binlake.errors import BinlogError
from binlake.lake.runner import In, Out, pack, unpack
from binlake.spark.session import context_of

__all__ = ["SparkRunner"]


def _guarded(fn: Callable[[Any], Any]) -> Callable[[Iterator[str]], Iterator[str | BinlogError]]:
    """A partition's work: ``fn`` of each item, read from its record and its result packed; a BinlogError passed
    back as a value (:meth:`SparkRunner.map` raises it on the driver)."""

    def run(items: Iterator[str]) -> Iterator[str | BinlogError]:
        try:
            for text in items:
                yield pack(fn(unpack(text)))
        except BinlogError as e:
            yield e

    return run


class SparkRunner:
    """Runs tasks on ``spark``: a SparkSession or SparkContext, or a :class:`~concurrent.futures.Future` of one still
    starting (resolved when the first tasks run: ``binlake ingest`` plans meanwhile)."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
        if not items:
            return []
        rdd = context_of(self.spark).parallelize([pack(i) for i in items], len(items))
        rows: list[str | BinlogError] = rdd.mapPartitions(_guarded(fn)).collect()
        out: list[Out] = []
        for row in rows:
            if isinstance(row, BinlogError):
                raise row
            out.append(unpack(row))
        return out

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
