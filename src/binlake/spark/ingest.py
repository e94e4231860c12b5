"""``binlake ingest``: binlogs -> a lake of Delta tables, incrementally and exactly once.

Lake layout (every name from the binlog percent-encoded by :mod:`binlake.spark.names`)::

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
                                the XA transactions still waiting for their outcome)

A run is one or more batches.  A batch's plan (its byte ranges and the positions reached after it) is written
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

import json
import os
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from binlake.errors import BinlogError
from binlake.reader import HeaderCache
from binlake.schema import SchemaTracker
from binlake.spark.arrow import EVENTS
from binlake.spark.current import staged_latest, update_current
from binlake.spark.lake import DataFile, append_table, commit_files, resolve_rollbacks, table_schema
from binlake.spark.layouts import (
    HISTORY,
    HISTORY_DIR,
    META,
    META_NAMES,
    Layout,
    MapLog,
    history_row,
    known_layouts,
    resolve_layout,
)
from binlake.spark.names import table_dir
from binlake.spark.plan import DEFAULT_SPLIT_BYTES, BinlogFile, Split, list_binlogs, plan_splits
from binlake.spark.progress import Progress
from binlake.spark.session import context_of
from binlake.spark.statements import (
    ReadSpec,
    Statement,
    scan_statements,
    tracker_at,
    tracker_from_json,
    tracker_to_json,
)
from binlake.spark.tasks import EVENTS_DIR, TaskPlan, collect, staging_dir, write_task

__all__ = ["IngestResult", "ingest", "summary"]

MIN_SPLIT_BYTES = 4 << 20  # a smaller range is not worth a task of its own (~30 ms each in local mode)
SKIPS_DIR = "_skips"


@dataclass
class IngestResult:
    """What a run did (the final summary)."""

    batches: int = 0
    files: int = 0
    bytes: int = 0
    events: int = 0
    changes: Counter[str] = field(default_factory=Counter)  # "db/table op" -> count
    skips: list[dict[str, Any]] = field(default_factory=list)  # what --on-error skip-* skipped
    xa_pending: int = 0  # XA transactions prepared and not yet committed or rolled back
    renames: int = 0
    seconds: float = 0.0


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
        lost = sum(int(s["events_lost"]) for s in result.skips)
        lines.append(f"  {len(result.skips)} damaged stretch(es) skipped ({lost} events lost), listed in _skips:")
        lines.extend(f"    {s['file']} {s['start']}-{s['end']}: {s['reason']}" for s in result.skips[:10])
    return "\n".join(lines)


def _display(key: str) -> str:
    """``db/table`` folder key -> ``db.table`` as the source named it."""
    from binlake.spark.names import decode_name

    try:
        return ".".join(decode_name(p) for p in key.split("/"))
    except ValueError:
        return key


def _batches_dir(lake: str) -> str:
    return os.path.join(lake, "_binlake", "batches")


def _last_manifest(lake: str) -> tuple[dict[str, Any] | None, bool]:
    d = _batches_dir(lake)
    if not os.path.isdir(d):
        return None, True
    plans = sorted(n for n in os.listdir(d) if n.endswith(".json"))
    if not plans:
        return None, True
    with open(os.path.join(d, plans[-1]), encoding="utf-8") as f:
        manifest: dict[str, Any] = json.load(f)
    return manifest, os.path.exists(os.path.join(d, plans[-1][:-5] + ".done"))


def _done_state(lake: str, batch: int) -> dict[str, Any]:
    """What batch ``batch`` left for the next one (its ``.done`` file): XA transactions still pending."""
    path = os.path.join(_batches_dir(lake), f"{batch:010d}.done")
    if batch < 1 or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    state: dict[str, Any] = json.loads(text) if text.strip() else {}
    return state


def _atomic_write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _split_json(s: Split) -> list[Any]:
    return [s.file.path, s.file.name, s.file.seq, s.file.size, s.start, s.stop, s.index]


def _split_from(v: list[Any]) -> Split:
    return Split(BinlogFile(v[0], v[1], v[2], v[3]), v[4], v[5], v[6])


def _schema_after(manifest: dict[str, Any] | None, seed: str | None) -> SchemaTracker:
    """The schema where the next batch starts: the last batch's start state and DDL, over the ``--schema`` seed, and
    the sessions' temporary tables where the last batch ended."""
    tracker = SchemaTracker.from_sql(seed) if seed else SchemaTracker()
    if manifest is None:
        return tracker
    ddl = [Statement.from_json(v) for v in manifest.get("statements", [])]
    last = tracker_at(manifest.get("schema", []), ddl, 1 << 200)
    known = last.tables
    return SchemaTracker({**{k: v for k, v in tracker.tables.items() if k not in known}, **known}, last.temporary.state)


def ingest(
    spark: Any,
    sources: list[str],
    lake: str,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Progress | None = None,
    read: ReadSpec | None = None,
    cores: int | None = None,
) -> IngestResult:
    """Ingest what is new in ``sources`` into ``lake`` (finishing an interrupted batch first); see the module doc.

    ``spark``: a SparkSession or SparkContext (only the context is used: the tasks are Python), or a
    :class:`~concurrent.futures.Future` of one still starting (the plan and the scan run on the driver meanwhile;
    ``binlake ingest`` starts its JVM so, which saves most of a second).
    ``read``: decoding options (``schema_sql`` seeds the schema of the first batch), decryptor, ``on_error``.
    ``cores``: the task slots to size splits for (default: the session's ``defaultParallelism``).
    """
    lake = os.path.abspath(lake)
    read = read or ReadSpec()
    progress = progress or Progress(spark)
    result = IngestResult()
    t0 = time.monotonic()
    manifest, done = _last_manifest(lake)
    if manifest is not None and not done:
        progress.log(f"finishing interrupted batch {manifest['batch']}")
        _run_batch(spark, lake, manifest, progress, result, read)
    positions: dict[str, int] = dict(manifest["positions"]) if manifest is not None else {}
    files: dict[str, BinlogFile] = {}
    for src in sources:
        found = list_binlogs(src)
        if not found and not os.path.isdir(src):  # a typo is an error, an empty folder is nothing new
            raise BinlogError("no such file or folder, and no file matches it as a glob", file=src)
        for f in found:
            files.setdefault(f.name, f)
    ordered = sorted(files.values(), key=lambda f: (f.seq, f.name))
    new_bytes = sum(max(0, f.size - positions.get(f.name, 4)) for f in ordered)
    if cores is None:
        cores = int(getattr(context_of(spark), "defaultParallelism", 1) or 1)
    split_bytes = _balanced(new_bytes, split_bytes, cores)
    headers = HeaderCache()  # the plan's header walks, kept for the scan of the same ranges
    splits = progress.timed(
        "plan",
        lambda: plan_splits(ordered, split_bytes=split_bytes, resume=positions, whole_tail=False, headers=headers),
    )
    if splits:
        after = dict(positions)
        for s in splits:
            after[s.file.name] = s.stop if s.stop is not None else s.file.size
        batch = (manifest["batch"] + 1) if manifest is not None else 1
        tracker = _schema_after(manifest, read.options.schema_sql)
        start_schema = tracker_to_json(tracker)
        maps = MapLog(tracker, known_layouts(lake))
        statements = progress.timed("scan", lambda: scan_statements(splits, tracker, read, maps, headers=headers))
        headers.clear()  # about 19 bytes per event: not kept through the Spark job
        manifest = {
            "batch": batch,
            "splits": [_split_json(s) for s in splits],
            "positions": after,
            "schema": start_schema,
            "statements": [s.to_json() for s in statements],
        }
        _atomic_write(os.path.join(_batches_dir(lake), f"{batch:010d}.json"), json.dumps(manifest, indent=1))
        _run_batch(spark, lake, manifest, progress, result, read, maps)
    elif result.batches == 0:
        progress.log("nothing new")
    result.seconds = time.monotonic() - t0
    return result


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
    lake: str,
    manifest: dict[str, Any],
    progress: Progress,
    result: IngestResult,
    read: ReadSpec,
    maps: MapLog | None = None,
) -> None:
    """Run one planned batch: ``maps`` are its table maps when the planning scan collected them (a batch finished
    after a crash scans its ranges again from the schema it started with: the same maps)."""
    batch: int = manifest["batch"]
    splits = [_split_from(v) for v in manifest["splits"]]
    statements = [Statement.from_json(v) for v in manifest.get("statements", [])]
    outcomes = {s.xid: s.rolled_back for s in statements if s.kind == "xa"}
    renames = [s for s in statements if s.kind == "rename"]
    ddl = [s for s in statements if s.kind in ("ddl", "temporary")]  # what tracker_at follows
    shutil.rmtree(staging_dir(lake, batch), ignore_errors=True)  # an interrupted attempt's
    progress.log(f"batch {batch}: {len(splits)} splits of {len({s.file.name for s in splits})} files")

    # 1. table maps -> the lake layout of every map and every table's schema (binlog order decides new columns)
    if maps is None:
        tracker = tracker_from_json(manifest.get("schema", []))
        maps = MapLog(tracker, known_layouts(lake))
        progress.timed("table maps", lambda: scan_statements(splits, tracker, read, maps))
    known, pk = maps.known.layouts, dict(maps.known.pk)
    plan = TaskPlan(read, manifest.get("schema", []), ddl, outcomes, renames, batch, maps.enriched)
    schemas: dict[str, list[pa.Field]] = {}
    layouts: dict[str, Layout] = {}
    new_history: list[dict[str, Any]] = []
    for row in maps.rows:
        key = table_dir(row["database"], row["table"])
        if key not in schemas:
            existing = table_schema(os.path.join(lake, key, "changes"))
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
    reports: list[dict[str, Any]] = progress.run(
        "decode", lambda: collect(rdd, lambda it: write_task(it, lake, layouts, full, task_pk, plan))
    )

    # 3. commit every table (each idempotent for this batch)
    by_table: dict[str, list[DataFile]] = defaultdict(list)
    event_files: list[DataFile] = []
    truncates: list[tuple[int, str]] = []
    pending: dict[str, set[str]] = {x: set(k) for x, k in _done_state(lake, batch - 1).get("xa_pending", {}).items()}
    skips: list[dict[str, Any]] = []
    for rep in sorted(reports, key=lambda r: int(r["split"])):
        for f in rep["files"]:
            by_table[f.table].append(f)
        event_files.extend(rep["events"])
        truncates.extend((seq, key) for key, seq in rep["truncates"])
        result.changes.update(rep["counts"])
        result.events += sum(f.rows for f in rep["events"])
        for x, keys in rep["prepared"].items():
            pending.setdefault(x, set()).update(keys)
        skips.extend({**s, "batch": batch} for s in rep["skips"])
    resolved = {x: (outcomes[x], keys) for x, keys in pending.items() if x in outcomes}
    pending = {x: keys for x, keys in pending.items() if x not in outcomes}
    earlier_xa: dict[str, list[str]] = defaultdict(list)  # table -> XIDs committed now, prepared in a batch before
    for x, (rolled_back, keys) in resolved.items():
        for key in keys:
            resolve_rollbacks(os.path.join(lake, key, "changes"), {x: rolled_back}, batch)
            if not rolled_back:
                earlier_xa[key].append(x)

    def commit() -> None:
        for key, fs in sorted(by_table.items()):
            commit_files(os.path.join(lake, key, "changes"), fs, full[key], batch)
        if event_files:
            commit_files(os.path.join(lake, EVENTS_DIR), event_files, EVENTS, batch)
        if new_history:
            append_table(os.path.join(lake, HISTORY_DIR), pa.Table.from_pylist(new_history, schema=HISTORY), batch)
        if skips:
            append_table(os.path.join(lake, SKIPS_DIR), pa.Table.from_pylist(skips, schema=SKIPS), batch)

    progress.timed("commit", commit)

    # 4. current state of tables with a primary key: changes, emptying statements and renames in binlog order
    latest = staged_latest(reports, by_table)
    progress.timed(
        "current", lambda: update_current(lake, batch, pk, full, by_table, earlier_xa, truncates, renames, latest)
    )

    _atomic_write(
        os.path.join(_batches_dir(lake), f"{batch:010d}.done"),
        json.dumps({"xa_pending": {x: sorted(k) for x, k in sorted(pending.items())}}),
    )
    shutil.rmtree(staging_dir(lake, batch), ignore_errors=True)
    result.batches += 1
    result.files += len({s.file.name for s in splits})
    result.bytes += sum((s.stop if s.stop is not None else s.file.size) - s.start for s in splits)
    result.skips.extend(skips)
    result.xa_pending = len(pending)
    result.renames += len(renames)


SKIPS = pa.schema(
    [
        ("file", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("reason", pa.string()),
        ("events_lost", pa.int64()),
        ("resynced", pa.bool_()),
        ("transaction_start", pa.int64()),
        ("batch", pa.int64()),
    ]
)
