"""``binlake mirror`` against a private MariaDB: the copies equal the server's binlogs byte for byte (``cmp``), after
SIGKILLs of the mirror during a workload (a partial event at the end of its last file is cut back), a server restart
and rotations followed with ``--follow``; a purged binlog is an error naming it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.replication.conftest import PASSWORD, ReplServer, batch

from binlake.reader import walk_headers
from binlake.replication.mirror import mirror_files
from binlake.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.server
REPO = Path(__file__).resolve().parents[2]


def mirror(server: MariaDBServer, directory: Path, *args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "binlake", "mirror", "--host", "127.0.0.1", "--port", str(server.port)]
    cmd += ["--user", "repl_native", "--server-id", "6262", "--heartbeat", "0.5", "--timeout", "5", str(directory)]
    cmd += args
    env = {**os.environ, "BINLAKE_PASSWORD": PASSWORD, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_mirror(server: MariaDBServer, directory: Path, *args: str) -> tuple[int, str, str]:
    proc = mirror(server, directory, *args)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def assert_same_bytes(server: MariaDBServer, directory: Path) -> int:
    """Every server binlog has its copy: equal, but for the one the server writes, of which the copy is a prefix
    (its in-use flag included).  Returns the bytes compared."""
    files = server.binlog_files()
    copies = mirror_files(directory)
    assert [c.name for c in copies] == [f.name for f in files]
    compared = 0
    for path, copy in zip(files, copies, strict=True):
        theirs, ours = path.read_bytes(), copy.read_bytes()
        if path == files[-1]:
            assert theirs[: len(ours)] == ours and len(ours) >= 4
        else:
            assert theirs == ours, path.name
        compared += len(ours)
    return compared


def test_mirror_copies_every_binlog_byte_for_byte(repl_server: ReplServer, tmp_path: Path) -> None:
    server = repl_server.server
    rc, out, err = run_mirror(server, tmp_path / "m", "--from-start")
    assert rc == 0, err
    assert "mirrored" in out and assert_same_bytes(server, tmp_path / "m") > 7_000_000
    assert (
        subprocess.run(["cmp", server.binlog_files()[1], tmp_path / "m" / server.binlog_files()[1].name]).returncode
        == 0
    )
    rc, out, err = run_mirror(server, tmp_path / "m")  # a second run goes on where the first stopped
    assert rc == 0 and ("mirrored 0 events" in out or "mirrored 1 events" in out), (out, err)
    assert PASSWORD not in out + err


def test_mirror_survives_sigkill_restart_and_rotations(fresh_server: ReplServer, tmp_path: Path) -> None:
    server, directory = fresh_server.server, tmp_path / "m"
    for k in range(1, 5):
        proc = mirror(server, directory, "--from-start", "--follow")
        batch(server, k, big=True)
        server.flush_logs()  # --follow goes on in the next file
        batch(server, 10 + k)
        time.sleep(0.3 * k)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if k == 2:
            server.restart()
        if k == 3:  # a write cut by the kill: part of an event at the end of the last copy
            last = Path(mirror_files(directory)[-1].uri)
            whole = last.stat().st_size
            with last.open("ab") as f:
                f.write(server.binlog_files()[0].read_bytes()[200:300])
            assert list(walk_headers(last, 4, whole))  # the whole events are still readable
    following = mirror(server, directory, "--follow")
    batch(server, 20, big=True)
    server.flush_logs()
    batch(server, 21)
    deadline = time.monotonic() + 120
    while len(mirror_files(directory)) < len(server.binlog_files()) and time.monotonic() < deadline:
        time.sleep(0.2)
    following.send_signal(signal.SIGTERM)
    following.wait(timeout=60)
    server.flush_logs()
    rc, _, err = run_mirror(server, directory)
    assert rc == 0, err
    assert assert_same_bytes(server, directory) > 10_000_000
    for copy in mirror_files(directory)[:-1]:
        assert copy.read_bytes()[21] & 1 == 0  # complete: not in use


def test_mirror_of_a_purged_binlog_names_it(fresh_server: ReplServer, tmp_path: Path) -> None:
    server, directory = fresh_server.server, tmp_path / "m"
    rc, _, err = run_mirror(server, directory)
    assert rc == 2 and "--from-start" in err
    batch(server, 1)
    rc, _, err = run_mirror(server, directory, "--from-start")
    assert rc == 0, err
    last = mirror_files(directory)[-1].name
    server.flush_logs()
    server.flush_logs()
    current = server.binlog_files()[-1].name
    deadline = time.monotonic() + 30
    while server.binlog_files()[0].name != current:  # PURGE keeps a file a finishing dump thread still reads
        assert time.monotonic() < deadline
        server.execute(f"PURGE BINARY LOGS TO '{current}'")
        time.sleep(0.1)
    rc, _, err = run_mirror(server, directory)
    assert rc == 2 and last in err and "purged" in err


def test_mirror_after_reset_master_refuses_the_new_file(fresh_server: ReplServer, tmp_path: Path) -> None:
    """``binlake mirror DIR``, then ``RESET MASTER`` on the server (its binlogs start again: another file under the
    copied name) and more writes, then ``binlake mirror DIR`` again: the server's file is not the one copied, so the
    mirror stops with a message and copies nothing (before, it asked the new file for the old copy's size and
    appended what came from there)."""
    server, directory = fresh_server.server, tmp_path / "m"
    batch(server, 1)
    rc, _, err = run_mirror(server, directory, "--from-start")
    assert rc == 0, err
    copied = {c.name: c.read_bytes() for c in mirror_files(directory)}
    last = mirror_files(directory)[-1].name
    time.sleep(1.1)  # the new file is started in a later second than the copied one
    server.execute("RESET MASTER")
    for k in range(2, 6):
        batch(server, k, big=k == 5)  # the new file grows past the copy's size
    assert server.binlog_files()[-1].name == last and server.binlog_files()[-1].stat().st_size > len(copied[last])
    rc, _, err = run_mirror(server, directory)
    assert rc == 2, err
    assert f"the server's {last} is not the file copied here" in err and "RESET MASTER" in err
    assert {c.name: c.read_bytes() for c in mirror_files(directory)} == copied
