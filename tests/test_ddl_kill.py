"""kill -9 inside an ALTER TABLE's rewrite of a current-state table, for real: an ingest in a child process, its
batch holding ALTERs that change column types (every live file of the table rewritten, binlake.lake.alter) among
row changes, is SIGKILLed at moments spread over its ``current`` step (where the rewrite runs), run again after
each kill, then to its end.  The lake then equals one no kill touched, table by table and row by row, and its
current state equals the server's ``SELECT`` through every reader (tests/test_random_batches.py's checks)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from tests.test_random_batches import _check_current, _child, _content, _ingest_child, _land, server

from binlake.lake import Lake

__all__ = ["server"]  # (the module's server fixture, shared)

pytestmark = pytest.mark.server
ROWS = 200_000  # a rewrite of about a second in one process: room for kills inside it
KILLS = 4


def _current_seconds(sources: Path, lake: Path) -> float:
    """The ``current`` step's seconds of an ingest of ``sources`` into (a copy of) ``lake``, as it reports them."""
    probe = lake.parent / "probe"
    shutil.copytree(lake, probe)
    proc = _child(sources, probe)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-3000:]
    found = re.findall(r"current: done in ([\d.]+) s", out)
    assert found, out[-3000:]
    shutil.rmtree(probe)
    return float(found[-1])


def test_kill_9_inside_an_alter_rewrite(server: object, tmp_path: Path) -> None:
    from binlake.testing.mariadb import MariaDBServer

    assert isinstance(server, MariaDBServer)
    sources, clean, killed = tmp_path / "binlogs", tmp_path / "clean", tmp_path / "killed"
    sources.mkdir()
    server.execute(
        "CREATE DATABASE dk; CREATE TABLE dk.t (id INT PRIMARY KEY, a INT, c DECIMAL(10,2), s VARCHAR(20));"
        f"INSERT INTO dk.t SELECT seq, seq % 1000, seq / 7, CONCAT('r', seq) FROM dk.seq_1_to_{ROWS}"
    )
    _land(server, sources, clean)
    _ingest_child(sources, killed)
    server.execute(
        "UPDATE dk.t SET s = 'before' WHERE id % 997 = 0;"
        "ALTER TABLE dk.t MODIFY c VARCHAR(20), MODIFY a BIGINT;"  # (DECIMAL to its text, INT to BIGINT)
        "UPDATE dk.t SET c = CONCAT(c, '!') WHERE id % 991 = 0; DELETE FROM dk.t WHERE id % 983 = 0;"
        "ALTER TABLE dk.t ADD COLUMN z INT DEFAULT 5 FIRST, MODIFY s VARCHAR(40);"
        "INSERT INTO dk.t (id, a, c, s) VALUES (0, 1, 'new', 'after')"
    )
    _land(server, sources, clean)
    _check_current(server, Lake(str(clean)), 2, "dk")
    seconds = _current_seconds(sources, killed)
    outcomes = []
    for k in range(KILLS):
        proc = _child(sources, killed)
        assert proc.stdout is not None
        seen = ""
        while line := proc.stdout.readline():  # the commit of the change tables: the current step comes next
            seen = line.strip()
            if "commit: done" in line:
                break
        time.sleep(seconds * (k + 0.5) / KILLS)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            outcomes.append("killed")
        else:
            outcomes.append("ended")
        rest = proc.stdout.read()
        proc.stdout.close()
        assert proc.wait() in (0, -signal.SIGKILL), rest[-3000:]
        outcomes[-1] += f" after {seen!r}"
    print(f"current step {seconds:.2f} s; kills: {outcomes}")
    assert sum(o.startswith("killed") for o in outcomes) >= 2, outcomes
    _ingest_child(sources, killed)
    assert _content(Lake(str(killed))) == _content(Lake(str(clean)))
    _check_current(server, Lake(str(killed)), 2, "dk")
