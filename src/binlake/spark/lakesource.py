"""The ``binlake-lake`` Python data source: a lake's Delta tables as Spark DataFrames, on any storage binlake writes
to (:mod:`binlake.storage`), with no Delta or Hadoop object-store jars on the cluster.

Partitions are the table's files as its Delta log lists them (a partition per ~128 MiB of Parquet), read in the
executors through ``pyarrow.fs`` with the credentials of their own environment; files written before a column
was added (ALTER TABLE upstream) read with that column null, as Delta readers do.  Only committed data is read:
never the folder's files, which may include ones a crashed batch wrote and no commit references.

Example::

    spark = build_session()        # binlake.spark.session registers it
    spark.read.format("binlake-lake").option("table", "shop.orders").load("s3://bucket/lake").show()
    spark.read.format("binlake-lake").load("s3://bucket/lake/shop/orders/changes").count()   # a table's folder
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from binlake.lake import Lake
from binlake.lake.delta import delta_table, is_table
from binlake.storage import Location, locate

__all__ = ["LakeDataSource"]

PARTITION_BYTES = 128 << 20


class _Files(InputPartition):
    """Files of one Delta table read by one task (their paths relative to the table: a URI or a local path)."""

    def __init__(self, index: int, table: str, files: list[str]) -> None:
        super().__init__(index)
        self.table, self.files = table, files


def _table(path: str, table: str | None) -> Location:
    """The table a load names: ``path`` itself, or the lake at ``path``'s table ``table`` (``db.table``...)."""
    if not table:
        loc = locate(path)
        if not is_table(loc):
            raise ValueError(f"binlake-lake: no Delta table at {loc} (give the lake and .option('table', 'db.table'))")
        return loc
    found = Lake(path).find(table)
    if found is None:
        raise ValueError(f"binlake-lake: no table {table!r} in the lake at {path} (binlake tables LAKE lists them)")
    return found.location


class _Reader(DataSourceReader):
    def __init__(self, table: Location, schema: pa.Schema) -> None:
        self.table, self.arrow_schema = table, schema

    def partitions(self) -> list[InputPartition]:
        adds = pa.table(delta_table(self.table).get_add_actions(flatten=True)).to_pylist()
        groups: list[list[str]] = []
        size = PARTITION_BYTES
        for a in sorted(adds, key=lambda a: str(a["path"])):
            if size >= PARTITION_BYTES:
                groups.append([])
                size = 0
            groups[-1].append(str(a["path"]))
            size += int(a["size_bytes"])
        return [_Files(i, self.table.uri, g) for i, g in enumerate(groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Files)
        table = Location(partition.table)
        for name in partition.files:
            loc = locate(name) if "://" in name or name.startswith("/") else table / name
            with loc.open_input() as f:
                for batch in pq.ParquetFile(f).iter_batches():
                    yield _conform(batch, self.arrow_schema)


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the table's columns: one a file predates is null."""
    names = batch.schema.names
    cols = [
        batch.column(names.index(f.name)).cast(f.type) if f.name in names else pa.nulls(batch.num_rows, f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


class LakeDataSource(DataSource):
    """``spark.read.format("binlake-lake")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "binlake-lake"

    def _options(self) -> tuple[str, str | None]:
        lowered = {str(k).lower(): str(v) for k, v in dict(self.options).items()}
        path = lowered.get("path", "")
        if not path:
            raise ValueError('binlake-lake: give the lake: spark.read.format("binlake-lake").load(LAKE)')
        return path, lowered.get("table")

    def _arrow_schema(self) -> tuple[Location, pa.Schema]:
        loc = _table(*self._options())
        return loc, pa.schema(delta_table(loc).schema().to_arrow())

    def schema(self) -> Any:
        return from_arrow_schema(self._arrow_schema()[1])

    def reader(self, schema: Any) -> DataSourceReader:
        return _Reader(*self._arrow_schema())
