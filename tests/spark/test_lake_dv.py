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
