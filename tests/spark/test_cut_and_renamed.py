"""Binlog files as copies arrive in the world: cut short, renamed, or replaced by another file of the same name
(issue 21, findings 2 and 6).  Every lake is held against a clean run's, table by table and row by row.

- A copy cut short (an interrupted ``cp``, download or sync) lands its whole transactions, one line says where it
  is cut, and the rest lands once the file is whole; at every kind of cut (nothing, less than the magic, inside the
  format description or the GTID list, right after a GTID event, after ``BEGIN``, inside an event's header or body,
  after a whole rows event inside its transaction, inside a compressed TRANSACTION_PAYLOAD).
- A lake an older binlake left stuck by such a cut (its manifests are kept in ``data/``, as that binlake wrote them)
  comes unstuck, with no hand edits, and ends as a clean run's lake.
- The same binlog under a second name lands once; another binlog under a name the lake landed is refused.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from tests.cuts import CUTS, EXAMPLE, MYSQL_CUTS, restamped
from tests.spark.test_spark import _lake_snapshot

from binlake.errors import BinlogHistoryError
from binlake.ingest.progress import Progress
from binlake.ingest.run import IngestResult, _run_batch, ingest
from binlake.ingest.statements import ReadSpec
from binlake.lake.lake import Lake
from binlake.lake.records import BatchManifest
from binlake.spark.runner import SparkRunner

pytestmark = pytest.mark.spark

DATA = Path(__file__).parent / "data"
IGNORE = frozenset({"batch"})  # _schema_history's batch numbers: a lake landed in more runs has more batches


def _run(spark: Any, source: Path, lake: Path) -> tuple[IngestResult, str]:
    """``binlake ingest SOURCE --lake LAKE``: what it did, and its log."""
    log, runner = io.StringIO(), SparkRunner(spark)
    return ingest(runner, [str(source)], str(lake), progress=Progress(runner, log)), log.getvalue()


@pytest.fixture(scope="module")
def clean(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example binlog landed whole, in one run."""
    d = tmp_path_factory.mktemp("clean")
    (d / "b").mkdir()
    (d / "b" / EXAMPLE.name).write_bytes(EXAMPLE.read_bytes())
    result, _ = _run(spark, d / "b", d / "lake")
    assert result.batches == 1 and sum(result.changes.values()) == 866
    return _lake_snapshot(d / "lake", ignore=IGNORE)


def _cut_then_whole(spark: Any, whole: bytes, name: str, cut: int, tmp: Path) -> tuple[str, int | None, Path]:
    """Land the first ``cut`` bytes of a binlog, then all of it: the first run's log, the position the lake
    recorded for the file after it, and the lake."""
    src = tmp / name
    src.write_bytes(whole[:cut])
    _, log = _run(spark, src, tmp / "lake")
    manifest, _ = Lake(tmp / "lake").last_manifest()
    at = None if manifest is None else manifest.positions.get(name)
    src.write_bytes(whole)
    result, _ = _run(spark, src, tmp / "lake")
    assert result.batches == 1
    return log, at, tmp / "lake"


@pytest.mark.parametrize("kind", list(CUTS))
def test_a_copy_cut_short_lands_whole_transactions_then_the_rest(
    spark: Any, tmp_path: Path, clean: dict[str, Any], kind: str
) -> None:
    """``head -c CUT examples/example-bin.000001 > d/example-bin.000001; binlake ingest d/example-bin.000001 --lake
    L`` says where the copy is cut and lands its whole transactions only; ``cp examples/example-bin.000001 d/;
    binlake ingest ...`` then lands the rest: the lake is the clean run's.  (binlake before manifest version 4 landed
    every whole event, recorded 22785 inside GTID 0-1-15, and failed ever after: "rows event for table id 23
    without its TABLE_MAP_EVENT".)"""
    cut, at, says = CUTS[kind]
    log, recorded, lake = _cut_then_whole(spark, EXAMPLE.read_bytes(), EXAMPLE.name, cut, tmp_path)
    assert says in log, log
    assert recorded == at
    assert _lake_snapshot(lake, ignore=IGNORE) == clean


@pytest.mark.parametrize("kind", list(MYSQL_CUTS))
def test_a_mysql_copy_cut_short(
    spark: Any, corpus_dir: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    """The same for MySQL binlogs, where a transaction opens with a GTID event and a ``BEGIN`` (binlake before
    manifest version 4 went on after ``BEGIN`` or the GTID event: the transaction's changes landed without their
    GTID)."""
    path, cut, at = MYSQL_CUTS[kind]
    src = corpus_dir / "mysql" / path
    whole = src.read_bytes()
    clean_dir = tmp_path_factory.mktemp("clean-mysql")
    (clean_dir / src.name).write_bytes(whole)
    _run(spark, clean_dir / src.name, clean_dir / "lake")
    log, recorded, lake = _cut_then_whole(spark, whole, src.name, cut, tmp_path)
    assert f"cut short at {cut}: its whole transactions end at {at}" in log
    assert recorded == at
    assert _lake_snapshot(lake, ignore=IGNORE) == _lake_snapshot(clean_dir / "lake", ignore=IGNORE)


@pytest.mark.parametrize("cut", [30000, 100])
def test_the_files_after_a_copy_cut_short_wait_for_it(spark: Any, tmp_path: Path, cut: int) -> None:
    """A folder holding a copy cut short and a whole later file: the later one waits (its changes come after the
    missing ones), with one line saying so."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "example-bin.000001").write_bytes(EXAMPLE.read_bytes()[:cut])
    (d / "example-bin.000002").write_bytes(restamped(EXAMPLE.read_bytes(), 60))  # another file of the server
    _, log = _run(spark, d, tmp_path / "lake")
    assert "the files after it wait for it" in log
    manifest, _ = Lake(tmp_path / "lake").last_manifest()
    assert (manifest.positions if manifest is not None else None) == (
        {"example-bin.000001": 22522} if cut > 100 else None
    )


# -- a lake an older binlake left stuck ----------------------------------------------------------------------------


def _stuck_lake(spark: Any, tmp_path: Path, cut: int) -> tuple[Path, Lake]:
    """The lake binlake before manifest version 4 left after ``head -c CUT examples/example-bin.000001 >
    d/example-bin.000001; binlake ingest d --lake L; cp examples/example-bin.000001 d/; binlake ingest d --lake L``:
    batch 1 landed the file up to its last whole event (22785 for 30000 bytes; 30955 for 31000, the first of the
    UPDATE's two rows events committed to the change table and the current state without the end of its
    transaction), batch 2's manifest starts there and every run failed at its first rows event.  The manifests are
    the ones that binlake wrote (``data/stuck-at-CUT``); batch 1's tables are committed from them here as it did.
    Returns the source folder (the file whole again) and the lake."""
    d = tmp_path / "d"
    d.mkdir()
    (d / EXAMPLE.name).write_bytes(EXAMPLE.read_bytes()[:cut])
    lake = Lake(tmp_path / "lake")
    batches = lake.root / "_binlake" / "batches"
    kept = {p.name: p.read_text().replace("{SOURCE}", str(d)) for p in (DATA / f"stuck-at-{cut}").iterdir()}
    assert json.loads(kept["0000000001.json"])["version"] == 3
    with lake.writing():
        (batches / "0000000001.json").write_bytes(kept["0000000001.json"].encode())
        first = BatchManifest.from_json(kept["0000000001.json"])
        runner = SparkRunner(spark)
        _run_batch(runner, lake, first, Progress(runner, io.StringIO()), IngestResult(), ReadSpec())
        (batches / "0000000001.done").write_bytes(kept["0000000001.done"].encode())
        (batches / "0000000002.json").write_bytes(kept["0000000002.json"].encode())
    changes = lake.read(lake.changes("shop/orders"))
    assert changes is not None
    assert sum(r["_op"] == "update_postimage" for r in changes.to_pylist()) == (0 if cut == 30000 else 139)
    (d / EXAMPLE.name).write_bytes(EXAMPLE.read_bytes())
    return d, lake


@pytest.mark.parametrize("cut", [30000, 31000])
def test_a_lake_stuck_by_an_older_binlake_comes_unstuck(
    spark: Any, tmp_path: Path, clean: dict[str, Any], cut: int
) -> None:
    """On the lake of :func:`_stuck_lake`, ``binlake ingest d --lake L`` now takes the lake back to before batch 1
    and lands the file again: the lake is the clean run's."""
    d, _ = _stuck_lake(spark, tmp_path, cut)
    result, log = _run(spark, d, tmp_path / "lake")
    assert f"batch 1 stopped inside a transaction ({EXAMPLE.name} at {22785 if cut == 30000 else 30955}" in log
    assert result.batches == 1 and sum(result.changes.values()) == 866
    assert _lake_snapshot(tmp_path / "lake", ignore=IGNORE) == clean
    again, log = _run(spark, d, tmp_path / "lake")
    assert again.batches == 0 and "nothing new" in log


def test_a_rewind_cut_short_is_finished_by_the_next_run(
    spark: Any, tmp_path: Path, clean: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run that takes a stuck lake back dies after its first table (a kill, a lost store): the next run
    finishes taking it back, then lands the file: the lake is the clean run's."""
    from binlake.lake import delta

    d, lake = _stuck_lake(spark, tmp_path, 31000)
    real, calls = delta.rewind, []

    def dies_after_one(loc: Any, batch: int) -> bool:
        calls.append(loc)
        if len(calls) > 1:
            raise OSError("killed")
        return real(loc, batch)

    monkeypatch.setattr(delta, "rewind", dies_after_one)
    with pytest.raises(OSError, match="killed"):
        _run(spark, d, tmp_path / "lake")
    monkeypatch.setattr(delta, "rewind", real)
    manifest, done = lake.last_manifest()
    assert manifest is not None and manifest.rewinds == 1 and not done
    result, _ = _run(spark, d, tmp_path / "lake")
    assert result.batches == 1 and sum(result.changes.values()) == 866
    assert _lake_snapshot(tmp_path / "lake", ignore=IGNORE) == clean


# -- one binlog, two names; two binlogs, one name ---------------------------------------------------------------


def test_a_binlog_under_a_second_name_lands_once(spark: Any, tmp_path: Path, clean: dict[str, Any]) -> None:
    """``cp examples/example-bin.000001 d/; binlake ingest d --lake L; cp d/example-bin.000001
    d/renamed-bin.000001; binlake ingest d --lake L``: the change rows stay as many (binlake before manifest version
    4 landed the copy again, 367 change rows of orders became 734), with one line saying which file it is; the same
    when both names are there from the first run, or the copy comes alone from another folder."""
    whole = EXAMPLE.read_bytes()
    d = tmp_path / "d"
    d.mkdir()
    (d / "example-bin.000001").write_bytes(whole)
    (d / "renamed-bin.000001").write_bytes(whole)
    result, log = _run(spark, d, tmp_path / "both")
    assert "renamed-bin.000001 is example-bin.000001 under another name (server 1, started " in log
    assert sum(result.changes.values()) == 866
    assert _lake_snapshot(tmp_path / "both", ignore=IGNORE) == clean

    one = tmp_path / "one"
    one.mkdir()
    (one / "example-bin.000001").write_bytes(whole)
    _run(spark, one, tmp_path / "later")
    (one / "renamed-bin.000001").write_bytes(whole)
    result, log = _run(spark, one, tmp_path / "later")
    assert result.batches == 0 and "it lands once, as example-bin.000001; skipped" in log
    other = tmp_path / "other"
    other.mkdir()
    (other / "copy-bin.000007").write_bytes(whole)
    result, log = _run(spark, other, tmp_path / "later")
    assert result.batches == 0 and "copy-bin.000007 is example-bin.000001 under another name" in log
    assert _lake_snapshot(tmp_path / "later", ignore=IGNORE) == clean


def test_a_renamed_copy_of_a_file_an_older_binlake_landed_lands_once(
    spark: Any, tmp_path: Path, clean: dict[str, Any]
) -> None:
    """A lake whose manifest an older binlake wrote (version 3: no identities) knows the file it landed by the file
    of that name: a renamed copy of it is skipped all the same."""
    d = tmp_path / "d"
    d.mkdir()
    (d / EXAMPLE.name).write_bytes(EXAMPLE.read_bytes())
    _run(spark, d, tmp_path / "lake")
    plan = tmp_path / "lake" / "_binlake" / "batches" / "0000000001.json"
    old = {k: v for k, v in json.loads(plan.read_text()).items() if k not in ("identities", "rewinds")}
    plan.write_text(json.dumps({**old, "version": 3}))
    (d / "renamed-bin.000001").write_bytes(EXAMPLE.read_bytes())
    result, log = _run(spark, d, tmp_path / "lake")
    assert result.batches == 0 and "renamed-bin.000001 is example-bin.000001 under another name" in log
    assert _lake_snapshot(tmp_path / "lake", ignore=IGNORE) == clean


@pytest.mark.parametrize(
    ("kind", "replacement"),
    [
        ("started later, longer", lambda whole: restamped(whole, 3600)),
        ("started later, shorter than what was landed", lambda whole: restamped(whole, 3600)[:1000]),
        ("the same head, other bytes", lambda whole: whole[:5000] + b"\x00" + whole[5001:]),
    ],
)
def test_another_binlog_under_a_landed_name_is_refused(spark: Any, tmp_path: Path, kind: str, replacement: Any) -> None:
    """After ``RESET MASTER`` (or a rebuilt server) another file comes as ``example-bin.000001``: the ingest stops
    with a BinlogHistoryError naming it and the way forward, and leaves the lake as it was (binlake before manifest
    version 4 went on from the old file's position in the new file, or, the new file being shorter, found nothing
    new: its changes were lost without a word)."""
    d = tmp_path / "d"
    d.mkdir()
    whole = EXAMPLE.read_bytes()
    (d / EXAMPLE.name).write_bytes(whole[:30000] if kind == "the same head, other bytes" else whole)
    _run(spark, d, tmp_path / "lake")
    before = _lake_snapshot(tmp_path / "lake")
    (d / EXAMPLE.name).write_bytes(replacement(whole))
    with pytest.raises(BinlogHistoryError, match="not the binlog the lake landed under this name") as e:
        _run(spark, d, tmp_path / "lake")
    assert "RESET MASTER" in str(e.value) and "new lake" in str(e.value) and EXAMPLE.name in str(e.value)
    assert _lake_snapshot(tmp_path / "lake") == before
