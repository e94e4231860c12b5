#!/usr/bin/env python3
"""The long follow's storage: issue 22's target that ``--batches`` batches of ``--changes`` changes into a table of
``--rows`` rows, with the ingests' automatic maintenance on, leave the lake's bytes and files within 1.5x of the
same rows written fresh.

One process, as a following ingest is: the table's first load through the engine (benchmarks/current.py's
``build``: sorted files of 1 M rows with key statistics) and its rows as the change table's first files; then every
batch commits its change rows to the change table and merges them into the current state
(:func:`binlake.lake.current.update_current`, deletion vectors), and after every ``--every``-th batch runs the
slice an ingest runs (:func:`binlake.lake.maintain.after_batch`, with the lake's retention set to ``--retention``:
0 by default, so that what a slice replaces is vacuumed within the run; with 7 days nothing would be, for a week).

Reported: the data bytes and files of the lake's tables on storage (Parquet and deletion-vector files; logs
aside) after the last batch (``--batches`` a multiple of ``--every``: its slice runs), the same rows written
fresh (one sorted current file per 1 M rows, one change file), their ratios, the median current-state step and
slice times, and the process' peak RSS.  The run's bounded version is tests/test_maintain.py's
``test_a_long_follow_stays_within_1_5x_of_a_compacted_lake``.

Example::

    python benchmarks/long_follow.py                                   # 5 M rows, 500 batches of 10: ~4 min
    python benchmarks/long_follow.py --rows 200000 --batches 100 --json follow.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
SRC = HERE.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import current as bench  # noqa: E402  (benchmarks/current.py: the table, its rows, the first load)


def _data(folder: Path) -> list[Path]:
    """The lake's table files: Parquet and deletion vectors (the Delta logs and binlake's records aside)."""
    return [p for p in folder.rglob("*") if p.is_file() and "_delta_log" not in p.parts and "_binlake" not in p.parts]


def run(work: Path, rows: int, batches: int, changes: int, every: int, retention: float) -> dict[str, Any]:
    import numpy as np

    from binlake.lake import Lake
    from binlake.lake import delta as lake_delta
    from binlake.lake.current import update_current
    from binlake.lake.deltalog import conform
    from binlake.lake.files import write_sorted
    from binlake.lake.maintain import after_batch
    from binlake.lake.records import LakeSettings
    from binlake.lake.tables import META_DICTIONARY

    root = work / "lake"
    t0 = time.monotonic()
    bench.build(root, rows)
    lake = Lake(str(root))
    schema, _ = bench._schemas()
    steps: list[float] = []
    slices: list[float] = []
    rng = np.random.default_rng(rows + batches)
    with lake.writing(lease_seconds=3600):
        lake.write_settings(LakeSettings("dv", retention))
        first = conform(bench._rows(np.arange(rows), bench.SEQ_BASE, "insert", 0), schema)
        lake.commit(lake.changes(bench.KEY), lake_delta.write_parquet(first, lake.changes(bench.KEY), bench.KEY,
                                                                      META_DICTIONARY), schema, 1)  # fmt: skip
        del first
        loaded = time.monotonic() - t0
        for n in range(2, batches + 2):
            ids = np.sort(rng.choice(rows, changes, replace=False))
            part = bench._rows(ids, bench.SEQ_BASE * n, "update_postimage", n)
            files = lake_delta.write_parquet(conform(part, schema), lake.changes(bench.KEY), bench.KEY,
                                             META_DICTIONARY)  # fmt: skip
            lake.commit(lake.changes(bench.KEY), files, schema, n)
            name = bench._stage(lake, n, part)
            t1 = time.monotonic()
            update_current(lake, n, {bench.KEY: ["id"]}, {bench.KEY: schema}, {bench.KEY: files}, {}, [], [],
                           {bench.KEY: [name]})  # fmt: skip
            steps.append(time.monotonic() - t1)
            lake.staging(n).delete_dir()
            t2 = time.monotonic()
            if after_batch(lake, n - 1, every) is not None:  # the first load is batch 1: slices count the follow's
                slices.append(time.monotonic() - t2)
    files = _data(root)
    fresh = work / "fresh"
    for kind in ("current", "changes"):
        loc = lake.current(bench.KEY) if kind == "current" else lake.changes(bench.KEY)
        data = lake_delta.read_table(loc)
        assert data is not None
        if kind == "current":
            assert data.num_rows == rows, (data.num_rows, rows)
            write_sorted(data, Lake(str(fresh)).current(bench.KEY), bench.KEY, ["id"])
        else:
            assert data.num_rows == rows + batches * changes
            lake_delta.write_parquet(data, Lake(str(fresh)).changes(bench.KEY), bench.KEY, META_DICTIONARY,
                                     part_rows=data.num_rows)  # fmt: skip
        del data
    ref = _data(fresh)
    size, ref_size = sum(p.stat().st_size for p in files), sum(p.stat().st_size for p in ref)
    return {
        "rows": rows, "batches": batches, "changes": changes, "every": every, "retention_s": retention,
        "first_load_s": round(loaded, 1), "step_median_s": round(statistics.median(steps), 4),
        "slice_median_s": round(statistics.median(slices), 3) if slices else None,
        "slice_max_s": round(max(slices), 3) if slices else None,
        "bytes": size, "files": len(files), "parquet": sum(p.suffix == ".parquet" for p in files),
        "fresh_bytes": ref_size, "fresh_files": len(ref),
        "bytes_ratio": round(size / ref_size, 3), "files_ratio": round(len(files) / len(ref), 3),
        "peak_mib": round(bench._peak_mib(), 1),
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--batches", type=int, default=500, help="batches after the first load (default 500)")
    ap.add_argument("--changes", type=int, default=10, help="updates of random keys per batch (default 10)")
    ap.add_argument("--every", type=int, default=10, help="a maintenance slice after every N-th batch (default 10)")
    ap.add_argument("--retention", type=float, default=0.0, help="the lake's retention, seconds (default 0)")
    ap.add_argument("--json", help="write the result here too")
    ap.add_argument("--keep", action="store_true", help="keep the lake (its folder is printed)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="binlake-long-follow-"))
    try:
        result = run(work, args.rows, args.batches, args.changes, args.every, args.retention)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept: {work}", file=sys.stderr)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    within = result["bytes_ratio"] <= 1.5 and result["files_ratio"] <= 1.5
    print(f"bytes {result['bytes_ratio']}x, files {result['files_ratio']}x of a fresh lake: "
          f"{'within' if within else 'NOT within'} 1.5x")  # fmt: skip
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
