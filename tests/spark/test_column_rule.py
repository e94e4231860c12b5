"""Issue 21, finding 4: one rule for what a column is, whatever ``binlog_row_metadata`` the server logs with.

On a private MariaDB the same tables and row changes are written three times, under FULL, MINIMAL (MySQL 8's
default) and NO_LOG (MariaDB's) metadata, each into a binlog of its own and a database of its own: ``binlake
ingest`` of the three files lands the same lake column names and types and the same rows (``SELECT`` on the
server is the oracle, cell by cell, values of the lake's own types: text as text), and ``binlake changes`` of each
file prints the same row images.  The MySQL 5.5 sakila binlog of the corpus lands with its real column names and a
current state.  And a ``--host`` stream that starts after the tables' DDL, under NO_LOG, takes their definitions
from the server's ``information_schema``.
"""

from __future__ import annotations

import decimal
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.replication import conftest as replication
from tests.replication.conftest import PASSWORD, ReplServer
from tests.spark.test_ingest_host import run_live
from tests.spark.test_spark import _delta

from binlake.lake.names import table_dir
from binlake.spark.runner import SparkRunner
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools

pytestmark = [pytest.mark.spark]
fresh_server, tls_files = replication.fresh_server, replication.tls_files
REPO = Path(__file__).resolve().parents[2]
METADATA = ("FULL", "MINIMAL", "NO_LOG")

# a database created without a charset (the server's default, latin1 here), a table without one either (the
# database's), and columns that state their own; a key of an unsigned BIGINT; members; bytes
TABLES = """
CREATE TABLE people (
  id BIGINT UNSIGNED PRIMARY KEY, name VARCHAR(40) CHARACTER SET utf8mb4, city VARCHAR(20), note TEXT
  CHARACTER SET ucs2, kind ENUM('a','b','c'), tags SET('x','y','z'), n INT UNSIGNED, raw VARBINARY(8),
  code BINARY(4), price DECIMAL(8,2), nick CHAR(5) CHARACTER SET sjis);
CREATE TABLE plain (a INT, b VARCHAR(10));
INSERT INTO people VALUES (18446744073709551615, 'Zoë', 'Köln', 'ñ中', 'b', 'x,z', 4294967295, X'00ff', X'0102',
  -12.50, 'ﾃｽﾄ');
INSERT INTO people VALUES (1, 'Åsa', 'Malmö', NULL, 'c', '', 0, NULL, X'ff', 0.01, NULL);
INSERT INTO people VALUES (2, 'gone', 'x', 'y', 'a', 'y', 1, X'01', X'02', 1, 'z');
UPDATE people SET name = 'Zoë Ω', tags = 'y,z', kind = 'a' WHERE id = 1;
DELETE FROM people WHERE id = 2;
INSERT INTO plain VALUES (1, 'Ähnlich'), (2, NULL);
"""


def _need_mariadb() -> None:
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")


@pytest.fixture(scope="module")
def written() -> Iterator[tuple[MariaDBServer, dict[str, Path]]]:
    """A private server and, per metadata setting, the binlog holding the tables' DDL and changes."""
    _need_mariadb()
    with MariaDBServer() as server:
        files = {}
        for meta in METADATA:
            db = f"m_{meta.lower()}"
            server.execute(f"SET GLOBAL binlog_row_metadata = {meta}; FLUSH BINARY LOGS")
            files[meta] = server.current_binlog()
            server.execute(f"SET NAMES utf8mb4; CREATE DATABASE {db}; USE {db}; {TABLES}")
        server.execute("SET GLOBAL binlog_row_metadata = FULL; FLUSH BINARY LOGS")
        yield server, files


def _select(server: MariaDBServer, db: str, table: str) -> list[dict[str, Any]]:
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", charset="utf8mb4")
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM `{db}`.`{table}`")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        conn.close()


def _as_lake(v: Any) -> Any:
    """A ``SELECT`` cell (PyMySQL) as the lake holds it: SET as a list, BINARY(n) as its bytes."""
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, set):
        return sorted(v)
    return v


def test_full_minimal_and_no_log_land_the_same_lake(spark: Any, written: Any, tmp_path: Path) -> None:
    from binlake.ingest.run import ingest

    server, files = written
    lake = tmp_path / "lake"
    ingest(SparkRunner(spark), [str(files[m]) for m in METADATA], str(lake))
    schemas = {}
    for meta in METADATA:
        db = f"m_{meta.lower()}"
        changes = _delta(lake / table_dir(db, "people") / "changes")
        schemas[meta] = [(f.name, str(f.type)) for f in changes.schema if not f.name.startswith("_")]
        current = _delta(lake / table_dir(db, "people") / "current").to_pylist()
        got = sorted(({k: v for k, v in r.items() if not k.startswith("_")} for r in current), key=lambda r: r["id"])
        want = sorted(
            ({k: _as_lake(v) for k, v in r.items()} for r in _select(server, db, "people")), key=lambda r: r["id"]
        )
        for row in want:  # SET: the lake lists the members in the column's order, as SELECT does
            if isinstance(row["tags"], str):
                row["tags"] = row["tags"].split(",") if row["tags"] else []
        assert got == want, meta
        plain = _delta(lake / table_dir(db, "plain") / "changes").to_pylist()
        assert [(r["a"], r["b"]) for r in plain] == [(1, "Ähnlich"), (2, None)], meta  # latin1: the server's
    assert schemas["FULL"] == schemas["MINIMAL"] == schemas["NO_LOG"]
    assert dict(schemas["NO_LOG"]) == {
        "id": "decimal128(20, 0)",
        "name": "string",
        "city": "string",
        "note": "string",
        "kind": "string",
        "tags": "list<element: string>",
        "n": "int64",
        "raw": "binary",
        "code": "binary",
        "price": "decimal128(8, 2)",
        "nick": "string",
    }


def _changes(path: Path, *args: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "binlake", "changes", str(path), *args], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_changes_prints_the_same_rows_under_every_metadata(written: Any) -> None:
    """``binlake changes`` (Debezium JSON) of the three files: the same row images, the issue's 'Zoë' in each, and
    the lake's types: bytes as base64 (VARBINARY, BINARY padded), text as text."""
    _, files = written
    images = {}
    for meta in METADATA:
        lines = _changes(files[meta])
        images[meta] = [(d["op"], d["source"]["table"], d["before"], d["after"]) for d in lines]
    assert images["FULL"] == images["MINIMAL"] == images["NO_LOG"]
    first = images["NO_LOG"][0][3]
    assert first["name"] == "Zoë" and first["note"] == "ñ中" and first["nick"] == "ﾃｽﾄ" and first["kind"] == "b"
    assert first["raw"] == "AP8=" and first["code"] == "AQIAAA=="
    # (each line's comment names the event's time: the three files were written a second apart at times)
    sql = {
        meta: re.sub(r" time \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", "", _sql(files[meta]), flags=re.M) for meta in METADATA
    }
    assert sql["FULL"] == sql["MINIMAL"] == sql["NO_LOG"] and "'Zoë'" in sql["NO_LOG"]
    assert " time " not in sql["NO_LOG"] and "#start - end" in sql["NO_LOG"]


def _sql(path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "binlake", "changes", "--format", "sql", str(path)], capture_output=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode("utf-8", "surrogateescape")  # text in other charsets: their bytes
    text = re.sub(r"#start \d+ end \d+", "#start - end -", text)  # the positions of each file's own
    return "\n".join(line.replace("m_full", "db").replace("m_minimal", "db").replace("m_no_log", "db")
                     for line in text.splitlines() if not line.startswith(("#", "SET TIMESTAMP")))  # fmt: skip


def test_the_sakila_55_binlog_lands_named_with_a_current_state(spark: Any, corpus_dir: Path, tmp_path: Path) -> None:
    """The MySQL 5.5.27 sakila binlog (no optional metadata at all; its CREATE TABLEs right after a ``DROP SCHEMA
    sakila``): its tables land with their real names and types and a current state, with or without ``--schema``
    (a schema file that says the same)."""
    from binlake.events.context import DecodeOptions
    from binlake.ingest.run import ingest
    from binlake.ingest.statements import ReadSpec

    [path] = (corpus_dir / "mysql").glob("*/mysql-bin.sakila")
    seed = "USE sakila; CREATE TABLE actor (actor_id SMALLINT UNSIGNED NOT NULL, first_name VARCHAR(45) NOT NULL,"
    seed += " last_name VARCHAR(45) NOT NULL, last_update TIMESTAMP NOT NULL, PRIMARY KEY (actor_id)) CHARSET=utf8;"
    for n, read in enumerate((ReadSpec(), ReadSpec(DecodeOptions(schema_sql=seed)))):
        lake = tmp_path / f"lake{n}"
        ingest(SparkRunner(spark), [str(path)], str(lake), read=read)
        actor = _delta(lake / table_dir("sakila", "actor") / "current")
        assert [(f.name, str(f.type)) for f in actor.schema if not f.name.startswith("_")] == [
            ("actor_id", "int64"),
            ("first_name", "string"),
            ("last_name", "string"),
            ("last_update", "timestamp[us, tz=UTC]"),
        ]
        rows = sorted(actor.to_pylist(), key=lambda r: r["actor_id"])
        assert len(rows) == 200 and (rows[0]["first_name"], rows[0]["last_name"]) == ("PENELOPE", "GUINESS")
        for table, count in (("payment", 16049), ("rental", 16044), ("film", 1000), ("film_text", 1000)):
            assert _delta(lake / table_dir("sakila", table) / "current").num_rows == count, table
        film = _delta(lake / table_dir("sakila", "film") / "current")
        assert {"title", "description", "rental_rate", "rating", "special_features"} <= set(film.schema.names)
        assert str(film.schema.field("rating").type) == "string"  # ENUM members from the DDL


@pytest.mark.server
def test_a_host_stream_after_the_ddl_takes_the_servers_definitions(
    spark: Any, fresh_server: ReplServer, tmp_path: Path
) -> None:
    """NO_LOG maps of a table created before the stream starts (``--no-snapshot --from`` a later binlog): no DDL
    in what is read, so the server's ``information_schema`` names the columns, gives their charsets, signedness,
    members and key; ``ingest --host`` lands what ``SELECT`` shows, and ``changes --host`` prints 'Zoë'."""
    server = fresh_server.server
    server.execute(
        "SET GLOBAL binlog_row_metadata = NO_LOG; CREATE DATABASE h CHARACTER SET latin1; CREATE TABLE h.t (id INT"
        " UNSIGNED PRIMARY KEY, name VARCHAR(40) CHARACTER SET utf8mb4, city VARCHAR(9), kind ENUM('a','b'),"
        " n BIGINT UNSIGNED); GRANT SELECT ON h.* TO 'repl_native'@'127.0.0.1'"
    )
    server.flush_logs()
    start = server.current_binlog().name
    server.execute(
        "SET NAMES utf8mb4; INSERT INTO h.t VALUES (1, 'Zoë', 'Köln', 'b', 18446744073709551615),"
        " (4294967295, 'Åsa', NULL, 'a', 0); UPDATE h.t SET city = 'Malmö' WHERE id = 4294967295"
    )
    lake = tmp_path / "lake"
    code, out = run_live(server, str(lake), "--no-snapshot", "--from", start)
    assert code == 0, out
    changes = _delta(lake / table_dir("h", "t") / "changes")
    assert [(f.name, str(f.type)) for f in changes.schema if not f.name.startswith("_")] == [
        ("id", "int64"),
        ("name", "string"),
        ("city", "string"),
        ("kind", "string"),
        ("n", "decimal128(20, 0)"),
    ]
    current = sorted(_delta(lake / table_dir("h", "t") / "current").to_pylist(), key=lambda r: r["id"])
    want = sorted(_select(server, "h", "t"), key=lambda r: r["id"])
    assert [{k: v for k, v in r.items() if not k.startswith("_")} for r in current] == [
        {**r, "n": decimal.Decimal(r["n"])} for r in want
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "BINLAKE_PASSWORD": PASSWORD}
    proc = subprocess.run(
        [sys.executable, "-m", "binlake", "changes", "--host", "127.0.0.1", "--port", str(server.port), "--user",
         "repl_native", "--server-id", "6464", "--from", start],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line)["after"] for line in proc.stdout.splitlines()]
    assert {k: v for k, v in rows[0].items() if k != "n"} == {"id": 1, "name": "Zoë", "city": "Köln", "kind": "b"}
