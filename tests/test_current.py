"""Current state kept in proportion to the batch (binlake.lake.current, .merge, .fileset, .files): random change
sequences through many batches against a model (every reader: binlake's, deltalake's SQL engine, polars, DuckDB,
and ``Lake.tables()`` counts, key lookups through each reader's file skipping), both layouts (deletion vectors,
copy-on-write), one range per table and many; a lake written by the binlake before it, updated in place; kill -9 at
any moment of a batch, then the batch again, equals a clean run; what a lookup reads; the records tasks exchange."""

from __future__ import annotations

import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")
pytest.importorskip("pyroaring", reason="pyroaring not installed: pip install -e '.[spark]'")

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, QueryBuilder
from deltalake.transaction import AddAction, CommitProperties, Transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.lakemodel import COLUMNS, SCHEMA, TABLES, Batch, Model, generate, key_of, lake_rows, run, write_batch

from binlake.lake import Lake, current, deltalog, merge
from binlake.lake import delta as lake_delta
from binlake.lake.files import (
    CurrentSink,
    delta_stats,
    is_sorted,
    key_bounds,
    sorted_by,
    sorted_tags,
    write_sorted,
)
from binlake.lake.fileset import FileSet, LiveFile, RewriteResult, RewriteTask
from binlake.lake.merge import MergeResult, MergeTask, Source, lookup
from binlake.lake.records import DataFile, LakeFormatError, LakeSettings
from binlake.lake.runner import InProcessRunner, pack, unpack
from binlake.storage import locate
from binlake.testing import readers

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def _lake(layout: str = "dv") -> Iterator[Lake]:
    """A new lake in a folder of its own (hypothesis examples cannot share pytest's tmp_path), holding its lease."""
    root = tempfile.mkdtemp(prefix="binlake-current-")
    try:
        lake = Lake(root)
        with lake.writing():
            if layout != "dv":
                lake.write_settings(LakeSettings("cow"))  # type: ignore[arg-type]
            yield lake
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def _ranges(on: bool) -> Iterator[None]:
    """With ``on``, every batch merges as tasks of a few keys each (the large-batch path, without large data)."""
    if not on:
        yield
        return
    local, plan = current.LOCAL_ROWS, current.plan_ranges
    current.LOCAL_ROWS = 0
    current.plan_ranges = lambda sources, first, target=3: plan(sources, first, 3)  # type: ignore[assignment]
    try:
        yield
    finally:
        current.LOCAL_ROWS, current.plan_ranges = local, plan


def _rows(data: pa.Table, pk: list[str]) -> list[dict[str, Any]]:
    rows = [{c: r.get(c) for c in COLUMNS} for r in data.to_pylist()]
    return sorted(rows, key=lambda r: tuple(r[c] for c in pk))


def _check_readers(lake: Lake, model: Model) -> None:
    """Every reader sees the model's rows; ``Lake.tables()`` counts them; a lookup of each key through each
    reader's file skipping (the files' key statistics) finds its row."""
    counts = {t.name: t.rows for t in lake.tables() if t.kind == "current"}
    for t in TABLES:
        want = model.rows(t)
        loc = lake.current(key_of(t))
        if not lake.has_table(loc):
            assert not want
            continue
        assert counts[f"db.{t}"] == len(want), t
        for name in readers.available():
            assert _rows(readers.read_with(name, loc), model.pk) == want, (name, t)
        dt = DeltaTable(loc.delta_uri)
        for row in want[:5]:
            where = " AND ".join(f"{c} = {row[c]!r}" for c in model.pk)
            got = pa.table(QueryBuilder().register("t", dt).execute(f"SELECT * FROM t WHERE {where}").read_all())
            assert _rows(got, model.pk) == [row], (t, where)
            if "duckdb" in readers.available():
                query = f"SELECT * FROM delta_scan('{loc.uri}') WHERE {where}"
                found = readers.duckdb_delta().execute(query).fetch_arrow_table()
                assert _rows(found, model.pk) == [row], (t, where)


def _play(lake: Lake, rng: random.Random, pk: list[str], batches: int, every: int = 1) -> Model:
    model, replay = Model(pk), Model(pk)
    for number in range(1, batches + 1):
        batch = generate(rng, model, number, rng.randrange(0, 14))
        run(lake, write_batch(lake, batch, replay))
        if number % every == 0 or number == batches:
            for t in TABLES:
                assert lake_rows(lake, t, pk) == model.rows(t), (number, t, batch)
    return model


@pytest.mark.parametrize("layout", ["dv", "cow"])
@pytest.mark.parametrize("pk", [["k1"], ["k2", "k1"]], ids=["pk", "composite-pk"])
@pytest.mark.parametrize("ranges", [False, True], ids=["one-task", "ranges"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False), batches=st.integers(4, 18))
def test_random_batches_equal_the_model(
    layout: str, pk: list[str], ranges: bool, rng: random.Random, batches: int
) -> None:
    """Inserts, updates (of the key too), deletes, partial images, rolled-back rows, XA transactions across
    batches, TRUNCATE, RENAME (swaps), DROP DATABASE: after each batch binlake's reader equals the model; after the
    last, every reader, the counts and key lookups do."""
    with _lake(layout) as lake, _ranges(ranges):
        model = _play(lake, rng, pk, batches)
        _check_readers(lake, model)
        for t in TABLES:
            snap = deltalog.read_snapshot(lake.current(key_of(t)))
            if snap is None:
                continue
            if layout == "cow":  # never a deletion vector: the table keeps its protocol
                assert not any(a.get("deletionVector") for a in snap.files.values())
                assert int(snap.protocol["minReaderVersion"]) == 1


def test_a_long_run_stays_small() -> None:
    """200 batches of a random workload: the model at every tenth; what a batch adds is its own rows (each batch
    adds at most one file per table it touches and each file holds only rows of that batch)."""
    with _lake() as lake:
        rng = random.Random(22)
        model = _play(lake, rng, ["k1"], 200, every=10)
        _check_readers(lake, model)
        for t in TABLES:
            snap = deltalog.read_snapshot(lake.current(key_of(t)))
            assert snap is not None
            assert sum(snap.num_records(p) for p in snap.files) <= 40 * len(snap.files)


# -- a lake written by the binlake before this one -------------------------------------------------------------------


def _legacy_current(lake: Lake, table: str, rows: pa.Table, batch: int) -> None:
    """A current-state table as binlake 0.x wrote one: unsorted files with no statistics but their row count, each
    batch an overwrite (spark/ingest.py's update_current before this engine: Lake.overwrite)."""
    loc = lake.current(key_of(table))
    files = lake_delta.write_parquet(rows, loc, key_of(table), part_rows=7)
    actions = [AddAction(f.path, f.size, {}, f.mtime_ms, True, f'{{"numRecords": {f.rows}}}') for f in files]
    if not lake_delta.is_table(loc):
        lake_delta.commit_files(loc, files, rows.schema, batch)
        return
    txn = CommitProperties(app_transactions=[Transaction("binlake-ingest", batch)])
    lake_delta.delta_table(loc).create_write_transaction(actions, mode="overwrite", schema=rows.schema,
                                                         commit_properties=txn)  # fmt: skip


def test_a_lake_of_the_binlake_before_is_read_and_updated_in_place() -> None:
    """Tables whose files have no key statistics (every lookup opens them) and rows in no order, then batches of
    this engine on top: the model throughout, every reader at the end."""
    with _lake() as lake:
        rng = random.Random(7)
        model, replay = Model(["k1"]), Model(["k1"])
        cur = SCHEMA.remove(SCHEMA.get_field_index("_op"))
        keep = [*COLUMNS, "_seq", "_ts"]
        cur = pa.schema([SCHEMA.field(n) for n in keep])
        for version in (1, 2):
            for t in TABLES:
                ids = list(range(40))
                rng.shuffle(ids)
                ids = ids[: rng.randrange(10, 40)]
                rows = [
                    {"k1": i, "k2": "x", "v": f"old{version}", "n": i, "_seq": Decimal(i), "_ts": None} for i in ids
                ]
                _legacy_current(lake, t, pa.Table.from_pylist(rows, schema=cur), version)
                model.tables[t] = {(i,): {"k1": i, "k2": "x", "v": f"old{version}", "n": i} for i in ids}
                replay.tables[t] = dict(model.tables[t])
        for t in TABLES:
            snap = deltalog.read_snapshot(lake.current(key_of(t)))
            assert snap is not None and all(
                key_bounds(a.get("stats"), cur.field("k1")) is None for a in snap.files.values()
            )
            assert len(snap.files) > 1
        for number in range(3, 20):
            batch = generate(rng, model, number, rng.randrange(1, 12))
            run(lake, write_batch(lake, batch, replay))
            for t in TABLES:
                assert lake_rows(lake, t, ["k1"]) == model.rows(t), (number, t)
        _check_readers(lake, model)


# -- kill -9 --------------------------------------------------------------------------------------------------------


def _prepared(root: Path, seed: int) -> tuple[Batch, dict[str, Any], Model]:
    """A lake at ``root`` with some batches landed, and the next batch landed but for its current-state step (its
    arguments): a batch that touches every table, renames (copies) and deletes (deletion vectors)."""
    rng = random.Random(seed)
    lake = Lake(str(root))
    model, replay = Model(["k1"]), Model(["k1"])
    with lake.writing():
        for number in range(1, 6):
            batch = generate(rng, model, number, 12)
            run(lake, write_batch(lake, batch, replay))
        ops = generate(rng, model, 6, 14).ops
        batch = Batch(6, ops, len(ops) // 2, staged=False)
        args = write_batch(lake, batch, replay)
    return batch, args, model


def _contents(lake: Lake) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in [*TABLES, "tmp"]:
        loc = lake.current(key_of(t))
        snap = deltalog.read_snapshot(loc)
        if snap is None:
            out[t] = None
            continue
        logs = [(loc / "_delta_log" / f"{v:020d}.json").read_bytes().decode() for v in range(snap.version + 1)]
        commits = [body for body in logs if '"appId":"binlake-ingest","version":6' in body.replace(" ", "")]
        out[t] = (lake_rows(lake, t, ["k1"]), snap.txns.get("binlake-ingest"), len(commits))
    return out


def test_kill_9_at_any_moment_then_again_equals_a_clean_run(tmp_path: Path) -> None:
    """The current-state step of a batch in a child process killed (SIGKILL) after a random delay, at many
    moments, then run again to its end: the lake equals a clean run's (each table has the batch once)."""
    base = tmp_path / "base"
    _, args, model = _prepared(base, 5)
    (tmp_path / "args.pickle").write_bytes(pickle.dumps(args))
    clean = tmp_path / "clean"
    shutil.copytree(base, clean)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    cmd = [sys.executable, "-m", "tests._current_child", str(clean), str(tmp_path / "args.pickle")]
    t0 = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    took = float(done.stdout.split()[-1])
    want = _contents(Lake(str(clean)))
    assert {t: w[0] for t, w in want.items() if w and t in TABLES} == {t: model.rows(t) for t in TABLES if want[t]}
    rng = random.Random(1)
    kills = 0
    for attempt in range(12):
        lake_dir = tmp_path / f"kill{attempt}"
        shutil.copytree(base, lake_dir)
        cmd[-2] = str(lake_dir)
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0, took))
        child.send_signal(signal.SIGKILL)
        kills += child.wait() == -signal.SIGKILL
        lake = Lake(str(lake_dir))
        with lake.writing(wait=120):
            run(lake, pickle.loads((tmp_path / "args.pickle").read_bytes()))
        assert _contents(lake) == want, attempt
    assert kills >= 6, f"only {kills} of 12 children were killed before they finished ({time.monotonic() - t0:.0f} s)"


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_batch_that_died_after_some_commits_is_finished_by_its_rerun(tmp_path: Path, fail_at: int) -> None:
    """The current-state step dies after ``fail_at`` of its table commits: the batch run again commits the others,
    reading the committed ones as they were before the batch (a rename's source included)."""
    _, args, _ = _prepared(tmp_path / "lake", 5)
    clean = tmp_path / "clean"
    shutil.copytree(tmp_path / "lake", clean)
    clean_lake = Lake(str(clean))
    with clean_lake.writing():
        run(clean_lake, args)
    lake = Lake(str(tmp_path / "lake"))
    real = FileSet.commit
    made = [0]

    def dying(self: FileSet, *a: Any, **k: Any) -> Any:
        if made[0] == fail_at:
            raise OSError("killed")
        version = real(self, *a, **k)
        made[0] += version is not None
        return version

    with lake.writing():
        FileSet.commit = dying  # type: ignore[method-assign]
        try:
            with pytest.raises(OSError, match="killed"):
                run(lake, args)
        finally:
            FileSet.commit = real  # type: ignore[method-assign]
        assert made[0] == fail_at
        run(lake, args)
    assert _contents(lake) == _contents(Lake(str(clean)))


# -- what a lookup reads ---------------------------------------------------------------------------------------------


def _sorted_files(loc: Any, schema: pa.Schema, step: int) -> list[DataFile]:
    """Ten files of 10,000 rows sorted by ``id`` (``0, step, 2 * step, ...``) in row groups of 1,000."""
    files = []
    for f in range(10):
        ids = np.arange(f * 10_000, (f + 1) * 10_000) * step
        rows = pa.table(
            {"id": ids, "v": [str(i) for i in ids], "_seq": pa.array([Decimal(1)] * len(ids), schema[2].type)}
        )
        files += write_sorted(rows, loc, "t", ["id"], row_group_rows=1000)
    return files


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, tuple[str, ...]]]:
    reads: list[tuple[int, tuple[str, ...]]] = []
    real = pq.ParquetFile.read_row_group

    def counted(self: pq.ParquetFile, i: int, columns: Any = None, **k: Any) -> Any:
        reads.append((i, tuple(columns or ())))
        return real(self, i, columns=columns, **k)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counted)
    return reads


def _counting_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the files a lookup opens, as it opens them."""
    opened: list[str] = []
    real = merge._lookup_file
    monkeypatch.setattr(merge, "_lookup_file", lambda f, *a: opened.append(f.path) or real(f, *a))
    return opened


def test_a_lookup_reads_the_candidate_row_groups_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten files of 10,000 sorted rows (even keys) in row groups of 1,000: one key opens one file (its key
    statistics) and reads the key column of one row group; a file without statistics is opened, and its row groups
    pruned by their own."""
    loc = locate(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("_seq", pa.decimal128(38, 0))])
    files = _sorted_files(loc, schema, 2)
    live = [LiveFile.new(loc, f) for f in files]
    reads = _counting_reads(monkeypatch)
    found = lookup(live, pa.table({"id": pa.array([108_642], pa.int64())}), schema, ["id"])
    assert reads == [(4, ("id",))]
    assert {k[1]: v.tolist() for k, v in found.positions.items()} == {files[5].path: [4321]}
    reads.clear()
    bare = [LiveFile(f.home, f.path, f.rows, f.size, f.mtime_ms) for f in live]  # no statistics in the log
    found = lookup(bare, pa.table({"id": pa.array([108_642, 108_644], pa.int64())}), schema, ["id"], rows=True)
    assert reads == [(4, ("id", "v", "_seq"))]
    assert found.rows is not None and found.rows["v"].to_pylist() == ["108642", "108644"]


def test_dense_integer_keys_are_found_without_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An AUTO_INCREMENT-like key (every integer of a file's range there, the file's tags saying it is sorted by
    the key): positions come from its statistics in the log, no file opened; whole rows are still read; in a file
    with a hole, a row group without one is not read; a sorted file without binlake's tag, or with another key's,
    is read as before."""
    loc = locate(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("_seq", pa.decimal128(38, 0))])
    files = _sorted_files(loc, schema, 1)
    live = [LiveFile.new(loc, f) for f in files]
    reads = _counting_reads(monkeypatch)
    opened = _counting_opens(monkeypatch)
    want = pa.table({"id": pa.array([54_321, 54_999, 55_000, 99_999, 100_000], pa.int64())})
    found = lookup(live, want, schema, ["id"])
    assert reads == [] and opened == []
    assert {k[1]: v.tolist() for k, v in found.positions.items()} == {
        files[5].path: [4321, 4999, 5000],
        files[9].path: [9999],
    }
    found = lookup(live, want, schema, ["id"], rows=True)
    assert found.rows is not None and found.rows["v"].to_pylist() == ["54321", "54999", "55000", "99999"]
    assert len(reads) == 3
    reads.clear()
    holed = pa.table({"id": pa.array([0, 1, 2, 4, 6, 7], pa.int64()), "v": list("abcdef"),
                      "_seq": pa.array([Decimal(1)] * 6, schema[2].type)})  # fmt: skip
    (hole,) = write_sorted(holed, locate(tmp_path / "h"), "h", ["id"], row_group_rows=3)
    found = lookup([LiveFile.new(locate(tmp_path / "h"), hole)], pa.table({"id": pa.array([1, 6])}), schema, ["id"])
    assert reads == [(1, ("id",))]  # 0-2 is whole; 4, 6, 7: three rows in a range of four
    assert next(iter(found.positions.values())).tolist() == [1, 4]
    reads.clear()
    pq.write_table(holed.slice(0, 3), str(tmp_path / "plain.parquet"))  # sorted, dense, no mark
    plain = LiveFile(locate(tmp_path).uri, "plain.parquet", 3, (tmp_path / "plain.parquet").stat().st_size, 0)
    found = lookup([plain], pa.table({"id": pa.array([2])}), schema, ["id"])
    assert reads == [(0, ("id",))] and next(iter(found.positions.values())).tolist() == [2]
    reads.clear()
    other = replace(live[0], tags=sorted_tags(["v"]))
    found = lookup([other], pa.table({"id": pa.array([5], pa.int64())}), schema, ["id"])
    assert reads == [(0, ("id",))] and next(iter(found.positions.values())).tolist() == [5]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gaps=st.lists(st.sampled_from([1, 1, 1, 1, 2, 5]), min_size=1, max_size=80),
    picks=st.lists(st.integers(0, 500), max_size=25),
    group=st.integers(1, 9),
    unsigned=st.booleans(),
)
def test_a_lookup_finds_the_positions_a_scan_finds(
    tmp_path: Path, gaps: list[int], picks: list[int], group: int, unsigned: bool
) -> None:
    """Keys mostly consecutive, with holes, in row groups of 1-9 rows, an INT key or a BIGINT UNSIGNED one
    (``decimal(20, 0)``) up to 2**64 - 1: the positions a lookup gives (from the log's statistics where the file
    is whole, the row groups' where a row group is, read elsewhere) are those of a plain scan of the file, for keys
    present and absent."""
    ids = np.cumsum(gaps).tolist()
    base = 2**64 - 1 - ids[-1] if unsigned else 0
    key = pa.decimal128(20, 0) if unsigned else pa.int64()
    schema = pa.schema([("id", key), ("_seq", pa.decimal128(38, 0))])
    rows = pa.table(
        {"id": pa.array([base + i for i in ids], key), "_seq": pa.array([Decimal(1)] * len(ids), schema[1].type)}
    )
    loc = locate(Path(tempfile.mkdtemp(dir=tmp_path)))
    (f,) = write_sorted(rows, loc, "t", ["id"], row_group_rows=group)
    want = sorted(set(picks))
    found = lookup([LiveFile.new(loc, f)], pa.table({"id": pa.array([base + k for k in want], key)}), schema, ["id"])
    expected = [i for i, k in enumerate(ids) if k in set(want)]
    got = next(iter(found.positions.values())).tolist() if found.positions else []
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(
    have=st.lists(st.integers(-(2**40), 2**40), max_size=60),
    want=st.lists(st.integers(-(2**40), 2**40), max_size=20, unique=True),
    ordered=st.booleans(),
    shared=st.integers(0, 10),
)
def test_a_row_group_matches_its_keys_sorted_or_not(
    have: list[int], want: list[int], ordered: bool, shared: int
) -> None:
    """The rows of a row group holding a batch's keys: binary search on a strictly increasing integer key column,
    hashing on any other (out of order, repeated); the same indexes as a plain membership test, whichever path."""
    if ordered:
        have = sorted(set(have))
    want = list(dict.fromkeys([*want, *have[:shared]]))  # some of the keys present
    part = pa.table({"id": pa.array(have, pa.int64())})
    got = merge._matches(part, pa.table({"id": pa.array(want, pa.int64())}), ["id"])
    assert got.tolist() == [i for i, k in enumerate(have) if k in set(want)]
    narrow = pa.table({"id": pa.array([k % 1000 for k in have], pa.int32())})  # cast to the keys' type
    got = merge._matches(narrow, pa.table({"id": pa.array(sorted({k % 1000 for k in want}), pa.int64())}), ["id"])
    assert got.tolist() == [i for i, k in enumerate(have) if k % 1000 in {w % 1000 for w in want}]


def test_a_small_batch_writes_what_it_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 10-change batch into a table of 200,000 rows in files of 50,000: one new file of its rows, a deletion
    vector on each file that held one of them, nothing else written; keys 0 to 199,999 (every integer of each
    file's bounds, its tags saying it is sorted) are found without opening a file; the tags stay with each file
    through its new deletion vector and a checkpoint."""
    opened = _counting_opens(monkeypatch)
    with _lake() as lake:
        key = key_of("t1")
        n = 200_000
        cur = pa.schema([SCHEMA.field(c) for c in [*COLUMNS, "_seq", "_ts"]])
        seq = pa.array([Decimal(1)] * n, cur.field("_seq").type)
        rows = pa.table({"k1": np.arange(n), "k2": ["x"] * n, "v": ["v"] * n, "n": np.arange(n), "_seq": seq,
                         "_ts": pa.nulls(n, cur.field("_ts").type)})  # fmt: skip
        files = write_sorted(rows.cast(cur), lake.current(key), key, ["k1"], file_rows=50_000)
        current.replace_current(lake, key, files, cur, ["k1"], 1)
        model, replay = Model(["k1"]), Model(["k1"])
        model.tables["t1"] = {(i,): {"k1": i, "k2": "x", "v": "v", "n": i} for i in range(n)}
        replay.tables["t1"] = dict(model.tables["t1"])
        from tests.lakemodel import Op

        ops = [Op("update", "t1", (i,), {"v": "new", "n": -i}) for i in (5, 60_000, 60_001, 199_999)]
        ops += [Op("delete", "t1", (i,)) for i in (7, 120_000)] + [
            Op("insert", "t1", (n + i,), {"k1": n + i, "v": "i"}) for i in range(4)
        ]
        for op in ops:
            model.apply(op)
        before = {e.location.name for e in lake.current(key).list()}
        run(lake, write_batch(lake, Batch(2, ops, 0), replay))
        after = {e.location.name for e in lake.current(key).list()}
        new = after - before
        assert len([n for n in new if n.endswith(".parquet")]) == 1, new  # the batch's rows; inline DVs
        snap = deltalog.read_snapshot(lake.current(key))
        assert snap is not None
        dvs = {p: a["deletionVector"]["cardinality"] for p, a in snap.files.items() if a.get("deletionVector")}
        assert sorted(dvs.values()) == [1, 1, 2, 2]  # keys 5 and 7; 60,000 and 60,001; 120,000; 199,999
        assert lake_rows(lake, "t1", ["k1"]) == model.rows("t1")
        assert opened == []
        assert [a.get("tags") for a in snap.files.values()] == [sorted_tags(["k1"])] * 5
        DeltaTable(lake.current(key).delta_uri).create_checkpoint()
        again = deltalog.read_snapshot(lake.current(key))
        assert again is not None and [sorted_by(a.get("tags")) for a in again.files.values()] == [["k1"]] * 5


# -- statistics -----------------------------------------------------------------------------------------------------


def test_statistics_are_exact_bounds_readers_skip_files_by(tmp_path: Path) -> None:
    """Integers, BIGINT UNSIGNED (decimal(20,0)), decimals, strings, dates, DATETIME and TIMESTAMP keys: the
    written bounds hold every value (timestamps widened to milliseconds), read back as they were written, and each
    reader finds every key through a WHERE on it."""
    import datetime as dt

    cases = {
        "i": (pa.int32(), [-5, 7, 3]),
        "u": (pa.decimal128(20, 0), [Decimal(2**64 - 1), Decimal(0), Decimal(2**63)]),
        "d": (pa.decimal128(12, 3), [Decimal("-1.500"), Decimal("99999.999"), Decimal("0.001")]),
        "s": (pa.string(), ["b", "a", "é☃"]),
        "day": (pa.date32(), [dt.date(1000, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29)]),
        "ts": (pa.timestamp("us"), [dt.datetime(2024, 1, 1, 0, 0, 0, 123456), dt.datetime(1000, 1, 1),
                                    dt.datetime(9999, 12, 31, 23, 59, 58, 999999)]),
        "tz": (pa.timestamp("us", "UTC"), [dt.datetime(2024, 1, 1, 0, 0, 0, 999, tzinfo=dt.UTC),
                                           dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC),
                                           dt.datetime(2038, 1, 19, tzinfo=dt.UTC)]),
    }  # fmt: skip
    for name, (t, values) in cases.items():
        loc = locate(tmp_path / name)
        rows = pa.table(
            {"k": pa.array(values, t), "_seq": pa.array([Decimal(10**37 + i) for i in range(3)], pa.decimal128(38, 0))}
        )
        files = write_sorted(rows, loc, name, ["k"])
        lake_delta.commit_files(loc, files, rows.schema, 1)
        b = key_bounds(files[0].stats, rows.schema.field("k"))
        assert b is not None, name
        assert b[0].as_py() <= min(values) and b[1].as_py() >= max(values), name
        dtab = DeltaTable(loc.delta_uri)
        for v in values:
            got = dtab.to_pyarrow_table(filters=[("k", "=", v)])
            assert got["k"].to_pylist() == [v], (name, v)
        for v in rows["_seq"].to_pylist():
            assert dtab.to_pyarrow_table(filters=[("_seq", "=", v)]).num_rows == 1
    last = pa.table({"k": pa.array([dt.datetime(9999, 12, 31, 23, 59, 59, 999999)], pa.timestamp("us"))})
    (f,) = write_sorted(last, locate(tmp_path / "last"), "last", ["k"])
    assert key_bounds(f.stats, last.schema.field("k")) is None  # no millisecond above it: no bound, no skipping


def test_sortedness_and_sinks(tmp_path: Path) -> None:
    t = pa.table({"a": [1, 1, 2], "b": ["b", "c", "a"]})
    assert is_sorted(t, ["a", "b"]) and not is_sorted(t, ["b"]) and not is_sorted(t.take([1, 0, 2]), ["a", "b"])
    sink = CurrentSink(locate(tmp_path), "t", t.schema, ["a", "b"], row_group_rows=2)
    sink.write(t.slice(0, 2))
    sink.write(t.slice(2))
    assert sink.in_order
    sink.write(t.slice(0, 1))
    assert not sink.in_order
    done = sink.close()
    assert done is not None and done.rows == 4
    meta = pq.read_metadata(str(tmp_path / done.path))
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [2, 2]
    assert done.tags is None  # out of order: no promise a lookup would trust
    (ordered,) = write_sorted(t, locate(tmp_path), "t", ["a", "b"])
    assert ordered.tags == {"binlake.sortedBy": '["a", "b"]'} and sorted_by(ordered.tags) == ["a", "b"]
    assert DataFile.from_json(ordered.to_json()) == ordered
    assert delta_stats(meta, t.schema, ["a", "b"]) == done.stats
    assert (
        done.stats
        == '{"numRecords":4,"minValues":{"a":1,"b":"a"},"maxValues":{"a":2,"b":"c"},"nullCount":{"a":0,"b":0}}'
    )


# -- records ---------------------------------------------------------------------------------------------------------


def test_task_records_round_trip_and_refuse_other_versions() -> None:
    schema = pa.schema([("id", pa.decimal128(20, 0)), ("_seq", pa.decimal128(38, 0))])
    f = LiveFile(
        "s3://b/t", "part-1.parquet", 10, 100, 5, '{"numRecords":10}', {"storageType": "i"}, np.array([1, 3], np.uint64)
    )
    task = MergeTask("db/t", "s3://b/t", schema, ("id",), (Source("s3://b/s", True, 3, True, False),), (f,),
                     (Decimal(2**64 - 1), None), (None, 10**30))  # fmt: skip
    back = unpack(pack(task))
    assert back == task and back.files[0].deleted.tolist() == [1, 3]
    result = MergeResult("db/t", (), (("s3://b/t", "p", np.array([7], np.uint64)),), 4)
    assert unpack(pack(result)).deleted[0][2].tolist() == [7]
    assert unpack(pack(RewriteTask("db/t", "x", schema, ("id",), (f,)))).inputs == (f,)
    assert unpack(pack(RewriteResult())) == RewriteResult()
    assert LakeSettings.from_json(LakeSettings("cow").to_json()) == LakeSettings("cow")
    with pytest.raises(LakeFormatError):
        LakeSettings("lsm")  # type: ignore[arg-type]
    with pytest.raises(LakeFormatError, match="another binlake version"):
        MergeTask.from_json(task.to_json().replace('"version": 1', '"version": 9'))
    with pytest.raises(LakeFormatError, match="not one of binlake's"):
        unpack('{"type": "os:system", "record": "{}"}')
    old = DataFile("t", "p", 1, 2, 3, b"")
    assert DataFile.from_json(old.to_json()) == old and old.delta_stats() == '{"numRecords": 2}'


def test_snapshot_before_a_batch(tmp_path: Path) -> None:
    loc = locate(tmp_path / "t")
    rows = pa.table({"id": [1]})
    for batch in (1, 2):
        lake_delta.commit_files(loc, lake_delta.write_parquet(rows, loc, "t"), rows.schema, batch)
    lake_delta.add_columns(loc, pa.schema([("id", pa.int64()), ("x", pa.int64())]))  # a commit without a batch
    assert deltalog.snapshot_before(loc, "binlake-ingest", 3).version == 2  # type: ignore[union-attr]
    assert deltalog.snapshot_before(loc, "binlake-ingest", 2).version == 0  # type: ignore[union-attr]
    assert deltalog.snapshot_before(loc, "binlake-ingest", 1) is None
    assert [f.rows for f in FileSet.before(loc, "t", 2).live()] == [1]
    assert InProcessRunner().map(merge.merge_range, []) == []


@pytest.mark.parametrize("big", [False, True], ids=["int64", "uint64"])
def test_merge_sorts_whole_decimal_keys_as_integers(big: bool) -> None:
    """BIGINT UNSIGNED keys (decimal(20,0)) sorted as 64-bit integers (unsigned past 2^63): the same last change of
    each key as by their decimal value, new rows in key order."""
    from binlake.lake.merge import merge_current

    top = 2**64 - 1 if big else 2**63 - 1
    keys = [top, 0, 5, top, 5, 2**40, 0]
    ops = ["insert", "insert", "insert", "update_postimage", "delete", "insert", "update_postimage"]
    schema = pa.schema([("id", pa.decimal128(20, 0)), ("v", pa.int64()), ("_seq", pa.decimal128(38, 0)),
                        ("_ts", pa.timestamp("us", "UTC"))])  # fmt: skip
    changes = pa.table({"id": pa.array([Decimal(k) for k in keys], schema[0].type), "v": list(range(len(keys))),
                        "_op": ops, "_seq": pa.array([Decimal(i) for i in range(len(keys))], schema[2].type),
                        "_ts": pa.nulls(len(keys), schema[3].type)})  # fmt: skip
    rng = random.Random(3)
    order = list(range(len(keys)))
    for _ in range(5):
        rng.shuffle(order)
        got = merge_current(None, changes.take(order), ["id"], schema)
        assert [(int(r["id"]), r["v"]) for r in got.to_pylist()] == [(0, 6), (2**40, 5), (top, 3)]
