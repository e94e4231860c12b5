"""Two ``binlake ingest`` runs into one lake at once, on a local disk and on S3: the second waits for the first (or,
without ``--wait``, stops and says why), the lake ends as one run leaves it, and while the first writes, readers of
the Delta log (deltalake, Spark through ``binlake-lake``) see each table whole or not at all, never a part of a
batch.  The lease and commit races themselves are tested without Spark in ``tests/test_lake.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from binlake.lake.lease import WriterLease
from binlake.storage import Location, locate
from spark.test_spark import CORPUS_FILES, _delta, _delta_tables, _lake_snapshot  # tests/ is on sys.path

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sources(storage: Any, corpus_dir: Path) -> str:
    return str(storage.sources([corpus_dir / "mariadb" / "binlogs" / n for n in CORPUS_FILES]))


@pytest.fixture(scope="module")
def one_run(spark: Any, storage: Any, sources: str) -> dict[str, Any]:
    """The lake one ingest of the sources leaves, as a snapshot, with every table's rows."""
    from binlake.spark.ingest import ingest

    lake = storage.uri("lake")
    ingest(spark, [sources], lake)
    return {
        "snapshot": _lake_snapshot(lake),
        "tables": {t.relative_to(locate(lake)): _rows(t) for t in _delta_tables(lake)},
    }


def _rows(table: Location) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in _delta(table).to_pylist())


def _ingest(sources: str, lake: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "binlake", "ingest", sources, "--lake", lake, "--master", "local[1]", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _held_by(lake: str, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    """Wait until ``proc`` holds the lake's writer lease."""
    lease = WriterLease(locate(lake))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        _, record = lease._latest()
        if record is not None and record.pid == proc.pid and record.expires > time.time():
            return
        time.sleep(0.05)
    raise AssertionError("the first ingest never took the lake")


def test_a_second_ingest_waits_and_readers_see_whole_batches(
    spark: Any, storage: Any, sources: str, one_run: dict[str, Any]
) -> None:
    lake = storage.uri("lake")
    first = _ingest(sources, lake)
    _held_by(lake, first)
    second = _ingest(sources, lake, "--wait", "300")
    seen: dict[str, int] = {}
    spark_read = False
    while first.poll() is None:  # read the lake while the first writes it
        for table in _delta_tables(lake):
            key = table.relative_to(locate(lake))
            try:
                rows = _rows(table)
            except Exception:  # the table being created between listing and reading
                continue
            assert rows == one_run["tables"][key], f"{key}: a part of a batch is visible"
            seen[key] = seen.get(key, 0) + 1
            if not spark_read and key == "corpus_dml/accounts/changes":
                got = spark.read.format("binlake-lake").load(table.uri).count()
                assert got == len(one_run["tables"][key])
                spark_read = True
        time.sleep(0.05)
    out1, err1 = first.communicate()
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0, err1[-3000:]
    assert second.returncode == 0, err2[-3000:]
    assert "ingested 1 batch: 3 files" in out1
    assert "waiting up to 300 s for another ingest writing this lake (pid" in err2
    assert "ingested 0 batches" in out2 and "waited" in out2  # the first ingested everything
    assert _lake_snapshot(lake) == one_run["snapshot"]
    assert seen  # the lake was read while being written


def test_a_second_ingest_without_wait_refuses(storage: Any, sources: str, one_run: dict[str, Any]) -> None:
    lake = storage.uri("lake")
    first = _ingest(sources, lake)
    _held_by(lake, first)
    second = _ingest(sources, lake)
    _, err2 = second.communicate(timeout=300)
    assert second.returncode == 3  # TEMPORARY: another ingest holds the lake; a later run goes on
    assert f"another binlake ingest is writing this lake (pid {first.pid} on " in err2
    assert "--wait SECONDS waits for it" in err2 and "Traceback" not in err2
    _, err1 = first.communicate(timeout=300)
    assert first.returncode == 0, err1[-3000:]
    assert _lake_snapshot(lake) == one_run["snapshot"]
