"""Where the lake and the outputs go: a lake path that is a file, below one, under ``/proc``, on a read-only tmpfs or
a read-only bind mount, on a full disk (a small tmpfs the test fills, at every stage of an ingest); standard output
on a full disk (``/dev/full``); ``tail``'s ``--output`` and ``--state`` and ``mirror``'s DIR in such places.

The outcome each gives is the matrix's (docs: reference/faults): one line naming the place and the system's reason,
exit 2, at once; and nothing lost: once the place can be written, the same command gives a clean run's lake.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.faults._matrix import EXAMPLE, Case, binlake, in_process, mirrored
from tests.faults.conftest import FaultServer, Mounts
from tests.spark.test_spark import _lake_snapshot

pytestmark = pytest.mark.faults

BOUND = 60.0  # seconds: an ingest of the 58 KiB example that stops at once
IGNORE = frozenset({"batch"})  # _schema_history's batch numbers: a lake landed in more runs has more batches
LEASE = "cannot write the lake (its writer lease, _binlake/lease)"


@pytest.fixture(scope="module")
def clean_lake(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example's lake from a clean run."""
    lake = tmp_path_factory.mktemp("clean") / "lake"
    assert in_process("ingest", str(EXAMPLE), "--lake", str(lake), bound=BOUND).status == 0
    return _lake_snapshot(lake, ignore=IGNORE)


def _place(kind: str, tmp_path: Path, mount: Mounts) -> tuple[Path, str, Callable[[], None] | None]:
    """A lake path of ``kind``, the system's reason it cannot be written, and what makes it writable (``None``:
    nothing does)."""
    if kind == "a file":
        f = tmp_path / "lake"
        f.write_text("not a lake\n")
        return f, "Not a directory", f.unlink
    if kind == "below a file":
        f = tmp_path / "a-file"
        f.write_text("not a folder\n")
        return f / "lake", "Not a directory", f.unlink
    if kind == "under /proc":
        return Path("/proc/binlake-faults/lake"), "No such file or directory", None
    if kind == "a read-only tmpfs":
        folder = mount.tmpfs(tmp_path / "ro", "8m", read_only=True)
    else:
        folder = mount.read_only_bind(tmp_path / "writable", tmp_path / "bound")
    return folder / "lake", "Read-only file system", lambda: mount.writable(folder)


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["a file", "below a file", "under /proc", "a read-only tmpfs", "a read-only bind"])
def test_a_lake_that_cannot_be_written(
    case: Case, tmp_path: Path, mount: Mounts, clean_lake: dict[str, Any], kind: str
) -> None:
    """``binlake ingest examples/... --lake L``, L a file, below one, under /proc, on a read-only tmpfs or bind
    mount: one line naming L and the system's reason, exit 2, at once (it ran at full CPU, silently, for ever);
    ``binlake tables L`` says there is no lake; once L can be written, the same ingest lands a clean run's lake."""
    lake, reason, writable = _place(kind, tmp_path, mount)
    ran = in_process("ingest", str(EXAMPLE), "--lake", str(lake), bound=BOUND)
    case.expect(ran, 2, f"binlake ingest: {lake}: {LEASE}: {reason}", bound=BOUND)
    case.expect(in_process("tables", str(lake), bound=BOUND), 2, f"{lake}: no lake here", bound=BOUND)
    if writable is None:
        return
    writable()
    again = in_process("ingest", str(EXAMPLE), "--lake", str(lake), bound=BOUND)
    assert again.status == 0, str(again)
    assert _lake_snapshot(lake, ignore=IGNORE) == clean_lake


# the space left on a full disk, in KiB, and the write of the example's ingest it stopped at when measured (the
# sizes of the lake's files move these a little; the last leaves room for all of it): its writer lease, its batch's
# manifest, the tasks' Parquet files of _events and of a change table, a staged current-state file, the Delta
# commits of a change table, _schema_history and a current-state table, the batch's completion mark
FREE_KIB = [0, 4, 8, 16, 32, 96, 128, 144, 160, 256]


@pytest.mark.spark
@pytest.mark.parametrize("free", FREE_KIB, ids=[f"{k}KiB-free" for k in FREE_KIB])
def test_a_lake_on_a_full_disk(
    case: Case, tmp_path: Path, mount: Mounts, clean_lake: dict[str, Any], free: int
) -> None:
    """``binlake ingest examples/... --lake L`` where L's disk (an 8 MiB tmpfs) has ``free`` KiB left: the ingest
    stops at the first write that does not fit with one line naming the file under L and "No space left on
    device", exit 2 (or lands it all, where it fits); once space is freed the same command finishes the batch: a
    clean run's lake."""
    disk = mount.tmpfs(tmp_path / "disk", "8m")
    filler = disk / "filler"
    stat = os.statvfs(disk)
    with filler.open("wb") as f:
        f.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - free * 1024))
    lake = disk / "lake"
    ran = in_process("ingest", str(EXAMPLE), "--lake", str(lake), bound=BOUND)
    if ran.status == 0:
        case.expect(ran, 0, bound=BOUND, note="it fits")
    else:
        case.expect(ran, 2, "No space left on device", bound=BOUND)
        assert ran.stderr.splitlines()[-1].startswith(f"binlake ingest: {lake}"), str(ran)
    filler.unlink()
    again = in_process("ingest", str(EXAMPLE), "--lake", str(lake), bound=BOUND)
    assert again.status == 0, str(again)
    assert _lake_snapshot(lake, ignore=IGNORE) == clean_lake


@pytest.mark.parametrize(
    "args",
    [["events", str(EXAMPLE)], ["dump", str(EXAMPLE)], ["stats", str(EXAMPLE)], ["changes", str(EXAMPLE)],
     ["explain", str(EXAMPLE), "--at", "4"]],
    ids=["events", "dump", "stats", "changes", "explain"],
)  # fmt: skip
def test_output_on_a_full_disk(case: Case, args: list[str]) -> None:
    """``binlake COMMAND ... > /dev/full``: one line saying why the output cannot be written, exit 2 (it was
    Python's traceback, exit 1)."""
    with open("/dev/full", "wb") as full:
        ran = binlake(*args, bound=BOUND, stdout=full.fileno())
    case.expect(ran, 2, "No space left on device", bound=BOUND)


# -- where tail and mirror write --------------------------------------------------------------------------------

TAIL = ["--from-start", "--no-follow", "--format", "debezium"]
OUTPUT_PLACES = ["a read-only tmpfs", "under /proc", "below a file", "a folder", "a full disk", "a disk filling up"]


def _output_place(kind: str, tmp_path: Path, mount: Mounts) -> tuple[Path, str, Callable[[], None] | None]:
    """A file path of ``kind`` for a command's output, the system's reason it cannot be written, and what makes it
    writable (``None``: nothing does)."""
    if kind == "a read-only tmpfs":
        folder = mount.tmpfs(tmp_path / "ro", "8m", read_only=True)
        return folder / "out", "Read-only file system", lambda: mount.writable(folder)
    if kind == "under /proc":
        return Path("/proc/binlake-faults-out"), "No such file or directory", None
    if kind == "below a file":
        f = tmp_path / "a-file"
        f.write_text("not a folder\n")

        def folder_again() -> None:
            f.unlink()
            f.mkdir()

        return f / "out", "Not a directory", folder_again
    if kind == "a folder":
        (tmp_path / "out").mkdir()
        return tmp_path / "out", "Is a directory", (tmp_path / "out").rmdir
    disk = mount.tmpfs(tmp_path / "disk", "8m")
    stat = os.statvfs(disk)
    filler = disk / "filler"  # (a disk filling up leaves 4 KiB: the first of the output's pages)
    filler.write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - (4096 if kind == "a disk filling up" else 0)))
    return disk / "out", "No space left on device", filler.unlink


@pytest.mark.server
@pytest.mark.parametrize("kind", OUTPUT_PLACES)
@pytest.mark.parametrize("what", ["tail --output", "tail --state", "mirror DIR"])
def test_an_output_that_cannot_be_written(
    case: Case, fault_server: FaultServer, tmp_path: Path, mount: Mounts, what: str, kind: str
) -> None:
    """``binlake tail --from-start --no-follow --format debezium --output F`` (``--state S``), ``binlake mirror
    --from-start DIR``, the place a file on a read-only tmpfs, under /proc, below a file, a folder, on a full disk or
    one that fills up after its first page: one line naming the place and the system's reason, exit 2 (a state that
    is a folder: it cannot be read); once the place can be written, the same command leaves a clean run's output:
    the tail's every transaction exactly once."""
    fault_server.ensure_running()
    if what == "mirror DIR" and kind == "a folder":
        pytest.skip("a mirror's DIR is a folder")
    place, reason, writable = _output_place(kind, tmp_path, mount)
    options = fault_server.options()
    out, state = (place, tmp_path / "state") if what == "tail --output" else (tmp_path / "out.txt", place)
    if what == "mirror DIR":
        args = ["mirror", *options, "--from-start", str(place)]
    else:
        args = ["tail", *options, *TAIL, "--output", str(out), "--state", str(state)]
        if what == "tail --state" and kind == "a folder":
            reason = f"cannot read the tail state {place}: Is a directory"
    ran = binlake(*args, bound=BOUND)
    case.expect(ran, 2, reason, bound=BOUND)
    assert place.name in ran.stderr.splitlines()[-1] or place.parent.name in ran.stderr.splitlines()[-1], str(ran)
    if writable is None:
        return
    writable()
    assert binlake(*args, bound=BOUND).status == 0
    if what == "mirror DIR":
        clean = tmp_path / "clean"
        assert binlake("mirror", *options, "--from-start", str(clean), bound=BOUND).status == 0
        assert mirrored(place) == mirrored(clean)
    else:
        clean = tmp_path / "clean.txt"
        done = binlake("tail", *options, *TAIL, "--output", str(clean), bound=BOUND)
        assert done.status == 0 and out.read_bytes() == clean.read_bytes()


@pytest.mark.server
def test_a_text_tail_resumed_after_a_full_disk(
    case: Case, fault_server: FaultServer, tmp_path: Path, mount: Mounts
) -> None:
    """``binlake tail --format text --output F --state S`` on a disk that fills up after its first page, then, space
    freed, the same command: F equals a clean tail's output byte for byte."""
    fault_server.ensure_running()
    place, _, writable = _output_place("a disk filling up", tmp_path, mount)
    assert writable is not None
    args = ["tail", *fault_server.options(), "--from-start", "--no-follow", "--output", str(place)]
    state = ["--state", str(tmp_path / "state")]
    case.expect(binlake(*args, *state, bound=BOUND), 2, "No space left on device", bound=BOUND)
    writable()
    assert binlake(*args, *state, bound=BOUND).status == 0
    clean = tmp_path / "clean.txt"
    assert binlake(*args[:-1], str(clean), bound=BOUND).status == 0
    assert place.read_bytes() == clean.read_bytes()
