"""``binlake dump`` against ``mariadb-binlog`` on the binlogs a real MariaDB writes during this test run.

The session's server runs ``tests/workloads/*.sql`` (fixture ``workload_binlogs``); every binlog it wrote is
printed by both tools, forward (``--base64-output=DECODE-ROWS -vv --print-table-metadata``) and as the undo
(``--flashback --base64-output=DECODE-ROWS -vv``).  Both run on this machine, so both print the same local times:
the whole text must be equal, but for the name of the LOAD DATA file ``mariadb-binlog`` creates in its tmpdir.

Where ``mariadb-binlog`` fails (exit code 1: MariaDB 5.3 temporal columns, ``--flashback`` of MINIMAL images),
what it printed before failing must be the start of binlake's text.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from binlake.errors import BinlogError
from binlake.render.dump import DumpOptions, dump
from binlake.testing.mariadb import WorkloadBinlogs

pytestmark = pytest.mark.server

LOAD_FILE = re.compile(rb"'[^']*/SQL_LOAD_MB-[0-9a-f]+-[0-9a-f]+'")
DATA_LINE = re.compile(rb"^(# at |# Columns\(|#         |# Primary Key\(|###)")

FORWARD = ["--base64-output=DECODE-ROWS", "-vv", "--print-table-metadata"]
FLASHBACK = ["--flashback", "--base64-output=DECODE-ROWS", "-vv"]


def _binlake(path: Path, flashback: bool) -> tuple[int, bytes]:
    out = io.BytesIO()
    try:
        rc = dump([str(path)], DumpOptions(flashback=flashback, table_metadata=not flashback), out)
    except BinlogError as e:
        rc = e.exit_status
    return rc, LOAD_FILE.sub(b"'LOADFILE'", out.getvalue())


def _compare(workload_binlogs: WorkloadBinlogs, flashback: bool) -> dict[str, int]:
    """Compare every file; return the number of equal data lines per file."""
    matched: dict[str, int] = {}
    assert workload_binlogs.files
    for path in workload_binlogs.files:
        rc, out, err = workload_binlogs.server.mariadb_binlog(FLASHBACK if flashback else FORWARD, path)
        ref = LOAD_FILE.sub(b"'LOADFILE'", out)
        ours_rc, ours = _binlake(path, flashback)
        if rc == 0:
            assert ours_rc == 0, path.name
            assert ours.split(b"\n") == ref.split(b"\n"), path.name
        else:
            # the tool stopped (its error: err); everything it printed is binlake's too, and binlake goes on
            ref_lines = ref.split(b"\n")[:-1]
            assert ours.split(b"\n")[: len(ref_lines)] == ref_lines, (path.name, err)
            assert ours_rc == 0 and len(ours) > len(ref), (path.name, err)
        matched[path.name] = sum(1 for line in ours.split(b"\n") if DATA_LINE.match(line))
    return matched


def test_dump_equals_mariadb_binlog(workload_binlogs: WorkloadBinlogs) -> None:
    matched = _compare(workload_binlogs, flashback=False)
    assert sum(matched.values()) > 1000


def test_flashback_equals_mariadb_binlog(workload_binlogs: WorkloadBinlogs) -> None:
    matched = _compare(workload_binlogs, flashback=True)
    assert sum(matched.values()) > 500


def test_temporal_old_decodes_whole(workload_binlogs: WorkloadBinlogs) -> None:
    """MariaDB 5.3 TIME(n)/DATETIME(n)/TIMESTAMP(n) columns are logged as types 11/12/7 with no precision, so
    mariadb-binlog cannot size them and stops; binlake takes the precision from the CREATE TABLE it read earlier in
    the log (binlake.schema) and decodes every row."""
    for path in workload_binlogs.by_workload["temporal_old"]:
        rc, out = _binlake(path, flashback=False)
        assert rc == 0 and b"### INSERT INTO `" in out
