"""The snapshot's global-read-lock method (the one binlake uses on MySQL, ``binlake.snapshot.server``) run on a
private MariaDB, which takes the same statements: its binlog point is the one MariaDB's own consistent-snapshot
status gives the same transaction, while a workload writes; the lock is gone when ``begin_snapshot`` returns and
when it fails, and its wait is bounded; and a whole snapshot by this method, followed by the stream, gives
current-state tables equal to ``SELECT`` cell by cell, the all-column-types workload included.

The user has what the README lists for a MySQL snapshot, in MariaDB's names: SELECT, RELOAD (FLUSH TABLES WITH
READ LOCK), BINLOG MONITOR (MySQL's REPLICATION CLIENT: the binlog status), REPLICATION SLAVE."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from tests.spark.test_snapshot import (  # noqa: F401
    CHUNK,
    PASSWORD,
    _check_all,
    _password_file,
    _writes,
    seeded,
)

from binlake.errors import ReplicationError
from binlake.replication import ConnectionOptions, Secret
from binlake.replication.connection import ReplicationConnection, ServerInfo
from binlake.snapshot import server as snapshot_server
from binlake.snapshot.server import begin_snapshot, connect
from binlake.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.spark

LOCKER = ("SELECT", "RELOAD", "BINLOG MONITOR", "REPLICATION SLAVE")


@pytest.fixture(scope="module")
def locker(seeded: MariaDBServer) -> MariaDBServer:  # noqa: F811
    """The seeded server with the lock method's user, ``locker``, and one without BINLOG MONITOR, ``nostatus``."""
    seeded.create_user("locker", PASSWORD, grants=LOCKER)
    seeded.create_user("nostatus", PASSWORD, grants=("SELECT", "RELOAD"))
    seeded.execute("CREATE TABLE s.blocker (a INT) ENGINE=InnoDB; INSERT INTO s.blocker VALUES (1)")
    return seeded


def _options(server: MariaDBServer, user: str = "locker") -> ConnectionOptions:
    return ConnectionOptions("127.0.0.1", user, 7781, server.port, Secret(PASSWORD), timeout=30.0)


def _root(server: MariaDBServer) -> Any:
    return pymysql.connect(unix_socket=str(server.socket_path), user="root", autocommit=True)


def _write_within(server: MariaDBServer, seconds: int) -> float:
    """Another session's INSERT, allowed to wait ``seconds`` for a lock (a global read lock still held makes it
    fail with error 1205); how long it took."""
    conn = _root(server)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SET SESSION lock_wait_timeout = {seconds}")
            t0 = time.monotonic()
            cur.execute("INSERT INTO s.nopk VALUES (99, 'lock', NULL)")
            return time.monotonic() - t0
    finally:
        conn.close()


def test_lock_point_is_the_consistent_snapshot_point(locker: MariaDBServer) -> None:
    """While a workload writes, the point the lock method reads (SHOW MASTER STATUS under the lock) equals the
    binlog_snapshot_file/position MariaDB gives the same transaction, and its GTID state BINLOG_GTID_POS there."""
    with _writes(locker):
        points = []
        for _ in range(12):
            with connect(_options(locker)) as conn:
                point = begin_snapshot(conn, "lock")
                status = dict(conn.query("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'"))
                assert (status["Binlog_snapshot_file"], int(status["Binlog_snapshot_position"])) == (
                    point.file,
                    point.position,
                )
                assert point.gtid == conn.binlog_gtid_pos(point.file, point.position) and point.gtid
                assert point.flavor == "mariadb"
                points.append(point)
            time.sleep(0.05)
    assert len({p.position for p in points}) > 6  # the workload wrote between them


def test_the_lock_is_released_when_the_snapshot_begins(locker: MariaDBServer) -> None:
    """Right after begin_snapshot returns, its session still open and in its transaction, another session writes
    without waiting; the transaction goes on (UNLOCK TABLES does not end it: it does not see that write)."""
    with connect(_options(locker)) as conn:
        begin_snapshot(conn, "lock")
        before = conn.query("SELECT COUNT(*) FROM s.nopk")[0][0]
        assert _write_within(locker, 2) < 1.5
        assert conn.query("SELECT COUNT(*) FROM s.nopk")[0][0] == before
        assert (
            conn.query("SELECT @@session.lock_wait_timeout")[0][0]
            == conn.query("SELECT @@global.lock_wait_timeout")[0][0]
        )


def test_the_lock_is_released_on_error(locker: MariaDBServer) -> None:
    """A user without BINLOG MONITOR takes the lock, then may not read the binlog status: the error says so, and
    another session writes without waiting while the failed session is still open."""
    with connect(_options(locker, "nostatus")) as conn:
        with pytest.raises(ReplicationError, match="1227"):
            begin_snapshot(conn, "lock")
        assert _write_within(locker, 2) < 1.5


def test_without_reload_the_lock_is_refused_naming_it(locker: MariaDBServer) -> None:
    """The lock method needs RELOAD (FLUSH TABLES WITH READ LOCK): a user without it is told so in one line with
    the GRANT, by the preflight (its grants) and by the statement itself; no lock is left behind."""
    from binlake.replication.privileges import require_reload

    locker.create_user("noreload", PASSWORD, grants=("SELECT", "BINLOG MONITOR", "REPLICATION SLAVE"))
    says = r"lacks RELOAD on .*GRANT RELOAD ON \*\.\* TO 'noreload'@'127.0.0.1'"
    with connect(_options(locker, "noreload")) as conn:
        with pytest.raises(ReplicationError, match=says):
            require_reload(conn)
        with pytest.raises(ReplicationError, match=says):
            begin_snapshot(conn, "lock")
        assert _write_within(locker, 2) < 1.5
    with connect(_options(locker)) as conn:
        require_reload(conn)  # the lock method's user has it


def test_the_lock_wait_is_bounded(locker: MariaDBServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A DML statement running for 6 s holds the lock up: the snapshot gives up after LOCK_WAIT_SECONDS (1 here)
    with an error naming the global read lock, and leaves no lock behind."""
    monkeypatch.setattr(snapshot_server, "LOCK_WAIT_SECONDS", 1)
    started = threading.Event()

    def long_update() -> None:
        conn = _root(locker)
        try:
            with conn.cursor() as cur:
                started.set()
                cur.execute("UPDATE s.blocker SET a = a + SLEEP(6)")
        finally:
            conn.close()

    blocker = threading.Thread(target=long_update)
    blocker.start()
    try:
        started.wait()
        time.sleep(0.5)
        with connect(_options(locker)) as conn:
            t0 = time.monotonic()
            with pytest.raises(ReplicationError, match="global read lock") as e:
                begin_snapshot(conn, "lock")
            took = time.monotonic() - t0
            assert took < 4, took
            assert "1205" in str(e.value)
            assert _write_within(locker, 2) < 1.5
    finally:
        blocker.join()


def test_lock_snapshot_then_stream_equals_the_server(
    spark: Any, locker: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole snapshot whose plan and every chunk take their point by the lock method (as on MySQL), chunks read
    one after the other while a workload writes and brought to one point, then the file ingest of the server's
    binlogs from it: every current-state table equals SELECT cell by cell, the table without a key as a
    multiset."""
    from binlake.ingest.run import ingest
    from binlake.snapshot import SnapshotSpec, take_snapshot
    from binlake.spark.runner import SparkRunner

    methods: list[str] = []

    def lock_method(info: ServerInfo) -> snapshot_server.SnapshotMethod:
        methods.append(info.flavor)
        return "lock"

    locked = []
    under_lock = snapshot_server._under_read_lock

    def counted(conn: ReplicationConnection) -> tuple[str, int, str | None]:
        locked.append(1)
        return under_lock(conn)

    monkeypatch.setattr(snapshot_server, "snapshot_method", lock_method)
    monkeypatch.setattr(snapshot_server, "_under_read_lock", counted)
    lake = tmp_path / "lake"
    with _writes(locker) as writer:
        result = take_snapshot(
            _options(locker), str(lake), SnapshotSpec(password_file=_password_file(tmp_path), chunk_rows=CHUNK)
        )
    assert writer.n > 20
    assert result.chunks_read >= 5 and len(locked) == len(methods) == result.chunks_read + 1
    assert result.reconciled > 0  # the chunks were read at different points, and brought to one
    assert result.point.flavor == "mariadb" and result.point.gtid
    ingest(SparkRunner(spark), [str(f) for f in locker.binlog_files()], str(lake))
    _check_all(locker, lake)


@pytest.fixture(autouse=True)
def _no_leftover_lock(locker: MariaDBServer) -> Iterator[None]:
    """After each test no session holds the global read lock: a write goes through at once."""
    yield
    assert _write_within(locker, 5) < 1.5
