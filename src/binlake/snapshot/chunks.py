"""One chunk of a snapshot, read and written: what each task of the snapshot's runner does (:func:`chunk_task`).

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
from collections.abc import Callable, Iterable
from decimal import Decimal
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from binlake.lake.delta import ParquetSink
from binlake.lake.files import CurrentSink, write_sorted
from binlake.lake.lake import Lake
from binlake.lake.records import ChunkDone, DataFile, SnapshotChunk, SnapshotPlan, SnapshotPoint, SnapshotTable
from binlake.lake.runner import InProcessRunner, Runner
from binlake.lake.tables import META, META_DICTIONARY, SEQ, UTC_TS, meta_columns, seq_array
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

__all__ = ["READ", "ChunkWriter", "chunk_record", "chunk_task", "done_chunks", "lake_pk", "snapshot_dir", "write_chunk"]

READ = "read"


def snapshot_dir(lake: Lake, batch: int) -> Location:
    """Where the snapshot landing as batch ``batch`` keeps its plan and chunk records."""
    return lake.snapshot_records(batch)


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
        self._changes = ParquetSink(lake.changes(table.key), table.key, changes_schema(table), META_DICTIONARY)
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
        p = self.point
        meta = meta_columns(n, op=READ, file=p.file, pos=p.position, row=pa.array(index.astype(np.int32)),
                            gtid=p.gtid, ts=ts, seq=seq, rolled_back=False, xid=None)  # fmt: skip
        cols = [rows[f.name] for f in rows.schema]
        self._changes.write(pa.Table.from_arrays([*cols, *meta], schema=self._changes.schema))
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


def chunk_task(
    lake: Lake, plan: SnapshotPlan, runner: Runner, options: ConnectionOptions, address: ServerAddress
) -> Callable[[SnapshotChunk], ChunkDone]:
    """What ``runner`` runs for each chunk: :func:`write_chunk`, giving its :class:`~binlake.lake.records.ChunkDone`
    record.  In this process (an :class:`~binlake.lake.runner.InProcessRunner`) it connects with ``options``
    (their password included); a runner of other processes (Spark tasks) gets the lake's URI, the plan's JSON and
    ``address``, without the password, which each task reads where it runs (``address.password_file`` or
    ``$BINLAKE_PASSWORD``): nothing secret goes into a task."""
    if isinstance(runner, InProcessRunner):
        return partial(_chunk_here, lake, plan, options)
    return partial(_chunk_there, lake.root.uri, plan.to_json(), address)


def _chunk_here(lake: Lake, plan: SnapshotPlan, options: ConnectionOptions, chunk: SnapshotChunk) -> ChunkDone:
    return write_chunk(lake, plan, chunk, options)


def _chunk_there(uri: str, plan: str, address: ServerAddress, chunk: SnapshotChunk) -> ChunkDone:
    return write_chunk(Lake(uri), SnapshotPlan.from_json(plan), chunk, address.options())
