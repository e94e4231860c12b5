"""Many batches of a random workload on a real server, each its own binlog and its own ingest: the current state
equals the server's ``SELECT *`` through every reader, and a lake whose ingests were killed (``kill -9``) at random
moments equals the clean one (issue 22's correctness run).

:mod:`tests.test_current` checks the current-state engine against a model with staged change files; this test checks the
whole path against the oracle: a private MariaDB runs a seeded random workload per batch (inserts, updates, deletes,
primary-key changes, TRUNCATE, RENAME TABLE, rolled-back transactions and savepoints, XA transactions prepared then
rolled back or committed, in the same batch or the next (alone in it a quarter of the time), ALTER TABLE on both tables:
ADD COLUMN plain, with a DEFAULT, FIRST or AFTER a column, DROP COLUMN, RENAME COLUMN, MODIFY widening (INT to BIGINT,
VARCHAR(n) to VARCHAR(2n), DECIMAL(p,s) to DECIMAL(p+4,s+1)) and to VARCHAR (from INT, BIGINT, DECIMAL: kinds that
convert exactly, docs/formats/lake.md "After ALTER TABLE"), keys never altered, a row change of the table after it half
the time and the batch ended by it a quarter of the time), ends each batch with ``FLUSH BINARY LOGS``, and each batch is
one :func:`binlake.ingest.run.ingest` of the binlog folder (tasks in this process:
:class:`~binlake.lake.runner.InProcessRunner`, no Spark). Every tenth batch and at the end each table's current state
equals ``SELECT *`` cell by cell (the same columns in the same order, each of the Arrow type the server's column maps
to) through :func:`binlake.lake.delta.read_table`, every reader of :mod:`binlake.testing.readers` (deltalake's SQL
engine, polars, DuckDB's Delta extension) and ``Lake.tables()``'s row count.

The same binlogs go into a second lake batch by batch, some batches' ingest (a child process) killed with SIGKILL
after a seeded random delay, then run again; at every check that lake equals the clean one table by table, row by
row (change tables, current states and the lake's own tables).

Each batch's SQL is kept in the test's ``tmp_path`` (``workload.sql``) to replay a failure.

``BINLAKE_RANDOM_BATCHES`` sets the number of batches (default 40, a few minutes on 2 shared cores; the full run is
200, 20 minutes under load), ``BINLAKE_RANDOM_SEED`` the seed (default 22).  The full run::

    BINLAKE_RANDOM_BATCHES=200 python -m pytest -q -s tests/test_random_batches.py
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")

import pyarrow as pa

from binlake.ingest.progress import Progress
from binlake.ingest.run import ingest
from binlake.lake import delta
from binlake.lake.lake import Lake
from binlake.lake.runner import InProcessRunner
from binlake.testing import readers
from binlake.testing.mariadb import MariaDBError, MariaDBServer, missing_tools

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[1]
BATCHES = int(os.environ.get("BINLAKE_RANDOM_BATCHES", "40"))
SEED = int(os.environ.get("BINLAKE_RANDOM_SEED", "22"))
CHECK_EVERY = 10
KILL_SHARE = 0.3  # of the batches, whose first ingest into the second lake is killed
DB = "rb"
# the Arrow type of each (signed) server column type the workload uses, by DATA_TYPE of information_schema.COLUMNS
# (docs/formats/values.md: lake integers are int64 whatever their width)
ARROW = {"int": pa.int64(), "bigint": pa.int64(), "varchar": pa.string(), "datetime": pa.timestamp("us")}
CHILD = (
    "import sys\n"
    "from binlake.ingest.progress import Progress\n"
    "from binlake.ingest.run import ingest\n"
    "from binlake.lake.runner import InProcessRunner\n"
    "ingest(InProcessRunner(), [sys.argv[1]], sys.argv[2], progress=Progress(None, sys.stdout), wait=30)\n"
)
TEXT = "abcdefghij klmnopqrstuvwxyzé'\\ü"


@dataclass
class Column:
    """A non-key column of a workload table as the server has it now: its name and type."""

    name: str
    kind: str  # INT, BIGINT, VARCHAR, DECIMAL or DATETIME
    size: int = 0  # a VARCHAR's length, a DECIMAL's precision
    scale: int = 0  # a DECIMAL's scale

    def sql(self) -> str:
        if self.kind == "VARCHAR":
            return f"VARCHAR({self.size})"
        if self.kind == "DECIMAL":
            return f"DECIMAL({self.size},{self.scale})"
        return "DATETIME(6)" if self.kind == "DATETIME" else self.kind


# the ALTER TABLE kinds the workload draws (each converts exactly: docs/formats/lake.md "After ALTER TABLE")
ALTERS = ["ADD", "ADD DEFAULT", "ADD FIRST", "ADD AFTER", "DROP", "RENAME COLUMN", "MODIFY wider", "MODIFY to VARCHAR"]
MOST_COLUMNS = 9  # non-key columns of a table, beyond which no ADD is drawn


@dataclass
class Workload:
    """The seeded random workload's state between batches: the next new key, each table's name now and non-key
    columns (``t1``'s key ``id``, ``t2``'s ``k1, k2``: never altered), an XA transaction left prepared by the last
    batch, the ALTERs done by kind."""

    rng: random.Random
    next_id: int = 1
    t2: str = "t2"
    columns: dict[str, list[Column]] = field(
        default_factory=lambda: {
            "t1": [Column("a", "BIGINT"), Column("b", "VARCHAR", 40), Column("c", "DECIMAL", 12, 3),
                   Column("d", "DATETIME")],
            "t2": [Column("n", "INT"), Column("s", "VARCHAR", 20)],
        }
    )  # fmt: skip
    names: int = 0
    pending: str | None = None
    xa: int = 0
    carried: dict[str, int] = field(default_factory=dict)  # XA outcomes in the batch after the PREPARE
    alters: dict[str, int] = field(default_factory=dict)  # ALTERs by kind
    alone: int = 0  # ALTERs with no row change after them in their batch

    def key(self) -> int:
        self.next_id += 1
        return self.next_id

    def name(self, table: str) -> str:
        """The server's name of ``t1`` or ``t2`` now."""
        return f"{DB}.{self.t2 if table == 't2' else table}"

    def text(self, most: int) -> str:
        return "".join(self.rng.choice(TEXT) for _ in range(self.rng.randint(0, most)))

    def value(self, c: Column) -> str:
        """A random value of ``c``'s type as SQL (NULL one time in ten)."""
        r = self.rng
        if r.random() < 0.1:
            return "NULL"
        if c.kind == "INT":
            return str(r.randint(-(2**31), 2**31 - 1))
        if c.kind == "BIGINT":
            return str(r.randint(-(2**62), 2**62))
        if c.kind == "VARCHAR":
            return _quote(self.text(min(c.size, 40)))
        if c.kind == "DECIMAL":
            whole = 10 ** (c.size - c.scale) - 1
            return f"{r.randint(-whole, whole)}.{r.randint(0, 10**c.scale - 1):0{c.scale}d}"
        return _quote(_datetime(r))

    def insert(self, table: str, most: int) -> str:
        """An insert of 1 to ``most`` new rows, every column named."""
        keys = ["id"] if table == "t1" else ["k1", "k2"]
        cols = self.columns[table]

        def row() -> str:
            key = [str(self.key())] if table == "t1" else [str(self.key()), _quote(self.text(8))]
            return f"({', '.join(key + [self.value(c) for c in cols])})"

        names = ", ".join(keys + [c.name for c in cols])
        rows = ", ".join(row() for _ in range(self.rng.randint(1, most)))
        return f"INSERT INTO {self.name(table)} ({names}) VALUES {rows}"

    def sets(self, table: str) -> str:
        """Some of ``table``'s non-key columns set to new values (a BIGINT sometimes by arithmetic)."""
        r = self.rng
        sets = [f"{c.name} = {c.name} + {r.randint(1, 99)}" if c.kind == "BIGINT" and r.random() < 0.5
                else f"{c.name} = {self.value(c)}" for c in self.columns[table]]  # fmt: skip
        return ", ".join(r.sample(sets, r.randint(1, len(sets))))

    def alter(self, table: str) -> str:
        """One ALTER TABLE of ``table``, its kind drawn among those its columns allow; the model follows it."""
        r, cols = self.rng, self.columns[table]
        wider = [c for c in cols if c.kind == "INT" or (c.kind == "VARCHAR" and c.size <= 100)
                 or (c.kind == "DECIMAL" and c.size <= 30)]  # fmt: skip
        textual = [c for c in cols if c.kind in ("INT", "BIGINT", "DECIMAL")]
        kinds = [k for k in ALTERS if not (k.startswith("ADD") and len(cols) >= MOST_COLUMNS)
                 and not (k == "DROP" and len(cols) <= 1) and not (k == "MODIFY wider" and not wider)
                 and not (k == "MODIFY to VARCHAR" and not textual)]  # fmt: skip
        kind = r.choice([k for k in kinds if k not in self.alters] or kinds)  # (each kind once first)
        self.alters[kind] = self.alters.get(kind, 0) + 1
        self.names += 1
        new = f"x{self.names}"
        head = f"ALTER TABLE {self.name(table)}"
        if kind.startswith("ADD"):
            c = r.choice([Column(new, "INT"), Column(new, "VARCHAR", 12), Column(new, "DECIMAL", 12, 3)])
            sql = f"{head} ADD COLUMN {new} {c.sql()} NULL"
            if kind == "ADD DEFAULT":
                default = self.value(c)
                sql += f" DEFAULT {'7' if default == 'NULL' else default}"
                cols.append(c)
            elif kind == "ADD FIRST":
                sql += " FIRST"
                cols.insert(0, c)
            elif kind == "ADD AFTER":
                at = r.randrange(len(cols))
                sql += f" AFTER {cols[at].name}"
                cols.insert(at + 1, c)
            else:
                cols.append(c)
            return sql
        if kind == "DROP":
            c = cols.pop(r.randrange(len(cols)))
            return f"{head} DROP COLUMN {c.name}"
        if kind == "RENAME COLUMN":
            c = r.choice(cols)
            old, c.name = c.name, new
            return f"{head} RENAME COLUMN {old} TO {new}"
        c = r.choice(wider if kind == "MODIFY wider" else textual)
        if kind == "MODIFY to VARCHAR":  # long enough for every value's text: a strict server refuses less
            c.kind, c.size, c.scale = "VARCHAR", {"INT": 12, "BIGINT": 24}.get(c.kind, c.size + 2), 0
        elif c.kind == "INT":
            c.kind = "BIGINT"
        elif c.kind == "VARCHAR":
            c.size *= 2
        else:
            c.size, c.scale = c.size + 4, c.scale + 1
        return f"{head} MODIFY {c.name} {c.sql()} NULL"


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _datetime(r: random.Random) -> str:
    t = dt.datetime(1971, 1, 1) + dt.timedelta(seconds=r.randint(0, 2_000_000_000), microseconds=r.randint(0, 999_999))
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


def _keys(server: MariaDBServer, table: str, columns: str) -> list[tuple[str | None, ...]]:
    return server.query(f"SELECT {columns} FROM {DB}.{table}")


def _statements(server: MariaDBServer, w: Workload, last: bool) -> str:
    """One batch's SQL.  Keys come from the server as the batch starts; a new key is never reused, so inserts never
    collide, and an update or delete of a key an earlier statement of the batch removed changes nothing.  An ALTER
    is followed by a row change of its table half the time, and ends the batch a quarter of the time."""
    r = w.rng
    sql: list[str] = []
    if w.pending:  # an XA transaction the last batch left prepared: resolved first (it holds its rows' locks)
        outcome = r.choice(["COMMIT", "ROLLBACK"])
        sql.append(f"XA {outcome} '{w.pending}'")
        w.carried[outcome] = w.carried.get(outcome, 0) + 1
        w.pending = None
        if r.random() < 0.25:  # the outcome alone: the batch logs no table map of the transaction's rows
            return ";\n".join(sql) + ";\n"
    ids = [k[0] for k in _keys(server, "t1", "id")]
    pairs = _keys(server, w.t2, "k1, k2")

    def some(keys: list[Any], most: int) -> list[Any]:
        return r.sample(keys, min(len(keys), r.randint(1, most))) if keys else []

    def where1(most: int) -> str:
        picked = some(ids, most)
        return f"id IN ({', '.join(str(k) for k in picked)})" if picked else "FALSE"

    def where2(most: int) -> str:
        picked = some(pairs, most)
        return " OR ".join(f"(k1 = {k1} AND k2 = {_quote(k2 or '')})" for k1, k2 in picked) if picked else "FALSE"

    def dml(only: str = "") -> str:
        ops = ["ins1", "ins2", "upd1", "upd2", "del1", "del2", "pk1", "pk2"]
        op = r.choices(ops, [5, 3, 5, 3, 2, 2, 1, 1])[0] if not only else r.choice(["ins", "upd"]) + only[1]
        if op == "ins1":
            return w.insert("t1", 8)
        if op == "ins2":
            return w.insert("t2", 5)
        if op == "upd1":
            return f"UPDATE {w.name('t1')} SET {w.sets('t1')} WHERE {where1(6)}"
        if op == "upd2":
            return f"UPDATE {w.name('t2')} SET {w.sets('t2')} WHERE {where2(4)}"
        if op == "del1":
            return f"DELETE FROM {w.name('t1')} WHERE {where1(4)}"
        if op == "del2":
            return f"DELETE FROM {w.name('t2')} WHERE {where2(3)}"
        if op == "pk1":
            return f"UPDATE {w.name('t1')} SET id = {w.key()} WHERE {where1(1)}"
        return f"UPDATE {w.name('t2')} SET k1 = {w.key()}, k2 = {_quote(w.text(8))} WHERE {where2(1)}"

    for _ in range(r.randint(3, 10)):
        kind = r.choices(["dml", "rollback", "savepoint", "xa", "truncate", "rename", "alter"],
                         [70, 5, 5, 8, 2, 2, 8])[0]  # fmt: skip
        if kind == "dml":
            sql.append(dml())
        elif kind == "rollback":
            sql += ["BEGIN", dml(), dml(), "ROLLBACK"]
        elif kind == "savepoint":
            sql += ["BEGIN", dml(), "SAVEPOINT s", dml(), dml(), "ROLLBACK TO SAVEPOINT s", dml(), "COMMIT"]
        elif kind == "xa":
            w.xa += 1
            xid = f"x{w.xa}"
            # (an insert first: an XA transaction that changed nothing is gone when its connection ends, unresolved)
            sql += [f"XA START '{xid}'", w.insert("t1", 1), dml(), f"XA END '{xid}'", f"XA PREPARE '{xid}'"]
            # left prepared: the next batch resolves it
            if r.random() < 0.5 and not last:
                w.pending = xid
                break  # (the connection can do nothing else; it ends, the transaction stays prepared)
            sql.append(f"XA {r.choice(['COMMIT', 'ROLLBACK'])} '{xid}'")
        elif kind == "truncate":
            sql.append(f"TRUNCATE TABLE {w.name(r.choice(['t1', 't2']))}")
        elif kind == "rename":
            new = "t2b" if w.t2 == "t2" else "t2"
            sql.append(f"RENAME TABLE {DB}.{w.t2} TO {DB}.{new}")
            w.t2 = new
        else:
            table = r.choice(["t1", "t2"])
            sql.append(w.alter(table))
            if r.random() < 0.5:  # a row of the table changed after the ALTER, by its new columns
                sql.append(dml(table))
            elif r.random() < 0.5:  # nothing after it in the batch: the ALTER alone brings the change
                w.alone += 1
                break
    return ";\n".join(sql) + ";\n"


# -- the oracle ------------------------------------------------------------------------------------------------------


def _server_table(
    server: MariaDBServer, db: str, table: str
) -> tuple[list[tuple[str, pa.DataType]], list[tuple[Any, ...]]]:
    """``table``'s columns (name, the Arrow type binlake gives it) and its rows as the server's text, sorted."""
    cols = server.query(
        "SELECT COLUMN_NAME, DATA_TYPE, NUMERIC_PRECISION, NUMERIC_SCALE FROM information_schema.COLUMNS "
        f"WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = '{table}' ORDER BY ORDINAL_POSITION"
    )
    types = [
        (str(n), pa.decimal128(int(p or 0), int(s or 0)) if t == "decimal" else ARROW[str(t)]) for n, t, p, s in cols
    ]
    # (the string 'NULL' would read as SQL NULL: the workload's texts never are 'NULL')
    rows = server.query(f"SELECT * FROM {db}.{table}")
    return types, sorted(rows, key=repr)


def _text(v: Any) -> str | None:
    """A lake cell as the server's client prints it."""
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, Decimal):
        return f"{v:f}"
    return str(v)


def _lake_rows(data: pa.Table, names: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(_text(row[n]) for n in names) for row in data.select(names).to_pylist()), key=repr)


def _check_current(server: MariaDBServer, lake: Lake, batch: int, db: str = DB) -> int:
    """Every table of the server's database ``db`` equals its current state in the lake, through every reader; a current
    state the server has no table for (renamed away, as ``t2`` or ``t2b``) is empty.  The readers checked."""
    tables = {t.name: t for t in lake.tables() if t.kind == "current"}
    on_server = {str(r[0]) for r in server.query(f"SHOW TABLES FROM {db}")}
    for name in sorted(on_server):
        types, want = _server_table(server, db, name)
        found = tables.get(f"{db}.{name}")
        assert found is not None, f"batch {batch}: no current state of {db}.{name} in the lake"
        assert found.rows == len(want), (
            f"batch {batch}: Lake.tables() counts {found.rows} rows of {name}, the server has {len(want)}"
        )
        got = {"binlake": delta.read_table(found.location)}
        got.update({r: readers.read_with(r, found.location) for r in readers.available()})
        for reader, data in got.items():
            assert data is not None
            columns = [(f.name, f.type) for f in data.schema if not f.name.startswith("_")]
            assert columns == types, f"batch {batch}, {name} through {reader}: columns {columns}, server {types}"
            rows = _lake_rows(data, [n for n, _ in types])
            if rows != want:
                missing, extra = set(want) - set(rows), set(rows) - set(want)
                pytest.fail(f"batch {batch}, {name} through {reader}: {len(rows)} rows against the server's "
                            f"{len(want)}; the server's alone: {sorted(missing, key=repr)[:5]}; the lake's alone: "
                            f"{sorted(extra, key=repr)[:5]}")  # fmt: skip
    for name, t in tables.items():
        if name.partition(".")[0] == db and name.partition(".")[2] not in on_server:
            assert t.rows == 0, f"batch {batch}: {name} is not on the server, its current state has {t.rows} rows"
    return len(got)


def _content(lake: Lake) -> dict[tuple[str, str], list[str]]:
    """Every table of the lake, row by row (file names aside)."""
    return {(t.name, t.kind): sorted(repr(r) for r in (delta.read_table(t.location) or pa.table({})).to_pylist())
            for t in lake.tables()}  # fmt: skip


# -- the run ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[MariaDBServer]:
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found)")
    with MariaDBServer(["--innodb-lock-wait-timeout=5", "--lock-wait-timeout=5"]) as s:
        yield s


def _child(sources: Path, lake: Path) -> subprocess.Popen[str]:
    """An ingest of ``sources`` into ``lake`` in a process of its own, its progress lines unbuffered on stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
           "PYTHONUNBUFFERED": "1"}  # fmt: skip
    return subprocess.Popen([sys.executable, "-c", CHILD, str(sources), str(lake)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip


def _ingest_child(sources: Path, lake: Path) -> int:
    """:func:`_child` to its end; the progress lines it wrote."""
    proc = _child(sources, lake)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"the ingest into the second lake failed:\n{out[-3000:]}"
    return sum(1 for line in out.splitlines() if line.strip())


def _killed_then_again(sources: Path, lake: Path, rng: random.Random, lines: int) -> str:
    """One ingest into ``lake`` in a child process, SIGKILLed at a random moment (after one of the progress lines a
    whole run wrote last time, ``lines``, plus up to 0.1 s), then run again to its end; what happened."""
    after, extra = rng.randint(1, max(1, lines - 1)), rng.uniform(0.0, 0.1)
    proc = _child(sources, lake)
    assert proc.stdout is not None
    seen = []
    while len(seen) < after and (line := proc.stdout.readline()):
        seen.append(line.strip())
    time.sleep(extra)
    outcome = "ended before the kill"
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        outcome = "killed"
    rest = proc.stdout.read()
    proc.stdout.close()
    if proc.wait() not in (0, -signal.SIGKILL):
        pytest.fail(f"the ingest to be killed failed by itself ({proc.returncode}):\n{rest[-3000:]}")
    _ingest_child(sources, lake)
    return f"{outcome} {extra:.2f} s after line {after} ({seen[-1][:70] if seen else 'none'})"


def _land(server: MariaDBServer, sources: Path, lake: Path) -> float:
    """End the batch (``FLUSH BINARY LOGS``), copy the closed binlogs to ``sources``, ingest them into ``lake`` in
    this process; the ingest's seconds."""
    server.flush_logs()
    for f in server.binlog_files()[:-1]:
        if not (sources / f.name).exists():
            shutil.copyfile(f, sources / f.name)
    t0 = time.monotonic()
    ingest(InProcessRunner(), [str(sources)], str(lake), progress=Progress(None, io.StringIO()))
    return time.monotonic() - t0


def test_added_column_reaches_the_current_state_without_a_row_change(server: MariaDBServer, tmp_path: Path) -> None:
    """``ALTER TABLE ... ADD COLUMN`` and no row change after it: the server's table has the column (NULL in every
    row), so the current state must have it too."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(
        "CREATE DATABASE ddl; CREATE TABLE ddl.t (id INT PRIMARY KEY, a INT); INSERT INTO ddl.t VALUES (1, 2)"
    )
    _land(server, sources, lake)
    server.execute("ALTER TABLE ddl.t ADD COLUMN x VARCHAR(10) NULL")
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 2, "ddl")


def test_a_table_renamed_back_after_an_alter_has_its_columns(server: MariaDBServer, tmp_path: Path) -> None:
    """``RENAME TABLE t TO u``, an ALTER of ``u``, ``RENAME TABLE u TO t``: the current state of ``t`` has ``u``'s
    columns, not those ``t`` had before it was renamed away (found by the random run: a dropped column came back)."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(
        "CREATE DATABASE rn; CREATE TABLE rn.t (id INT PRIMARY KEY, a INT, x INT); INSERT INTO rn.t VALUES (1, 2, 3)"
    )
    _land(server, sources, lake)
    server.execute("RENAME TABLE rn.t TO rn.u; ALTER TABLE rn.u DROP COLUMN x, ADD COLUMN y VARCHAR(4) DEFAULT 'y'")
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 2, "rn")
    server.execute("RENAME TABLE rn.u TO rn.t; INSERT INTO rn.t VALUES (4, 5, 'z')")
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 3, "rn")
    # and all in one batch: away, altered, back
    server.execute("RENAME TABLE rn.t TO rn.u; ALTER TABLE rn.u DROP COLUMN y; RENAME TABLE rn.u TO rn.t")
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 4, "rn")


def test_a_table_renamed_away_and_back_keeps_its_retyped_columns(server: MariaDBServer, tmp_path: Path) -> None:
    """A column whose type changed lands in ``x__string`` in ``t``'s change table; a batch writes ``t``, renames it
    away and back (``RENAME TABLE t TO u; RENAME TABLE u TO t``) and writes it again with the same table map: the
    rows after the renames keep their values (found by the 200-batch random run at batch 100: their retyped columns
    were NULL, read from ``x``, as the map logged before the renames was not taken again after them)."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(
        "CREATE DATABASE bf; CREATE TABLE bf.t (id INT PRIMARY KEY, x INT, y INT); INSERT INTO bf.t VALUES (1, 1, 1)"
    )
    _land(server, sources, lake)
    server.execute("ALTER TABLE bf.t MODIFY x VARCHAR(12) NULL; INSERT INTO bf.t VALUES (2, 'two', 2)")
    _land(server, sources, lake)
    server.execute(
        "UPDATE bf.t SET y = 10 WHERE id = 1; RENAME TABLE bf.t TO bf.u; RENAME TABLE bf.u TO bf.t;"
        "INSERT INTO bf.t VALUES (3, 'three', 3); UPDATE bf.t SET x = 'one' WHERE id = 1"
    )
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 3, "bf")
    # and the type changed in the same batch, before the renames
    server.execute(
        "ALTER TABLE bf.t MODIFY y VARCHAR(12) NULL; INSERT INTO bf.t VALUES (4, 'four', 'four');"
        "RENAME TABLE bf.t TO bf.u; RENAME TABLE bf.u TO bf.t; INSERT INTO bf.t VALUES (5, 'five', 'five')"
    )
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 4, "bf")


def test_a_table_renamed_after_a_type_change_keeps_later_values(server: MariaDBServer, tmp_path: Path) -> None:
    """A column whose type changed lands in ``x__string`` in ``t``'s change table; ``t`` renamed to ``u`` in a batch
    that changes rows of both: ``u``'s rows (its own change table names the column ``x``) keep their values (found by
    the random run with DDL: they were read from ``x__string``, which ``u``'s change table has not)."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    server.execute(
        "CREATE DATABASE tc; CREATE TABLE tc.t (id INT PRIMARY KEY, x INT); INSERT INTO tc.t VALUES (1, 1);"
        "ALTER TABLE tc.t MODIFY x VARCHAR(12) NULL; INSERT INTO tc.t VALUES (2, 'two')"
    )
    _land(server, sources, lake)
    server.execute(
        "INSERT INTO tc.t VALUES (3, 'three'); RENAME TABLE tc.t TO tc.u; UPDATE tc.u SET x = 'one' WHERE id = 1;"
        "INSERT INTO tc.u VALUES (4, 'four')"
    )
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 2, "tc")


def _retyped_table(server: MariaDBServer, sources: Path, lake: Path, db: str) -> None:
    """``db.t (id INT PRIMARY KEY, c DECIMAL(6,2))``, a row, ``c`` made VARCHAR(10) (the change table's rows after it
    hold ``c`` in ``c__string``), a row: landed."""
    server.execute(
        f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, c DECIMAL(6,2)); INSERT INTO {db}.t VALUES "
        f"(1, 1.5); ALTER TABLE {db}.t MODIFY c VARCHAR(10) NULL; INSERT INTO {db}.t VALUES (2, 'two')"
    )
    _land(server, sources, lake)


def _refused_while_prepared(server: MariaDBServer, sql: str) -> None:
    """The server refuses ``sql``, a statement changing a table an XA transaction left prepared holds: the current
    state reads such a transaction's rows by the table's layout before the batch of its XA COMMIT
    (``binlake.ingest.run._prepared_layouts``), right only while this holds."""
    with pytest.raises(MariaDBError, match="Lock wait timeout"):
        server.execute(f"SET SESSION lock_wait_timeout = 1; {sql}", timeout=60)


def _changes_printed(sources: Path, db: str) -> list[tuple[Any, ...]]:
    """What ``binlake changes`` prints of ``db``'s tables for the binlogs of ``sources`` (decimals as strings): per
    row change its table, binlog file, position, row, Debezium operation, before and after images as text."""
    out = subprocess.run(
        [sys.executable, "-m", "binlake", "changes", "-d", db, "--debezium-option", "decimal.handling.mode=string",
         str(sources)], capture_output=True, text=True, check=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])},
    ).stdout  # fmt: skip
    rows = []
    for line in out.splitlines():
        v = json.loads(line)
        src = v["source"]
        images = [None if v[k] is None else {n: _text(x) for n, x in v[k].items()} for k in ("before", "after")]
        rows.append((f"{src['db']}.{src['table']}", src["file"], src["pos"], src["row"], v["op"], *images))
    return sorted(rows, key=repr)


def _changes_landed(lake: Lake, db: str, printed: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``db``'s change tables' rows as :func:`_changes_printed` has them: an update's two rows as one, each column of
    the table by its name (a column whose type changed is in ``c`` or ``c__string``: the one the row's layout
    wrote, the other is NULL), only the columns the ``printed`` row has (the others, added to the table after the
    row was logged, must be NULL)."""
    ops = {"insert": "c", "delete": "d", "update_preimage": "u", "update_postimage": "u"}
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for t in lake.tables():
        if t.kind != "changes" or t.name.partition(".")[0] != db:
            continue
        for r in (delta.read_table(t.location) or pa.table({})).to_pylist():
            image: dict[str, Any] = {}
            for name, value in r.items():
                if not name.startswith("_") and (value is not None or name.partition("__")[0] not in image):
                    image[name.partition("__")[0]] = _text(value)
            at = found.setdefault((t.name, r["_file"], r["_pos"], r["_row"]), {"op": ops[r["_op"]]})
            at["before" if r["_op"] in ("delete", "update_preimage") else "after"] = image
    columns = {p[:4]: set((p[5] or p[6]).keys()) for p in printed}
    out = []
    for k, v in found.items():
        images = [v.get("before"), v.get("after")]
        names = columns.get(k, set())
        for image in images:
            extra = {n: x for n, x in (image or {}).items() if n not in names}
            assert k not in columns or not any(x is not None for x in extra.values()), f"{k}: {extra} not printed"
        out.append((*k, v["op"], *(None if i is None else {n: x for n, x in i.items() if n in names} for i in images)))
    return sorted(out, key=repr)


def test_xa_across_a_type_change(server: MariaDBServer, tmp_path: Path) -> None:
    """XA transactions changing a table whose column changed type, prepared in one batch and decided in a later one
    (found by the random run with DDL: rows of such a transaction had NULL in the retyped columns): the committed
    one's rows reach the current state whole, the rolled-back one's not at all; the change table holds what
    ``binlake changes`` prints."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    _retyped_table(server, sources, lake, "xt")
    server.execute("XA START 'p'; INSERT INTO xt.t VALUES (3, 'three'); UPDATE xt.t SET c = 'deux' WHERE id = 2;"
                   "XA END 'p'; XA PREPARE 'p'")  # fmt: skip
    server.execute("XA START 'q'; INSERT INTO xt.t VALUES (4, 'four'); UPDATE xt.t SET c = 'one' WHERE id = 1;"
                   "XA END 'q'; XA PREPARE 'q'")  # fmt: skip
    _land(server, sources, lake)
    _refused_while_prepared(server, "ALTER TABLE xt.t MODIFY c VARCHAR(20) NULL")
    server.execute("XA COMMIT 'p'")
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 3, "xt")
    server.execute("XA ROLLBACK 'q'")
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 4, "xt")
    printed = _changes_printed(sources, "xt")
    assert _changes_landed(Lake(str(lake)), "xt", printed) == printed


def test_xa_before_a_rename_and_another_type_change(server: MariaDBServer, tmp_path: Path) -> None:
    """An XA transaction prepared after a type change, committed in a batch that then renames the table and changes
    another column's type; a second one prepared on the renamed table (whose change table has its own
    ``name__type`` column by then), committed in a batch of its own: a batch landed between each step.  The
    server refuses the RENAME and the ALTER while a transaction holding the table is prepared."""
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    _retyped_table(server, sources, lake, "xr")
    server.execute("ALTER TABLE xr.t ADD COLUMN n INT NULL; INSERT INTO xr.t VALUES (5, 'five', 5)")
    _land(server, sources, lake)
    server.execute("XA START 'r'; INSERT INTO xr.t VALUES (3, 'three', 3); XA END 'r'; XA PREPARE 'r'")
    _land(server, sources, lake)
    _refused_while_prepared(server, "RENAME TABLE xr.t TO xr.u")
    server.execute(
        "XA COMMIT 'r'; RENAME TABLE xr.t TO xr.u; INSERT INTO xr.u VALUES (4, 'four', 4);"
        "ALTER TABLE xr.u MODIFY n VARCHAR(12) NULL; INSERT INTO xr.u VALUES (6, 'six', 'six')"
    )
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 4, "xr")
    server.execute("XA START 's'; INSERT INTO xr.u VALUES (7, 'seven', 'sept'); UPDATE xr.u SET n = 'trois' "
                   "WHERE id = 3; XA END 's'; XA PREPARE 's'")  # fmt: skip
    _land(server, sources, lake)
    _refused_while_prepared(server, "ALTER TABLE xr.u MODIFY c VARCHAR(30) NULL")
    server.execute("XA COMMIT 's'")
    _land(server, sources, lake)
    _check_current(server, Lake(str(lake)), 6, "xr")
    printed = _changes_printed(sources, "xr")
    assert _changes_landed(Lake(str(lake)), "xr", printed) == printed


@pytest.mark.parametrize(
    ("metadata", "alter"),
    [
        ("NO_LOG", "ALTER TABLE nl.t RENAME COLUMN a TO aa"),
        ("FULL", "ALTER TABLE nl.t RENAME COLUMN a TO aa"),
        ("NO_LOG", "ALTER TABLE nl.t RENAME COLUMN a TO aa; ALTER TABLE nl.t MODIFY aa BIGINT"),
        ("NO_LOG", "ALTER TABLE nl.t CHANGE a aa BIGINT"),
    ],
    ids=["no_log", "full", "no_log-modify", "no_log-change"],
)
def test_xa_after_a_column_rename_with_maps_without_names(tmp_path: Path, metadata: str, alter: str) -> None:
    """``RENAME COLUMN a TO aa`` (under NO_LOG the same table-map layout as before, its change-table column still
    ``a``), an XA transaction prepared in the next batch, committed alone in the one after: the current state has
    ``aa`` (the rows are read by the layout they were logged with, kept with the XID).  The same under FULL (the map
    names ``aa``: a layout of its own), and with the column's type changed too (a layout of its own either way)."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found)")
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    with MariaDBServer([f"--binlog-row-metadata={metadata}"]) as server:
        server.execute(
            "CREATE DATABASE nl; CREATE TABLE nl.t (id INT PRIMARY KEY, a INT); "
            "INSERT INTO nl.t VALUES (1, 11), (4, 44)"
        )
        _land(server, sources, lake)
        server.execute(f"{alter}; INSERT INTO nl.t VALUES (2, 22)")
        _land(server, sources, lake)
        server.execute(
            "XA START 'p'; INSERT INTO nl.t VALUES (3, 33); UPDATE nl.t SET aa = 111 WHERE id = 1; XA END 'p'; "
            "XA PREPARE 'p'"
        )
        _land(server, sources, lake)
        server.execute("XA COMMIT 'p'")
        _land(server, sources, lake)
        _check_current(server, Lake(str(lake)), 4, "nl")


def test_random_batches_equal_select_and_survive_kill_9(server: MariaDBServer, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    w = Workload(random.Random(SEED))
    server.execute(
        f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t1 (id INT PRIMARY KEY, a BIGINT, b VARCHAR(40), c DECIMAL(12,3), "
        f"d DATETIME(6)) DEFAULT CHARSET=utf8mb4; CREATE TABLE {DB}.t2 (k1 INT, k2 VARCHAR(8), n INT, s VARCHAR(20), "
        "PRIMARY KEY (k1, k2)) DEFAULT CHARSET=utf8mb4"
    )
    sources, clean, killed = tmp_path / "binlogs", tmp_path / "clean", tmp_path / "killed"
    sources.mkdir()
    server.flush_logs()  # (the files before: the server's own start, the tables' creation, land in batch 1)
    lines, kills, seconds, checks = 6, [], [], []
    for batch in range(1, BATCHES + 1):
        check = batch % CHECK_EVERY == 0 or batch == BATCHES
        sql = _statements(server, w, last=check)
        with (tmp_path / "workload.sql").open("a") as log:  # (to replay a failure: each batch's SQL in order)
            log.write(f"-- batch {batch}\n{sql}")
        server.execute(sql)
        seconds.append(_land(server, sources, clean))
        if rng.random() < KILL_SHARE:
            kills.append(f"batch {batch}: {_killed_then_again(sources, killed, rng, lines)}")
        else:
            lines = _ingest_child(sources, killed)
        if check:
            readers_checked = _check_current(server, Lake(str(clean)), batch)
            assert _content(Lake(str(killed))) == _content(Lake(str(clean))), f"batch {batch}: the killed lake differs"
            checks.append(batch)
    median = sorted(seconds)[len(seconds) // 2]
    print(
        f"\n{BATCHES} batches (seed {SEED}): ingest {sum(seconds):.1f} s in all, median {median:.2f} s; "
        f"checked at batches {checks} through {readers_checked} readers; {len(kills)} kill runs: "
        f"{sum('killed' in k for k in kills)} killed mid-ingest; {w.xa} XA, resolved in the next batch: "
        f"{w.carried}; {sum(w.alters.values())} ALTERs ({w.alone} ending their batch): {w.alters}"
    )
    for k in kills:
        print(k)
    if BATCHES >= 40:  # (the kinds not drawn yet are drawn first: a run that drew fewer has not shown them all)
        assert set(w.alters) == set(ALTERS), f"ALTER kinds never drawn: {set(ALTERS) - set(w.alters)}"
