"""``binlake dump`` with the shared filters prints what ``mariadb-binlog`` prints where both filter the same way:
one ``--database``, one ``--table``, ``--start-position``/``--stop-position`` and ``--start-datetime``/
``--stop-datetime``, on every binlog the workloads wrote; and GTID sets keep the transactions that
``mariadb-binlog``'s GTID positions keep, printed the same."""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path

import pytest

from binlake.changes.filters import ChangeFilter, parse_gtids
from binlake.reader import walk_headers
from binlake.render.dump import DumpOptions, dump
from binlake.testing.mariadb import WorkloadBinlogs

pytestmark = pytest.mark.server

LOAD_FILE = re.compile(rb"'[^']*/SQL_LOAD_MB-[0-9a-f]+-[0-9a-f]+'")
FORWARD = ["--base64-output=DECODE-ROWS", "-vv", "--print-table-metadata"]


def _ours(path: Path, f: ChangeFilter) -> bytes:
    out = io.BytesIO()
    assert dump([str(path)], DumpOptions(filter=f), out) == 0
    return LOAD_FILE.sub(b"'LOADFILE'", out.getvalue())


def _theirs(wb: WorkloadBinlogs, path: Path, args: list[str]) -> tuple[int, bytes]:
    rc, out, _ = wb.server.mariadb_binlog([*FORWARD, *args], path)
    return rc, LOAD_FILE.sub(b"'LOADFILE'", out)


def _local(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def test_filters_print_as_mariadb_binlog(workload_binlogs: WorkloadBinlogs) -> None:
    compared = 0
    for path in workload_binlogs.files:
        headers = list(walk_headers(path))
        mid = headers[len(headers) // 3].pos
        end = headers[2 * len(headers) // 3].pos
        stamps = sorted({h.timestamp for h in headers})
        cases: list[tuple[list[str], ChangeFilter]] = [
            (["--database=corpus_dml"], ChangeFilter(databases=("corpus_dml",))),
            (["--database=corpus_types"], ChangeFilter(databases=("corpus_types",))),
            (["--table=accounts"], ChangeFilter(tables=("accounts",))),
            (["--table=t_int"], ChangeFilter(tables=("t_int",))),
            (["--database=corpus_dml", "--table=ledger"], ChangeFilter(databases=("corpus_dml",), tables=("ledger",))),
            (
                [f"--start-position={mid}", f"--stop-position={end}"],
                ChangeFilter(start_position=mid, stop_position=end),
            ),
            (
                [f"--start-datetime={_local(stamps[len(stamps) // 2])}"],
                ChangeFilter(start_datetime=stamps[len(stamps) // 2]),
            ),
            ([f"--stop-datetime={_local(stamps[-1])}"], ChangeFilter(stop_datetime=stamps[-1])),
        ]
        for args, f in cases:
            rc, theirs = _theirs(workload_binlogs, path, args)
            ours = _ours(path, f)
            if rc == 0:
                assert ours.split(b"\n") == theirs.split(b"\n"), (path.name, args)
            else:  # the tool stopped (MariaDB 5.3 temporals): what it printed is binlake's start
                lines = theirs.split(b"\n")[:-1]
                assert ours.split(b"\n")[: len(lines)] == lines, (path.name, args)
            compared += 1
    assert compared > 50


def test_gtid_sets_keep_what_gtid_positions_keep(workload_binlogs: WorkloadBinlogs) -> None:
    """``--exclude-gtids 0-1-A --include-gtids 0-1-B`` prints the transactions A+1..B as ``mariadb-binlog
    --start-position=0-1-A --stop-position=0-1-B`` prints them (the tool's GTID mode also leaves out the events
    between transactions and ends with two SETs that restore the session's server and domain ids)."""
    path = next(p for p in workload_binlogs.by_workload["dml"])
    ours_all = _ours(path, ChangeFilter()).decode("utf-8", "surrogateescape")
    seqs = [int(m) for m in re.findall(r"GTID 0-1-(\d+)", ours_all)]
    lo, hi = seqs[5], seqs[-5]
    rc, theirs = _theirs(workload_binlogs, path, [f"--start-position=0-1-{lo}", f"--stop-position=0-1-{hi}"])
    assert rc == 0
    f = ChangeFilter(include_gtids=parse_gtids(f"0-1-{hi}"), exclude_gtids=parse_gtids(f"0-1-{lo}"))
    ours = _ours(path, f).split(b"\n")
    restore = {
        b"/*!100001 SET @@SESSION.SERVER_ID=@@GLOBAL.SERVER_ID */;",
        b"/*!100001 SET @@SESSION.GTID_DOMAIN_ID=@@GLOBAL.GTID_DOMAIN_ID */;",
    }
    lines = [line for line in theirs.split(b"\n") if line not in restore]
    it = iter(ours)
    assert all(line in it for line in lines)  # every line of the tool's, in order, in binlake's
    kept = [int(m) for m in re.findall(rb"GTID 0-1-(\d+)", b"\n".join(ours))]
    assert kept == [s for s in seqs if lo < s <= hi]
