"""``binlake ingest``: binlogs -> a lake of Delta tables, incrementally and exactly once.

It writes the lake's tables (their layout: :mod:`binlake.lake.lake`) from the binlogs' row changes, events and table
maps, a batch at a time.  A run holds the lake's writer lease throughout (another ingest waits for it or stops) and
is one or more batches.  A batch's plan (its byte ranges and the positions reached after it) is written atomically
before any table is touched, its tasks run on a :class:`~binlake.lake.runner.Runner`, and the lake commits what they
wrote (:meth:`~binlake.lake.lake.Lake.batch`); each table's commit carries the Delta application transaction
``(binlake-ingest, batch)``, so re-running an unfinished batch (after a kill -9 at any moment) decodes the same
ranges and commits only to the tables that have not got it: every table ends as one clean run leaves it.  Column
changes (ALTER TABLE) add columns to the tables (schema merge); a column whose type changes gets a second column
``<name>__<type>``.

A batch lands whole transactions only: what a file the server still writes, or a copy still under way, holds of
its last transaction waits for the rest (:mod:`.tails`), and a lake an older binlake left inside a transaction is
taken back to before that batch and landed again.  Every file landed is known by its identity, not its name
(:mod:`.identity`): a second copy under another name lands once, another file under a landed name is refused.

Current state follows the statements a row event does not show: ``TRUNCATE``/``DROP``/``CREATE OR REPLACE`` empty
it; ``RENAME TABLE a TO b`` (and ``ALTER TABLE a RENAME TO b``) moves ``a``'s rows to ``b`` at that point of the
log (``a``'s change table keeps its history; changes after the rename land in ``b``), swaps included; an XA
transaction counts from its ``XA COMMIT`` (possibly batches later: its change rows are then updated); a partial row
image (MINIMAL/NOBLOB) updates only the columns it holds.  The planner reads the DDL of every range before the
tasks run, so a split that starts mid-file decodes with the schema in force there (:mod:`.statements`).

Example::

    binlake ingest /var/lib/mysql/ --lake /data/lake
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pyarrow as pa

from binlake.binlogs import BinlogFile, list_binlogs, source_exists
from binlake.columns import SchemaSource
from binlake.decoder import Decoder, decode_event
from binlake.errors import BinlogError
from binlake.events.base import EventType
from binlake.events.gtid import GtidListEvent, MariaGtidEvent
from binlake.ingest.alters import alterations, renamed_keys
from binlake.ingest.identity import recorded, sort_out
from binlake.ingest.layouts import Layout, MapLog, history_row, known_layouts, resolve_layout
from binlake.ingest.plan import DEFAULT_SPLIT_BYTES, binlog_head, plan_splits
from binlake.ingest.progress import Progress
from binlake.ingest.statements import (
    SEQ_FILE,
    SEQ_POS,
    ReadSpec,
    scan_statements,
    tracker_at,
    tracker_from_json,
    tracker_to_json,
)
from binlake.ingest.tails import inside, last_whole, plainly_outside
from binlake.ingest.tasks import TaskPlan, write_task
from binlake.lake.current import MapLayout, Unconverted
from binlake.lake.lake import Lake
from binlake.lake.maintain import after_batch
from binlake.lake.names import decode_name, table_dir
from binlake.lake.records import BatchManifest, SkipRecord, Split, TaskReport
from binlake.lake.runner import Runner
from binlake.lake.tables import META, META_NAMES
from binlake.reader import HeaderCache, binlog_order, header_table, opened, resume_decoder
from binlake.replication.gtid import GtidTracker
from binlake.replication.position import ResumePoint
from binlake.schema import SchemaTracker
from binlake.transactions import GTID_EVENTS

__all__ = ["IngestResult", "ingest", "ingest_held", "summary", "warnings"]

MIN_SPLIT_BYTES = 4 << 20  # a smaller range is not worth a task of its own (~30 ms each in local mode)
E = EventType
# the events that move a GTID state (a header walk's type codes, one byte per event)
_GTID_CODES = re.compile(
    b"[%s]" % re.escape(bytes(sorted({*GTID_EVENTS, E.GTID_LIST_EVENT, E.PREVIOUS_GTIDS_LOG_EVENT})))
)


@dataclass
class IngestResult:
    """What a run did (the final summary)."""

    batches: int = 0
    files: int = 0
    bytes: int = 0
    events: int = 0
    changes: Counter[str] = field(default_factory=Counter)  # "db/table op" -> count
    skips: list[SkipRecord] = field(default_factory=list)  # what --on-error skip-* skipped
    xa_pending: int = 0  # XA transactions prepared and not yet committed or rolled back
    renames: int = 0
    unconverted: list[Unconverted] = field(default_factory=list)  # values an ALTER TABLE left NULL in current state
    reread: list[str] = field(default_factory=list)  # tables (DB.TABLE) a live ingest then read again from the server
    seconds: float = 0.0
    waited: float = 0.0  # seconds spent waiting for another ingest writing the lake
    resume: ResumePoint | None = None  # where the stream goes on after the last batch (live lakes)


def summary(result: IngestResult) -> str:
    """The closing report of a run: files, bytes, events, changes per table, throughput, skips, pending XA.

    >>> r = IngestResult(1, 2, 3_000_000, 500, Counter({"db/t insert": 7, "db/t update": 2}), seconds=2.0)
    >>> print(summary(r))
    ingested 1 batch: 2 files, 3.0 MB, 500 events, 9 row changes in 2.0 s (1.5 MB/s, 250 events/s)
      TABLE  INSERT  UPDATE  DELETE
      db.t        7       2       0
    """
    secs = max(result.seconds, 1e-9)
    total = sum(result.changes.values())
    lines = [
        f"ingested {result.batches} batch{'es' if result.batches != 1 else ''}: {result.files} file"
        f"{'s' if result.files != 1 else ''}, {result.bytes / 1e6:.1f} MB, {result.events} events, {total} row "
        f"changes in {result.seconds:.1f} s ({result.bytes / 1e6 / secs:.1f} MB/s, {result.events / secs:.0f} "
        "events/s)"
    ]
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for key, n in result.changes.items():
        table, op = key.rsplit(" ", 1)
        per[table][op] += n
    if per:
        names = {t: _display(t) for t in per}
        width = max(len("TABLE"), *(len(n) for n in names.values()))
        lines.append(f"  {'TABLE':<{width}}  INSERT  UPDATE  DELETE")
        for t in sorted(per, key=lambda k: names[k]):
            c = per[t]
            lines.append(f"  {names[t]:<{width}}  {c['insert']:>6}  {c['update']:>6}  {c['delete']:>6}")
    if result.renames:
        lines.append(f"  {result.renames} table rename(s) carried the current state over")
    lines.extend(warnings(result))
    if result.xa_pending:
        lines.append(f"  {result.xa_pending} XA transaction(s) prepared, waiting for XA COMMIT/ROLLBACK")
    if result.waited:
        lines.append(f"  waited {result.waited:.1f} s for another ingest writing the lake")
    return "\n".join(lines)


def warnings(result: IngestResult) -> list[str]:
    """The lines of a run's report a user must see even where only its first line is shown (each batch of a
    following ``ingest --host``): values an ALTER TABLE left NULL, damaged stretches skipped."""
    lines = []
    if result.unconverted:
        lines.append("  current state: values ALTER TABLE converted in a way binlake does not mirror, set NULL:")
        lines.extend(f"    {u}" for u in result.unconverted)
        if not result.reread:
            lines.append(
                "    (from a server: `binlake ingest --host ... --snapshot DB.TABLE` reads such a table again)"
            )
    if result.reread:
        lines.append(f"  read again from the server, so their current state equals it: {', '.join(result.reread)}")
    if result.skips:
        lost = sum(s.events_lost for s in result.skips)
        lines.append(f"  {len(result.skips)} damaged stretch(es) skipped ({lost} events lost), listed in _skips:")
        lines.extend(f"    {s.file} {s.start}-{s.end}: {s.reason}" for s in result.skips[:10])
    return lines


def _display(key: str) -> str:
    """``db/table`` folder key -> ``db.table`` as the source named it."""
    try:
        return ".".join(decode_name(p) for p in key.split("/"))
    except ValueError:
        return key


def _schema_after(manifest: BatchManifest | None, seed: str | None) -> SchemaTracker:
    """The schema where the next batch starts: the last batch's start state and DDL, over the ``--schema`` seed, and
    the sessions' temporary tables where the last batch ended."""
    tracker = SchemaTracker.from_sql(seed) if seed else SchemaTracker()
    if manifest is None:
        return tracker
    last = tracker_at(manifest.schema, manifest.statements, 1 << 200)
    known = last.tables
    tables = {**{k: v for k, v in tracker.tables.items() if k not in known}, **known}
    return SchemaTracker(tables, last.temporary.state, {**tracker.databases, **last.databases})


def ingest(
    runner: Runner,
    sources: list[str],
    lake: str | Lake,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Progress | None = None,
    read: ReadSpec | None = None,
    cores: int | None = None,
    wait: float = 0.0,
    lease_seconds: float = 60.0,
    start: ResumePoint | None = None,
    maintain_every: int = 0,
) -> IngestResult:
    """Ingest what is new in ``sources`` into ``lake`` (finishing an interrupted batch first); see the module doc.

    ``sources`` and ``lake``: local paths or URIs (:mod:`binlake.storage`).
    ``runner``: where the tasks run (:class:`~binlake.lake.runner.InProcessRunner`, or
    :class:`~binlake.spark.runner.SparkRunner` of a session still starting: the plan and the scan run on the driver
    meanwhile; ``binlake ingest`` starts its JVM so, which saves most of a second).
    ``read``: decoding options (``schema_sql`` seeds the schema of the first batch), decryptor, ``on_error``.
    ``cores``: the task slots to size splits for (default: the runner's ``cores``, one for a runner without).
    ``wait``: seconds to wait for another ingest writing the lake, then :class:`~binlake.lake.LakeBusy`;
    ``lease_seconds``: how long the writer lease lasts unrenewed (:mod:`binlake.lake.lease`).
    ``start``: where the stream of an empty lake starts (a live ingest's start point, e.g. where a snapshot was
    taken): the files before ``start.file`` and the bytes of it before ``start.position`` are not landed, and
    every batch's manifest records where the stream goes on after it (:attr:`BatchManifest.resume`, with the GTID
    state there, followed from ``start.gtid``).  A lake whose last manifest has a resume point goes on from it.
    ``maintain_every``: after every N-th batch (0: never) a bounded slice of maintenance runs, the lease still held
    (:func:`binlake.lake.maintain.after_batch`).
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    progress = progress or Progress(runner)
    t0 = time.monotonic()
    files = _binlogs(sources)  # before the lease: a source that is not there leaves the lake untouched
    with lake.writing(wait=wait, lease_seconds=lease_seconds, on_wait=progress.log) as lease:
        if lease.waited:
            progress.log(f"the lake is free after {lease.waited:.1f} s")
            files = _binlogs(sources)  # they may have grown meanwhile
        result = ingest_held(runner, files, lake, split_bytes=split_bytes, progress=progress, read=read, cores=cores,
                             start=start, maintain_every=maintain_every)  # fmt: skip
        result.waited = lease.waited
    result.seconds = time.monotonic() - t0
    return result


def ingest_held(
    runner: Runner,
    files: list[BinlogFile],
    lake: Lake,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Progress | None = None,
    read: ReadSpec | None = None,
    cores: int | None = None,
    start: ResumePoint | None = None,
    definitions: SchemaSource | None = None,
    maintain_every: int = 0,
) -> IngestResult:
    """:func:`ingest` of ``files`` (:func:`~binlake.binlogs.list_binlogs`'s records) into ``lake``, whose writer
    lease the caller holds (``with lake.writing(): ...``): a live ingest holds it across its batches, and gives the
    server's table ``definitions`` (:mod:`binlake.columns`)."""
    lake.check()
    result = IngestResult()
    t0 = time.monotonic()
    progress = progress or Progress(runner)
    _ingest(runner, files, lake, split_bytes, progress, read or ReadSpec(), cores, result, start, definitions)
    if result.batches:
        last = lake.last_manifest()[0]
        report = None if last is None else after_batch(lake, last.batch, maintain_every)
        if report is not None:
            for line in report.lines():
                progress.detail(f"maintenance: {line}")
    result.seconds = time.monotonic() - t0
    return result


def _binlogs(sources: list[str]) -> list[BinlogFile]:
    """The binlog files of ``sources``, in order (a name given twice counts once)."""
    files: dict[str, BinlogFile] = {}
    for src in sources:
        found = list_binlogs(src)
        if not found and not source_exists(src):  # a typo is an error, an empty folder is nothing new
            raise BinlogError("no such file or folder, and no file matches it as a glob", file=src)
        for f in found:
            files.setdefault(f.name, f)
    return sorted(files.values(), key=lambda f: (f.seq, f.name))


def _ingest(
    runner: Runner,
    ordered: list[BinlogFile],
    lake: Lake,
    split_bytes: int,
    progress: Progress,
    read: ReadSpec,
    cores: int | None,
    result: IngestResult,
    start: ResumePoint | None = None,
    definitions: SchemaSource | None = None,
) -> None:
    manifest, done = lake.last_manifest()
    if manifest is not None and manifest.rewinds is not None and not done:
        _rewind(lake, manifest, progress)  # a rewind a kill cut short
    elif manifest is not None:
        stuck = _stuck(lake, manifest, done, ordered, read)
        if stuck is not None:
            manifest = _rewind_to(lake, manifest, *stuck, read, progress)
        elif not done:
            progress.log(f"finishing interrupted batch {manifest.batch}")
            _run_batch(runner, lake, manifest, progress, result, read, definitions=definitions)
    positions: dict[str, int] = dict(manifest.positions) if manifest is not None else {}
    resume = manifest.resume if manifest is not None else start
    result.resume = resume
    if resume is not None:  # a live lake: the stream goes on at resume, the files before it are done
        first = binlog_order(resume.file)
        ordered = [f for f in ordered if binlog_order(f.name) >= first]
        positions.setdefault(resume.file, resume.position)
    ordered, known = sort_out(ordered, manifest.identities if manifest is not None else {}, positions, progress.log)
    new_bytes = sum(max(0, f.size - positions.get(f.name, 4)) for f in ordered)
    if cores is None:  # a runner's task slots (SparkRunner.cores); one where tasks run in turn
        cores = int(getattr(runner, "cores", 1) or 1)
    split_bytes = _balanced(new_bytes, split_bytes, cores)
    headers = HeaderCache()  # the plan's header walks, kept for the scan of the same ranges
    splits = progress.timed(
        "plan",
        lambda: plan_splits(ordered, split_bytes=split_bytes, resume=positions, whole_tail=False, headers=headers),
    )
    splits = _whole_transactions(splits, ordered, positions, read, progress.log)
    if splits:
        after = dict(positions)
        for s in splits:
            after[s.file.name] = s.end
        batch = (manifest.batch + 1) if manifest is not None else 1
        tracker = _schema_after(manifest, read.options.schema_sql)
        start_schema = tracker_to_json(tracker)
        maps = MapLog(tracker, known_layouts(lake), definitions)
        statements = progress.timed("scan", lambda: scan_statements(splits, tracker, read, maps, headers=headers))
        if resume is not None:
            resume = result.resume = resume_after(splits, resume, headers)
        headers.clear()  # about 19 bytes per event: not kept through the Spark job
        files = recorded(ordered, known, after)
        manifest = BatchManifest(batch, tuple(splits), after, start_schema, tuple(statements), resume, files)
        lake.write_manifest(manifest)
        _run_batch(runner, lake, manifest, progress, result, read, maps)
    elif result.batches == 0:
        progress.detail("nothing new")


def _whole_transactions(
    splits: list[Split], files: list[BinlogFile], positions: dict[str, int], read: ReadSpec, log: Callable[[str], None]
) -> list[Split]:
    """``splits`` (the planner's: a file that does not end with its ROTATE or STOP stops at the last transaction
    boundary a header walk sees) with each file's last one reaching the end of the file's last whole transaction
    (:func:`~binlake.ingest.tails.last_whole`).  A file whose format description no longer flags it in use but that
    ends inside a transaction or an event is a copy cut short (a server closes a file with a ROTATE or STOP, and
    MySQL's crash recovery truncates one to its last whole transaction): one line says so, and its rest and the
    files after it wait for the rest of it.  An encrypted file is planned once closed (its type codes are
    ciphertext)."""
    mine: dict[str, list[Split]] = defaultdict(list)
    for s in splits:
        mine[s.file.name].append(s)
    out: list[Split] = []
    for i, f in enumerate(files):
        own = mine.get(f.name, [])
        start = own[-1].end if own else max(4, positions.get(f.name, 4))
        if start < f.size:
            closed, encrypted = binlog_head(f.source, cut=True)
            end = start if encrypted and not closed else last_whole(f, start, read)
            if end > start and own:
                own[-1] = Split(own[-1].file, own[-1].start, end)
            elif end > start:
                own = [Split(BinlogFile(f.path, f.name, f.seq, max(f.size, end)), start, end)]
            if end < f.size and closed:
                later = ", and the files after it wait for it" if i + 1 < len(files) else ""
                log(f"{f.name} is cut short at {f.size}: its whole transactions end at {end}, the {f.size - end} "
                    f"bytes after that wait for the rest of the file{later}")  # fmt: skip
                out.extend(own)
                break
        out.extend(own)
    return [Split(s.file, s.start, s.stop, i) for i, s in enumerate(out)]


def _stuck(
    lake: Lake, manifest: BatchManifest, done: bool, files: list[BinlogFile], read: ReadSpec
) -> tuple[int, str] | None:
    """The first batch that stopped inside a transaction, and where: binlake before version 4 of the manifest
    landed every whole event of a copy cut short (a partial transaction's changes with it), so the batch after it
    started inside that transaction and failed at its first rows event, a run after another.  Checked where the
    lake would go on: the starts and ends of an unfinished batch, the positions of files with new bytes, and, once
    a batch is found, the positions before it (a batch that went on from inside a transaction without failing, a
    cut just before its XID)."""
    by_name = {f.name: f for f in files}
    first: int | None = None
    why = ""
    last: BatchManifest | None = manifest
    finished = done
    while last is not None:
        points: list[tuple[BinlogFile, int, int]] = []  # (file, position, the last batch that may have recorded it)
        if not finished:
            ranges: dict[str, list[Split]] = defaultdict(list)
            for s in last.splits:
                ranges[s.file.name].append(s)
            for own in ranges.values():
                points += [(own[0].file, own[0].start, last.batch - 1), (own[-1].file, own[-1].end, last.batch)]
        else:
            points += [(f, p, last.batch) for n, p in last.positions.items() if (f := by_name.get(n)) and p < f.size]
        found: tuple[int, str] | None = None
        for f, pos, upto in points:
            writer = None if plainly_outside(f, pos) else _writer(lake, upto, f.name, pos)
            if writer is None or f.name in writer.identities:  # none (a snapshot's point), or planned whole
                continue
            bound = min((b for b in (first, found[0] if found else None) if b is not None), default=None)
            if (bound is None or writer.batch < bound) and inside(f, pos, read):
                found = (writer.batch, f"{f.name} at {pos}")
        if found is None:
            break
        first, why = found
        last, finished = lake.manifest(first - 1), True
    return None if first is None else (first, why)


def _writer(lake: Lake, upto: int, name: str, pos: int) -> BatchManifest | None:
    """The last batch up to ``upto`` that landed file ``name`` up to ``pos`` (``None``: none did; a snapshot or
    the stream's start put the position there)."""
    for batch in range(upto, 0, -1):
        m = lake.manifest(batch)
        if m is not None and any(s.file.name == name and s.end == pos for s in m.splits):
            return m
    return None


def _rewind_to(
    lake: Lake, last: BatchManifest, first: int, where: str, read: ReadSpec, progress: Progress
) -> BatchManifest:
    """Take the lake back to where it was before batch ``first`` (a batch of its own, :attr:`BatchManifest.rewinds`,
    whose manifest carries the positions, schema, files and resume point of the batch before), so that the next
    batch lands the ranges of the batches from ``first`` on again, whole transactions only.  A snapshot among those
    batches (its rows come from no range) is an error: the lake cannot be taken back past it."""
    later = [lake.manifest(b) for b in range(first, last.batch + 1)]
    snapshot = next((m.batch for m in later if m is not None and not m.splits and m.rewinds is None), None)
    if snapshot is not None:
        raise BinlogError(
            f"batch {first} of this lake stopped inside a transaction ({where}), and batch {snapshot}, a snapshot, "
            "came after it: the lake cannot land that batch again; ingest the server into a new lake",
            file=lake.root.uri,
        )
    base = lake.manifest(first - 1)
    resume = base.resume if base is not None else None
    if base is None and later[0] is not None and later[0].resume is not None:  # a live lake's first batch
        resume = ResumePoint(later[0].splits[0].file.name, later[0].splits[0].start)  # where its stream started
    manifest = BatchManifest(
        last.batch + 1,
        (),
        dict(base.positions) if base is not None else {},
        tracker_to_json(_schema_after(base, read.options.schema_sql)),
        (),
        resume,
        dict(base.identities) if base is not None else {},
        first,
    )
    progress.log(
        f"batch {first} stopped inside a transaction ({where}: binlake before manifest version 4 landed copies cut "
        f"short so): the lake goes back to before it and lands from there again"
    )
    lake.write_manifest(manifest)
    _rewind(lake, manifest, progress)
    return manifest


def _rewind(lake: Lake, manifest: BatchManifest, progress: Progress) -> None:
    """Run the rewinding batch ``manifest`` (:func:`_rewind_to`): the lake takes every table back to before batch
    ``manifest.rewinds`` and marks the batch done with the XA transactions pending there
    (:mod:`binlake.lake.batch`)."""
    with lake.batch(manifest, timed=progress.timed) as landing:
        pass
    progress.log(f"batch {manifest.batch}: {landing.rewound} tables back to before batch {manifest.rewinds}")


def resume_after(splits: list[Split], before: ResumePoint, headers: HeaderCache | None = None) -> ResumePoint:
    """Where the stream goes on after ``splits`` (which go on from ``before`` and end at a transaction boundary):
    their end, with the GTID state there, ``before``'s followed through the GTID events of the splits (and the
    state a GTID_LIST or PREVIOUS_GTIDS gives, where ``before`` has none).  Only those events are decoded, found
    by a header walk (``headers``': the planner's).  The state is ``None`` where it cannot be known: no GTIDs,
    no state to start from, or an encrypted file (its type codes are ciphertext)."""
    last = splits[-1]
    tracker: GtidTracker | None = None
    if before.gtid is not None and before.flavor is not None:
        tracker = GtidTracker(before.flavor)
        tracker.set_baseline(before.gtid)
    unknown = False
    for split in splits:
        source = split.file.source
        if binlog_head(source)[1]:  # encrypted
            unknown = True
            continue
        table = (
            headers.table(source, split.start, split.stop) if headers else header_table(source, split.start, split.stop)
        )
        found = [table.positions[m.start()] for m in _GTID_CODES.finditer(table.codes)]
        if not found:
            continue
        with opened(source) as (f, ranges, _size):
            ctx = resume_decoder(f, found[0], Decoder()).ctx
            for pos in found:
                size = int.from_bytes(ranges[pos + 9 : pos + 13], "little")
                ev = decode_event(bytes(ranges[pos : pos + size]), pos, ctx)
                if tracker is None:
                    tracker = GtidTracker("mariadb" if isinstance(ev, MariaGtidEvent | GtidListEvent) else "mysql")
                tracker.observe(ev)
    gtid = None if unknown or tracker is None else tracker.state
    flavor = before.flavor if tracker is None else "mariadb" if tracker.flavor == "mariadb" else "mysql"
    return ResumePoint(last.file.name, last.end, gtid, flavor)


def _balanced(new_bytes: int, split_bytes: int, cores: int) -> int:
    """The range size to plan ``new_bytes`` with: at most ``split_bytes``, every core gets a range, a range below
    :data:`MIN_SPLIT_BYTES` only when ``split_bytes`` asks for it; and where those allow, a number of ranges that is
    a multiple of ``cores``, of equal sizes, so the last wave of tasks keeps every core busy (15 ranges of 64 MiB
    and one of 31 on 2 cores left one idle for half a range).

    >>> MIB = 1 << 20
    >>> [_balanced(n * MIB, 64 * MIB, 2) / MIB for n in (991, 130, 100, 6, 1)]
    [61.9375, 32.5, 50.0, 4.0, 4.0]
    >>> _balanced(7 * MIB, 64 << 10, 2) == 64 << 10
    True
    """
    size = min(split_bytes, max(MIN_SPLIT_BYTES, -(-new_bytes // cores)))
    ranges = -(-max(1, new_bytes) // size)
    even = -(-new_bytes // (-(-ranges // cores) * cores))
    return even if even >= min(size, MIN_SPLIT_BYTES) else size


def _prepared_layouts(lake: Lake, manifest: BatchManifest) -> list[MapLayout]:
    """The layouts of the rows of XA transactions prepared in an earlier batch that ``manifest``'s batch commits, for
    the current state to read their columns by (the batch may log no table map of their tables: an ``XA COMMIT``
    alone).  Each is the layout the rows were logged with, as the batch that left the transaction waiting kept it
    (:attr:`~binlake.lake.records.BatchDone.xa_layouts`): per column its change-table column (a map that logs no
    names keeps the column it landed in before a ``RENAME COLUMN``) and its name in the table, typed as the change
    table types that column.  A mark of an older binlake keeps none: then the table's layout before the batch, its
    current state's columns each named in the change table as :func:`resolve_layout` names a table map's column
    (no statement changes a table between the ``XA PREPARE`` of rows of it and their ``XA COMMIT``: the server holds
    the table's metadata lock, across a restart too).  Placed before the batch's own table maps (``seq`` 0)."""
    before = lake.done(manifest.batch - 1)
    commits = {x for x, rolled_back in manifest.outcomes.items() if not rolled_back}
    kept: dict[str, set[tuple[tuple[str, str], ...]]] = {}  # table -> the layouts the batch that prepared them kept
    unkept: set[str] = set()  # tables with rows of a committed transaction whose layout no mark kept
    for x, keys in before.xa_pending.items():
        if x in commits:
            for k in keys:
                cols = before.xa_layouts.get(x, {}).get(k)
                if cols is None:
                    unkept.add(k)
                else:
                    kept.setdefault(k, set()).add(cols)
    out: list[MapLayout] = []
    for key in sorted(kept.keys() | unkept):
        current, changes = lake.schema_of(lake.current(key)), lake.schema_of(lake.changes(key))
        if current is None or changes is None:  # (no current state yet: it takes the change table's columns)
            continue
        fields = [f for f in changes if f.name not in META_NAMES]
        types = {f.name: f.type for f in fields}
        for cols in sorted(kept.get(key, ())):
            out.append(MapLayout(key, 0, tuple((s, n, types[s]) for s, n in cols if s in types)))
        if key in unkept:
            names = [(f.name, f.type) for f in current if f.name not in ("_seq", "_ts")]
            stored = resolve_layout(names, fields)
            out.append(MapLayout(key, 0, tuple((s, n, t) for (s, t), (n, _) in zip(stored, names, strict=True))))
    return out


def _run_batch(
    runner: Runner,
    lake: Lake,
    manifest: BatchManifest,
    progress: Progress,
    result: IngestResult,
    read: ReadSpec,
    maps: MapLog | None = None,
    definitions: SchemaSource | None = None,
) -> None:
    """Run one planned batch: ``maps`` are its table maps when the planning scan collected them (a batch finished
    after a crash scans its ranges again from the schema it started with: the same maps).  The tasks run on
    ``runner``; what they wrote is handed to the lake, which commits it (:meth:`~binlake.lake.lake.Lake.batch`)."""
    batch = manifest.batch
    splits = list(manifest.splits)
    statements = manifest.statements
    renames = manifest.renames
    ddl = [s for s in statements if s.kind in ("ddl", "temporary")]  # what tracker_at follows
    progress.log(f"batch {batch}: {len(splits)} splits of {manifest.files} files")
    with lake.batch(manifest, timed=progress.timed, runner=runner) as landing:
        # 1. table maps -> the lake layout of every map and every table's schema (binlog order decides new columns)
        if maps is None:
            tracker = tracker_from_json(manifest.schema)
            maps = MapLog(tracker, known_layouts(lake), definitions)
            progress.timed("table maps", lambda: scan_statements(splits, tracker, read, maps))
        known, pk = maps.known.layouts, dict(maps.known.pk)
        current_pk = dict(pk)  # the current tables' keys, named as the tables name them (pk: as the change tables)
        plan = TaskPlan(read, manifest.schema, ddl, manifest.outcomes, renames, batch, maps.enriched)
        schemas: dict[str, list[pa.Field]] = {}
        layouts: dict[str, Layout] = {}
        new_history: list[dict[str, Any]] = []
        file_seq = {s.file.name: s.file.seq for s in splits}
        map_layouts: list[MapLayout] = []
        for row in maps.rows:
            key = table_dir(row["database"], row["table"])
            if key not in schemas:
                existing = lake.schema_of(lake.changes(key))
                schemas[key] = [f for f in existing if f.name not in META_NAMES] if existing is not None else []
            mid = row["map_id"]
            if mid not in layouts:
                layouts[mid] = known.get(mid) or resolve_layout(row["lake"], schemas[key])
                for n, t in layouts[mid]:
                    if n not in {f.name for f in schemas[key]}:
                        schemas[key].append(pa.field(n, t))
                if mid not in known and mid not in {h["map_id"] for h in new_history}:
                    new_history.append(history_row(row, layouts[mid], batch))
            pk[key] = [layouts[mid][i][0] for i in row["primary_key_index"]]
            current_pk[key] = [row["names"][i] for i in row["primary_key_index"]]
            seq = file_seq[row["file"]] * SEQ_FILE + row["first_pos"] * SEQ_POS
            columns = tuple((n, name, t) for (n, t), name in zip(layouts[mid], row["names"], strict=True))
            map_layouts.append(MapLayout(key, seq, columns, mid))
        map_layouts += _prepared_layouts(lake, manifest)
        full = {k: pa.schema([*v, *(pa.field(n, t) for n, t in META)]) for k, v in schemas.items()}
        renamed_keys(manifest.schema, renames, current_pk, lambda k: lake.has_table(lake.current(k)))
        landing.tables(full, current_pk)
        landing.history(new_history)
        keyed = {k for k, v in current_pk.items() if v}
        altered = alterations(manifest.schema, statements, lambda k: k in keyed or lake.has_table(lake.current(k)))
        landing.columns(map_layouts, altered)

        # 2. decode and write Parquet in the tasks
        task_pk = {k: v for k, v in pk.items() if k in full and v}
        task = partial(write_task, lake, layouts, full, task_pk, plan)
        reports: list[TaskReport] = progress.run("decode", lambda: runner.map(task, splits))
        for rep in reports:
            landing.add(rep)
            result.changes.update(rep.counts)
            result.events += sum(f.rows for f in rep.events)
            result.skips.extend(rep.skips)
    # 3. the lake commits the batch (change tables, its own tables, XA outcomes, current state) and marks it done
    result.batches += 1
    result.files += manifest.files
    result.bytes += manifest.bytes
    result.xa_pending = len(landing.pending)
    result.renames += len(renames)
    result.unconverted += landing.unconverted
