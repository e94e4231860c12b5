"""Delta tables at any :class:`~binlake.storage.Location`, written as measured (docs/architecture.md): tasks write
Parquet files, the driver commits them with the ``deltalake`` package, each commit carrying an application
transaction ``(app_id, batch)``, so a batch re-run after a crash commits to a table only if that table has not got
the batch yet.  Two writers racing to commit the same batch to a table cannot both succeed: delta-rs puts each
commit file only if absent (a conditional put on object stores), and each commit is made on the version its writer
read, where the batch was not there yet, or not at all (:func:`commit_files` then reads the table again and finds
the batch there).

These are the lake's building blocks; :class:`binlake.lake.Lake` is what the ingest calls (it checks its writer
lease before every commit).

Example::

    files = write_parquet(table, loc, "db/t")
    commit_files(loc, files, table.schema, batch=3)
    assert txn_version(loc) == 3
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, Field, Schema
from deltalake.exceptions import DeltaError
from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction, create_table_with_add_actions

from binlake.lake import deltalog, parallel
from binlake.lake.deltalog import delta_table
from binlake.lake.records import DataFile
from binlake.storage import Location, StoreUnreachable, store_error, writing

__all__ = [
    "APP_ID",
    "XA_APP_ID",
    "ParquetSink",
    "add_columns",
    "commit_files",
    "delta_table",
    "is_table",
    "read_table",
    "resolve_rollbacks",
    "rewind",
    "table_schema",
    "txn_version",
    "write_parquet",
]

APP_ID = "binlake-ingest"
XA_APP_ID = "binlake-xa"  # the later XA COMMIT/ROLLBACK updates of change rows: a batch's second kind of commit


def is_table(loc: Location) -> bool:
    return bool(DeltaTable.is_deltatable(loc.delta_uri, storage_options=loc.delta_options()))


class ParquetSink:
    """A new uniquely named Parquet file in the table folder ``table``, written a row group per :meth:`write` (a
    crashed attempt's files stay unreferenced by the Delta log, so readers never see them).

    Zstd; dictionary encoding only for the ``dictionary`` columns (few distinct values: an operation, a file name):
    on other columns it cost a third of the writing time and saved nothing after zstd.
    """

    def __init__(self, table: Location, key: str, schema: pa.Schema, dictionary: list[str]) -> None:
        self.table, self.key, self.schema, self.dictionary = table, key, schema, dictionary
        self.name = f"part-{uuid.uuid4().hex}.parquet"
        self.rows = 0
        self._stream: Any = None
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        with writing(self.table / self.name):
            if self._writer is None:
                self._stream = (self.table / self.name).open_output()
                self._writer = pq.ParquetWriter(
                    self._stream, self.schema, compression="zstd", use_dictionary=self.dictionary
                )
            self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> DataFile | None:
        """Finish the file; what to commit (``None`` when nothing was written)."""
        if self._writer is None:
            return None
        with writing(self.table / self.name):
            self._writer.close()
            self._writer = None
            size = self._stream.tell()
            self._stream.close()
        schema = self.schema.serialize().to_pybytes()
        return DataFile(self.key, self.name, size, self.rows, int(time.time() * 1000), schema)


def write_parquet(
    table: pa.Table, loc: Location, key: str, dictionary: list[str] | None = None, *, part_rows: int = 1 << 19
) -> list[DataFile]:
    """Write ``table`` as new Parquet files in the table folder ``loc`` (:class:`ParquetSink`): as many files of
    equal size as there are cores, each of at least ``part_rows`` rows (one file for a smaller table, none for an
    empty one), written side by side in threads (pyarrow writes without the GIL)."""
    parts = max(1, min(os.cpu_count() or 1, table.num_rows // part_rows))
    size = max(1, -(-table.num_rows // parts))
    slices = [table.slice(at, size) for at in range(0, table.num_rows, size)]

    def one(part: pa.Table) -> DataFile:
        sink = ParquetSink(loc, key, table.schema, dictionary or [])
        sink.write(part)
        done = sink.close()
        assert done is not None
        return done

    return parallel.each(one, slices)


def _commit(batch: int, app_id: str = APP_ID) -> CommitProperties:
    """A commit carrying batch ``batch`` as application transaction ``app_id``, made on the version the writer read
    or not at all: delta-rs would otherwise retry it on a newer version, and two writers could both add a batch
    (its retries check conflicts of files, not of application transactions)."""
    return CommitProperties(app_transactions=[Transaction(app_id, batch)], max_commit_retries=0)


_ATTEMPTS = 8  # a lost race reads the table again; more than a few in a row means something else is wrong


def _pause(attempt: int) -> None:
    """The wait after failed commit attempt ``attempt`` (0 first): 50 ms doubling, at most 2 s, so that racing
    writers and a store failing now and then are not met again at once (about 5 s over every attempt)."""
    time.sleep(min(0.05 * 2**attempt, 2.0))


def txn_version(loc: Location, app_id: str = APP_ID) -> int:
    """The last batch committed to the table at ``loc`` (-1 when the table does not exist or has none)."""
    if not is_table(loc):
        return -1
    v = delta_table(loc).transaction_version(app_id)
    return -1 if v is None else int(v)


def table_schema(loc: Location) -> pa.Schema | None:
    """The Arrow schema of the Delta table at ``loc``, or ``None`` when there is none."""
    if not is_table(loc):
        return None
    return pa.schema(delta_table(loc).schema().to_arrow())


def _evolve(dt: DeltaTable, schema: pa.Schema) -> bool:
    """Add the columns of ``schema`` the table lacks (ALTER TABLE ADD COLUMN upstream): a schema merge; whether it
    added any."""
    have = set(pa.schema(dt.schema().to_arrow()).names)
    new = [Field.from_arrow(f) for f in schema if f.name not in have]
    if new:
        dt.alter.add_columns(new)
    return bool(new)


def add_columns(loc: Location, schema: pa.Schema) -> bool:
    """Add the columns of ``schema`` the table at ``loc`` lacks, in a commit of their own (delta-rs upgrades the
    protocol a new column's type needs: ``timestampNtz``); whether it added any."""
    return _evolve(delta_table(loc), schema)


def commit_files(
    loc: Location,
    files: list[DataFile],
    schema: pa.Schema,
    batch: int,
) -> bool:
    """Add ``files`` to the table at ``loc`` as batch ``batch`` (creating it, adding new columns); a table that
    already has the batch is left alone (returns ``False``).  Each commit is made on the version it read, where the
    batch was not there yet (:func:`_commit`): of two writers committing one batch, one adds it and the other finds
    it there."""
    actions = [AddAction(f.path, f.size, {}, f.mtime_ms, True, f.delta_stats()) for f in files]
    for attempt in range(_ATTEMPTS):
        try:
            if not is_table(loc):
                create_table_with_add_actions(
                    loc.delta_uri,
                    Schema.from_arrow(schema),
                    actions,
                    mode="error",
                    storage_options=loc.delta_options(),
                    commit_properties=_commit(batch),
                )
                return True
            dt = delta_table(loc)
            if (dt.transaction_version(APP_ID) or -1) >= batch:
                return False
            if _evolve(dt, schema):
                continue  # (a commit of its own) read the table again
            dt.create_write_transaction(
                list[AddAction | RemoveAction](actions),
                mode="append",
                schema=pa.schema(dt.schema().to_arrow()),
                commit_properties=_commit(batch),
            )
            return True
        except (DeltaError, OSError) as e:  # another writer committed first (or created the table): read it again
            _raise_unless_a_race(loc, e, attempt)
            _pause(attempt)
    raise AssertionError("unreachable")


def _raise_unless_a_race(loc: Location, e: Exception, attempt: int) -> None:
    """After a failed commit: go on (the caller reads the table again: another writer may have committed first)
    unless this was the last attempt, or the store could not be reached (delta-rs retried the request already),
    raising the error that names the table then."""
    error = store_error("Delta commit failed", e, loc.uri)
    if attempt == _ATTEMPTS - 1 or isinstance(error, StoreUnreachable):
        raise error from e


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def resolve_rollbacks(loc: Location, outcomes: dict[str, bool], batch: int) -> bool:
    """Set ``_rolled_back`` of the change rows of the XA transactions ``outcomes`` names (XID -> rolled back) that
    still wait for it (null), in one commit per table and batch (made on the version read, as :func:`commit_files`
    makes its commits)."""
    if not outcomes or not is_table(loc):
        return False
    xids = ", ".join(_sql_text(x) for x in sorted(outcomes))
    rolled = [x for x, rb in sorted(outcomes.items()) if rb]
    value = f"_xid IN ({', '.join(_sql_text(x) for x in rolled)})" if rolled else "false"
    for attempt in range(_ATTEMPTS):
        dt = delta_table(loc)
        if (dt.transaction_version(XA_APP_ID) or -1) >= batch:
            return False
        try:
            dt.update(
                updates={"_rolled_back": value},
                predicate=f"_xid IN ({xids}) AND _rolled_back IS NULL",
                commit_properties=_commit(batch, XA_APP_ID),
            )
            return True
        except (DeltaError, OSError) as e:
            _raise_unless_a_race(loc, e, attempt)
            _pause(attempt)
    raise AssertionError("unreachable")


def _before(dt: DeltaTable, batch: int) -> bool:
    """Whether the table version ``dt`` has no commit of batch ``batch`` or later (of either kind)."""
    return all((dt.transaction_version(app) or -1) < batch for app in (APP_ID, XA_APP_ID))


def _live_files(loc: Location, version: int | None) -> set[tuple[str, str | None]]:
    """The table's files at ``version`` with the deletion vector each has (its unique id): what a restore changes."""
    snap = deltalog.read_snapshot(loc, version)
    if snap is None:
        return set()
    return {(p, None if (dv := snap.deletion_vector(p)) is None else dv.unique_id) for p in snap.files}


def rewind(loc: Location, batch: int) -> bool:
    """Take the table at ``loc`` back to its content before batch ``batch`` was committed to it (Delta's restore,
    a commit of its own: readers see the table as it was, time travel still sees what came after), or remove it
    when batch ``batch`` or a later one created it; whether it changed.  Idempotent: a table already back where it
    was (its files those of that version) is left alone, so a rewind cut by a kill is simply run again.  Its
    application transactions keep their versions: the batches that land the ranges again have higher numbers."""
    if not is_table(loc):
        return False
    dt = delta_table(loc)
    if _before(dt, batch):
        return False
    version = dt.version()
    while version >= 0 and not _before(delta_table(loc, version), batch):
        version -= 1
    if version < 0:
        loc.delete_dir()
        return True
    if _live_files(loc, version) == _live_files(loc, None):
        return False
    for attempt in range(_ATTEMPTS):
        try:
            delta_table(loc).restore(version, commit_properties=CommitProperties(max_commit_retries=0))
            return True
        except (DeltaError, OSError) as e:
            _raise_unless_a_race(loc, e, attempt)
            _pause(attempt)
    raise AssertionError("unreachable")


def read_table(loc: Location, version: int | None = None, columns: Sequence[str] | None = None) -> pa.Table | None:
    """The content of the Delta table at ``loc`` (as of ``version``; only ``columns``), or ``None`` when there is
    none.  Through its log, never the folder's files, with each data file's deletion vector applied
    (:func:`binlake.lake.deltalog.scan_file`: deltalake's ``to_pyarrow_table`` refuses a table that has them), the
    files read side by side in threads, through binlake's own filesystem of ``loc`` (:mod:`binlake.storage`:
    pyarrow's, in C++).  Not deltalake's Python filesystem (``pyarrow.fs.PyFileSystem`` over delta-rs): the Parquet
    reader prefetches column chunks on Arrow's I/O threads, and a prefetch still running at the end holds a buffer
    owned by Python; when such a thread drops it while the interpreter exits, Python ends the thread and the
    unwinding meets a C++ destructor that may not throw (``terminate called without an active exception``, exit
    status 134, in about one run of ``binlake tables LAKE TABLE`` in 60).  Buffers of a C++ filesystem need no GIL
    (a scheme only fsspec serves is a Python filesystem again: there, rarely, the abort remains)."""
    snap = deltalog.read_snapshot(loc, version)
    if snap is None:
        return None
    snap.check(write=False)
    schema = snap.schema

    def one(path: str) -> list[pa.RecordBatch]:
        return list(deltalog.scan_file(loc, path, schema, snap.deletion_vector(path), columns))

    batches = [b for part in parallel.each(one, list(snap.files)) for b in part]
    wanted = pa.schema([schema.field(c) for c in columns]) if columns is not None else schema
    return pa.Table.from_batches(batches, schema=wanted)
