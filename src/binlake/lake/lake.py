"""The :class:`Lake`: one lake of Delta tables at a root :class:`~binlake.storage.Location` (a local folder or an
object-store URI), with everything an ingest, its tasks and ``binlake tables`` do to it.

The layout of a lake, written here once (every name from the binlog encoded by :mod:`binlake.lake.names`; README's
"The lake" says what each table holds for its readers)::

    LAKE/<db>/<table>/changes     one row per row change: the table's own typed columns (binlake.ingest.layouts),
                                  then the META columns (binlake.lake.tables.META: _op, _file, _pos, _row, _gtid,
                                  _ts, _seq, _rolled_back, _xid, _absent)
    LAKE/<db>/<table>/current     tables with a primary key: the rows as their last change left them, + _seq, _ts
                                  (files sorted by the key, with key statistics, and deletion vectors:
                                  binlake.lake.current)
    LAKE/_events                  every event (binlake.lake.tables.EVENTS)
    LAKE/_schema_history          every distinct table map: columns, key, lake columns, where first seen (HISTORY)
    LAKE/_skips                   what --on-error skip-event|skip-transaction skipped (SKIPS)
    LAKE/_binlogs/                a live ingest's copies of the server's binlogs (binlake.ingest.live): a file NAME
                                  each on a local disk; on an object store segments NAME.part/OFFSET, one per sync
                                  (binlake.replication.mirror; read as one file: binlake.storage.binlog_pieces)
    LAKE/_binlake/batches/        each batch's manifest (NNNNNNNNNN.json) and completion mark (.done, holding the XA
                                  transactions still waiting for their outcome and every table's Delta version
                                  once the batch was committed): binlake.lake.records; old batches' folded into one
                                  record by maintenance (AAAAAAAAAA-BBBBBBBBBB.fold)
    LAKE/_binlake/staging/        files a batch's tasks leave for its driver (removed when the batch is done)
    LAKE/_binlake/snapshots/      a snapshot's plan and chunk records, by batch (binlake.snapshot.chunks)
    LAKE/_binlake/stream-start.json  where a live lake's stream starts, until its first batch (binlake.ingest.live)
    LAKE/_binlake/lease           the writer lease (binlake.lake.lease)
    LAKE/_binlake/settings.json   how the lake lays out what it writes (records.LakeSettings; defaults without it)

A batch lands through :meth:`Lake.batch`, which commits what the batch produced in the lake's own order and marks it
done (:mod:`binlake.lake.batch`), the mark listing every table's version then: readers read the lake as of one
complete batch (:meth:`Lake.snapshot`), never one table at a batch and another at the batch before.  Every commit
checks the writer lease first (:meth:`Lake.writing`): a lake is written by one ingest at a time, and one whose lease
expired commits nothing more.  A :class:`Lake` pickles as its root URI (a Spark task gets one and resolves its
filesystem from its own environment; no credential travels), without its lease: tasks write only files no table
references yet, which the driver then commits.

Example::

    lake = Lake("s3://bucket/lake")
    with lake.writing(wait=60), lake.batch(manifest) as b:
        b.changes("db/t", files, schema)
    manifest, done = lake.last_manifest()
    at = lake.snapshot()                    # every table as of the last complete batch (or lake.snapshot(7))
    for t in lake.tables(at):
        rows = lake.read(t.location, t.version)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from binlake.errors import BinlogError
from binlake.lake import delta, deltalog, parallel
from binlake.lake.batch import Batch, Timer
from binlake.lake.lease import LeaseLost, WriterLease
from binlake.lake.names import decode_name
from binlake.lake.records import BatchDone, BatchFold, BatchManifest, DataFile, LakeSettings
from binlake.lake.runner import Runner
from binlake.lake.tables import OWN_TABLES
from binlake.storage import Entry, Location, locate

__all__ = ["BINLOGS_DIR", "Lake", "LakeSnapshot", "LakeTable"]

KINDS = ("changes", "current")
_PLAN = re.compile(r"^\d{10}\.json$")
_FOLD = re.compile(r"^(\d{10})-(\d{10})\.fold$")
BINLOGS_DIR = "_binlogs"
"""The folder of the lake a live ingest's mirror writes the server's binlog files to."""


@dataclass(frozen=True, slots=True)
class LakeTable:
    """One Delta table of a lake: ``name`` as the source named it (``db.table``, or the lake's ``_events`` ...),
    ``kind`` (``changes``, ``current``, ``events``, ``schema_history``, ``skips``), where it is, rows and columns,
    and the Delta ``version`` they are of."""

    name: str
    kind: str
    location: Location
    rows: int
    columns: int
    version: int | None = None


@dataclass(frozen=True, slots=True)
class LakeSnapshot:
    """The lake as of one batch: ``batch`` (``None``: the lake has no complete batch yet, and each table is read as
    of its newest version) and the Delta version of each of its tables then (``versions``: its folder below the
    lake's root -> version; a table not there is not in the lake as of the batch).  Made by :meth:`Lake.snapshot`."""

    batch: int | None
    versions: dict[str, int]

    def version(self, lake: Lake, loc: Location) -> int | None:
        """The version of the table at ``loc`` of ``lake`` to read (``None``: its newest, when the snapshot is of no
        batch); a table not in the lake as of the batch is an error."""
        if self.batch is None:
            return None
        path = loc.relative_to(lake.root)
        if path not in self.versions:
            raise BinlogError(f"no table {path} in this lake as of batch {self.batch}", file=lake.root.uri)
        return self.versions[path]


class Lake:
    """A lake of Delta tables at ``root`` (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str] | Location) -> None:
        self.root = locate(root)
        self._lease: WriterLease | None = None
        self._folds: dict[str, BatchFold] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (Lake, (self.root.uri,))

    def __repr__(self) -> str:
        return f"Lake({self.root.uri!r})"

    # -- where things are --------------------------------------------------------------------------------------

    def changes(self, key: str) -> Location:
        """The change table of the source table ``key`` (``db/table``, :func:`binlake.lake.names.table_dir`)."""
        return self.root / key / "changes"

    def current(self, key: str) -> Location:
        return self.root / key / "current"

    def own(self, name: str) -> Location:
        """One of the lake's own tables (``_events``, ``_schema_history``, ``_skips``)."""
        if name not in OWN_TABLES:
            raise ValueError(f"not a table of the lake's own: {name}")
        return self.root / name

    def staging(self, batch: int) -> Location:
        """Where batch ``batch``'s tasks leave the last change of each key for the driver."""
        return self.root / "_binlake" / "staging" / f"{batch:010d}"

    def snapshot_records(self, batch: int) -> Location:
        """Where the snapshot landing as batch ``batch`` keeps its plan and chunk records (:mod:`binlake.snapshot`)."""
        return self.root / "_binlake" / "snapshots" / f"{batch:010d}"

    @property
    def binlogs(self) -> Location:
        """Where a live ingest mirrors the server's binlogs (:mod:`binlake.ingest.live`)."""
        return self.root / BINLOGS_DIR

    @property
    def _batches(self) -> Location:
        return self.root / "_binlake" / "batches"

    # -- the batch manifests ---------------------------------------------------------------------------------

    def last_manifest(self) -> tuple[BatchManifest | None, bool]:
        """The last batch's manifest (``None`` before the first) and whether the batch is done."""
        plans = [e.location for e in self._batches.list() if _PLAN.match(e.location.name)]
        if not plans:
            return None, True
        last = plans[-1]
        manifest = BatchManifest.from_json(last.read_bytes().decode("utf-8"), last.uri)
        return manifest, (self._batches / f"{manifest.batch:010d}.done").exists()

    def manifest(self, batch: int) -> BatchManifest | None:
        """Batch ``batch``'s manifest, or ``None`` when there is none (its own file, or a fold of old batches')."""
        plan = self._batches / f"{batch:010d}.json"
        if batch < 1:
            return None
        if plan.exists():
            return BatchManifest.from_json(plan.read_bytes().decode("utf-8"), plan.uri)
        text = self._folded(batch, marks=False)
        return None if text is None else BatchManifest.from_json(text, plan.uri)

    def done(self, batch: int) -> BatchDone:
        """What batch ``batch`` left for the next one (an empty mark before the first batch)."""
        mark = self._batches / f"{batch:010d}.done"
        if batch < 1:
            return BatchDone()
        if mark.exists():
            return BatchDone.from_json(mark.read_bytes().decode("utf-8"), mark.uri)
        text = self._folded(batch, marks=True)
        return BatchDone() if text is None else BatchDone.from_json(text, mark.uri)

    def batch_records(self) -> list[Entry]:
        """The files of ``LAKE/_binlake/batches/``: manifests, marks, folds."""
        return self._batches.list()

    def _folded(self, batch: int, *, marks: bool) -> str | None:
        """Batch ``batch``'s manifest (or mark) as a fold of old batches holds it (the newest fold that does)."""
        for entry in reversed(self._batches.list()):
            m = _FOLD.match(entry.location.name)
            if m is None or not int(m[1]) <= batch <= int(m[2]):
                continue
            fold = self._folds.get(entry.location.uri)
            if fold is None:  # a fold is never rewritten: kept once read
                fold = BatchFold.from_json(entry.location.read_bytes().decode("utf-8"), entry.location.uri)
                self._folds[entry.location.uri] = fold
            found = (fold.marks if marks else fold.manifests).get(batch)
            if found is not None:
                return found
        return None

    def fold_batches(self, batches: list[int]) -> None:
        """Fold the manifests and marks of the finished ``batches`` into one record, then remove their files: a
        kill between the two leaves both, the same content, and a fold again writes the same record."""
        self.check()
        plans = {b: (self._batches / f"{b:010d}.json").read_bytes().decode("utf-8") for b in batches}
        marks = {b: (self._batches / f"{b:010d}.done").read_bytes().decode("utf-8") for b in batches}
        name = f"{min(batches):010d}-{max(batches):010d}.fold"
        (self._batches / name).write_bytes(BatchFold(plans, marks).to_json().encode("utf-8"))
        for b in batches:
            (self._batches / f"{b:010d}.json").delete()
            (self._batches / f"{b:010d}.done").delete()

    def last_complete(self) -> int:
        """The last batch whose completion mark is written (0 before the first): every table has it, and no table
        has a later one but the batch still under way or cut short."""
        manifest, done = self.last_manifest()
        if manifest is None:
            return 0
        return manifest.batch if done else manifest.batch - 1

    def snapshot(self, batch: int | None = None) -> LakeSnapshot:
        """The lake as of batch ``batch`` (default: the last complete one, :meth:`last_complete`): the Delta version
        of each table once that batch was committed (:meth:`_recorded`), or a later one where only maintenance
        committed since (:func:`binlake.lake.deltalog.same_content_to`: the same rows, in the files a vacuum
        keeps).  A batch not complete yet, or before the first, is refused; one whose versions were cleaned up
        (past the retention of the tables' logs) fails when a table is read."""
        last = self.last_complete()
        if batch is None:
            if last == 0:
                return LakeSnapshot(None, {})
            batch = last
        if not 1 <= batch <= last:
            have = f"its batches are 1 to {last}" if last else "it has no complete batch yet"
            raise BinlogError(f"no complete batch {batch} in this lake: {have}", file=self.root.uri)
        apps = (delta.APP_ID, delta.XA_APP_ID)
        recorded = self._recorded(batch)
        settled = parallel.each(lambda k: deltalog.same_content_to(self.root / k, recorded[k], apps), sorted(recorded))
        return LakeSnapshot(batch, dict(zip(sorted(recorded), settled, strict=True)))

    def _recorded(self, batch: int) -> dict[str, int]:
        """The Delta version of each table once complete batch ``batch`` was committed: its completion mark's, or,
        where the mark does not list them (one written by binlake before version 3 of the mark, or gone), from
        each table's log (:func:`binlake.lake.deltalog.version_before` the next batch)."""
        tables = self.done(batch).tables
        if tables is None:
            apps = (delta.APP_ID, delta.XA_APP_ID)
            locs = [loc for _, _, loc in self.table_locations()]
            found = parallel.each(lambda loc: deltalog.version_before(loc, batch + 1, apps), locs)
            tables = {loc.relative_to(self.root): v for loc, v in zip(locs, found, strict=True) if v is not None}
        return tables

    def versions_after(self, batch: int, touched: set[Location] | None) -> dict[str, int]:
        """The version of every table of the lake once batch ``batch`` is committed (a completion mark's
        ``tables``): batch ``batch - 1``'s (:meth:`_recorded`), with the newest version of each table in
        ``touched`` (those the batch committed to: one listing of each one's log); every table's newest when
        ``touched`` is ``None`` or the batch is the first."""
        found: dict[str, int | None] = {}
        if touched is None or batch <= 1:
            locs = [loc for _, _, loc in self.table_locations()]
        else:
            found.update(self._recorded(batch - 1))
            locs = sorted(touched, key=lambda loc: loc.uri)
        newest = parallel.each(deltalog.newest_version, locs)
        found.update(zip((loc.relative_to(self.root) for loc in locs), newest, strict=True))
        return {k: v for k, v in sorted(found.items()) if v is not None}

    def write_manifest(self, manifest: BatchManifest) -> None:
        self.check()
        (self._batches / f"{manifest.batch:010d}.json").write_bytes(manifest.to_json().encode("utf-8"))

    def write_done(self, batch: int, done: BatchDone) -> None:
        self.check()
        (self._batches / f"{batch:010d}.done").write_bytes(done.to_json().encode("utf-8"))

    @contextmanager
    def batch(
        self, manifest: BatchManifest, *, timed: Timer | None = None, runner: Runner | None = None
    ) -> Iterator[Batch]:
        """Land batch ``manifest.batch``: the block hands the :class:`~binlake.lake.batch.Batch` what the batch
        produced, and when it ends the lake commits that in its own order and marks the batch done
        (:mod:`binlake.lake.batch`; ``timed`` runs each step of the commit; ``runner`` the current-state merge's
        range tasks of a large batch, default this process).  A block that raises commits nothing.  What an
        interrupted attempt of the batch staged goes first."""
        self.check()
        self.staging(manifest.batch).delete_dir()
        landing = Batch(self, manifest, timed, runner)
        yield landing
        landing.commit()

    # -- the settings ----------------------------------------------------------------------------------------

    def settings(self) -> LakeSettings:
        """How the lake lays out what it writes (:class:`~binlake.lake.records.LakeSettings`; the defaults when
        ``_binlake/settings.json`` is not there)."""
        loc = self.root / "_binlake" / "settings.json"
        if not loc.exists():
            return LakeSettings()
        return LakeSettings.from_json(loc.read_bytes().decode("utf-8"), loc.uri)

    def write_settings(self, settings: LakeSettings) -> None:
        """Change how the lake lays out what it writes from the next batch on (under the writer lease)."""
        self.check()
        (self.root / "_binlake" / "settings.json").write_bytes(settings.to_json().encode("utf-8"))

    # -- the writer lease --------------------------------------------------------------------------------------

    @contextmanager
    def writing(
        self, *, wait: float = 0.0, lease_seconds: float = 60.0, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[WriterLease]:
        """Hold the lake's writer lease for the block (:class:`~binlake.lake.lease.WriterLease`: waiting up to
        ``wait`` seconds for another ingest, then :class:`~binlake.lake.lease.LakeBusy`)."""
        if self._lease is not None:
            raise BinlogError("this Lake already holds its writer lease", file=self.root.uri)
        lease = WriterLease(self.root, lease_seconds).acquire(wait, on_wait)
        self._lease = lease
        try:
            yield lease
        finally:
            self._lease = None
            lease.release()

    def check(self) -> None:
        """The fence every write of the lake's state passes: the writer lease is held and not about to expire."""
        if self._lease is None:
            raise LeaseLost("writing the lake needs its writer lease (Lake.writing)", file=self.root.uri)
        self._lease.check()

    # -- the tables ------------------------------------------------------------------------------------------

    def has_table(self, loc: Location) -> bool:
        return delta.is_table(loc)

    def schema_of(self, loc: Location) -> pa.Schema | None:
        return delta.table_schema(loc)

    def read(self, loc: Location, version: int | None = None) -> pa.Table | None:
        """The content of the Delta table at ``loc`` (through its log; as of ``version``, default its newest), or
        ``None`` when there is none."""
        return delta.read_table(loc, version)

    def sink(self, loc: Location, key: str, schema: pa.Schema, dictionary: list[str]) -> delta.ParquetSink:
        """A new Parquet file in the table folder ``loc``, referenced by no table until the driver commits it."""
        return delta.ParquetSink(loc, key, schema, dictionary)

    def commit(
        self,
        loc: Location,
        files: list[DataFile],
        schema: pa.Schema,
        batch: int,
    ) -> bool:
        """Commit ``files`` to the table at ``loc`` as batch ``batch``, once (:func:`.delta.commit_files`)."""
        self.check()
        return delta.commit_files(loc, files, schema, batch)

    def append(self, loc: Location, table: pa.Table, batch: int) -> bool:
        """Append ``table`` (written by the driver) to the table at ``loc`` as batch ``batch``, once; whether it
        wrote."""
        self.check()
        if delta.txn_version(loc) >= batch:
            return False
        return self.commit(loc, delta.write_parquet(table, loc, ""), table.schema, batch)

    def resolve_rollbacks(self, loc: Location, outcomes: dict[str, bool], batch: int) -> bool:
        """Set the XA outcome of change rows still waiting for it (:func:`binlake.lake.delta.resolve_rollbacks`)."""
        self.check()
        return delta.resolve_rollbacks(loc, outcomes, batch)

    def rewind(self, batch: int) -> int:
        """Take every table back to its content before batch ``batch`` (:func:`.delta.rewind`: a table that batch or
        a later one created goes), and drop the staging files of those batches; how many tables changed.  The
        manifests stay: the batch that rewinds the lake records it (:attr:`BatchManifest.rewinds`)."""
        self.check()
        changed = sum(delta.rewind(loc, batch) for _, _, loc in self.table_locations())
        for entry in (self.root / "_binlake" / "staging").list():
            if entry.is_dir and entry.location.name.isdigit() and int(entry.location.name) >= batch:
                entry.location.delete_dir()
        return changed

    # -- what the lake holds -------------------------------------------------------------------------------------

    def table_locations(self) -> Iterator[tuple[str, str, Location]]:
        """``(name, kind, location)`` of every Delta table of the lake: the source tables', then the lake's own."""
        for db in self.root.list():
            if db.location.name.startswith("_") or not db.is_dir:
                continue
            for table in db.location.list():
                for kind in KINDS:
                    loc = table.location / kind
                    if table.is_dir and (loc / "_delta_log").is_dir():
                        yield _source_name(db.location.name, table.location.name), kind, loc
        for own, kind in OWN_TABLES.items():
            loc = self.root / own
            if (loc / "_delta_log").is_dir():
                yield own, kind, loc

    def tables(self, snapshot: LakeSnapshot | None = None) -> list[LakeTable]:
        """Every Delta table of the lake (as of ``snapshot``, :meth:`snapshot`; default: each table's newest
        version): source tables by name (changes before current), then the lake's own.  Row counts come from the
        Delta log's statistics: listing a large lake reads no data."""
        if not self.root.is_dir():
            raise BinlogError("no lake here", file=self.root.uri)
        at = snapshot or LakeSnapshot(None, {})
        wanted = [t for t in self.table_locations() if at.batch is None or t[2].relative_to(self.root) in at.versions]
        out = parallel.each(lambda t: _describe(*t, at.version(self, t[2])), wanted)
        return sorted((t for t in out if t.kind in KINDS), key=lambda t: (t.name, t.kind)) + [
            t for t in out if t.kind not in KINDS
        ]

    def find(self, wanted: str, tables: list[LakeTable] | None = None) -> LakeTable | None:
        """The table ``wanted`` names: ``db.table`` (its current state, or its change table when it has none),
        ``db.table/changes``, ``db.table/current``, ``_events``, ... (among ``tables``: default :meth:`tables`)."""
        name, _, kind = wanted.partition("/")
        hits = [t for t in (self.tables() if tables is None else tables) if t.name == name and kind in ("", t.kind)]
        hits.sort(key=lambda t: t.kind != "current")  # the current state first, when there is one
        return hits[0] if hits else None


def _describe(name: str, kind: str, loc: Location, version: int | None) -> LakeTable:
    """The table at ``loc`` (as of ``version``): its rows are each file's records less those its deletion vector
    deletes."""
    snap = deltalog.read_snapshot(loc, version)
    if snap is None:
        raise BinlogError("no Delta table here", file=loc.uri)
    rows = sum(snap.live_records(path) for path in snap.files)
    return LakeTable(name, kind, loc, rows, len(snap.schema), snap.version)


def _source_name(db_dir: str, table_dir: str) -> str:
    try:
        return f"{decode_name(db_dir)}.{decode_name(table_dir)}"
    except ValueError:
        return f"{db_dir}/{table_dir}"  # a shortened (hashed) name: the folder is all there is
