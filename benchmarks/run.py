#!/usr/bin/env python3
"""binlake's performance benchmark: one realistic binlog, every decoder side by side on it.

1. Makes the binlog with a private MariaDB (:class:`binlake.testing.mariadb.MariaDBServer`) running
   ``workload_big.sql`` (beside this file): ``--scale 1.0`` is 110000 transactions, ~5.5 million row changes,
   ~1 GiB in one file.  ``--binlog FILE`` measures an existing file instead (it is copied into the server's datadir
   and added to its binlog index, so the replication peer can stream it too).  A ~10 MiB prefix of the file, cut at
   a transaction end, is made as well to show that binlake's memory does not grow with the file.
2. Runs, ``--runs`` times each on the warm file (the median is reported): ``mariadb-binlog`` (plain and
   ``--base64-output=DECODE-ROWS -vv``), python-mysql-replication streaming the same file from the server over
   127.0.0.1 and reading every value, binlake decoding every value in one Python process (typed and raw), and the
   ``binlake dump``, ``binlake changes`` (``--format sql`` and Debezium JSON), ``binlake stats`` and ``binlake
   ingest`` (Spark ``local[2]``) commands.  Each command is a
   child process; its CPU time and peak memory come from ``os.wait4`` (the largest process' max RSS) and from
   sampling the RSS of its whole process tree (Spark's JVM and Python workers).
3. Prints a table (seconds, rows/s, MB/s, peak RSS, how many times faster binlake is than each peer) and, with
   ``--json OUT``, writes every run.  ``--profile N`` adds a cProfile of binlake's decode (top N functions).

``--live`` measures reading the server instead (the live readers, each streaming the same binlog from the private
server over 127.0.0.1 to the server's end and stopping there): ``binlake tail --no-follow`` (the ``-vv`` text, and
Debezium JSON) against ``mariadb-binlog --read-from-remote-server --base64-output=DECODE-ROWS -vv`` and
python-mysql-replication, with binlake's typed decode of the file to count the row changes.

``--ingest-on`` measures ``binlake ingest`` on several Spark masters, one row each: ``local[N]``, or ``cluster:N``
(a Spark standalone cluster of N workers of one core each that the benchmark starts for those runs,
:class:`binlake.testing.sparkcluster.StandaloneCluster`; its start is not measured), and prints the scaling of
each against the one-core run of its kind (``local[1]``, ``cluster:1``).  A cluster's executors are not children
of the measured command: its CPU seconds and peak memory are the driver's alone, its wall time is the figure.

Example::

    python benchmarks/run.py                       # scale 0.05: ~5500 transactions, ~50 MB, a few minutes
    python benchmarks/run.py --scale 1.0 --runs 3 --json bench.json --profile 25
    python benchmarks/run.py --binlog kept/server/data/binlake-bin.000002   # reuse a file made with --keep kept
    python benchmarks/run.py --live --scale 0.05                  # binlake tail against the live peers
    python benchmarks/run.py --binlog FILE --skip mariadb --skip python --skip decode --skip dump --skip stats \
        --ingest-on 'local[1]' --ingest-on 'local[2]' --ingest-on cluster:1 --ingest-on cluster:2
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from binlake.reader import walk_headers  # noqa: E402
from binlake.testing.mariadb import MariaDBServer, find_tool  # noqa: E402
from binlake.testing.sparkcluster import StandaloneCluster  # noqa: E402

FULL_SCALE_TRANSACTIONS = 110_000
SMALL_FILE_BYTES = 10 << 20
SEED = 7
XID_EVENT = 16  # Log_event_type (log_event.h): the COMMIT of an InnoDB transaction
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20

# Settings of the generating server (the shared corpus' big binlog was made the same way): one file up to the
# 1 GiB maximum, a buffer pool that holds the whole table, and no redo-log flush per commit (it changes nothing
# in the binlog, it only makes generation faster).
SERVER_ARGS = ("--max-binlog-size=1073741824", "--innodb-flush-log-at-trx-commit=2")
BUFFER_POOL = "1G"
REPL_USER = "repl"
REPL_PASSWORD = "repl"


# -- measuring one child process ------------------------------------------------------------------------------


@dataclass
class Run:
    """One run of one command: wall and CPU seconds, exit code, peak memory in KiB, and its JSON output if any."""

    seconds: float
    cpu_seconds: float  # the larger of the rusage figure and the sampled CPU time of the whole process tree
    exit_code: int
    max_rss_kib: int  # max RSS of the largest single process (GNU time's %M, else wait4's ru_maxrss)
    tree_rss_kib: int  # the largest sum of RSS over the process tree the sampler saw
    output: dict[str, Any] | None = None
    error: str = ""

    @property
    def peak_rss_kib(self) -> int:
        return max(self.max_rss_kib, self.tree_rss_kib)


TICK = os.sysconf("SC_CLK_TCK")
# GNU time reports the rusage of the one child it forks itself.  Without it, wait4 on our own child reports at least
# our own RSS at the fork (Linux carries the pre-exec memory's high-water mark over exec), a floor of ~30 MiB.
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def _sample_tree(root: int, include_root: bool, cpu: dict[int, float]) -> int:
    """Sum of the RSS (KiB) of ``root``'s process tree now; records each process' CPU seconds so far in ``cpu``."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(_children(pid))
        if pid == root and not include_root:
            continue
        try:
            with open(f"/proc/{pid}/statm") as f:
                rss = int(f.read().split()[1]) * PAGE // 1024
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after "(comm)": state is field 3 of proc(5)
            cpu[pid] = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime: fields 14 and 15
        except (OSError, IndexError, ValueError):
            continue
        total += rss
    return total


def measure(cmd: Sequence[str], env: dict[str, str], *, capture: bool = False, interval: float = 0.05) -> Run:
    """Run ``cmd`` (stdout to /dev/null unless ``capture``: then parsed as JSON) and measure it."""
    with ExitStack() as files:
        err = files.enter_context(tempfile.TemporaryFile())
        out = files.enter_context(tempfile.TemporaryFile())
        timed = files.enter_context(tempfile.NamedTemporaryFile("r", suffix=".time"))
        launcher = [GNU_TIME, "-f", "%M %U %S", "-o", timed.name] if GNU_TIME else []
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*launcher, *cmd],
            stdin=subprocess.DEVNULL,
            stdout=out if capture else subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        peak = 0
        cpu: dict[int, float] = {}
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _sample_tree(proc.pid, not launcher, cpu))
                done.wait(interval)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen from waiting again
        max_rss, cpu_s = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
        if launcher:
            words = timed.read().split()  # GNU time may print "Command exited with non-zero status N" first
            max_rss, cpu_s = int(words[-3]), float(words[-2]) + float(words[-1])
        run = Run(seconds, max(cpu_s, sum(cpu.values())), proc.returncode, max_rss, peak)
        if proc.returncode != 0:
            err.seek(0)
            run.error = err.read().decode("utf-8", "replace")[-2000:]
        elif capture:
            out.seek(0)
            run.output = json.loads(out.read().decode("utf-8").strip().splitlines()[-1])
        return run


@dataclass
class Result:
    """Every run of one measured command on one file, and what it counted."""

    name: str
    peer: bool
    command: list[str]
    file: str
    file_bytes: int
    big_file: bool  # the measured binlog, not its 10 MiB prefix
    runs: list[Run] = field(default_factory=list)
    rows: int | None = None  # row changes it decoded, when it says so
    note: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.exit_code == 0 for r in self.runs)

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def cpu_seconds(self) -> float:
        return statistics.median(r.cpu_seconds for r in self.runs)

    @property
    def peak_rss_mib(self) -> float:
        return max(r.peak_rss_kib for r in self.runs) / 1024

    def summary(self, row_changes: int | None) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "peer": self.peer,
            "command": self.command,
            "file": self.file,
            "file_bytes": self.file_bytes,
            "big_file": self.big_file,
            "ok": self.ok,
            "note": self.note,
            "rows_counted": self.rows,
            "runs": [asdict(r) for r in self.runs],
        }
        if self.ok:
            d |= {
                "median_seconds": self.seconds,
                "median_cpu_seconds": self.cpu_seconds,
                "peak_rss_mib": self.peak_rss_mib,
                "mb_per_s": per(self.file_bytes / 1e6, self.seconds),
                "rows_per_s": per(row_changes, self.seconds),
                "mb_per_cpu_s": per(self.file_bytes / 1e6, self.cpu_seconds),
                "rows_per_cpu_s": per(row_changes, self.cpu_seconds),
            }
        return d


def per(amount: float | None, seconds: float) -> float | None:
    """``amount`` per second; ``None`` without an amount or below the clock's resolution (GNU time: 10 ms)."""
    return amount / seconds if amount and seconds > 0 else None


def _fmt(value: float | None, width: int, spec: str) -> str:
    return " " * (width - 1) + "-" if value is None else f"{value:{width}{spec}}"


def bench(
    name: str,
    make: Callable[[], list[str]],
    file: Path,
    runs: int,
    env: dict[str, str],
    *,
    peer: bool,
    big_file: bool,
    capture: bool = False,
) -> Result:
    """Run the command ``make()`` builds (anew for every run: ingest starts with an empty lake) ``runs`` times.

    Stops at the first failure; the last line of its stderr goes into the note.
    """
    res = Result(name, peer, [_shown(a) for a in make()], file.name, file.stat().st_size, big_file)
    for i in range(runs):
        run = measure(make(), env, capture=capture)
        res.runs.append(run)
        state = f"{run.seconds:8.2f} s  cpu {run.cpu_seconds:7.2f} s  peak {run.peak_rss_kib / 1024:7.1f} MiB"
        print(f"  {name:<34} run {i + 1}/{runs}: {state}" + ("" if run.exit_code == 0 else "  FAILED"), flush=True)
        if run.exit_code != 0:
            res.note = f"exit {run.exit_code}: " + run.error.strip().splitlines()[-1] if run.error.strip() else ""
            break
        if run.output is not None:
            res.rows = int(run.output["rows"])
    return res


def _shown(arg: str) -> str:
    """An argument as printed and recorded: our interpreter as ``python``, paths by their file name."""
    if arg == sys.executable:
        return "python"
    return Path(arg).name if os.sep in arg and Path(arg).exists() else arg


# -- the binlog ---------------------------------------------------------------------------------------------


def generate(server: MariaDBServer, transactions: int) -> Path:
    """Write ``transactions`` transactions of ``workload_big.sql`` into one fresh binlog and return its path."""
    server.execute((HERE / "workload_big.sql").read_text("utf-8"))
    server.flush_logs()
    first = server.current_binlog()
    start = time.perf_counter()
    server.execute(f"CALL binlake_bench.generate({transactions}, {SEED})", timeout=24 * 3600)
    server.flush_logs()
    written = [f for f in server.binlog_files() if f.name >= first.name][:-1]
    if len(written) != 1:
        raise SystemExit(f"the workload spread over {len(written)} binlogs (over --max-binlog-size): use a lower scale")
    print(
        f"generated {transactions} transactions in {time.perf_counter() - start:.1f} s: "
        f"{first.name}, {first.stat().st_size / MIB:.1f} MiB",
        flush=True,
    )
    return first


def adopt(server: MariaDBServer, binlog: Path) -> Path:
    """Copy an existing binlog into the (stopped, then restarted) server's datadir as its next-to-last file.

    The server serves any file listed in its index (``<basename>.index``) to a replica; at start it opens a new
    file after the last one listed, so the adopted file is complete and closed.
    """
    server.stop()
    index = server.datadir / f"{server.binlog_basename}.index"
    lines = index.read_text("utf-8").splitlines()
    number = int(lines[-1].rsplit(".", 1)[1]) + 1
    target = server.datadir / f"{server.binlog_basename}.{number:06d}"
    shutil.copyfile(binlog, target)
    folder = lines[-1].rsplit("/", 1)[0] + "/" if "/" in lines[-1] else ""
    index.write_text("\n".join([*lines, folder + target.name]) + "\n", "utf-8")
    server.start()
    return target


def cut_prefix(binlog: Path, target: Path, size: int) -> Path:
    """Write the first transactions of ``binlog`` (at least ``size`` bytes, ending after a COMMIT) to ``target``."""
    end = binlog.stat().st_size
    for h in walk_headers(binlog):
        if h.type_code == XID_EVENT and h.pos + h.size >= size:
            end = h.pos + h.size
            break
    with binlog.open("rb") as src, target.open("wb") as dst:
        remaining = end
        while remaining:
            chunk = src.read(min(remaining, 8 * MIB))
            dst.write(chunk)
            remaining -= len(chunk)
    return target


def warm(path: Path) -> None:
    """Read the file once so every tool starts with it in the page cache."""
    with path.open("rb") as f:
        while f.read(8 * MIB):
            pass


# -- workers: run in a child process by `run.py --worker ...` -----------------------------------------------


def worker_decode(path: str, typed: bool, profile: str | None) -> dict[str, Any]:
    """Decode every event and every value of every row (``RowsEvent.iter_rows``); count them."""
    from binlake.events.rows import RowsEvent
    from binlake.reader import read_events

    def walk() -> dict[str, Any]:
        events = rows = values = 0
        for ev in read_events(path):
            events += 1
            if isinstance(ev, RowsEvent):
                for before, after in ev.iter_rows(typed):
                    rows += 1
                    if before is not None:
                        values += len(before)
                    if after is not None:
                        values += len(after)
        return {"events": events, "rows": rows, "values": values}

    if profile is None:
        return walk()
    import cProfile

    prof = cProfile.Profile()
    counts = prof.runcall(walk)
    prof.dump_stats(profile)
    return counts


def worker_pmr(port: int, log_file: str) -> dict[str, Any]:
    """python-mysql-replication: stream ``log_file`` from the server and read every value of every row."""
    from pymysqlreplication import BinLogStreamReader  # type: ignore[import-untyped]
    from pymysqlreplication.row_event import (  # type: ignore[import-untyped]
        DeleteRowsEvent,
        UpdateRowsEvent,
        WriteRowsEvent,
    )

    stream = BinLogStreamReader(
        connection_settings={"host": "127.0.0.1", "port": port, "user": REPL_USER, "passwd": REPL_PASSWORD},
        server_id=4242,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        blocking=False,
        log_file=log_file,
        log_pos=4,
        resume_stream=True,
    )
    rows = values = 0
    try:
        for ev in stream:
            if stream.log_file != log_file:
                break
            for row in ev.rows:
                rows += 1
                for key in ("values", "before_values", "after_values"):
                    image = row.get(key)
                    if image is not None:
                        for _value in image.values():
                            values += 1
    finally:
        stream.close()
    return {"rows": rows, "values": values}


# -- the report -----------------------------------------------------------------------------------------------


def report(results: list[Result], row_changes: int | None) -> dict[str, dict[str, dict[str, float]]]:
    """Print the table; return ``{"wall"|"cpu": {binlake command: {peer: peer seconds / binlake seconds}}}``."""
    print()
    head = (
        f"{'command':<34} {'MiB':>6} {'wall s':>8} {'cpu s':>8} {'rows/s':>10} {'rows/cpu-s':>10} {'MB/s':>7} "
        f"{'MB/cpu-s':>8} {'peak MiB':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        if not r.ok:
            print(f"{r.name:<34} {r.file_bytes / MIB:6.1f}   not measured: {r.note}")
            continue
        rows = row_changes if r.big_file else r.rows
        mb = r.file_bytes / 1e6
        print(
            f"{r.name:<34} {r.file_bytes / MIB:6.1f} {r.seconds:8.2f} {r.cpu_seconds:8.2f} "
            f"{_fmt(per(rows, r.seconds), 10, ',.0f')} {_fmt(per(rows, r.cpu_seconds), 10, ',.0f')} "
            f"{_fmt(per(mb, r.seconds), 7, '.1f')} {_fmt(per(mb, r.cpu_seconds), 8, '.1f')} {r.peak_rss_mib:8.1f}"
        )
    peers = [r for r in results if r.peer and r.ok and r.big_file]
    ours = [r for r in results if not r.peer and r.ok and r.big_file]
    ratios = {
        "wall": {b.name: {p.name: p.seconds / b.seconds for p in peers} for b in ours},
        "cpu": {b.name: {p.name: p.cpu_seconds / max(b.cpu_seconds, 0.01) for p in peers} for b in ours},
    }
    for clock, what in (("wall", "median wall seconds"), ("cpu", "median CPU seconds")):
        if not (peers and ours):
            break
        print(f"\nbinlake's speed relative to each peer by {what} (peer / binlake; > 1: binlake is faster)")
        print(f"{'':<34}" + "".join(f" {p.name[:22]:>22}" for p in peers))
        for b in ours:
            print(f"{b.name:<34}" + "".join(f" {ratios[clock][b.name][p.name]:>21.2f}x" for p in peers))
    return ratios


def report_scaling(results: list[Result]) -> dict[str, float]:
    """Print and return each ingest's speed-up over the one-core run of its kind: ``local[N]`` over ``local[1]``,
    ``cluster:N`` over ``cluster:1`` (median wall seconds)."""
    ingests = {
        r.name.removeprefix("binlake ingest "): r for r in results if r.ok and r.name.startswith("binlake ingest")
    }
    out: dict[str, float] = {}
    for spec, r in ingests.items():
        base = ingests.get("cluster:1" if spec.startswith("cluster:") else "local[1]")
        if base is not None and base is not r:
            out[spec] = base.seconds / r.seconds
    if out:
        print("\nbinlake ingest scaling (wall seconds of the one-core run of its kind / this run's)")
        for spec, x in out.items():
            print(f"  {spec:<12} {x:5.2f}x")
    return out


def print_profile(stats_file: Path, top: int) -> list[dict[str, Any]]:
    """The ``top`` functions by own time of a cProfile dump, printed and returned."""
    import pstats

    st = pstats.Stats(str(stats_file))
    total = st.total_tt  # type: ignore[attr-defined]
    entries = []
    for (filename, line, func), (cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        where = f"{Path(filename).name}:{line}" if line else filename
        entries.append(
            {
                "function": f"{where}({func})",
                "calls": nc,
                "primitive_calls": cc,
                "tottime": tt,
                "cumtime": ct,
                "share": tt / total if total else 0.0,
            }
        )
    entries.sort(key=lambda e: -e["tottime"])
    print(f"\ncProfile of binlake decode (typed), total {total:.2f} s; top {top} by own time:")
    print(f"{'own s':>8} {'share':>6} {'cum s':>8} {'calls':>11}  function")
    for e in entries[:top]:
        print(f"{e['tottime']:8.2f} {e['share']:6.1%} {e['cumtime']:8.2f} {e['calls']:11,}  {e['function']}")
    return entries[:top]


# -- main -----------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--scale", type=float, default=0.05, help="1.0 = 110000 transactions, ~1 GiB (default 0.05)")
    p.add_argument("--runs", type=int, default=3, help="runs of each command; the median is reported (default 3)")
    p.add_argument("--json", type=Path, metavar="OUT", help="write every figure and run to this JSON file")
    p.add_argument("--keep", type=Path, metavar="DIR", help="keep the server's datadir (with the binlog) under DIR")
    p.add_argument("--binlog", type=Path, metavar="FILE", help="measure this existing binlog instead of generating")
    p.add_argument("--profile", type=int, metavar="N", default=0, help="cProfile binlake's decode, print top N")
    p.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="NAME",
        help="leave out commands whose name contains NAME (repeatable), e.g. --skip ingest",
    )
    p.add_argument("--master", default="local[2]", help="Spark master of binlake ingest (default local[2])")
    p.add_argument(
        "--ingest-on",
        action="append",
        default=[],
        metavar="SPEC",
        help="measure binlake ingest on this master instead (repeatable): local[N], or cluster:N for a standalone "
        "cluster of N one-core workers started for it",
    )
    p.add_argument(
        "--live",
        action="store_true",
        help="measure the readers of a live server instead: binlake tail --no-follow against mariadb-binlog "
        "--read-from-remote-server -vv and python-mysql-replication",
    )
    p.add_argument("--worker-memory", default="2g", help="memory of each worker of a cluster:N (default 2g)")
    p.add_argument("--worker", choices=("decode", "decode-raw", "pmr"), help=argparse.SUPPRESS)
    p.add_argument("--worker-arg", action="append", default=[], help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        wa = args.worker_arg
        if args.worker == "pmr":
            out = worker_pmr(int(wa[0]), wa[1])
        else:
            out = worker_decode(wa[0], args.worker == "decode", wa[1] if len(wa) > 1 else None)
        print(json.dumps(out))
        return 0
    if find_tool("mariadb-binlog") is None:
        raise SystemExit("mariadb-binlog not found: apt-get install -y mariadb-server mariadb-client")
    env = dict(os.environ)
    # the benchmark's own replication user: binlake reads its password from the environment, mariadb-binlog too
    env["BINLAKE_PASSWORD"] = env["MYSQL_PWD"] = REPL_PASSWORD
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    # every measured process loads binlake's bytecode as an installed package does (under PYTHONDONTWRITEBYTECODE,
    # stale .pyc files would make each process, and each Spark worker, compile the changed modules again)
    compileall.compile_dir(SRC / "binlake", quiet=1)

    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="binlake-bench-")))
        keep: Path | None = args.keep
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        server = MariaDBServer(
            SERVER_ARGS, buffer_pool=BUFFER_POOL, base_dir=keep / "server" if keep is not None else None
        )
        stack.enter_context(server)
        if args.binlog is not None:
            big = adopt(server, args.binlog.resolve())
            transactions = None
        else:
            transactions = max(1, round(FULL_SCALE_TRANSACTIONS * args.scale))
            big = generate(server, transactions)
        server.execute(
            f"SET sql_log_bin=0; CREATE USER {REPL_USER}@'127.0.0.1' IDENTIFIED BY '{REPL_PASSWORD}'; "
            f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO {REPL_USER}@'127.0.0.1'; SET sql_log_bin=1"
        )
        small = cut_prefix(big, (keep or work) / "prefix-10MiB.binlog", SMALL_FILE_BYTES)
        print(
            f"binlog: {big} ({big.stat().st_size / MIB:.1f} MiB); prefix: {small.stat().st_size / MIB:.1f} MiB",
            flush=True,
        )
        warm(big)
        warm(small)

        me = [sys.executable, str(Path(__file__).resolve())]
        mb = find_tool("mariadb-binlog") or "mariadb-binlog"
        lake = work / "lake"

        clusters: dict[str, StandaloneCluster] = {}  # spec -> the cluster its runs use (started when they start)

        def ingest_cmd(spec: str) -> Callable[[], list[str]]:
            def make() -> list[str]:
                shutil.rmtree(lake, ignore_errors=True)
                master = spec
                if spec.startswith("cluster:"):
                    if spec not in clusters:
                        for other in list(clusters):  # one cluster at a time on the machine
                            clusters.pop(other).__exit__(None, None, None)
                        cluster = StandaloneCluster(int(spec.split(":", 1)[1]), memory=args.worker_memory)
                        clusters[spec] = stack.enter_context(cluster)
                    master = clusters[spec].url
                return [sys.executable, "-m", "binlake", "ingest", str(big), "--lake", str(lake), "--master", master]

            return make

        # executors of a cluster start the driver's interpreter (binlake's, with its packages); the cluster and its
        # driver talk over the loopback address, as StandaloneCluster's processes do
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

        plan: list[tuple[str, bool, Callable[[], list[str]], Path, bool]] = [
            ("mariadb-binlog", True, lambda: [mb, "--no-defaults", str(big)], big, False),
            (
                "mariadb-binlog -vv DECODE-ROWS",
                True,
                lambda: [mb, "--no-defaults", "--base64-output=DECODE-ROWS", "-vv", str(big)],
                big,
                False,
            ),
            (
                "python-mysql-replication",
                True,
                lambda: [*me, "--worker", "pmr", "--worker-arg", str(server.port), "--worker-arg", big.name],
                big,
                True,
            ),
            ("binlake decode (typed)", False, lambda: [*me, "--worker", "decode", "--worker-arg", str(big)], big, True),
            (
                "binlake decode (raw)",
                False,
                lambda: [*me, "--worker", "decode-raw", "--worker-arg", str(big)],
                big,
                True,
            ),
            ("binlake dump", False, lambda: [sys.executable, "-m", "binlake", "dump", str(big)], big, False),
            (
                "binlake changes --format sql",
                False,
                lambda: [sys.executable, "-m", "binlake", "changes", "--format", "sql", str(big)],
                big,
                False,
            ),
            (
                "binlake changes --format debezium",
                False,
                lambda: [sys.executable, "-m", "binlake", "changes", str(big)],
                big,
                False,
            ),
            ("binlake stats", False, lambda: [sys.executable, "-m", "binlake", "stats", str(big)], big, False),
            *(
                (f"binlake ingest {spec}", False, ingest_cmd(spec), big, False)
                for spec in args.ingest_on or [args.master]
            ),
            (
                "binlake decode (typed) 10 MiB",
                False,
                lambda: [*me, "--worker", "decode", "--worker-arg", str(small)],
                small,
                True,
            ),
        ]
        remote = ["--host", "127.0.0.1", "--port", str(server.port), "--user", REPL_USER]
        tail = [sys.executable, "-m", "binlake", "tail", *remote, "--server-id", "4343", "--from", big.name]
        named = {entry[0]: entry for entry in plan}
        live: list[tuple[str, bool, Callable[[], list[str]], Path, bool]] = [
            (
                "mariadb-binlog remote -vv",
                True,
                lambda: [
                    mb,
                    "--no-defaults",
                    "--read-from-remote-server",
                    *remote,
                    "--base64-output=DECODE-ROWS",
                    "-vv",
                    big.name,
                ],
                big,
                False,
            ),
            named["python-mysql-replication"],  # streams from the server too
            ("binlake tail --no-follow", False, lambda: [*tail, "--no-follow"], big, False),
            (
                "binlake tail --no-follow debezium",
                False,
                lambda: [*tail, "--no-follow", "--format", "debezium"],
                big,
                False,
            ),
            named["binlake decode (typed)"],  # counts the row changes
        ]
        if args.live:
            plan = live
        results: list[Result] = []
        for name, peer, make, file, capture in plan:
            if any(s in name for s in args.skip):
                continue
            results.append(bench(name, make, file, args.runs, env, peer=peer, big_file=file == big, capture=capture))

        counted = {r.name: r.rows for r in results if r.rows is not None and r.big_file}
        row_changes = counted.get("binlake decode (typed)") or next(iter(counted.values()), None)
        if len(set(counted.values())) > 1:
            print(f"WARNING: the decoders counted different numbers of row changes: {counted}", flush=True)
        ratios = report(results, row_changes)
        scaling = report_scaling(results)
        profile: list[dict[str, Any]] = []
        if args.profile:
            stats_file = work / "decode.pstats"
            run = measure([*me, "--worker", "decode", "--worker-arg", str(big), "--worker-arg", str(stats_file)], env)
            if run.exit_code == 0:
                profile = print_profile(stats_file, args.profile)
            else:
                print(f"profile failed: {run.error}")
        if args.json is not None:
            doc = {
                "scale": args.scale if args.binlog is None else None,
                "transactions": transactions,
                "binlog": big.name,
                "binlog_bytes": big.stat().st_size,
                "prefix_bytes": small.stat().st_size,
                "row_changes": row_changes,
                "rows_counted": counted,
                "runs_per_command": args.runs,
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
                "results": [r.summary(row_changes if r.big_file else r.rows) for r in results],
                "speed_vs_peers": ratios,
                "ingest_scaling": scaling,
                "profile_top": profile,
            }
            args.json.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
            print(f"\nwrote {args.json}")
        if keep is not None:
            print(f"kept the server's datadir: {big} (reuse with --binlog)")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
