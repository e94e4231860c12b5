"""``--metrics-port`` of ``binlake tail`` and ``binlake mirror`` against a private MariaDB, scraped over HTTP as
Prometheus does: the events counted equal the events of the server's files, the row changes equal what
``mariadb-binlog -vv`` prints for them; on an idle server the lag reads 0 in seconds and bytes (not the age of the
last write); a tail held back (its standard output not read) reads, in bytes, exactly the server's
``SHOW MASTER STATUS`` minus where its stream and its commit stand, and in seconds a lag that grows; once let go
it catches up to 0; the server killing the dump thread is one retry, and no event is counted twice after it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest
from tests.replication.conftest import PASSWORD, ReplServer, batch, file_events
from tests.replication.test_resume import kill_dump_thread
from tests.replication.test_tail import ENV, tail_cmd, vv_changes

from binlake.metrics import SERVER_POLL
from binlake.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.server
OPS = {"c": "insert", "u": "update", "d": "delete"}


def metrics_url(log: Path, proc: subprocess.Popen[Any]) -> str:
    """The address the command says it serves its metrics at (``--metrics-port 0``: a free port)."""
    deadline = time.monotonic() + 60
    while True:
        m = re.search(r"metrics at (http://\S+)", log.read_text()) if log.exists() else None
        if m:
            return m[1]
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


def scrape(url: str) -> dict[str, float]:
    """``name{labels}`` -> value, from the Prometheus text exposition at ``url``."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {k: float(v) for k, _, v in (line.rpartition(" ") for line in text.splitlines() if line[:1] != "#")}


def wait_for(url: str, what: Callable[[dict[str, float]], bool], timeout: float = 60.0) -> dict[str, float]:
    """Scrape until ``what`` holds; the last scrape."""
    deadline = time.monotonic() + timeout
    while True:
        got = scrape(url)
        if what(got):
            return got
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def server_position(server: MariaDBServer) -> tuple[str, int]:
    ((file, pos, *_),) = server.query("SHOW MASTER STATUS")
    return str(file), int(pos or 0)


def expected_rows(server: MariaDBServer) -> dict[str, float]:
    """The row changes of the server's files per operation, as ``mariadb-binlog -vv`` prints them."""
    ops = Counter(OPS[op] for _db, _t, op, _b, _a in vv_changes(server))
    return {f'binlake_row_changes_total{{op="{op}"}}': float(ops[op]) for op in OPS.values()}


def rows_of(got: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in got.items() if k.startswith("binlake_row_changes_total")}


def lag(got: dict[str, float], unit: str, stage: str) -> float:
    return got[f'binlake_lag_{unit}{{stage="{stage}"}}']


def idle_reads_zero(url: str, server: MariaDBServer, stages: tuple[str, ...]) -> None:
    """Three seconds after the last write (older than that, a lag of the last event's age would read 3 or more),
    every stage reads 0 seconds and, once the server's sizes were polled, 0 bytes."""
    time.sleep(3.0)
    got = wait_for(url, lambda g: all(lag(g, "seconds", s) == 0 for s in stages), timeout=10)
    got = wait_for(url, lambda g: all(f'binlake_lag_bytes{{stage="{s}"}}' in g for s in stages), SERVER_POLL + 5)
    assert all(lag(got, "bytes", s) == 0 for s in stages), got


class Reader:
    """Reads a process's standard output into memory, unless held (then the pipe fills and the writer blocks)."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.pipe, self.data = pipe, bytearray()
        self.go = threading.Event()
        self.go.set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while self.go.wait() and (chunk := self.pipe.read1(1 << 16)):
            self.data += chunk


def test_tail_metrics_count_lag_and_retries(fresh_server: ReplServer, tmp_path: Path) -> None:
    server = fresh_server.server
    batch(server, 0)
    log = tmp_path / "stderr"
    with log.open("wb") as err:
        cmd = tail_cmd(fresh_server, "repl_native", "--from-start", "--format", "debezium", "--metrics-port", "0")
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=err)
    assert proc.stdout is not None
    out = Reader(proc.stdout)
    try:
        url = metrics_url(log, proc)
        assert url.startswith("http://127.0.0.1:")

        # every event of the server's files once, every row change as mariadb-binlog -vv prints them
        got = wait_for(url, lambda g: g["binlake_events_total"] == len(file_events(server)))
        assert rows_of(got) == expected_rows(server) and sum(rows_of(got).values()) == 63
        idle_reads_zero(url, server, ("stream", "commit"))
        assert time.time() - scrape(url)["binlake_last_commit_timestamp_seconds"] > 3.0

        # held back: the tail blocks writing a big transaction nobody reads; its stream has read that transaction,
        # its commit (the state after the last transaction delivered) is before it
        out.go.clear()
        time.sleep(0.5)
        before = server_position(server)
        server.execute(
            "BEGIN; INSERT INTO r.t SELECT 500 + seq, 0, REPEAT('b', 8000) FROM seq.seq_1_to_400; COMMIT"
        )  # about 3 MiB of JSON: far more than a pipe holds
        big = server_position(server)
        batch(server, 1)
        end = server_position(server)
        assert before[0] == big[0] == end[0]
        got = wait_for(
            url,
            lambda g: lag(g, "bytes", "commit") == end[1] - before[1] and lag(g, "bytes", "stream") == end[1] - big[1],
            timeout=SERVER_POLL * 3,
        )
        first = lag(got, "seconds", "stream")
        time.sleep(2.0)
        got = scrape(url)
        assert lag(got, "seconds", "stream") >= first + 1.5  # it grows while held back
        assert lag(got, "seconds", "commit") >= lag(got, "seconds", "stream") > 0
        assert lag(got, "bytes", "commit") == end[1] - before[1]  # against SHOW MASTER STATUS, exactly

        # let go: it catches up, and counts the new changes once
        out.go.set()
        got = wait_for(url, lambda g: g["binlake_events_total"] == len(file_events(server)))
        assert rows_of(got) == expected_rows(server)
        assert rows_of(got)['binlake_row_changes_total{op="insert"}'] == 41 + 400 + 41
        idle_reads_zero(url, server, ("stream", "commit"))

        # the server kills the dump thread: one reconnection, no event counted twice
        assert got["binlake_retries_total"] == 0
        kill_dump_thread(server)
        wait_for(url, lambda g: g["binlake_retries_total"] == 1)
        batch(server, 2)
        got = wait_for(url, lambda g: g["binlake_events_total"] == len(file_events(server)))
        assert rows_of(got) == expected_rows(server)
        time.sleep(1.0)
        assert scrape(url)["binlake_events_total"] == len(file_events(server))
    finally:
        out.go.set()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 130, log.read_text()  # Ctrl-C: ExitStatus.INTERRUPTED
    lines = out.data.splitlines()
    assert len(lines) == sum(rows_of(got).values())  # the row changes counted are the lines written
    written = Counter(OPS[m.decode()] for m in re.findall(rb'"op":"(.)","ts_ms"', out.data))
    assert {f'binlake_row_changes_total{{op="{op}"}}': float(n) for op, n in written.items()} == rows_of(got)
    assert PASSWORD not in log.read_text()


def test_mirror_metrics_count_lag_and_retries(fresh_server: ReplServer, tmp_path: Path) -> None:
    server = fresh_server.server
    batch(server, 0)
    log, copy = tmp_path / "stderr", tmp_path / "copy"
    cmd = [sys.executable, "-m", "binlake", "mirror", "--host", "127.0.0.1", "--port", str(server.port), "--user",
           "repl_native", "--server-id", "6262", "--heartbeat", "0.5", "--timeout", "5", "--from-start", "--follow",
           "--metrics-port", "0", str(copy)]  # fmt: skip
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=err)
    try:
        url = metrics_url(log, proc)
        got = wait_for(url, lambda g: g["binlake_events_total"] == len(file_events(server)))
        assert not rows_of(got) and "binlake_batches_total" not in got  # a mirror copies bytes: no row counts
        assert 'binlake_lag_seconds{stage="commit"}' not in got  # it writes each event as it reads it
        idle_reads_zero(url, server, ("stream",))

        kill_dump_thread(server)
        wait_for(url, lambda g: g["binlake_retries_total"] == 1)
        batch(server, 1, big=True)
        wait_for(url, lambda g: g["binlake_events_total"] == len(file_events(server)))
        idle_reads_zero(url, server, ("stream",))
        assert scrape(url)["binlake_events_total"] == len(file_events(server))
        assert [p.read_bytes() for p in server.binlog_files()] == [
            (copy / p.name).read_bytes() for p in server.binlog_files()
        ]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 130, log.read_text()  # Ctrl-C: ExitStatus.INTERRUPTED
