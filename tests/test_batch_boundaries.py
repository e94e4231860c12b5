"""Where batches are cut does not change the lake: the same statements, landed as one batch and as a batch after
each statement, give the same tables (a keyed table that had row changes has a current state, empty or not; one
that never had any has none, whatever DDL names it) and the same current rows.  (A live ingest cuts batches where
its interval falls: its lake lacked an empty current table a one-batch ingest of the same binlogs had, an Aria
table whose INSERT and DELETE fell in one batch after the DROP DATABASE before them.)"""

from __future__ import annotations

import io
import itertools
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.test_random_batches import server

from binlake.ingest.progress import Progress
from binlake.ingest.run import ingest
from binlake.lake import Lake, delta
from binlake.lake.runner import InProcessRunner

__all__ = ["server"]  # (the module's server fixture, shared)

pytestmark = pytest.mark.server
STATEMENTS = [
    "DROP DATABASE IF EXISTS bb",
    "CREATE DATABASE bb",
    "CREATE TABLE bb.aria (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=Aria",
    "CREATE TABLE bb.inno (id INT PRIMARY KEY, v VARCHAR(10))",
    "CREATE TABLE bb.never (id INT PRIMARY KEY)",  # no row ever
    "CREATE TABLE bb.nokey (v INT)",
    "INSERT INTO bb.aria VALUES (1, 'a')",
    "DELETE FROM bb.aria WHERE id = 1",  # net empty
    "INSERT INTO bb.inno VALUES (1, 'x'), (2, 'y')",
    "TRUNCATE TABLE bb.never",
    "INSERT INTO bb.nokey VALUES (1)",
    "RENAME TABLE bb.inno TO bb.inno2",
    "UPDATE bb.inno2 SET v = 'z' WHERE id = 2",
    "CREATE TABLE bb.gone (id INT PRIMARY KEY)",
    "INSERT INTO bb.gone VALUES (7)",
    "DROP TABLE bb.gone",
    "CREATE TABLE bb.gone (id INT PRIMARY KEY)",
    "TRUNCATE TABLE bb.inno2",
    "INSERT INTO bb.inno2 VALUES (3, 'w')",
]


def _shape(lake: Path) -> dict[tuple[str, str], Any]:
    """Each table of the lake: a current state's rows (the columns binlake adds left out), a change table's
    operations."""
    out: dict[tuple[str, str], Any] = {}
    for t in Lake(str(lake)).tables():
        if not t.name.startswith("bb."):
            continue
        data = delta.read_table(t.location)
        rows = [] if data is None else data.to_pylist()
        if t.kind == "current":
            out[(t.name, t.kind)] = sorted(repr({k: v for k, v in r.items() if not k.startswith("_")}) for r in rows)
        else:
            out[(t.name, t.kind)] = sorted(str(r["_op"]) for r in rows)
    return out


def _ingest(files: list[Path], cuts: list[int], root: Path) -> Path:
    """A lake of ``files`` landed in batches that end before each of ``cuts`` (indexes into ``files``)."""
    sources, lake = root / "binlogs", root / "lake"
    sources.mkdir(parents=True)
    for lo, hi in itertools.pairwise([0, *cuts, len(files)]):
        for f in files[lo:hi]:
            shutil.copyfile(f, sources / f.name)
        ingest(InProcessRunner(), [str(sources)], str(lake), progress=Progress(None, io.StringIO()))
    return lake


def test_where_batches_are_cut_does_not_change_the_lake(server: Any, tmp_path: Path) -> None:
    server.flush_logs()
    first = len(server.binlog_files()) - 1  # (the files before: the server's start and other tests')
    for sql in STATEMENTS:
        server.execute(sql)
        server.flush_logs()  # (a file per statement: batches are cut between any two)
    files = server.binlog_files()[first:-1]
    assert len(files) == len(STATEMENTS)
    want = _shape(_ingest(files, [], tmp_path / "one"))
    rng = random.Random(23)
    cuttings = [list(range(1, len(files))), [2, 8]]  # each statement; the live ingest's (DROP DATABASE apart)
    cuttings += [sorted(rng.sample(range(1, len(files)), rng.randint(1, 6))) for _ in range(4)]
    for i, cuts in enumerate(cuttings):
        assert _shape(_ingest(files, cuts, tmp_path / f"cut{i}")) == want, cuts
    current = {name for name, kind in want if kind == "current"}
    assert current == {"bb.aria", "bb.inno", "bb.inno2", "bb.gone"}, current  # (never: no row; nokey: no key)
    assert want[("bb.aria", "current")] == [] and want[("bb.gone", "current")] == []
    assert want[("bb.inno2", "current")] == [repr({"id": 3, "v": "w"})]
