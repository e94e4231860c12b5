"""``binlake ingest``: binlogs -> a lake of Delta tables, incrementally and exactly once.

Lake layout (every name from the binlog encoded by :mod:`binlake.lake.names`; the lake is a folder or an
object-store URI, :class:`binlake.lake.Lake`)::

    LAKE/<db>/<table>/changes   one row per row change: the table's own typed columns, then _op (insert |
                                update_preimage | update_postimage | delete), _file, _pos, _row, _gtid, _ts
                                (commit time), _seq (decimal(38,0), binlog order across files),
                                _rolled_back (true: its transaction ended in ROLLBACK or XA ROLLBACK; null: XA
                                PREPAREd, outcome not seen yet; neither is applied to current), _xid (the XID of
                                an XA PREPAREd transaction), _absent (names of the columns the row image does not
                                hold, binlog_row_image=MINIMAL/NOBLOB; null when it holds all: a column in _absent
                                is *unknown*, a null column not in it is SQL NULL)
    LAKE/<db>/<table>/current   tables with a primary key: the rows as they are after the last change, + _seq, _ts
    LAKE/_events                every event (the ``events`` view's columns)
    LAKE/_schema_history        every distinct table map: columns, key, lake column names, where first seen
    LAKE/_skips                 what ``--on-error skip-event|skip-transaction`` skipped (file, bytes, reason)
    LAKE/_binlake/batches/      the plan of each batch (NNNNNNNNNN.json) and its completion mark (.done, holding
                                the XA transactions still waiting for their outcome): binlake.lake.records
    LAKE/_binlake/lease         the writer lease: one ingest writes a lake at a time (binlake.lake.lease)

A run holds the lake's writer lease throughout (another ingest waits for it or stops) and is one or more batches.
A batch's plan (its byte ranges and the positions reached after it) is written
atomically before any table is touched; each table's commit carries the Delta application transaction
``(binlake-ingest, batch)``, so re-running an unfinished batch (after a kill -9 at any moment) decodes the same
ranges and commits only to the tables that have not got it: every table ends as one clean run leaves it.  Column
changes (ALTER TABLE) add columns to the tables (schema merge); a column whose type changes gets a second column
``<name>__<type>``.

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
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from binlake.decoder import Decoder, decode_event
from binlake.errors import BinlogError
from binlake.events.base import EventType
from binlake.events.gtid import GtidListEvent, MariaGtidEvent
from binlake.lake.current import staged_latest, update_current
from binlake.lake.lake import Lake
from binlake.lake.names import decode_name, table_dir
from binlake.lake.records import BatchDone, BatchManifest, BinlogFile, DataFile, Emptied, SkipRecord, Split
from binlake.lake.tables import EVENTS_DIR, HISTORY_DIR, META, META_NAMES, SKIPS, SKIPS_DIR
from binlake.reader import HeaderCache, header_table, opened, read_events, resume_decoder
from binlake.replication.gtid import GtidTracker
from binlake.replication.position import ResumePoint, binlog_order
from binlake.schema import SchemaTracker
from binlake.spark.arrow import EVENTS
from binlake.spark.layouts import HISTORY, Layout, MapLog, history_row, known_layouts, resolve_layout
from binlake.spark.plan import DEFAULT_SPLIT_BYTES, _head, list_binlogs, plan_splits, source_exists
from binlake.spark.progress import Progress
from binlake.spark.runner import SparkRunner
from binlake.spark.session import context_of
from binlake.spark.statements import ReadSpec, scan_statements, tracker_at, tracker_from_json, tracker_to_json
from binlake.spark.tasks import TaskPlan, collect, write_task
from binlake.transactions import GTID_EVENTS, Transactions

__all__ = ["IngestResult", "ingest", "ingest_held", "summary"]

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
    if result.xa_pending:
        lines.append(f"  {result.xa_pending} XA transaction(s) prepared, waiting for XA COMMIT/ROLLBACK")
    if result.skips:
        lost = sum(s.events_lost for s in result.skips)
        lines.append(f"  {len(result.skips)} damaged stretch(es) skipped ({lost} events lost), listed in _skips:")
        lines.extend(f"    {s.file} {s.start}-{s.end}: {s.reason}" for s in result.skips[:10])
    if result.waited:
        lines.append(f"  waited {result.waited:.1f} s for another ingest writing the lake")
    return "\n".join(lines)


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
    return SchemaTracker({**{k: v for k, v in tracker.tables.items() if k not in known}, **known}, last.temporary.state)


def ingest(
    spark: Any,
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
) -> IngestResult:
    """Ingest what is new in ``sources`` into ``lake`` (finishing an interrupted batch first); see the module doc.

    ``sources`` and ``lake``: local paths or URIs (:mod:`binlake.storage`).
    ``spark``: a SparkSession or SparkContext (only the context is used: the tasks are Python), or a
    :class:`~concurrent.futures.Future` of one still starting (the plan and the scan run on the driver meanwhile;
    ``binlake ingest`` starts its JVM so, which saves most of a second).
    ``read``: decoding options (``schema_sql`` seeds the schema of the first batch), decryptor, ``on_error``.
    ``cores``: the task slots to size splits for (default: the session's ``defaultParallelism``).
    ``wait``: seconds to wait for another ingest writing the lake, then :class:`~binlake.lake.LakeBusy`;
    ``lease_seconds``: how long the writer lease lasts unrenewed (:mod:`binlake.lake.lease`).
    ``start``: where the stream of an empty lake starts (a live ingest's start point, e.g. where a snapshot was
    taken): the files before ``start.file`` and the bytes of it before ``start.position`` are not landed, and
    every batch's manifest records where the stream goes on after it (:attr:`BatchManifest.resume`, with the GTID
    state there, followed from ``start.gtid``).  A lake whose last manifest has a resume point goes on from it.
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    progress = progress or Progress(spark)
    t0 = time.monotonic()
    files = _binlogs(sources)  # before the lease: a source that is not there leaves the lake untouched
    with lake.writing(wait=wait, lease_seconds=lease_seconds, on_wait=progress.log) as lease:
        if lease.waited:
            progress.log(f"the lake is free after {lease.waited:.1f} s")
            files = _binlogs(sources)  # they may have grown meanwhile
        result = ingest_held(spark, files, lake, split_bytes=split_bytes, progress=progress, read=read, cores=cores,
                             start=start)  # fmt: skip
        result.waited = lease.waited
    result.seconds = time.monotonic() - t0
    return result


def ingest_held(
    spark: Any,
    files: list[BinlogFile],
    lake: Lake,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Progress | None = None,
    read: ReadSpec | None = None,
    cores: int | None = None,
    start: ResumePoint | None = None,
) -> IngestResult:
    """:func:`ingest` of ``files`` (:func:`~binlake.spark.plan.list_binlogs`'s records) into ``lake``, whose writer
    lease the caller holds (``with lake.writing(): ...``): a live ingest holds it across its batches."""
    lake.check()
    result = IngestResult()
    t0 = time.monotonic()
    _ingest(spark, files, lake, split_bytes, progress or Progress(spark), read or ReadSpec(), cores, result, start)
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
    spark: Any,
    ordered: list[BinlogFile],
    lake: Lake,
    split_bytes: int,
    progress: Progress,
    read: ReadSpec,
    cores: int | None,
    result: IngestResult,
    start: ResumePoint | None = None,
) -> None:
    manifest, done = lake.last_manifest()
    if manifest is not None and not done:
        progress.log(f"finishing interrupted batch {manifest.batch}")
        _run_batch(spark, lake, manifest, progress, result, read)
    positions: dict[str, int] = dict(manifest.positions) if manifest is not None else {}
    resume = manifest.resume if manifest is not None else start
    result.resume = resume
    if resume is not None:  # a live lake: the stream goes on at resume, the files before it are done
        first = binlog_order(resume.file)
        ordered = [f for f in ordered if binlog_order(f.name) >= first]
        positions.setdefault(resume.file, resume.position)
    new_bytes = sum(max(0, f.size - positions.get(f.name, 4)) for f in ordered)
    if cores is None:
        cores = int(getattr(context_of(spark), "defaultParallelism", 1) or 1)
    split_bytes = _balanced(new_bytes, split_bytes, cores)
    headers = HeaderCache()  # the plan's header walks, kept for the scan of the same ranges
    splits = progress.timed(
        "plan",
        lambda: plan_splits(ordered, split_bytes=split_bytes, resume=positions, whole_tail=False, headers=headers),
    )
    if ordered:
        splits = _with_last_transaction(splits, ordered[-1], positions, read)
    if splits:
        after = dict(positions)
        for s in splits:
            after[s.file.name] = s.end
        batch = (manifest.batch + 1) if manifest is not None else 1
        tracker = _schema_after(manifest, read.options.schema_sql)
        start_schema = tracker_to_json(tracker)
        maps = MapLog(tracker, known_layouts(lake))
        statements = progress.timed("scan", lambda: scan_statements(splits, tracker, read, maps, headers=headers))
        if resume is not None:
            resume = result.resume = resume_after(splits, resume, headers)
        headers.clear()  # about 19 bytes per event: not kept through the Spark job
        manifest = BatchManifest(batch, tuple(splits), after, start_schema, tuple(statements), resume)
        lake.write_manifest(manifest)
        _run_batch(spark, lake, manifest, progress, result, read, maps)
    elif result.batches == 0:
        progress.log("nothing new")


def _with_last_transaction(
    splits: list[Split], last: BinlogFile, positions: dict[str, int], read: ReadSpec
) -> list[Split]:
    """``splits`` with the one of the ``last`` file reaching the end of its last whole transaction.  The planner
    stops a file the server still writes at the last boundary a header walk sees (before a GTID event, after an
    XID), so a group that ends otherwise (DDL, a MariaDB standalone statement, a non-transactional table's ``BEGIN
    ... COMMIT``) would wait for the next transaction to be landed; here the events after that boundary are
    decoded and the range taken to where :class:`~binlake.transactions.Transactions` sees the last one end."""
    mine = [s for s in splits if s.file.name == last.name]
    start = mine[-1].end if mine else max(4, positions.get(last.name, 4))
    try:
        table = header_table(last.source, start)
        if table.end <= start or not table.codes:
            return splits
        trx, end = Transactions(), start
        events = read_events(last.source, options=read.options, start=start, stop=table.end, decryptor=read.decryptor)
        for ev in events:
            trx.event(ev)
            if ev.header.in_payload is None and not trx.open:
                end = ev.header.end_pos
    except BinlogError:
        return splits  # damaged or encrypted: the planner's boundary stands
    if end <= start:
        return splits
    if mine:
        tail = mine[-1]
        return [*splits[:-1], Split(tail.file, tail.start, end, tail.index)]
    return [*splits, Split(BinlogFile(last.path, last.name, last.seq, max(last.size, end)), start, end, len(splits))]


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
        if _head(source)[1]:  # encrypted
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


def _run_batch(
    spark: Any,
    lake: Lake,
    manifest: BatchManifest,
    progress: Progress,
    result: IngestResult,
    read: ReadSpec,
    maps: MapLog | None = None,
) -> None:
    """Run one planned batch: ``maps`` are its table maps when the planning scan collected them (a batch finished
    after a crash scans its ranges again from the schema it started with: the same maps)."""
    batch = manifest.batch
    splits = list(manifest.splits)
    statements = manifest.statements
    outcomes = {s.xid: s.rolled_back for s in statements if s.kind == "xa"}
    renames = [s for s in statements if s.kind == "rename"]
    ddl = [s for s in statements if s.kind in ("ddl", "temporary")]  # what tracker_at follows
    lake.staging(batch).delete_dir()  # an interrupted attempt's
    progress.log(f"batch {batch}: {len(splits)} splits of {manifest.files} files")

    # 1. table maps -> the lake layout of every map and every table's schema (binlog order decides new columns)
    if maps is None:
        tracker = tracker_from_json(manifest.schema)
        maps = MapLog(tracker, known_layouts(lake))
        progress.timed("table maps", lambda: scan_statements(splits, tracker, read, maps))
    known, pk = maps.known.layouts, dict(maps.known.pk)
    plan = TaskPlan(read, manifest.schema, ddl, outcomes, renames, batch, maps.enriched)
    schemas: dict[str, list[pa.Field]] = {}
    layouts: dict[str, Layout] = {}
    new_history: list[dict[str, Any]] = []
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
    full = {k: pa.schema([*v, *(pa.field(n, t) for n, t in META)]) for k, v in schemas.items()}

    # 2. decode and write Parquet in the tasks
    rdd = context_of(spark).parallelize(splits, max(1, len(splits)))
    task_pk = {k: v for k, v in pk.items() if k in full and v}
    reports = progress.run(
        "decode", lambda: collect(rdd, lambda it: write_task(it, lake, layouts, full, task_pk, plan))
    )

    # 3. commit every table (each idempotent for this batch)
    by_table: dict[str, list[DataFile]] = defaultdict(list)
    event_files: list[DataFile] = []
    emptied: list[Emptied] = []
    pending = {x: set(k) for x, k in lake.done(batch - 1).xa_pending.items()}
    skips: list[SkipRecord] = []
    for rep in sorted(reports, key=lambda r: r.split):
        for f in rep.files:
            by_table[f.table].append(f)
        event_files.extend(rep.events)
        emptied.extend(rep.emptied)
        result.changes.update(rep.counts)
        result.events += sum(f.rows for f in rep.events)
        for x, keys in rep.prepared.items():
            pending.setdefault(x, set()).update(keys)
        skips.extend(rep.skips)
    resolved = {x: (outcomes[x], keys) for x, keys in pending.items() if x in outcomes}
    pending = {x: keys for x, keys in pending.items() if x not in outcomes}
    earlier_xa: dict[str, list[str]] = defaultdict(list)  # table -> XIDs committed now, prepared in a batch before
    outcomes_of: dict[str, dict[str, bool]] = defaultdict(dict)  # table -> its XIDs resolved now: one commit each
    for x, (rolled_back, keys) in resolved.items():
        for key in keys:
            outcomes_of[key][x] = rolled_back
            if not rolled_back:
                earlier_xa[key].append(x)
    for key, xa in sorted(outcomes_of.items()):
        lake.resolve_rollbacks(lake.changes(key), xa, batch)

    def commit() -> None:
        for key, fs in sorted(by_table.items()):
            lake.commit(lake.changes(key), fs, full[key], batch)
        if event_files:
            lake.commit(lake.own(EVENTS_DIR), event_files, EVENTS, batch)
        if new_history:
            lake.append(lake.own(HISTORY_DIR), pa.Table.from_pylist(new_history, schema=HISTORY), batch)
        if skips:
            rows = [{**s.to_json(), "batch": batch} for s in skips]
            lake.append(lake.own(SKIPS_DIR), pa.Table.from_pylist(rows, schema=SKIPS), batch)

    progress.timed("commit", commit)

    # 4. current state of tables with a primary key: changes, emptying statements and renames in binlog order
    latest = staged_latest(reports, by_table)
    progress.timed(
        "current",
        lambda: update_current(
            lake, batch, pk, full, by_table, earlier_xa, emptied, renames, latest, SparkRunner(spark)
        ),
    )

    lake.write_done(batch, BatchDone({x: tuple(sorted(k)) for x, k in pending.items()}))
    lake.staging(batch).delete_dir()
    result.batches += 1
    result.files += manifest.files
    result.bytes += manifest.bytes
    result.skips.extend(skips)
    result.xa_pending = len(pending)
    result.renames += len(renames)
