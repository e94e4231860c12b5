"""``binlake ingest --host --follow --metrics-port`` against a private MariaDB, scraped as Prometheus does: the events
counted equal the events of the server's files, the row changes landed equal what ``mariadb-binlog -vv`` prints,
the batches equal the lake's finished batches; idle, both stages read 0; between a write and the batch that lands
it, the commit stage reads, in bytes, exactly the server's ``SHOW MASTER STATUS`` minus the lake's resume point and
a lag in seconds, while the stream stage reads 0; a killed dump thread is one retry."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from tests.replication import conftest as replication
from tests.replication.conftest import PASSWORD, ReplServer, batch, file_events
from tests.replication.test_metrics import (
    expected_rows,
    idle_reads_zero,
    lag,
    metrics_url,
    rows_of,
    scrape,
    server_position,
    wait_for,
)
from tests.replication.test_resume import kill_dump_thread
from tests.spark.test_ingest_host import batches, live

from binlake.lake.lake import Lake
from binlake.metrics import SERVER_POLL

pytestmark = [pytest.mark.spark, pytest.mark.server]
fresh_server, tls_files = replication.fresh_server, replication.tls_files  # the replication tests' fixtures
REPO = Path(__file__).resolve().parents[2]
INTERVAL = 12.0  # seconds between batches: two polls of the server's sizes fit between a batch and the next


def test_live_ingest_metrics(spark: Any, fresh_server: ReplServer, tmp_path: Path) -> None:
    server, lake, log = fresh_server.server, tmp_path / "lake", tmp_path / "live.log"
    batch(server, 0)
    proc = live(server, str(lake), "--no-snapshot", "--from-start", "--follow", "--interval", str(INTERVAL),
                "--metrics-port", "0", log=log)  # fmt: skip
    try:
        url = metrics_url(log, proc)
        landed = lambda g: g["binlake_events_total"] == len(file_events(server)) and rows_of(g) == expected_rows(server)  # noqa: E731
        got = wait_for(url, lambda g: g.get("binlake_batches_total", 0) >= 1 and landed(g), timeout=180)
        assert sum(rows_of(got).values()) == 63
        idle_reads_zero(url, server, ("stream", "commit"))

        # right after a batch, a write: the stream reads it at once, the lake lands it only at the next batch
        before = scrape(url)["binlake_batches_total"]
        batch(server, 1)
        wait_for(url, lambda g: g["binlake_batches_total"] > before, timeout=INTERVAL * 3)
        batch(server, 2)
        end = server_position(server)
        manifest, _done = Lake(str(lake)).last_manifest()
        assert manifest is not None and manifest.resume is not None and manifest.resume.file == end[0]
        behind = end[1] - manifest.resume.position
        assert behind > 0
        got = wait_for(
            url,
            lambda g: lag(g, "bytes", "commit") == behind and lag(g, "seconds", "stream") == 0,
            timeout=SERVER_POLL + 3,
        )
        assert lag(got, "bytes", "stream") == 0 and lag(got, "seconds", "commit") > 0
        time.sleep(1.0)
        assert lag(scrape(url), "seconds", "commit") >= lag(got, "seconds", "commit") + 0.8  # it grows meanwhile
        got = wait_for(url, landed, timeout=INTERVAL * 3)
        idle_reads_zero(url, server, ("stream", "commit"))

        # the server kills the mirror's dump thread: one reconnection, nothing counted twice
        kill_dump_thread(server)
        wait_for(url, lambda g: g["binlake_retries_total"] == 1)
        batch(server, 3)
        got = wait_for(url, landed, timeout=INTERVAL * 3)
        assert got["binlake_batches_total"] == batches(lake)
        assert got["binlake_skips_total"] == 0
        assert time.time() - got["binlake_last_commit_timestamp_seconds"] < INTERVAL * 3
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    text = log.read_text()
    assert proc.returncode == 130, text[-3000:]  # Ctrl-C: ExitStatus.INTERRUPTED
    assert PASSWORD not in text


def test_a_batch_behind_the_stream_reads_the_first_event_it_has_not_landed(tmp_path: Path) -> None:
    """The commit stage's lag after a batch that ends before the stream: the age of the mirror's first event past the
    batch's resume point (in the same file, or, at a file's end, the next file's first), read from the copy."""
    from binlake.ingest.live import tell_batches
    from binlake.ingest.run import IngestResult
    from binlake.metrics import Recorder
    from binlake.reader import header_table
    from binlake.replication.position import ResumePoint
    from binlake.storage import locate

    example = (REPO / "examples" / "example-bin.000001").read_bytes()
    table = header_table(REPO / "examples" / "example-bin.000001")
    at = table.positions[7]
    first, second = bytearray(example), bytearray(example)
    first[at : at + 4] = (1_000_000_007).to_bytes(4, "little")  # (only the header's time is read)
    second[4:8] = (1_000_000_004).to_bytes(4, "little")
    mirror = tmp_path / "_binlogs"
    mirror.mkdir()
    (mirror / "b.000001").write_bytes(first)
    (mirror / "b.000002").write_bytes(second)
    for resume, ts in ((("b.000001", at), 1_000_000_007), (("b.000001", len(example)), 1_000_000_004)):
        recorder = Recorder("ingest --host", ("stream", "commit"), clock=lambda: 1_000_000_100.0)
        recorder.event(1_000_000_090, "b.000002", 600)  # the stream is past the batch
        result = IngestResult(batches=1, resume=ResumePoint(*resume))
        result.changes.update({"d/t insert": 3, "d/t update": 1})
        tell_batches(recorder, result, locate(str(mirror)))
        snap = recorder.snapshot()
        assert snap.lag_seconds["commit"] == 1_000_000_100 - ts, resume
        assert snap.lag_seconds["stream"] == 10.0
        assert (snap.batches, snap.row_changes["insert"], snap.row_changes["update"], snap.events) == (1, 3, 1, 1)
