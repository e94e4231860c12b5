"""A server's table definitions, read from ``information_schema``: the :class:`~binlake.columns.SchemaSource` of a
stream read from a server (``ingest --host``, ``changes --host``, ``tail``), for the facts neither its table maps
(``binlog_row_metadata=NO_LOG`` or ``MINIMAL``) nor the DDL it reads say.

One table's definition is read on its own connection when a :class:`~binlake.columns.ColumnCatalog` first needs it
(once per table for a change stream; for a live ingest, once per batch in which a table shows a layout the lake has
not landed): ``information_schema.COLUMNS`` (:func:`read_columns`, the snapshot's reader too: names in
``ORDINAL_POSITION`` order, ``COLUMN_TYPE`` read by the DDL tracker's own column reader, so ``unsigned`` and
ENUM/SET members are read as in a ``CREATE TABLE``, and ``COLLATION_NAME`` by the server's own collation ids),
``information_schema.TABLES`` (a MariaDB SEQUENCE) and ``SHOW INDEX`` (the key the table maps log:
:func:`row_key`).  It is the definition at the moment it
is read, which may be newer than the position being decoded: :mod:`binlake.columns` says where it is trusted.

A user who may not see the table (``information_schema`` shows only what a user has some privilege on) gets no
definition: the table's columns stay as the stream says them, and ``log`` says so each time it is asked, with the
grant that would help.

Example::

    definitions = ServerDefinitions(options)
    ChangeStream(ServerSource(client, definitions=definitions))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from binlake.errors import ReplicationError
from binlake.replication.connection import ReplicationConnection, translate_errors
from binlake.replication.options import ConnectionOptions
from binlake.schema import TableSchema, column_from_sql

__all__ = ["ServerDefinitions", "SnapshotColumn", "collation_ids", "quote", "read_columns", "row_key", "table_key"]


@dataclass(frozen=True, slots=True)
class SnapshotColumn:
    """One column as ``information_schema.COLUMNS`` describes it (what :mod:`binlake.snapshot.columns` turns into
    the table map's :class:`~binlake.coltypes.Column` and into the SELECT expression that reads it exactly)."""

    name: str
    data_type: str  # lower case: int, varchar, enum, inet6 ...
    column_type: str  # the full declaration: int(10) unsigned, enum('a','b') ...
    nullable: bool
    precision: int | None  # NUMERIC_PRECISION (BIT: its width)
    scale: int | None
    fsp: int | None  # DATETIME_PRECISION
    length: int | None  # CHARACTER_MAXIMUM_LENGTH
    collation: int | None  # the collation's id: the table map's charset entry

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "data_type": self.data_type, "column_type": self.column_type,
                "nullable": self.nullable, "precision": self.precision, "scale": self.scale, "fsp": self.fsp,
                "length": self.length, "collation": self.collation}  # fmt: skip

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> SnapshotColumn:
        def opt(k: str) -> int | None:
            return None if v.get(k) is None else int(v[k])

        return cls(str(v["name"]), str(v["data_type"]), str(v["column_type"]), bool(v["nullable"]), opt("precision"),
                   opt("scale"), opt("fsp"), opt("length"), opt("collation"))  # fmt: skip


def quote(name: str) -> str:
    """A name as a backquoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def collation_ids(conn: ReplicationConnection) -> dict[str, int]:
    """Every collation's id by its full name: MariaDB 10.10+ lists those shared by several charsets
    (``utf8mb4_uca1400_ai_ci``) only in ``COLLATION_CHARACTER_SET_APPLICABILITY.FULL_COLLATION_NAME``."""
    ids = {
        str(n): int(i)
        for n, i in conn.query("SELECT COLLATION_NAME, ID FROM information_schema.COLLATIONS")
        if i is not None
    }
    try:
        rows = conn.query(
            "SELECT FULL_COLLATION_NAME, ID FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY"
        )
    except ReplicationError:  # before MariaDB 10.10: no such column
        return ids
    ids.update({str(n): int(i) for n, i in rows if n is not None and i is not None})
    return ids


def row_key(index_rows: Sequence[Sequence[Any]]) -> tuple[str, ...]:
    """The key the server's table maps log as the primary key, from ``SHOW INDEX`` rows (in key order): the
    PRIMARY KEY, else the first UNIQUE key of NOT NULL columns, which InnoDB and the table share treat as the
    primary key (MariaDB ``sql/table.cc``, ``init_from_binary_frm_image``: ``primary_key``)."""
    keys: dict[str, list[tuple[str | None, bool]]] = {}
    for r in index_rows:  # Table, Non_unique, Key_name, Seq_in_index, Column_name, ..., Null (index 9)
        if int(r[1]) == 0:  # a MySQL functional key part has no Column_name (NULL): no column of the row
            keys.setdefault(str(r[2]), []).append((None if r[4] is None else str(r[4]), str(r[9] or "") == ""))
    named = {k: [c for c, _ in cols if c is not None] for k, cols in keys.items()}
    if "PRIMARY" in keys:
        return tuple(named["PRIMARY"])
    for k, cols in keys.items():
        if all(c is not None and not_null for c, not_null in cols):
            return tuple(named[k])
    return ()


def read_columns(
    conn: ReplicationConnection, db: str, name: str, collations: dict[str, int] | None = None
) -> tuple[SnapshotColumn, ...]:
    """``db.name``'s columns as ``information_schema.COLUMNS`` describes them, in table order (none: a table the
    user may not see, or no such table); ``collations``: :func:`collation_ids` (read when not given)."""
    ids = collation_ids(conn) if collations is None else collations
    with translate_errors(conn.options), conn.cursor() as cur:
        cur.execute(
            "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, c.IS_NULLABLE, c.NUMERIC_PRECISION, "
            "c.NUMERIC_SCALE, c.DATETIME_PRECISION, c.CHARACTER_OCTET_LENGTH, c.COLLATION_NAME FROM "
            "information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = %s AND c.TABLE_NAME = %s "
            "ORDER BY c.ORDINAL_POSITION",
            (db, name),
        )
        rows = cur.fetchall()
    return tuple(
        SnapshotColumn(
            str(r[0]),
            str(r[1]).lower(),
            str(r[2]),
            r[3] == "YES",
            _int(r[4]),
            _int(r[5]),
            _int(r[6]),
            _int(r[7]),
            None if r[8] is None else ids.get(str(r[8])),
        )
        for r in rows
    )


def table_key(conn: ReplicationConnection, db: str, name: str) -> tuple[str, ...]:
    """The key ``db.name``'s table maps log (``SHOW INDEX``: :func:`row_key`)."""
    with translate_errors(conn.options), conn.cursor() as cur:
        cur.execute(f"SHOW INDEX FROM {quote(db)}.{quote(name)}")
        return row_key(cur.fetchall())


def _int(v: object) -> int | None:
    return None if v is None else int(str(v))


class ServerDefinitions:
    """The tables of the server ``options`` names as its ``information_schema`` defines them now (module
    docstring); ``log`` gets one line per table that cannot be read."""

    def __init__(self, options: ConnectionOptions, log: Callable[[str], None] | None = None) -> None:
        self.options = options
        self.log = log

    def table(self, schema: str, name: str) -> TableSchema | None:
        """``schema.name`` as the server defines it, ``None`` when it cannot be read (gone, not visible to the
        user, the server unreachable: said in one line to ``log``)."""
        try:
            with ReplicationConnection(self.options) as conn:
                conn.open()
                found = self._read(conn, schema, name)
        except ReplicationError as e:
            self._say(f"{schema}.{name}: the server's definition cannot be read: {e}")
            return None
        if found is None:
            self._say(
                f"{schema}.{name}: the server shows user {self.options.user!r} no such table: its columns stay as the "
                f"binlog says them (names col_N, strings as bytes where no DDL says more; GRANT SELECT ON "
                f"{quote(schema)}.* TO {self.options.user!r} shows them)"
            )
        return found

    def _say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)

    def _read(self, conn: ReplicationConnection, schema: str, name: str) -> TableSchema | None:
        found = read_columns(conn, schema, name)
        if not found:
            return None
        with translate_errors(self.options), conn.cursor() as cur:
            cur.execute(
                "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (schema, name),
            )
            kind = cur.fetchall()
        key = table_key(conn, schema, name)
        columns = []
        for c in found:
            col = column_from_sql(c.name, c.column_type)
            if col is None:
                return None  # a type the DDL reader does not read: no definition rather than a wrong one
            columns.append(replace(col, charset=c.collation) if c.collation is not None else col)
        sequence = bool(kind) and str(kind[0][0]).upper() == "SEQUENCE"
        return TableSchema(schema, name, tuple(columns), key, sequence)
