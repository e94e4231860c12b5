"""Rows per second of the row API: decode every row of every rows event of one binlog file.

Events are decoded first (not timed); the timed part is ``RowsEvent.rows()`` over all of them, repeated
``--repeat`` times, best run reported, so the figure is the row decoder's alone.  ``--raw`` times stored values
(``typed=False``, what ``binlake dump`` prints), ``--profile`` prints the hottest functions.

Example::

    PYTHONPATH=src python benchmarks/bench_rows.py ../shared/corpus/mariadb/binlogs/corpus-bin.000004
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

from binlake.events.rows import RowsEvent
from binlake.reader import read_events


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("binlog")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--raw", action="store_true", help="stored values (typed=False)")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    events = [ev for ev in read_events(args.binlog) if isinstance(ev, RowsEvent) and ev.table_map is not None]
    t_events = time.perf_counter() - t0
    typed = not args.raw

    def run() -> int:
        n = 0
        for ev in events:
            n += len(ev.rows(typed))
        return n

    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(run)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    best = float("inf")
    rows = 0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        rows = run()
        best = min(best, time.perf_counter() - t0)
    images = sum(len(ev.rows(typed)) * (2 if ev.kind == "update" else 1) for ev in events)
    print(
        f"{args.binlog}: {len(events)} rows events ({t_events:.2f} s to read), {rows} row changes, {images} images; "
        f"{'raw' if args.raw else 'typed'}: {best:.3f} s = {rows / best:,.0f} rows/s, {images / best:,.0f} images/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
