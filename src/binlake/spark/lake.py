"""Delta tables of the lake, written the way SPARK-NOTES measured works here: tasks write Parquet files, the driver
commits them with the ``deltalake`` package, each commit carrying an application transaction ``(app_id, batch)``
so a batch re-run after a crash commits to a table only if that table has not got the batch yet.

Example::

    files = write_parquet(table, "lake/db.t/changes", "db/t")
    commit_files("lake/db.t/changes", files, table.schema, batch=3)
    assert txn_version("lake/db.t/changes") == 3
"""

from __future__ import annotations

import json
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, Field, Schema
from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction, create_table_with_add_actions

__all__ = [
    "APP_ID",
    "XA_APP_ID",
    "DataFile",
    "ParquetSink",
    "append_table",
    "commit_files",
    "read_table",
    "read_table_before",
    "resolve_rollbacks",
    "table_schema",
    "txn_version",
    "write_parquet",
]

APP_ID = "binlake-ingest"
XA_APP_ID = "binlake-xa"  # the later XA COMMIT/ROLLBACK updates of change rows: a batch's second kind of commit


@dataclass(frozen=True, slots=True)
class DataFile:
    """A Parquet file written by a task, not yet part of any table (``path`` relative to the table folder)."""

    table: str
    path: str
    size: int
    rows: int
    mtime_ms: int
    schema: bytes  # serialized Arrow schema of the file

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.ipc.read_schema(pa.py_buffer(self.schema))


class ParquetSink:
    """A new uniquely named Parquet file in ``table_dir``, written a row group per :meth:`write` (a crashed
    attempt's files stay unreferenced by the Delta log, so readers never see them).

    Zstd; dictionary encoding only for the ``dictionary`` columns (few distinct values: an operation, a file name):
    on other columns it cost a third of the writing time and saved nothing after zstd.
    """

    def __init__(self, table_dir: str, key: str, schema: pa.Schema, dictionary: list[str]) -> None:
        self.dir, self.key, self.schema, self.dictionary = table_dir, key, schema, dictionary
        self.name = f"part-{uuid.uuid4().hex}.parquet"
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            os.makedirs(self.dir, exist_ok=True)
            self._writer = pq.ParquetWriter(
                os.path.join(self.dir, self.name), self.schema, compression="zstd", use_dictionary=self.dictionary
            )
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> DataFile | None:
        """Finish the file; what to commit (``None`` when nothing was written)."""
        if self._writer is None:
            return None
        self._writer.close()
        self._writer = None
        st = os.stat(os.path.join(self.dir, self.name))
        schema = self.schema.serialize().to_pybytes()
        return DataFile(self.key, self.name, st.st_size, self.rows, int(st.st_mtime * 1000), schema)


def write_parquet(
    table: pa.Table, table_dir: str, key: str, dictionary: list[str] | None = None, *, part_rows: int = 1 << 19
) -> list[DataFile]:
    """Write ``table`` as new Parquet files in ``table_dir`` (:class:`ParquetSink`): as many files of equal size as
    there are cores, each of at least ``part_rows`` rows (one file for a smaller table, none for an empty one),
    written side by side in threads (pyarrow writes without the GIL)."""
    parts = max(1, min(os.cpu_count() or 1, table.num_rows // part_rows))
    size = max(1, -(-table.num_rows // parts))
    slices = [table.slice(at, size) for at in range(0, table.num_rows, size)]

    def one(part: pa.Table) -> DataFile:
        sink = ParquetSink(table_dir, key, table.schema, dictionary or [])
        sink.write(part)
        done = sink.close()
        assert done is not None
        return done

    if len(slices) <= 1:
        return [one(p) for p in slices]
    with ThreadPoolExecutor(len(slices)) as pool:
        return list(pool.map(one, slices))


def _commit(batch: int, app_id: str = APP_ID) -> CommitProperties:
    return CommitProperties(app_transactions=[Transaction(app_id, batch)])


def txn_version(uri: str, app_id: str = APP_ID) -> int:
    """The last batch committed to the table at ``uri`` (-1 when the table does not exist or has none)."""
    if not DeltaTable.is_deltatable(uri):
        return -1
    v = DeltaTable(uri).transaction_version(app_id)
    return -1 if v is None else int(v)


def table_schema(uri: str) -> pa.Schema | None:
    """The Arrow schema of the Delta table at ``uri``, or ``None`` when there is none."""
    if not DeltaTable.is_deltatable(uri):
        return None
    return pa.schema(DeltaTable(uri).schema().to_arrow())


def _evolve(dt: DeltaTable, schema: pa.Schema) -> None:
    """Add the columns of ``schema`` the table lacks (ALTER TABLE ADD COLUMN upstream): a schema merge."""
    have = set(pa.schema(dt.schema().to_arrow()).names)
    new = [Field.from_arrow(f) for f in schema if f.name not in have]
    if new:
        dt.alter.add_columns(new)


def commit_files(
    uri: str, files: list[DataFile], schema: pa.Schema, batch: int, mode: Literal["append", "overwrite"] = "append"
) -> bool:
    """Add ``files`` to the table at ``uri`` as batch ``batch`` (creating it, adding new columns), or with
    ``mode="overwrite"`` make them its whole content (the same commit removes every file it had); a table that
    already has the batch is left alone (returns ``False``)."""
    if txn_version(uri) >= batch:
        return False
    actions = [AddAction(f.path, f.size, {}, f.mtime_ms, True, json.dumps({"numRecords": f.rows})) for f in files]
    if not DeltaTable.is_deltatable(uri):
        create_table_with_add_actions(
            uri, Schema.from_arrow(schema), actions, mode="error", commit_properties=_commit(batch)
        )
        return True
    dt = DeltaTable(uri)
    _evolve(dt, schema)
    dt = DeltaTable(uri)
    dt.create_write_transaction(
        list[AddAction | RemoveAction](actions),
        mode=mode,
        schema=pa.schema(dt.schema().to_arrow()),
        commit_properties=_commit(batch),
    )
    return True


def overwrite(uri: str, table: pa.Table, batch: int) -> bool:
    """Replace the content of the table at ``uri`` with ``table`` as batch ``batch`` (one atomic commit; columns
    the table lacks are added), unless it already has that batch; whether it wrote.  The rows are written by
    pyarrow, a file per core side by side (the 1.5 M current rows of the benchmark in 0.45 s, where
    delta-rs' own writer took 1.0-1.7 s), then committed like the tasks' files."""
    return _write_once(uri, table, batch, "overwrite")


def append_table(uri: str, table: pa.Table, batch: int) -> bool:
    """Append ``table`` (written by the driver) to the table at ``uri`` as batch ``batch``, once."""
    return _write_once(uri, table, batch, "append")


def _write_once(uri: str, table: pa.Table, batch: int, mode: Literal["append", "overwrite"]) -> bool:
    if txn_version(uri) >= batch:
        return False
    return commit_files(uri, write_parquet(table, uri, ""), table.schema, batch, mode)


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def resolve_rollbacks(uri: str, outcomes: dict[str, bool], batch: int) -> bool:
    """Set ``_rolled_back`` of the change rows of the XA transactions ``outcomes`` names (XID -> rolled back) that
    still wait for it (null), in one commit per table and batch."""
    if not outcomes or not DeltaTable.is_deltatable(uri) or txn_version(uri, XA_APP_ID) >= batch:
        return False
    xids = ", ".join(_sql_text(x) for x in sorted(outcomes))
    rolled = [x for x, rb in sorted(outcomes.items()) if rb]
    value = f"_xid IN ({', '.join(_sql_text(x) for x in rolled)})" if rolled else "false"
    DeltaTable(uri).update(
        updates={"_rolled_back": value},
        predicate=f"_xid IN ({xids}) AND _rolled_back IS NULL",
        commit_properties=_commit(batch, XA_APP_ID),
    )
    return True


def read_table_before(uri: str, batch: int) -> pa.Table | None:
    """The content of the table at ``uri`` before batch ``batch`` was committed to it (time travel back over the
    commits carrying that batch or a later one), or ``None`` when it had none."""
    if not DeltaTable.is_deltatable(uri):
        return None
    dt = DeltaTable(uri)
    version = dt.version()
    while version >= 0 and (DeltaTable(uri, version=version).transaction_version(APP_ID) or -1) >= batch:
        version -= 1
    return DeltaTable(uri, version=version).to_pyarrow_table() if version >= 0 else None


def read_table(uri: str) -> pa.Table | None:
    """The current content of a Delta table (through its log: never the folder's files), or ``None``."""
    if not DeltaTable.is_deltatable(uri):
        return None
    return DeltaTable(uri).to_pyarrow_table()
