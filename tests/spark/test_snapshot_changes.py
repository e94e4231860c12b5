"""A table altered, emptied or renamed while its snapshot runs: the snapshot starts again from a new plan and the
lake equals the server's table, rather than mixing chunks of two definitions or keeping rows a TRUNCATE removed
(binlake.snapshot.run, TableChangedError).  The statements run between two chunks of a snapshot read in this
process (a runner that fires them after the first chunk)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from tests.spark.test_snapshot import _compare_keyed

from binlake.errors import TableChangedError
from binlake.lake.runner import InProcessRunner
from binlake.replication import ConnectionOptions, Secret
from binlake.snapshot import SnapshotSpec, take_snapshot
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools

T = TypeVar("T")
R = TypeVar("R")
PASSWORD = "Snap-change-pw-5"
ROWS = 5_000
SEED = f"""
CREATE DATABASE d; CREATE DATABASE seq;
CREATE TABLE d.t (id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(20)) ENGINE=InnoDB;
INSERT INTO d.t SELECT seq, CONCAT('v', seq) FROM seq.seq_1_to_{ROWS};
"""


@pytest.fixture
def server() -> Iterator[MariaDBServer]:
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    with MariaDBServer() as s:
        s.execute(SEED)
        s.execute("RESET MASTER")
        s.create_user("snap", PASSWORD, grants=("SELECT", "BINLOG MONITOR", "REPLICATION SLAVE"))
        yield s


class _Firing(InProcessRunner):
    """Reads the chunks in this process and, after the first chunk of each attempt, runs ``statements(attempt)`` on
    the server (nothing when it gives ``None``); :attr:`attempts` lists the attempts."""

    def __init__(self, statements: Callable[[int], str | None], server: MariaDBServer) -> None:
        self.statements, self.server = statements, server
        self.attempts: list[int] = []

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        self.attempts.append(len(self.attempts) + 1)
        out = []
        for i, item in enumerate(items):
            out.append(fn(item))
            sql = self.statements(self.attempts[-1]) if i == 0 else None
            if sql:
                self.server.execute(sql)
        return out


def _firing(statements: Callable[[int], str | None], server: MariaDBServer) -> tuple[list[int], _Firing]:
    runner = _Firing(statements, server)
    return runner.attempts, runner


def _snapshot(server: MariaDBServer, lake: Path, runner: _Firing, log: list[str]) -> None:
    options = ConnectionOptions("127.0.0.1", "snap", 7001, server.port, Secret(PASSWORD), timeout=30.0)
    spec = SnapshotSpec(tables=["d.*"], chunk_rows=1_000, runner=runner, log=log.append)
    take_snapshot(options, str(lake), spec)


@pytest.mark.parametrize(
    "sql",
    [
        "ALTER TABLE d.t ADD COLUMN extra INT NOT NULL DEFAULT 7",  # the later chunks see another definition
        "TRUNCATE TABLE d.t; INSERT INTO d.t (v) VALUES ('after'), ('truncate')",  # the first chunk's rows are gone
        "RENAME TABLE d.t TO d.t_old; CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20)); "
        "INSERT INTO d.t VALUES (1, 'new')",
    ],
    ids=["alter", "truncate", "rename"],
)
def test_a_table_changed_mid_snapshot_starts_it_again(server: MariaDBServer, tmp_path: Path, sql: str) -> None:
    attempts, runner = _firing(lambda attempt: sql if attempt == 1 else None, server)
    log: list[str] = []
    _snapshot(server, tmp_path / "lake", runner, log)
    assert attempts == [1, 2], log
    assert any("starting it again (1 of 3)" in line for line in log), log
    cells, wrong = _compare_keyed(server, tmp_path / "lake", "d", "t", ["id"])
    assert not wrong and cells > 0


def test_a_table_that_keeps_changing_is_an_error(server: MariaDBServer, tmp_path: Path) -> None:
    """After RESTARTS new plans the snapshot gives up with the error (a table altered again and again)."""
    attempts, runner = _firing(lambda attempt: f"ALTER TABLE d.t ADD COLUMN c{attempt} INT", server)
    with pytest.raises(TableChangedError, match=r"d\.t was altered while the snapshot ran"):
        _snapshot(server, tmp_path / "lake", runner, [])
    assert attempts == [1, 2, 3, 4]


def test_inserts_into_an_auto_increment_table_are_no_change(server: MariaDBServer, tmp_path: Path) -> None:
    """SHOW CREATE TABLE's AUTO_INCREMENT=N moves with every insert: the definition is the same."""
    attempts, runner = _firing(lambda attempt: "INSERT INTO d.t (v) VALUES ('x'), ('y')", server)
    _snapshot(server, tmp_path / "lake", runner, [])
    assert attempts == [1]
    cells, wrong = _compare_keyed(server, tmp_path / "lake", "d", "t", ["id"])
    assert not wrong and cells == (ROWS + 2) * 2
