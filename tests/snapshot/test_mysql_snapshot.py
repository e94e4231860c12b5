"""The MySQL side of the snapshot, which no server here can run: the statements ``begin_snapshot`` sends to a MySQL
8.0-9.x server and in which order (the brief global read lock of ``mysqldump --single-transaction
--source-data``), the binlog status statement MySQL 8.2 renamed and 8.4 left alone, the rows it answers, the lock
released on every error; and the columns of a MySQL FULL table map, against the maps MySQL 8.0.26-9.0.1 wrote in
the corpus and against the facts the MySQL sources document.  Every answer of the fake connection is what the MySQL
reference manual shows for that statement (``SHOW BINARY LOG STATUS``: File, Position, Binlog_Do_DB,
Binlog_Ignore_DB, Executed_Gtid_Set with a newline after each comma)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql.err
import pytest

from binlake.coltypes import ColumnType as T
from binlake.errors import ConnectionLostError, ReplicationError
from binlake.ingest.arrow import lake_type
from binlake.ingest.extract import column_info
from binlake.lake.records import SnapshotPoint
from binlake.replication.connection import ReplicationConnection, ServerInfo, binlog_status_statement
from binlake.replication.definitions import SnapshotColumn
from binlake.replication.options import ConnectionOptions, Secret
from binlake.snapshot import server as snapshot_server
from binlake.snapshot.columns import to_column
from binlake.snapshot.server import begin_snapshot, session_settings, snapshot_method

UUID_A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID_B = "5d1c7a31-0f61-11ef-8a4b-0242ac120002"
GTIDS = f"{UUID_A.upper()}:1-5,\n{UUID_B}:1-3:7"  # as MySQL prints Executed_Gtid_Set: a newline after each comma


def _info(version: str) -> ServerInfo:
    return ServerInfo("mariadb" if "mariadb" in version.lower() else "mysql", version, 1, "CRC32", False)


class FakeServer:
    """A PyMySQL connection's stand-in: records every statement, answers from ``answers`` (statement -> rows, or
    an exception to raise)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers, self.sent = answers, []  # type: ignore[var-annotated]

    def cursor(self, cls: object = None) -> FakeCursor:
        return FakeCursor(self)


class FakeCursor:
    def __init__(self, server: FakeServer) -> None:
        self.server, self.rows = server, []  # type: ignore[var-annotated]

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, args: object = None) -> int:
        self.server.sent.append(sql if args is None else (sql, args))
        answer = self.server.answers.get(sql, [])
        if isinstance(answer, BaseException):
            raise answer
        self.rows = list(answer)
        return len(self.rows)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None


def _connection(version: str, answers: dict[str, Any]) -> tuple[ReplicationConnection, FakeServer]:
    conn = ReplicationConnection(ConnectionOptions("db1", "snap", 1, 3306, Secret("pw")))
    fake = FakeServer(answers)
    conn._conn = fake  # type: ignore[assignment]
    conn.info = _info(version)
    return conn, fake


def _status(file: str = "binlog.000042", pos: int = 1307, gtid: str | None = GTIDS) -> list[tuple[Any, ...]]:
    return [(file, pos, "", "", gtid)]


LOCKED = ["FLUSH LOCAL TABLES", "FLUSH TABLES WITH READ LOCK", "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"]
UNLOCK = ["UNLOCK TABLES", "SET SESSION lock_wait_timeout = DEFAULT"]


@pytest.mark.parametrize(
    ("version", "statement"),
    [
        ("8.0.36", "SHOW MASTER STATUS"),
        ("8.0.40-0ubuntu0.22.04.1", "SHOW MASTER STATUS"),
        ("8.1.0", "SHOW MASTER STATUS"),
        ("8.2.0", "SHOW BINARY LOG STATUS"),  # added in 8.2.0, SHOW MASTER STATUS deprecated there
        ("8.3.0-commercial", "SHOW BINARY LOG STATUS"),
        ("8.4.3", "SHOW BINARY LOG STATUS"),  # 8.4 has only this
        ("9.1.0", "SHOW BINARY LOG STATUS"),
        ("10.11.6-MariaDB-log", "SHOW MASTER STATUS"),  # MariaDB's new name is SHOW BINLOG STATUS (10.5.2)
        ("11.4.2-MariaDB", "SHOW MASTER STATUS"),
    ],
)
def test_binlog_status_statement_by_version(version: str, statement: str) -> None:
    assert binlog_status_statement(_info(version)) == statement


@pytest.mark.parametrize("version", ["8.0.36", "8.4.3", "9.1.0"])
def test_mysql_snapshot_takes_the_brief_lock(version: str) -> None:
    """The statements, in mysqldump's order, and the point of the row the server answers (its GTID set without
    MySQL's newlines, the point's flavor MySQL, so the stream resumes with a MySQL GTID tracker)."""
    status = binlog_status_statement(_info(version))
    conn, fake = _connection(version, {status: _status()})
    assert snapshot_method(_info(version)) == "lock"
    point = begin_snapshot(conn)
    assert fake.sent == [
        *session_settings(_info(version)),
        "SET SESSION lock_wait_timeout = 10",
        *LOCKED,
        status,
        *UNLOCK,
    ]
    assert session_settings(_info(version))[-1] == "SET SESSION information_schema_stats_expiry = 0"
    assert point == SnapshotPoint(42, 1307, "binlog.000042")
    assert (point.file, point.gtid, point.flavor) == ("binlog.000042", f"{UUID_A.upper()}:1-5,{UUID_B}:1-3:7", "mysql")
    resume = point.resume_point()
    assert (resume.file, resume.position, resume.gtid, resume.flavor) == ("binlog.000042", 1307, point.gtid, "mysql")
    assert SnapshotPoint.from_json(point.to_json()).flavor == "mysql"


def test_mysql_without_gtids() -> None:
    """gtid_mode OFF: Executed_Gtid_Set is empty (the empty set); a server that sends no such column: unknown."""
    conn, _ = _connection("8.0.36", {"SHOW MASTER STATUS": _status(gtid="")})
    assert begin_snapshot(conn).gtid == ""
    conn, _ = _connection("8.0.36", {"SHOW MASTER STATUS": [("binlog.000001", 4, "", "")]})
    assert begin_snapshot(conn).gtid is None


def test_mariadb_lock_method_reads_the_gtid_position() -> None:
    """MariaDB's status row has no GTID column: the point's GTID state is BINLOG_GTID_POS of its file and position;
    MariaDB's own method is the snapshot status variables, without a lock."""
    version = "10.11.6-MariaDB-log"
    answers: dict[str, Any] = {
        "SHOW MASTER STATUS": [("mariadb-bin.000003", 385, "", "")],
        "SELECT BINLOG_GTID_POS(%s, %s)": [("0-1-77",)],
        "SHOW SESSION STATUS LIKE 'binlog_snapshot_%'": [
            ("Binlog_snapshot_file", "mariadb-bin.000003"),
            ("Binlog_snapshot_position", "385"),
        ],
    }
    conn, fake = _connection(version, answers)
    point = begin_snapshot(conn, "lock")
    assert (point.file, point.position, point.gtid, point.flavor) == ("mariadb-bin.000003", 385, "0-1-77", "mariadb")
    assert fake.sent[-1] == ("SELECT BINLOG_GTID_POS(%s, %s)", ("mariadb-bin.000003", 385))
    assert "FLUSH TABLES WITH READ LOCK" in fake.sent and "information_schema_stats_expiry" not in str(fake.sent)
    conn, fake = _connection(version, answers)
    assert snapshot_method(_info(version)) == "status"
    assert begin_snapshot(conn) == point and "FLUSH TABLES WITH READ LOCK" not in fake.sent


def _error(code: int, message: str) -> pymysql.err.OperationalError:
    return pymysql.err.OperationalError(code, message)


@pytest.mark.parametrize(
    ("failing", "error", "says"),
    [
        ("FLUSH TABLES WITH READ LOCK", _error(1205, "Lock wait timeout exceeded"), "not taken within 10 s"),
        ("FLUSH LOCAL TABLES", _error(1227, "Access denied; you need the RELOAD privilege"), "'snap'@'%' lacks RELOAD"),
        ("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", _error(1792, "read-only"), "1792"),
        ("SHOW BINARY LOG STATUS", _error(1227, "Access denied; you need REPLICATION CLIENT"), "1227"),
        ("SHOW BINARY LOG STATUS", [], "binary logging is off"),
        ("SHOW BINARY LOG STATUS", _error(2013, "Lost connection to MySQL server during query"), "Lost connection"),
    ],
)
def test_the_lock_is_released_on_every_error(failing: str, error: Any, says: str) -> None:
    """Whatever step fails, UNLOCK TABLES is sent before the error reaches the caller, and the error is a
    ReplicationError that says what failed."""
    answers: dict[str, Any] = {"SHOW BINARY LOG STATUS": _status(), failing: error}
    conn, fake = _connection("8.4.3", answers)
    with pytest.raises(ReplicationError, match=says):
        begin_snapshot(conn)
    assert fake.sent[-2:] == UNLOCK
    assert fake.sent.count("UNLOCK TABLES") == 1


def test_an_error_while_unlocking_after_an_error_keeps_the_first() -> None:
    """The connection dropped: the status fails, the UNLOCK TABLES fails too (the server ends a dead session's
    lock); the caller sees the first error."""
    lost = _error(2013, "Lost connection to MySQL server during query")
    conn, _ = _connection("8.4.3", {"SHOW BINARY LOG STATUS": _error(1227, "Access denied"), "UNLOCK TABLES": lost})
    with pytest.raises(ReplicationError, match="1227") as e:
        begin_snapshot(conn)
    assert not isinstance(e.value, ConnectionLostError)
    conn, _ = _connection("8.4.3", {"SHOW BINARY LOG STATUS": _status(), "UNLOCK TABLES": lost})
    with pytest.raises(ConnectionLostError):  # the snapshot itself worked: the failed unlock is the error
        begin_snapshot(conn)


def test_lock_wait_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_server, "LOCK_WAIT_SECONDS", 3)
    conn, fake = _connection("8.0.36", {"SHOW MASTER STATUS": _status()})
    begin_snapshot(conn)
    assert "SET SESSION lock_wait_timeout = 3" in fake.sent
    assert fake.sent.index("SET SESSION lock_wait_timeout = 3") < fake.sent.index("FLUSH LOCAL TABLES")


# -- the columns of a MySQL FULL table map --------------------------------------------------------------------------


def _col(name: str, data_type: str, column_type: str, **kw: Any) -> SnapshotColumn:
    """A column as MySQL 8's information_schema.COLUMNS describes it."""
    facts: dict[str, Any] = {"nullable": True, "precision": None, "scale": None, "fsp": None, "length": None}
    facts["collation"] = None
    facts.update(kw)
    return SnapshotColumn(name, data_type, column_type, **facts)


UTF8MB4 = 255  # utf8mb4_0900_ai_ci, MySQL 8's default collation
# The corpus's MySQL tables with FULL metadata, each column as MySQL's information_schema describes it (from the
# CREATE TABLE in the same binlog).
CORPUS_TABLES: dict[tuple[str, str], list[SnapshotColumn]] = {
    ("vector.binlog", "bar"): [
        _col("id", "bigint", "bigint unsigned", nullable=False, precision=20, scale=0),
        _col("vector_column", "vector", "vector(2)", nullable=False, length=8),
        _col("foo", "text", "text", length=65535, collation=UTF8MB4),
        _col("vector_column2", "vector", "vector(4)", nullable=False, length=16),
    ],
    ("mysql-enum-string-set.000001", "t"): [
        _col("f1", "char", "char(128)", length=512, collation=UTF8MB4),
        _col("f2", "varchar", "varchar(300)", length=1200, collation=UTF8MB4),
        _col("f3", "enum", "enum('var1','variant2','foo')", length=32, collation=UTF8MB4),
        _col("f4", "set", "set('one','two','three','four')", length=72, collation=UTF8MB4),
        _col("f5", "text", "text", length=65535, collation=UTF8MB4),
    ],
    ("binlog-invisible-columns.000001", "t1"): [
        _col("f1", "int", "int unsigned", precision=10, scale=0),
        _col("f2", "int", "int unsigned", precision=10, scale=0),
        _col("f3", "int", "int", precision=10, scale=0),
        _col("f4", "text", "text", length=65535, collation=UTF8MB4),
        _col("f5", "blob", "blob", length=65535),
        _col("f6", "bigint", "bigint unsigned", precision=20, scale=0),
    ],
    ("mysql_type_bit.000001", "foo"): [
        _col("a", "bit", "bit(3)", precision=3),
        _col("b", "text", "text", length=65535, collation=UTF8MB4),
        _col("c", "bit", "bit(8)", precision=8),
    ],
    ("json-opaque.binlog", "test"): [_col("a", "json", "json")],
}
PRIMARY_KEYS = {("vector.binlog", "bar"): ["id"]}  # SERIAL: a UNIQUE NOT NULL key, logged as the primary key
INVISIBLE = {("binlog-invisible-columns.000001", "t1"): {"f1", "f2", "f6"}}


def test_mysql_columns_are_the_corpus_table_maps(corpus_dir: Path) -> None:
    """Every fact of every column of the MySQL 8.0.26-9.0.1 FULL table maps in the corpus, but the visibility of an
    INVISIBLE column (information_schema does not say it: the README's gap)."""
    from binlake.events.table_map import TableMapEvent
    from binlake.reader import read_events

    checked = 0
    for (name, table), cols in CORPUS_TABLES.items():
        maps = [
            ev
            for ev in read_events(str(corpus_dir / "mysql" / "rust_mysql_common" / name))
            if isinstance(ev, TableMapEvent) and ev.table == table
        ]
        assert maps, (name, table)
        pk = PRIMARY_KEYS.get((name, table), [])
        for i, (c, m) in enumerate(zip(cols, maps[-1].columns, strict=True)):
            mine = to_column(i, c, pk.index(c.name) if c.name in pk else None, "mysql")
            want = column_info(m, m.name or "")
            if c.name in INVISIBLE.get((name, table), ()):
                assert want["visible"] is False
                want["visible"] = True
            assert column_info(mine, c.name) == want, (name, table, c.name)
            assert lake_type(mine) == lake_type(m)
            checked += 1
    assert checked == 19


# What a MySQL 8.0.21+ FULL map says of each type that differs from MariaDB's or only MySQL has (the sources:
# binlake.coltypes.MetadataWriter; Field_year, Field_geom, Field_json, Field_vector of MySQL sql/field.h)
MYSQL_ONLY: list[tuple[SnapshotColumn, dict[str, Any]]] = [
    (_col("y", "year", "year"), {"type_code": T.YEAR, "unsigned": True, "charset": None, "length": None}),
    (_col("g", "geometry", "geometry"), {"type_code": T.GEOMETRY, "charset": None, "length": 4, "geometry_type": 0}),
    (_col("p", "point", "point"), {"type_code": T.GEOMETRY, "charset": None, "geometry_type": 1}),
    (_col("gc", "geomcollection", "geomcollection"), {"type_code": T.GEOMETRY, "geometry_type": 7}),
    (_col("j", "json", "json"), {"type_code": T.JSON, "charset": None, "length": 4, "unsigned": None}),
    (
        _col("v", "vector", "vector(1024)", length=4096),
        {"type_code": T.VECTOR, "charset": 63, "vector_dimension": 1024},
    ),
]


@pytest.mark.parametrize(("col", "facts"), MYSQL_ONLY, ids=[c.data_type for c, _ in MYSQL_ONLY])
def test_mysql_column_facts(col: SnapshotColumn, facts: dict[str, Any]) -> None:
    got = column_info(to_column(0, col, None, "mysql"), col.name)
    assert {k: got[k] for k in facts} == facts
    assert got["visible"] is True


def test_flavor_changes_no_lake_type() -> None:
    """The lake type of every column type is the same whichever flavor describes it (the chunk reader's lake
    columns, binlake.snapshot.server.lake_fields, need no flavor); what differs is GEOMETRY's charset and the
    visibility, which only the schema history shows."""
    types = [
        ("tinyint", "tinyint"), ("int", "int unsigned"), ("bigint", "bigint unsigned"), ("bigint", "bigint"),
        ("decimal", "decimal(30,10)"), ("float", "float"), ("double", "double"), ("date", "date"),
        ("datetime", "datetime(6)"), ("timestamp", "timestamp(3)"), ("time", "time(2)"), ("year", "year"),
        ("bit", "bit(64)"), ("char", "char(4)"), ("varchar", "varchar(20)"), ("binary", "binary(4)"),
        ("varbinary", "varbinary(8)"), ("text", "text"), ("blob", "blob"), ("longtext", "longtext"),
        ("enum", "enum('a','b')"), ("set", "set('x','y')"), ("json", "json"), ("geometry", "geometry"),
        ("point", "point"), ("geomcollection", "geomcollection"), ("vector", "vector(3)"),
    ]  # fmt: skip
    differ = []
    for dtype, ctype in types:
        collation = UTF8MB4 if dtype in ("char", "varchar", "text", "longtext", "enum", "set") else None
        c = _col("c", dtype, ctype, precision=64 if dtype == "bit" else 30, scale=10, fsp=3, length=16,
                 collation=collation)  # fmt: skip
        mysql, mariadb = to_column(0, c, None, "mysql"), to_column(0, c, None)
        assert lake_type(mysql) == lake_type(mariadb), dtype
        a, b = column_info(mysql, "c"), column_info(mariadb, "c")
        differ.append((dtype, sorted(k for k in a if a[k] != b[k])))
    assert {d: keys for d, keys in differ if keys != ["visible"]} == {
        "geometry": ["charset", "visible"],
        "point": ["charset", "visible"],
        "geomcollection": ["charset", "visible"],
    }
    assert lake_type(to_column(0, _col("j", "json", "json"), None, "mysql")) == lake_type(
        to_column(0, _col("j", "longtext", "longtext", collation=UTF8MB4), None)
    )  # MySQL's JSON lands as text, as MariaDB's (a LONGTEXT) does


def test_vector_cells_become_the_stream_s_floats() -> None:
    """A VECTOR column's cells (MySQL sends the stored float32s, as the binlog holds them) land as the stream's
    list of floats; a cell of the wrong size is a MalformedError, not another exception."""
    import struct

    import pyarrow as pa

    from binlake.errors import MalformedError
    from binlake.replication.resultset import ColumnDefinition
    from binlake.snapshot.columns import column_array

    col = _col("v", "vector", "vector(2)", nullable=True, length=8)
    column = to_column(0, col, None, "mysql")
    field = ColumnDefinition("v", 242, 63, 8, 0, 0)
    cells = pa.array([struct.pack("<2f", 1.5, -0.25), None], pa.binary())
    got = column_array(col, column, lake_type(column), cells, field)
    assert got.type == pa.list_(pa.float32()) and got.to_pylist() == [[1.5, -0.25], None]
    with pytest.raises(MalformedError):
        column_array(col, column, lake_type(column), pa.array([b"\x00" * 6], pa.binary()), field)


def test_a_functional_unique_key_is_not_the_row_key() -> None:
    """MySQL's SHOW INDEX gives a functional key part a NULL Column_name: such a key names no column of the row,
    so it is never the row key (it was read as a column called "None")."""
    from binlake.replication.definitions import row_key as _row_key

    functional = ("t", 0, "fk", 1, None, "A", 0, None, None, "", "BTREE")
    plain = ("t", 0, "u", 1, "b", "A", 0, None, None, "", "BTREE")
    assert _row_key([functional]) == ()
    assert _row_key([functional, plain]) == ("b",)
