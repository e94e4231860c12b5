"""A batch is visible whole, and old lakes keep working (issue 22, item 7).

* Readers get the lake as of one batch (:meth:`binlake.lake.lake.Lake.snapshot`): the last complete one by default,
  never one table at batch N and another at N - 1; time travel to an older batch gives that batch's state (against
  the model of ``tests/lakemodel.py``, and against a lake written by this binlake from the start).
* A completion mark lists each table's Delta version (``tables``); a mark without it (binlake before) is read from
  the tables' logs, with the same result.
* ``tests/data/lake-before-dv/`` is a lake written by the binlake before the current-state engine (whole-table
  current state, manifests version 4, marks version 2): see its README.  It is read as of each of its batches and
  ingested into in place, and every table equals, batch by batch, a lake this binlake wrote from the same binlogs.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")

import pyarrow as pa
from tests.lakemodel import COLUMNS, TABLES, Model, generate, key_of, run, write_batch

from binlake.cli import tables as tables_cli
from binlake.errors import BinlogError
from binlake.ingest.run import ingest
from binlake.lake import Lake
from binlake.lake.delta import read_table
from binlake.lake.lake import LakeSnapshot
from binlake.lake.records import BatchDone, BatchManifest
from binlake.lake.runner import InProcessRunner
from binlake.testing import readers

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "example-bin.000001"
OLD_LAKE = REPO / "tests" / "data" / "lake-before-dv"
CUTS = (20000, 45000, None)  # the example cut short: what each batch of the old lake's README saw (None: all of it)


def _land(lake: Path, binlogs: Path, cut: int | None) -> None:
    """One ``binlake ingest`` of the example as a copy ``cut`` bytes long (its whole transactions land)."""
    binlogs.mkdir(exist_ok=True)
    data = EXAMPLE.read_bytes()
    (binlogs / EXAMPLE.name).write_bytes(data[:cut] if cut else data)
    ingest(InProcessRunner(), [str(binlogs)], str(lake))


def _sorted(data: pa.Table) -> list[dict[str, Any]]:
    """The rows of ``data`` in an order of their own (cell by cell comparable)."""
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _content(lake: Lake, at: LakeSnapshot) -> dict[str, list[dict[str, Any]]]:
    """Every table of ``lake`` as of ``at``, its rows sorted."""
    out = {}
    for t in lake.tables(at):
        data = lake.read(t.location, t.version)
        assert data is not None
        out[f"{t.name}/{t.kind}"] = _sorted(data)
    return out


def _as_before(content: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """``content`` without the column an ALTER TABLE of the example added (see its use)."""
    return {k: [{c: v for c, v in r.items() if c != "loyalty_points"} for r in rows] for k, rows in content.items()}


def _marks(root: Path) -> dict[int, dict[str, Any]]:
    return {int(p.stem): json.loads(p.read_text()) for p in sorted((root / "_binlake" / "batches").glob("*.done"))}


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The old lake (its two batches) with a third batch of this binlake, and a lake of this binlake's three."""
    tmp = tmp_path_factory.mktemp("visible")
    old, fresh = tmp / "old", tmp / "fresh"
    shutil.copytree(OLD_LAKE, old)
    assert all("tables" not in m for m in _marks(old).values())  # marks of the binlake before
    _land(old, tmp / "old-binlogs", CUTS[-1])
    for cut in CUTS:
        _land(fresh, tmp / "fresh-binlogs", cut)
    return old, fresh


def test_an_old_lake_is_read_as_of_each_batch_and_goes_on_in_place(lakes: tuple[Path, Path]) -> None:
    """The lake of the binlake before, read as of each of its batches (from the tables' logs: its marks list no
    versions) and as of the batch this binlake added (from its mark), equals this binlake's lake of the same
    binlogs, every table cell by cell; its old current-state tables were updated in place."""
    old, fresh = Lake(lakes[0]), Lake(lakes[1])
    assert old.last_complete() == fresh.last_complete() == 3
    for batch in (1, 2, 3):
        a, b = old.snapshot(batch), fresh.snapshot(batch)
        assert a.batch == b.batch == batch
        assert set(a.versions) == set(b.versions)
        assert _as_before(_content(old, a)) == _as_before(_content(fresh, b)), batch
    marks = _marks(lakes[0])
    assert "tables" not in marks[2] and marks[3]["version"] == BatchDone.VERSION
    assert marks[3]["tables"] == old.snapshot(3).versions
    assert _content(old, old.snapshot()) == _content(fresh, fresh.snapshot(3))
    # batch 2's ALTER TABLE customers ADD COLUMN loyalty_points INT NOT NULL DEFAULT 0: the binlake before added the
    # column with the next row change after it (absent until then, NULL in the other rows) where this one gives
    # every row the server's 0; a lake keeps what it landed, so as of batch 2 the old lake differs there, only there
    mine = [r.get("loyalty_points") for r in _content(old, old.snapshot(2))["shop.customers/current"]]
    theirs = [r["loyalty_points"] for r in _content(fresh, fresh.snapshot(2))["shop.customers/current"]]
    assert None in mine and all(x in (None, y) for x, y in zip(mine, theirs, strict=True))


def test_a_marks_versions_equal_those_the_logs_give(lakes: tuple[Path, Path]) -> None:
    """Each mark of this binlake lists what the tables' logs say of its batch (the fallback for older marks)."""
    root = lakes[1]
    lake = Lake(root)
    listed = {n: m["tables"] for n, m in _marks(root).items()}
    assert sorted(listed) == [1, 2, 3]
    for path in (root / "_binlake" / "batches").glob("*.done"):
        mark = json.loads(path.read_text())
        path.write_text(json.dumps({k: v for k, v in mark.items() if k != "tables"}))
    try:
        for batch, versions in listed.items():
            assert lake.snapshot(batch).versions == versions, batch
    finally:
        for batch, versions in listed.items():
            path = root / "_binlake" / "batches" / f"{batch:010d}.done"
            path.write_text(BatchDone(tables=versions).to_json())


def test_readers_get_the_last_complete_batch(lakes: tuple[Path, Path], tmp_path: Path) -> None:
    """A batch committed to its tables but not marked done (an ingest still at work, or killed there) is not
    read: ``binlake tables`` and ``Lake.snapshot()`` give the batch before it, every table of it; a table that
    batch created is not listed; ``--batch`` names an older one or refuses one not complete."""
    root = tmp_path / "lake"
    shutil.copytree(lakes[1], root)
    lake = Lake(root)
    (root / "_binlake" / "batches" / "0000000003.done").unlink()
    assert lake.last_complete() == 2
    assert _content(lake, lake.snapshot()) == _content(Lake(lakes[1]), Lake(lakes[1]).snapshot(2))
    newest = {f"{t.name}/{t.kind}": t.rows for t in lake.tables()}
    at_2 = {f"{t.name}/{t.kind}": t.rows for t in lake.tables(lake.snapshot())}
    assert newest != at_2 and newest["shop.customers/changes"] == 367 and at_2["shop.customers/changes"] == 122

    def cli(*argv: str) -> str:
        parser = argparse.ArgumentParser()
        tables_cli.add_arguments(parser)
        out = io.StringIO()
        assert tables_cli.run(parser.parse_args([str(root), *argv]), out) == 0
        return out.getvalue()

    text = cli()
    assert "batch 2, 2 source tables, 6 Delta tables" in text.splitlines()[0]
    at = lake.snapshot()
    assert [ln.split() for ln in text.splitlines()[1:] if ln.startswith("shop.customers")] == [
        ["shop.customers", "changes", "122", "15", str(at.versions["shop/customers/changes"])],
        ["shop.customers", "current", "120", "8", str(at.versions["shop/customers/current"])],
    ]
    assert "shop.orders (current): 240 rows" in cli("shop.orders", "--batch", "1", "--limit", "1")
    for wrong in ("0", "3"):
        with pytest.raises(BinlogError, match=f"no complete batch {wrong} in this lake: its batches are 1 to 2"):
            cli("--batch", wrong)


def test_the_documented_recipe_reads_a_batch_with_deltalake_and_polars(lakes: tuple[Path, Path]) -> None:
    """docs/formats/lake.md's recipe: the highest ``_binlake/batches/N.done``, its ``tables``, each table read at
    its version by deltalake (the SQL engine: deletion vectors applied) and polars gives binlake's rows."""
    root = lakes[1]
    lake = Lake(root)
    for batch in (1, 2, 3):
        mark = json.loads((root / "_binlake" / "batches" / f"{batch:010d}.done").read_text())
        for path, version in mark["tables"].items():
            want = read_table(lake.root / path, version)
            assert want is not None
            for name in [r for r in readers.available() if r != "duckdb"]:  # delta_scan: no time travel
                got = readers.read_with(name, lake.root / path, version)
                assert _sorted(got) == _sorted(want), (batch, path, name)


def test_time_travel_to_each_batch_gives_the_models_state(tmp_path: Path) -> None:
    """Batches of the model's random workload (inserts, updates, key changes, deletes, TRUNCATE, RENAME, XA),
    each marked done as :class:`binlake.lake.batch.Batch` marks it (the previous mark's versions and the newest of
    the tables it committed to): the lake read as of every batch, afterwards, is the model's state after it; and
    the same from the tables' logs alone (marks without versions)."""
    rng = random.Random(22)
    lake = Lake(tmp_path / "lake")
    model, replay = Model(["k1"]), Model(["k1"])
    states: dict[int, dict[str, list[dict[str, Any]]]] = {}
    with lake.writing():
        for number in range(1, 25):
            batch = generate(rng, model, number, rng.randrange(0, 14))
            keys = run(lake, write_batch(lake, batch, replay))
            lake.write_manifest(BatchManifest(number, (), {}))
            touched = {lake.changes(key_of(t)) for t in [*TABLES, "tmp"]} | {lake.current(k) for k in keys}
            lake.write_done(number, BatchDone(tables=lake.versions_after(number, touched)))
            states[number] = {t: model.rows(t) for t in TABLES}

    def as_of(at: LakeSnapshot) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for t in TABLES:
            version = at.versions.get(f"{key_of(t)}/current")
            data = read_table(lake.current(key_of(t)), version) if version is not None else None
            rows = [] if data is None else [{c: r.get(c) for c in COLUMNS} for r in data.to_pylist()]
            out[t] = sorted(rows, key=lambda r: r["k1"])
        return out

    for number, want in states.items():
        assert as_of(lake.snapshot(number)) == want, number
    marks = lake.root / "_binlake" / "batches"
    for number in states:
        (marks / f"{number:010d}.done").write_bytes(BatchDone().to_json().encode())
    for number, want in states.items():
        assert as_of(lake.snapshot(number)) == want, number


def test_completion_marks_read_old_and_refuse_newer() -> None:
    mark = BatchDone({"X'01'": ("shop/a",)}, {"shop/a/changes": 3, "_events": 1})
    assert BatchDone.from_json(mark.to_json()) == mark
    assert BatchDone.from_json('{"version": 2, "xa_pending": {}}') == BatchDone({}, None)
    with pytest.raises(BinlogError, match="format version 5"):
        BatchDone.from_json('{"version": 5, "xa_pending": {}}')


def test_a_table_compacted_since_its_batch_reads_in_its_compacted_files(
    lakes: tuple[Path, Path], tmp_path: Path
) -> None:
    """Maintenance after the last batch (a compaction, then a vacuum of everything older) leaves the lake as of
    that batch readable, in the compacted files; the batch before it, whose files the vacuum took, fails with a
    message naming the table rather than reading other rows."""
    from deltalake import DeltaTable

    root = tmp_path / "lake"
    shutil.copytree(lakes[1], root)
    lake = Lake(root)
    before = _content(lake, lake.snapshot())
    events = DeltaTable(str(root / "_events"))
    assert events.version() == 2 and len(events.file_uris()) == 3
    events.optimize.compact()
    events.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert lake.snapshot().versions["_events"] > 2 and lake.snapshot(3).versions["_events"] > 2
    assert _content(lake, lake.snapshot()) == before
    at_2 = lake.snapshot(2)
    with pytest.raises(BinlogError, match="_events"):
        lake.read(lake.root / "_events", at_2.versions["_events"])


def test_a_table_not_in_the_lake_as_of_a_batch_is_an_error_not_its_newest(lakes: tuple[Path, Path]) -> None:
    """The version to read of a table the lake did not have as of batch N (here: one it never had) is an error,
    never its newest version."""
    lake = Lake(lakes[1])
    at = lake.snapshot(1)
    with pytest.raises(BinlogError, match="no table _skips in this lake as of batch 1"):
        at.version(lake, lake.own("_skips"))
    assert lake.snapshot(1).version(lake, lake.own("_events")) == 0
