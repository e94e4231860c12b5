"""The ``binlake-lake`` Spark source applies each data file's deletion vector in the executor: a table whose rows
binlake deleted with DVs (inline and in a file, a column added after the first files) reads in Spark as deltalake's
SQL engine and binlake's own reader read it, on a local disk and on S3."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.spark.conftest import Storage

pytestmark = pytest.mark.spark


def test_spark_reads_a_table_with_deletion_vectors(spark: Any, storage: Storage) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from binlake.lake import deltalog
    from binlake.lake.delta import read_table
    from binlake.storage import locate
    from binlake.testing import readers

    loc = locate(storage.uri("dv"))
    for f in range(3):
        ids = pa.array(range(f * 2000, (f + 1) * 2000), pa.int64())
        columns = {"id": ids, "s": pa.array([f"v{i}" for i in ids.to_pylist()])}
        if f == 2:
            columns["added"] = pa.array([1.5] * 2000)
        write_deltalake(loc.delta_uri, pa.table(columns), mode="append", schema_mode="merge",
                        storage_options=loc.delta_options())  # fmt: skip
    snap = deltalog.read_snapshot(loc)
    assert snap is not None
    files = sorted(snap.files, key=lambda p: snap.files[p]["modificationTime"])
    deletes = {files[0]: np.array([0, 7, 1999], np.uint64), files[2]: np.arange(0, 2000, 2, dtype=np.uint64)}
    deltalog.commit_batch(loc, batch=1, app_id="t", fence=lambda: None, deletes=lambda s: deletes)
    snap = deltalog.read_snapshot(loc)
    assert snap is not None
    assert [snap.files[files[i]]["deletionVector"]["storageType"] for i in (0, 2)] == ["i", "u"]

    want = readers.read_with("deltalake", loc)
    assert want.num_rows == 6000 - 3 - 1000
    got = spark.read.format("binlake-lake").load(loc.uri).toArrow()
    assert got.schema.names == ["id", "s", "added"]
    mine = read_table(loc)
    assert mine is not None

    def rows(t: Any) -> list[dict[str, Any]]:
        return sorted(t.to_pylist(), key=lambda r: r["id"])

    assert rows(got) == rows(want) == rows(mine)
    assert sum(r["added"] is not None for r in rows(got)) == 1000


def test_spark_reads_the_last_complete_batch_or_the_one_named(spark: Any, tmp_path: Any) -> None:
    """A lake whose batch 3 is committed to its tables but not marked done reads as of batch 2 by default, by
    ``.option("table")`` and by a table's folder alike; ``.option("batch", N)`` reads batch N (time travel); a
    batch not complete is refused."""
    from pathlib import Path

    from binlake.ingest.run import ingest
    from binlake.lake import Lake
    from binlake.lake.runner import InProcessRunner

    example = Path(__file__).resolve().parents[2] / "examples" / "example-bin.000001"
    data, binlogs, root = example.read_bytes(), tmp_path / "binlogs", tmp_path / "lake"
    binlogs.mkdir()
    for cut in (20000, 45000, None):
        (binlogs / example.name).write_bytes(data[:cut] if cut else data)
        ingest(InProcessRunner(), [str(binlogs)], str(root))
    lake = Lake(root)
    want = {b: {t.location.relative_to(lake.root): t.rows for t in lake.tables(lake.snapshot(b))} for b in (1, 2)}
    (root / "_binlake" / "batches" / "0000000003.done").unlink()

    def count(table: str, batch: int | None = None, *, folder: bool = False) -> int:
        reader = spark.read.format("binlake-lake")
        if batch is not None:
            reader = reader.option("batch", batch)
        if folder:
            return int(reader.load(str(root / table)).count())
        return int(reader.option("table", table.replace("/", ".", 1)).load(str(root)).count())

    assert want[2]["shop/customers/changes"] == 122 and want[1]["shop/orders/current"] == 240
    assert count("shop/customers/changes") == count("shop/customers/changes", folder=True) == 122
    assert count("shop/orders/changes", 1) == want[1]["shop/orders/changes"]
    assert count("_events", 1, folder=True) == want[1]["_events"]
    assert count("shop/orders", 1) == want[1]["shop/orders/current"]
    with pytest.raises(Exception, match="no complete batch 3 in this lake"):
        count("_events", 3, folder=True)
