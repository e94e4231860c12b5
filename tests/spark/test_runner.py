"""Where tasks run (binlake.lake.runner, binlake.spark.runner.SparkRunner): results in the items' order, a BinlogError
a task raises reaches the driver as itself (its class, file and position, not Spark's wrapper), no items ask for no
Spark at all; the in-process runner gives the same results, handing the records over as they are, where Spark's
tasks get and give them as typed records (a record this binlake cannot read is a LakeFormatError)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from binlake.errors import MalformedError
from binlake.lake.records import Emptied, LakeFormatError
from binlake.lake.runner import InProcessRunner, Runner, pack, unpack
from binlake.spark.runner import SparkRunner

pytestmark = pytest.mark.spark


def _runs_the_same(runner: Runner) -> list[Emptied]:
    def square(e: Emptied) -> Emptied:  # (a closure: pickled whole into the tasks)
        if e.seq == 3:
            raise MalformedError("a rows event cut short", file="binlog.000007", pos=1234)
        return Emptied(e.key.upper(), e.seq * e.seq)

    items = [Emptied("d/t", 4), Emptied("d/", 0), Emptied("d/u", 2)]
    out = runner.map(square, items)
    assert out == [Emptied("D/T", 16), Emptied("D/", 0), Emptied("D/U", 4)]
    with pytest.raises(MalformedError) as err:
        runner.map(square, [Emptied("a/b", 1), Emptied("a/b", 3)])
    assert (err.value.message, err.value.file, err.value.pos) == ("a rows event cut short", "binlog.000007", 1234)
    return out


def test_spark_runs_tasks_as_this_process_does(spark: Any) -> None:
    runner = SparkRunner(spark)
    _runs_the_same(runner)
    _runs_the_same(InProcessRunner())
    assert runner.cores == spark.sparkContext.defaultParallelism == 2
    done, total = runner.tasks()  # nothing running now
    assert done == total == 0


def test_in_process_records_are_handed_over_as_they_are() -> None:
    item = Emptied("d/t", 1)
    assert InProcessRunner().map(lambda e: e, [item])[0] is item


def test_a_record_this_binlake_cannot_read_is_refused() -> None:
    assert unpack(pack(Emptied("d/t", 1))) == Emptied("d/t", 1)  # a record whose JSON is an object
    text = pack(Emptied("d/t", 1)).replace('"seq"', '"sequence"')
    with pytest.raises(LakeFormatError, match="cannot read"):
        unpack(text)
    with pytest.raises(LakeFormatError, match="not one of binlake's"):
        unpack('{"type": "os:system", "record": "{}"}')


def test_no_items_ask_for_no_spark() -> None:
    never: Future[Any] = Future()
    never.set_exception(AssertionError("the runner asked for Spark"))
    assert SparkRunner(never).map(abs, []) == []  # type: ignore[arg-type]
