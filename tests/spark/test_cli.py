"""``binlake ingest`` as a command (the JVM started in a thread while the driver plans: ``ingest`` given a Future
of the session), and :func:`binlake.ingest.run.ingest` given one that is not ready yet."""

from __future__ import annotations

import io
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
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
    """Without Java (a ``JAVA_HOME`` holding none, or none on ``PATH``) or with one older than Spark 4's 17, one line
    says so and what to do (it said "cannot start Spark" and named a log file); another failure to start names the
    log of the JVM's own output."""
    hint = "install a JRE 17 (Debian: openjdk-17-jre-headless) or set JAVA_HOME"
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    nowhere = _run(str(EXAMPLE), "--lake", str(tmp_path / "lake"), "--master", "local[1]", JAVA_HOME=str(tmp_path))
    assert (nowhere.returncode, nowhere.stderr) == (
        2, f"binlake ingest: Java not found (JAVA_HOME={tmp_path} holds no bin/java): {hint}\n"
    )  # fmt: skip
    no_path = subprocess.run(
        [sys.executable, "-m", "binlake", "ingest", str(EXAMPLE), "--lake", str(tmp_path / "lake")],
        capture_output=True, text=True, timeout=600,
        env={**env, "PATH": str(tmp_path / "no-bin"), "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    assert (no_path.returncode, no_path.stderr) == (2, f"binlake ingest: Java not found (PATH): {hint}\n")
    old = tmp_path / "jdk11"
    (old / "bin").mkdir(parents=True)
    (old / "bin" / "java").write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\nexit 1\n")
    (old / "bin" / "java").chmod(0o755)
    assert not (tmp_path / "lake").exists()  # (found missing before the lake is touched)
    eleven = _run(str(EXAMPLE), "--lake", str(tmp_path / "lake"), "--master", "local[1]", JAVA_HOME=str(old))
    assert eleven.returncode == 2 and "Traceback" not in eleven.stderr
    assert eleven.stderr.splitlines()[-1] == (
        f"binlake ingest: Java 11 at {old / 'bin' / 'java'}: Spark 4 needs 17 or later: {hint} to one"
    )
    bad_master = _run(str(EXAMPLE), "--lake", str(tmp_path / "lake"), "--master", "no-such-master")
    assert bad_master.returncode == 2 and "Traceback" not in bad_master.stderr
    assert "binlake ingest: cannot start Spark on no-such-master: " in bad_master.stderr
    log = Path(re.search(r"\(Spark's own output: (\S+\.log)\)", bad_master.stderr)[1])  # type: ignore[index]
    assert log.read_text()  # the JVM's own complaint, kept for the user
    log.unlink()


def _sigint_as_a_terminal() -> None:
    """(In the child) SIGINT's default disposition: a process started in the background with SIGINT ignored would
    pass that on, and Python would not turn a Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_mid_decode_is_one_line_and_the_next_run_finishes_the_batch(tmp_path: Path) -> None:
    """SIGINT to the process group (a terminal's Ctrl-C: Python, the JVM and Spark's Python workers) while the
    batch's tasks decode: one line that says what is safe, status 130 (it printed 34-65 lines of py4j's and
    binlake's tracebacks, then "decode: done"); the next run finishes the batch, and the lake is a clean run's."""
    lake = str(tmp_path / "lake")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO / "src"))
    command = [sys.executable, "-m", "binlake", "ingest", str(EXAMPLE), "--lake", lake, "--master", "local[1]"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_sigint_as_a_terminal)  # fmt: skip
    lines = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("binlake ingest: decode: 0/1 tasks"):  # the task runs
                os.killpg(proc.pid, signal.SIGINT)
                break
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    err = "".join(lines) + err
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "binlake ingest: interrupted: batch 1 is not finished; the next run finishes it"
    assert all(line.startswith("binlake ingest: ") for line in err.splitlines()), err
    assert "decode: done" not in err and out == ""
    again = _run(str(EXAMPLE), "--lake", lake, "--master", "local[1]")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "binlake ingest: finishing interrupted batch 1\n" in again.stderr and "866 row changes" in again.stdout
    current = Lake(lake).read(Lake(lake).current("shop/orders"))
    assert current is not None and current.num_rows == 292


def test_a_lake_that_cannot_be_written_is_one_line_at_once(
    tmp_path: Path, read_only_dir: tuple[Path, list[str]]
) -> None:
    """``binlake ingest examples/ --lake F``, F a file or in a read-only folder: it ran at full CPU, silently, for
    ever (the lease took the store's error for a lost race)."""
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a lake\n")
    folder, prefix = read_only_dir
    read_only = "Read-only file system" if prefix else "Permission denied"  # (a mount, or the folder's mode)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO / "src"))
    for lake, reason, under in ((in_the_way, "Not a directory", []), (folder / "lake", read_only, prefix)):
        command = [*under, sys.executable, "-m", "binlake", "ingest", str(EXAMPLE), "--lake", str(lake)]
        t0 = time.monotonic()
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (
            2, f"binlake ingest: {lake}: cannot write the lake (its writer lease, _binlake/lease): {reason}\n"
        )  # fmt: skip
        assert time.monotonic() - t0 < 60


def test_a_damaged_binlog_exits_as_in_the_other_commands(tmp_path: Path) -> None:
    """The data error ``events``, ``dump``, ``stats`` and ``changes`` exit 2 with (``tests/test_cli.py``) is the
    ingest's too: the same line, from a Spark task."""
    data = bytearray(EXAMPLE.read_bytes())
    data[11954 + 31 - 1] ^= 0xFF  # the CRC32 of the XID_EVENT at 11954 (31 bytes)
    damaged = tmp_path / "damaged-bin.000001"
    damaged.write_bytes(bytes(data))
    done = _run(str(damaged), "--lake", str(tmp_path / "lake"), "--master", "local[1]")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"binlake ingest: {damaged}: at 11954: CRC32 mismatch in XID_EVENT: stored 0x39f96a5d, computed 0xc6f96a5d "
        "(--on-error skip-event or skip-transaction reads on past it)"
    )
    assert "decode: done" not in done.stderr


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

    from binlake.cli.ingest import _snapshots
    from binlake.errors import ReplicationError
    from binlake.replication.options import ConnectionOptions, Secret

    monkeypatch.delenv("BINLAKE_PASSWORD", raising=False)
    args = argparse.Namespace(snapshot=None, no_snapshot=False, tables=None, password_file=None, chunk_rows=1000)
    unused: Future[Any] = Future()  # Spark is never asked for: the refusal comes first
    unused.set_exception(AssertionError("the snapshot asked for Spark before checking the password"))
    first, again, reread = _snapshots(args, SparkRunner(unused), Progress(None, io.StringIO()))
    assert first is not None and again is None
    options = ConnectionOptions(host="127.0.0.1", user="repl", server_id=7, password=Secret("typed-at-prompt"))
    with pytest.raises(ReplicationError, match="--password-file or \\$BINLAKE_PASSWORD") as err:
        first(Lake(str(tmp_path / "lake")), options)
    assert "typed-at-prompt" not in str(err.value)
    with pytest.raises(ReplicationError, match="--password-file or \\$BINLAKE_PASSWORD") as err:
        reread(Lake(str(tmp_path / "lake")), options, ["shop.t"])  # (the live ingest says it and goes on)
    assert "typed-at-prompt" not in str(err.value)


class _Lines:
    """The lines a process writes, read by a thread as they come, so that a test can wait for one with a timeout."""

    def __init__(self, stream: Any) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, wanted: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(wanted in line for line in self.seen):
            line = self._queue.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, f"ended before {wanted!r}: {''.join(self.seen)}"
            self.seen.append(line)

    def all(self) -> str:
        """Every line, once the stream ended."""
        while (line := self._queue.get(timeout=60)) is not None:
            self.seen.append(line)
        return "".join(self.seen)


def test_the_readme_recipe_a_throwaway_server_then_ingest_host(tmp_path: Path) -> None:
    """README, "Getting started": ``python -m binlake.testing.mariadb`` prints how to connect; the SQL and the
    ``binlake ingest --host`` it prints land the rows.  A following ingest is quiet while nothing happens (it logged
    "plan: done" and "nothing new" every interval, and py4j's "Closing down clientserver connection"), lands a new
    row, and Ctrl-C ends it in one line with 130; Ctrl-C stops the server, its data deleted."""
    from binlake.testing.mariadb import missing_tools

    if missing_tools():
        pytest.skip(f"MariaDB server not installed ({', '.join(missing_tools())} not found)")
    for page in ("README.md", "docs/getting-started.md"):
        assert "python -m binlake.testing.mariadb" in (REPO / page).read_text(encoding="utf-8")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO / "src"))
    server = subprocess.Popen([sys.executable, "-m", "binlake.testing.mariadb"], env=env, stdout=subprocess.PIPE,
                              text=True, start_new_session=True, preexec_fn=_sigint_as_a_terminal)  # fmt: skip
    assert server.stdout is not None
    base: Path | None = None
    try:
        said = [server.stdout.readline() for _ in range(3)]
        base = Path(re.search(r"its data in (\S+) ", said[0])[1])  # type: ignore[index]
        sql = said[1].split("SQL, as root:", 1)[1].split()
        ingest = [str(tmp_path / "lake") if a == "LAKE" else a for a in said[2].split("binlake:", 1)[1].split()]
        assert sql[0] == "mariadb" and ingest[:2] == ["binlake", "ingest"]
        rows = (
            "CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT); INSERT INTO shop.t VALUES (1, 'a')"
        )
        subprocess.run([*sql, "-e", rows], check=True, timeout=60)
        first = subprocess.run([sys.executable, "-m", "binlake", *ingest[1:]], env=env, capture_output=True, text=True,
                               timeout=600)  # fmt: skip
        assert first.returncode == 0, first.stderr[-3000:]
        assert "snapshot: shop.t: 1 rows landed" in first.stderr

        follow = subprocess.Popen([sys.executable, "-m", "binlake", *ingest[1:], "--follow", "--interval", "1"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True, preexec_fn=_sigint_as_a_terminal)  # fmt: skip
        try:
            lines = _Lines(follow.stdout)
            lines.wait_for("reading from")
            time.sleep(5)  # five batches with nothing new
            subprocess.run([*sql, "-e", "INSERT INTO shop.t VALUES (2, 'b')"], check=True, timeout=60)
            lines.wait_for("ingested 1 batch")
            os.killpg(follow.pid, signal.SIGINT)
            out = lines.all()
            follow.wait(120)
        finally:
            follow.kill()
        assert follow.returncode == 130, out
        assert out.splitlines()[-1] == "binlake ingest: interrupted: batches 1 to 2 are landed; the next run goes on " \
            "after batch 2"  # fmt: skip
        assert out.count("plan: done") == 1 and "nothing new" not in out and "Closing down" not in out, out
        assert all(line.startswith("binlake ingest: ") for line in out.splitlines()), out
        current = Lake(tmp_path / "lake").read(Lake(tmp_path / "lake").current("shop/t"))
        assert current is not None and sorted(current["v"].to_pylist()) == ["a", "b"]
    finally:
        os.killpg(server.pid, signal.SIGINT)
        rest, _ = server.communicate(timeout=120)
    assert (server.returncode, rest) == (0, "stopped; its data deleted\n")
    assert base is not None and not base.exists()
