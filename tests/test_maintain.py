"""Maintenance (binlake.lake.maintain, ``binlake maintain``): each step against a lake of random batches (the model of
tests/lakemodel.py is the oracle; every reader of binlake.testing.readers checks the current state), time travel
within the retention, deletion-vector files, the log, landed binlog copies, an unfinished batch, the command line,
kill -9 at random moments of a run, and the long follow's storage bound (bounded here; benchmarks/long_follow.py runs
the full size)."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")
pytest.importorskip("pyroaring", reason="pyroaring not installed: pip install -e '.[spark]'")

import pyarrow as pa
import pyarrow.parquet as pq
from tests.lakemodel import COLUMNS, TABLES, Batch, Model, Op, generate, key_of, lake_rows, run, write_batch

from binlake.cli import main
from binlake.lake import Lake, deltalog
from binlake.lake import delta as lake_delta
from binlake.lake import maintain as m
from binlake.lake.files import write_sorted
from binlake.lake.records import BatchDone, BatchManifest, LakeSettings
from binlake.lake.tables import META_DICTIONARY
from binlake.replication.position import ResumePoint
from binlake.storage import locate
from binlake.testing import readers

REPO = Path(__file__).resolve().parents[1]
PK = ["k1"]
HOUR = 3600.0


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[Lake]:
    lk = Lake(tmp_path / "lake")
    with lk.writing():
        yield lk


def _play(lake: Lake, batches: int, seed: int = 7) -> Model:
    rng = random.Random(seed)
    model, replay = Model(PK), Model(PK)
    for n in range(1, batches + 1):
        run(lake, write_batch(lake, generate(rng, model, n, rng.randrange(4, 14)), replay))
    return model


def _changes(lake: Lake) -> dict[str, list[tuple[Any, ...]]]:
    """Every change table's rows, in a canonical order."""
    out = {}
    for t in TABLES:
        data = lake_delta.read_table(lake.changes(key_of(t)))
        if data is not None:
            out[t] = sorted(tuple(str(v) for v in r.values()) for r in data.to_pylist())
    return out


def _check(lake: Lake, model: Model, changes: dict[str, list[tuple[Any, ...]]]) -> None:
    """The current state is the model's through binlake's reader and every other one; the change tables hold what
    they held."""
    for t in TABLES:
        want = model.rows(t)
        assert lake_rows(lake, t, PK) == want, t
        loc = lake.current(key_of(t))
        if lake.has_table(loc):
            for name in readers.available():
                if name == "duckdb" and not loc.is_local:
                    continue  # (read_with's DuckDB reads local tables only)
                got = [{c: r.get(c) for c in COLUMNS} for r in readers.read_with(name, loc).to_pylist()]
                assert sorted(got, key=lambda r: r["k1"]) == want, (name, t)
    assert _changes(lake) == changes


def _files(loc: Any) -> int:
    snap = deltalog.read_snapshot(loc)
    return 0 if snap is None else len(snap.files)


def _data_files(root: Path) -> list[Path]:
    """The files of the lake's tables (Parquet and deletion vectors), logs and binlake's records aside."""
    return [p for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts and "_binlake" not in p.parts]


def test_parse_duration() -> None:
    assert m.parse_duration("7d") == 7 * 86400
    assert m.parse_duration("36h") == 36 * 3600
    assert m.parse_duration("90m") == 5400
    assert m.parse_duration("0") == 0
    assert m.parse_duration("2.5s") == 2.5
    for bad in ("", "x", "-1d", "7y", "nan"):
        with pytest.raises(ValueError):
            m.parse_duration(bad)


def test_compact_keeps_every_row(lake: Lake) -> None:
    model = _play(lake, 30)
    changes = _changes(lake)
    before = {t: (_files(lake.current(key_of(t))), _files(lake.changes(key_of(t)))) for t in TABLES}
    dry = m.maintain(lake, only=["compact"], dry_run=True)
    assert dry.merged > 0
    assert {t: (_files(lake.current(key_of(t))), _files(lake.changes(key_of(t)))) for t in TABLES} == before
    done = m.maintain(lake, only=["compact"])
    assert done.merged == dry.merged and done.merged_into <= len(done.tables)
    for t in TABLES:
        assert _files(lake.current(key_of(t))) <= 1 and _files(lake.changes(key_of(t))) == 1, t
        snap = deltalog.read_snapshot(lake.changes(key_of(t)))
        assert snap is not None and snap.txns[m.APP_ID] == 1
    _check(lake, model, changes)
    assert m.maintain(lake, only=["compact"]).merged == 0  # nothing left: a second run does nothing
    # the engine goes on from the compacted files: the next batches apply to them
    rng = random.Random(99)
    replay = Model(PK)
    replay.tables = {t: dict(v) for t, v in model.tables.items()}
    for n in range(31, 41):
        run(lake, write_batch(lake, generate(rng, model, n, rng.randrange(4, 14)), replay))
    _check(lake, model, _changes(lake))


def test_compaction_commits_say_no_data_changed(lake: Lake) -> None:
    _play(lake, 6)
    m.maintain(lake, only=["compact"])
    loc = lake.changes(key_of("t1"))
    newest = max(deltalog.log_files(loc).commits)
    actions = [__import__("json").loads(line) for line in (loc / "_delta_log" / f"{newest:020d}.json").read_bytes()
               .decode().splitlines()]  # fmt: skip
    assert actions[0]["commitInfo"]["operation"] == "OPTIMIZE"
    assert {a[k]["dataChange"] for a in actions for k in ("add", "remove") if k in a} == {False}


def test_budget_defers_merges(lake: Lake) -> None:
    _play(lake, 20)
    report = m.maintain(lake, only=["compact"], budget=1)
    assert report.deferred > 0 and len(report.tables) == 1  # the first merge runs, the rest wait
    assert m.maintain(lake, only=["compact"]).merged > 0


def test_purge_rewrites_files_past_the_threshold(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(m, "SMALL_ROWS", 1)  # every file counts as large: only the purge rewrites it
    model = _play(lake, 25)
    changes = _changes(lake)
    heavy = []
    for t in TABLES:
        snap = deltalog.read_snapshot(lake.current(key_of(t)))
        for add in snap.files.values() if snap else []:
            d = add.get("deletionVector")
            if d and int(d["cardinality"]) > m.PURGE_FRACTION * snap.num_records(add["path"]):  # type: ignore[union-attr]
                heavy.append(add["path"])
    assert heavy, "the workload left no file past the threshold"
    report = m.maintain(lake, only=["purge"])
    assert report.purged == len(heavy) and report.merged == 0
    for t in TABLES:
        snap = deltalog.read_snapshot(lake.current(key_of(t)))
        assert not set(heavy) & set(snap.files if snap else ())
    _check(lake, model, changes)


def test_vacuum_keeps_what_the_retention_needs(lake: Lake) -> None:
    model = _play(lake, 12)
    loc = lake.current(key_of("t1"))
    old_version = deltalog.read_snapshot(loc).version  # type: ignore[union-attr]
    old_rows = lake_delta.read_table(loc, version=old_version)
    m.maintain(lake, only=["compact"])
    crashed = loc / "part-crashed-attempt.parquet"  # a file a killed writer left, named by no version
    pq.write_table(pa.table({"k1": [1]}), crashed.uri)
    # within the retention: nothing goes, time travel to before the compaction still reads
    report = m.maintain(lake, only=["vacuum"], retention=HOUR)
    assert report.vacuumed == 0 and crashed.exists()
    assert lake_delta.read_table(loc, version=old_version).equals(old_rows)  # type: ignore[union-attr]
    # an hour later: the replaced files and the crashed attempt go, the live ones stay
    report = m.maintain(lake, only=["vacuum"], retention=HOUR, now=time.time() + 2 * HOUR)
    assert report.vacuumed > 0 and not crashed.exists()
    _check(lake, model, _changes(lake))


def test_vacuum_keeps_live_deletion_vector_files(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    from binlake.lake import dv as dvs

    write = dvs.write_deletion_vectors
    monkeypatch.setattr(dvs, "write_deletion_vectors", lambda table, rows, **kw: write(table, rows, inline_max=0))
    model = _play(lake, 15)
    in_files = [
        d
        for t in TABLES
        if (snap := deltalog.read_snapshot(lake.current(key_of(t)))) is not None
        for a in snap.files.values()
        if (d := a.get("deletionVector")) and d["storageType"] == "u"
    ]
    assert in_files, "no deletion vector file to keep"
    report = m.maintain(lake, only=["vacuum"], retention=0, now=time.time() + HOUR)
    assert report.vacuumed > 0  # the DV files of earlier versions
    _check(lake, model, _changes(lake))


def _dv_files(lake: Lake, t: str) -> set[str]:
    """The deletion-vector files the current table of ``t`` names now."""
    snap = deltalog.read_snapshot(lake.current(key_of(t)))
    return {d["pathOrInlineDv"] for a in (snap.files.values() if snap else ())
            if (d := a.get("deletionVector")) and d["storageType"] == "u"}  # fmt: skip


def test_compact_gathers_deletion_vectors_into_one_file(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches leave a current table's deletion vectors in a file each; compaction writes them again into one file
    per table (in its commit), the rows unchanged for every reader, and does nothing more once there is one."""
    from binlake.lake import dv as dvs

    write = dvs.write_deletion_vectors
    monkeypatch.setattr(dvs, "write_deletion_vectors", lambda table, rows, **kw: write(table, rows, inline_max=0))
    monkeypatch.setattr(m, "SMALL_ROWS", 1)  # every file counts as large: no merge, the gathering alone
    model = _play(lake, 15)
    changes = _changes(lake)
    scattered = [t for t in TABLES if len(_dv_files(lake, t)) > 1]
    assert scattered, "the workload left no table with deletion vectors in several files"
    dry = m.maintain(lake, only=["compact"], dry_run=True)
    assert dry.gathered == len(scattered) and len(_dv_files(lake, scattered[0])) > 1
    report = m.maintain(lake, only=["compact"])
    assert report.gathered == len(scattered) and all(t.endswith("/changes") for t in report.tables)
    assert all(len(_dv_files(lake, t)) <= 1 for t in TABLES)
    assert m.maintain(lake, only=["compact"]).gathered == 0
    m.maintain(lake, only=["vacuum"], retention=0, now=time.time() + HOUR)  # the old DV files go
    _check(lake, model, changes)


def test_compact_merges_a_change_tables_mid_size_files_once(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change table's files too large to be small (a first load's file per task) are merged among themselves; the
    merged file is then left alone while the small files after it are merged into one beside it."""
    _play(lake, 8)
    changes = _changes(lake)
    loc = lake.changes(key_of("t1"))
    assert _files(loc) > 1
    monkeypatch.setattr(m, "SMALL_BYTES", 1)  # every file is mid-size
    report = m.maintain(lake, only=["compact"])
    assert report.merged > 0 and _files(loc) == 1
    assert _changes(lake) == changes
    snap = deltalog.read_snapshot(loc)
    assert snap is not None
    (merged,) = snap.files
    monkeypatch.setattr(m, "SMALL_BYTES", int(snap.files[merged]["size"]))  # the merged file is mid-size, not small
    rng = random.Random(11)
    model, replay = Model(PK), Model(PK)
    for n in range(9, 13):
        run(lake, write_batch(lake, generate(rng, model, n, rng.randrange(4, 14)), replay))
    assert _files(loc) > 2
    m.maintain(lake, only=["compact"])
    snap = deltalog.read_snapshot(loc)
    assert snap is not None and merged in snap.files and len(snap.files) == 2


def test_a_retention_past_a_week_keeps_its_tombstones_in_checkpoints(lake: Lake) -> None:
    """delta-rs' checkpoints leave out the ``remove`` actions older than the table's
    ``delta.deletedFileRetentionDuration`` (a week unless set); with a lake retention of 30 days the checkpoint step
    raises it on every table first (once: a second run commits nothing; a shorter retention never lowers it; a
    vacuum run alone raises it too, the table's other settings kept), so a file removed 10 days ago is still a
    tombstone after a checkpoint and time travel to before its removal reads."""
    model = _play(lake, 12)
    loc = lake.current(key_of("t1"))
    old_version = deltalog.read_snapshot(loc).version  # type: ignore[union-attr]
    old_rows = lake_delta.read_table(loc, version=old_version)
    m.maintain(lake, only=["compact"])  # replaces the table's files: tombstones
    ten_days_ago = int((time.time() - 10 * 86400) * 1000)
    for commit in sorted((Path(loc.uri) / "_delta_log").glob("*.json")):  # (the compaction as if 10 days old)
        lines = [json.loads(line) for line in commit.read_text().splitlines()]
        if any("remove" in a for a in lines):
            for a in lines:
                if "remove" in a:
                    a["remove"]["deletionTimestamp"] = ten_days_ago
            commit.write_text("".join(json.dumps(a) + "\n" for a in lines))
    removed = set(deltalog.read_snapshot(loc).tombstones)  # type: ignore[union-attr]
    assert removed
    month = 30 * 86400.0
    report = m.maintain(lake, only=["checkpoint"], retention=month)
    tables = list(lake.table_locations())
    assert report.properties == len(tables)
    for _, _, t in tables:
        config = deltalog.read_snapshot(t).metadata["configuration"]  # type: ignore[union-attr]
        assert m.interval_seconds(config[m.TOMBSTONE_RETENTION]) == month
    newest = deltalog.read_snapshot(loc).version  # type: ignore[union-attr]
    deltalog.delta_table(loc, newest).create_checkpoint()
    assert max(deltalog.log_files(loc).checkpoints) == newest
    assert removed <= set(deltalog.read_snapshot(loc).tombstones)  # type: ignore[union-attr]
    assert m.maintain(lake, only=["checkpoint"], retention=month).properties == 0
    assert m.maintain(lake, only=["checkpoint"], retention=HOUR).properties == 0
    assert deltalog.read_snapshot(loc).version == newest  # type: ignore[union-attr]
    other = lake.changes(key_of("t2"))
    config = dict(deltalog.read_snapshot(other).metadata["configuration"])  # type: ignore[union-attr]
    assert m.maintain(lake, only=["vacuum"], retention=2 * month).properties == len(tables)  # a vacuum alone too
    config[m.TOMBSTONE_RETENTION] = f"interval {int(2 * month)} seconds"
    assert deltalog.read_snapshot(other).metadata["configuration"] == config  # type: ignore[union-attr]
    assert m.maintain(lake, only=["vacuum"], retention=month).vacuumed == 0
    assert lake_delta.read_table(loc, version=old_version).equals(old_rows)  # type: ignore[union-attr]
    _check(lake, model, _changes(lake))


def test_checkpoint_and_log_cleanup(lake: Lake) -> None:
    model = _play(lake, 14)
    loc = lake.changes(key_of("t1"))
    report = m.maintain(lake, only=["checkpoint"], retention=HOUR)
    assert report.checkpoints >= 1 and report.logs == 0
    log = deltalog.log_files(loc)
    assert max(log.checkpoints) == max(log.commits)
    report = m.maintain(lake, only=["checkpoint"], retention=HOUR, now=time.time() + 2 * HOUR)
    assert report.logs > 0
    log = deltalog.log_files(loc)
    assert min(v for v, _ in log.versioned) == max(log.checkpoints)
    _check(lake, model, _changes(lake))
    assert lake_delta.read_table(loc) is not None  # delta-rs opens it from its checkpoint


def _manifest(lake: Lake, batch: int, resume: str, *, done: bool = True) -> None:
    lake.write_manifest(BatchManifest(batch, (), {}, resume=ResumePoint(resume, 4)))
    if done:
        lake.write_done(batch, BatchDone())


def test_landed_binlog_copies_go_after_the_retention(lake: Lake) -> None:
    for n in range(1, 5):
        (lake.binlogs / f"mysql-bin.{n:06d}").write_bytes(b"\xfebin" + bytes(100))
    _manifest(lake, 1, "mysql-bin.000003")
    assert m.maintain(lake, only=["binlogs"], retention=HOUR).binlogs == 0
    report = m.maintain(lake, only=["binlogs"], retention=HOUR, now=time.time() + 2 * HOUR)
    assert report.binlogs == 2 and report.binlogs_bytes == 208
    assert sorted(e.location.name for e in lake.binlogs.list()) == ["mysql-bin.000003", "mysql-bin.000004"]


def test_binlog_segments_are_merged(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mirror's copies in segments (one per sync) are merged into segments of up to SEGMENT_BYTES: each copy reads
    as the same bytes before and after, segment 0 and the newest copy's last segment stay as they were, a slice
    merges at most SLICE_SEGMENT_BYTES, a dry run changes nothing, and segments a kill left passed over (merged,
    not yet deleted) go on the next run."""
    from binlake.binlogs import list_binlogs
    from binlake.storage import PART, segment_name

    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(m, "SEGMENT_BYTES", 1000)
    monkeypatch.setattr(m, "SLICE_SEGMENT_BYTES", 2000)
    lk = Lake(f"s3://{s3_server.bucket()}/lake")
    body = b"\xfebin" + bytes(range(256)) * 30  # 7,684 bytes
    cuts = [0, 200, *range(500, len(body), 300), len(body)]  # segment 0, then 300-byte segments (one of 184)
    for name in ("mysql-bin.000001", "mysql-bin.000002"):
        for a, b in itertools.pairwise(cuts):
            (lk.binlogs / f"{name}{PART}" / segment_name(a)).write_bytes(body[a:b])

    def segments(name: str) -> list[int]:
        return sorted(int(e.location.name) for e in (lk.binlogs / f"{name}{PART}").list())

    def read_back() -> dict[str, bytes]:
        out = {}
        for f in list_binlogs(lk.binlogs.uri):
            with f.source.open() as stream:  # type: ignore[union-attr]
                out[f.name] = stream.read()
        return out

    with lk.writing():
        _manifest(lk, 1, "mysql-bin.000002")
        before = {n: segments(n) for n in ("mysql-bin.000001", "mysql-bin.000002")}
        assert len(before["mysql-bin.000001"]) == 26
        dry = m.maintain(lk, only=["binlogs"], dry_run=True)
        assert dry.segments > 0 and {n: segments(n) for n in before} == before
        sliced = m.maintain(lk, only=["binlogs"], budget=1)
        assert 0 < sliced.segments_into < dry.segments_into  # (a slice: SLICE_SEGMENT_BYTES, then the next run)
        assert read_back() == {n: body for n in before}
        full = m.maintain(lk, only=["binlogs"])
        assert sliced.segments + full.segments == dry.segments
        assert sliced.segments_into + full.segments_into == dry.segments_into
        assert "segments merged into" in " ".join(full.lines(["binlogs"]))
        assert read_back() == {n: body for n in before}
        first, newest = segments("mysql-bin.000001"), segments("mysql-bin.000002")
        # 200 bytes and 300-byte runs of up to 1000 (3 segments each): segment 0 alone, then merged runs
        assert first[0] == 0 and first[1] == 200 and len(first) == 2 + (len(before["mysql-bin.000001"]) - 2) // 3
        assert newest[-1] == before["mysql-bin.000002"][-1] and len(newest) <= len(first) + 1
        assert m.maintain(lk, only=["binlogs"]).segments == 0  # nothing left to merge
        # a kill after a merged run was written, before the segments it holds were deleted
        (lk.binlogs / f"mysql-bin.000001{PART}" / segment_name(first[2] + 300)).write_bytes(
            body[first[2] + 300 : first[2] + 600]
        )
        assert read_back()["mysql-bin.000001"] == body
        m.maintain(lk, only=["binlogs"])
        assert segments("mysql-bin.000001") == first and read_back() == {n: body for n in before}


def test_staging_and_snapshot_records_of_finished_batches(lake: Lake) -> None:
    for b in (1, 2):
        (lake.staging(b) / "x.parquet").write_bytes(b"x")
        (lake.snapshot_records(b) / "plan.json").write_bytes(b"{}")
    _manifest(lake, 1, "mysql-bin.000001")
    report = m.maintain(lake, only=["vacuum"], retention=HOUR)
    assert report.records == 1  # batch 1's staging; its snapshot records are younger than the retention
    assert not lake.staging(1).exists() and lake.staging(2).exists() and lake.snapshot_records(1).exists()
    assert m.maintain(lake, only=["vacuum"], retention=0, now=time.time() + 1).records == 1
    assert not lake.snapshot_records(1).exists() and lake.snapshot_records(2).exists()


def test_on_an_object_store(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step on S3 (moto): object listings' times and prefixes as a folder's."""
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    lk = Lake(f"s3://{s3_server.bucket()}/lake")
    with lk.writing():
        model = _play(lk, 12)
        changes = _changes(lk)
        report = m.maintain(lk, retention=HOUR)
        assert report.merged > 0 and report.checkpoints > 0 and report.vacuumed == 0
        report = m.maintain(lk, retention=HOUR, now=time.time() + 2 * HOUR)
        assert report.vacuumed > 0 and report.logs > 0
        _check(lk, model, changes)


def test_old_batch_records_are_folded(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(m, "FOLD_BATCHES", 3)
    for b in range(1, 7):
        lake.write_manifest(
            BatchManifest(b, (), {"mysql-bin.000001": 4 + b}, resume=ResumePoint("mysql-bin.000001", 4 + b))
        )
        lake.write_done(b, BatchDone({f"x{b}": ("db/t",)} if b % 2 else {}))
    before = {b: (lake.manifest(b), lake.done(b)) for b in range(1, 7)}
    assert m.maintain(lake, only=["batches"], retention=HOUR).folded == 0  # younger than the retention
    later = time.time() + 2 * HOUR
    assert m.maintain(lake, only=["batches"], retention=HOUR, now=later, dry_run=True).folded == 5
    assert m.maintain(lake, only=["batches"], retention=HOUR, now=later).folded == 5  # the last batch stays
    names = sorted(e.location.name for e in lake.batch_records())
    assert names == ["0000000001-0000000005.fold", "0000000006.done", "0000000006.json"]
    for reader in (lake, Lake(lake.root)):  # this Lake (its folds cached) and a new one
        assert {b: (reader.manifest(b), reader.done(b)) for b in range(1, 7)} == before
        assert reader.last_manifest() == (before[6][0], True)
    assert lake.manifest(7) is None and lake.done(7) == BatchDone()
    # a kill after the fold was written, before the files went: both say the same, a fold again ends it
    lake.write_manifest(before[3][0])  # type: ignore[arg-type]
    lake.write_done(3, before[3][1])
    assert lake.manifest(3) == before[3][0]
    assert m.maintain(lake, only=["batches"], retention=HOUR, now=later).folded == 0  # fewer than FOLD_BATCHES
    monkeypatch.setattr(m, "FOLD_BATCHES", 1)
    assert m.maintain(lake, only=["batches"], retention=HOUR, now=later).folded == 1
    assert Lake(lake.root).manifest(3) == before[3][0]


def test_an_unfinished_batch_stops_it(lake: Lake) -> None:
    _play(lake, 6)
    _manifest(lake, 1, "mysql-bin.000001", done=False)
    report = m.maintain(lake)
    assert report.unfinished == 1 and report.merged == 0
    assert report.lines() == ["batch 1 is unfinished: nothing done (the next ingest finishes it first)"]


def test_after_batch_runs_every_nth(lake: Lake) -> None:
    _play(lake, 4)
    assert m.after_batch(lake, 3, 2) is None and m.after_batch(lake, 4, 0) is None
    report = m.after_batch(lake, 4, 2)
    assert report is not None and report.merged > 0


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lk = Lake(tmp_path / "lake")
    with lk.writing():
        model = _play(lk, 10)
        changes = _changes(lk)
        assert main(["maintain", str(tmp_path / "lake")]) == 3  # held: busy, exit 3 (TEMPORARY)
    capsys.readouterr()
    assert main(["maintain", str(tmp_path / "lake"), "--dry-run", "--only", "compact"]) == 0
    assert capsys.readouterr().out.startswith("compact: ") and _files(lk.changes(key_of("t1"))) > 1
    assert main(["maintain", str(tmp_path / "lake"), "--retention", "36h", "--save-retention"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == list(m.STEPS)
    assert lk.settings() == LakeSettings("dv", 36 * 3600.0)
    with lk.writing():
        _check(lk, model, changes)
    assert main(["maintain", str(tmp_path / "nothing")]) == 2
    assert not (tmp_path / "nothing").exists()


_KILLED = """
import sys
from binlake.lake import Lake
from binlake.lake.maintain import maintain
lake = Lake(sys.argv[1])
with lake.writing():
    print("started", flush=True)
    maintain(lake, retention=0)
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_kill_9_at_any_moment(tmp_path: Path, seed: int) -> None:
    """A run killed at random moments (several kills in a row), then run to its end: every reader sees the
    model's rows at each stop, and the change tables what they held."""
    lk = Lake(tmp_path / "lake")
    with lk.writing():
        model = _play(lk, 40, seed)
        changes = _changes(lk)
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    for _ in range(4):
        p = subprocess.Popen([sys.executable, "-c", _KILLED, str(tmp_path / "lake")], stdout=subprocess.PIPE,
                             env=env)  # fmt: skip
        assert p.stdout is not None and p.stdout.readline() == b"started\n"
        time.sleep(rng.uniform(0.0, 1.5))
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        with lk.writing(wait=30):
            _check(lk, model, changes)
    with lk.writing(wait=30):
        m.maintain(lk, retention=0)
        _check(lk, model, changes)
        for t in TABLES:
            assert _files(lk.changes(key_of(t))) == 1


def _insert(k: int) -> Op:
    return Op("insert", "t1", (k,), {"k1": k, "k2": "x", "v": f"value {k}", "n": k})


def _bound_run(
    root: Path, rows: int, batches: int, changes: int, every: int
) -> tuple[int, list[Path], int, list[Path]]:
    """``rows`` inserted by one batch, then ``batches`` of ``changes`` updates of random keys, with the ingests'
    automatic maintenance after every ``every``-th (retention 0); the lake's data bytes and files, then those of
    the same rows written fresh (one file per table, by the engine's writers)."""
    lk = Lake(root / "lake")
    rng = random.Random(5)
    model, replay = Model(PK), Model(PK)
    with lk.writing():
        lk.write_settings(LakeSettings("dv", 0.0))
        first = Batch(1, [_insert(k) for k in range(rows)])
        for op in first.ops:
            model.apply(op)
        run(lk, write_batch(lk, first, replay))
        for n in range(2, batches + 2):
            ops = [Op("update", "t1", (k,), {"v": f"batch {n}", "n": n}) for k in rng.sample(range(rows), changes)]
            for op in ops:
                model.apply(op)
            run(lk, write_batch(lk, Batch(n, ops), replay))
            m.after_batch(lk, n, every)
        assert lake_rows(lk, "t1", PK) == model.rows("t1")
    files = _data_files(root / "lake")
    fresh = root / "fresh"
    fresh.mkdir()
    for kind, loc in (("current", lk.current(key_of("t1"))), ("changes", lk.changes(key_of("t1")))):
        data = lake_delta.read_table(loc)
        assert data is not None
        if kind == "current":
            write_sorted(data, locate(str(fresh / kind)), "t1", PK)
        else:
            lake_delta.write_parquet(data, locate(str(fresh / kind)), "t1", META_DICTIONARY, part_rows=data.num_rows)
    ref = [p for p in fresh.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), files, sum(p.stat().st_size for p in ref), ref


def test_a_long_follow_stays_within_1_5x_of_a_compacted_lake(tmp_path: Path) -> None:
    """Issue 22's storage target, bounded: 100 batches of 10 changes into a 200 k-row table, the automatic
    maintenance after every 10th; measured after the last batch (whose slice runs): the data bytes (deletion
    vector files included) and the Parquet files within 1.5x of the same rows written fresh.  The current table's
    live deletion vectors (its 1,000 deleted rows: more than an inline one holds) are in one file, however many
    batches wrote them: one file more (4 files against 2 fresh; at the full size, 5 M rows,
    benchmarks/long_follow.py's count is within 1.5x)."""
    size, files, ref_size, ref_files = _bound_run(tmp_path, 200_000, 99, 10, 10)  # the first load, then 99
    assert size <= 1.5 * ref_size, (size, ref_size)
    parquet = [p for p in files if p.suffix == ".parquet"]
    assert len(parquet) <= 1.5 * len(ref_files), (parquet, ref_files)
    assert len(files) - len(parquet) <= 1, files  # live deletion vectors: one file per table at most


def test_without_maintenance_the_follow_exceeds_the_bound(tmp_path: Path) -> None:
    """The same run without maintenance: the bound above is not met by itself (the test above can fail)."""
    size, files, ref_size, ref_files = _bound_run(tmp_path, 20_000, 30, 10, 0)
    assert len(files) > 1.5 * len(ref_files) or size > 1.5 * ref_size


@pytest.mark.parametrize("every", [0, 1])
def test_an_ingest_runs_its_slice(tmp_path: Path, every: int) -> None:
    """The file ingest (its tasks in this process) runs a slice after its batch when ``maintain_every`` says so,
    and logs a line per step."""
    import io

    from binlake.ingest.progress import Progress
    from binlake.ingest.run import ingest
    from binlake.lake.runner import InProcessRunner

    out = io.StringIO()
    result = ingest(InProcessRunner(), [str(REPO / "examples")], str(tmp_path / "lake"),
                    progress=Progress(None, out), maintain_every=every)  # fmt: skip
    assert result.batches == 1
    lines = [line for line in out.getvalue().splitlines() if "maintenance: " in line]
    assert [line.split("maintenance: ")[1].split(":")[0] for line in lines] == (list(m.STEPS) if every else [])
