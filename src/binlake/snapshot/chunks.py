"""One chunk of a snapshot, read and written: what each Spark task (or the driver, without Spark) does.

A chunk's task opens its own connection and its own consistent snapshot (its own binlog point), reads the chunk
as the server sends it (:func:`binlake.snapshot.server.read_chunk`), writes the rows as op ``read`` to a Parquet
file of the table's change table and (keyed tables) one of its current-state table, none of them committed, then
leaves a :class:`~binlake.lake.records.ChunkDone` record beside the snapshot's plan.  A chunk whose record is there
is done: a snapshot run again after a crash reads only the chunks without one (files of a chunk killed half-way
stay unreferenced, as a batch's tasks' do).

Change rows of the snapshot: ``_op`` ``read``; ``_file``/``_pos``/``_gtid`` the point the chunk was read at
(after :mod:`.reconcile`, the snapshot's point); ``_row`` the row's index in its chunk; ``_seq`` that point's
``file_seq * 10**20 + position * 10**10`` plus the row index: after every change the snapshot holds and before
every change the stream brings (a rows event of a transaction after the point is logged at a larger position);
``_ts`` when the chunk was read.

Example::

    done = write_chunk(lake, plan, chunk, address.options())       # in a task
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from binlake.lake.delta import ParquetSink
from binlake.lake.files import CurrentSink, write_sorted
from binlake.lake.lake import Lake
from binlake.lake.records import ChunkDone, DataFile, SnapshotChunk, SnapshotPlan, SnapshotPoint, SnapshotTable
from binlake.lake.tables import META, SEQ, UTC_TS, seq_array
from binlake.replication.options import ConnectionOptions
from binlake.snapshot.server import (
    ServerAddress,
    begin_snapshot,
    check_definition,
    connect,
    lake_fields,
    read_chunk,
)
from binlake.storage import Location

__all__ = ["READ", "ChunkWriter", "chunk_record", "done_chunks", "lake_pk", "snapshot_dir", "write_chunk"]

READ = "read"


def snapshot_dir(lake: Lake, batch: int) -> Location:
    """Where the snapshot landing as batch ``batch`` keeps its plan and chunk records."""
    return lake.root / "_binlake" / "snapshots" / f"{batch:010d}"


def chunk_record(lake: Lake, batch: int, chunk: int) -> Location:
    return snapshot_dir(lake, batch) / "chunks" / f"{chunk:06d}.json"


def done_chunks(lake: Lake, plan: SnapshotPlan) -> dict[int, ChunkDone]:
    """The chunks of ``plan`` already read and written, by index."""
    folder = snapshot_dir(lake, plan.batch) / "chunks"
    out: dict[int, ChunkDone] = {}
    if not folder.is_dir():
        return out
    for e in folder.list():
        if e.location.name.endswith(".json"):
            rec = ChunkDone.from_json(e.location.read_bytes().decode("utf-8"), e.location.uri)
            out[rec.chunk] = rec
    return out


def changes_schema(table: SnapshotTable) -> pa.Schema:
    return pa.schema([*lake_fields(table), *(pa.field(n, t) for n, t in META)])


def current_schema(table: SnapshotTable) -> pa.Schema:
    return pa.schema([*lake_fields(table), pa.field("_seq", SEQ), pa.field("_ts", UTC_TS)])


def point_seq(point: SnapshotPoint) -> int:
    return point.seq * 10**20 + point.position * 10**10


def lake_pk(table: SnapshotTable) -> list[str]:
    """The lake columns of the table's primary key, in key order."""
    names = {c.name.casefold(): c.name for c in table.columns}
    return [names[k.casefold()] for k in table.primary_key]


class ChunkWriter:
    """The Parquet files of one chunk: rows in, with their change-table meta columns (module docstring).  The
    current-state file is sorted by the key (:class:`~binlake.lake.files.CurrentSink`, with its statistics): rows
    that came in another order (the server's collation orders strings otherwise) are sorted when it closes."""

    def __init__(self, lake: Lake, table: SnapshotTable, point: SnapshotPoint, ts_us: int) -> None:
        self.table, self.point, self.ts_us = table, point, ts_us
        self.keyed = bool(table.primary_key)
        self._changes = ParquetSink(lake.changes(table.key), table.key, changes_schema(table), ["_op", "_file"])
        self._current = (
            CurrentSink(lake.current(table.key), table.key, current_schema(table), lake_pk(table))
            if self.keyed
            else None
        )
        self.rows = 0

    def write(self, rows: pa.Table, seqs: Iterable[int] | None = None) -> None:
        """Append ``rows`` (the table's lake columns); ``seqs``: their ``_seq`` (default: the point's, plus each
        row's index)."""
        n = rows.num_rows
        if not n:
            return
        index = np.arange(self.rows, self.rows + n, dtype=np.int64)
        base = point_seq(self.point)
        if seqs is None:
            seq = seq_array(np.array([base], dtype=object), np.zeros(n, np.int64), index)
        else:
            seq = pa.array([Decimal(s) for s in seqs], SEQ)
        ts = pa.array(np.full(n, self.ts_us, dtype=np.int64)).view(UTC_TS)
        meta = {
            "_op": pa.repeat(pa.scalar(READ), n),
            "_file": pa.repeat(pa.scalar(self.point.file), n),
            "_pos": pa.repeat(pa.scalar(self.point.position, pa.int64()), n),
            "_row": pa.array(index.astype(np.int32)),
            "_gtid": pa.repeat(pa.scalar(self.point.gtid, pa.string()), n),
            "_ts": ts,
            "_seq": seq,
            "_rolled_back": pa.repeat(pa.scalar(False), n),
            "_xid": pa.nulls(n, pa.string()),
            "_absent": pa.nulls(n, pa.list_(pa.string())),
        }
        cols = [rows[f.name] for f in rows.schema]
        self._changes.write(
            pa.Table.from_arrays([*cols, *(meta[name].cast(t) for name, t in META)], schema=self._changes.schema)
        )
        if self._current is not None:
            self._current.write(pa.Table.from_arrays([*cols, seq, ts], schema=self._current.schema))
        self.rows += n

    def close(self) -> tuple[DataFile | None, DataFile | None]:
        changes = self._changes.close()
        sink = self._current
        current = sink.close() if sink is not None else None
        if sink is not None and current is not None and not sink.in_order:
            written = sink.table / current.path
            with written.open_input() as f:
                rows = pq.read_table(f)
            (current,) = write_sorted(rows, sink.table, sink.key, sink.pk, file_rows=max(1, rows.num_rows))
            written.delete()
        return changes, current


def write_chunk(lake: Lake, plan: SnapshotPlan, chunk: SnapshotChunk, options: ConnectionOptions) -> ChunkDone:
    """Read ``chunk`` in a consistent snapshot of its own and write it (module docstring)."""
    table = next(t for t in plan.tables if t.key == chunk.table)
    with connect(options) as conn:
        point = begin_snapshot(conn)
        writer = ChunkWriter(lake, table, point, time.time_ns() // 1000)
        for rows in read_chunk(conn, table, chunk):
            writer.write(rows)
        check_definition(conn, table)
    changes, current = writer.close()
    done = ChunkDone(chunk.index, point, writer.rows, changes, current)
    chunk_record(lake, plan.batch, chunk.index).write_bytes(done.to_json().encode("utf-8"))
    return done


def run_chunks(
    lake: Lake, plan: SnapshotPlan, chunks: list[SnapshotChunk], options: ConnectionOptions, address: ServerAddress
) -> Iterator[ChunkDone]:
    """Read ``chunks`` one after the other in this process (the runner without Spark; ``options`` hold the
    password, ``address`` is what a runner in other processes hands them)."""
    for c in chunks:
        yield write_chunk(lake, plan, c, options)
