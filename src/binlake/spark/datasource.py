"""The ``binlake`` Python data source: binlog files as Spark DataFrames.

Streaming (``spark.readStream.format("binlake")``, a growing folder or a server): :mod:`binlake.spark.streaming`.

Options (case-insensitive): ``view`` = ``events`` | ``tablemaps`` | ``changes`` (default ``changes``);
``splitBytes`` = target bytes per partition (default 64 MiB).  The path is a file, a folder or a glob.  The
``changes`` view's last column, ``debezium``, is each row change as the Debezium JSON ``binlake changes`` writes
(:mod:`binlake.spark.debezium`), ready for Spark's Kafka or file sinks; the Debezium connector settings
``decimal.handling.mode``, ``bigint.unsigned.handling.mode``, ``time.precision.mode`` and ``binary.handling.mode``
are options under their names, as ``binlake changes --debezium-option`` takes them
(:class:`~binlake.render.changes.debezium.ValueModes`).

Planning runs on the driver: one partition per file, large files cut at transaction boundaries by a header-only
walk (:mod:`binlake.ingest.plan`), so every core decodes part of one big binlog.  Each partition decodes its byte
range (:mod:`binlake.ingest.extract`) and yields Arrow record batches (:mod:`binlake.ingest.arrow` has the schemas).

Example::

    spark = build_session()            # binlake.spark.session: registers this source
    df = spark.read.format("binlake").option("view", "changes").load("/var/lib/mysql/binlog.*")
    df.groupBy("database", "table", "op").count().show()
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from binlake.binlogs import list_binlogs
from binlake.errors import BinlogError
from binlake.ingest.arrow import CHANGES, TABLEMAPS, change_batch, event_batch, tablemap_batch
from binlake.ingest.extract import Changes, EventRecord, TableMapRecord, decode_split, map_id
from binlake.ingest.plan import DEFAULT_SPLIT_BYTES, plan_splits
from binlake.lake.records import Split
from binlake.lake.tables import EVENTS
from binlake.render.changes.debezium import SETTINGS, DebeziumEncoder, DebeziumOptions, ValueModes
from binlake.schema import SchemaTracker
from binlake.spark.debezium import SplitJson, connector_of

__all__ = ["BATCH_ROWS", "BinlakeDataSource", "read_split"]

BATCH_ROWS = 8192
CHANGES_VIEW = CHANGES.append(pa.field("debezium", pa.string()))
VIEWS = {"events": EVENTS, "tablemaps": TABLEMAPS, "changes": CHANGES_VIEW}


class SplitPartition(InputPartition):
    """One planned byte range (pickled to the executor)."""

    def __init__(self, split: Split) -> None:
        super().__init__(split.index)
        self.split = split


def read_split(
    split: Split, view: str, batch_rows: int = BATCH_ROWS, modes: ValueModes | None = None
) -> Iterator[pa.RecordBatch]:
    """The record batches of one view for one split (what a partition yields; usable without Spark); ``modes``:
    how the ``debezium`` column writes values (the connector's defaults when ``None``)."""
    if view == "events":
        ev_buf: list[EventRecord] = []
        for rec in decode_split(split, changes=False):
            if isinstance(rec, EventRecord):
                ev_buf.append(rec)
                if len(ev_buf) >= batch_rows:
                    yield event_batch(split.file, ev_buf)
                    ev_buf = []
        if ev_buf:
            yield event_batch(split.file, ev_buf)
    elif view == "tablemaps":
        tms = [rec for rec in decode_split(split, changes=False) if isinstance(rec, TableMapRecord)]
        if tms:
            yield tablemap_batch(split.file, tms)
    else:
        ch_buf: list[Changes] = []
        ids: dict[int, str] = {}
        rows = 0
        tracker = SchemaTracker()  # the decoder follows the split's DDL in it; the JSON names columns by it
        encoder = DebeziumEncoder(DebeziumOptions(modes=modes or ValueModes()))
        json = SplitJson(split.file.name, connector_of(split.file.source), tracker, encoder)
        lines: list[str] = []
        for rec in decode_split(split, tablemaps=False, schema=tracker):
            if isinstance(rec, EventRecord):
                json.see(rec)
            elif isinstance(rec, Changes):
                if id(rec.table_map) not in ids:
                    ids[id(rec.table_map)] = map_id(rec.table_map)
                ch_buf.append(rec)
                lines += json.lines(rec)
                rows += len(rec.rows)
                if rows >= batch_rows:
                    yield _with_json(change_batch(split.file, ch_buf, ids), lines)
                    ch_buf, rows, ids, lines = [], 0, {}, []  # ids of table maps no longer held could be reused
        if ch_buf:
            yield _with_json(change_batch(split.file, ch_buf, ids), lines)


def _with_json(batch: pa.RecordBatch, lines: list[str]) -> pa.RecordBatch:
    """The ``changes`` view's batch with its ``debezium`` column (one line per row, in the batch's order)."""
    return batch.append_column("debezium", pa.array(lines, pa.string()))


class _Reader(DataSourceReader):
    def __init__(self, path: str, view: str, split_bytes: int, modes: ValueModes) -> None:
        self.path, self.view, self.split_bytes, self.modes = path, view, split_bytes, modes

    def partitions(self) -> list[InputPartition]:
        splits = plan_splits(list_binlogs(self.path), split_bytes=self.split_bytes)
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SplitPartition)
        yield from read_split(partition.split, self.view, modes=self.modes)


class BinlakeDataSource(DataSource):
    """``spark.read.format("binlake")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "binlake"

    def _opt(self, key: str, default: str) -> str:
        lowered = {str(k).lower(): str(v) for k, v in dict(self.options).items()}
        return lowered.get(key.lower(), default)

    def _view(self) -> str:
        view = self._opt("view", "changes").lower()
        if view not in VIEWS:
            raise ValueError(f"binlake: unknown view {view!r} (one of {', '.join(VIEWS)})")
        return view

    def _modes(self) -> ValueModes:
        """The Debezium settings among the options (:meth:`ValueModes.parse`, as ``--debezium-option``)."""
        lowered = {str(k).lower(): str(v) for k, v in dict(self.options).items()}
        try:
            return ValueModes.parse((key, value) for key, value in lowered.items() if key in SETTINGS)
        except BinlogError as e:
            raise BinlogError(f"binlake: {e}") from None

    def schema(self) -> Any:
        return from_arrow_schema(VIEWS[self._view()])

    def reader(self, schema: Any) -> DataSourceReader:
        path = self._opt("path", "")
        if not path:
            raise ValueError('binlake: give a path: spark.read.format("binlake").load(PATH)')
        split_bytes = int(self._opt("splitBytes", str(DEFAULT_SPLIT_BYTES)))
        return _Reader(path, self._view(), split_bytes, self._modes())

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        """``spark.readStream.format("binlake")``: a growing folder or a server (:mod:`binlake.spark.streaming`)."""
        from binlake.spark.streaming import stream_reader

        options = {str(k).lower(): str(v) for k, v in dict(self.options).items()}
        read = functools.partial(read_split, modes=self._modes())
        return stream_reader(options, self._view(), int(self._opt("splitBytes", str(DEFAULT_SPLIT_BYTES))), read)
