"""The benchmark's one command runs end to end on a tiny binlog and its figures hold together.

``benchmarks/run.py --scale 0.001 --runs 1`` generates 110 transactions with a private MariaDB, measures every
command once and writes JSON; this checks that every command succeeded, that binlake and python-mysql-replication
counted the same row changes, and that this count is the one ``mariadb-binlog -v`` prints for the kept file.
``binlake ingest`` is left out (``--skip ingest``): Spark's start alone takes 20 to 50 s on a busy 2-core machine,
which would break the 60 s budget of this test, and tests/spark covers the command.  About 15 s.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.testing.mariadb import available, run_mariadb_binlog

pytestmark = pytest.mark.server

RUN = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"
ROW_CHANGE = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) ", re.MULTILINE)


@pytest.mark.skipif(not available(), reason="MariaDB server not installed")
def test_run_scale_0_001(tmp_path: Path) -> None:
    skip = ["--skip", "ingest"]
    if importlib.util.find_spec("pymysqlreplication") is None:  # benchmark-only: pip install mysql-replication
        skip += ["--skip", "python-mysql-replication"]
    out = tmp_path / "bench.json"
    keep = tmp_path / "keep"
    cmd = [sys.executable, str(RUN), "--scale", "0.001", "--runs", "1", "--json", str(out), "--keep", str(keep)]
    proc = subprocess.run([*cmd, *skip], capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text("utf-8"))

    assert doc["transactions"] == 110
    results = {r["name"]: r for r in doc["results"]}
    assert all(r["ok"] for r in results.values()), [(n, r["note"]) for n, r in results.items() if not r["ok"]]
    expected = {"mariadb-binlog", "mariadb-binlog -vv DECODE-ROWS", "binlake decode (typed)", "binlake dump"}
    assert expected <= results.keys()
    assert not any("ingest" in name for name in results)

    # every row change of the file, as mariadb-binlog counts them, was decoded by binlake (and by the peer)
    rc, text, err = run_mariadb_binlog(["-v", "--base64-output=DECODE-ROWS"], keep / "server" / "data" / doc["binlog"])
    assert rc == 0, err
    changes = len(ROW_CHANGE.findall(text))
    assert 110 <= changes <= 110 * 100
    assert doc["row_changes"] == changes
    assert set(doc["rows_counted"].values()) == {changes}
    assert results["binlake decode (typed)"]["rows_per_s"] == pytest.approx(
        changes / results["binlake decode (typed)"]["median_seconds"]
    )

    # the prefix is the whole file at this scale (< 10 MiB); the ratios compare like with like
    assert doc["prefix_bytes"] == doc["binlog_bytes"]
    ratios = doc["speed_vs_peers"]["wall"]["binlake decode (typed)"]
    assert ratios["mariadb-binlog"] == pytest.approx(
        results["mariadb-binlog"]["median_seconds"] / results["binlake decode (typed)"]["median_seconds"]
    )
    assert "binlake decode (typed) 10 MiB" not in doc["speed_vs_peers"]["cpu"]


@pytest.mark.skipif(not available(), reason="MariaDB server not installed")
def test_run_live_scale_0_001(tmp_path: Path) -> None:
    """``--live``: binlake tail --no-follow and the live peers stream the same binlog from the server."""
    skip = [] if importlib.util.find_spec("pymysqlreplication") else ["--skip", "python-mysql-replication"]
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(RUN), "--live", "--scale", "0.001", "--runs", "1", "--json", str(out), *skip]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text("utf-8"))
    results = {r["name"]: r for r in doc["results"]}
    assert all(r["ok"] for r in results.values()), [(n, r["note"]) for n, r in results.items() if not r["ok"]]
    live = {"mariadb-binlog remote -vv", "binlake tail --no-follow", "binlake tail --no-follow debezium"}
    assert live <= set(results)
    assert "binlake dump" not in results
    assert len(set(doc["rows_counted"].values())) == 1 and doc["row_changes"] >= 110
    # (at this scale a peer's CPU time may be under GNU time's 10 ms grain, so its ratio may be 0)
    ratio = doc["speed_vs_peers"]["cpu"]["binlake tail --no-follow"]["mariadb-binlog remote -vv"]
    assert isinstance(ratio, float) and ratio >= 0 and results["binlake tail --no-follow"]["median_cpu_seconds"] > 0


CURRENT = RUN.parent / "current.py"


def test_current_sequential_keys_and_a_size_that_does_not_fit(tmp_path: Path) -> None:
    """``benchmarks/current.py`` on a tiny table: both key patterns give correct rows with their bytes, files and
    peak; a larger size past ``--budget`` is left out by the plan, with the figures that did not fit."""
    pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")
    out = tmp_path / "current.json"
    cmd = [sys.executable, str(CURRENT), "--rows", "20000", "400000", "--changes", "10", "--keys", "random",
           "sequential", "--layouts", "dv", "--runs", "1", "--budget", "0", "--json", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text("utf-8"))
    runs = [r for r in doc if r["method"] in ("dv", "delta-rs")]
    assert {(r["keys"], r["method"]) for r in runs} == {
        (k, m) for k in ("random", "sequential") for m in ("dv", "delta-rs")
    }
    for r in runs:
        assert r["rows"] == 20000 and r["correct"] and r["rows_after"] == 20001
        assert r["bytes_added"] > 0 and r["files_added"] >= 1 and r["peak_mib"] >= r["rss_before_mib"] > 0
    [left] = [r for r in doc if r["method"] == "plan"]
    assert left["rows"] == 400000 and "does not fit (time)" in left["left_out"] and "x20 the 20,000" in left["left_out"]
