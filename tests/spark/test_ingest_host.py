"""``binlake ingest --host`` against a private MariaDB: while a workload runs (every column type, DML, DDL, statement
and mixed logging, compressed events, a checksum change, rotations, then rounds of inserts, updates, deletes and
ALTERs), a following live ingest is SIGKILLed twice and restarted; after a last run without ``--follow`` (to the
server's current end) the lake's tables equal one file ingest of the server's own binlog files, and each
current-state table equals ``SELECT *`` on the server, cell by cell.  Also: a run into an object store (moto), the
resume point each batch records (its GTID state equals the server's at the end), a purged binlog, and an empty lake
without a start point."""

from __future__ import annotations

import datetime as dt
import decimal
import ipaddress
import itertools
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.replication import conftest as replication
from tests.replication.conftest import PASSWORD, ReplServer, batch
from tests.spark.test_spark import _delta, _lake_snapshot

from binlake.binlogs import list_binlogs
from binlake.ingest.run import resume_after
from binlake.lake.lake import Lake
from binlake.lake.names import decode_name
from binlake.lake.records import Split
from binlake.replication.mirror import mirror_files
from binlake.replication.position import ResumePoint
from binlake.spark.runner import SparkRunner
from binlake.storage import locate
from binlake.testing.mariadb import MariaDBServer, run_workloads

pytestmark = [pytest.mark.spark, pytest.mark.server]
fresh_server, tls_files = replication.fresh_server, replication.tls_files  # the replication tests' fixtures
REPO = Path(__file__).resolve().parents[2]
KEYED = (
    "CREATE TABLE r.d (id INT PRIMARY KEY, n BIGINT UNSIGNED, price DECIMAL(12,3), at DATETIME(6), day DATE,"
    " label VARCHAR(40) CHARACTER SET utf8mb4, blob_ MEDIUMBLOB, doc JSON, kind ENUM('a','b','c'), f DOUBLE)"
)

NOT_IN_THE_BINLOG = {  # tables whose current state SELECT shows but the binlog's row events do not hold
    "corpus_dml.child": "rows updated and deleted by a foreign key's ON UPDATE/DELETE CASCADE are not logged",
    "corpus_dml.comp": "a row inserted by a statement logged in statement format",
    "corpus_dml.parted": "ALTER TABLE ... TRUNCATE PARTITION is logged as a statement, without the rows it removes",
    "corpus_dml.sv": "a system-versioned table: a DELETE keeps the row as history (SELECT * shows current rows only)",
    "corpus_stmt.s": "changes logged in statement format",
}


def live(
    server: MariaDBServer,
    lake: str,
    *args: str,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    user: str = "repl_native",
) -> subprocess.Popen[str]:
    """A ``binlake ingest --host`` process; its output goes to ``log`` (appended) when given, else to pipes."""
    cmd = [sys.executable, "-m", "binlake", "ingest", "--host", "127.0.0.1", "--port", str(server.port), "--user",
           user, "--server-id", "6363", "--heartbeat", "0.5", "--timeout", "5", "--lake", lake,
           "--master", "local[1]", *args]  # fmt: skip
    full = {**os.environ, **(env or {}), "BINLAKE_PASSWORD": PASSWORD, "PYTHONPATH": str(REPO / "src")}
    if log is None:
        return subprocess.Popen(cmd, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with log.open("a") as out:  # (a pipe nobody reads would stop a long-running process when full)
        return subprocess.Popen(cmd, env=full, stdout=out, stderr=subprocess.STDOUT, text=True)


def run_live(
    server: MariaDBServer, lake: str, *args: str, env: dict[str, str] | None = None, user: str = "repl_native"
) -> tuple[int, str]:
    proc = live(server, lake, *args, env=env, user=user)
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out + err


def batches(lake: Path) -> int:
    folder = lake / "_binlake" / "batches"
    return len(list(folder.glob("*.done"))) if folder.exists() else 0


def wait_for(condition: Any, timeout: float = 300.0, context: Any = None) -> None:
    """Until ``condition()``; past ``timeout`` seconds a failure that says what ``context()`` knows (the ingest's log,
    the workload's errors: a busy CI machine's timeout must say whether anything went wrong, and what)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s; {context() if context else ''}"
        time.sleep(0.1)


def rounds(server: MariaDBServer, stop: threading.Event) -> int:
    """Rounds of changes until ``stop``: multi-row inserts, updates, deletes, a big transaction now and then, rows of
    every common type in ``r.d``, and an ALTER every few rounds (a new column, later filled)."""
    k = 100
    while not stop.is_set():
        k += 1
        batch(server, k, big=k % 7 == 0)
        at = f"'2024-0{k % 9 + 1}-1{k % 10} 12:34:56.{k:06d}'"
        server.execute(
            f"INSERT INTO r.d (id, n, price, at, day, label, blob_, doc, kind, f) VALUES ({k}, {2**64 - k},"
            f" {k}.125, {at}, DATE({at}), 'r\u00e9ponse {k}', UNHEX(REPEAT('ff00', {k % 50})),"
            f" '{{\"k\": {k}, \"l\": [1, null]}}', '{'abc'[k % 3]}', {k} / 7.0);"
            f" UPDATE r.d SET price = price * 2, label = CONCAT(label, '!') WHERE id = {k - 1};"
            f" DELETE FROM r.d WHERE id = {k - 3} AND {k} % 2 = 0"
        )
        if k % 5 == 0:
            server.execute(f"ALTER TABLE r.d ADD COLUMN c{k} INT; UPDATE r.d SET c{k} = id WHERE id > {k - 3}")
        time.sleep(0.1)
    return k


def test_live_ingest_is_exactly_once_across_sigkills(spark: Any, fresh_server: ReplServer, tmp_path: Path) -> None:
    from binlake.ingest.run import ingest

    server, lake = fresh_server.server, tmp_path / "lake"
    server.execute(KEYED)
    stop, errors = threading.Event(), []

    def workload() -> None:
        try:
            run_workloads(server, sorted((REPO / "tests" / "workloads").glob("*.sql")))
            rounds(server, stop)
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=workload)
    log = tmp_path / "live.log"

    def state() -> str:
        alive = "running" if thread.is_alive() else "ended"
        tail = log.read_text()[-3000:]
        return f"workload {alive}, errors {errors!r}, {batches(lake)} batches; the ingest's log:\n{tail}"

    proc = live(server, str(lake), "--no-snapshot", "--from-start", "--follow", "--interval", "1", log=log)
    thread.start()
    try:
        for kill in range(2):
            seen = batches(lake)
            wait_for(
                lambda seen=seen, p=proc: batches(lake) >= seen + 2 or p.poll() is not None or bool(errors),
                context=state,
            )
            assert proc.poll() is None and not errors, state()
            time.sleep(0.7 * (kill + 1))  # somewhere in a batch (or between two)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc = live(server, str(lake), "--follow", "--interval", "1", log=log)  # (no --from-start: the lake says)
        seen = batches(lake)
        wait_for(lambda: batches(lake) >= seen + 1 or proc.poll() is not None or bool(errors), context=state)
        assert proc.poll() is None and not errors, state()
    finally:
        stop.set()
        thread.join()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not errors, errors
    text = log.read_text()
    print(f"live ingest: {batches(lake)} batches, {text.count('finishing interrupted batch')} of them finished by the"
          " next run after a SIGKILL")  # fmt: skip
    assert PASSWORD not in text
    server.execute("CREATE TABLE r.last (id INT PRIMARY KEY)")  # a last transaction that ends without an XID
    rc, out = run_live(server, str(lake))  # to the server's current end, then exit
    assert rc == 0, out[-3000:]
    assert PASSWORD not in out

    # the resume point of the last batch is the server's end, with its GTID state
    manifest, done = Lake(str(lake)).last_manifest()
    assert manifest is not None and done and manifest.resume is not None
    ((file, pos, *_),) = server.query("SHOW MASTER STATUS")
    ((gtid,),) = server.query("SELECT @@gtid_binlog_pos")
    assert (manifest.resume.file, manifest.resume.position, manifest.resume.gtid) == (file, int(pos or 0), gtid)

    # (a) the same lake as one ingest of the server's own files
    files = server.binlog_files()
    assert [f.name for f in files] == sorted(p.name for p in (lake / "_binlogs").iterdir())
    ingest(SparkRunner(spark), [str(f) for f in files], str(tmp_path / "files"))
    ours, theirs = _lake_snapshot(lake), _lake_snapshot(tmp_path / "files")
    ours.pop("_schema_history"), theirs.pop("_schema_history")  # (it says which batch first saw each table map)
    assert sorted(ours) == sorted(theirs) and len(ours) > 20
    for table in ours:
        assert ours[table] == theirs[table], table
    assert sum(len(rows) for t, rows in ours.items() if t.endswith("/changes")) > 3000

    # (b) every current state equals SELECT * on the server (but where the binlog does not hold the changes)
    compared, differ = 0, {}
    for current in sorted(p for p in lake.glob("*/*/current")):
        db, table = decode_name(current.parent.parent.name), decode_name(current.parent.name)
        try:
            compared += assert_current_equals_select(server, db, table, _delta(current).to_pylist())
        except AssertionError as e:
            differ[f"{db}.{table}"] = " ".join(str(e).split())[:500]
    print("\n".join(f"{k}: {v}" for k, v in sorted(differ.items())))
    assert set(differ) == set(NOT_IN_THE_BINLOG), differ
    assert compared > 3000


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _same(want: Any, got: Any) -> bool:
    """Whether a cell as ``SELECT`` gives it (PyMySQL: text protocol values) and as the lake holds it (pyarrow)
    are the same value: each lake type's form of it (BIT as an integer, SET as a list, DECIMAL(65) as text, TIME
    as text, INET6 as 16 bytes, a geometry as its SRID and WKB, FLOAT as a single-precision number)."""
    if isinstance(want, bytearray):
        want = bytes(want)
    if isinstance(got, dt.datetime):
        got = got.replace(tzinfo=None)
    if isinstance(got, dict) and isinstance(want, bytes):
        want = {"srid": int.from_bytes(want[:4], "little"), "wkb": want[4:]}
    elif isinstance(got, int | decimal.Decimal) and isinstance(want, bytes):  # BIT (64 bits: decimal(20,0))
        want, got = int.from_bytes(want, "big"), int(got)
    elif got is None and isinstance(want, str) and "-00" in want[:10]:  # a zero or partial date: NULL in the lake
        return True
    elif isinstance(got, str) and isinstance(want, decimal.Decimal):
        got = decimal.Decimal(got)
    elif isinstance(got, list) and isinstance(want, str):
        want = want.split(",") if want else []
    elif isinstance(got, bytes) and isinstance(want, str):
        try:
            want = ipaddress.ip_address(want).packed  # INET4, INET6
        except ValueError:
            want = uuid.UUID(want).bytes if len(want) == 36 and want.count("-") == 4 else want.encode("utf-8")
    elif isinstance(got, str) and isinstance(want, dt.timedelta):
        h, m, sec = got.lstrip("-").split(":")
        t = dt.timedelta(hours=int(h), minutes=int(m), seconds=float(sec))
        got = -t if got.startswith("-") else t
    elif isinstance(got, str) and isinstance(want, bytes):
        want = want.decode("utf-8")
    elif isinstance(got, float) and isinstance(want, float) and got != want:  # FLOAT: printed in its digits
        single = struct.unpack("<f", struct.pack("<f", want))[0]
        return bool(single == got or float(f"{got:.6g}") == want)
    return bool(want == got)


def assert_current_equals_select(server: MariaDBServer, db: str, table: str, lake_rows: list[dict[str, Any]]) -> int:
    """``db.table``'s rows in the lake equal ``SELECT *``, column by column, cell by cell; the cells compared."""
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", charset="utf8mb4", binary_prefix=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            try:
                cur.execute(f"SELECT * FROM {_quoted(db)}.{_quoted(table)}")
            except pymysql.err.ProgrammingError as e:  # dropped (or renamed): its current state is empty
                assert e.args[0] == 1146 and lake_rows == [], (db, table, e)
                return 1
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        conn.close()
    lake_names = [n for n in (lake_rows[0] if lake_rows else {}) if not n.startswith("_")]
    if lake_rows:
        assert set(names) <= set(lake_names), (db, table, names, lake_names)
    key = names[0]
    ours = {r[key]: r for r in lake_rows}
    assert sorted(ours) == sorted(r[key] for r in rows), (db, table)
    for row in rows:
        mine = ours[row[key]]
        for n in names:
            want, got = row[n], mine[n]
            if (db, table, n) == ("r", "d", "doc"):  # JSON: the server prints it normalized
                want, got = json.loads(want), json.loads(got)
            assert _same(want, got), (db, table, row[key], n, row[n], mine[n])
    return len(rows) * len(names)


def test_no_follow_run_into_an_object_store(
    spark: Any, fresh_server: ReplServer, s3_server: Any, tmp_path: Path
) -> None:
    from binlake.ingest.run import ingest

    server = fresh_server.server
    server.execute(KEYED)
    for k in range(1, 4):
        batch(server, k, big=k == 2)
    env = s3_server.env()
    lake = f"s3://{s3_server.bucket()}/lake"
    rc, out = run_live(server, lake, "--no-snapshot", "--from-start", env=env)
    assert rc == 0 and "ingested 1 batch from" in out, out[-3000:]
    batch(server, 9)
    server.flush_logs()
    batch(server, 10)
    rc, out = run_live(server, lake, env=env)
    assert rc == 0, out[-3000:]
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        copies = [c.name for c in mirror_files(locate(lake) / "_binlogs")]  # each kept in segments: NAME.part/
        assert copies == [f.name for f in server.binlog_files()]
        ingest(SparkRunner(spark), [str(f) for f in server.binlog_files()], str(tmp_path / "files"))
        ours, theirs = _lake_snapshot(lake), _lake_snapshot(tmp_path / "files")
        assert ours["r/t/changes"] == theirs["r/t/changes"] and len(ours["r/t/changes"]) > 400
        assert ours["r/t/current"] == theirs["r/t/current"]
        assert_current_equals_select(server, "r", "t", _delta(f"{lake}/r/t/current").to_pylist())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_a_following_run_into_an_object_store_is_exactly_once_across_sigkills(
    spark: Any, fresh_server: ReplServer, s3_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--follow`` into S3 (the copies kept in segments) SIGKILLed twice mid-batch and restarted, then a run to the
    server's end: every copy, read across its segments, is the server's file, and the lake equals one file ingest
    of the server's binlogs."""
    from binlake.ingest.run import ingest

    server, env = fresh_server.server, s3_server.env()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    lake = f"s3://{s3_server.bucket()}/lake"
    stop, errors = threading.Event(), []

    def workload() -> None:
        try:
            for k in itertools.count(1):
                if stop.is_set():
                    return
                batch(server, k)
                if k % 7 == 0:
                    server.flush_logs()
                time.sleep(0.2)
        except BaseException as e:
            errors.append(e)

    def done() -> int:
        return sum(e.location.name.endswith(".done") for e in (locate(lake) / "_binlake" / "batches").list())

    log = tmp_path / "live.log"
    thread = threading.Thread(target=workload)
    proc = live(server, lake, "--no-snapshot", "--from-start", "--follow", "--interval", "1", env=env, log=log)
    thread.start()
    try:
        for kill in range(2):
            seen = done()
            wait_for(lambda seen=seen, p=proc: done() >= seen + 2 or p.poll() is not None, context=log.read_text)
            assert proc.poll() is None and not errors, log.read_text()[-3000:]
            time.sleep(0.7 * (kill + 1))  # somewhere in a batch (or between two)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc = live(server, lake, "--follow", "--interval", "1", env=env, log=log)
        seen = done()
        wait_for(lambda: done() >= seen + 1 or proc.poll() is not None, context=log.read_text)
    finally:
        stop.set()
        thread.join()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert not errors, errors
    rc, out = run_live(server, lake, env=env)
    assert rc == 0, out[-3000:]
    files = server.binlog_files()
    copies = list_binlogs(f"{lake}/_binlogs")
    assert [c.name for c in copies] == [f.name for f in files] and len(files) > 2
    for f, c in zip(files, copies, strict=True):
        with c.source.open() as stream:  # type: ignore[union-attr]
            assert stream.read() == f.read_bytes(), f.name
    ingest(SparkRunner(spark), [str(f) for f in files], str(tmp_path / "files"))
    ours, theirs = _lake_snapshot(lake), _lake_snapshot(tmp_path / "files")
    assert ours["r/t/changes"] == theirs["r/t/changes"] and len(ours["r/t/changes"]) > 200
    assert ours["r/t/current"] == theirs["r/t/current"]


def test_an_empty_lake_needs_a_start_and_a_purged_binlog_is_named(fresh_server: ReplServer, tmp_path: Path) -> None:
    server, lake = fresh_server.server, tmp_path / "lake"
    rc, out = run_live(server, str(lake), "--no-snapshot")
    assert rc == 2 and "--from-start" in out
    batch(server, 1)
    rc, out = run_live(server, str(lake), "--no-snapshot", "--from-start")
    assert rc == 0, out[-3000:]
    last = server.binlog_files()[-1].name
    server.flush_logs()
    server.flush_logs()
    current = server.binlog_files()[-1].name
    deadline = time.monotonic() + 30
    while server.binlog_files()[0].name != current:
        assert time.monotonic() < deadline
        server.execute(f"PURGE BINARY LOGS TO '{current}'")
        time.sleep(0.1)
    rc, out = run_live(server, str(lake))
    assert rc == 2 and last in out and "purged" in out, out[-3000:]


def test_resume_after_follows_the_gtid_state_file_by_file(corpus_dir: Path) -> None:
    """The GTID state a batch records at its end equals the one the server wrote at the start of the next file."""
    from binlake.events.gtid import GtidListEvent
    from binlake.reader import read_events
    from binlake.replication.gtid import GtidTracker

    files = list_binlogs(corpus_dir / "mariadb" / "binlogs")
    checked = 0
    point = ResumePoint(files[0].name, 4)
    for a, b in itertools.pairwise(files):
        if b.seq != a.seq + 1:
            break
        point = resume_after([Split(a, max(4, point.position) if point.file == a.name else 4, None)], point)
        listed = next(ev for ev in read_events(b.path) if isinstance(ev, GtidListEvent))
        tracker = GtidTracker("mariadb")
        tracker.observe(listed)
        assert (point.file, point.position, point.gtid) == (a.name, a.size, tracker.state), a.name
        checked += point.gtid is not None and point.gtid != ""
        point = ResumePoint(b.name, 4, point.gtid, point.flavor)
    assert checked >= 10


def test_a_snapshot_hook_gives_an_empty_lake_its_start(spark: Any, fresh_server: ReplServer, tmp_path: Path) -> None:
    """The snapshot of an empty lake (the snapshot issue's function) is called once, with the lake's lease held, and
    the stream starts at the point it returns: the changes before it are not landed, those after it are."""
    from binlake.ingest.live import live_ingest

    server, lake = fresh_server.server, tmp_path / "lake"
    batch(server, 1)
    ((file, pos, *_),) = server.query("SHOW MASTER STATUS")
    ((gtid,),) = server.query("SELECT @@gtid_binlog_pos")
    calls: list[Lake] = []

    def snapshot(into: Lake, options: Any) -> ResumePoint:
        into.check()  # the writer lease is held
        calls.append(into)
        return ResumePoint(str(file), int(pos or 0), gtid, "mariadb")

    batch(server, 2)
    result = live_ingest(SparkRunner(spark), fresh_server.options(), str(lake), snapshot=snapshot)
    batch(server, 3)
    again = live_ingest(SparkRunner(spark), fresh_server.options(), str(lake), snapshot=snapshot)
    assert len(calls) == 1 and result.batches == 1 and again.batches == 1
    rows = _delta(lake / "r" / "t" / "changes").to_pylist()
    assert {r["batch"] for r in rows} == {2, 3} and len([r for r in rows if r["_op"] == "insert"]) == 80
    ((gtid_now,),) = server.query("SELECT @@gtid_binlog_pos")
    assert again.resume is not None and again.resume.gtid == gtid_now


# -- issue 21, finding 3: a user without a privilege the run needs ---------------------------------------------------

ALL = ("SELECT", "REPLICATION SLAVE", "BINLOG MONITOR", "RELOAD")


def _without(privilege: str) -> tuple[str, ...]:
    return tuple(p for p in ALL if p != privilege)


def _lake_files(lake: Path) -> dict[str, bytes]:
    """Every file of a lake with its bytes (nothing when there is no lake)."""
    return {str(p.relative_to(lake)): p.read_bytes() for p in sorted(lake.rglob("*")) if p.is_file()}


def _error_lines(out: str) -> list[str]:
    """The lines a refused run says (py4j's closing line, which issue 21's CLI finding quiets, left out)."""
    return [line for line in out.splitlines() if line.startswith("binlake") and "clientserver" not in line]


REFUSALS = [  # (the privilege the user lacks, the options, what the one line says)
    ("SELECT", (), "lacks SELECT on *.*"),
    ("SELECT", ("--tables", "shop.*"), "the snapshot found no table matching shop.* on"),
    ("REPLICATION SLAVE", (), "lacks REPLICATION SLAVE"),
    ("BINLOG MONITOR", (), "lacks BINLOG MONITOR"),
    ("BINLOG MONITOR", ("--no-snapshot", "--from-start"), "lacks BINLOG MONITOR"),
]


@pytest.mark.parametrize(("missing", "options", "says"), REFUSALS)
def test_a_missing_privilege_is_named_and_the_lake_left_alone(
    fresh_server: ReplServer, tmp_path: Path, missing: str, options: tuple[str, ...], says: str
) -> None:
    """``ingest --host`` as a user without one of the privileges it needs: one line naming the privilege (and the
    GRANT that gives it), a non-zero exit, and no lake at all: an empty snapshot would have started the stream at
    the server's end, so the rows already there would never have landed.  Granted, the same command lands them."""
    server = fresh_server.server
    server.execute("CREATE DATABASE shop; CREATE TABLE shop.a (id INT PRIMARY KEY, v VARCHAR(9)); INSERT INTO shop.a"
                   " VALUES (1, 'one'), (2, 'two')")  # fmt: skip
    batch(server, 1)
    user = "u_" + missing.replace(" ", "_").lower()
    server.create_user(user, PASSWORD, grants=_without(missing))
    lake = tmp_path / "lake"
    rc, out = run_live(server, str(lake), *options, user=user)
    lines = _error_lines(out)
    assert rc == 2 and len(lines) == 1 and says in lines[0] and missing in lines[0], out[-3000:]
    assert f"GRANT {missing} ON " in lines[0] and PASSWORD not in out
    assert not lake.exists()
    server.execute(f"SET sql_log_bin = 0; GRANT {missing} ON *.* TO '{user}'@'127.0.0.1'; SET sql_log_bin = 1")
    rc, out = run_live(server, str(lake), *options, user=user)
    assert rc == 0, out[-3000:]
    assert_current_equals_select(server, "shop", "a", _delta(lake / "shop" / "a" / "current").to_pylist())


def test_a_refused_run_leaves_an_existing_lake_as_it_was(fresh_server: ReplServer, tmp_path: Path) -> None:
    server, lake = fresh_server.server, tmp_path / "lake"
    batch(server, 1)
    rc, out = run_live(server, str(lake), "--no-snapshot", "--from-start")
    assert rc == 0, out[-3000:]
    before = _lake_files(lake)
    batch(server, 2)
    server.create_user("u_noslave", PASSWORD, grants=_without("REPLICATION SLAVE"))
    rc, out = run_live(server, str(lake), user="u_noslave")
    assert rc == 2 and "lacks REPLICATION SLAVE" in out, out[-3000:]
    assert _lake_files(lake) == before


def test_without_reload_a_mariadb_snapshot_still_runs(fresh_server: ReplServer, tmp_path: Path) -> None:
    """RELOAD is the global read lock's (MySQL's snapshot method: binlake.snapshot.server); MariaDB's consistent
    snapshot takes no lock, so a user without it snapshots and streams (the lock method refusing it:
    tests/spark/test_snapshot_lock.py)."""
    server, lake = fresh_server.server, tmp_path / "lake"
    server.execute("CREATE DATABASE shop; CREATE TABLE shop.a (id INT PRIMARY KEY); INSERT INTO shop.a VALUES (1)")
    server.create_user("u_reload", PASSWORD, grants=_without("RELOAD"))
    rc, out = run_live(server, str(lake), "--tables", "shop.*", user="u_reload")
    assert rc == 0, out[-3000:]
    assert _delta(lake / "shop" / "a" / "current").to_pylist()[0]["id"] == 1


def test_tables_on_a_lake_that_took_its_first_snapshot(fresh_server: ReplServer, tmp_path: Path) -> None:
    """``--tables`` chooses an empty lake's first snapshot.  Given again with the same tables, the run goes on;
    given tables the lake does not hold, it is refused, naming them and ``--snapshot``, with the lake left as it
    was; ``--snapshot`` then takes them; a table created later (its CREATE streamed) is the lake's already."""
    server, lake = fresh_server.server, tmp_path / "lake"
    server.execute(
        "CREATE DATABASE shop; CREATE TABLE shop.a (id INT PRIMARY KEY); CREATE TABLE shop.b (id INT"
        " PRIMARY KEY, v INT); INSERT INTO shop.a VALUES (1); INSERT INTO shop.b VALUES (1, 10), (2, 20)"
    )
    server.create_user("u_all", PASSWORD, grants=ALL)
    rc, out = run_live(server, str(lake), "--tables", "shop.a", user="u_all")
    assert rc == 0, out[-3000:]
    server.execute("CREATE TABLE shop.c (id INT PRIMARY KEY); INSERT INTO shop.c VALUES (5); UPDATE shop.b SET v = 21"
                   " WHERE id = 2")  # fmt: skip
    rc, out = run_live(server, str(lake), "--tables", "shop.a", user="u_all")
    assert rc == 0, out[-3000:]
    before = _lake_files(lake)
    rc, out = run_live(server, str(lake), "--tables", "shop.*", user="u_all")
    lines = _error_lines(out)
    assert rc == 2 and len(lines) == 1 and "shop.b match shop.*" in lines[0] and "--snapshot" in lines[0], out
    assert "shop.c" not in lines[0] and _lake_files(lake) == before
    rc, out = run_live(server, str(lake), "--snapshot", "shop.b", user="u_all")
    assert rc == 0, out[-3000:]
    for table in ("a", "b", "c"):
        assert_current_equals_select(server, "shop", table, _delta(lake / "shop" / table / "current").to_pylist())
    rc, out = run_live(server, str(lake), "--tables", "shop.*", user="u_all")
    assert rc == 0, out[-3000:]
