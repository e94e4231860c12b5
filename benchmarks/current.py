#!/usr/bin/env python3
"""binlake's current-state benchmark: what one batch's current-state step costs as the table grows.

1. Builds a current-state table of ``--rows`` rows (``id INT`` key, ``a BIGINT``, ``b VARCHAR(40)``,
   ``c DECIMAL(12,3)``, ``d DATETIME(6)``: the issue's table) through the engine's first-load path: staged
   last-change files as the decode tasks write them (one per "split" of 1 M rows, sorted by the key), merged by
   :func:`binlake.lake.current.update_current` as range tasks (in this process, one after the other:
   :class:`~binlake.lake.runner.InProcessRunner`), which write sorted, non-overlapping files with key statistics.
   Its time and peak RSS are reported as ``first load``.
2. For each ``--changes`` size and key pattern (``--keys random``: keys anywhere in the table, 10 % new keys past
   its end; ``sequential``: a run of consecutive keys, as AUTO_INCREMENT tables are written), on a copy of that
   table, in a child process of its own (its peak RSS is its own):
   - ``binlake dv`` / ``binlake cow``: one batch's current-state step (``update_current`` of a staged file of the
     changes) with the lake's layout set to deletion vectors or copy-on-write;
   - ``full rewrite``: what binlake did before (``--full-rewrite``): read the whole table, merge with pyarrow
     (:func:`binlake.lake.merge.merge_current`), write it all again, one overwrite commit;
   - ``delta-rs merge``: ``DeltaTable.merge`` of the same rows (``when_matched_update_all`` /
     ``when_not_matched_insert_all`` on ``id``, ``streamed_exec=False`` so it prunes files by the source's key
     range): the peer, copy-on-write.
   Each reports the step's wall seconds (the process' start and imports excluded), the bytes and files it added to
   the table's folder (its log included), the table's bytes before, and its peak RSS (``VmHWM``) with the RSS it
   had before the step.  Every run checks the rows it changed (a lookup through deltalake's SQL engine).

3. Before each table size past the first, a plan (:func:`plan`): its time, disk and memory extrapolated linearly in
   rows from the largest size measured in the same run; a size that does not fit (less free disk than its lakes
   need, less available memory than its largest process' peak, or past ``--budget`` seconds) is left out with one
   line saying which numbers did not fit.  ``--rows ... 30000000`` runs 30 M rows only where it fits.

4. With ``--ingest N``: the issue's own measurement, through ``binlake ingest`` of real binlogs.  A private MariaDB
   (:class:`binlake.testing.mariadb.MariaDBServer`) fills the table with N rows (``INSERT ... SELECT`` from the
   sequence engine), each later batch updates ``--changes``' first count of random rows; every batch is its own
   binlog file and its own ``binlake ingest`` run (``--master local[2]``).  Reported per run: the ``current:``
   step's seconds as the ingest logs them, the binlake process' own peak RSS (the driver; the JVM is another
   process), the bytes the batch added to the current table's folder.  The lake is then checked against the
   server's ``count(*)`` and ``sum(a)``.

Example::

    python benchmarks/current.py --rows 1000000 --changes 10 10000                       # a few minutes
    python benchmarks/current.py --rows --ingest 1000000 --changes 10                      # binlake ingest
    python benchmarks/current.py --rows 1000000 10000000 30000000 --changes 10 10000 --keys random sequential \\
        --full-rewrite --json current.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

KEY = "bench/t"
SPLIT_ROWS = 1 << 20  # rows per staged file of the first load (a decode task's split)
SEQ_BASE = 10**25  # _seq of the first load's rows; a batch's come after


def _schemas() -> tuple[Any, Any]:
    """(the change table's schema, the current table's) of the benchmark's table."""
    import pyarrow as pa

    from binlake.lake.tables import META, SEQ, UTC_TS

    data = [("id", pa.int32()), ("a", pa.int64()), ("b", pa.string()), ("c", pa.decimal128(12, 3)),
            ("d", pa.timestamp("us"))]  # fmt: skip
    changes = pa.schema([*data, *META])
    current = pa.schema([*data, ("_seq", SEQ), ("_ts", UTC_TS)])
    return changes, current


def _rows(ids: Any, seq0: int, op: str, salt: int) -> Any:
    """Change rows (``_op`` ``op``) of the keys ``ids`` (a numpy array), values derived from the key and ``salt``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from binlake.lake.tables import UTC_TS, seq_array

    n = len(ids)
    key = pa.array(ids.astype(np.int32))
    a = pa.array(ids.astype(np.int64) * 7 + salt)
    b = pc.binary_join_element_wise(pa.scalar(f"name-{salt}-"), pc.cast(key, pa.string()), "")
    c = pa.array((ids.astype(np.int64) * 1000 + salt) % 10**8).cast(pa.decimal128(19, 0)).cast(pa.decimal128(12, 3))
    d = pa.array(1_600_000_000_000_000 + ids.astype(np.int64) * 1_000_003 + salt, pa.int64()).cast(pa.timestamp("us"))
    seq = seq_array(np.array([seq0], dtype=object), np.zeros(n, np.int64), np.arange(n))
    ts = pa.array(np.full(n, 1_700_000_000_000_000 + salt, np.int64)).cast(UTC_TS)
    return pa.table({"id": key, "a": a, "b": b, "c": c, "d": d, "_op": pa.array([op] * n), "_seq": seq, "_ts": ts})


def _stage(lake: Any, batch: int, rows: Any) -> str:
    """``rows`` staged as a decode task stages its last change of each key (sorted Parquet, small row groups)."""
    import uuid

    import pyarrow.parquet as pq

    from binlake.lake.files import ROW_GROUP_ROWS, sort_keys

    name = f"{uuid.uuid4().hex}.parquet"
    with (lake.staging(batch) / name).open_output() as sink:
        pq.write_table(rows.sort_by(sort_keys(["id"])), sink, row_group_size=ROW_GROUP_ROWS, compression="lz4",
                       use_dictionary=False)  # fmt: skip
    return name


def _warm() -> None:
    """Import what the step uses before it is timed: a running ingest has (its start is not the step's)."""
    import deltalake  # noqa: F401
    import pyarrow.dataset  # noqa: F401

    import binlake.lake.current  # noqa: F401


def _update(lake: Any, batch: int, names: list[str]) -> None:
    from binlake.lake.current import update_current

    changes, _ = _schemas()
    update_current(lake, batch, {KEY: ["id"]}, {KEY: changes}, {KEY: []}, {}, [], [], {KEY: names})


def _peak_mib() -> float:
    """This process' peak resident set (VmHWM), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _tree(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


# -- the child processes ---------------------------------------------------------------------------------------------


def build(root: Path, rows: int) -> dict[str, Any]:
    """The first load of a table of ``rows`` rows into a new lake at ``root``."""
    import numpy as np

    from binlake.lake import Lake

    lake = Lake(str(root))
    _warm()
    with lake.writing(lease_seconds=3600):
        names = []
        for at in range(0, rows, SPLIT_ROWS):
            ids = np.arange(at, min(rows, at + SPLIT_ROWS))
            names.append(_stage(lake, 1, _rows(ids, SEQ_BASE + at, "insert", 0)))
        before = _rss_mib()
        t0 = time.monotonic()
        _update(lake, 1, names)
        seconds = time.monotonic() - t0
        lake.staging(1).delete_dir()
    files = _tree(root / KEY / "current")
    return {"seconds": seconds, "rss_before_mib": before, "peak_mib": _peak_mib(), "bytes": sum(files.values()),
            "files": sum(1 for f in files if f.endswith(".parquet"))}  # fmt: skip


def _changes(rows: int, changes: int, keys: str) -> tuple[Any, Any]:
    """(updated keys, new keys) of a batch: ``random`` (90 % updates anywhere, 10 % inserts) or ``sequential``
    (updates of a run of consecutive keys, then inserts past the end)."""
    import numpy as np

    rng = np.random.default_rng(changes + rows)
    new = max(1, changes // 10) if changes > 1 else 0
    if keys == "random":
        updated = rng.choice(rows, changes - new, replace=False)
    else:
        start = int(rng.integers(0, max(1, rows - changes)))
        updated = np.arange(start, start + changes - new)
    return np.sort(updated), np.arange(rows, rows + new)


def batch(root: Path, rows: int, changes: int, keys: str, method: str) -> dict[str, Any]:
    """One batch of ``changes`` changes into the table at ``root``, by ``method``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from binlake.lake import Lake
    from binlake.lake.records import LakeSettings

    table = root / KEY / "current"
    updated, new = _changes(rows, changes, keys)
    upd = _rows(updated, SEQ_BASE * 10, "update_postimage", 1)
    ins = _rows(new, SEQ_BASE * 10 + len(updated), "insert", 1)
    source = pa.concat_tables([upd, ins])
    lake = Lake(str(root))
    _warm()
    before = _tree(table)
    rss = _rss_mib()
    with lake.writing(lease_seconds=3600):
        if method in ("dv", "cow"):
            lake.write_settings(LakeSettings(method))  # type: ignore[arg-type]
            name = _stage(lake, 2, source)
            t0 = time.monotonic()
            _update(lake, 2, [name])
            seconds = time.monotonic() - t0
            lake.staging(2).delete_dir()
        elif method == "rewrite":
            t0 = time.monotonic()
            _full_rewrite(lake, source)
            seconds = time.monotonic() - t0
        else:
            t0 = time.monotonic()
            _delta_rs_merge(table, source)
            seconds = time.monotonic() - t0
    after = _tree(table)
    added = {k: v for k, v in after.items() if before.get(k) != v}
    from deltalake import DeltaTable, QueryBuilder

    dt = DeltaTable(str(table))
    probe = sorted([*updated[:5].tolist(), *new[:5].tolist()])
    got = pa.table(QueryBuilder().register("t", dt).execute(
        f"SELECT id, b FROM t WHERE id IN ({', '.join(map(str, probe))})").read_all())  # fmt: skip
    ok = sorted(zip(got["id"].to_pylist(), got["b"].to_pylist(), strict=True)) == [(i, f"name-1-{i}") for i in probe]
    count = pa.table(QueryBuilder().register("t", dt).execute("SELECT count(*) AS n FROM t").read_all())["n"][0]
    return {"seconds": seconds, "bytes_added": sum(added.values()), "bytes_before": sum(before.values()),
            "files_added": sum(1 for k in added if k.endswith(".parquet")),
            "dv_files_added": sum(1 for k in added if k.startswith("deletion_vector_")),
            "rss_before_mib": rss, "peak_mib": _peak_mib(),
            "correct": bool(ok and count.as_py() == rows + len(new)), "rows_after": count.as_py(),
            "touched": int(pc.count_distinct(source["id"]).as_py())}  # fmt: skip


def _full_rewrite(lake: Any, source: Any) -> None:
    """binlake's current-state step before this engine: the whole table read, merged, written, overwritten."""
    from deltalake.transaction import AddAction, CommitProperties, Transaction

    from binlake.lake import delta
    from binlake.lake.merge import merge_current

    _, schema = _schemas()
    loc = lake.current(KEY)
    table = delta.read_table(loc)
    merged = merge_current(table, source, ["id"], schema, ordered=True)
    files = delta.write_parquet(merged, loc, KEY)
    actions = [AddAction(f.path, f.size, {}, f.mtime_ms, True, json.dumps({"numRecords": f.rows})) for f in files]
    txn = CommitProperties(app_transactions=[Transaction(delta.APP_ID, 2)])
    delta.delta_table(loc).create_write_transaction(actions, mode="overwrite", schema=schema, commit_properties=txn)


def _delta_rs_merge(table: Path, source: Any) -> None:
    from deltalake import DeltaTable

    _, schema = _schemas()
    (
        DeltaTable(str(table))
        .merge(source.select(schema.names), "t.id = s.id", source_alias="s", target_alias="t", streamed_exec=False)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


_PEAK = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            print('binlake-peak-kib', line.split()[1], file=sys.stderr)\n"
    "atexit.register(peak)\n"
    "sys.argv = ['binlake', *sys.argv[1:]]\n"
    "runpy.run_module('binlake', run_name='__main__')\n"
)


def real_ingest(work: Path, rows: int, changes: int, batches: int) -> list[dict[str, Any]]:
    """``binlake ingest`` of a table of ``rows`` rows, then ``batches`` batches of ``changes`` updates, each its own
    binlog file and run (module docstring, 4)."""
    import random
    import re

    from deltalake import DeltaTable, QueryBuilder

    from binlake.testing.mariadb import MariaDBServer

    logs, lake = work / "binlogs", work / "lake"
    logs.mkdir(parents=True)
    out: list[dict[str, Any]] = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    current = lake / "bench" / "t" / "current"
    rng = random.Random(22)
    server_args = ["--max-binlog-size=1073741824", "--innodb-flush-log-at-trx-commit=2"]
    with MariaDBServer(server_args, buffer_pool="1G") as server:
        server.execute("CREATE DATABASE bench; CREATE TABLE bench.t (id INT PRIMARY KEY, a BIGINT, b VARCHAR(40), "
                       "c DECIMAL(12,3), d DATETIME(6))")  # fmt: skip
        for step in range(batches + 1):
            if step == 0:
                server.execute(f"INSERT INTO bench.t SELECT seq, seq * 7, CONCAT('name-', seq), (seq % 100000000) / "
                               f"1000, '2020-01-01' + INTERVAL seq SECOND FROM bench.seq_1_to_{rows}")  # fmt: skip
            else:
                ids = ", ".join(str(rng.randrange(1, rows + 1)) for _ in range(changes))
                server.execute(f"UPDATE bench.t SET a = a + 1, b = CONCAT('new-', id) WHERE id IN ({ids})")
            server.flush_logs()
            for f in server.binlog_files()[:-1]:
                if not (logs / f.name).exists():
                    shutil.copyfile(f, logs / f.name)
            before = _tree(current) if current.exists() else {}
            t0 = time.monotonic()
            cmd = [sys.executable, "-c", _PEAK, "ingest", str(logs), "--lake", str(lake), "--master", "local[2]"]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = time.monotonic() - t0
            if done.returncode:
                raise SystemExit(f"binlake ingest failed:\n{done.stderr[-4000:]}")
            text = done.stdout + done.stderr
            step_s = re.findall(r"current: done in ([0-9.]+) s", text)
            peak = re.findall(r"binlake-peak-kib (\d+)", text)
            after = _tree(current)
            added = sum(v for k, v in after.items() if before.get(k) != v)
            row = {"rows": rows, "changes": rows if step == 0 else changes, "method": "binlake ingest",
                   "batch": step, "current_s": float(step_s[-1]) if step_s else None, "wall_s": wall,
                   "driver_peak_mib": int(peak[-1]) / 1024 if peak else None, "bytes_added": added,
                   "bytes_before": sum(before.values())}  # fmt: skip
            out.append(row)
            print(f"{rows:>11,} rows  ingest batch {step} ({row['changes']:,} changes)  current step "
                  f"{row['current_s']} s  wall {wall:.1f} s  driver peak {row['driver_peak_mib']:.0f} MiB  "
                  f"+{added / 2**20:.2f} MiB of {row['bytes_before'] / 2**20:.1f}", flush=True)  # fmt: skip
        want = server.query("SELECT count(*), sum(a) FROM bench.t")[0]
    dt = DeltaTable(str(current))
    got = QueryBuilder().register("t", dt).execute("SELECT count(*) AS n, sum(a) AS s FROM t").read_all()
    n, total = got.column("n")[0].as_py(), got.column("s")[0].as_py()
    correct = (str(n), str(total)) == (want[0], want[1])
    print(f"lake {n} rows, sum(a) {total}; server {want[0]}, {want[1]}: {'ok' if correct else 'WRONG'}", flush=True)
    for row in out:
        row["correct"] = correct
    return out


def _available_mib() -> float:
    """The memory the machine has available now (``MemAvailable``), MiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("inf")


def plan(rows: int, done: list[dict[str, Any]], work: Path, budget: float | None) -> tuple[bool, str]:
    """Whether a table of ``rows`` rows fits here, and the figures that say so: its time, bytes and peak memory
    extrapolated linearly in rows from the largest size measured (``done``: this run's results so far; of a peak,
    what the step added to the process' resident set before it).  Its lakes
    need the base table and the copy each run works on, which the largest method may rewrite whole (3x the
    table's bytes, plus 20 %); its largest process must fit in the memory available now (plus 20 %)."""
    measured = [r for r in done if r["method"] == "first load"]
    if not measured:
        return True, "the first size: measured, not planned"
    base = max(measured, key=lambda r: r["rows"])
    scale = rows / base["rows"]
    runs = [r for r in done if r["rows"] == base["rows"]]
    seconds = scale * sum(r["seconds"] * len(r.get("runs", [0])) for r in runs)
    need_bytes = 3.6 * scale * base["bytes"]
    peak = max(r["rss_before_mib"] + scale * (r["peak_mib"] - r["rss_before_mib"]) for r in runs)
    free = shutil.disk_usage(work).free
    avail = _available_mib()
    text = (f"plan for {rows:,} rows (x{scale:g} the {base['rows']:,} measured): ~{seconds:.0f} s of steps, "
            f"{need_bytes / 2**30:.1f} GiB of lakes ({free / 2**30:.1f} GiB free), largest process ~{peak:.0f} MiB "
            f"({avail:.0f} MiB available)")  # fmt: skip
    short = [why for why, bad in (("disk", need_bytes > free), ("memory", 1.2 * peak > avail),
             ("time", budget is not None and seconds > budget)) if bad]  # fmt: skip
    return not short, text + (f": does not fit ({', '.join(short)}), left out" if short else ": fits")


def child(argv: list[str]) -> int:
    kind, root = argv[0], Path(argv[1])
    out = build(root, int(argv[2])) if kind == "build" else batch(root, int(argv[2]), int(argv[3]), argv[4], argv[5])
    print(json.dumps(out))
    return 0


# -- the parent ------------------------------------------------------------------------------------------------------


def _run_child(args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, __file__, "--child", *args], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-4000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", type=int, nargs="*", default=[1_000_000])
    p.add_argument("--changes", type=int, nargs="+", default=[10, 10_000])
    p.add_argument("--keys", nargs="+", choices=["random", "sequential"], default=["random"])
    p.add_argument("--layouts", nargs="+", choices=["dv", "cow"], default=["dv", "cow"])
    p.add_argument("--runs", type=int, default=3, help="runs of each batch (the median is reported)")
    p.add_argument("--full-rewrite", action="store_true", help="measure binlake's former full rewrite too")
    p.add_argument("--no-delta-rs", action="store_true", help="leave delta-rs merge out")
    p.add_argument("--work", type=Path, help="where the lakes are made (default: a temporary folder)")
    p.add_argument("--json", type=Path, help="write every figure here")
    p.add_argument("--ingest", type=int, metavar="N", help="also through binlake ingest: a table of N rows (3.)")
    p.add_argument("--batches", type=int, default=3, help="later batches of the --ingest run")
    p.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="leave out a table size whose planned steps take longer than this (default: no limit)",
    )
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="binlake-current-", dir=a.work))
    results: list[dict[str, Any]] = []
    methods = [*a.layouts, *(["rewrite"] if a.full_rewrite else []), *([] if a.no_delta_rs else ["delta-rs"])]
    try:
        if a.ingest:
            results += real_ingest(work / "ingest", a.ingest, a.changes[0], a.batches)
        for rows in sorted(a.rows):
            fits, text = plan(rows, results, work, a.budget)
            print(text, flush=True)
            if not fits:
                results.append({"rows": rows, "method": "plan", "left_out": text})
                continue
            base = work / f"base-{rows}"
            built = _run_child(["build", str(base), str(rows)])
            results.append({"rows": rows, "method": "first load", **built})
            print(f"{rows:>11,} rows  first load       {built['seconds']:8.2f} s  {built['bytes'] / 2**20:9.1f} MiB  "
                  f"{built['files']:4} files  peak {built['peak_mib']:7.1f} MiB", flush=True)  # fmt: skip
            for keys in a.keys:
                for changes in a.changes:
                    for method in methods:
                        runs = []
                        for _ in range(a.runs if method in ("dv", "cow") else 1):
                            lake = work / "run"
                            shutil.rmtree(lake, ignore_errors=True)
                            shutil.copytree(base, lake)
                            runs.append(_run_child(["batch", str(lake), str(rows), str(changes), keys, method]))
                        mid = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
                        row = {"rows": rows, "changes": changes, "keys": keys, "method": method, **mid,
                               "runs": [r["seconds"] for r in runs]}  # fmt: skip
                        results.append(row)
                        share = 100 * mid["bytes_added"] / mid["bytes_before"]
                        print(f"{rows:>11,} rows  {changes:>6,} {keys:<10} {method:<9} {mid['seconds']:8.3f} s  "
                              f"+{mid['bytes_added'] / 2**20:8.2f} MiB ({share:5.2f} %)  {mid['files_added']:3} files  "
                              f"peak {mid['peak_mib']:7.1f} MiB (before {mid['rss_before_mib']:.0f})  "
                              f"{'ok' if mid['correct'] else 'WRONG'}", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _summary(results)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r.get("correct", True) for r in results) else 1


def _summary(results: list[dict[str, Any]]) -> None:
    """The issue's targets, where the run measured them."""
    by = {(r["rows"], r.get("changes"), r.get("keys"), r["method"]): r for r in results}
    for (rows, changes, keys, method), r in sorted(by.items(), key=lambda kv: str(kv[0])):
        if method != "dv" or changes != 10:
            continue
        small = by.get((min(x for x, *_ in by), 10, keys, "dv"))
        ratio = r["seconds"] / small["seconds"] if small and small is not r else 1.0
        print(f"target {rows:,} rows, 10 {keys} changes (dv): {r['seconds']:.3f} s (<= 1.0), {ratio:.2f}x the "
              f"smallest table's (<= 1.3), +{100 * r['bytes_added'] / r['bytes_before']:.3f} % bytes (<= 1), "
              f"peak {r['peak_mib']:.0f} MiB (<= 500)")  # fmt: skip
    for (rows, changes, keys, method), r in sorted(by.items(), key=lambda kv: str(kv[0])):
        peer = by.get((rows, changes, keys, "delta-rs"))
        if method == "dv" and peer and changes and changes >= 10_000:
            print(f"target {rows:,} rows, {changes:,} {keys} changes: dv {r['seconds']:.2f} s vs delta-rs merge "
                  f"{peer['seconds']:.2f} s ({peer['seconds'] / r['seconds']:.1f}x faster)")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
