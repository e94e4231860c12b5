"""The lake's tasks on Spark (binlake.spark.runner.SparkRunner): results in the items' order, a BinlogError a task
raises reaches the driver as itself (its class, file and position, not Spark's wrapper), and no items ask for no
Spark at all; the in-process runner gives the same."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from binlake.errors import MalformedError
from binlake.lake.runner import InProcessRunner, Runner
from binlake.spark.runner import SparkRunner

pytestmark = pytest.mark.spark


def _runs_the_same(runner: Runner) -> None:
    def square(x: int) -> int:  # (a closure: pickled whole into the tasks)
        if x == 3:
            raise MalformedError("a rows event cut short", file="binlog.000007", pos=1234)
        return x * x

    assert runner.map(square, [4, 0, 2, 1]) == [16, 0, 4, 1]
    with pytest.raises(MalformedError) as err:
        runner.map(square, [1, 2, 3, 4])
    assert (err.value.message, err.value.file, err.value.pos) == ("a rows event cut short", "binlog.000007", 1234)


def test_spark_runs_tasks_as_this_process_does(spark: Any) -> None:
    runner = SparkRunner(spark)
    _runs_the_same(runner)
    _runs_the_same(InProcessRunner())
    assert runner.cores == spark.sparkContext.defaultParallelism == 2
    done, total = runner.tasks()  # nothing running now
    assert done == total == 0


def test_no_items_ask_for_no_spark() -> None:
    never: Future[Any] = Future()
    never.set_exception(AssertionError("the runner asked for Spark"))
    assert SparkRunner(never).map(abs, []) == []
