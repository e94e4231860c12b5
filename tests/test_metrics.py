"""``binlake.metrics`` without a server: where each lag is measured and what it reads (caught up, held back, a
commit behind the stream), the bytes lag against the server's binlog sizes, the no-op default, the Prometheus text
and the JSON line of the same figures, a port taken or refused before any run starts, and the row counts the tail's
two formats keep for it (equal to what they print)."""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from binlake.changes import ChangeStream, FileSource
from binlake.cli.metrics import add_metrics_arguments, metrics_options
from binlake.metrics import (
    FIGURES,
    NO_METRICS,
    MetricsError,
    MetricsOptions,
    Recorder,
    bytes_after,
    start_metrics,
)
from binlake.reader import read_events
from binlake.render.changes.debezium import DebeziumEncoder
from binlake.render.dump import DumpOptions, TextPrinter

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "example-bin.000001"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def args(*argv: str) -> MetricsOptions:
    parser = argparse.ArgumentParser()
    add_metrics_arguments(parser)
    return metrics_options(parser.parse_args(list(argv)))


def scrape(url: str) -> dict[str, float]:
    """``name{labels}`` -> value of a Prometheus text exposition."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


# -- lag ---------------------------------------------------------------------------------------------------------


def test_stream_lag_is_the_last_events_age_until_the_stream_is_caught_up() -> None:
    clock = Clock(1000.0)
    r = Recorder("tail", ("stream", "commit"), clock=clock)
    assert r.snapshot().lag_seconds == {"stream": None, "commit": None}  # nothing read, nothing known
    r.caught_up()  # an idle server's heartbeat before any event
    assert r.snapshot().lag_seconds["stream"] == 0.0
    r.event(990, "b.000001", 400)
    clock.now = 1003.5
    assert r.snapshot().lag_seconds["stream"] == 13.5  # read, not known to be caught up: the event's age
    clock.now = 1010.0
    assert r.snapshot().lag_seconds["stream"] == 20.0  # held back: it grows
    r.caught_up()  # a heartbeat at the stream's position
    assert r.snapshot().lag_seconds["stream"] == 0.0
    clock.now = 5000.0
    assert r.snapshot().lag_seconds["stream"] == 0.0  # an idle server: stays 0, does not grow
    r.event(4999, "b.000001", 500)
    assert r.snapshot().lag_seconds["stream"] == 1.0
    r.event(0, "b.000001", 520)  # an event without a time (timestamp 0) does not count for the lag
    assert r.snapshot().lag_seconds["stream"] == 1.0
    assert r.snapshot().events == 3


def test_commit_lag_is_the_first_uncommitted_events_age() -> None:
    clock = Clock(2000.0)
    r = Recorder("ingest --host", ("stream", "commit"), clock=clock)
    r.event(1900, "b.000001", 300)  # the first event not committed
    r.event(1950, "b.000001", 600)
    assert r.snapshot().lag_seconds == {"stream": 50.0, "commit": 100.0}
    asked = []

    def pending() -> int:
        asked.append(1)
        return 1940

    r.committed(("b.000001", 300), rows={"insert": 2}, batches=1, pending=pending)  # the lake is behind the stream
    assert asked and r.snapshot().lag_seconds == {"stream": 50.0, "commit": 60.0}
    r.caught_up()
    assert r.snapshot().lag_seconds == {"stream": 0.0, "commit": 60.0}
    r.committed(("b.000001", 600), batches=1, pending=lambda: pytest.fail("not asked: nothing is pending"))
    assert r.snapshot().lag_seconds == {"stream": 0.0, "commit": 0.0}  # everything read is committed, idle
    clock.now = 2100.0
    r.event(2090, "b.000001", 700)  # a write after a long idle time: its own age, not the last commit's
    assert r.snapshot().lag_seconds == {"stream": 10.0, "commit": 10.0}
    s = r.snapshot()
    assert (s.batches, s.row_changes["insert"], s.last_commit) == (2, 2, 2000.0)


def test_bytes_lag_from_the_servers_binlog_sizes() -> None:
    sizes = [("b.000001", 1000), ("b.000002", 300), ("b.000003", 120)]
    assert bytes_after(("b.000001", 400), sizes) == 600 + 300 + 120
    assert bytes_after(("b.000003", 120), sizes) == 0
    assert bytes_after(("b.000003", 150), sizes) == 0  # a poll older than the stream
    assert bytes_after(("b.000004", 4), sizes) == 0
    assert bytes_after(("a.000001", 4), sizes) is None  # purged, or another server's
    assert bytes_after(("b.000001", 4), []) is None

    clock = Clock(100.0)
    r = Recorder("tail", ("stream", "commit"), clock=clock)
    r.event(99, "b.000002", 100)
    assert r.snapshot().lag_bytes == {"stream": None, "commit": None}  # not polled yet
    r.server_sizes(sizes, r.stream_mark())
    assert r.snapshot().lag_bytes == {"stream": 320, "commit": None}  # read, and no commit yet: not known
    r.committed(("b.000002", 100))
    assert r.snapshot().lag_bytes == {"stream": 320, "commit": 320}  # the commit has all the stream has
    mark = r.stream_mark()
    r.event(99, "b.000003", 120)  # read while the poll ran
    r.server_sizes(sizes, mark)
    assert r.snapshot().lag_bytes["stream"] == 0 and r.snapshot().lag_seconds["stream"] == 1.0  # not caught up
    r.server_sizes(sizes, r.stream_mark())  # the stream was at the server's end when it was polled: caught up
    assert r.snapshot().lag_seconds["stream"] == 0.0
    r.committed(("b.000002", 100), pending=lambda: 99)
    assert r.snapshot().lag_bytes == {"stream": 0, "commit": 320}


def test_no_metrics_is_the_default_and_keeps_nothing() -> None:
    NO_METRICS.event(1, "f", 4)
    NO_METRICS.committed(("f", 4), rows={"insert": 1})
    assert not NO_METRICS.enabled
    run = start_metrics(args(), "tail", stages=("stream",))
    assert run.metrics is NO_METRICS and run.address is None
    run.poll_server(lambda: pytest.fail("nothing polls without metrics"), lambda: None)
    run.close()


# -- serving -----------------------------------------------------------------------------------------------------


def test_prometheus_text_and_json_lines_show_the_same_figures(capsys: pytest.CaptureFixture[str]) -> None:
    run = start_metrics(args("--metrics-port", "0", "--metrics-log", "0.2"), "tail", stages=("stream", "commit"))
    try:
        assert run.address is not None and run.address.startswith("http://127.0.0.1:")
        r = run.metrics
        assert isinstance(r, Recorder)
        now = int(time.time())
        r.event(now - 30, "b.000001", 400)
        r.committed(("b.000001", 400), rows={"insert": 3, "delete": 1})
        r.retry()
        polls: list[int] = []
        closed: list[int] = []

        def sizes() -> list[tuple[str, int]]:
            polls.append(1)
            return [("b.000001", 1400)]

        run.poll_server(sizes, lambda: closed.append(1))
        deadline = time.monotonic() + 10
        while not polls and time.monotonic() < deadline:
            time.sleep(0.05)
        got = scrape(run.address)
        time.sleep(0.3)
    finally:
        run.close()
    assert closed == [1]  # the poll's connection is closed with the run
    assert got['binlake_info{command="tail",version="0.1.0"}'] == 1.0
    assert got["binlake_events_total"] == 1.0
    assert got['binlake_row_changes_total{op="insert"}'] == 3.0
    assert got['binlake_row_changes_total{op="update"}'] == 0.0  # every operation from the start (rate() needs it)
    assert got["binlake_retries_total"] == 1.0
    assert got['binlake_lag_bytes{stage="stream"}'] == got['binlake_lag_bytes{stage="commit"}'] == 1000.0
    assert 29.0 <= got['binlake_lag_seconds{stage="stream"}'] < 40.0
    assert abs(got["binlake_last_commit_timestamp_seconds"] - time.time()) < 30
    assert "binlake_batches_total" not in got and "binlake_skips_total" not in got  # not the tail's
    assert "process_resident_memory_bytes" in got
    with pytest.raises(OSError):  # closed
        urllib.request.urlopen(run.address, timeout=2)

    err = capsys.readouterr().err
    assert f"binlake tail: metrics at {run.address}" in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert len(lines) >= 2  # every 0.2 s, and one at the end
    last = lines[-1]
    assert last["command"] == "tail" and last["binlake_events_total"] == 1
    assert last["binlake_row_changes_total"] == {"delete": 1, "insert": 3, "update": 0}
    assert last["binlake_lag_bytes"] == {"stream": 1000, "commit": 1000}
    assert 29 <= last["binlake_lag_seconds"]["stream"] < 40
    assert last["binlake_retries_total"] == 1
    assert {f.name for f in FIGURES if "tail" in f.commands} - {"binlake_info"} == set(last) - {"time", "command"}


def test_a_port_taken_or_an_address_not_ours_is_an_error_before_the_run() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(MetricsError, match=rf"--metrics-port {port}: cannot listen on 127.0.0.1:{port}: "):
            start_metrics(args("--metrics-port", str(port)), "mirror", stages=("stream",))
    # 192.0.2.1 (TEST-NET-1) is never this machine's: nothing listens, nothing is sent
    with pytest.raises(MetricsError, match=re.escape("cannot listen on 192.0.2.1:0: ")):
        start_metrics(args("--metrics-port", "0", "--metrics-host", "192.0.2.1"), "mirror", stages=("stream",))
    with pytest.raises(MetricsError, match="give --metrics-port too"):  # an option that would do nothing
        start_metrics(args("--metrics-host", "::1", "--metrics-log", "5"), "tail")
    for bad in (["--metrics-port", "65536"], ["--metrics-port", "x"], ["--metrics-log", "0"]):
        with pytest.raises(SystemExit) as exit_:
            args(*bad)
        assert exit_.value.code == 2


@pytest.mark.parametrize(
    "command",
    [
        ["tail", "--host", "127.0.0.1", "--port", "1", "--user", "u", "--server-id", "7"],
        ["mirror", "--host", "127.0.0.1", "--port", "1", "--user", "u", "--server-id", "7", "DIR"],
        ["ingest", "--host", "127.0.0.1", "--port", "1", "--user", "u", "--server-id", "7", "--lake", "LAKE"],
    ],
)
def test_each_command_refuses_a_taken_port_with_exit_2_at_once(command: list[str], tmp_path: Path) -> None:
    argv = [a.replace("DIR", str(tmp_path / "d")).replace("LAKE", str(tmp_path / "lake")) for a in command]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        t0 = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "binlake", *argv, "--metrics-port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={"BINLAKE_PASSWORD": "x", "PATH": "/usr/bin:/bin"},
        )
    assert done.returncode == 2, done.stderr
    assert re.search(rf"binlake {argv[0]}: --metrics-port {port}: cannot listen on 127\.0\.0\.1:{port}: ", done.stderr)
    assert "Traceback" not in done.stderr and "Spark" not in done.stderr
    assert time.monotonic() - t0 < 20  # no connection tried (port 1 refuses), no JVM started
    assert not (tmp_path / "d").exists() and not (tmp_path / "lake").exists()


# -- the tail's row counts -----------------------------------------------------------------------------------------


def test_the_tails_formats_count_the_row_changes_they_write() -> None:
    encoder = DebeziumEncoder()
    lines = b"".join(encoder.encode(trx) for trx in ChangeStream(FileSource([str(EXAMPLE)]))).splitlines()
    ops = Counter(json.loads(line)["op"] for line in lines)
    assert encoder.counts == Counter(insert=ops["c"], update=ops["u"], delete=ops["d"])
    assert encoder.written == len(lines) > 300

    chunks: list[str] = []
    printer = TextPrinter(chunks.append, DumpOptions())
    printer.begin()
    for ev in read_events(EXAMPLE):
        printer.feed(ev)
    printer.finish()
    text = "".join(chunks)
    printed = Counter(insert=text.count("### INSERT INTO"), update=text.count("### UPDATE"))
    printed["delete"] = text.count("### DELETE FROM")
    assert printer.row_counts == printed == encoder.counts


def test_the_docs_list_every_figure_with_its_type() -> None:
    text = (REPO / "docs" / "reference" / "metrics.md").read_text(encoding="utf-8")
    listed = dict(re.findall(r"^\| `(binlake_\w+)` \| (counter|gauge) \|", text, re.MULTILINE))
    assert listed == {f.name: f.kind for f in FIGURES}
