"""Current state merged by range tasks on Spark's executors (:class:`binlake.spark.runner.SparkRunner`), on a local
disk and on S3: random batches (renames copy files between table folders, deletions become deletion vectors) equal
the model, and the ``binlake-lake`` Spark source reads every table as the model has it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.lakemodel import COLUMNS, TABLES, Model, generate, key_of, lake_rows, run, write_batch
from tests.spark.conftest import Storage

pytestmark = pytest.mark.spark


def test_range_tasks_on_spark_and_the_spark_source(
    spark: Any, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    from binlake.lake import Lake, current, deltalog
    from binlake.spark.runner import SparkRunner

    plan = current.plan_ranges
    monkeypatch.setattr(current, "LOCAL_ROWS", 0)  # every batch is "large": ranges of a few keys, on the executors
    monkeypatch.setattr(current, "plan_ranges", lambda sources, first, target=3: plan(sources, first, 4))
    lake = Lake(storage.uri("current"))
    rng = random.Random(7)
    pk = ["k1"]
    model, replay = Model(pk), Model(pk)
    runner = SparkRunner(spark)
    with_dv = 0  # files with a deletion vector seen after a batch
    with lake.writing():
        for number in range(1, 9):
            batch = generate(rng, model, number, rng.randrange(4, 14))
            run(lake, write_batch(lake, batch, replay), runner)
            for t in TABLES:
                assert lake_rows(lake, t, pk) == model.rows(t), (number, t)
                snap = deltalog.read_snapshot(lake.current(key_of(t)))
                with_dv += 0 if snap is None else sum(1 for a in snap.files.values() if a.get("deletionVector"))
    for t in TABLES:
        loc = lake.current(key_of(t))
        got = spark.read.format("binlake-lake").load(loc.uri).toArrow().to_pylist()
        assert sorted(({c: r.get(c) for c in COLUMNS} for r in got), key=lambda r: r["k1"]) == model.rows(t), t
    assert with_dv, "no batch deleted a row of a file: the test proves less than it says"
