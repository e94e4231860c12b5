"""The ``binlake-lake`` Python data source: a lake's Delta tables as Spark DataFrames, on any storage binlake writes
to (:mod:`binlake.storage`), with no Delta or Hadoop object-store jars on the cluster.

Partitions are the table's files as its Delta log lists them (a partition per ~128 MiB of Parquet), read in the
executors through ``pyarrow.fs`` with the credentials of their own environment, each file's deletion vector applied
there; files written before a column was added (ALTER TABLE upstream) read with that column null, as Delta readers
do.  Only committed data is read:
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
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from binlake.lake import Lake
from binlake.lake.delta import is_table
from binlake.lake.deltalog import read_snapshot, scan_file
from binlake.lake.dv import DeletionVector
from binlake.storage import Location, locate

__all__ = ["LakeDataSource"]

PARTITION_BYTES = 128 << 20


class _Files(InputPartition):
    """Files of one Delta table read by one task: each file's path as the log has it (relative to the table, or
    absolute) and its deletion vector descriptor (``None`` without)."""

    def __init__(self, index: int, table: str, files: list[tuple[str, dict[str, Any] | None]]) -> None:
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
        snap = read_snapshot(self.table)
        assert snap is not None
        groups: list[list[tuple[str, dict[str, Any] | None]]] = []
        size = PARTITION_BYTES
        for path, add in sorted(snap.files.items()):
            if size >= PARTITION_BYTES:
                groups.append([])
                size = 0
            groups[-1].append((path, add.get("deletionVector")))
            size += int(add["size"])
        # a table without files (emptied) is one empty partition: with none, Spark reads a partition of its own
        return [_Files(i, self.table.uri, g) for i, g in enumerate(groups)] or [_Files(0, self.table.uri, [])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of the partition's files the table holds: each file's deletion vector applied here, in the
        executor (:func:`binlake.lake.deltalog.scan_file`)."""
        assert isinstance(partition, _Files)
        table = Location(partition.table)
        for path, dv in partition.files:
            yield from scan_file(table, path, self.arrow_schema, None if dv is None else DeletionVector.from_json(dv))


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
        snap = read_snapshot(loc)
        assert snap is not None
        snap.check(write=False)
        return loc, snap.schema

    def schema(self) -> Any:
        return from_arrow_schema(self._arrow_schema()[1])

    def reader(self, schema: Any) -> DataSourceReader:
        return _Reader(*self._arrow_schema())
