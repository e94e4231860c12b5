"""Temporary tables that shadow base tables, ingested from a live MariaDB in MIXED and in STATEMENT format.

Sessions (separate client connections) create temporary tables named like base tables and TRUNCATE, ALTER, RENAME,
DROP and INSERT into them without saying TEMPORARY, while another session writes the base tables (as row events:
``binlog_format=ROW`` for that session); they end by disconnecting (the server logs ``DROP /*!40005 TEMPORARY */
TABLE``), and in the second test by a server crash, after which a new session with the same thread id works on the
base tables.  The table maps are logged with ``binlog_row_metadata=MINIMAL``: the lake names the columns and keys
the current state from the DDL the schema tracker followed, so a statement on a temporary table read as one on the
base table shows as wrong column names, a missing current state or wrong rows.

The server is the oracle: every base table's current state in the lake equals ``SELECT *``, and every table map of
a base table in ``_schema_history`` has the table's columns and key.  The ingest runs in several batches (one while
the sessions still hold their temporary tables, resuming in the middle of the file) with small splits, so the
sessions' temporary tables travel across splits and batches.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.spark.test_spark import _delta

from binlake.lake.names import table_dir
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools

pytestmark = pytest.mark.spark

pymysql = pytest.importorskip("pymysql")

DB = "tt"
SPLIT_BYTES = 1024  # several splits per file: the temporary tables cross split boundaries


@pytest.fixture(scope="module", params=["MIXED", "STATEMENT"])
def server(request: pytest.FixtureRequest) -> Iterator[MariaDBServer]:
    """A private MariaDB logging in the given format, with MINIMAL table-map metadata (no names, no keys)."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    with MariaDBServer([f"--binlog-format={request.param}", "--binlog-row-metadata=MINIMAL"]) as srv:
        yield srv


class Session:
    """One client connection (its own server thread, its own temporary tables)."""

    def __init__(self, server: MariaDBServer, *, rows: bool = False) -> None:
        self.conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", database=DB, autocommit=True)
        self.id = int(self.query("SELECT CONNECTION_ID()")[0][0])
        if rows:
            self.run("SET SESSION binlog_format = ROW")  # its base-table writes as row events

    def run(self, *statements: str) -> None:
        with self.conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def close(self, watcher: Session) -> None:
        """Disconnect, and wait until the server has ended the session (and logged its temporary tables' DROP)."""
        self.conn.close()
        deadline = time.monotonic() + 30
        while watcher.query(f"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {self.id}")[0][0]:
            assert time.monotonic() < deadline, f"session {self.id} did not end"
            time.sleep(0.05)


def _select(session: Session, table: str) -> list[dict[str, Any]]:
    with session.conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{DB}`.`{table}`")
        names = [d[0] for d in cur.description]
        return sorted((dict(zip(names, row, strict=True)) for row in cur.fetchall()), key=repr)


def _columns(session: Session, table: str) -> list[str]:
    with session.conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (DB, table),
        )
        return [r[0] for r in cur.fetchall()]


def _current(lake: Path, table: str) -> tuple[list[str], list[dict[str, Any]]]:
    data = _delta(lake / table_dir(DB, table) / "current")
    names = [n for n in data.column_names if not n.startswith("_")]
    rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in data.to_pylist()]
    return names, sorted(rows, key=repr)


def _ingest(spark: Any, server: MariaDBServer, first: int, lake: Path) -> None:
    from binlake.ingest.run import ingest
    from binlake.spark.runner import SparkRunner

    ingest(SparkRunner(spark), [str(p) for p in server.binlog_files()[first:]], str(lake), split_bytes=SPLIT_BYTES)


def _check(lake: Path, oracle: Session, tables: dict[str, list[list[str]]]) -> None:
    """Each base table's current state equals SELECT * on the server, and every map of it in _schema_history has
    one of the layouts the table had (``tables``: its column lists over time) and its primary key ``id``."""
    for table in tables:
        names, rows = _current(lake, table)
        assert names == _columns(oracle, table), table
        assert rows == _select(oracle, table), table
    history = _delta(lake / "_schema_history").to_pylist()
    seen = {r["table"] for r in history if r["database"] == DB}
    assert seen == set(tables)
    for r in history:
        if r["database"] == DB:
            assert r["lake_columns"] in tables[r["table"]], r
            assert r["primary_key"] == ["id"], r


def test_sessions_with_temporary_tables_leave_the_base_tables_alone(
    spark: Any, server: MariaDBServer, tmp_path: Path
) -> None:
    server.flush_logs()
    first = len(server.binlog_files()) - 1
    lake = tmp_path / "lake"
    w = None
    a = b = None
    try:
        server.execute(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
        w = Session(server, rows=True)  # writes the base tables
        w.run(
            "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))",
            "CREATE TABLE u (id INT PRIMARY KEY, n INT)",
            "CREATE TABLE w (id INT PRIMARY KEY, s VARCHAR(10))",
            "CREATE TABLE r (id INT PRIMARY KEY, v VARCHAR(20))",
            "INSERT INTO r VALUES (1, 'r')",
            "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
            "INSERT INTO u VALUES (1, 10), (2, 20)",
            "INSERT INTO w VALUES (1, 'x'), (2, 'y')",
        )
        a, b = Session(server), Session(server)  # log in the server's format: their temporary tables are logged
        a.run(
            "CREATE TEMPORARY TABLE t (id INT PRIMARY KEY, v VARCHAR(20), extra INT)",  # shadows the base table t
            "INSERT INTO t VALUES (100, 'temporary', 1)",
        )
        w.run("INSERT INTO t VALUES (4, 'd')", "UPDATE t SET v = 'B' WHERE id = 2")
        a.run("TRUNCATE t")  # the temporary t: the base table keeps its rows
        w.run("INSERT INTO t VALUES (5, 'e')")
        a.run("ALTER TABLE t ADD COLUMN w INT")  # the temporary t: the base table keeps its two columns
        w.run("INSERT INTO t VALUES (6, 'f')")
        b.run(
            "CREATE TEMPORARY TABLE w (id INT PRIMARY KEY, s VARCHAR(10), z INT)",
            "INSERT INTO w VALUES (7, 'b', 7)",
            "TRUNCATE TABLE w",
            "ALTER TABLE w DROP COLUMN z",
        )
        w.run("UPDATE w SET s = 'X' WHERE id = 1")
        _ingest(spark, server, first, lake)  # a batch while both sessions hold their temporary tables
        a.run(
            "CREATE TEMPORARY TABLE u (id INT PRIMARY KEY, n INT)",
            "RENAME TABLE t TO t_moved, u TO t",  # both temporary: the base tables t and u stay where they are
        )
        w.run("UPDATE t SET v = 'E' WHERE id = 5", "INSERT INTO u VALUES (3, 30)")
        a.run(
            "ALTER TABLE t RENAME TO u",  # the temporary t (u's copy)
            "TRUNCATE TABLE u",  # ... so the temporary u
            "INSERT INTO u VALUES (50, 50)",
        )
        w.run("INSERT INTO u VALUES (4, 40)", "DELETE FROM t WHERE id = 1")
        a.run("DROP TABLE t_moved")  # MariaDB logs it as DROP TEMPORARY TABLE ... /* generated by server */
        a.run("DROP TABLE u, w")  # the temporary u and the base table w
        w.run("CREATE TABLE w (id INT PRIMARY KEY, s VARCHAR(10), z INT)", "INSERT INTO w VALUES (3, 'new', 3)")
        b.run("RENAME TABLE w TO w_b")  # b's temporary w
        w.run("INSERT INTO w VALUES (4, 'newer', 4)")
        a.run(
            "CREATE TEMPORARY TABLE r (id INT PRIMARY KEY)",
            "CREATE OR REPLACE TABLE r (id INT PRIMARY KEY, v VARCHAR(20))",  # replaces the base table r (10.11)
            "INSERT INTO r VALUES (9)",  # the temporary r
        )
        w.run("INSERT INTO r VALUES (7, 'g'), (8, 'h')", "INSERT INTO t VALUES (7, 'g')")
        _ingest(spark, server, first, lake)  # resumes in the middle of the file
        a.close(w)  # DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `r`
        b.close(w)
        w.run("INSERT INTO t VALUES (10, 'j')", "UPDATE u SET n = 11 WHERE id = 1", "UPDATE w SET s = 'last'")
        server.flush_logs()
        logged = b"".join(p.read_bytes() for p in server.binlog_files()[first:])
        for text in (b"TRUNCATE t", b"ALTER TABLE t ADD COLUMN w INT", b"RENAME TABLE t TO t_moved", b"/*!40005"):
            assert text in logged, text  # the statements this test is about were logged
        _ingest(spark, server, first, lake)
        layouts = {"t": [["id", "v"]], "u": [["id", "n"]], "w": [["id", "s"], ["id", "s", "z"]], "r": [["id", "v"]]}
        _check(lake, w, layouts)
        assert [len(_select(w, table)) for table in layouts] == [7, 4, 2, 2]
    finally:
        for s in (a, b, w):
            if s is not None and s.conn.open:
                s.conn.close()


def test_a_server_start_forgets_the_temporary_tables(spark: Any, server: MariaDBServer, tmp_path: Path) -> None:
    """A session holding a temporary table t dies with the server (kill -9: no DROP is logged); after the restart a
    new session gets the same thread id and renames and truncates the base table t.  The first binlog after the
    start has a format description with its created timestamp set: the old session's temporary t is gone."""
    server.flush_logs()
    first = len(server.binlog_files()) - 1
    lake = tmp_path / "lake"
    server.execute(
        f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}; USE {DB};"
        "SET SESSION binlog_format = ROW; CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));"
        "INSERT INTO t VALUES (1, 'a'), (2, 'b')"
    )
    for _ in range(50):  # thread ids the restarted server hands out before ours: ours is above them
        Session(server).conn.close()
    old = Session(server)
    old.run("CREATE TEMPORARY TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO t VALUES (9, 'z')")
    os.kill(int(server.pid_file.read_text()), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while server.running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    server.stop()
    server.start()
    new = Session(server)
    while new.id < old.id:  # the new server counts thread ids from the start again
        new.conn.close()
        new = Session(server)
    assert new.id == old.id
    new.run("SET SESSION binlog_format = ROW", "INSERT INTO t VALUES (3, 'c')")
    new.run("SET SESSION binlog_format = DEFAULT", "RENAME TABLE t TO t_old", "CREATE TABLE t LIKE t_old")
    new.run("SET SESSION binlog_format = ROW", "INSERT INTO t VALUES (4, 'd')", "UPDATE t_old SET v = 'A'")
    new.run("SET SESSION binlog_format = DEFAULT", "TRUNCATE t")
    new.run("SET SESSION binlog_format = ROW", "INSERT INTO t VALUES (5, 'e')")
    new.conn.close()
    server.flush_logs()
    _ingest(spark, server, first, lake)
    oracle = Session(server)
    _check(lake, oracle, {"t": [["id", "v"]], "t_old": [["id", "v"]]})
    assert [r["id"] for r in _select(oracle, "t_old")] == [1, 2, 3] and len(_select(oracle, "t")) == 1
    oracle.conn.close()
