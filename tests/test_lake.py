"""The lake without Spark: its records (JSON round trips, older and newer formats), the writer lease (one holder at a
time, waiting, expiry, takeover from a killed holder, fencing), and Delta commits that two writers race — on a local
disk and on S3 (moto on 127.0.0.1), since the lease must hold on object stores too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")

import pyarrow as pa

from binlake.lake import Lake, LakeBusy, LeaseLost
from binlake.lake import delta as lake_delta
from binlake.lake.lease import LeaseRecord, WriterLease
from binlake.lake.records import (
    BatchDone,
    BatchManifest,
    BinlogFile,
    DataFile,
    Emptied,
    FileIdentity,
    LakeFormatError,
    SkipRecord,
    Split,
    Statement,
    TaskReport,
)
from binlake.replication.position import ResumePoint
from binlake.storage import StorageError, locate
from binlake.testing import readers
from binlake.testing.objectstore import S3Server
from binlake.testing.objectstore import available as objectstore_available

REPO = Path(__file__).resolve().parents[1]

# -- records ------------------------------------------------------------------------------------------------------

_SPLIT = Split(BinlogFile("s3://b/binlogs/mysql-bin.000042", "mysql-bin.000042", 42, 9000), 4, 5000, 3)
_STATEMENTS = (
    Statement("ddl", 42 * 10**20 + 620 * 10**10, "mysql-bin.000042", 620, "shop", 0, "ALTER TABLE t ADD c INT"),
    Statement(
        "rename", 7, "mysql-bin.000042", 800, "shop", 0, "RENAME TABLE a TO b", ((("shop", "a"), ("shop", "b")),)
    ),
    Statement("xa", 9, "mysql-bin.000042", 900, xid="X'01',X'',1", rolled_back=True),
)


def test_records_round_trip_through_json() -> None:
    m = BatchManifest(3, (_SPLIT, Split(_SPLIT.file, 5000, None, 4)), {"mysql-bin.000042": 9000}, [["d"]], _STATEMENTS)
    assert BatchManifest.from_json(m.to_json()) == m
    assert json.loads(m.to_json())["version"] == BatchManifest.VERSION
    assert m.files == 1 and m.bytes == 8996
    done = BatchDone({"X'01'": ("shop/a", "shop/b")})
    assert BatchDone.from_json(done.to_json()) == done
    f = DataFile("shop/t", "part-1.parquet", 100, 7, 1234, pa.schema([("a", pa.int64())]).serialize().to_pybytes())
    report = TaskReport(
        2, (f,), (f,), {"shop/t insert": 7}, (Emptied("shop/", 5),), {"X'01'": {"shop/t": "0123456789abcdef"}},
        (SkipRecord("mysql-bin.000042", 10, 20, "CRC32", 1, False, None),), {"shop/t": "abc.arrow"},
    )  # fmt: skip
    assert TaskReport.from_json(report.to_json()) == report
    assert f.arrow_schema.names == ["a"]


def test_a_mark_keeps_the_layouts_of_waiting_xa_transactions_and_one_of_version_3_reads() -> None:
    """Version 4 keeps, per waiting XID and table, the change-table column and the table's name of each column of
    the rows' table map; a version 3 mark (none kept) reads with none."""
    done = BatchDone({"X'01'": ("shop/t",)}, {"shop/t/changes": 2}, {"X'01'": {"shop/t": (("id", "id"), ("a", "aa"))}})
    text = done.to_json()
    assert BatchDone.from_json(text) == done
    assert json.loads(text)["version"] == 4
    assert json.loads(text)["xa_layouts"] == {"X'01'": {"shop/t": [["id", "id"], ["a", "aa"]]}}
    v3 = {"version": 3, "xa_pending": {"X'01'": ["shop/t"]}, "tables": {"shop/t/changes": 2}}
    assert BatchDone.from_json(json.dumps(v3)) == BatchDone({"X'01'": ("shop/t",)}, {"shop/t/changes": 2})
    assert "xa_layouts" not in json.loads(BatchDone({"x": ("shop/t",)}).to_json())


def test_a_manifest_carries_its_resume_point_and_one_of_version_2_reads() -> None:
    point = ResumePoint("mysql-bin.000042", 9000, "0-1-77", "mariadb")
    m = BatchManifest(4, (_SPLIT,), {"mysql-bin.000042": 9000}, [], (), point)
    assert BatchManifest.from_json(m.to_json()) == m
    assert json.loads(m.to_json())["resume"] == json.loads(point.to_json())
    v2 = json.loads(m.to_json())
    v2["version"] = 2
    del v2["resume"]
    assert BatchManifest.from_json(json.dumps(v2)) == BatchManifest(4, (_SPLIT,), {"mysql-bin.000042": 9000}, [], ())
    v2.update(version=3, resume={"version": 1, "file": "x/y", "position": 4, "gtid": None, "flavor": None})
    with pytest.raises(LakeFormatError, match="resume point"):
        BatchManifest.from_json(json.dumps(v2))


def test_a_manifest_of_binlake_0_1_reads() -> None:
    """Version 1 (no version field; splits and statements as positional lists), as binlake 0.1 wrote them."""
    old = {
        "batch": 3,
        "splits": [["/data/mysql-bin.000042", "mysql-bin.000042", 42, 9000, 4, 5000, 3]],
        "positions": {"mysql-bin.000042": 5000},
        "schema": [["shop", "t", [["id", "int", [], False, "id int"]], ["id"], False]],
        "statements": [
            ["rename", 7, "mysql-bin.000042", 800, "shop", 0, "RENAME TABLE a TO b", [[["shop", "a"], ["shop", "b"]]],
             "", False],
        ],
    }  # fmt: skip
    m = BatchManifest.from_json(json.dumps(old))
    assert m.splits == (Split(BinlogFile("/data/mysql-bin.000042", "mysql-bin.000042", 42, 9000), 4, 5000, 3),)
    assert m.statements == (_STATEMENTS[1],) and m.schema == old["schema"] and m.positions == old["positions"]
    assert BatchDone.from_json('{"xa_pending": {"x": ["shop/t"]}}') == BatchDone({"x": ("shop/t",)})
    assert BatchDone.from_json("") == BatchDone()


def test_a_manifest_carries_file_identities_and_one_of_version_3_reads() -> None:
    """Version 4 records each landed file's identity and, for a batch that takes the lake back, the first batch it
    takes back; version 3, as binlake wrote it before (``tests/spark/data``: the first batch of a lake a copy cut
    short left stuck), reads with neither."""
    ident = FileIdentity(1, 1_700_000_000, 22522, "ab" * 32)
    m = BatchManifest(5, (), {"mysql-bin.000042": 9000}, [], (), None, {"mysql-bin.000042": ident}, 2)
    assert BatchManifest.from_json(m.to_json()) == m
    assert json.loads(m.to_json())["identities"] == {
        "mysql-bin.000042": {"server_id": 1, "created": 1_700_000_000, "prefix": 22522, "digest": "ab" * 32}
    }
    text = (REPO / "tests" / "spark" / "data" / "stuck-at-30000" / "0000000001.json").read_text()
    assert json.loads(text)["version"] == 3
    old = BatchManifest.from_json(text)
    assert old.identities == {} and old.rewinds is None
    assert old.positions == {"example-bin.000001": 22785} and old.splits[0].stop == 22785


def test_a_newer_format_is_refused_clearly() -> None:
    m = json.loads(BatchManifest(1, (_SPLIT,), {}).to_json())
    m["version"] = 99
    with pytest.raises(LakeFormatError, match="format version 99, this binlake reads version 4") as e:
        BatchManifest.from_json(json.dumps(m), "s3://b/lake/_binlake/batches/0000000001.json")
    assert e.value.file == "s3://b/lake/_binlake/batches/0000000001.json"
    with pytest.raises(LakeFormatError, match="task report"):
        TaskReport.from_json(json.dumps({"version": 0}))
    with pytest.raises(LakeFormatError, match="not JSON"):
        BatchManifest.from_json("{")


# -- on a local disk and on S3 ------------------------------------------------------------------------------------


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A lake's root URI: a folder, or a prefix of a new bucket on the session's S3 server (its variables in this
    test's environment)."""
    if request.param == "local":
        yield str(tmp_path / "lake")
        return
    server = request.getfixturevalue("s3_server")
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    yield f"s3://{server.bucket()}/lake"


def test_one_writer_at_a_time(root: str) -> None:
    lake, other = Lake(root), Lake(root)
    with lake.writing(lease_seconds=30):
        lake.check()
        with pytest.raises(LakeBusy, match=f"pid {os.getpid()} on .*--wait SECONDS waits for it") as e, other.writing():
            pass
        assert e.value.file == locate(root).uri
        t0 = time.monotonic()
        with pytest.raises(LakeBusy, match="after waiting 1 s"), other.writing(wait=1.0):
            pass
        assert time.monotonic() - t0 >= 1.0
    with other.writing():  # handed back: free at once
        other.check()
    with pytest.raises(LeaseLost, match="needs its writer lease"):
        lake.check()


def test_a_waiting_writer_gets_the_lake_when_the_holder_finishes(root: str) -> None:
    lake = Lake(root)
    told: list[str] = []
    hold = threading.Event()

    def holder() -> None:
        with lake.writing(lease_seconds=30):
            hold.set()
            time.sleep(1.5)

    t = threading.Thread(target=holder)
    t.start()
    hold.wait()
    with Lake(root).writing(wait=60, on_wait=told.append) as lease:
        assert 0.5 < lease.waited < 30
    t.join()
    assert len(told) == 1 and "waiting up to 60 s for another ingest writing this lake" in told[0]


def test_an_expired_lease_is_taken_over_and_its_holder_fenced(root: str) -> None:
    """A holder that stops renewing (hung, cut off) loses the lake after its lease runs out; it can then commit
    nothing, and its renewal finds the new holder's record."""
    stuck = WriterLease(locate(root), seconds=2.0).acquire()
    stuck._stop.set()  # its renewals stop, as in a process that hangs
    assert stuck._thread is not None
    stuck._thread.join()
    stuck.check()  # still in its lease
    with pytest.raises(LakeBusy):
        WriterLease(locate(root), seconds=2.0).acquire()
    t0 = time.monotonic()
    with WriterLease(locate(root), seconds=2.0).acquire(wait=30) as taker:
        assert 0.5 < time.monotonic() - t0 < 10 and taker.waited > 0
        with pytest.raises(LeaseLost, match="expires before a commit could finish"):
            stuck.check()
        with pytest.raises(LeaseLost, match="taken over"):
            stuck.renew()
        with pytest.raises(LeaseLost, match="taken over"):
            stuck.check()
        time.sleep(2.5)  # the taker's own renewals keep it
        taker.check()
    stuck.release()


def test_a_killed_holder_on_this_machine_is_taken_over_at_once(root: str, tmp_path: Path) -> None:
    code = (
        "import sys, time; from binlake.lake import Lake\n"
        "with Lake(sys.argv[1]).writing(lease_seconds=600):\n"
        "    print('held', flush=True); time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-c", code, root], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        with pytest.raises(LakeBusy, match=f"pid {proc.pid} "), Lake(root).writing():
            pass
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    with Lake(root).writing() as lease:  # its process is gone: no waiting for 600 s
        assert lease.waited == 0


def test_a_record_from_another_machine_waits_for_its_expiry(root: str) -> None:
    """A holder on another host (or in another pid namespace) cannot be checked: only its expiry frees the lake."""
    lease = WriterLease(locate(root), seconds=600)
    alien = LeaseRecord("x", "another-host", 1, "boot/pid:[1]", time.time(), time.time() + 1.5)
    assert lease._put(None, alien)
    with pytest.raises(LakeBusy, match="pid 1 on another-host"):
        WriterLease(locate(root)).acquire()
    WriterLease(locate(root)).acquire(wait=30).release()


# -- a lake that cannot be written ----------------------------------------------------------------------------------

_ACQUIRE = "import sys; from binlake.lake.lease import WriterLease; from binlake.storage import locate\n" \
    "WriterLease(locate(sys.argv[1])).acquire()"  # fmt: skip


def _acquire(root: str, prefix: Sequence[str] = (), env: dict[str, str] | None = None) -> tuple[str, float]:
    """Take the lease of ``root`` in a child process (under ``prefix``), which must end within a minute (before the
    fix it took every store error for a lost race and looped at full CPU for ever); its last stderr line and the
    seconds it took."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})}
    t0 = time.monotonic()
    try:
        done = subprocess.run([*prefix, sys.executable, "-c", _ACQUIRE, root], env=env, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"taking the lease of {root} hung (a store error taken for a lost race)")
    assert done.returncode == 1  # the StorageError, uncaught
    return done.stderr.strip().splitlines()[-1], time.monotonic() - t0


@pytest.mark.parametrize("kind", ["a file", "/proc"])
def test_a_lake_path_that_cannot_be_written_is_an_error_at_once(kind: str, tmp_path: Path) -> None:
    """``binlake ingest --lake F``: F an existing file, or a path under /proc."""
    if kind == "a file":
        root, reason = tmp_path / "lake", "Not a directory"
        root.write_text("not a lake\n")
    else:
        root, reason = Path("/proc/binlake-lake"), "No such file or directory"
    line, seconds = _acquire(str(root))
    assert (
        line
        == f"binlake.storage.StorageError: {root}: cannot write the lake (its writer lease, _binlake/lease): {reason}"
    )
    assert seconds < 30
    with pytest.raises(StorageError, match="cannot write the lake") as e:  # (in this process too: the error's fields)
        WriterLease(locate(root)).acquire()
    assert e.value.file == str(root) and e.value.exit_status == 2


def test_a_read_only_lake_is_an_error_at_once(read_only_dir: tuple[Path, list[str]]) -> None:
    folder, prefix = read_only_dir
    line, seconds = _acquire(str(folder / "lake"), prefix)
    assert line.endswith(f"{folder / 'lake'}: cannot write the lake (its writer lease, _binlake/lease): "
                         f"{'Read-only file system' if prefix else 'Permission denied'}")  # fmt: skip
    assert seconds < 30


def test_a_bucket_that_refuses_writes_is_an_error_at_once() -> None:
    """Credentials that may read the bucket but not write it (S3's AccessDenied): moto checking IAM policies."""
    if not objectstore_available():
        pytest.skip("moto not installed: pip install 'moto[server]'")
    with S3Server(iam=True) as s3:
        bucket = s3.bucket()
        line, seconds = _acquire(f"s3://{bucket}/lake", env=s3.read_only_env())
        assert line == (f"binlake.storage.StorageError: s3://{bucket}/lake: cannot write the lake (its writer lease, "
                        "_binlake/lease): AccessDenied: Access Denied")  # fmt: skip
        assert seconds < 30
        missing, _ = _acquire(f"s3://{bucket}-gone/lake", env=s3.env())
        assert missing.endswith("cannot read the lake (its writer lease, _binlake/lease): NoSuchBucket: The specified "
                                "bucket does not exist")  # fmt: skip


def _race(root: str) -> list[str]:
    """Four threads racing for the lease of ``root`` at once: what each got (``won``, ``busy``)."""
    results: list[str] = []
    barrier = threading.Barrier(4)

    def one() -> None:
        lease = WriterLease(locate(root), seconds=30)
        barrier.wait()
        try:
            lease.acquire()
            results.append("won")
            deadline = time.monotonic() + 60  # held until the others have tried (a loaded machine may start them
            while len(results) < 4 and time.monotonic() < deadline:  # after a fixed hold: each would win in turn)
                time.sleep(0.05)
            lease.release()
        except LakeBusy:
            results.append("busy")

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(results)


def test_racing_writers_one_wins(root: str) -> None:
    assert _race(root) == ["busy", "busy", "busy", "won"]


def test_racing_threads_of_one_process_one_wins_however_slow_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four threads of one process race for the lease, the winner's commit slow to return: the others read its
    record meanwhile, and a record of this process whose holder it did not yet count as held read as one a stopped
    ingest of this process left, free to take (two won; test_racing_writers_one_wins failed so under load)."""
    import binlake.lake.lease as lease_mod

    put = lease_mod.WriterLease._put

    def slow_put(self: Any, dt: Any, record: Any) -> bool:
        done = put(self, dt, record)
        if done:
            time.sleep(0.5)  # (the commit is in; its thread has not returned yet)
        return done

    monkeypatch.setattr(lease_mod.WriterLease, "_put", slow_put)
    assert _race(str(tmp_path / "lake")) == ["busy", "busy", "busy", "won"]


def test_writers_never_both_commit_a_batch(root: str) -> None:
    """Three writers committing one batch to one table at once (as a fenced-off holder and its successor could),
    batch after batch: the table gets each batch once; the others find it there and add nothing."""
    table = locate(root) / "db" / "t" / "changes"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    for batch in range(1, 5):
        files = [lake_delta.write_parquet(data, table, "db/t") for _ in range(3)]
        barrier = threading.Barrier(3)
        won: list[bool] = []

        def commit(
            i: int, batch: int = batch, files: list[Any] = files, barrier: Any = barrier, won: list[bool] = won
        ) -> None:
            barrier.wait()
            won.append(lake_delta.commit_files(table, files[i], data.schema, batch))

        threads = [threading.Thread(target=commit, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(won) == [False, False, True], batch
        assert lake_delta.txn_version(table) == batch
    read = lake_delta.read_table(table)
    assert read is not None and read.num_rows == 12


def test_commits_need_the_lease(root: str) -> None:
    lake = Lake(root)
    table = lake.changes("db/t")
    data = pa.table({"id": pa.array([1], pa.int64())})
    with pytest.raises(LeaseLost):
        lake.append(table, data, 1)
    with pytest.raises(LeaseLost):
        lake.write_done(1, BatchDone())
    with lake.writing():
        assert lake.append(table, data, 1) and not lake.append(table, data, 1)
        lake.write_manifest(BatchManifest(1, (_SPLIT,), {"mysql-bin.000042": 5000}))
        lake.write_done(1, BatchDone())
    manifest, done = lake.last_manifest()
    assert manifest is not None and manifest.batch == 1 and done
    assert [(t.name, t.kind, t.rows) for t in lake.tables()] == [("db.t", "changes", 1)]


def test_a_rewind_takes_every_table_back_once(root: str) -> None:
    """``Lake.rewind(2)``: a table batch 2 appended to and resolved XA outcomes in is as it was after batch 1, one
    batch 2 created is gone, one it did not touch is left alone; run again (a kill cut it short), it changes
    nothing, and a later batch commits as usual."""
    lake = Lake(root)
    kept, grown, made = lake.changes("db/kept"), lake.changes("db/grown"), lake.current("db/made")
    row = pa.table(
        {"id": pa.array([1], pa.int64()), "_xid": pa.array(["x"]), "_rolled_back": pa.array([None], pa.bool_())}
    )
    with lake.writing():
        lake.append(kept, row, 1)
        lake.append(grown, row, 1)
        lake.append(grown, row, 2)
        lake.resolve_rollbacks(grown, {"x": True}, 2)
        lake.append(made, row, 2)
        assert lake.rewind(2) == 2
        assert lake.rewind(2) == 0
        assert not lake.has_table(made) and lake_delta.txn_version(grown) == 2
        for loc in (kept, grown):
            read = lake_delta.read_table(loc)
            assert read is not None and read.to_pylist() == row.to_pylist()
        assert lake.append(grown, row, 3)
    read = lake_delta.read_table(grown)
    assert read is not None and read.num_rows == 2


def test_readers_see_only_committed_batches(root: str) -> None:
    """Files a batch's tasks wrote and no commit references yet (an ingest running, or killed) are invisible to
    readers of the Delta log: deltalake, and Polars and DuckDB where installed."""
    lake = Lake(root)
    loc = lake.changes("db/t")
    with lake.writing():
        lake.append(loc, pa.table({"id": pa.array([1, 2], pa.int64())}), 1)
    pending = lake_delta.write_parquet(pa.table({"id": pa.array([3, 4, 5], pa.int64())}), loc, "db/t")  # batch 2
    assert len([e for e in loc.list() if e.location.name.endswith(".parquet")]) == 2  # on disk: both batches' files
    read = lake_delta.read_table(loc)
    assert read is not None and sorted(read["id"].to_pylist()) == [1, 2]
    assert all(rows == 2 for rows in _other_readers(loc).values())
    with lake.writing():
        lake.commit(loc, pending, pending[0].arrow_schema, 2)
    read = lake_delta.read_table(loc)
    assert read is not None and sorted(read["id"].to_pylist()) == [1, 2, 3, 4, 5]
    assert all(rows == 5 for rows in _other_readers(loc).values())


_READ_AND_EXIT = "import sys; from binlake.lake import Lake; lake = Lake(sys.argv[1])\n" \
    "print(lake.read(lake.changes('db/t')).num_rows)"  # fmt: skip


def test_reading_the_lake_never_aborts_at_exit(tmp_path: Path) -> None:
    """A process that reads a table of the lake and exits exits 0, every time: deltalake's own reader (a Python
    filesystem) left a prefetch on Arrow's I/O threads holding a Python buffer, dropped while the interpreter exits:
    ``terminate called without an active exception``, exit 134, in 5 to 60 % of the runs of this child, as the
    machine's load goes (see ``binlake.lake.delta.read_table``).  20 runs of the child and 10 of ``binlake tables
    LAKE TABLE``, two at a time, each bounded by a minute."""
    lake = Lake(tmp_path / "lake")
    n = 5000
    with lake.writing():
        for batch in (1, 2):
            columns = {f"c{i}": pa.array([f"{batch}-{i}-{k}" * 3 for k in range(n)]) for i in range(12)}
            lake.append(lake.changes("db/t"), pa.table({"id": pa.array(range(n), pa.int64()), **columns}), batch)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    read = [sys.executable, "-c", _READ_AND_EXIT, str(tmp_path / "lake")]
    show = [sys.executable, "-m", "binlake", "tables", str(tmp_path / "lake"), "db.t", "--limit", "1"]

    def one(command: list[str]) -> tuple[int, str, str]:
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        return run.returncode, run.stdout.splitlines()[0] if run.stdout else "", run.stderr

    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(one, [read] * 20 + [show] * 10))
    assert [r for r in runs if r[0] != 0] == []
    assert {r[1] for r in runs} == {f"{2 * n}", f"db.t (changes): {2 * n} rows, 13 columns"}


def _other_readers(loc: Any) -> dict[str, int]:
    return {r: readers.read_with(r, loc).num_rows for r in readers.available() if loc.is_local or r != "duckdb"}


def test_a_growing_copy_is_not_taken_for_the_file_before_it(tmp_path: Path) -> None:
    """Two binlogs one server started in the same second share their first bytes up to their FORMAT_DESCRIPTIONs'
    bodies.  A copy of the second still being written (a mirror's), listed while it held less than its whole
    FORMAT_DESCRIPTION and read once it held more, waits for the next run: it is not compared over the few bytes
    the listing saw and skipped as the first one under another name (a live ingest lost a whole binlog so)."""
    from binlake.binlogs import BinlogFile
    from binlake.ingest.identity import sort_out

    first = (REPO / "examples" / "example-bin.000001").read_bytes()
    a, b = tmp_path / "b.000001", tmp_path / "b.000002"
    a.write_bytes(first)
    second = bytearray(first)
    second[4 + 19 + 52 : 4 + 19 + 56] = b"\0\0\0\0"  # (the FORMAT_DESCRIPTION's create_timestamp: 0 past the first)
    b.write_bytes(bytes(second[:4000]))
    listed = [BinlogFile(str(a), a.name, 1, len(first)), BinlogFile(str(b), b.name, 2, 60)]  # b: 60 bytes then
    lines: list[str] = []
    kept, _ = sort_out(listed, {}, {}, lines.append)
    assert [f.name for f in kept] == ["b.000001"]
    assert lines == ["b.000002: 60 bytes, less than its format description: waits for the rest of the file"], lines
    kept, _ = sort_out([listed[0], BinlogFile(str(b), b.name, 2, 4000)], {}, {}, lines.append)
    assert [f.name for f in kept] == ["b.000001", "b.000002"]


def test_a_record_of_a_binlogs_head_is_no_twin_of_the_next_binlog(tmp_path: Path) -> None:
    """Two binlogs a server started in the same second with nothing logged between share their head events (format
    description, GTID list, checkpoint: 330 bytes here).  A lake that landed the first only through its head (a
    mirror's copy, before its first transaction) holds a record of those bytes alone; the second binlog matches it
    and lands, whether the first is among the sources (its bytes decide) or not (the record tells nothing): it is
    not skipped as the first under another name (a live ingest lost whole binlogs so).  A copy of a binlog the
    lake landed past its head is still one."""
    from binlake.binlogs import BinlogFile
    from binlake.ingest.identity import recorded, sort_out

    first = (REPO / "examples" / "example-bin.000001").read_bytes()
    a, b, c = tmp_path / "b.000001", tmp_path / "b.000002", tmp_path / "copy.000001"
    a.write_bytes(first)
    second = bytearray(first)
    second[330 + 19] = 9  # (the first transaction's GTID: 0-1-9, not 0-1-1)
    b.write_bytes(second)
    c.write_bytes(first)
    fa, fb, fc = (BinlogFile(str(p), p.name, i, len(first)) for i, p in enumerate((a, b, c), 1))
    known = recorded([fa], {}, {a.name: 330})
    assert known[a.name].prefix == 330
    for sources in ([fa, fb], [fb]):
        lines: list[str] = []
        kept, _ = sort_out(sources, known, {a.name: 330}, lines.append)
        assert [f.name for f in kept] == [f.name for f in sources] and not lines, lines
    # past its head (its first transaction, 330..481), the record tells: a copy is skipped, the other binlog lands
    known = recorded([fa], {}, {a.name: 481})
    for sources in ([fa, fc, fb], [fc, fb]):
        lines = []
        kept, _ = sort_out(sources, known, {a.name: 481}, lines.append)
        assert [f.name for f in kept] == [f.name for f in sources if f is not fc], lines
        assert len(lines) == 1 and lines[0].startswith("copy.000001 is b.000001 under another name"), lines
