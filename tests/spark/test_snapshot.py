"""The consistent snapshot (binlake.snapshot) on a private MariaDB whose tables were filled before its binlogs begin
(``RESET MASTER``): snapshot into a lake while a workload writes, then the file ingest of the server's binlogs from
the snapshot's point; every current-state table equals ``SELECT`` cell by cell (the all-column-types workload
included), the table without a key equals it as a multiset, and a snapshot SIGKILLed between chunks and run again
gives the lake an uninterrupted one gives."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.spark.test_spark import _delta, _lake_snapshot, _sql_str
from tests.spark.test_types_state import _lake_value, _same, _server_expr, _server_value

from binlake.replication import ConnectionOptions, Secret
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools, run_workloads

pytestmark = pytest.mark.spark

PASSWORD = "Snap-shot-pw-3"
SYSTEM = ("mysql", "information_schema", "performance_schema", "sys")
BIG = 100_000  # rows of s.big, read in chunks of CHUNK
CHUNK = 20_000

SEED = f"""
SET SESSION sql_mode = "", time_zone = "+00:00";
CREATE DATABASE s; CREATE DATABASE seq;
CREATE TABLE s.big (id INT PRIMARY KEY, k INT UNSIGNED, v VARCHAR(40) CHARACTER SET utf8mb4, d DECIMAL(12,3),
  ts DATETIME(6)) ENGINE=InnoDB;
INSERT INTO s.big SELECT seq, seq * 7 % 1000, CONCAT('row ', seq, ' é'), seq / 8, '2024-01-01' + INTERVAL seq SECOND
  FROM seq.seq_1_to_{BIG};
CREATE TABLE s.nopk (a INT, b VARCHAR(10) CHARACTER SET latin1, c BLOB) ENGINE=InnoDB;
INSERT INTO s.nopk VALUES (1, 'caf\u00e9', 'x'), (1, 'caf\u00e9', 'x'), (2, NULL, NULL), (3, 'b', X'00ff');
CREATE TABLE s.kinds (id BIGINT UNSIGNED PRIMARY KEY, i TINYINT, u INT UNSIGNED, big BIGINT UNSIGNED,
  dec1 DECIMAL(30,10), dt DATETIME(6), tsp TIMESTAMP(3) NULL, tm TIME(2), dd DATE, y YEAR,
  vu VARCHAR(20) CHARACTER SET utf8mb4, vl VARCHAR(20) CHARACTER SET latin1, bl BLOB, bin BINARY(4),
  e ENUM('a','b','it''s'), st SET('x','y','z'), j JSON, bt BIT(5), b64 BIT(64), f FLOAT, db DOUBLE,
  ip INET6, uu UUID, g POINT) ENGINE=InnoDB;
INSERT INTO s.kinds VALUES (18446744073709551615, -128, 4294967295, 18446744073709551614,
  -12345678901234567890.0123456789, '2024-02-29 23:59:59.123456', '2038-01-19 03:14:07.999', '-838:59:59.99',
  '0000-00-00', 2155, 'ü€😀', 'caf\u00e9',
  X'000102', X'6162', 'it''s', 'x,z', '{{"a": [1, 2.5, "x"]}}', b'10101', b'{"1" * 64}',
  0.1, 1e308, '::1', '123e4567-e89b-12d3-a456-426614174000', POINT(1.5, -2)),
  (1, NULL, 0, 0, 0, '1000-01-01 00:00:00', NULL, '00:00:00', '2024-01-31', 0, '', '', '', X'', '', '', NULL, b'0',
  b'0', -3.4e38, -0.0, NULL, NULL, NULL);
"""


def _need_mariadb() -> None:
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")


@pytest.fixture(scope="module")
def seeded(repo_root: Path) -> Iterator[MariaDBServer]:
    """A server whose tables (the all-types workload's and the ones above) were written before its binlogs."""
    _need_mariadb()
    with MariaDBServer() as server:
        written = run_workloads(server, [repo_root / "tests" / "workloads" / "01_types.sql"])
        keep = server.base_dir / "workload-binlogs"  # the table maps the tables were written with
        keep.mkdir()
        for f in written.files:
            shutil.copy(f, keep / f.name)
        server.execute(SEED)
        server.execute("RESET MASTER")
        # what a snapshot needs: SELECT, BINLOG MONITOR (SHOW BINARY LOGS), REPLICATION SLAVE (the binlog between
        # the chunks' points); no RELOAD: no FLUSH TABLES WITH READ LOCK
        server.create_user("snap", PASSWORD, grants=("SELECT", "BINLOG MONITOR", "REPLICATION SLAVE"))
        yield server


def _options(server: MariaDBServer) -> ConnectionOptions:
    return ConnectionOptions("127.0.0.1", "snap", 7777, server.port, Secret(PASSWORD), timeout=30.0)


def _password_file(tmp: Path) -> str:
    p = tmp / "pw"
    p.write_text(PASSWORD + "\n")
    return str(p)


class Writer(threading.Thread):
    """Writes while the snapshot runs: inserts, updates (keys moved across chunks too), deletes, multi-statement
    transactions, on the chunked table, the table without a key and the all-types table."""

    def __init__(self, server: MariaDBServer) -> None:
        super().__init__(daemon=True)
        self.server, self.stop, self.n, self.error = server, threading.Event(), 0, None

    def run(self) -> None:
        import pymysql

        rng = random.Random(7)
        conn = pymysql.connect(unix_socket=str(self.server.socket_path), user="root", autocommit=True)
        try:
            with conn.cursor() as cur:
                while not self.stop.is_set():
                    a, b = rng.randrange(1, BIG * 2), rng.randrange(1, BIG)
                    cur.execute(
                        "INSERT INTO s.big VALUES (%s, %s, %s, %s, NOW(6)) ON DUPLICATE KEY UPDATE v = VALUES(v)",
                        (a, a % 97, f"w{self.n}", a / 3),
                    )
                    cur.execute("UPDATE IGNORE s.big SET id = id + %s, v = 'moved' WHERE id = %s", (CHUNK * 2 + 1, b))
                    cur.execute("DELETE FROM s.big WHERE id = %s", (rng.randrange(1, BIG),))
                    cur.execute("BEGIN")
                    cur.execute("UPDATE s.big SET k = k + 1 WHERE id BETWEEN %s AND %s", (b, b + 3))
                    cur.execute("INSERT INTO s.nopk VALUES (%s, 'w', NULL)", (self.n % 5,))
                    cur.execute("DELETE FROM s.nopk WHERE a = %s LIMIT 1", (rng.randrange(5),))
                    cur.execute("COMMIT")
                    cur.execute("UPDATE s.nopk SET b = 'u' WHERE a = 1 LIMIT 1")
                    cur.execute(
                        "UPDATE s.kinds SET i = %s, j = JSON_OBJECT('n', %s) WHERE id = 1", (self.n % 100, self.n)
                    )
                    self.n += 1
                    time.sleep(0.002)
        except Exception as e:  # reported by the test
            self.error = e
        finally:
            conn.close()


@contextlib.contextmanager
def _writes(server: MariaDBServer) -> Iterator[Writer]:
    """A :class:`Writer` writing before, during and after the block."""
    writer = Writer(server)
    writer.start()
    try:
        time.sleep(0.3)
        yield writer
        time.sleep(0.3)
    finally:
        writer.stop.set()
        writer.join()
    assert writer.error is None, writer.error


def _keyed_tables(server: MariaDBServer) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    rows = server.query(
        "SELECT k.table_schema, k.table_name, GROUP_CONCAT(k.column_name ORDER BY k.ordinal_position) FROM "
        "information_schema.key_column_usage k JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE k.constraint_name = 'PRIMARY' AND t.engine = 'InnoDB' GROUP BY k.table_schema, k.table_name"
    )
    for db, table, cols in rows:
        if db is not None and table is not None and cols is not None and db not in SYSTEM:
            out[(db, table)] = cols.split(",")
    return out


def _types(server: MariaDBServer, db: str, table: str) -> dict[str, str]:
    return {
        str(c): str(t)
        for c, t in server.query(
            "SELECT column_name, data_type FROM information_schema.columns WHERE "
            f"table_schema = {_sql_str(db)} AND table_name = {_sql_str(table)}"
        )
    }


def _server_rows(server: MariaDBServer, db: str, table: str, cols: list[str], types: dict[str, str]) -> list[Any]:
    sel = ", ".join(_server_expr(c, types[c]) for c in cols)
    q = f"`{db.replace('`', '``')}`.`{table.replace('`', '``')}`"
    return [
        tuple(_server_value(v, types[c]) for v, c in zip(r, cols, strict=True))
        for r in server.query(f"SET time_zone = '+00:00'; SELECT {sel} FROM {q}")
    ]


def _compare_keyed(server: MariaDBServer, lake: Path, db: str, table: str, key: list[str]) -> tuple[int, list[Any]]:
    from binlake.lake.names import table_dir

    types = _types(server, db, table)
    cur = _delta(lake / table_dir(db, table) / "current")
    cols = [c for c in cur.column_names if not c.startswith("_")]
    assert set(cols) == set(types), (db, table, sorted(set(cols) ^ set(types)))
    want = {tuple(r[cols.index(k)] for k in key): r for r in _server_rows(server, db, table, cols, types)}
    got = {
        tuple(_lake_value(r[k], types[k]) for k in key): tuple(_lake_value(r[c], types[c]) for c in cols)
        for r in cur.to_pylist()
    }
    assert sorted(got, key=repr) == sorted(want, key=repr), (db, table, set(got) ^ set(want))
    wrong = []
    for k, srow in want.items():
        for c, w, g in zip(cols, srow, got[k], strict=True):
            if not _same(w, g, types[c]):
                wrong.append((db, table, c, k, w, g))
    return len(want) * len(cols), wrong


def _nopk_state(lake: Path, server: MariaDBServer, db: str, table: str) -> tuple[Counter[Any], Counter[Any]]:
    """The table without a key as a multiset: replayed from its change table, and as the server has it."""
    from binlake.lake.names import table_dir

    types = _types(server, db, table)
    changes = _delta(lake / table_dir(db, table) / "changes")
    cols = [c for c in changes.column_names if not c.startswith("_")]
    got: Counter[Any] = Counter()
    for r in changes.to_pylist():
        if r["_rolled_back"] is not False:
            continue
        row = tuple(_lake_value(r[c], types[c]) for c in cols)
        got[row] += -1 if r["_op"] in ("delete", "update_preimage") else 1
    want = Counter(_server_rows(server, db, table, cols, types))
    return +got, want


def _check_all(server: MariaDBServer, lake: Path) -> None:
    """Every keyed InnoDB table's current state equals SELECT cell by cell; the table without a key as a
    multiset."""
    keyed = _keyed_tables(server)
    assert ("s", "big") in keyed and ("s", "kinds") in keyed and len(keyed) > 20
    cells, wrong = 0, []
    for (db, table), key in sorted(keyed.items()):
        n, bad = _compare_keyed(server, lake, db, table, key)
        cells, wrong = cells + n, wrong + bad
    assert not wrong, "\n".join(map(repr, wrong))[:8000]
    assert cells > 400_000
    got, want = _nopk_state(lake, server, "s", "nopk")
    assert got == want and sum(want.values()) > 3


def test_snapshot_then_stream_equals_the_server(spark: Any, seeded: MariaDBServer, tmp_path: Path) -> None:
    """Parallel chunk tasks (Spark, each on its own connection and snapshot) while a workload writes; the chunks
    read before the last one's point are brought forward from the binlog; then the file ingest of the server's
    binlogs goes on from the snapshot's point."""
    from binlake.ingest.run import ingest
    from binlake.snapshot import SnapshotSpec, take_snapshot
    from binlake.spark.runner import SparkRunner

    server, lake = seeded, tmp_path / "lake"
    lines: list[str] = []
    with _writes(server) as writer:
        result = take_snapshot(
            _options(server),
            str(lake),
            SnapshotSpec(
                runner=SparkRunner(spark), password_file=_password_file(tmp_path), chunk_rows=CHUNK, log=lines.append
            ),
        )
    assert writer.n > 20
    assert result.reconciled > 0, lines  # the chunks were read at different points, and brought to one
    assert result.rows["s.big"] > BIG * 0.9 and result.chunks_read >= BIG // CHUNK
    assert any("s.big: about" in line for line in lines) and any("rows landed" in line for line in lines)
    files = [str(f) for f in server.binlog_files()]
    ingest(SparkRunner(spark), files, str(lake))

    _check_all(server, lake)

    # the op `read` rows and their point; the stream's changes come after them
    big = _delta(lake / "s" / "big" / "changes")
    ops = Counter(big["_op"].to_pylist())
    assert ops["read"] == result.rows["s.big"] and ops["insert"] + ops["update_postimage"] > 0
    reads = big.filter(big["_op"].to_numpy(zero_copy_only=False) == "read")
    assert set(reads["_pos"].to_pylist()) == {result.point.position}
    assert max(reads["_seq"].to_pylist()) < min(
        s for s, o in zip(big["_seq"].to_pylist(), big["_op"].to_pylist(), strict=True) if o != "read"
    )


def test_snapshot_columns_are_the_table_maps(seeded: MariaDBServer) -> None:
    """The columns the snapshot derives from information_schema are those the FULL table maps of the all-types
    workload logged (so a snapshot's lake columns are the stream's): every fact of every column of every table
    whose last map agrees in column count with it."""
    from binlake.events.table_map import TableMapEvent
    from binlake.ingest.arrow import column_info, lake_type
    from binlake.reader import read_events
    from binlake.snapshot.columns import to_column
    from binlake.snapshot.server import connect, describe_tables, select_tables

    last: dict[tuple[str, str], TableMapEvent] = {}
    for f in sorted(seeded.base_dir.glob("workload-binlogs/*")):
        for ev in read_events(str(f)):
            if isinstance(ev, TableMapEvent):
                last[(ev.schema, ev.table)] = ev
    with connect(_options(seeded)) as conn:
        described = describe_tables(conn, select_tables(conn, ["corpus_types.*"]))
    checked, wrong = 0, []
    for t in described:
        tm = last.get((t.database, t.name))
        if tm is None or len(tm.columns) != len(t.columns):
            continue
        pk = [c.casefold() for c in t.primary_key]
        for i, (c, m) in enumerate(zip(t.columns, tm.columns, strict=True)):
            mine = to_column(i, c, pk.index(c.name.casefold()) if c.name.casefold() in pk else None)
            a, b = column_info(mine, c.name), column_info(m, m.name or "")
            diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
            if c.data_type in ("enum", "set") and "?" in c.column_type:
                # information_schema and SHOW CREATE TABLE print a 4-byte member (😀) as '?' (utf8mb3 metadata):
                # the one fact the snapshot cannot learn; the values are right (SELECT returns them)
                diff.pop("enum_values", None), diff.pop("set_values", None)
            if diff or lake_type(mine) != lake_type(m):
                wrong.append((t.name, c.name, c.column_type, diff))
            checked += 1
    assert not wrong, "\n".join(map(repr, wrong))
    assert checked > 100


def test_sigkill_mid_snapshot_then_rerun_gives_the_same_lake(seeded: MariaDBServer, tmp_path: Path) -> None:
    """A snapshot in a child process killed (SIGKILL) after some chunks, run again, equals an uninterrupted one
    (no writes meanwhile: both are at the same point)."""
    pw = _password_file(tmp_path)
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    child = [sys.executable, "-m", "tests.spark._snapshot_child", str(seeded.port), pw]
    env = {**os.environ, "BINLAKE_SNAPSHOT_DELAY": "0.4"}
    proc = subprocess.Popen([*child, str(resumed)], env=env, cwd=Path(__file__).parents[2])
    chunks = resumed / "_binlake" / "snapshots" / "0000000001" / "chunks"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if chunks.is_dir() and len(list(chunks.glob("*.json"))) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the snapshot ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (resumed / "_binlake" / "batches").is_dir()
    read_before = len(list(chunks.glob("*.json")))
    out = subprocess.run(
        [*child, str(resumed)], cwd=Path(__file__).parents[2], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert f"{read_before} of" in out.stdout, out.stdout
    out = subprocess.run(
        [*child, str(whole)], cwd=Path(__file__).parents[2], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    ignore = frozenset({"_ts", "batch"})
    a, b = _lake_snapshot(whole, ignore=ignore), _lake_snapshot(resumed, ignore=ignore)
    assert a.keys() == b.keys() and a == b
    assert sum(len(v) for k, v in a.items() if k.endswith("/current")) > BIG * 0.9


def test_snapshot_records_round_trip() -> None:
    """The snapshot's plan and chunk records read back equal (JSON, versioned); a newer version is refused."""
    from binlake.lake.records import (
        ChunkDone,
        DataFile,
        LakeFormatError,
        SnapshotChunk,
        SnapshotColumn,
        SnapshotPlan,
        SnapshotPoint,
        SnapshotTable,
    )

    point = SnapshotPoint(3, 1234, "binlake-bin.000003", "0-1-77")
    col = SnapshotColumn("e", "enum", "enum('a','it''s')", True, None, None, None, 4, 45)
    table = SnapshotTable("s/t", "s", "t", (col,), ("e",), "CREATE TABLE `t` (...)", 10)
    plan = SnapshotPlan(1, point, (table,), (SnapshotChunk(0, "s/t", None, 100), SnapshotChunk(1, "s/t", 100, None)))
    assert SnapshotPlan.from_json(plan.to_json()) == plan
    f = DataFile("s/t", "part-x.parquet", 10, 2, 5, b"\x01\x02")
    done = ChunkDone(1, point, 2, f, None)
    assert ChunkDone.from_json(done.to_json()) == done
    with pytest.raises(LakeFormatError):
        SnapshotPlan.from_json(plan.to_json().replace('"version": 1', '"version": 2'))
    # points order by file, then position (the name and GTID do not count)
    assert SnapshotPoint(3, 99, "x") < point < SnapshotPoint(4, 4, "y")
    assert [plan.chunks[0].contains(v) for v in (-5, 99, 100)] == [True, True, False]
    assert plan.chunks[1].contains(100) and not plan.chunks[1].contains("100")


def test_tables_snapshotted_again_while_the_stream_goes_on(spark: Any, seeded: MariaDBServer, tmp_path: Path) -> None:
    """A lake the stream writes: chosen keyed tables snapshotted again (writes going on), the stream resumed from
    where it was: every table still equals the server; a table without a key is refused."""
    from binlake.errors import BinlogError
    from binlake.ingest.run import ingest
    from binlake.snapshot import SnapshotSpec, take_snapshot
    from binlake.spark.runner import SparkRunner

    server, lake = seeded, tmp_path / "lake"
    take_snapshot(_options(server), str(lake), SnapshotSpec(chunk_rows=CHUNK * 2))
    ingest(SparkRunner(spark), [str(f) for f in server.binlog_files()], str(lake))
    with _writes(server):
        spec = SnapshotSpec(["s.big", "s.kinds"], None, SparkRunner(spark), _password_file(tmp_path), CHUNK)
        again = take_snapshot(_options(server), str(lake), replace(spec, again=True))
    assert again.batch > 1 and set(again.rows) == {"s.big", "s.kinds"} and again.reconciled > 0
    with pytest.raises(BinlogError, match="without a primary key"):
        take_snapshot(_options(server), str(lake), SnapshotSpec(["s.nopk"], again=True))
    ingest(SparkRunner(spark), [str(f) for f in server.binlog_files()], str(lake))
    _check_all(server, lake)


def _ingest_host(server: MariaDBServer, lake: Path, pw: str, *args: str) -> subprocess.Popen[str]:
    """A ``binlake ingest --host`` process (the password in a file, which its Spark tasks read too)."""
    cmd = [sys.executable, "-m", "binlake", "ingest", "--host", "127.0.0.1", "--port", str(server.port), "--user",
           "snap", "--password-file", pw, "--server-id", "7779", "--timeout", "30", "--lake", str(lake),
           "--master", "local[2]", *args]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "BINLAKE_PASSWORD"}
    env["PYTHONPATH"] = str(Path(__file__).parents[2] / "src")
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run_host(server: MariaDBServer, lake: Path, pw: str, *args: str) -> tuple[int, str]:
    proc = _ingest_host(server, lake, pw, *args)
    out, _ = proc.communicate(timeout=600)
    return proc.returncode, out


def test_ingest_host_snapshots_an_empty_lake_then_streams(seeded: MariaDBServer, tmp_path: Path) -> None:
    """``binlake ingest --host`` into an empty lake while a workload writes: SIGKILLed in the middle of its snapshot
    (chunks read, no batch yet), run again (the snapshot resumes by chunk, then the stream from its point), then a
    catch-up run: every current-state table equals SELECT cell by cell, the snapshot's rows are op ``read``.  Then
    ``--snapshot TABLES`` again on that lake while writes go on, a keyless table refused, the conflicting options
    refused, and a ``--no-snapshot`` catch-up: still equal."""
    server, lake, pw = seeded, tmp_path / "lake", _password_file(tmp_path)
    chunks = lake / "_binlake" / "snapshots" / "0000000001" / "chunks"
    with _writes(server) as writer:
        proc = _ingest_host(server, lake, pw, "--chunk-rows", str(CHUNK // 4))
        deadline = time.monotonic() + 300
        while proc.poll() is None and not (chunks.is_dir() and list(chunks.glob("*.json"))):
            assert time.monotonic() < deadline, "no snapshot chunk was read"
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert not (lake / "_binlake" / "batches").is_dir()  # killed in the snapshot
        rc, out = _run_host(server, lake, pw, "--chunk-rows", str(CHUNK // 4))
        assert rc == 0, out[-3000:]
        assert "resuming the snapshot of batch 1" in out and "chunks already read" in out, out[-3000:]
    assert writer.n > 20
    rc, out = _run_host(server, lake, pw)
    assert rc == 0, out[-3000:]
    _check_all(server, lake)
    big = _delta(lake / "s" / "big" / "changes")
    ops = Counter(big["_op"].to_pylist())
    assert ops["read"] > BIG * 0.9 and ops["insert"] + ops["update_postimage"] > 0, ops
    assert Counter(_delta(lake / "s" / "kinds" / "changes")["_op"].to_pylist())["read"] == 2
    stream = json.loads((lake / "_binlake" / "stream-start.json").read_text())
    reads = big.filter(big["_op"].to_numpy(zero_copy_only=False) == "read")
    assert set(reads["_pos"].to_pylist()) == {stream["position"]}  # the stream starts at the snapshot's point

    # again, while writes go on; a table without a key refused; conflicting options refused
    with _writes(server):
        rc, out = _run_host(server, lake, pw, "--snapshot", "s.big,s.kinds", "--chunk-rows", str(CHUNK))
        assert rc == 0 and "s.big: " in out and "rows landed" in out, out[-3000:]
    rc, out = _run_host(server, lake, pw, "--snapshot", "s.nopk")
    assert rc == 2 and "without a primary key" in out, out[-3000:]
    for bad, says in [
        (["--from-start"], "--no-snapshot only"),
        (["--no-snapshot", "--tables", "s.*"], "--tables"),
        (["--snapshot", "s.big", "--no-snapshot"], "--no-snapshot does not go"),
        (["--snapshot", "s.big", "--tables", "s.*"], "--tables does not go"),
    ]:
        rc, out = _run_host(server, lake, pw, *bad)
        assert rc == 2 and says in out, (bad, out[-3000:])
    rc, out = _run_host(server, lake, pw, "--no-snapshot")
    assert rc == 0, out[-3000:]
    _check_all(server, lake)
    assert Counter(_delta(lake / "s" / "big" / "changes")["_op"].to_pylist())["read"] > ops["read"] + BIG * 0.9


def test_a_table_an_alter_left_null_is_read_again(seeded: MariaDBServer, tmp_path: Path) -> None:
    """An ALTER TABLE the lake cannot mirror exactly (DOUBLE to text: the server's ``%g``-like text) leaves NULL in
    the current state: with ``--no-reread`` the ingest's report says so and how to read the table again, and
    ``--snapshot DB.TABLE`` then makes it equal SELECT cell by cell; by default the ingest reads the table again
    itself before its next batch, and says so.  (Last in this file: its table stays on the module's server.)"""
    server, lake, pw = seeded, tmp_path / "lake", _password_file(tmp_path)
    server.execute(
        "CREATE DATABASE conv; CREATE TABLE conv.t (id INT PRIMARY KEY, f DOUBLE, n VARCHAR(10));"
        "INSERT INTO conv.t VALUES (1, 1.5, 'a'), (2, 0.1, NULL), (3, NULL, 'c'), (4, 1e300, 'd')"
    )
    rc, out = _run_host(server, lake, pw, "--tables", "conv.*")
    assert rc == 0, out[-3000:]
    assert _compare_keyed(server, lake, "conv", "t", ["id"])[1] == []
    server.execute("ALTER TABLE conv.t MODIFY f VARCHAR(40); INSERT INTO conv.t VALUES (5, '2.25', 'e')")
    rc, out = _run_host(server, lake, pw, "--no-reread")
    assert rc == 0, out[-3000:]
    assert "converted in a way binlake does not mirror, set NULL" in out and "--snapshot DB.TABLE" in out, out
    assert "read again" not in out, out
    n, wrong = _compare_keyed(server, lake, "conv", "t", ["id"])
    assert sorted(w[3] for w in wrong) == [(1,), (2,), (4,)], wrong  # f of the rows before the ALTER (id 3: NULL)
    rc, out = _run_host(server, lake, pw, "--snapshot", "conv.t")
    assert rc == 0, out[-3000:]
    n, wrong = _compare_keyed(server, lake, "conv", "t", ["id"])
    assert wrong == [] and n == 5 * 3
    server.execute(
        "ALTER TABLE conv.t ADD d DOUBLE DEFAULT 0.1; ALTER TABLE conv.t MODIFY d VARCHAR(40);"
        "INSERT INTO conv.t VALUES (6, '7', 'g', '0.5')"
    )
    rc, out = _run_host(server, lake, pw)
    assert rc == 0, out[-3000:]
    assert "set NULL" in out and "read again from the server, so their current state equals it: conv.t" in out, out
    n, wrong = _compare_keyed(server, lake, "conv", "t", ["id"])
    assert wrong == [] and n == 6 * 4
