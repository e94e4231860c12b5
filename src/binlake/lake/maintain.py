"""Maintenance of a lake: what keeps a lake that a long ingest writes a batch at a time as small and as fast to read
as a freshly written one (``binlake maintain LAKE``, and a bounded slice of it inside long-running ingests).

The steps (:data:`STEPS`; each one can be run alone):

``compact``
    Small files merged.  A change table (and ``_events``, ``_schema_history``, ``_skips``) gets files from every
    batch that touches it: its files of less than :data:`SMALL_BYTES` are concatenated, in the order they were
    added, into files of up to :data:`GROUP_BYTES` of input; so are its files between the two (a first load's file
    per task, a merge of small files that grew past :data:`SMALL_BYTES`) among themselves, so that such a file is
    rewritten once per :data:`SMALL_BYTES` of changes at most, not once per slice.  A current-state table gets a
    small sorted file from every batch: its files of fewer than :data:`SMALL_ROWS` live rows are merged, their
    deleted rows left out, into sorted files of up to :data:`~binlake.lake.files.FILE_ROWS` rows (the engine's own
    rewrite task, :func:`~binlake.lake.fileset.rewrite_files`), so a lookup opens one file per key range again.
    Its deletion vectors, when the batches left them in several files, are written again into one (the same
    commit).
``purge``
    A current-state file whose deletion vector deletes more than :data:`PURGE_FRACTION` of its rows is written again
    without them (one file streamed a row group at a time).
``vacuum``
    Files no version within the retention needs are deleted: in each table's folder, a file that is neither in the
    table now, nor removed from it (a tombstone) less than the retention ago, nor younger than the retention (a
    file an ingest is writing now, which no version names yet) goes: data files, binlake's deletion-vector files
    (delta-rs' full vacuum deletes live ones), files of crashed attempts.  Staging folders of finished batches go
    whatever their age, and the snapshot records of finished batches older than the retention.
``checkpoint``
    A table's ``delta.deletedFileRetentionDuration`` raised to the retention where it is shorter (how long delta-rs'
    checkpoints keep tombstones: :func:`_keep_tombstones`; a ``vacuum`` run alone does it too); a Delta checkpoint
    of every table :data:`CHECKPOINT_EVERY` commits or more past its last one (delta-rs writes it: checkpoints keep
    deletion vector descriptors), then the log files before the newest checkpoint whose commit is older than the
    retention go (every version within the retention stays readable).
``batches``
    The manifests and completion marks of finished batches older than the retention (the last batch's never), when
    there are :data:`FOLD_BATCHES` of them or more, folded into one record
    (:class:`~binlake.lake.records.BatchFold`): :meth:`~binlake.lake.lake.Lake.manifest` and
    :meth:`~binlake.lake.lake.Lake.done` read a batch from it as from its own files.
``binlogs``
    The live ingest's copies of the server's binlogs (``LAKE/_binlogs``) before the file the lake's stream goes on
    from, older than the retention, go, each whole (a copy kept in segments, ``NAME.part/``, with all of them).  The
    segments a mirror writes into an object store, one per sync (a following ingest with ``--interval 1`` writes
    86,400 a day into the file it copies), are merged: consecutive segments smaller than :data:`SEGMENT_BYTES`
    into one of up to that size, written over the first of them (one PUT: readers see the old segment or the
    whole merged run, and the chain of segments, :func:`binlake.storage.binlog_pieces`, then passes over the
    others, which are deleted).  Segment 0 (the one whose in-use flag the mirror clears) and the last segment of
    the newest copy (the one the mirror goes on after) are left as they are.  So listing and reading a copy costs
    one request per :data:`SEGMENT_BYTES`, not one per sync.

The retention (:attr:`~binlake.lake.records.LakeSettings.retention`, Delta's 7 days by default) is the lake's
setting unless a run names another.  Time travel to a version (or a batch) younger than it works; a reader running
a query longer than it may miss files.

Safety.  Maintenance writes the lake, so it holds the writer lease (:meth:`binlake.lake.lake.Lake.writing`):
``binlake maintain`` waits for it (``--wait``), and a following ingest, which holds it for months, runs a bounded
slice (``budget`` rows rewritten) after every N-th batch itself.  It does nothing while the lake's last batch is
unfinished (the next ingest finishes it first: a batch re-run after a crash expects its tables as it left them).
Every rewrite is one commit per table through the engine's :class:`~binlake.lake.fileset.FileSet` (its own
application transaction ``binlake-maintain``; ``dataChange: false``: the rows are the same), after its new files
exist whole; every deletion deletes only files no version within the retention names.  A kill at any moment
leaves either the old commit or the new one, and files a re-run's vacuum deletes once they are older than the
retention: each step is idempotent, and readers never see rows lost or doubled.

Example::

    with lake.writing(wait=60):
        report = maintain(lake, retention=36 * 3600)
    print("\\n".join(report.lines()))
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from binlake.lake import deltalog
from binlake.lake import dv as dvs
from binlake.lake.delta import write_parquet
from binlake.lake.files import FILE_ROWS
from binlake.lake.fileset import FileSet, LiveFile, RewriteTask, in_file, rewrite_files
from binlake.lake.records import DataFile
from binlake.lake.runner import InProcessRunner
from binlake.lake.tables import META_DICTIONARY
from binlake.reader import binlog_order
from binlake.storage import PART, Location, Piece, StorageError, binlog_copies

if TYPE_CHECKING:
    from binlake.lake.lake import Lake

__all__ = [
    "APP_ID",
    "CHECKPOINT_EVERY",
    "FOLD_BATCHES",
    "GROUP_BYTES",
    "PURGE_FRACTION",
    "SEGMENT_BYTES",
    "SLICE_ROWS",
    "SLICE_SEGMENT_BYTES",
    "SMALL_BYTES",
    "SMALL_ROWS",
    "STEPS",
    "TOMBSTONE_RETENTION",
    "MaintainReport",
    "after_batch",
    "interval_seconds",
    "maintain",
    "parse_duration",
]

STEPS = ("compact", "purge", "vacuum", "checkpoint", "batches", "binlogs")
APP_ID = "binlake-maintain"
#: A current-state file whose deletion vector deletes more than this share of its rows is rewritten without them.
PURGE_FRACTION = 0.1
#: A current-state file with fewer live rows than this is small: merged with the table's other small files.
SMALL_ROWS = FILE_ROWS // 8
#: A file of a change table (or of the lake's own tables) smaller than this is small.
SMALL_BYTES = 32 << 20
#: Small files of a change table merged into one file: at most this many bytes of them (one file in memory).
GROUP_BYTES = 256 << 20
#: A table gets a checkpoint when its newest version is this many commits or more past its last checkpoint.
CHECKPOINT_EVERY = 10
#: Finished batches' records are folded when at least this many are older than the retention (the last one never).
FOLD_BATCHES = 100
#: The rows a slice of maintenance inside an ingest rewrites at most (beyond the first merge it starts).
SLICE_ROWS = 1 << 20
#: Segments of a binlog copy smaller than this are merged into one of up to this size (one object in memory).
SEGMENT_BYTES = 64 << 20
#: The bytes of segments a slice of maintenance inside an ingest merges at most.
SLICE_SEGMENT_BYTES = 4 * SEGMENT_BYTES

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds of a duration written ``N`` (seconds) or ``N`` followed by ``s``, ``m``, ``h``, ``d`` or ``w``
    (``7d``, ``36h``, ``0``); :class:`ValueError` otherwise."""
    raw = text.strip().lower()
    unit = raw[-1:] if raw[-1:] in _UNITS else "s"
    number = raw[:-1] if raw[-1:] in _UNITS else raw
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"not a duration: {text!r} (e.g. 7d, 36h, 90m, 0)") from None
    if not value >= 0:
        raise ValueError(f"not a duration: {text!r} (e.g. 7d, 36h, 90m, 0)")
    return value * _UNITS[unit]


@dataclass(slots=True)
class MaintainReport:
    """What a run of maintenance did (or, dry, would do): counts per step; ``unfinished``: the batch whose
    unfinished state kept it from doing anything; ``deferred``: merges a slice left for a later one."""

    dry_run: bool = False
    unfinished: int | None = None
    merged: int = 0  # files merged away (compact)
    merged_into: int = 0
    merged_bytes: int = 0
    tables: set[str] = field(default_factory=set)
    purged: int = 0  # files rewritten without their deleted rows
    purged_rows: int = 0
    deferred: int = 0
    gathered: int = 0  # tables whose deletion vectors were gathered into one file
    vacuumed: int = 0
    vacuumed_bytes: int = 0
    records: int = 0  # staging and snapshot record folders removed
    checkpoints: int = 0
    properties: int = 0  # tables whose tombstones' retention was raised to the lake's
    logs: int = 0
    logs_bytes: int = 0
    binlogs: int = 0
    binlogs_bytes: int = 0
    segments: int = 0  # binlog copies' segments merged away
    segments_into: int = 0
    folded: int = 0  # batches whose records were folded

    def lines(self, steps: Iterable[str] = STEPS) -> list[str]:
        """One summary line per step run."""
        if self.unfinished is not None:
            return [f"batch {self.unfinished} is unfinished: nothing done (the next ingest finishes it first)"]
        would = "would be " if self.dry_run else ""
        kept = f"; {self.properties} tables {would}set to keep tombstones as long as the retention"
        out = {
            "compact": f"compact: {self.merged} small files {would}merged into {self.merged_into} "
            f"({_size(self.merged_bytes)}) in {len(self.tables)} tables"
            + (f", {self.deferred} merges left for the next slice" if self.deferred else "")
            + (f"; {self.gathered} tables' deletion vectors {would}gathered into one file" if self.gathered else ""),
            "purge": f"purge: {self.purged} files {would}rewritten without their {self.purged_rows} deleted rows",
            "vacuum": f"vacuum: {self.vacuumed} files {would}deleted ({_size(self.vacuumed_bytes)} freed), "
            f"{self.records} finished batches' staging and snapshot records"
            + (kept if self.properties and "checkpoint" not in set(steps) else ""),
            "checkpoint": f"checkpoint: {self.checkpoints} checkpoints {would}written, {self.logs} log files "
            f"{would}deleted ({_size(self.logs_bytes)})" + (kept if self.properties else ""),
            "batches": f"batches: {self.folded} finished batches' records {would}folded into one",
            "binlogs": f"binlogs: {self.binlogs} landed binlog copies {would}deleted ({_size(self.binlogs_bytes)})"
            + (f"; {self.segments} segments {would}merged into {self.segments_into}" if self.segments else ""),
        }
        return [out[s] for s in STEPS if s in set(steps)]


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def maintain(
    lake: Lake,
    *,
    retention: float | None = None,
    only: Iterable[str] = STEPS,
    dry_run: bool = False,
    budget: int | None = None,
    now: float | None = None,
) -> MaintainReport:
    """Run the maintenance ``only`` names (default every step: module docstring) on ``lake``, whose writer lease the
    caller holds (a dry run only reads: it needs none).  ``retention``: seconds (default: the lake's setting);
    ``dry_run``: count what would be done, change nothing; ``budget``: rows a run rewrites at most (a slice inside
    an ingest; ``None``: no bound); ``now``: the time the retention counts back from (tests)."""
    steps = set(only)
    unknown = steps - set(STEPS)
    if unknown:
        raise ValueError(f"no maintenance step {', '.join(sorted(unknown))} (the steps: {', '.join(STEPS)})")
    if not dry_run:
        lake.check()
    report = MaintainReport(dry_run=dry_run)
    manifest, done = lake.last_manifest()
    if manifest is not None and not done:
        report.unfinished = manifest.batch
        return report
    keep = lake.settings().retention if retention is None else retention

    def horizon_ns() -> int:
        """What is older than this (ns since the epoch) is past the retention: counted when a step starts, so a
        run's own compaction is past a retention of 0 by its vacuum."""
        return int(((time.time() if now is None else now) - keep) * 1e9)

    left = [budget]
    tables = list(lake.table_locations())
    if steps & {"compact", "purge"}:
        for name, kind, loc in tables:
            _rearrange(lake, name, kind, loc, steps, report, left)
    if steps & {"checkpoint", "vacuum"}:  # (before either: a vacuum trusts the checkpoints' tombstones)
        for _, _, loc in tables:
            _keep_tombstones(loc, keep, lake.check, report)
    if "checkpoint" in steps:
        for _, _, loc in tables:
            _checkpoint(loc, horizon_ns(), report)
    if "vacuum" in steps:
        horizon = horizon_ns()
        for _, _, loc in tables:
            _vacuum(loc, horizon, report)
        _records(lake, 0 if manifest is None else manifest.batch, horizon, report)
    if "batches" in steps and manifest is not None:
        _fold(lake, manifest.batch, horizon_ns(), report)
    if "binlogs" in steps and manifest is not None and manifest.resume is not None:
        _binlogs(lake.binlogs, manifest.resume.file, horizon_ns(), report)
    if "binlogs" in steps:
        _merge_segments(lake.binlogs, report, None if budget is None else SLICE_SEGMENT_BYTES)
    return report


def after_batch(lake: Lake, batch: int, every: int) -> MaintainReport | None:
    """The slice of maintenance an ingest runs after its batch ``batch``, its writer lease held: after every
    ``every``-th batch (0: never), every step, rewriting at most :data:`SLICE_ROWS` rows beyond the first merge it
    starts (what is left waits for the next slice); ``None`` when it is not this batch's turn."""
    if every <= 0 or batch % every:
        return None
    return maintain(lake, budget=SLICE_ROWS)


# -- compact, purge ----------------------------------------------------------------------------------------------


def _table_key(stats: str | None) -> list[str] | None:
    """The primary key a current-state file is sorted by, as its statistics name it (the key columns, then
    ``_seq``: :func:`binlake.lake.files.stats_columns`); ``None`` when it has no statistics to say."""
    counts = json.loads(stats).get("nullCount") if stats else None
    if not counts or list(counts)[-1] != "_seq" or len(counts) < 2:
        return None
    return list(counts)[:-1]


def _live_rows(f: LiveFile) -> int:
    return f.rows - (0 if f.dv is None else int(f.dv["cardinality"]))


def _rearrange(
    lake: Lake, name: str, kind: str, loc: Location, steps: set[str], report: MaintainReport, left: list[int | None]
) -> None:
    """Compact and purge one table: plan its merges, run those the budget allows, commit them together."""
    snap = deltalog.read_snapshot(loc)
    if snap is None or not snap.files:
        return
    fs = FileSet(loc, name, snap)
    files = fs.live()
    pk: list[str] = []
    groups: list[tuple[str, list[LiveFile]]] = []
    if kind == "current":
        key = _table_key(files[0].stats)
        if key is None:
            return
        pk = key
        small = sorted((f for f in files if _live_rows(f) < SMALL_ROWS), key=lambda f: (f.mtime_ms, f.path))
        if "purge" in steps:
            groups += [("purge", [f]) for f in files if f not in small and f.dv is not None
                       and int(f.dv["cardinality"]) > PURGE_FRACTION * f.rows]  # fmt: skip
        if "compact" in steps and len(small) > 1:
            groups += [("compact", g) for g in _chunks(small, _live_rows, FILE_ROWS)]
    elif "compact" in steps:
        order = sorted(files, key=lambda f: (f.mtime_ms, f.path))
        small = [f for f in order if f.size < SMALL_BYTES]
        middle = [f for f in order if SMALL_BYTES <= f.size < GROUP_BYTES]
        groups += [("compact", g) for g in _chunks(small, lambda f: f.size, GROUP_BYTES)]
        groups += [("compact", g) for g in _chunks(middle, lambda f: f.size, GROUP_BYTES)]
    gather = kind == "current" and "compact" in steps and len(_dv_files(files, loc)) > 1
    done = gather and not report.dry_run
    if gather:
        report.gathered += 1
    for what, group in groups:
        rows = sum(f.rows for f in group)
        if left[0] is not None and left[0] <= 0:
            report.deferred += 1
            continue
        if left[0] is not None:
            left[0] -= rows
        new_files = 1  # (a dry run counts what a merge writes as one file)
        if not report.dry_run:
            new = _rewrite(lake, name, kind, loc, snap.schema, pk, group)
            fs.replace([f.id for f in group], new)
            new_files, done = len(new), True
        if what == "purge":
            report.purged += 1
            report.purged_rows += int(group[0].dv["cardinality"]) if group[0].dv else 0
        else:
            report.merged += len(group)
            report.merged_into += new_files
            report.merged_bytes += sum(f.size for f in group)
            report.tables.add(f"{name}/{kind}")
    if done:
        fs.commit(snap.schema, pk, batch=snap.txns.get(APP_ID, 0) + 1, fence=lake.check, layout="dv",
                  runner=InProcessRunner(), app_id=APP_ID, data_change=False, gather=gather)  # fmt: skip


def _dv_files(files: Iterable[LiveFile], table: Location) -> set[str]:
    """The deletion-vector files (URIs) the deletion vectors of ``files`` (of the table at ``table``) are kept in."""
    return {dvs.DeletionVector.from_json(f.dv).file(table).uri for f in files if in_file(f.dv)}


def _chunks(files: Sequence[LiveFile], weight: Callable[[LiveFile], int], most: int) -> list[list[LiveFile]]:
    """``files`` in order, cut into runs of a total ``weight`` of at most ``most`` (a file heavier alone makes a
    run of its own); runs of one file are left out (nothing to merge)."""
    out: list[list[LiveFile]] = []
    run: list[LiveFile] = []
    total = 0
    for f in files:
        if run and total + weight(f) > most:
            out.append(run)
            run, total = [], 0
        run.append(f)
        total += weight(f)
    if run:
        out.append(run)
    return [r for r in out if len(r) > 1]


def _rewrite(
    lake: Lake, name: str, kind: str, loc: Location, schema: pa.Schema, pk: Sequence[str], group: list[LiveFile]
) -> list[DataFile]:
    """The live rows of ``group`` as new files of the table: a current-state table's sorted by ``pk`` (the
    engine's rewrite task), another's in the order of ``group``."""
    if kind == "current":
        return list(rewrite_files(RewriteTask(name, loc.uri, schema, tuple(pk), tuple(group))).files)
    parts: list[pa.RecordBatch] = []
    for f in group:
        lost = f.deleted_rows()
        parts.extend(deltalog.scan_rows(f.location, schema, lost if lost.size else None))
    rows = pa.Table.from_batches(parts, schema=schema)
    dictionary = [c for c in META_DICTIONARY if c in schema.names] if kind == "changes" else []
    return write_parquet(rows, loc, name, dictionary, part_rows=max(1, rows.num_rows))


# -- vacuum -------------------------------------------------------------------------------------------------------


def _needed(table: Location, horizon_ms: int) -> set[str]:
    """The URIs of the files some version of ``table`` within the retention needs: its files now, with their
    deletion vectors, and those of its tombstones younger than the retention."""
    snap = deltalog.read_snapshot(table)
    if snap is None:
        return set()
    out: set[str] = set()
    actions = [*snap.files.values(), *(t for t in snap.tombstones.values()
                                       if int(t.get("deletionTimestamp") or 0) > horizon_ms)]  # fmt: skip
    for a in actions:
        out.add(deltalog.file_location(table, a["path"]).uri)
        d = a.get("deletionVector")
        if in_file(d):
            out.add(dvs.DeletionVector.from_json(d).file(table).uri)
    return out


def _vacuum(table: Location, horizon_ns: int, report: MaintainReport) -> None:
    """Delete the files of ``table``'s folder no version within the retention needs, older than it."""
    needed = _needed(table, horizon_ns // 1_000_000)
    if not needed and not deltalog.log_files(table).commits:
        return  # no table here (any more): its folder is not ours to clear
    for entry in table.list(recursive=True):
        rel = entry.location.relative_to(table)
        if entry.is_dir or rel.split("/", 1)[0] == deltalog.LOG or entry.location.uri in needed:
            continue
        if entry.mtime_ns is None or entry.mtime_ns > horizon_ns:
            continue  # young: a file an ingest may be writing now, or one a version within the retention adds
        report.vacuumed += 1
        report.vacuumed_bytes += entry.size
        if not report.dry_run:
            entry.location.delete()


def _records(lake: Lake, last: int, horizon_ns: int, report: MaintainReport) -> None:
    """Staging folders of finished batches (``last`` is the lake's last, finished), and snapshot records of
    finished batches whose files are all older than the retention."""
    for folder, aged in ((lake.staging(0).parent, False), (lake.snapshot_records(0).parent, True)):
        for entry in folder.list():
            name = entry.location.name
            if not (entry.is_dir and name.isdigit() and int(name) <= last):
                continue
            if aged:
                inside = entry.location.list(recursive=True)
                if any(e.mtime_ns is None or e.mtime_ns > horizon_ns for e in inside if not e.is_dir):
                    continue
            report.records += 1
            if not report.dry_run:
                entry.location.delete_dir()


# -- checkpoints and the log ----------------------------------------------------------------------------------


#: Delta's table property for how long a checkpoint keeps the ``remove`` actions of files no longer in the table.
TOMBSTONE_RETENTION = "delta.deletedFileRetentionDuration"
_DEFAULT_TOMBSTONES = 7 * 86400.0  # the protocol's default, a week
_INTERVAL_UNITS: dict[str, float] = {"nanosecond": 1e-9, "microsecond": 1e-6, "millisecond": 1e-3, "second": 1.0,
                                      "minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 604800.0}  # fmt: skip


def interval_seconds(text: str | None) -> float | None:
    """The seconds of a Delta interval property (``interval 7 days``, ``2592000 seconds``); ``None`` when unset or
    not of that form.

    >>> [interval_seconds(t) for t in ("interval 7 days", "interval 1 week", "36 hours", "soon", None)]
    [604800.0, 604800.0, 129600.0, None, None]
    """
    if text is None:
        return None
    m = re.fullmatch(r"\s*(?:interval\s+)?(\d+)\s*([a-z]+?)s?\s*", text.lower())
    if m is None or m.group(2) not in _INTERVAL_UNITS:
        return None
    return int(m.group(1)) * _INTERVAL_UNITS[m.group(2)]


def _keep_tombstones(table: Location, keep: float, fence: Callable[[], None], report: MaintainReport) -> None:
    """Raise the table's :data:`TOMBSTONE_RETENTION` to the lake's retention ``keep`` (seconds) where it is
    shorter (unset: Delta's week): delta-rs' checkpoints leave out the ``remove`` actions older than it, and to
    the vacuum a removed file without its tombstone is a leftover, deleted once older than the retention, so time
    travel within a retention of 30 days needs tombstones kept 30 days.  Never lowered (a checkpoint keeping more
    tombstones is larger, not wrong)."""
    snap = deltalog.read_snapshot(table)
    if snap is None:
        return
    set_to = interval_seconds((snap.metadata.get("configuration") or {}).get(TOMBSTONE_RETENTION))
    if keep <= (set_to if set_to is not None else _DEFAULT_TOMBSTONES):
        return
    report.properties += 1
    if report.dry_run:
        return

    value = f"interval {math.ceil(keep)} seconds"

    def plan(snap: deltalog.Snapshot) -> list[deltalog.Action] | None:
        meta = dict(snap.metadata)
        config = dict(meta.get("configuration") or {})
        have = interval_seconds(config.get(TOMBSTONE_RETENTION))
        if have is not None and have >= keep:
            return None
        meta["configuration"] = {**config, TOMBSTONE_RETENTION: value}
        return [{"metaData": meta}]

    deltalog.commit(table, plan, fence=fence, operation="SET TBLPROPERTIES",
                    parameters={"properties": json.dumps({TOMBSTONE_RETENTION: value})})  # fmt: skip


def _checkpoint(table: Location, horizon_ns: int, report: MaintainReport) -> None:
    """A checkpoint when due, then the log files before the newest checkpoint older than the retention."""
    log = deltalog.log_files(table)
    if not log.commits:
        return
    newest = max(log.commits)
    last = max(log.checkpoints, default=-1)
    if newest - last >= CHECKPOINT_EVERY:
        report.checkpoints += 1
        if not report.dry_run:
            deltalog.delta_table(table, newest).create_checkpoint()
            log = deltalog.log_files(table)

    def age(v: int) -> int | None:
        entry = log.commits.get(v) or log.checkpoints[v][0]
        return entry.mtime_ns

    old = [v for v in log.checkpoints if (a := age(v)) is not None and a <= horizon_ns]
    if not old:
        return
    cut = max(old)  # every version from it on stays readable: a complete checkpoint, the commits after it
    for v, entry in log.versioned:
        if v < cut and entry.mtime_ns is not None and entry.mtime_ns <= horizon_ns:
            report.logs += 1
            report.logs_bytes += entry.size
            if not report.dry_run:
                entry.location.delete()


# -- the batches' records ------------------------------------------------------------------------------------


def _fold(lake: Lake, last: int, horizon_ns: int, report: MaintainReport) -> None:
    """Fold the records of finished batches before ``last`` older than the retention, when there are enough."""
    plans: dict[int, int | None] = {}
    marks: dict[int, int | None] = {}
    for entry in lake.batch_records():
        name = entry.location.name
        if name[:10].isdigit() and name[10:] in (".json", ".done"):
            (plans if name.endswith(".json") else marks)[int(name[:10])] = entry.mtime_ns
    old = sorted(
        b for b, t in plans.items()
        if b < last and t is not None and t <= horizon_ns and (m := marks.get(b)) is not None and m <= horizon_ns
    )  # fmt: skip
    if len(old) < FOLD_BATCHES:
        return
    report.folded += len(old)
    if not report.dry_run:
        lake.fold_batches(old)


# -- the live ingest's binlog copies --------------------------------------------------------------------------


def _binlogs(folder: Location, resume_file: str, horizon_ns: int, report: MaintainReport) -> None:
    """Copies of binlogs before ``resume_file`` (the lake's stream goes on in it: every one before it is landed),
    older than the retention (their newest piece is), each removed whole: its plain file, its segments."""
    base, number = binlog_order(resume_file)
    for name, pieces in binlog_copies(folder).items():
        b, n = binlog_order(name)
        if b != base or n < 0 or n >= number:
            continue
        stamps = [p.mtime_ns for p in pieces]
        if None in stamps or max(s for s in stamps if s is not None) > horizon_ns:
            continue
        report.binlogs += 1
        report.binlogs_bytes += pieces[-1].end
        if not report.dry_run:  # the last piece first: a kill midway leaves a shorter copy, removed next time
            for piece in reversed(pieces):
                piece.location.delete()
            (folder / f"{name}{PART}").delete_dir()  # and any leftover segment


def _merge_segments(folder: Location, report: MaintainReport, most: int | None) -> None:
    """Merge the small segments of the binlog copies in ``folder`` (module docstring, ``binlogs``), ``most`` bytes
    of them at most (``None``: all); delete the segments a merge passed over (a kill between the PUT and the
    deletes leaves them: the chain passes over them, and the next run deletes them)."""
    copies = binlog_copies(folder)
    newest = max(copies, key=binlog_order, default=None)
    for name, pieces in copies.items():
        segments = folder / f"{name}{PART}"
        end = pieces[-1].end
        chain = {p.location.uri for p in pieces}
        merged = 0
        if len(pieces) > 2:
            for run in _runs(pieces[1:-1] if name == newest else pieces[1:]):
                if most is not None and merged >= most:
                    break
                if report.dry_run:
                    report.segments += len(run) - 1
                    report.segments_into += 1
                    continue
                data = b"".join(p.location.read_bytes() for p in run)
                if len(data) != run[-1].end - run[0].offset:  # (a listing older than a mirror's recovery)
                    raise StorageError("a segment holds other bytes than its listing said", file=run[0].location.uri)
                run[0].location.write_bytes(data)
                chain.difference_update(p.location.uri for p in run[1:])
                report.segments += len(run) - 1
                report.segments_into += 1
                merged += len(data)
        if report.dry_run or len(pieces) < 2:
            continue
        for entry in segments.list():  # passed over: merged, or cut by a mirror's recovery; never one past the end
            off = entry.location.name
            if not entry.is_dir and off.isdigit() and int(off) < end and entry.location.uri not in chain:
                entry.location.delete()


def _runs(pieces: Sequence[Piece]) -> list[list[Piece]]:
    """Runs of consecutive ``pieces`` smaller than :data:`SEGMENT_BYTES`, each of two or more, of up to that many
    bytes together (a whole object ``NAME`` is never in one: only segments are written over)."""
    runs: list[list[Piece]] = []
    run: list[Piece] = []
    for p in pieces:
        small = p.size < SEGMENT_BYTES and p.location.parent.name.endswith(PART)
        if run and (not small or run[-1].end - run[0].offset + p.size > SEGMENT_BYTES):
            if len(run) > 1:
                runs.append(run)
            run = []
        if small:
            run.append(p)
    if len(run) > 1:
        runs.append(run)
    return runs
