"""The snapshot's side of the server: a consistent-snapshot transaction and its binlog point, the tables it takes,
their description, the chunk bounds, and the rows of one chunk read unbuffered into the lake's Arrow types.

How a snapshot transaction learns its binlog point (:func:`begin_snapshot`, one of two methods, chosen by the
server's flavour, :func:`snapshot_method`):

- ``"status"`` (MariaDB): ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` takes an InnoDB read view and, in the same
  step, the binlog position it matches: the ``binlog_snapshot_file``/``binlog_snapshot_position`` status variables
  of that session (MariaDB ``sql/log.cc``, ``binlog_trans_log_savepos``/``set_binlog_snapshot_file``: the position
  of the last transaction committed to the binlog before the read view, taken under ``LOCK_commit_ordered``, so
  every transaction in the view is before it and none after).  No global lock is taken.
- ``"lock"`` (MySQL, which has no such status variables): what ``mysqldump --single-transaction --source-data``
  does (``client/mysqldump.cc``: ``do_flush_tables_read_lock``, ``start_transaction``, the binlog status,
  ``do_unlock_tables``): ``FLUSH LOCAL TABLES`` (waits for long statements without blocking writers), ``FLUSH
  TABLES WITH READ LOCK`` (no commit can happen while it is held: the global read lock and the commit lock of
  MySQL ``sql/lock.cc``, ``Global_read_lock``), ``START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY``, the
  binlog status (file, position, and MySQL's executed GTID set), ``UNLOCK TABLES`` (which ends the global read
  lock but not the transaction).  Both waits are bounded by ``lock_wait_timeout`` (:data:`LOCK_WAIT_SECONDS`), and
  the lock is released on every error.

Each connection is a :class:`~binlake.replication.connection.ReplicationConnection` (PyMySQL: TCP, TLS,
authentication); a Spark task opens its own from a :class:`ServerAddress` (no password travels: the task reads
it from ``password_file`` or ``$BINLAKE_PASSWORD`` where it runs).

Example::

    with connect(address) as conn:
        point = begin_snapshot(conn)
        for batch in read_chunk(conn, table, chunk): ...
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from binlake.changes.filters import ChangeFilter
from binlake.errors import AccessDeniedError, ConnectionLostError, ReplicationError, TableChangedError
from binlake.ingest.arrow import lake_type
from binlake.lake.names import table_dir
from binlake.lake.records import SnapshotChunk, SnapshotPoint, SnapshotTable
from binlake.replication.connection import ReplicationConnection, ServerInfo, translate_errors
from binlake.replication.definitions import SnapshotColumn, collation_ids, quote, read_columns, table_key
from binlake.replication.options import ConnectionOptions, Secret, TlsOptions, read_password
from binlake.replication.privileges import (
    Grants,
    account,
    database_target,
    grant_line,
    read_grants,
    reload_refused,
)
from binlake.replication.resultset import RowBatch, TextResultReader
from binlake.snapshot.columns import column_array, select_expr, to_column

__all__ = [
    "LOCK_WAIT_SECONDS",
    "SYSTEM_SCHEMAS",
    "ServerAddress",
    "SnapshotMethod",
    "begin_snapshot",
    "binlog_seq",
    "check_definition",
    "connect",
    "describe_tables",
    "plan_chunks",
    "read_chunk",
    "select_tables",
    "session_settings",
    "show_create",
    "snapshot_method",
    "snapshot_tables",
]

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """What a process needs to open a snapshot connection, without the password (it pickles into Spark tasks):
    the password comes from ``password_file`` or ``$BINLAKE_PASSWORD`` in the process that connects."""

    host: str
    user: str
    port: int = 3306
    tls: TlsOptions = field(default_factory=TlsOptions)
    password_file: str | None = None
    connect_timeout: float = 10.0
    timeout: float = 600.0

    @classmethod
    def of(cls, options: ConnectionOptions, password_file: str | None = None) -> ServerAddress:
        return cls(options.host, options.user, options.port, options.tls, password_file, options.connect_timeout)

    def options(self, password: Secret | None = None) -> ConnectionOptions:
        """The connection options (``password``: given, else read as the class docstring says)."""
        if password is None:
            path = Path(self.password_file) if self.password_file else None
            password = read_password(path, user=self.user, host=self.host)
        # server_id: required by ConnectionOptions, unused (a snapshot connection never registers as a replica)
        return ConnectionOptions(self.host, self.user, 1, self.port, password, self.tls, 0, self.timeout,
                                 self.connect_timeout)  # fmt: skip


def connect(options: ConnectionOptions) -> ReplicationConnection:
    """An open connection (every failure a :class:`~binlake.errors.ReplicationError`)."""
    conn = ReplicationConnection(options)
    conn.open()
    return conn


def binlog_seq(name: str) -> int:
    """A binlog's sequence number: the numeric extension of its name (``binlake-bin.000042`` -> 42), as
    :func:`binlake.binlogs.list_binlogs` numbers files."""
    m = re.search(r"\.(\d+)$", name)
    if m is None:
        raise ReplicationError(f"a binlog name without a numeric extension: {name!r}")
    return int(m.group(1))


SnapshotMethod = Literal["status", "lock"]

# How long the global read lock (and the FLUSH before it) may wait for another session's lock or long statement:
# ``lock_wait_timeout`` of the snapshot's session while it takes the lock (MySQL and MariaDB apply it to FLUSH
# TABLES and FLUSH TABLES WITH READ LOCK); writers wait for the lock at most this long too.
LOCK_WAIT_SECONDS = 10


def snapshot_method(info: ServerInfo) -> SnapshotMethod:
    """How a snapshot on the server ``info`` describes finds its binlog point (module docstring): MariaDB's
    snapshot status variables, else (MySQL) the brief global read lock."""
    return "status" if info.flavor == "mariadb" else "lock"


def session_settings(info: ServerInfo) -> list[str]:
    """The statements a snapshot's session runs before its transaction: time zone UTC (TIMESTAMP values as the
    binlog holds them), REPEATABLE READ (the consistent snapshot's isolation), and on MySQL fresh table statistics
    (``information_schema_stats_expiry``, 86400 s by default since 8.0.3, else ``TABLE_ROWS``, which the chunk plan
    reads, can be a day old)."""
    out = ["SET SESSION time_zone = '+00:00'", "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"]
    if info.flavor == "mysql":
        out.append("SET SESSION information_schema_stats_expiry = 0")
    return out


def begin_snapshot(conn: ReplicationConnection, method: SnapshotMethod | None = None) -> SnapshotPoint:
    """Start a consistent-snapshot transaction on ``conn`` (its session set as :func:`session_settings` says) and
    return its binlog point, found by ``method`` (default: :func:`snapshot_method` of the server; see the module
    docstring)."""
    info = conn.info
    if info is None:
        raise ReplicationError("the connection is not open")
    method = method or snapshot_method(info)
    with translate_errors(conn.options), conn.cursor() as cur:
        for sql in session_settings(info):
            cur.execute(sql)
    gtid: str | None = None
    if method == "status":
        file, pos = _snapshot_status(conn)
    else:
        file, pos, gtid = _under_read_lock(conn)
    if not file:
        raise ReplicationError(f"binary logging is off on {conn.options.address}: no binlog point to stream from")
    if info.flavor == "mariadb":  # MySQL's is the executed GTID set the binlog status gave under the lock
        gtid = conn.binlog_gtid_pos(file, pos)
    return SnapshotPoint(binlog_seq(file), pos, file, gtid, info.flavor)


def _snapshot_status(conn: ReplicationConnection) -> tuple[str, int]:
    """MariaDB: the transaction and the ``binlog_snapshot_file``/``binlog_snapshot_position`` it matches."""
    with translate_errors(conn.options), conn.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        cur.execute("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")
        status = {str(k).lower(): str(v) for k, v in cur.fetchall()}
    return status.get("binlog_snapshot_file", ""), int(status.get("binlog_snapshot_position", 0) or 0)


def _under_read_lock(conn: ReplicationConnection) -> tuple[str, int, str | None]:
    """The transaction and the binlog status under the global read lock (module docstring): file, position and
    (MySQL) the executed GTID set.  The lock is released before this returns, whatever happens; an error while
    releasing it after another error is dropped (the first one is the one to see; a session that is gone has
    lost its lock with it)."""
    where = conn.options.address
    with translate_errors(conn.options), conn.cursor() as cur:
        cur.execute(f"SET SESSION lock_wait_timeout = {int(LOCK_WAIT_SECONDS)}")
    try:
        try:
            with translate_errors(conn.options), conn.cursor() as cur:
                cur.execute("FLUSH LOCAL TABLES")
                cur.execute("FLUSH TABLES WITH READ LOCK")
        except AccessDeniedError:
            raise ReplicationError(reload_refused(conn)) from None
        except ReplicationError as e:
            if isinstance(e, ConnectionLostError):
                raise
            raise ReplicationError(
                f"the snapshot's global read lock (FLUSH TABLES WITH READ LOCK, needs RELOAD) on {where} was not "
                f"taken within {LOCK_WAIT_SECONDS} s or was refused: {e}"
            ) from None
        with translate_errors(conn.options), conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        status = conn.binlog_status()
    except BaseException:
        with contextlib.suppress(ReplicationError):
            _unlock(conn)
        raise
    _unlock(conn)
    return status


def _unlock(conn: ReplicationConnection) -> None:
    """``UNLOCK TABLES`` (the global read lock ends, the transaction goes on: MySQL's "Interaction of Table Locking
    and Transactions") and the session's ``lock_wait_timeout`` back to the server's."""
    with translate_errors(conn.options), conn.cursor() as cur:
        cur.execute("UNLOCK TABLES")
        cur.execute("SET SESSION lock_wait_timeout = DEFAULT")


def select_tables(conn: ReplicationConnection, globs: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The base tables the snapshot takes: those matching one of ``globs`` (``db.table`` or ``table`` globs, as
    :class:`~binlake.changes.filters.ChangeFilter` reads them), by default every one outside the system schemas."""
    wanted = ChangeFilter(tables=tuple(globs))
    rows = conn.query(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
        "ORDER BY TABLE_SCHEMA, TABLE_NAME"
    )
    out = []
    for db, name in rows:
        db, name = str(db), str(name)
        if db.lower() in SYSTEM_SCHEMAS and not globs:
            continue
        if wanted.wants_table(db, name):
            out.append((db, name))
    return out


def snapshot_tables(conn: ReplicationConnection, globs: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The tables a snapshot takes (:func:`select_tables`), or :class:`~binlake.errors.ReplicationError` naming the
    privilege the user lacks where it cannot read what the snapshot should take (an empty snapshot would start the
    stream at the server's current point, and the rows already there would never land):

    - no table matches the ``globs`` given;
    - no table at all is visible (``information_schema`` lists only the tables a user has some privilege on) and
      the grants do not give SELECT on ``*.*`` (the server may have tables the user cannot see; with it, a server
      without tables gives an empty snapshot);
    - SELECT is refused on a table it lists (``SELECT ... LIMIT 0`` is tried on each).
    """
    names = select_tables(conn, globs)
    if not names:
        grants = read_grants(conn)
        if not globs and grants.has_global("SELECT"):
            return []  # the user sees every table: the server has none
        raise ReplicationError(_nothing_to_read(conn, globs, grants))
    refused = []
    for db, name in names:
        try:
            conn.query(f"SELECT 1 FROM {quote(db)}.{quote(name)} LIMIT 0")
        except AccessDeniedError:
            refused.append((db, name))
    if refused:
        who = account(conn)
        dbs = sorted({db for db, _ in refused})
        grants_needed = "; ".join(grant_line("SELECT", database_target(db), who) for db in dbs)
        listed = ", ".join(f"{db}.{name}" for db, name in refused[:10]) + (", ..." if len(refused) > 10 else "")
        raise ReplicationError(f"user {who} lacks SELECT on {listed}: the snapshot cannot read them ({grants_needed})")
    return names


def _nothing_to_read(conn: ReplicationConnection, globs: Sequence[str], grants: Grants) -> str:
    """The refusal of a snapshot that finds no table to read (:func:`snapshot_tables`)."""
    who = account(conn)
    where = conn.options.address
    if not globs:
        return (
            f"the snapshot found no table on {where}; user {who} lacks SELECT on *.* and sees none: the rows "
            f"already there would never land ({grant_line('SELECT', 'db.*', who)} for each database to snapshot, "
            "or --tables; --no-snapshot streams without a snapshot)"
        )
    named = sorted({g.split(".", 1)[0] for g in globs if "." in g and not any(c in g.split(".", 1)[0] for c in "*?[")})
    lacking = [db for db in named if not grants.may_select(db)]
    found = f"the snapshot found no table matching {', '.join(globs)} on {where}"
    if lacking:
        needed = "; ".join(grant_line("SELECT", database_target(db), who) for db in lacking)
        return f"{found}; user {who} lacks SELECT on {', '.join(lacking)} ({needed})"
    if not grants.selects_anything():
        return f"{found}; user {who} lacks SELECT ({grant_line('SELECT', 'db.*', who)})"
    return f"{found}: no such table that user {who} can see"


def describe_tables(conn: ReplicationConnection, tables: Sequence[tuple[str, str]]) -> list[SnapshotTable]:
    """Each table's columns, the key its table maps log (:func:`~binlake.replication.definitions.row_key`),
    ``SHOW CREATE TABLE`` (where the stream's DDL tracking starts from) and row estimate, in the transaction of
    ``conn``."""
    out = []
    collations = collation_ids(conn)
    for db, name in tables:
        cols = read_columns(conn, db, name, collations)
        with translate_errors(conn.options), conn.cursor() as cur:
            create = show_create(cur, db, name)
            cur.execute(
                "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (db, name),
            )
            est = cur.fetchone()
        pk = table_key(conn, db, name)
        rows = int(str(est[0])) if est is not None and est[0] is not None else 0
        out.append(SnapshotTable(table_dir(db, name), db, name, cols, pk, create, rows))
    return out


def show_create(cur: Any, db: str, name: str) -> str:
    """``SHOW CREATE TABLE`` of ``db.name`` on the cursor ``cur`` (inside :func:`translate_errors`)."""
    cur.execute(f"SHOW CREATE TABLE {quote(db)}.{quote(name)}")
    return str(cur.fetchone()[1])


# the table option that changes with every insert into an AUTO_INCREMENT table, not with its definition
_AUTO_INCREMENT = re.compile(r" AUTO_INCREMENT=\d+")


def check_definition(conn: ReplicationConnection, table: SnapshotTable) -> None:
    """Raise :class:`~binlake.errors.TableChangedError` unless ``table`` is still defined as the snapshot's plan
    found it.  A chunk reader asks it after its SELECT, in the same transaction: the SELECT's metadata lock keeps
    the definition from changing until the transaction ends, so a definition equal to the plan's after the SELECT
    is the one the SELECT read (an ALTER between the read view and the SELECT gives the same answer, or error 1412
    from the SELECT itself)."""
    with translate_errors(conn.options), conn.cursor() as cur:
        now = show_create(cur, table.database, table.name)
    if _AUTO_INCREMENT.sub("", now) != _AUTO_INCREMENT.sub("", table.create):
        raise TableChangedError(f"{table.database}.{table.name} was altered while the snapshot ran")


def _chunked_by(table: SnapshotTable) -> SnapshotColumn | None:
    """The column chunks are cut on: the first primary-key column, when it is an integer."""
    if not table.primary_key:
        return None
    first = next(c for c in table.columns if c.name.casefold() == table.primary_key[0].casefold())
    return first if first.data_type in ("tinyint", "smallint", "mediumint", "int", "bigint") else None


def plan_chunks(conn: ReplicationConnection, tables: Sequence[SnapshotTable], chunk_rows: int) -> list[SnapshotChunk]:
    """The chunks of every table: a table keyed by an integer (first key column) in ranges of that column of about
    ``chunk_rows`` rows each (from its bounds and row estimate, read in the transaction of ``conn``; the first and
    last ranges open-ended, so rows written after the bounds were read still fall in one); any other table in one
    chunk."""
    chunks: list[SnapshotChunk] = []
    for t in tables:
        col = _chunked_by(t)
        parts = -(-t.rows // max(1, chunk_rows))
        if col is None or parts <= 1:
            chunks.append(SnapshotChunk(len(chunks), t.key))
            continue
        q = quote(col.name)
        lo, hi = conn.query(f"SELECT MIN({q}), MAX({q}) FROM {quote(t.database)}.{quote(t.name)}")[0]
        if lo is None:
            chunks.append(SnapshotChunk(len(chunks), t.key))
            continue
        lo, hi = int(lo), int(hi)
        step = max(1, -(-(hi - lo + 1) // parts))
        cuts = list(range(lo + step, hi + 1, step))
        bounds: list[int | None] = [None, *cuts, None]
        for a, b in itertools.pairwise(bounds):
            chunks.append(SnapshotChunk(len(chunks), t.key, a, b))
    return chunks


def chunk_query(table: SnapshotTable, chunk: SnapshotChunk) -> str:
    """The SELECT of one chunk: every column (invisible ones too: the binlog holds them) by its exact
    expression."""
    cols = ", ".join(select_expr(c) for c in table.columns)
    sql = f"SELECT {cols} FROM {quote(table.database)}.{quote(table.name)}"
    conds = []
    if chunk.lo is not None or chunk.hi is not None:
        col = quote(table.primary_key[0])
        if chunk.lo is not None:
            conds.append(f"{col} >= {int(chunk.lo)}")
        if chunk.hi is not None:
            conds.append(f"{col} < {int(chunk.hi)}")
    return sql + (" WHERE " + " AND ".join(conds) if conds else "")


def lake_fields(table: SnapshotTable) -> list[pa.Field]:
    """The table's lake columns (names and types as the stream's FULL table maps give them)."""
    return [pa.field(c.name, lake_type(to_column(i, c, None))) for i, c in enumerate(table.columns)]


def read_chunk(
    conn: ReplicationConnection, table: SnapshotTable, chunk: SnapshotChunk, *, batch_bytes: int = 4 << 20
) -> Iterator[pa.Table]:
    """The rows of ``chunk`` in the snapshot transaction of ``conn``, as Arrow tables of the table's lake columns
    (:func:`lake_fields`) of about ``batch_bytes`` of row data each: the SELECT's answer is read from the socket
    as it comes (:class:`~binlake.replication.resultset.TextResultReader`), so memory holds one batch whatever the
    table's size."""
    fields = lake_fields(table)
    schema = pa.schema(fields)
    cols = [to_column(i, c, None) for i, c in enumerate(table.columns)]
    reader = TextResultReader()
    pending: list[RowBatch] = []
    size = 0
    conn.send_query(chunk_query(table, chunk))
    while not reader.done:
        reader.feed(conn.read())
        for batch in reader.batches():
            pending.append(batch)
            size += sum(len(d) for _, _, d in batch.columns)
        if pending and (size >= batch_bytes or reader.done):
            defs = reader.columns or []
            if len(defs) != len(fields):
                raise ReplicationError(f"{table.key}: the SELECT gave {len(defs)} columns, not {len(fields)}")
            arrays = [
                column_array(sc, c, f.type, _cells(pending, i), d)
                for i, (sc, f, c, d) in enumerate(zip(table.columns, fields, cols, defs, strict=True))
            ]
            yield pa.Table.from_arrays(arrays, schema=schema)
            pending, size = [], 0


def _cells(batches: Sequence[RowBatch], i: int) -> pa.Array:
    """Column ``i`` of ``batches`` as one Arrow binary array (the buffers as the reader cut them)."""
    parts = [pa.Array.from_buffers(pa.binary(), b.rows, list(map(pa.py_buffer, b.columns[i]))) for b in batches]
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
