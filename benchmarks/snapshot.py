#!/usr/bin/env python3
"""binlake's snapshot benchmark: a consistent snapshot of one table into a lake against ``mariadb-dump`` of the
same table into /dev/null.

1. A private MariaDB (:class:`binlake.testing.mariadb.MariaDBServer`) gets ``workload_big.sql``'s table
   (``binlake_bench.shipment``: 10 columns, integers of four widths, VARCHAR, DECIMAL, two DATETIME(6), TEXT, a
   nullable BIGINT) filled with ``--rows`` rows (default 200,000; the lead's figures: millions).
2. Runs, ``--runs`` times each (the median is reported): ``mariadb-dump --single-transaction`` of the table into
   /dev/null, and ``binlake.snapshot.take_snapshot`` of the table into an empty lake: its chunks (``--chunk-rows``)
   read by Spark tasks on ``--master`` (default ``local[2]``, each task its own connection), or with ``--master
   none`` one after the other in the measured process.  Each is a child process measured by ``run.py``'s
   :func:`measure` (wall and CPU seconds of the whole process tree, peak RSS of the largest process and of the
   tree).
3. Prints rows/s, CPU seconds, the server's CPU seconds during the run (``mariadbd``'s user and system time from
   ``/proc``: it serves both commands, so it is not in their CPU), how busy the machine's cores were (both CPUs
   over wall time and cores), peak MiB of the driver (the snapshot's own process: ``getrusage``), of the largest
   process (the JVM where Spark runs) and of the tree, and ``--json OUT`` writes every run.

Example::

    python benchmarks/snapshot.py --rows 200000 --runs 1            # a smoke run, about a minute
    python benchmarks/snapshot.py --rows 5000000 --runs 3 --json snap.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
for p in (str(SRC), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from run import BUFFER_POOL, SERVER_ARGS, TICK, Run, measure  # noqa: E402

from binlake.testing.mariadb import MariaDBServer, find_tool  # noqa: E402

USER, PASSWORD = "snap", "snap-bench"
FILL = """
INSERT INTO binlake_bench.shipment (account, region, code, units, amount, placed, shipped, remark, tracking)
SELECT seq % 100000, seq % 250, CONCAT('CODE-', seq), CAST(seq % 8000000 AS SIGNED) - 4000000, seq / 7.0001,
  '2024-01-01' + INTERVAL seq SECOND, IF(seq % 3 = 0, NULL, '2024-02-01' + INTERVAL seq MICROSECOND),
  IF(seq % 5 = 0, NULL, REPEAT('remark ', seq % 20)), IF(seq % 2 = 0, NULL, seq * 1000003)
FROM binlake_bench.seq_1_to_{rows};
"""


def process_cpu(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (``/proc/PID/stat`` fields 14 and 15)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def worker(port: int, lake: str, master: str, chunk_rows: int) -> dict[str, object]:
    """The measured snapshot: one table into an empty lake; prints its rows."""
    from binlake.replication import ConnectionOptions, Secret
    from binlake.snapshot import SnapshotSpec, take_snapshot

    options = ConnectionOptions("127.0.0.1", USER, 4343, port, Secret(PASSWORD))
    os.environ["BINLAKE_PASSWORD"] = PASSWORD  # the chunk readers' password (local workers inherit it)
    spec = SnapshotSpec(tables=["binlake_bench.shipment"], chunk_rows=chunk_rows)
    if master != "none":
        from binlake.spark.runner import SparkRunner
        from binlake.spark.session import build_context

        spec = replace(spec, runner=SparkRunner(build_context(master)))  # as binlake ingest --host starts it
    result = take_snapshot(options, lake, spec)
    driver_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rows": sum(result.rows.values()), "chunks": result.chunks_read, "driver_peak_kib": driver_kib}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=200_000, help="rows of the table (default 200000)")
    p.add_argument("--runs", type=int, default=1, help="runs of each command; the median is reported (default 1)")
    p.add_argument("--chunk-rows", type=int, default=100_000, help="rows per snapshot chunk (default 100000)")
    p.add_argument("--master", default="local[2]", help="Spark master of the chunk tasks, or none (default local[2])")
    p.add_argument("--json", type=Path, metavar="OUT", help="write every figure and run to this JSON file")
    p.add_argument("--worker", nargs=4, metavar=("PORT", "LAKE", "MASTER", "CHUNK_ROWS"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        port, lake, master, chunk_rows = args.worker
        print(json.dumps(worker(int(port), lake, master, int(chunk_rows))))
        return 0
    dump = find_tool("mariadb-dump")
    if dump is None:
        raise SystemExit("mariadb-dump not found: apt-get install -y mariadb-client")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["BINLAKE_PASSWORD"] = PASSWORD
    with (
        tempfile.TemporaryDirectory(prefix="binlake-snap-bench-") as work,
        MariaDBServer(SERVER_ARGS, buffer_pool=BUFFER_POOL) as server,
    ):
        server.execute((HERE / "workload_big.sql").read_text("utf-8"))
        server.execute(FILL.format(rows=args.rows), timeout=24 * 3600)
        server.create_user(USER, PASSWORD, grants=("SELECT", "BINLOG MONITOR", "REPLICATION SLAVE", "LOCK TABLES"))
        lake = Path(work) / "lake"
        dump_cmd = [dump, "--no-defaults", "--single-transaction", "--protocol=tcp", "-h", "127.0.0.1",
                    "-P", str(server.port), "-u", USER, f"-p{PASSWORD}", "binlake_bench", "shipment"]  # fmt: skip
        snap_cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(server.port), str(lake),
                    args.master, str(args.chunk_rows)]  # fmt: skip
        results: dict[str, list[Run]] = {"mariadb-dump > /dev/null": [], f"binlake snapshot ({args.master})": []}
        server_cpu: dict[str, list[float]] = {name: [] for name in results}
        for name, cmd, capture in (
            ("mariadb-dump > /dev/null", dump_cmd, False),
            (f"binlake snapshot ({args.master})", snap_cmd, True),
        ):
            for i in range(args.runs):
                shutil.rmtree(lake, ignore_errors=True)
                before = process_cpu(server.pid)
                run = measure(cmd, env, capture=capture)
                server_cpu[name].append(process_cpu(server.pid) - before)
                if run.exit_code != 0:
                    raise SystemExit(f"{name} failed: {run.error}")
                if run.output is not None and run.output["rows"] != args.rows:
                    raise SystemExit(f"{name} read {run.output['rows']} rows, not {args.rows}")
                results[name].append(run)
                print(f"  {name:<32} run {i + 1}/{args.runs}: {run.seconds:7.2f} s  cpu {run.cpu_seconds:7.2f} s  "
                      f"server cpu {server_cpu[name][-1]:6.2f} s  peak {run.peak_rss_kib / 1024:7.1f} MiB",
                      flush=True)  # fmt: skip
    cores = os.cpu_count() or 1
    print(f"\n{'command':<32} {'wall s':>8} {'rows/s':>10} {'CPU s':>8} {'server CPU s':>12} {'busy':>5} "
          f"{'driver MiB':>10} {'largest MiB':>11} {'tree MiB':>9}")  # fmt: skip
    doc: dict[str, object] = {"rows": args.rows, "chunk_rows": args.chunk_rows, "cpus": cores}
    for name, runs in results.items():
        wall = statistics.median(r.seconds for r in runs)
        cpu = statistics.median(r.cpu_seconds for r in runs)
        served = statistics.median(server_cpu[name])
        busy = (cpu + served) / wall / cores
        peak = max(r.peak_rss_kib for r in runs) / 1024
        largest = max(r.max_rss_kib for r in runs) / 1024
        driver = max(int(r.output["driver_peak_kib"]) if r.output else r.max_rss_kib for r in runs) / 1024
        print(f"{name:<32} {wall:8.2f} {args.rows / wall:10,.0f} {cpu:8.2f} {served:12.2f} {busy:5.0%} "
              f"{driver:10.1f} {largest:11.1f} {peak:9.1f}")  # fmt: skip
        doc[name] = {"median_seconds": wall, "rows_per_s": args.rows / wall, "median_cpu_seconds": cpu,
                     "server_cpu_seconds": server_cpu[name], "busy": busy, "driver_peak_mib": driver,
                     "largest_process_rss_mib": largest, "peak_rss_mib": peak,
                     "runs": [r.__dict__ for r in runs]}  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
