"""SIGINT (a terminal's Ctrl-C, to the process group) and SIGKILL (``kill -9`` of the command's process) at a random
moment of ``ingest`` (files), ``ingest --host`` (its snapshot, its stream), ``tail --output`` and ``mirror``.

The outcome each gives is the matrix's (docs: reference/faults): SIGINT is one line saying what is safe, exit 130, no
traceback; after either signal the same command run again gives exactly a clean run's lake (table by table, row by
row), a clean tail's output file (byte for byte), a clean mirror's files.

The moment is drawn at random (seeded: ``BINLAKE_FAULTS_SEED``, else the case's name; a failure names the seed and
the moment) among the progress lines the command writes before it ends, plus up to 0.3 s: its plan, its scan, its
tasks, its commits; a snapshot's plan, its point, its chunks; a stream's connection.
"""

from __future__ import annotations

import os
import random
import signal
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from tests.faults._matrix import (
    EXAMPLE,
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
from tests.faults.conftest import FaultServer

pytestmark = pytest.mark.faults

BOUND = 240.0  # seconds: a JVM's start, the ingest and its way out
FOLLOW_BOUND = 60.0
LIVE = frozenset({"batch", "flags"})  # (a format description's in-use flag: as its file was when landed)
SNAPSHOT = frozenset({"batch", "flags", "_ts"})  # (a snapshot's rows carry the time they were read)
SIGNALS = {"SIGINT": signal.SIGINT, "SIGKILL": signal.SIGKILL}


def _moment(case_name: str, lines: list[str]) -> tuple[int, str, float]:
    """The random moment of a case: its seed, after which of ``lines`` (progress lines' beginnings) and how long
    after (0 to 0.3 s)."""
    seed = int(os.environ.get("BINLAKE_FAULTS_SEED") or zlib.crc32(case_name.encode()))
    rng = random.Random(seed)
    return seed, rng.choice(lines), rng.uniform(0.0, 0.3)


def _signalled(args: list[str], lines: list[str], sig: signal.Signals, case_name: str, bound: float) -> tuple[Ran, str]:
    """``binlake ARGS`` signalled with ``sig`` at a random moment (:func:`_moment`); what it did, and the moment."""
    seed, line, delay = _moment(case_name, lines)
    moment = f"{sig.name} {delay:.2f} s after the line {line!r} (BINLAKE_FAULTS_SEED={seed})"
    t0 = time.monotonic()
    proc = started(*args)
    err = b""
    assert proc.stderr is not None
    for raw in proc.stderr:
        err += raw
        if line.encode() in raw:
            time.sleep(delay)
            if sig == signal.SIGINT:
                os.killpg(proc.pid, signal.SIGINT)  # (a terminal's Ctrl-C goes to the whole group: the JVM too)
            else:
                os.kill(proc.pid, signal.SIGKILL)
            break
    return ended(proc, args, t0, bound=bound, err=err), moment


def _expect_signalled(case: Case, ran: Ran, sig: signal.Signals, moment: str, bound: float) -> None:
    """SIGINT: one line saying what is safe, exit 130 (or the run had ended, exit 0, when the signal came after its
    last line); SIGKILL: killed (-9), or ended."""
    if ran.status == 0:
        case.expect(ran, 0, bound=bound, note=f"ended before the signal ({moment})")
    elif sig == signal.SIGINT:
        case.expect(ran, 130, "interrupted", bound=bound)
    else:
        assert ran.status == -signal.SIGKILL, f"{moment}: {ran}"
        case.node.user_properties.extend([("outcome", "killed (SIGKILL)"), ("bound", bound)])


# -- the file ingest --------------------------------------------------------------------------------------------

INGEST_LINES = ["plan: done", "scan: done", "batch 1: ", "decode: ", "commit: done"]


@pytest.mark.spark
@pytest.mark.parametrize("sig", list(SIGNALS))
def test_a_signal_during_an_ingest(case: Case, spark: Any, tmp_path: Path, sig: str) -> None:
    """``binlake ingest examples/... --lake L`` signalled at a random moment; then the same command: a clean run's
    lake."""
    lake = tmp_path / "lake"
    args = ["ingest", str(EXAMPLE), "--lake", str(lake), "--master", "local[1]"]
    ran, moment = _signalled(args, INGEST_LINES, SIGNALS[sig], case.node.name, BOUND)
    _expect_signalled(case, ran, SIGNALS[sig], moment, BOUND)
    again = in_process(*args, bound=BOUND)
    assert again.status == 0, f"{moment}: {again}"
    clean = tmp_path / "clean"
    assert in_process("ingest", str(EXAMPLE), "--lake", str(clean), bound=BOUND).status == 0
    assert_same_lake(lake, clean)


# -- ingest --host: the snapshot, the stream --------------------------------------------------------------------

SNAPSHOT_LINES = ["snapshot: shop.big: about", "tables at binlake-bin", "snapshot: done", "rows landed"]
STREAM_LINES = ["reading from", "plan: done", "batch 1: ", "decode: "]


@pytest.mark.spark
@pytest.mark.server
@pytest.mark.parametrize("sig", list(SIGNALS))
@pytest.mark.parametrize("part", ["snapshot", "stream"])
def test_a_signal_during_an_ingest_host(
    case: Case, spark: Any, fault_server: FaultServer, tmp_path: Path, part: str, sig: str
) -> None:
    """``binlake ingest --host ... --lake L`` (a snapshot of ``--chunk-rows 500`` then the stream, or the stream
    alone: ``--no-snapshot --from-start``) signalled at a random moment; then the same command: a clean run's
    lake."""
    fault_server.ensure_running()
    extra = ["--chunk-rows", "500"] if part == "snapshot" else ["--no-snapshot", "--from-start"]
    lake = tmp_path / "lake"
    args = ["ingest", *fault_server.options(), "--lake", str(lake), "--master", "local[1]", *extra]
    lines = SNAPSHOT_LINES if part == "snapshot" else STREAM_LINES
    ran, moment = _signalled(args, lines, SIGNALS[sig], case.node.name, BOUND)
    _expect_signalled(case, ran, SIGNALS[sig], moment, BOUND)
    again = in_process(*args, bound=BOUND)
    assert again.status == 0, f"{moment}: {again}"
    clean = tmp_path / "clean"
    assert in_process("ingest", *fault_server.options(), "--lake", str(clean), *extra, bound=BOUND).status == 0
    assert_same_lake(lake, clean, SNAPSHOT if part == "snapshot" else LIVE)


# -- tail --output, mirror --------------------------------------------------------------------------------------


@pytest.mark.server
@pytest.mark.parametrize("sig", list(SIGNALS))
@pytest.mark.parametrize("command", ["tail", "mirror"])
def test_a_signal_during_a_follower(
    case: Case, fault_server: FaultServer, tmp_path: Path, command: str, sig: str
) -> None:
    """``binlake tail --from-start --format debezium --output F --state S`` or ``binlake mirror --from-start
    --follow DIR`` signalled at a random moment while it follows; then the same command (``--no-follow``): F equals
    a clean tail's output byte for byte, DIR a clean mirror's files."""
    fault_server.ensure_running()
    out, folder = tmp_path / "out.txt", tmp_path / "mirror"
    options = fault_server.options()
    follow, stop = follower_commands(command, options, tmp_path)
    seed, _, delay = _moment(case.node.name, ["reading from"])
    moment = f"{sig} {delay * 5:.2f} s after the connection (BINLAKE_FAULTS_SEED={seed})"
    t0 = time.monotonic()
    proc = started(*follow)
    err = b""
    assert proc.stderr is not None
    for raw in proc.stderr:
        err += raw
        if b"reading from" in raw:
            time.sleep(delay * 5)  # (0 to 1.5 s: in the stream, or waiting at the server's end)
            if sig == "SIGINT":
                os.killpg(proc.pid, signal.SIGINT)
            else:
                os.kill(proc.pid, signal.SIGKILL)
            break
    ran = ended(proc, follow, t0, bound=FOLLOW_BOUND, err=err)
    if sig == "SIGINT":
        case.expect(ran, 130, "interrupted", bound=FOLLOW_BOUND)
    else:
        assert ran.status == -signal.SIGKILL, f"{moment}: {ran}"
        case.node.user_properties.extend([("outcome", "killed (SIGKILL)"), ("bound", FOLLOW_BOUND)])
    again = binlake(*stop, bound=FOLLOW_BOUND)
    assert again.status == 0, f"{moment}: {again}"
    if command == "tail":
        clean = tmp_path / "clean.txt"
        done = binlake("tail", *options, "--from-start", "--no-follow", "--format", "debezium", "--output", str(clean),
                       bound=FOLLOW_BOUND)  # fmt: skip
        assert done.status == 0 and out.read_bytes() == clean.read_bytes(), moment
    else:
        clean_folder = tmp_path / "clean"
        assert binlake("mirror", *options, "--from-start", str(clean_folder), bound=FOLLOW_BOUND).status == 0
        assert mirrored(folder) == mirrored(clean_folder), moment
