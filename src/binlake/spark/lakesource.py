"""The ``binlake-lake`` Python data source: a lake's Delta tables as Spark DataFrames, on any storage binlake writes
to (:mod:`binlake.storage`), with no Delta or Hadoop object-store jars on the cluster.

Partitions are the table's files as its Delta log lists them (a partition per ~128 MiB of Parquet), read in the
executors through ``pyarrow.fs`` with the credentials of their own environment, each file's deletion vector applied
there; files written before a column was added (ALTER TABLE upstream) read with that column null, as Delta readers
do.  Only committed data is read:
never the folder's files, which may include ones a crashed batch wrote and no commit references.

A table is read as of one batch of its lake (:meth:`binlake.lake.lake.Lake.snapshot`): the last complete one, so
that two tables read while an ingest commits are of the same batch, or the one ``.option("batch", N)`` names (time
travel, within the retention of the tables' logs).  A table folder outside a lake reads its newest version.

Example::

    spark = build_session()        # binlake.spark.session registers it
    spark.read.format("binlake-lake").option("table", "shop.orders").load("s3://bucket/lake").show()
    spark.read.format("binlake-lake").load("s3://bucket/lake/shop/orders/changes").count()   # a table's folder
    spark.read.format("binlake-lake").option("table", "shop.orders").option("batch", 7).load("s3://bucket/lake")
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
from binlake.lake.lake import KINDS
from binlake.lake.tables import OWN_TABLES
from binlake.storage import Location, locate

__all__ = ["LakeDataSource"]

PARTITION_BYTES = 128 << 20


class _Files(InputPartition):
    """Files of one Delta table read by one task: each file's path as the log has it (relative to the table, or
    absolute) and its deletion vector descriptor (``None`` without)."""

    def __init__(self, index: int, table: str, files: list[tuple[str, dict[str, Any] | None]]) -> None:
        super().__init__(index)
        self.table, self.files = table, files


def _lake_of(loc: Location) -> Lake | None:
    """The lake the table folder ``loc`` is in (``LAKE/_events``, ``LAKE/<db>/<table>/changes``), or ``None``."""
    depth = 1 if loc.name in OWN_TABLES else 3 if loc.name in KINDS else 0
    parts = loc.uri.split("://", 1)[-1].strip("/").split("/")
    if not depth or len(parts) <= depth:
        return None
    root = loc
    for _ in range(depth):
        root = root.parent
    return Lake(root) if (root / "_binlake" / "batches").is_dir() else None


def _table(path: str, table: str | None, batch: int | None) -> tuple[Location, int | None]:
    """The table a load names, ``path`` itself or the lake at ``path``'s table ``table`` (``db.table``...), and
    the version of it to read: as of batch ``batch`` of its lake (default: the last complete one), its newest when
    it is in no lake."""
    if not table:
        loc = locate(path)
        if not is_table(loc):
            raise ValueError(f"binlake-lake: no Delta table at {loc} (give the lake and .option('table', 'db.table'))")
        lake = _lake_of(loc)
        if lake is None:
            if batch is not None:
                raise ValueError(f"binlake-lake: {loc} is in no lake: .option('batch') reads a lake's batch")
            return loc, None
        return loc, lake.snapshot(batch).version(lake, loc)
    lake = Lake(path)
    at = lake.snapshot(batch)
    found = lake.find(table, lake.tables(at))
    if found is None:
        when = "" if at.batch is None else f" as of batch {at.batch}"
        raise ValueError(f"binlake-lake: no table {table!r} in the lake at {path}{when} (binlake tables LAKE lists "
                         "them)")  # fmt: skip
    return found.location, found.version


class _Reader(DataSourceReader):
    def __init__(self, table: Location, version: int | None, schema: pa.Schema) -> None:
        self.table, self.version, self.arrow_schema = table, version, schema

    def partitions(self) -> list[InputPartition]:
        snap = read_snapshot(self.table, self.version)
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

    def _options(self) -> tuple[str, str | None, int | None]:
        lowered = {str(k).lower(): str(v) for k, v in dict(self.options).items()}
        path = lowered.get("path", "")
        if not path:
            raise ValueError('binlake-lake: give the lake: spark.read.format("binlake-lake").load(LAKE)')
        batch = lowered.get("batch")
        if batch is not None and not batch.strip().isdigit():
            raise ValueError(f"binlake-lake: .option('batch') is a batch number, not {batch!r}")
        return path, lowered.get("table"), None if batch is None else int(batch)

    def _arrow_schema(self) -> tuple[Location, int | None, pa.Schema]:
        loc, version = _table(*self._options())
        snap = read_snapshot(loc, version)
        assert snap is not None
        snap.check(write=False)
        return loc, version, snap.schema

    def schema(self) -> Any:
        return from_arrow_schema(self._arrow_schema()[2])

    def reader(self, schema: Any) -> DataSourceReader:
        return _Reader(*self._arrow_schema())
