"""Current state equals the server's table after DDL too (binlake.lake.alter, binlake.ingest.alters).

A private MariaDB runs one statement at a time; after each, one ``binlake ingest`` batch of its binlogs, and the
current table, read by every reader installed (deltalake's QueryBuilder, polars, DuckDB's delta extension) and by
the lake itself, must equal ``SELECT *`` cell by cell: the same column names in the same order, the lake types the
snapshot's column rule gives the server's ``information_schema`` columns, the same values.  The statements cover
ADD (with and without a default, NOT NULL, FIRST/AFTER), DROP, RENAME, MODIFY/CHANGE widening, narrowing (strict
and not) and changes of kind; rows changed after a statement in the same batch are named as the table names them.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from binlake.ingest.arrow import lake_type
from binlake.ingest.progress import Progress
from binlake.ingest.run import IngestResult, ingest, summary
from binlake.lake import deltalog
from binlake.lake.alter import AlterResult, AlterTask, NewColumn, convert
from binlake.lake.fileset import FileSet, LiveFile
from binlake.lake.lake import Lake
from binlake.lake.runner import InProcessRunner, pack, unpack
from binlake.replication.definitions import SnapshotColumn
from binlake.snapshot.columns import to_column
from binlake.testing import readers
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools

SETUP = """
CREATE DATABASE d CHARACTER SET utf8mb4;
CREATE TABLE d.t (id INT PRIMARY KEY, a INT, b VARCHAR(10), c DECIMAL(5,2), dt DATETIME(3), f FLOAT,
                  s VARCHAR(40), n INT) CHARACTER SET utf8mb4;
INSERT INTO d.t VALUES (1, 11, 'x', 1.50, '2024-01-02 03:04:05.678', 1.5, '123', 5),
                       (2, 22, 'yy', -0.25, '2024-02-03 00:00:00', 2.25, '-45', 300),
                       (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
"""

# (statement, then in the same batch) in order: each one's table is compared with the server's after its batch
STATEMENTS = [
    ("ALTER TABLE d.t RENAME COLUMN a TO aa", ""),
    ("ALTER TABLE d.t RENAME COLUMN s TO s1", "UPDATE d.t SET s1 = '77' WHERE id = 3"),
    ("ALTER TABLE d.t RENAME COLUMN s1 TO s", ""),
    ("ALTER TABLE d.t MODIFY c VARCHAR(20)", ""),
    ("ALTER TABLE d.t DROP COLUMN b", ""),
    ("ALTER TABLE d.t ADD e INT DEFAULT 7", ""),
    ("ALTER TABLE d.t ADD g VARCHAR(5) NOT NULL FIRST", ""),
    ("ALTER TABLE d.t ADD h DECIMAL(6,2) NOT NULL AFTER id", ""),
    ("ALTER TABLE d.t ADD k VARCHAR(8) DEFAULT 'kk' AFTER aa, ADD m DATE", ""),
    ("ALTER TABLE d.t MODIFY aa BIGINT", "UPDATE d.t SET aa = 12 WHERE id = 1"),
    ("ALTER TABLE d.t MODIFY f DOUBLE", ""),
    ("ALTER TABLE d.t MODIFY s VARCHAR(60)", ""),
    ("ALTER TABLE d.t MODIFY h DECIMAL(10,4)", "UPDATE d.t SET h = 3.1416 WHERE id = 2"),
    ("ALTER TABLE d.t MODIFY dt DATE", ""),
    ("ALTER TABLE d.t CHANGE aa a2 VARCHAR(10)", "INSERT INTO d.t (id, g, h, a2, c) VALUES (4, 'g', 1, '99', '7')"),
    ("ALTER TABLE d.t MODIFY s INT", ""),  # strict: every value is an integer's text
    ("ALTER TABLE d.t MODIFY c DECIMAL(6,3)", "UPDATE d.t SET c = 2.5 WHERE id = 1"),  # text back to decimal
    ("ALTER TABLE d.t MODIFY h DECIMAL(5,1)", ""),  # rounds 3.1416 to 3.1 (a note, even in strict mode)
    ("SET SESSION sql_mode = ''; ALTER TABLE d.t MODIFY n TINYINT", ""),  # not strict: 300 is clipped to 127
    ("SET SESSION sql_mode = ''; ALTER TABLE d.t MODIFY a2 VARCHAR(1)", ""),  # not strict: '11' is cut to '1'
    ("ALTER TABLE d.t DROP COLUMN m, ADD m2 DATETIME(2) DEFAULT '2020-01-01 10:00:00.25' FIRST", ""),
]


@pytest.fixture(scope="module", params=["FULL", "NO_LOG"])
def server(request: pytest.FixtureRequest) -> Iterator[MariaDBServer]:
    """A private server logging its table maps' column names (FULL) or not (NO_LOG, MariaDB's default: the names
    come from the DDL, and a map whose layout a rename left alone keeps its map id)."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    with MariaDBServer([f"--binlog-row-metadata={request.param}"]) as s:
        yield s


def _batch(server: MariaDBServer, sources: Path, lake: Path) -> IngestResult:
    """The server's binlogs so far, landed as one batch."""
    server.flush_logs()
    for f in server.binlog_files():
        shutil.copyfile(f, sources / f.name)
    return ingest(InProcessRunner(), [str(sources)], str(lake), progress=Progress(None, io.StringIO()))


def _server_columns(server: MariaDBServer, db: str, table: str) -> list[tuple[str, pa.DataType, int | None]]:
    """The table's columns in order: name, the lake type the snapshot's column rule gives, fsp."""
    rows = server.query(
        "SELECT c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, c.IS_NULLABLE, c.NUMERIC_PRECISION, c.NUMERIC_SCALE, "
        "c.DATETIME_PRECISION, c.CHARACTER_OCTET_LENGTH, l.ID FROM information_schema.COLUMNS c LEFT JOIN "
        f"information_schema.COLLATIONS l ON l.COLLATION_NAME = c.COLLATION_NAME WHERE c.TABLE_SCHEMA = '{db}' AND "
        f"c.TABLE_NAME = '{table}' ORDER BY c.ORDINAL_POSITION"
    )

    def num(v: str | None) -> int | None:
        return None if v is None else int(v)

    out = []
    for i, r in enumerate(rows):
        name = str(r[0])
        col = SnapshotColumn(name, str(r[1]).lower(), str(r[2]), r[3] == "YES", num(r[4]), num(r[5]), num(r[6]),
                             num(r[7]), num(r[8]))  # fmt: skip
        out.append((name, lake_type(to_column(i, col, None)), num(r[6])))
    return out


def _text(v: Any, fsp: int | None) -> str | None:
    """A lake value as the server's text of it (the values here are chosen so that floats print alike)."""
    if v is None:
        return None
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S") + (f".{v.microsecond:06d}"[: fsp + 1] if fsp else "")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float):
        return repr(v).removesuffix(".0")
    return str(v)


def _check(server: MariaDBServer, lake: Path, statement: str, db: str = "d", table: str = "t", key: str = "id") -> None:
    columns = _server_columns(server, db, table)
    names = [n for n, _, _ in columns]
    expected = sorted(server.query(f"SELECT * FROM {db}.{table}"), key=lambda r: int(str(r[names.index(key)])))
    loc = Lake(str(lake)).current(f"{db}/{table}")
    tables = {r: readers.read_with(r, loc) for r in readers.available()}
    own = Lake(str(lake)).read(loc)
    assert own is not None
    tables["lake"] = own
    for reader, read in tables.items():
        got = read.drop_columns(["_seq", "_ts"])
        assert [(f.name, f.type) for f in got.schema] == [(n, t) for n, t, _ in columns], (statement, reader)
        rows = sorted(got.to_pylist(), key=lambda r: int(r[key]))
        cells = [tuple(_text(r[n], fsp) for n, _, fsp in columns) for r in rows]
        assert cells == expected, (statement, reader)


@pytest.mark.server
def test_current_state_follows_every_alter_as_the_server_does(server: MariaDBServer, tmp_path: Path) -> None:
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(SETUP)
    _batch(server, sources, lake)
    _check(server, lake, "setup")
    for statement, then in STATEMENTS:
        server.execute(statement + (f"; {then}" if then else ""))
        result = _batch(server, sources, lake)
        assert not result.unconverted, statement
        _check(server, lake, statement)


# the corpus workload's table `evolve` (tests/workloads/04_ddl.sql), its ALTERs and rows all in one batch
EVOLVE = """
CREATE DATABASE e; USE e;
CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20), c DATETIME) ENGINE=InnoDB;
INSERT INTO t VALUES (1, 1, 'one', '2024-01-01 00:00:00'), (2, 2, 'two', NULL);
ALTER TABLE t ADD COLUMN x DECIMAL(10,2) AFTER a;
INSERT INTO t VALUES (3, 3, 3.33, 'three', '2024-01-03 00:00:00');
UPDATE t SET x = 1.11 WHERE id = 1;
ALTER TABLE t DROP COLUMN b;
INSERT INTO t VALUES (4, 4, 4.44, '2024-01-04 00:00:00');
UPDATE t SET a = 40 WHERE id = 4;
DELETE FROM t WHERE id = 2;
ALTER TABLE t MODIFY a BIGINT UNSIGNED NOT NULL DEFAULT 0, CHANGE c c_renamed DATETIME(6);
INSERT INTO t VALUES (5, 18446744073709551615, 5.55, '2024-01-05 00:00:00.555555');
UPDATE t SET c_renamed = '2025-01-01 00:00:00.000001' WHERE id = 5;
ALTER TABLE t ADD COLUMN first_col VARCHAR(5) CHARACTER SET latin1 FIRST, ADD COLUMN e ENUM('on','off') DEFAULT 'on';
INSERT INTO t VALUES ('f', 6, 6, 6.66, NULL, 'off');
UPDATE t SET first_col = 'F1' WHERE id = 1;
ALTER TABLE t CONVERT TO CHARACTER SET utf8mb3;
INSERT INTO t VALUES ('g', 7, 7, 7.77, NULL, DEFAULT);
SET SESSION binlog_alter_two_phase = ON;
ALTER TABLE t ADD COLUMN two_phase INT DEFAULT 7;
SET SESSION binlog_alter_two_phase = OFF;
INSERT INTO t (id, a, two_phase) VALUES (8, 8, 8);
ALTER TABLE t ADD INDEX idx_a (a), ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE t ENGINE=InnoDB;
"""


@pytest.mark.server
def test_a_batch_of_several_alters_between_rows(server: MariaDBServer, tmp_path: Path) -> None:
    """Every ALTER of the batch applied where it was logged, the rows between them named as the table was then."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(EVOLVE)
    result = _batch(server, sources, lake)
    assert not result.unconverted
    _check(server, lake, "evolve", "e")


@pytest.mark.server
def test_an_alter_that_renames_the_table_and_one_of_a_new_table(server: MariaDBServer, tmp_path: Path) -> None:
    """ALTER ... RENAME TO moves the table, then changes its columns; a table created and altered in the batch, its
    rows after the ALTER only, has the columns the DDL declares; a key converted to text sorts otherwise (the
    files written again sorted, a later change of a key found)."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(
        "CREATE DATABASE r; CREATE TABLE r.old (id INT PRIMARY KEY, v INT); INSERT INTO r.old VALUES (1, 1), (2, 2);"
        "ALTER TABLE r.old ADD COLUMN w INT DEFAULT 4, CHANGE v v DECIMAL(4,1), RENAME TO r.t;"
        "INSERT INTO r.t VALUES (3, 3, 3); CREATE DATABASE n; CREATE TABLE n.t (id INT PRIMARY KEY, a VARCHAR(3));"
        "ALTER TABLE n.t ADD b DATE FIRST, MODIFY a INT; INSERT INTO n.t VALUES ('2024-01-01', 1, 2);"
        "CREATE TABLE n.k (id INT PRIMARY KEY, v INT); INSERT INTO n.k VALUES (9, 1), (10, 2), (100, 3);"
        "CREATE TABLE n.p (id INT PRIMARY KEY, v INT); INSERT INTO n.p VALUES (1, 1), (2, 2);"
    )
    _batch(server, sources, lake)
    server.execute(
        "UPDATE n.p SET v = 10 WHERE id = 1; ALTER TABLE n.p CHANGE id pid BIGINT; UPDATE n.p SET v = 20 WHERE pid = 2;"
        "INSERT INTO n.p VALUES (3, 3); DELETE FROM n.p WHERE pid = 1"
    )
    server.execute(
        "ALTER TABLE n.k MODIFY id VARCHAR(5); INSERT INTO n.k VALUES ('11', 4); DELETE FROM n.k WHERE id = '9'"
    )
    _batch(server, sources, lake)
    _check(server, lake, "alter and rename", "r")
    _check(server, lake, "created and altered", "n")
    _check(server, lake, "the key converted: another order", "n", "k")
    _check(server, lake, "the key renamed between rows of one batch", "n", "p", "pid")
    loc = Lake(str(lake)).current("n/k")
    snap = deltalog.read_snapshot(loc)
    assert snap is not None
    for path in snap.files:  # each file sorted by the key as it is now (text)
        ids = pq.read_table(deltalog.file_location(loc, path).path, columns=["id"])["id"].to_pylist()
        assert ids == sorted(ids), path


@pytest.mark.server
def test_a_conversion_binlake_does_not_mirror_is_null_and_said(server: MariaDBServer, tmp_path: Path) -> None:
    """FLOAT to VARCHAR: the server's text of a float is not mirrored, so the lake holds NULL (never a guess) and
    the ingest's summary names the column, the count and the statement."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute("CREATE DATABASE u; CREATE TABLE u.t (id INT PRIMARY KEY, f FLOAT); INSERT INTO u.t VALUES (1, 1.5)")
    _batch(server, sources, lake)
    server.execute("ALTER TABLE u.t MODIFY f VARCHAR(10)")
    result = _batch(server, sources, lake)
    assert server.query("SELECT f FROM u.t") == [("1.5",)]
    table = Lake(str(lake)).read(Lake(str(lake)).current("u/t"))
    assert table is not None and table.select(["id", "f"]).to_pylist() == [{"id": 1, "f": None}]
    assert [str(u) for u in result.unconverted] == [
        "u/t.f: 1 value(s) set NULL after 'ALTER TABLE u.t MODIFY f VARCHAR(10)' (no exact conversion to its new type)"
    ]
    assert "set NULL:\n    u/t.f: 1 value(s)" in summary(result)
    history = DeltaTable(str(lake / "u" / "t" / "current")).history(1)[0]  # and in the table's own history
    assert history["operationParameters"]["unconverted"] == str(result.unconverted[0])


class _Crash(Exception):
    """A process killed just before the current table's commit."""


@pytest.mark.server
def test_an_alter_cut_before_its_commit_is_done_once_by_the_next_run(
    server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rewrite's files are written, the batch dies before the table's commit: the table is as it was, and the
    next run applies the ALTER once (the same content as a clean run)."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(
        "CREATE DATABASE k; CREATE TABLE k.t (id INT PRIMARY KEY, a INT, c DECIMAL(5,2)); "
        "INSERT INTO k.t VALUES (1, 11, 1.5), (2, 22, 2.25)"
    )
    _batch(server, sources, lake)
    server.execute("ALTER TABLE k.t RENAME COLUMN a TO aa, MODIFY c VARCHAR(9), ADD z INT NOT NULL FIRST")
    real = FileSet.commit

    def dying(self: FileSet, *args: Any, **kwargs: Any) -> Any:
        if self.key == "k/t":
            raise _Crash
        return real(self, *args, **kwargs)

    monkeypatch.setattr(FileSet, "commit", dying)
    with pytest.raises(_Crash):
        _batch(server, sources, lake)
    table = Lake(str(lake)).read(Lake(str(lake)).current("k/t"))
    assert table is not None and table.column_names[:3] == ["id", "a", "c"]  # untouched
    monkeypatch.setattr(FileSet, "commit", real)
    _batch(server, sources, lake)
    _check(server, lake, "after the cut", "k")
    assert _batch(server, sources, lake).batches <= 1  # nothing applied twice (a FLUSH's own batch at most)
    _check(server, lake, "a run after", "k")


def test_alter_records_cross_to_other_processes() -> None:
    """An alter task and its result travel as JSON (a Spark executor's), and read back equal."""
    cols = (
        NewColumn("id", pa.int64(), "id"),
        NewColumn("c", pa.string(), "c", "text", 20, lo=3),
        NewColumn("h", pa.decimal128(6, 2), None, "fill", fill="0.00"),
        NewColumn("x", None, "x"),
    )
    live = LiveFile("file:///lake/d/t/current", "part-1.parquet", 3, 100, 0, None, None)
    task = AlterTask("d/t", "file:///lake/d/t/current", pa.schema([("id", pa.int64())]), cols, ("id",), live)
    assert unpack(pack(task)) == task
    result = AlterResult((), {"c": 2})
    assert unpack(pack(result)) == result


@pytest.mark.parametrize(
    ("values", "column", "want", "failed"),
    [
        ([Decimal("1.50"), Decimal("-0.25")], NewColumn("c", pa.string(), "c", "text", 20), ["1.50", "-0.25"], 0),
        (["abcdef"], NewColumn("c", pa.string(), "c", "text", 3), ["abc"], 0),
        ([300, -300, None], NewColumn("n", pa.int64(), "n", "int", lo=-128, hi=127), [127, -128, None], 0),
        ([Decimal("2.5"), Decimal("-2.5")], NewColumn("n", pa.int64(), "n", "int", lo=-128, hi=127), [3, -3], 0),
        ([2.5, 3.5], NewColumn("n", pa.int64(), "n", "int", lo=-128, hi=127), [2, 4], 0),  # rint: half to even
        (["12", " -4 ", "1.5x"], NewColumn("n", pa.int64(), "n", "int", lo=-128, hi=127), [12, -4, None], 1),
        ([Decimal("3.1416")], NewColumn("h", pa.decimal128(5, 1), "h", "decimal"), [Decimal("3.1")], 0),
        ([Decimal("99999.99")], NewColumn("h", pa.decimal128(4, 1), "h", "decimal"), [Decimal("999.9")], 0),
        ([1.5], NewColumn("s", pa.string(), "f", "text", 10), [None], 1),  # a FLOAT's text: not mirrored
        ([Decimal("0.0000001")], NewColumn("c", pa.string(), "c", "text", 20), ["0.0000001"], 0),  # never 1E-7
        (
            [5, 10**12],
            NewColumn("h", pa.decimal128(20, 2), "h", "decimal"),
            [Decimal("5.00"), Decimal("1000000000000.00")],
            0,
        ),
        ([10**5], NewColumn("h", pa.decimal128(4, 1), "h", "decimal"), [Decimal("999.9")], 0),  # clipped
        (
            [dt.datetime(2024, 1, 2, 3, 4, 5, 678000)],
            NewColumn("d", pa.string(), "d", "text", 30, lo=3),
            ["2024-01-02 03:04:05.678"],
            0,
        ),
        (
            [dt.datetime(2024, 1, 2, 3, 4, 5, 678000)],
            NewColumn("d", pa.date32(), "d", "date"),
            [dt.date(2024, 1, 2)],
            0,
        ),
        (
            [dt.datetime(2024, 1, 2, 3, 4, 5, 678900)],
            NewColumn("d", pa.timestamp("us"), "d", "datetime", 2),
            [dt.datetime(2024, 1, 2, 3, 4, 5, 670000)],
            0,
        ),
        ([dt.date(2024, 1, 2)], NewColumn("d", pa.timestamp("us", tz="UTC"), "d", "datetime", 0), [None], 1),
    ],
)
def test_values_convert_as_the_server_converts_them_or_not_at_all(
    values: list[Any], column: NewColumn, want: list[Any], failed: int
) -> None:
    got, n = convert(pa.array(values), column)
    assert (got.to_pylist(), n) == (want, failed)
