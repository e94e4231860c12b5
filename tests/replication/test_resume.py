"""Exactly once at the event level across everything that can cut a replica off: the server killing the dump
connection, the connection dropping inside a transaction, a clean server restart, a server crash (SIGKILL), and a
SIGKILL of the consumer process itself; by position and by MariaDB GTID.  Every event of the server's files is
delivered once, in order, none lost.  A purged binlog is an error naming it; a stopped server (SIGSTOP) a timeout,
never a hang."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.replication.conftest import PASSWORD, Ref, ReplServer, batch, file_events, idle, keys, streamed, until

from binlake.errors import BinlogPurgedError, ReplicationTimeoutError
from binlake.reader import binlog_order
from binlake.replication import ReplicationClient, RetryPolicy, StartAt, StreamEvent
from binlake.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.server
REPO = Path(__file__).resolve().parents[2]


def server_end(server: MariaDBServer) -> tuple[str, int]:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    assert file is not None and pos is not None
    return file, int(pos)


def caught_up(client: ReplicationClient, end: tuple[str, int]) -> bool:
    point = client.resume_point
    return point is not None and (*binlog_order(point.file), point.position) >= (*binlog_order(end[0]), end[1])


def catch_up(
    client: ReplicationClient, events: Iterator[StreamEvent], seen: list[StreamEvent], server: MariaDBServer
) -> None:
    end = server_end(server)
    if not caught_up(client, end):
        until(events, lambda se: caught_up(client, end), seen, timeout=120)


def kill_dump_thread(server: MariaDBServer) -> None:
    ids = server.query("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'")
    assert ids, "no dump thread"
    for (thread_id,) in ids:
        server.execute(f"KILL {thread_id}")


def check_exactly_once(got: list[Ref], server: MariaDBServer, *, from_gtid: bool) -> None:
    """``got`` is the server's files' events from where it starts, each once, in order (a GTID start begins at a
    file's start and skips the event groups before the GTID: compare from the first group delivered)."""
    assert len(set(keys(got))) == len(got), "an event was delivered twice"
    ref = file_events(server)
    if from_gtid:
        first = next(i for i, r in enumerate(got) if r.type == "GTID_EVENT")
        got = got[first:]
    at = keys(ref).index(keys(got)[0])
    expected = keys(ref[at:])
    while expected and expected[-1][3] == "BINLOG_CHECKPOINT_EVENT" and len(expected) > len(got):
        expected.pop()  # written by the server after the client caught up
    assert keys(got) == expected


def gtid_now(server: MariaDBServer) -> str:
    return str(server.query("SELECT @@global.gtid_binlog_pos")[0][0] or "")


@pytest.mark.parametrize("mode", ["position", "gtid"])
def test_following_survives_kills_drops_restarts_and_crashes(
    fresh_server: ReplServer, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="binlake.replication")
    server = fresh_server.server
    batch(server, 0)
    start = StartAt.oldest() if mode == "position" else StartAt.after_gtid(gtid_now(server))
    downtime: list[Callable[[], None] | None] = []  # run at the client's backoff waits: the server's downtime

    def sleep(seconds: float) -> None:
        if downtime:
            action = downtime.pop(0)
            if action is not None:
                action()  # mariadbd is started by the thread that lives as long as it (PR_SET_PDEATHSIG)
        time.sleep(seconds)

    client = ReplicationClient(fresh_server.options(retry=RetryPolicy(200, 0.05, 0.5)), start, sleep=sleep)
    events = iter(client)
    seen: list[StreamEvent] = []
    until(events, idle, seen)

    batch(server, 1)  # the server kills the dump thread
    catch_up(client, events, seen, server)
    kill_dump_thread(server)
    batch(server, 2)
    catch_up(client, events, seen, server)

    batch(server, 3, big=True)  # the connection drops inside a transaction: unread bytes are lost
    until(events, lambda se: se.event.type == "WRITE_ROWS_EVENT_V1" and se.end - se.start > 7000, seen)
    assert client._conn is not None
    client._conn.close()
    catch_up(client, events, seen, server)

    server.stop()  # a clean shutdown (the file ends with STOP) and a start 3 reconnection attempts later
    downtime.extend([None, None, server.start])
    until(events, lambda se: not downtime and se.in_file, seen, timeout=120)
    batch(server, 4)
    catch_up(client, events, seen, server)

    server.crash()  # SIGKILL: no STOP event
    downtime.extend([None, server.start])
    until(events, lambda se: not downtime and se.in_file, seen, timeout=120)
    batch(server, 5, big=True)
    server.flush_logs()
    batch(server, 6)
    catch_up(client, events, seen, server)
    time.sleep(0.5)
    catch_up(client, events, seen, server)
    assert client.gtid_state == gtid_now(server)  # the GTID state survived the reconnections
    client.close()

    check_exactly_once(streamed(seen), server, from_gtid=mode == "gtid")
    reconnects = [r for r in caplog.records if "reconnecting" in r.getMessage()]
    assert len(reconnects) >= 4 and all(r.levelno == logging.WARNING for r in reconnects)
    assert PASSWORD not in caplog.text
    if mode == "gtid":
        assert "already delivered" in caplog.text  # the reconnection inside the transaction dropped its start
        # MariaDB marks where a GTID start was reached with an artificial GTID_LIST, outside the files
        fake_lists = [se for se in seen if se.event.type == "GTID_LIST_EVENT" and not se.in_file]
        assert fake_lists and all(se.event.header.flags & 0x20 for se in fake_lists)


@pytest.mark.parametrize("mode", ["position", "gtid"])
def test_sigkill_of_the_consumer_process(fresh_server: ReplServer, tmp_path: Path, mode: str) -> None:
    server = fresh_server.server
    batch(server, 0)
    log = tmp_path / "events.jsonl"
    env = {**os.environ, "BINLAKE_PASSWORD": PASSWORD, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'src'}"}
    gtid = gtid_now(server)

    def child(follow: bool) -> subprocess.Popen[bytes]:
        cmd = [
            sys.executable,
            "-m",
            "tests.replication._child",
            str(server.port),
            str(log),
            mode,
            str(int(follow)),
            gtid,
        ]
        return subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE)

    rng = random.Random(7)
    for k in range(1, 5):
        proc = child(follow=True)
        batch(server, k, big=k % 2 == 1)
        time.sleep(rng.uniform(0.3, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if k == 2:
            server.restart()
    server.flush_logs()
    batch(server, 9)
    done = child(follow=False)
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err.decode()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    got = [Ref(r["file"], r["start"], r["end"], r["type"], b"") for r in rows]
    check_exactly_once(got, server, from_gtid=mode == "gtid")


def test_a_purged_binlog_is_an_error_naming_it(fresh_server: ReplServer) -> None:
    server = fresh_server.server
    batch(server, 1)
    first = server_end(server)[0]
    gtid_before = "0-1-1"
    server.flush_logs()
    batch(server, 2)
    server.flush_logs()
    batch(server, 3)
    server.execute(f"PURGE BINARY LOGS TO '{server_end(server)[0]}'")
    sleeps: list[float] = []
    with pytest.raises(BinlogPurgedError) as info:
        list(ReplicationClient(fresh_server.options(), StartAt.at(first, 4), sleep=sleeps.append))
    assert info.value.file == first and first in str(info.value)
    with pytest.raises(BinlogPurgedError) as by_gtid:
        list(ReplicationClient(fresh_server.options(), StartAt.after_gtid(gtid_before), sleep=sleeps.append))
    assert "GTID" in str(by_gtid.value) and "purged" in str(by_gtid.value)
    assert sleeps == []  # never retried: retrying cannot bring the file back


def test_a_stopped_server_is_a_timeout_not_a_hang(fresh_server: ReplServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="binlake.replication")
    server = fresh_server.server
    options = fresh_server.options(heartbeat=0.3, timeout=1.5, retry=RetryPolicy(2, 0.1, 0.2))
    client = ReplicationClient(options, StartAt.current())
    events = iter(client)
    until(events, idle, [])
    os.kill(server.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(ReplicationTimeoutError, match=r"1\.5 s"):
            for _ in events:
                pass
        elapsed = time.monotonic() - t0
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert elapsed < 20
    attempts = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(attempts) == 3  # two reconnection attempts, one line each, then the error
    assert "giving up" in attempts[-1].getMessage() and PASSWORD not in caplog.text
