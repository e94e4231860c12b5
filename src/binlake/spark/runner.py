"""The lake's :class:`~binlake.lake.runner.Runner` on Spark: each item a task of its own, on the executors.

Items go out and results come back as :func:`binlake.lake.runner.pack` JSON (typed, versioned records, not pickled
objects); ``fn`` is a module-level function, pickled by its name.  A :class:`~binlake.errors.BinlogError` in a
task reaches the driver as itself (as :func:`binlake.spark.tasks.collect` passes them).

Example::

    results = SparkRunner(spark).map(merge_range, tasks)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from binlake.errors import BinlogError
from binlake.lake.runner import In, Out, pack, unpack
from binlake.spark.session import context_of

__all__ = ["SparkRunner"]


def _task(fn: Callable[[Any], Any]) -> Callable[[Iterator[str]], Iterator[str | BinlogError]]:
    def run(items: Iterator[str]) -> Iterator[str | BinlogError]:
        try:
            for text in items:
                yield pack(fn(unpack(text)))
        except BinlogError as e:
            yield e

    return run


class SparkRunner:
    """Runs a lake's tasks as Spark tasks of ``spark`` (a SparkSession or SparkContext), one partition per item."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
        if not items:
            return []
        rdd = context_of(self.spark).parallelize([pack(i) for i in items], len(items))
        rows: list[str | BinlogError] = rdd.mapPartitions(_task(fn)).collect()
        out: list[Out] = []
        for row in rows:
            if isinstance(row, BinlogError):
                raise row
            out.append(unpack(row))
        return out
