"""Rollback: from a known state S0 (the all-column-types workload), a DML workload runs (every value of every
type in every kind of change, and the transaction shapes: savepoints and a rolled-back transaction over MyISAM,
XA committed and rolled back, REPLACE, IODKU, multi-table statements); ``binlake changes --format sql --flashback``
of the binlogs it wrote, applied to the same server, gives S0 back: every table's ``CHECKSUM TABLE`` and rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.changes._dml import DB, generic_dml
from tests.changes.conftest import apply_sql, binlake_changes, need_mariadb, snapshot, tables

from binlake.testing.mariadb import MariaDBServer, run_workloads

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[MariaDBServer]:
    need_mariadb()
    with MariaDBServer() as s:
        yield s


def test_flashback_returns_every_table_to_its_state_before(server: MariaDBServer) -> None:
    run_workloads(server, [REPO / "tests" / "workloads" / "01_types.sql"])
    names = tables(server, [DB])
    before = snapshot(server, names)
    assert len(names) > 25
    first = len(server.binlog_files())
    server.flush_logs()
    server.execute(generic_dml(server))
    server.flush_logs()
    written = [str(p) for p in server.binlog_files()[first:-1]]
    changed = snapshot(server, names)
    assert sum(before[t] != changed[t] for t in names) > 15  # the workload changed most tables
    undo = binlake_changes("--format", "sql", "--flashback", *written).stdout
    assert b"DELETE FROM `corpus_types`" in undo and b"INSERT INTO `corpus_types`" in undo
    apply_sql(server, undo)
    after = snapshot(server, names)
    assert {t: after[t] for t in names if after[t] != before[t]} == {}


def test_flashback_of_a_range_undoes_only_it(server: MariaDBServer) -> None:
    """--start-position/--stop-position: only the changes of that range are undone."""
    server.execute(f"CREATE TABLE {DB}.ranged (id INT PRIMARY KEY, v INT)")
    server.flush_logs()
    log = server.current_binlog()
    server.execute(f"INSERT INTO {DB}.ranged VALUES (1, 1), (2, 2)")
    start = int(server.query("SHOW MASTER STATUS")[0][1] or 0)
    server.execute(f"UPDATE {DB}.ranged SET v = 10; DELETE FROM {DB}.ranged WHERE id = 1")
    stop = int(server.query("SHOW MASTER STATUS")[0][1] or 0)
    server.execute(f"INSERT INTO {DB}.ranged VALUES (3, 3)")
    server.flush_logs()
    undo = binlake_changes(
        "--format", "sql", "--flashback", "--start-position", str(start), "--stop-position", str(stop), str(log)
    ).stdout
    apply_sql(server, undo)
    assert server.query(f"SELECT id, v FROM {DB}.ranged ORDER BY id") == [("1", "1"), ("2", "2"), ("3", "3")]
