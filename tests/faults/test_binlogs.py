"""Binlogs as they arrive in the world, against every command that reads them: cut at every kind of boundary,
renamed or duplicated, and changed while a command reads them (appended to, truncated, deleted; a new file in the
folder).

The outcome each command gives is the matrix's (docs: reference/faults): a command that reads events (``events``,
``explain``, ``dump``, ``stats``) stops at a partial event with one line naming it and the way past it
(``--on-error``), exit 2, and ends quietly at a cut between events, as ``mariadb-binlog`` does; a command that
reads transactions (``changes``, ``ingest``) says that a transaction is left out, and the ingest lands the whole
ones, exit 0.  Nothing is lost: the same command once the file is whole gives a clean run's output, and the lake of
a clean run.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cuts import CUTS, EXAMPLE, MYSQL_CUTS, restamped
from tests.faults._matrix import Case, Ran, in_process
from tests.spark.test_spark import _lake_snapshot

from binlake.reader import walk_headers

pytestmark = pytest.mark.faults

READERS = ["events", "dump", "stats", "changes"]
BOUND = 30.0  # seconds: a reading command on a 58 KiB binlog
INGEST_BOUND = 120.0
IGNORE = frozenset({"batch"})  # _schema_history's batch numbers: a lake landed in more runs has more batches
WHOLE = EXAMPLE.read_bytes()

ON_ERROR = " (--on-error skip-event or skip-transaction reads on past it)"
# what a command that reads events says at each cut of the example (None: it ends quietly, exit 0); no way past a
# file that is not a binlog yet
PARTIAL_EVENT = {
    "nothing": "at 0: empty input: no binlog magic",
    "less than the magic": "at 0: the input ends inside an event header (2 bytes present)",
    "inside the format description": "at 4: the input ends inside a 252-byte event (96 bytes present)" + ON_ERROR,
    "inside the GTID list": "at 256: the input ends inside a 29-byte event (14 bytes present)" + ON_ERROR,
    "right after a GTID event": None,
    "inside an event header": "at 22785: the input ends inside an event header (10 bytes present)" + ON_ERROR,
    "inside an event body": "at 22785: the input ends inside a 8170-byte event (7215 bytes present)" + ON_ERROR,
    "after a whole rows event": "at 30955: the input ends inside a 3650-byte event (45 bytes present)" + ON_ERROR,
}


@pytest.fixture(scope="module")
def clean_outputs() -> dict[str, str]:
    """Each reading command's output for the whole example."""
    return {c: in_process(c, str(EXAMPLE), bound=BOUND).stdout for c in READERS}


def _last_event_at(cut: int) -> int:
    """Where the event the cut falls in starts (the last one whose start is before the cut; 4 for the first)."""
    return max([h.pos for h in walk_headers(EXAMPLE) if h.pos < cut], default=4)


@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("kind", list(CUTS))
def test_a_cut_binlog(case: Case, tmp_path: Path, clean_outputs: dict[str, str], kind: str, command: str) -> None:
    """``head -c CUT example-bin.000001 > f; binlake COMMAND f``: a partial event is one line naming it and
    ``--on-error``, exit 2; a cut between events ends quietly (``changes``: one line says a transaction is left
    out); once the file is whole, the output is a clean run's."""
    path = tmp_path / EXAMPLE.name
    path.write_bytes(WHOLE[: CUTS[kind].at_byte])
    ran = in_process(command, str(path), bound=BOUND)
    partial = PARTIAL_EVENT[kind]
    if partial is not None:
        case.expect(ran, 2, f"{path.name}: {partial}", bound=BOUND)
    elif command == "changes":
        case.expect(ran, 0, "1 transaction(s) left out: not whole in what was read", bound=BOUND)
    else:
        case.expect(ran, 0, bound=BOUND)
    path.write_bytes(WHOLE)
    assert in_process(command, str(path), bound=BOUND).stdout == clean_outputs[command].replace(str(EXAMPLE), str(path))


@pytest.mark.parametrize("kind", list(CUTS))
def test_a_cut_binlog_explained(case: Case, tmp_path: Path, kind: str) -> None:
    """``binlake explain f --at POS`` of the event a cut falls in: one line saying where the file ends, exit 2;
    the last whole event before a cut between events explains as in the whole file."""
    cut = CUTS[kind].at_byte
    path = tmp_path / EXAMPLE.name
    path.write_bytes(WHOLE[:cut])
    at = _last_event_at(cut)
    ran = in_process("explain", str(path), "--at", str(at), bound=BOUND)
    if cut < 4:
        case.expect(ran, 2, PARTIAL_EVENT[kind], bound=BOUND)  # (not a binlog yet: no event to explain)
    elif PARTIAL_EVENT[kind] is None:
        case.expect(ran, 0, bound=BOUND)
        assert ran.stdout == in_process("explain", str(EXAMPLE), "--at", str(at), bound=BOUND).stdout
    else:
        size = next(h.size for h in walk_headers(EXAMPLE) if h.pos == at)
        present = cut - at  # (the event's size is known from its first 13 bytes)
        header = f"an event header ({present} bytes present)" if present < 13 else f"the {size}-byte event"
        case.expect(ran, 2, f"{path.name}: at {at}: the file ends inside {header}", bound=BOUND)


@pytest.mark.parametrize("command", READERS)
def test_a_cut_binlog_read_on_past(case: Case, tmp_path: Path, command: str) -> None:
    """``--on-error skip-transaction`` on a file cut inside an event: the whole part is read, one line reports the
    skip with its positions, exit 0 (the documented skip)."""
    path = tmp_path / EXAMPLE.name
    path.write_bytes(WHOLE[:31000])
    ran = in_process(command, str(path), "--on-error", "skip-transaction", bound=BOUND)
    skip = [line for line in ran.stderr.splitlines() if "skipped 45 bytes at 30955-31000" in line]
    case.expect(ran, 0, bound=BOUND, note="a skip reported")
    assert len(skip) == 1 and "transaction from 22522 incomplete" in skip[0]


@pytest.mark.parametrize("command", [*READERS, "explain"])
@pytest.mark.parametrize("kind", list(MYSQL_CUTS))
def test_a_cut_mysql_binlog(case: Case, corpus_dir: Path, tmp_path: Path, kind: str, command: str) -> None:
    """The same on MySQL 8 binlogs, cut after ``BEGIN`` (between events) and inside a compressed
    TRANSACTION_PAYLOAD_EVENT."""
    path_in_corpus, cut, _ = MYSQL_CUTS[kind]
    whole = (corpus_dir / "mysql" / path_in_corpus).read_bytes()
    path = tmp_path / Path(path_in_corpus).name
    path.write_bytes(whole[:cut])
    at = max(h.pos for h in walk_headers(corpus_dir / "mysql" / path_in_corpus) if h.pos < cut)
    args = ["explain", str(path), "--at", str(at)] if command == "explain" else [command, str(path)]
    ran = in_process(*args, bound=BOUND)
    if kind == "after BEGIN":
        says = "1 transaction(s) left out" if command == "changes" else None
        case.expect(ran, 0, says, bound=BOUND)
    elif command == "explain":
        case.expect(ran, 2, f"at {at}: the file ends inside the", bound=BOUND)
    else:
        says = f"at {at}: the input ends inside a 553-byte event (270 bytes present){ON_ERROR}"
        case.expect(ran, 2, says, bound=BOUND)
    path.write_bytes(whole)
    assert in_process(*args, bound=BOUND).status == 0


@pytest.mark.parametrize("command", READERS)
def test_a_binlog_given_twice_under_two_names(case: Case, tmp_path: Path, command: str) -> None:
    """A folder holding a binlog and a copy of it under another name: a command that reads files reads each one
    given, as ``mariadb-binlog`` does (``events``, ``dump``, ``stats``, ``changes`` print both; only the lake
    knows what it landed: see :func:`test_the_ingest_lands_a_renamed_binlog_once`)."""
    d = tmp_path / "d"
    d.mkdir()
    (d / EXAMPLE.name).write_bytes(WHOLE)
    (d / "renamed-bin.000001").write_bytes(WHOLE)
    ran = in_process(command, str(d / EXAMPLE.name), str(d / "renamed-bin.000001"), bound=BOUND)
    case.expect(ran, 0, bound=BOUND, note="each file read as given")
    one = in_process(command, str(d / EXAMPLE.name), bound=BOUND).stdout
    if command in ("events", "dump"):
        assert ran.stdout.count(one.splitlines()[-1]) >= 1 and len(ran.stdout) > len(one) * 1.9
    elif command == "changes":
        assert len(ran.stdout.splitlines()) == 2 * len(one.splitlines())
    else:
        assert "files: " in ran.stdout and "renamed-bin.000001" in ran.stdout


# -- a source that changes while a command reads it ------------------------------------------------------------


def _folder(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A folder of two binlogs of one server: the example, and a later file of it (the example restamped)."""
    d = tmp_path / "src"
    d.mkdir()
    first, second = d / "example-bin.000001", d / "example-bin.000002"
    first.write_bytes(WHOLE)
    second.write_bytes(restamped(WHOLE, 60))
    return d, first, second


CHANGES = ["appended to", "truncated", "deleted", "a new file"]


def _change(kind: str, second: Path) -> None:
    """What happens to the folder's second file (or the folder) while a command reads the first."""
    if kind == "appended to":
        with second.open("ab") as f:
            f.write(restamped(WHOLE, 60)[len(second.read_bytes()) :])
    elif kind == "truncated":
        os.truncate(second, 30000)
    elif kind == "deleted":
        second.unlink()
    else:
        (second.parent / "example-bin.000003").write_bytes(restamped(WHOLE, 120))


@contextlib.contextmanager
def _when_opened(path: Path, action: Callable[[], None]) -> Iterator[None]:
    """Run ``action`` just after this process opens ``path`` (the moment a command starts reading it)."""
    real = builtins.open

    def opening(file: Any, *args: Any, **kwargs: Any) -> Any:
        f = real(file, *args, **kwargs)
        if isinstance(file, str | os.PathLike) and os.fspath(file) == str(path) and not done:
            done.append(True)
            action()
        return f

    done: list[bool] = []
    builtins.open = opening
    try:
        yield
    finally:
        builtins.open = real
    assert done, f"{path} was never opened"


@pytest.mark.parametrize("kind", CHANGES)
@pytest.mark.parametrize("command", READERS)
def test_a_folder_that_changes_while_read(case: Case, tmp_path: Path, command: str, kind: str) -> None:
    """``binlake COMMAND f1 f2`` while f2 is appended to (it was cut at a transaction's end), truncated or deleted,
    or a third file appears, at the moment the command opens f1: each file is read as it is when the command gets
    to it (a truncated one ends inside an event, exit 2; a deleted one is an error naming it, exit 2; a new file is
    not among those given); the same command once the folder is whole again gives a clean run's output."""
    d, first, second = _folder(tmp_path)
    if kind == "appended to":
        second.write_bytes(restamped(WHOLE, 60)[:22522])
    with _when_opened(first, lambda: _change(kind, second)):
        ran = in_process(command, str(first), str(second), bound=BOUND)
    if kind == "truncated":
        says = f"{second.name}: at 22785: the input ends inside a 8170-byte event (7215 bytes present){ON_ERROR}"
        case.expect(ran, 2, says, bound=BOUND)
    elif kind == "deleted":
        case.expect(ran, 2, f"{second}: cannot read: No such file or directory", bound=BOUND)
    else:
        case.expect(ran, 0, bound=BOUND, note="each file read as it is when reached")
    shutil.rmtree(d)
    d, first, second = _folder(tmp_path)
    again = in_process(command, str(first), str(second), bound=BOUND)
    assert again.status == 0 and again.stdout == in_process(command, str(first), str(second), bound=BOUND).stdout


# -- the ingest ---------------------------------------------------------------------------------------------------


def _ingest(*sources: Path, lake: Path, on_stderr: Callable[[str], None] | None = None) -> Ran:
    return in_process("ingest", *map(str, sources), "--lake", str(lake), bound=INGEST_BOUND, on_stderr=on_stderr)


@pytest.fixture(scope="module")
def clean_lakes(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    """The lakes of clean runs: the example alone (1), with a later file of its server (2), and a third (3)."""
    lakes = {}
    for n in (1, 2, 3):
        d = tmp_path_factory.mktemp(f"clean{n}")
        for i in range(n):
            (d / f"example-bin.{i + 1:06d}").write_bytes(restamped(WHOLE, 60 * i) if i else WHOLE)
        assert _ingest(d, lake=d / "lake").status == 0
        lakes[n] = _lake_snapshot(d / "lake", ignore=IGNORE)
    return lakes


@pytest.mark.spark
@pytest.mark.parametrize("kind", list(CUTS))
def test_the_ingest_of_a_cut_binlog(case: Case, tmp_path: Path, clean_lakes: dict[int, Any], kind: str) -> None:
    """``binlake ingest f --lake L`` of the example cut short: its whole transactions land and one line says where
    the file is cut, exit 0; once the file is whole, the same command lands the rest: a clean run's lake (every cut
    row by row: ``tests/spark/test_cut_and_renamed.py``)."""
    path = tmp_path / "d" / EXAMPLE.name
    path.parent.mkdir()
    path.write_bytes(WHOLE[: CUTS[kind].at_byte])
    case.expect(_ingest(path, lake=tmp_path / "lake"), 0, CUTS[kind].says, bound=INGEST_BOUND, note="whole ones landed")
    path.write_bytes(WHOLE)
    assert _ingest(path, lake=tmp_path / "lake").status == 0
    assert _lake_snapshot(tmp_path / "lake", ignore=IGNORE) == clean_lakes[1]


@pytest.mark.spark
def test_the_ingest_lands_a_renamed_binlog_once(case: Case, tmp_path: Path, clean_lakes: dict[int, Any]) -> None:
    """A folder holding the example and a copy under another name: the copy is skipped with one line, exit 0, and
    the lake is a clean run's of the example alone."""
    d = tmp_path / "d"
    d.mkdir()
    (d / EXAMPLE.name).write_bytes(WHOLE)
    (d / "renamed-bin.000001").write_bytes(WHOLE)
    ran = _ingest(d, lake=tmp_path / "lake")
    says = "renamed-bin.000001 is example-bin.000001 under another name"
    case.expect(ran, 0, says, bound=INGEST_BOUND, note="the copy skipped with a line")
    assert _lake_snapshot(tmp_path / "lake", ignore=IGNORE) == clean_lakes[1]


@pytest.mark.spark
def test_the_ingest_refuses_another_binlog_under_a_landed_name(case: Case, tmp_path: Path) -> None:
    """After ``RESET MASTER`` another file comes under the landed name: one line names it and the way forward,
    exit 2, and the lake is as it was."""
    path = tmp_path / "d" / EXAMPLE.name
    path.parent.mkdir()
    path.write_bytes(WHOLE)
    assert _ingest(path, lake=tmp_path / "lake").status == 0
    before = _lake_snapshot(tmp_path / "lake")
    path.write_bytes(restamped(WHOLE, 3600))
    ran = _ingest(path, lake=tmp_path / "lake")
    case.expect(ran, 2, "not the binlog the lake landed under this name", bound=INGEST_BOUND)
    assert _lake_snapshot(tmp_path / "lake") == before


@pytest.mark.spark
@pytest.mark.parametrize("kind", CHANGES)
def test_the_ingest_of_a_folder_that_changes_while_read(
    case: Case, tmp_path: Path, clean_lakes: dict[int, Any], kind: str
) -> None:
    """``binlake ingest d --lake L`` while, once the batch is planned and before its tasks read the files, the
    second file is appended to, truncated or deleted, or a third appears: a file grown or new lands in the next
    run, exit 0; a file cut or gone under the batch stops it with one line naming the file, exit 2, and nothing of
    the batch is committed; the same command once the folder is whole finishes the batch: a clean run's lake."""
    d, _, second = _folder(tmp_path)
    if kind == "appended to":
        second.write_bytes(restamped(WHOLE, 60)[:22522])
    planned: list[bool] = []

    def at_the_plan(text: str) -> None:
        if "batch 1: " in text and not planned:
            planned.append(True)
            _change(kind, second)

    ran = _ingest(d, lake=tmp_path / "lake", on_stderr=at_the_plan)
    assert planned
    if kind == "truncated":
        says = f"{second.name}: at 22785: the input ends inside a 8170-byte event (7215 bytes present){ON_ERROR}"
        case.expect(ran, 2, says, bound=INGEST_BOUND)
    elif kind == "deleted":
        case.expect(ran, 2, f"{second}: cannot read: No such file or directory", bound=INGEST_BOUND)
    else:
        case.expect(ran, 0, bound=INGEST_BOUND, note="the change lands in the next run")
    second.write_bytes(restamped(WHOLE, 60))
    assert _ingest(d, lake=tmp_path / "lake").status == 0
    assert _lake_snapshot(tmp_path / "lake", ignore=IGNORE) == clean_lakes[3 if kind == "a new file" else 2]
