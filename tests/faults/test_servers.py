"""The commands that read a server (``ingest --host``, ``tail``, ``mirror``, ``changes --host``) against a hostile
one: a user missing each privilege in turn, a wrong password, a closed port, a host that accepts and never speaks,
and a server killed (SIGKILL) in the middle of a snapshot or of a stream.

The outcome each gives is the matrix's (docs: reference/faults): a missing privilege or a wrong password is one line
naming it, exit 2, before anything is written; an unreachable or silent server is retried with backoff (one line
per attempt, each bounded by ``--timeout``), then one line, exit 3; a killed server the same, and once it is back
the same command gives a clean run's lake or output.  The private server is the matrix's own (``fault_server``):
the cases kill it and start it again.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.faults._matrix import (
    Case,
    Ran,
    assert_same_lake,
    binlake,
    ended,
    follower_commands,
    in_process,
    mirrored,
    started,
)
from tests.faults.conftest import USERS, FaultServer

from binlake.lake import Lake

pytestmark = [pytest.mark.faults, pytest.mark.server]

BOUND = 60.0  # seconds: a command that stops at a refusal, or after 2 retries of 3 s timeouts
INGEST_BOUND = 180.0
# a snapshot's rows carry the time they were read (_ts): two runs read them at two times; the rest is the same
SNAPSHOT = frozenset({"batch", "_ts"})
# a format description's in-use flag in _events is as its file was when landed: open (a run that landed it while
# the server wrote it), or finished
LIVE = frozenset({"batch", "flags"})
# a snapshot retaken after the server restarted is at another binlog point than one taken before: the rows and
# the current state are the same; where they were read (and the stream's events between the two points) are not
# (and a snapshot resumed reads its table in the chunks it planned: a row's index in its chunk, _row, differs)
WHERE = frozenset({"batch", "flags", "_ts", "_file", "_pos", "_seq", "_row", "first_file", "first_pos"})


def _ingest(server: FaultServer, lake: Path, *extra: str, user: str = "all", **kw: Any) -> Ran:
    return in_process("ingest", *server.options(user), "--lake", str(lake), *extra, bound=INGEST_BOUND, **kw)


# -- a missing privilege ------------------------------------------------------------------------------------------

# what each command says for the user that lacks each privilege (None: it needs none of it here, and runs)
REFUSALS: dict[str, dict[str, str | None]] = {
    "ingest --host": {
        "no_select": "the snapshot found no table on no_select@127.0.0.1",
        "no_reload": None,  # (MariaDB's snapshot takes no lock)
        "no_slave": "lacks REPLICATION SLAVE",
        "no_monitor": "lacks BINLOG MONITOR",
    },
    "tail": {  # (from the server's end: SHOW MASTER STATUS)
        "no_select": None,
        "no_reload": None,
        "no_slave": "the user lacks REPLICATION SLAVE",
        "no_monitor": "you need (at least one of) the SUPER, BINLOG MONITOR privilege(s)",
    },
    "mirror": {  # (--from-start: the dump starts at the oldest binlog without listing them)
        "no_select": None,
        "no_reload": None,
        "no_slave": "the user lacks REPLICATION SLAVE",
        "no_monitor": None,
    },
    "changes --host": {
        "no_select": None,
        "no_reload": None,
        "no_slave": "the user lacks REPLICATION SLAVE",
        "no_monitor": None,
    },
}
LACKING = [u for u in USERS if u != "all"]


def _live(command: str, server: FaultServer, user: str, where: Path) -> Ran:
    """``command`` as ``user``, writing to ``where`` (a mirror's folder; a tail's and changes' output is stdout)."""
    options = server.options(user)
    if command == "tail":
        return binlake("tail", *options, "--no-follow", bound=BOUND)
    if command == "mirror":
        return binlake("mirror", *options, "--from-start", str(where), bound=BOUND)
    return binlake("changes", *options, bound=BOUND)


@pytest.mark.parametrize("user", LACKING)
@pytest.mark.parametrize("command", ["tail", "mirror", "changes --host"])
def test_a_user_missing_a_privilege(
    case: Case, fault_server: FaultServer, tmp_path: Path, command: str, user: str
) -> None:
    """``binlake tail|mirror|changes --host ... --user U`` for a user lacking one privilege: one line naming it,
    exit 2, nothing written; where the command does not need it, the output of a user who has them all."""
    fault_server.ensure_running()
    ran = _live(command, fault_server, user, tmp_path / "mirror")
    refusal = REFUSALS[command][user]
    clean = _live(command, fault_server, "all", tmp_path / "clean")
    if refusal is not None:
        case.expect(ran, 2, refusal, bound=BOUND)
        assert not list((tmp_path / "mirror").glob("*-bin.*")), "a mirror refused wrote a binlog"
    else:
        case.expect(ran, 0, bound=BOUND, note="the privilege is not needed")
        if command == "mirror":
            assert mirrored(tmp_path / "mirror") == mirrored(tmp_path / "clean")
        else:
            assert ran.stdout == clean.stdout


def _finished(files: dict[str, bytes]) -> dict[str, bytes]:
    """A server's binlogs as a mirror copies them: the in-use flag (the format description's flags, byte 21) clear
    in every file but the last (a server killed in a file leaves it set there for good; the copy of a file the
    server went on from is finished)."""
    names = sorted(files)
    return {n: files[n] if n == names[-1] else files[n][:21] + bytes([files[n][21] & 0xFE]) + files[n][22:]
            for n in names}  # fmt: skip


@pytest.mark.spark
@pytest.mark.parametrize("user", LACKING)
def test_an_ingest_host_user_missing_a_privilege(
    case: Case, spark: Any, fault_server: FaultServer, tmp_path: Path, user: str
) -> None:
    """``binlake ingest --host ... --user U --lake L``: a missing privilege it needs is one line naming it and the
    GRANT, exit 2, before the lake is touched; the same command as a user who has them all then lands a clean
    run's lake."""
    fault_server.ensure_running()
    lake = tmp_path / "lake"
    ran = _ingest(fault_server, lake, user=user)
    refusal = REFUSALS["ingest --host"][user]
    if refusal is None:
        case.expect(ran, 0, bound=INGEST_BOUND, note="the privilege is not needed")
    else:
        case.expect(ran, 2, refusal, bound=INGEST_BOUND)
        assert not lake.exists()
        assert _ingest(fault_server, lake).status == 0
    clean = tmp_path / "clean"
    assert _ingest(fault_server, clean).status == 0
    assert_same_lake(lake, clean, SNAPSHOT)


# -- a wrong password, a closed port, a host that never speaks ----------------------------------------------------


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never sends a byte (a hung server, a firewall's tarpit)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for s in [listener, *held]:
        s.close()


def _closed_port() -> int:
    s = socket.create_server(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


UNREACHABLE = {
    "a wrong password": (2, "Access denied for user 'all'", False),
    "a closed port": (3, "Connection refused", True),
    "a host that never speaks": (3, "did not answer within 3 s", True),
}


@pytest.mark.parametrize("kind", list(UNREACHABLE))
@pytest.mark.parametrize("command", ["tail", "mirror", "changes --host", "ingest --host"])
def test_a_server_that_cannot_be_used(
    case: Case, request: pytest.FixtureRequest, fault_server: FaultServer, tmp_path: Path, command: str, kind: str
) -> None:
    """A wrong password: one line, exit 2, at once.  A closed port, or a host that accepts and never speaks (each
    attempt bounded by ``--timeout 3``): every command retries with backoff (``--retries 2``; ``ingest --host`` its
    first question, the user's privileges, as the others their stream), then one line, exit 3."""
    fault_server.ensure_running()
    status, says, retried = UNREACHABLE[kind]
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-the-password\n")
    port = {"a closed port": _closed_port(), "a host that never speaks": None}.get(kind)
    if kind == "a host that never speaks":
        port = request.getfixturevalue("silent_port")
    options = fault_server.options(port=port, password=wrong if kind == "a wrong password" else None)
    if command == "ingest --host":
        request.getfixturevalue("spark")
        ran = in_process("ingest", *options, "--lake", str(tmp_path / "lake"), bound=BOUND)
    elif command == "tail":
        ran = binlake("tail", *options, "--no-follow", bound=BOUND)
    elif command == "mirror":
        ran = binlake("mirror", *options, "--from-start", str(tmp_path / "mirror"), bound=BOUND)
    else:
        ran = binlake("changes", *options, bound=BOUND)
    case.expect(ran, status, says, bound=BOUND, retried=retried)
    assert not (tmp_path / "lake").exists() and not list((tmp_path / "mirror").glob("*-bin.*"))


# -- a server killed mid-snapshot, mid-stream ---------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize(
    ("moment", "after"),
    [("snapshot: shop.big: about", 0.0), ("tables at binlake-bin", 0.0), ("snapshot: done in", 0.0)],
    ids=["planning", "its point taken, no chunk read", "chunks read, not committed"],
)
def test_a_server_killed_mid_snapshot(
    case: Case, spark: Any, fault_server: FaultServer, tmp_path: Path, moment: str, after: float
) -> None:
    """``binlake ingest --host ... --chunk-rows 500`` while the server is SIGKILLed as the snapshot is planned, once
    its point is taken and before its chunk tasks read, or once they have read and nothing is committed: one line,
    exit 3; the server started again, the same command resumes the snapshot: the lake holds the rows of a clean
    run's (each current-state table the server's SELECT)."""
    fault_server.ensure_running()
    lake = tmp_path / "lake"
    killed: list[bool] = []

    def kill_at(text: str) -> None:
        if moment in text and not killed:
            killed.append(True)
            threading.Timer(after, fault_server.server.crash).start()

    ran = _ingest(fault_server, lake, "--chunk-rows", "500", on_stderr=kill_at)
    assert killed, "the snapshot never got there"
    try:
        case.expect(ran, 3, bound=INGEST_BOUND)
    finally:
        fault_server.ensure_running()
    again = _ingest(fault_server, lake, "--chunk-rows", "500")
    assert again.status == 0, str(again)
    clean = tmp_path / "clean"
    assert _ingest(fault_server, clean, "--chunk-rows", "500").status == 0
    assert_same_lake(lake, clean, WHERE, skip=frozenset({"_events"}))
    for table, columns in (("shop.t", "id, v"), ("shop.big", "id, v, n")):  # the server's SELECT, the oracle
        rows = fault_server.server.query(f"SELECT {columns} FROM {table} ORDER BY id")
        current = Lake(lake).read(Lake(lake).current(table.replace(".", "/")))
        assert current is not None
        landed = sorted(tuple(None if v is None else str(v) for v in r.values()) for r in
                        current.select(columns.split(", ")).to_pylist())  # fmt: skip
        assert landed == sorted(rows, key=lambda r: int(r[0] or 0)) or landed == sorted(rows)


@pytest.mark.spark
def test_a_server_killed_mid_stream_of_an_ingest(
    case: Case, spark: Any, fault_server: FaultServer, tmp_path: Path
) -> None:
    """``binlake ingest --host ... --no-snapshot --from-start --follow`` while the server is SIGKILLed under its
    stream: the mirror reconnects with backoff, then one line, exit 3; the server back, the same command without
    ``--follow`` lands a clean run's lake."""
    fault_server.ensure_running()
    lake = tmp_path / "lake"
    args = ("--no-snapshot", "--from-start", "--interval", "1")
    killed: list[bool] = []

    def kill_at(text: str) -> None:
        if "reading from" in text and not killed:
            killed.append(True)
            threading.Timer(1.0, fault_server.server.crash).start()  # (the stream open, its first batch going)

    ran = _ingest(fault_server, lake, *args, "--follow", on_stderr=kill_at)
    try:
        case.expect(ran, 3, "Can't connect to MySQL server", bound=INGEST_BOUND, retried=True)
    finally:
        time.sleep(1.5)
        fault_server.ensure_running()
    assert _ingest(fault_server, lake, *args).status == 0
    clean = tmp_path / "clean"
    assert _ingest(fault_server, clean, *args).status == 0
    assert_same_lake(lake, clean, LIVE)


@pytest.mark.parametrize("command", ["tail", "mirror"])
def test_a_server_killed_under_a_follower(case: Case, fault_server: FaultServer, tmp_path: Path, command: str) -> None:
    """``binlake tail --from-start --format debezium --output F --state S`` or ``binlake mirror --from-start
    --follow DIR``, following, while the server is SIGKILLed: reconnections with backoff, then one line, exit 3; the
    server back, the same command (``--no-follow``) leaves F equal to a clean tail's output, DIR to the server's
    own files."""
    fault_server.ensure_running()
    out, folder = tmp_path / "out.txt", tmp_path / "mirror"
    options = fault_server.options()
    follow, stop = follower_commands(command, options, tmp_path)
    t0 = time.monotonic()
    proc = started(*follow)
    err = b""
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            err += line
            if b"reading from" in line:
                time.sleep(0.5)  # (at the server's end, following)
                fault_server.server.crash()
                break
        ran = ended(proc, follow, t0, bound=BOUND, err=err)
    finally:
        fault_server.ensure_running()
    case.expect(ran, 3, "Can't connect to MySQL server", bound=BOUND, retried=True)
    again = binlake(*stop, bound=BOUND)
    assert again.status == 0, str(again)
    if command == "tail":
        clean = tmp_path / "clean.txt"
        done = binlake("tail", *options, "--from-start", "--no-follow", "--format", "debezium", "--output", str(clean),
                       bound=BOUND)  # fmt: skip
        assert done.status == 0 and out.read_bytes() == clean.read_bytes()
    else:
        assert mirrored(folder) == _finished({p.name: p.read_bytes() for p in fault_server.server.binlog_files()})
