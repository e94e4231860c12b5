"""The lake's commit protocol (binlake.lake.batch): a batch's tables committed in the lake's order (change tables,
the lake's own tables, XA outcomes, current state, then the done mark), nothing committed by a block that raises,
and a batch cut at any of its commits finished by the next run into the lake one clean run leaves.

The ingest runs here with its tasks in this process (binlake.lake.runner.InProcessRunner): no Spark.  Two batches
of corpus files: the first ends right after an XA PREPARE (a copy of corpus-bin.000004 cut there), the second lands
the rest of that file (its XA COMMIT resolves the first batch's rows) and corpus-bin.000006 (TRUNCATE, RENAME,
DROP, CREATE OR REPLACE).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.events.base import EventType
from binlake.ingest.progress import Progress
from binlake.ingest.run import ingest
from binlake.lake.fileset import FileSet
from binlake.lake.lake import Lake
from binlake.lake.records import BatchManifest
from binlake.lake.runner import InProcessRunner
from binlake.reader import read_events

pytestmark = pytest.mark.corpus

# what each commit of a batch goes through: the Lake's methods, and the current-state engine's one commit per table
STEPS = ((Lake, "commit"), (Lake, "resolve_rollbacks"), (Lake, "write_done"), (FileSet, "commit"))


class _Crash(Exception):
    """A process killed between two commits of a batch."""


def _xa_prepare_end(path: Path) -> int:
    """Where the first XA PREPARE (not ONE PHASE) of ``path`` ends."""
    for ev in read_events(path):
        if ev.header.type_code == EventType.XA_PREPARE_LOG_EVENT and not getattr(ev, "one_phase", False):
            return ev.header.pos + ev.header.event_size
    raise AssertionError(f"no XA PREPARE in {path}")


def _land(lake: Path, sources: Path) -> None:
    ingest(InProcessRunner(), [str(sources)], str(lake), progress=Progress(None, io.StringIO()))


def _first_batch(corpus_dir: Path, tmp_path: Path, name: str) -> tuple[Path, Callable[[], None]]:
    """A lake holding the first batch, and what makes its sources hold the second's."""
    binlogs = corpus_dir / "mariadb" / "binlogs"
    sources, lake = tmp_path / f"{name}-binlogs", tmp_path / f"{name}-lake"
    sources.mkdir()
    dml = (binlogs / "corpus-bin.000004").read_bytes()
    (sources / "corpus-bin.000004").write_bytes(dml[: _xa_prepare_end(binlogs / "corpus-bin.000004")])
    _land(lake, sources)

    def grow() -> None:
        (sources / "corpus-bin.000004").write_bytes(dml)
        (sources / "corpus-bin.000006").write_bytes((binlogs / "corpus-bin.000006").read_bytes())

    return lake, lambda: (grow(), _land(lake, sources))[1]


def _content(lake: Path) -> dict[tuple[str, str], list[str]]:
    """Every table of the lake, row by row (file names aside), and its batch records (the sources' folder aside)."""
    lk = Lake(str(lake))
    out = {(t.name, t.kind): sorted(repr(r) for r in lk.read(t.location).to_pylist()) for t in lk.tables()}
    batches = lake / "_binlake" / "batches"
    out.update(
        {("batches", p.name): [re.sub(r'"path": "[^"]*/', '"path": "', p.read_text())] for p in batches.iterdir()}
    )
    return out


class Steps:
    """The commits the lake made (method, table or mark), in order; ``crash_at``: the index of one to fail."""

    def __init__(self) -> None:
        self.made: list[tuple[str, str]] = []
        self.crash_at: int | None = None


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[Steps]:
    """Every commit of the lake recorded (and one failed where a test says)."""
    seen = Steps()
    for cls, name in STEPS:
        real = getattr(cls, name)

        def step(self: Any, *args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            if isinstance(self, FileSet):
                where = f"{self.key}/current"
            else:
                where = args[0] if _name == "write_done" else args[0].uri[len(self.root.uri) + 1 :]
            if seen.crash_at == len(seen.made):
                raise _Crash(f"killed before {_name} {where}")
            seen.made.append((_name, str(where)))
            return _real(self, *args, **kw)

        monkeypatch.setattr(cls, name, step)
    yield seen


def _kind(step: tuple[str, str]) -> int:
    """The place of a commit in the lake's order."""
    method, where = step
    if method == "write_done":
        return 4
    if method == "resolve_rollbacks":
        return 2
    if where.endswith("/current"):
        return 3
    return 0 if where.endswith("/changes") else 1


def test_the_lake_commits_a_batch_in_its_own_order(corpus_dir: Path, tmp_path: Path, steps: Steps) -> None:
    """Change tables, then _events, _schema_history, _skips, then the XA outcome of the first batch's prepared
    transaction, then the current-state tables, then the done mark; the first batch's XA rows counted once their
    XA COMMIT landed."""
    lake, second = _first_batch(corpus_dir, tmp_path, "order")
    steps.made.clear()
    second()
    made = steps.made
    kinds = [_kind(s) for s in made]
    assert kinds == sorted(kinds), made
    assert [s for s in made if s[0] == "resolve_rollbacks"] == [("resolve_rollbacks", "corpus_dml/accounts/changes")]
    assert set(kinds) == {0, 1, 2, 3, 4} and made[-1] == ("write_done", "2")
    lk = Lake(str(lake))
    xa = lk.read(lk.changes("corpus_dml/accounts"))
    assert xa is not None
    assert {r["_xid"]: r["_rolled_back"] for r in xa.to_pylist() if r["_xid"]}.get(
        "X'78612d636f6d6d69742d31',X'',1"
    ) is False  # its XA COMMIT came in the second batch


def test_a_batch_cut_at_any_commit_is_finished_once(corpus_dir: Path, tmp_path: Path, steps: Steps) -> None:
    """A run killed before each kind of commit of the second batch (the first and last change table, the own
    tables, the XA outcome, a current-state table, the done mark), then run again: the lake one clean run leaves."""
    clean, second = _first_batch(corpus_dir, tmp_path, "clean")
    steps.made.clear()
    second()
    made = list(steps.made)
    want = _content(clean)
    firsts = {_kind(s): i for i, s in reversed(list(enumerate(made)))}  # the first commit of each kind
    points = sorted({*firsts.values(), firsts[1] - 1, len(made) - 2})
    assert len(points) >= 6
    for n, at in enumerate(points):
        lake, again = _first_batch(corpus_dir, tmp_path, f"cut-{n}")
        steps.made.clear()
        steps.crash_at = at
        with pytest.raises(_Crash):
            again()
        assert not (lake / "_binlake" / "batches" / "0000000002.done").exists()
        steps.crash_at = None
        again()
        assert _content(lake) == want, f"killed before {made[at]}"


def test_a_block_that_raises_commits_nothing(tmp_path: Path) -> None:
    """``with lake.batch(manifest)``: what the block handed over is committed only when it ends without error."""
    import pyarrow as pa

    from binlake.lake.delta import write_parquet

    lake = Lake(str(tmp_path / "lake"))
    schema = pa.schema([("id", pa.int64())])
    with lake.writing():
        files = write_parquet(pa.table({"id": [1, 2]}, schema=schema), lake.changes("d/t"), "d/t")
        with pytest.raises(_Crash), lake.batch(BatchManifest(1, (), {})) as b:
            b.changes("d/t", files, schema)
            raise _Crash("the tasks failed")
        assert lake.tables() == [] and lake.last_manifest() == (None, True)
        with lake.batch(BatchManifest(1, (), {})) as b:
            b.changes("d/t", files, schema)
        assert [(t.name, t.kind, t.rows) for t in lake.tables()] == [("d.t", "changes", 2)]
        assert lake.last_manifest() == (BatchManifest(1, (), {}), True)


def test_every_xa_outcome_of_a_table_decided_in_one_batch_lands(tmp_path: Path) -> None:
    """Two XA transactions of one table prepared in one batch and committed in the next: both outcomes are set on
    the change rows and both rows reach current state (one commit per table: a second commit of the same batch to
    the change table would be skipped as already there, leaving the second transaction's rows waiting forever)."""
    import pyarrow as pa

    from binlake.lake.delta import write_parquet
    from binlake.lake.records import Statement, TaskReport
    from binlake.lake.tables import META, meta_columns

    lake = Lake(str(tmp_path / "lake"))
    data = pa.schema([("id", pa.int64()), ("v", pa.string())])
    schema = pa.schema([*data, *(pa.field(n, t) for n, t in META)])
    x1, x2 = "X'7831',X'',1", "X'7832',X'',1"
    n = 3
    meta = meta_columns(n, op="insert", file="b.000001", pos=pa.array([100, 200, 300]), row=0, gtid=None, ts=0,
                        seq=pa.array([1, 2, 3]), rolled_back=pa.array([False, None, None], pa.bool_()),
                        xid=pa.array([None, x1, x2], pa.string()))  # fmt: skip
    rows = pa.Table.from_arrays([pa.array([1, 2, 3]), pa.array(["a", "b", "c"]), *meta], schema=schema)
    xa = [Statement("xa", 10, "b.000001", 400 + i, xid=x) for i, x in enumerate((x1, x2))]
    with lake.writing():
        with lake.batch(BatchManifest(1, (), {})) as b:
            b.tables({"d/t": schema}, {"d/t": ["id"]})
            files = write_parquet(rows, lake.changes("d/t"), "d/t")
            b.add(TaskReport(0, tuple(files), prepared={x1: {"d/t": "m"}, x2: {"d/t": "m"}}))
        assert lake.done(1).xa_pending == {x1: ("d/t",), x2: ("d/t",)}
        with lake.batch(BatchManifest(2, (), {}, statements=tuple(xa))) as b:
            b.tables({}, {"d/t": ["id"]})
        changes = lake.read(lake.changes("d/t"))
        current = lake.read(lake.current("d/t"))
        assert changes is not None and current is not None
        assert sorted((r["id"], r["_rolled_back"]) for r in changes.to_pylist()) == [(1, False), (2, False), (3, False)]
        assert sorted((r["id"], r["v"]) for r in current.to_pylist()) == [(1, "a"), (2, "b"), (3, "c")]
        assert lake.done(2).xa_pending == {}
