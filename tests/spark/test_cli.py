"""``binlake ingest`` as a command (the JVM started in a thread while the driver plans: ``ingest`` given a Future
of the session), and :func:`binlake.ingest.run.ingest` given one that is not ready yet."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")

from binlake.errors import BinlogError
from binlake.ingest.progress import Progress
from binlake.ingest.run import MIN_SPLIT_BYTES, _balanced, ingest
from binlake.lake import Lake
from binlake.spark.runner import SparkRunner
from binlake.spark.session import context_of, local_cores

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "example-bin.000001"


def _run(*args: str, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO / "src"), **env_vars)
    return subprocess.run(
        [sys.executable, "-m", "binlake", "ingest", *args], capture_output=True, text=True, env=env, timeout=600
    )


def test_the_command_lands_the_example(tmp_path: Path) -> None:
    done = _run(str(EXAMPLE), "--lake", str(tmp_path / "lake"), "--master", "local[2]")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "866 row changes" in done.stdout
    assert "shop.orders        302     309      10" in done.stdout
    current = Lake(tmp_path / "lake").read(Lake(tmp_path / "lake").current("shop/orders"))
    assert current is not None and current.num_rows == 292
    again = _run(str(EXAMPLE), "--lake", str(tmp_path / "lake"), "--master", "local[2]")
    assert again.returncode == 0 and "nothing new" in again.stderr


def test_a_source_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    done = _run(str(tmp_path / "no-such-bin.000001"), "--lake", str(tmp_path / "lake"), "--master", "local[1]")
    assert done.returncode == 2
    assert "no-such-bin.000001: no such file or folder" in done.stderr
    assert not (tmp_path / "lake").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    quiet = _run(str(empty), "--lake", str(tmp_path / "lake2"), "--master", "local[1]")
    assert quiet.returncode == 0 and "nothing new" in quiet.stderr


def test_spark_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    done = _run(str(EXAMPLE), "--lake", str(tmp_path / "lake"), "--master", "local[1]", JAVA_HOME=str(tmp_path))
    assert done.returncode == 2
    assert "binlake ingest: cannot start Spark on local[1]: " in done.stderr
    assert "Traceback" not in done.stderr
    log = Path(re.search(r"\(Spark's own output: (\S+\.log)\)", done.stderr)[1])  # type: ignore[index]
    assert "java" in log.read_text()  # spark-submit's complaint about the missing Java, kept for the user
    log.unlink()


def test_a_first_ingest_shows_only_binlakes_lines(tmp_path: Path) -> None:
    """With a fresh HOME (the JVM writes its class-sharing archive: ~140 lines of warnings) and a `python3` on PATH
    that is not this interpreter (as when .venv/bin/binlake runs without the venv activated), a user sees
    binlake's progress lines and the summary only; --verbose shows Spark's own output too."""
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    impostor = bin_dir / "python3"
    impostor.write_text("#!/bin/sh\necho 'not the python binlake runs on' >&2\nexit 3\n")
    impostor.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "XDG_CACHE_HOME", "VIRTUAL_ENV")}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    lake = str(tmp_path / "lake")
    done = subprocess.run(
        [sys.executable, "-m", "binlake", "ingest", str(EXAMPLE), "--lake", lake, "--master", "local[2]"],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO / "src")}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if not line.startswith("binlake ingest: ")] == []
    assert done.stdout.startswith("ingested 1 batch: 1 file") and len(done.stdout.splitlines()) == 4
    assert list((home / ".cache" / "binlake").glob("spark-*.jsa"))  # the first run wrote the archive
    verbose = subprocess.run(
        [sys.executable, "-m", "binlake", "ingest", str(EXAMPLE), "--lake", lake + "2", "--master", "local[2]",
         "--verbose"],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO / "src")}, timeout=600,
    )  # fmt: skip
    assert verbose.returncode == 0 and "log4j" in verbose.stderr


def test_ingest_plans_while_the_session_starts(spark: Any, tmp_path: Path) -> None:
    """Given a Future of the session, ingest plans and scans at once and waits for the session to run its tasks."""
    starting: Future[Any] = Future()
    timer = threading.Timer(1.0, starting.set_result, [spark])
    timer.start()
    seen: list[tuple[str, bool]] = []  # each log line, and whether the session was there when it was written

    class Watched(Progress):
        def log(self, text: str) -> None:
            seen.append((text, starting.done()))
            super().log(text)

    progress = Watched(SparkRunner(starting), io.StringIO())
    result = ingest(SparkRunner(starting), [str(EXAMPLE)], str(tmp_path / "lake"), progress=progress, cores=2)
    timer.join()
    assert sum(result.changes.values()) == 866
    assert [t.split(":")[0] for t, _ in seen[:2]] == ["plan", "scan"]
    assert not seen[0][1] and not seen[1][1]  # planned and scanned before the session was up
    assert context_of(starting) is spark.sparkContext is context_of(spark) is context_of(spark.sparkContext)
    current = Lake(tmp_path / "lake").read(Lake(tmp_path / "lake").current("shop/customers"))
    assert current is not None and current.num_rows == 119
    with pytest.raises(BinlogError, match="no such file"):
        ingest(SparkRunner(starting), [str(tmp_path / "nothing*")], str(tmp_path / "lake2"), cores=1)


def test_local_cores() -> None:
    assert [local_cores(m) for m in ("local", "local[1]", "local[2]", "local[4,3]", "yarn")] == [1, 1, 2, 4, None]
    assert local_cores("local[*]") == (os.cpu_count() or 1)


@settings(max_examples=500)
@given(st.integers(1, 1 << 40), st.integers(1 << 20, 1 << 31), st.integers(1, 64))
def test_balanced_ranges(new_bytes: int, split_bytes: int, cores: int) -> None:
    """At most split_bytes, at least a task's worth; a multiple of the cores wherever that keeps ranges worth a
    task (the 1 GiB benchmark file: 16 ranges of 62 MiB, not 15 of 64 and one of 31)."""
    size = _balanced(new_bytes, split_bytes, cores)
    assert min(split_bytes, MIN_SPLIT_BYTES) <= size <= split_bytes
    ranges = _ceil(new_bytes, size)
    plain = min(split_bytes, max(MIN_SPLIT_BYTES, _ceil(new_bytes, cores)))
    multiple = _ceil(_ceil(new_bytes, plain), cores) * cores
    if _ceil(new_bytes, multiple) >= MIN_SPLIT_BYTES:
        assert ranges == multiple
    else:
        assert size == plain


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def test_a_snapshot_needs_a_password_its_tasks_can_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The snapshot's Spark tasks read the password where they run (--password-file or $BINLAKE_PASSWORD): one typed
    at the prompt would stay on the driver, so the snapshot refuses before it starts, without naming the password."""
    import argparse

    from binlake.errors import ReplicationError
    from binlake.replication.options import ConnectionOptions, Secret
    from binlake.spark.cli import _snapshots

    monkeypatch.delenv("BINLAKE_PASSWORD", raising=False)
    args = argparse.Namespace(snapshot=None, no_snapshot=False, tables=None, password_file=None, chunk_rows=1000)
    unused: Future[Any] = Future()  # Spark is never asked for: the refusal comes first
    unused.set_exception(AssertionError("the snapshot asked for Spark before checking the password"))
    first, again = _snapshots(args, SparkRunner(unused), Progress(None, io.StringIO()))
    assert first is not None and again is None
    options = ConnectionOptions(host="127.0.0.1", user="repl", server_id=7, password=Secret("typed-at-prompt"))
    with pytest.raises(ReplicationError, match="--password-file or \\$BINLAKE_PASSWORD") as err:
        first(Lake(str(tmp_path / "lake")), options)
    assert "typed-at-prompt" not in str(err.value)
