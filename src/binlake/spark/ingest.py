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

import gc
import itertools
import json
import os
import shutil
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from binlake.coltypes import Column
from binlake.errors import BinlogError
from binlake.events.table_map import TableMapEvent
from binlake.reader import HeaderCache
from binlake.recovery import Skipped
from binlake.schema import SchemaTracker
from binlake.spark.arrow import (
    COLUMN,
    EVENTS,
    SEQ,
    UTC_TS,
    event_batch,
    lake_type,
    safe_array,
    tablemap_rows,
    to_lake,
    transpose,
    utc_seconds,
)
from binlake.spark.columnar import plan_for, table_for
from binlake.spark.enrich import Namer, borrow, named
from binlake.spark.extract import Changes, EventRecord, TableMapRecord, Truncate, decode_split, map_id
from binlake.spark.lake import (
    DataFile,
    ParquetSink,
    append_table,
    commit_files,
    overwrite,
    read_table,
    read_table_before,
    resolve_rollbacks,
    table_schema,
)
from binlake.spark.names import table_dir
from binlake.spark.plan import DEFAULT_SPLIT_BYTES, BinlogFile, Split, list_binlogs, plan_splits
from binlake.spark.statements import (
    SEQ_FILE,
    SEQ_POS,
    ReadSpec,
    Statement,
    scan_statements,
    tracker_at,
    tracker_from_json,
    tracker_to_json,
)
from binlake.wire import bits_lsb_first

if TYPE_CHECKING:
    from binlake._columnar import Plan

__all__ = ["IngestResult", "Progress", "ingest", "merge_current"]

META = [
    ("_op", pa.string()),
    ("_file", pa.string()),
    ("_pos", pa.int64()),
    ("_row", pa.int32()),
    ("_gtid", pa.string()),
    ("_ts", UTC_TS),
    ("_seq", SEQ),
    ("_rolled_back", pa.bool_()),
    ("_xid", pa.string()),
    ("_absent", pa.list_(pa.string())),
]
_META_NAMES = {n for n, _ in META}
FLUSH_ROWS = 65536  # rows of one table (or events) per row group
_DICTIONARY = ["_op", "_file", "_gtid", "_xid"]  # the change tables' columns with few distinct values
MIN_SPLIT_BYTES = 4 << 20  # a smaller range is not worth a task of its own (~30 ms each in local mode)
EVENTS_DIR = "_events"
HISTORY_DIR = "_schema_history"
SKIPS_DIR = "_skips"
Layout = list[tuple[str, pa.DataType]]  # per column of a table map: lake column name and type
T = TypeVar("T")


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


@dataclass(frozen=True)
class _TaskPlan:
    """What every task of a batch gets besides its splits (pickled once per task)."""

    read: ReadSpec
    schema: list[Any]  # SchemaTracker state at the batch start (statements.tracker_to_json)
    ddl: list[Statement]
    outcomes: dict[str, bool]  # XID -> rolled back, for the XA outcomes seen in the batch
    renames: list[Statement]
    batch: int
    enriched: dict[str, tuple[Column, ...]]  # map id -> columns named by the driver (maps that log no names)

    def tracker(self, split: Split) -> SchemaTracker:
        return tracker_at(self.schema, self.ddl, split.file.seq * SEQ_FILE + split.start * SEQ_POS)


# -- tasks (run on executors) ------------------------------------------------------------------------------------


@contextmanager
def _profiled(label: str) -> Iterator[None]:
    """With ``BINLAKE_PROFILE=DIR`` in the environment, cProfile the block into ``DIR/<label>-<pid>.pstats``: tasks
    profile themselves (a Python worker's time is invisible to a profiler of the driver)."""
    out = os.environ.get("BINLAKE_PROFILE")
    if not out:
        yield
        return
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        os.makedirs(out, exist_ok=True)
        prof.dump_stats(os.path.join(out, f"{label}-{os.getpid()}.pstats"))


def _staging_dir(lake: str, batch: int) -> str:
    """Where a batch's tasks leave the last change of each key for the driver (removed when the batch is done)."""
    return os.path.join(lake, "_binlake", "staging", f"{batch:010d}")


def _guarded(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A task's output, with a BinlogError passed to the driver as a value (Spark would wrap it in its own
    exception, losing the file and position): :func:`_collect` raises it there."""
    try:
        yield from rows
    except BinlogError as e:
        yield {"error": e}


def _collect(rdd: Any, task: Callable[[Iterator[Split]], Iterator[dict[str, Any]]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = rdd.mapPartitions(lambda it: _guarded(task(it))).collect()
    for row in rows:
        if "error" in row:
            raise row["error"]
    return rows


_OPS = pa.array(["insert", "update_preimage", "update_postimage", "delete"], pa.string())
_OP_CODE = {"insert": 0, "update": 1, "delete": 3}  # an update's two rows: 1 (its before image) and 2 (after)
_LOW64 = (1 << 64) - 1
_BEFORE, _AFTER = itemgetter(0), itemgetter(1)
_NO_PLAN: Any = object()  # _TableWriter.plans: not looked at yet


def _seq_array(seq0: np.ndarray[Any, Any], ci: np.ndarray[Any, Any], row: np.ndarray[Any, Any]) -> pa.Array:
    """``decimal128(38, 0)`` values ``seq0[ci] + row`` (``seq0``: Python ints of up to 127 bits, one per rows
    event; ``ci``: each row's event; ``row``: its index in the event), built as two 64-bit words per value."""
    lo0 = np.array([v & _LOW64 for v in seq0], np.uint64)[ci]
    hi0 = np.array([v >> 64 for v in seq0], np.uint64)[ci]
    words = np.empty((len(ci), 2), np.uint64)
    words[:, 0] = lo0 + row.astype(np.uint64)
    words[:, 1] = hi0 + (words[:, 0] < lo0)  # the carry
    if sys.byteorder != "little":  # Arrow's decimal128 is two little-endian words, low first
        return pa.array([Decimal(int(seq0[c]) + int(r)) for c, r in zip(ci, row, strict=True)], SEQ)
    return pa.Array.from_buffers(SEQ, len(ci), [None, pa.py_buffer(words)])


def _absent_names(present: bytes, names: list[str]) -> list[str] | None:
    """The lake names of the columns a columns-present bitmap leaves out (``None`` when it has all): the bitmaps
    belong to the event (Rows_log_event::m_cols, m_cols_ai), so every image of it lacks the same columns."""
    bits = bits_lsb_first(present, len(names))
    return None if all(bits) else [n for n, here in zip(names, bits, strict=True) if not here]


@dataclass(frozen=True)
class _Layout:
    """How one table map's rows land in its lake table: per data column of the table (schema order) the index of
    its value in the row image, or ``None`` (a column this map lacks: null)."""

    key: str
    names: list[str]  # lake name per column of the table map
    index: tuple[int | None, ...]
    members: tuple[tuple[str, ...] | None, ...] = ()  # per column of the map: SET members in definition order


class _TableWriter:
    """The row changes of one lake table from one task, written as a Parquet file every FLUSH_ROWS rows.

    Data columns are built by the compiled columnar builder (:mod:`binlake.spark.columnar`) straight from each rows
    event's bytes where it handles the layout and the bytes; other events are decoded to tuples, and runs of them
    transposed and converted a column at a time.  The META columns are built per rows event, vectorised.

    For a table with a primary key it also keeps the *last change of each key* among the rows current state
    applies (not rolled back, not waiting for an XA outcome): what the driver merges into the current-state table
    instead of reading every change back.  A split whose rows of the table include partial images (``_absent``) or
    a statement emptying the table gives none (the driver then reads the split's files)."""

    def __init__(self, key: str, uri: str, schema: pa.Schema, pk: list[str] | None, file: str) -> None:
        self.key, self.schema, self.pk, self.file = key, schema, pk, file
        self.data = [f for f in schema if f.name not in _META_NAMES]
        self.chunks: list[tuple[Changes, int, list[str] | None, list[str] | None, bool | None]] = []
        self.rows = 0
        self.parts: list[list[pa.Array]] = []  # data columns of the rows before the open run, in order
        self.fast = table_for([f.type for f in self.data])  # the open run of the columnar builder
        self.images: list[tuple[object, ...]] = []  # or the open run of decoded images ...
        self.layout: _Layout | None = None  # ... all of this layout
        self.plans: dict[tuple[int, str, bytes, bytes | None], Plan | None] = {}
        self.absent: dict[tuple[int, bytes], list[str] | None] = {}
        self.sink = ParquetSink(uri, key, schema, _DICTIONARY)
        self.latest: list[pa.Table] | None = [] if pk else None

    def add(self, chunk: Changes, layout: _Layout, rolled_back: bool | None) -> int:
        """Buffer the row changes of one rows event (``chunk.event``: from ``decode_split(rows=False)``); how many
        there are.  A malformed event raises the decoder's BinlogError here."""
        ev = chunk.event
        images = self._fast(ev, layout)
        if images is None:
            rows = ev.rows(True)
            if self.fast is not None and len(self.fast):
                self.parts.append(self.fast.finish())
            if layout is not self.layout:
                self._close_images()
                self.layout = layout
            if chunk.op == "update":
                self.images.extend(itertools.chain.from_iterable(rows))
            else:
                self.images.extend(map(_AFTER if chunk.op == "insert" else _BEFORE, rows))
            images = len(rows) * (2 if chunk.op == "update" else 1)
        count = images // 2 if chunk.op == "update" else images
        a = self._absent(layout, ev.columns_before)
        b = self._absent(layout, ev.columns_after) if ev.columns_after is not None else a
        self.chunks.append((chunk, count, a, b, rolled_back))
        self.rows += images
        if self.rows >= FLUSH_ROWS:
            self.flush()
        return count

    def _absent(self, layout: _Layout, bitmap: bytes) -> list[str] | None:
        key = (id(layout), bitmap)  # layouts live as long as the split's writers
        hit = self.absent.get(key, _NO_PLAN)
        if hit is _NO_PLAN:
            hit = self.absent[key] = _absent_names(bitmap, layout.names)
        return cast("list[str] | None", hit)

    def _fast(self, ev: Any, layout: _Layout) -> int | None:
        """Append the event's images with the columnar builder: how many, ``None`` when it cannot."""
        if self.fast is None or ev.partial:
            return None
        key = (id(layout), ev.kind, ev.columns_before, ev.columns_after)
        plan = self.plans.get(key, _NO_PLAN)
        if plan is _NO_PLAN:
            types = [f.type for f in self.data]
            cols = ev.table_map.columns
            plan = self.plans[key] = plan_for(cols, ev.kind, ev.columns_before, ev.columns_after, layout.index, types)
        if plan is None:
            return None
        if self.images:
            self._close_images()
        return self.fast.append(plan, ev.rows_data)

    def _close_images(self) -> None:
        """Convert the open run of decoded images (one layout) into data columns."""
        lay = self.layout
        if not self.images or lay is None:
            return
        cols = transpose(self.images, len(lay.names))
        n = len(self.images)
        self.parts.append(
            [
                to_lake(cols[j], f.type, lay.members[j] if lay.members else None)
                if j is not None
                else pa.nulls(n, f.type)
                for f, j in zip(self.data, lay.index, strict=True)
            ]
        )
        self.images = []

    def _meta(self) -> tuple[list[pa.Array], bool]:
        """The META columns of the buffered rows (vectorised per rows event) and whether any image is partial."""
        chunks = self.chunks
        n = len(chunks)
        per = np.fromiter((k for _, k, _, _, _ in chunks), np.int64, n)
        upd = np.fromiter((c.op == "update" for c, _, _, _, _ in chunks), np.bool_, n)
        per = per * (1 + upd)
        total = int(per.sum())
        ci = np.repeat(np.arange(n), per)  # each output row's rows event
        local = np.arange(total) - (np.cumsum(per) - per)[ci]
        is_upd = upd[ci]
        row = np.where(is_upd, local >> 1, local)
        op = np.fromiter((_OP_CODE[c.op] for c, _, _, _, _ in chunks), np.int8, n)[ci]
        op += (is_upd & (local & 1).astype(np.bool_)).astype(np.int8)
        absent: list[list[str] | None] = []
        partial = False
        for c, k, a, b, _ in chunks:
            partial = partial or a is not None or b is not None
            absent.extend((a, b) * k if c.op == "update" else [a] * k)
        take = pa.array(ci)
        arrays = [
            _OPS.take(pa.array(op)),
            _arr_str([self.file]).take(pa.array(np.zeros(total, np.int32))),
            pa.array(np.fromiter((c.pos for c, _, _, _, _ in chunks), np.int64, n)[ci]),
            pa.array(row.astype(np.int32)),
            _arr_str([c.gtid for c, _, _, _, _ in chunks]).take(take),
            utc_seconds([c.ts for c, _, _, _, _ in chunks]).take(take),
            _seq_array(np.array([c.seq for c, _, _, _, _ in chunks], dtype=object), ci, row),
            pa.array([rb for _, _, _, _, rb in chunks], pa.bool_()).take(take),
            _arr_str([c.xid for c, _, _, _, _ in chunks]).take(take),
            safe_array(absent, pa.list_(pa.string())) if partial else pa.nulls(total, pa.list_(pa.string())),
        ]
        return arrays, partial

    def _columns(self) -> list[pa.ChunkedArray]:
        """The table's data columns of the buffered rows, in order (closing the open run)."""
        if self.fast is not None and len(self.fast):
            self.parts.append(self.fast.finish())
        self._close_images()
        parts, self.parts = self.parts, []
        return [pa.chunked_array([p[i] for p in parts], f.type) for i, f in enumerate(self.data)]

    def flush(self) -> None:
        if not self.chunks:
            return
        meta, partial = self._meta()
        table = pa.Table.from_arrays([*self._columns(), *meta], schema=self.schema)
        self.chunks, self.rows = [], 0
        self.sink.write(table)
        if self.latest is not None and self.pk is not None:
            keep = [*(f.name for f in self.data), "_op", "_seq", "_ts"]  # what merge_current reads
            self.latest = (
                None if partial else [*self.latest, latest_changes(counted_changes(table).select(keep), self.pk)]
            )

    def spoil(self) -> None:
        """A statement empties the table inside the split: the driver applies the split's changes itself."""
        self.latest = None

    def current_file(self, staging: str) -> str | None:
        """Write the last change of each key (:meth:`flush` first) as an Arrow IPC file in ``staging``; its path,
        ``""`` when no row counts, ``None`` when the split gives none (see the class docstring)."""
        if self.latest is None or self.pk is None:
            return None
        if not self.latest or not any(t.num_rows for t in self.latest):
            return ""
        table = latest_changes(pa.concat_tables(self.latest), self.pk)
        os.makedirs(staging, exist_ok=True)
        path = os.path.join(staging, f"{uuid.uuid4().hex}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
        return path


def _arr_str(values: list[str | None]) -> pa.Array:
    return safe_array(values, pa.string())


def last_of_keys(table: pa.Table, pk: list[str], *, use_threads: bool = True) -> np.ndarray[Any, Any]:
    """The index of the last row of each key ``pk`` in ``table`` (in no particular order).

    Whole-number DECIMAL keys (BIGINT UNSIGNED is ``decimal128(20, 0)`` in the lake) are grouped as 64-bit
    integers where every value fits: hashing those is ~1.5x faster than hashing 128-bit decimals.

    >>> t = pa.table({"k": pa.array([1, 2, 1], pa.decimal128(20, 0))})
    >>> sorted(last_of_keys(t, ["k"]).tolist())
    [1, 2]
    """
    cols = []
    for name in pk:
        col = table[name]
        if pa.types.is_decimal(col.type) and col.type.scale == 0 and col.type.precision <= 20:
            for narrow in (pa.int64(), pa.uint64()):
                try:
                    col = col.cast(narrow)
                    break
                except pa.ArrowInvalid:  # a value out of its range
                    continue
        cols.append(col)
    keys = pa.table([*cols, pa.array(np.arange(table.num_rows, dtype=np.int64))], names=[*pk, "_i"])
    last: np.ndarray[Any, Any] = (
        keys.group_by(pk, use_threads=use_threads).aggregate([("_i", "max")])["_i_max"].to_numpy()
    )
    return last


def rows_at(table: pa.Table, index: np.ndarray[Any, Any]) -> pa.Table:
    """The rows of ``table`` at ``index`` (distinct), in table order: a filter by mask, several times faster than
    ``take`` on the chunked columns of a table built a run at a time.

    >>> rows_at(pa.table({"a": [1, 2, 3]}), np.array([2, 0]))["a"].to_pylist()
    [1, 3]
    """
    mask = np.zeros(table.num_rows, np.bool_)
    mask[index] = True
    return table.filter(pa.array(mask))


def counted_changes(changes: pa.Table) -> pa.Table:
    """The change rows current state applies: not rolled back, not waiting for an XA outcome (``_rolled_back``
    null).  A transaction that ended in ROLLBACK was logged for its non-transactional tables; the rest was undone."""
    return changes.filter(pc.fill_null(pc.equal(changes["_rolled_back"], False), False))


def latest_changes(changes: pa.Table, pk: list[str]) -> pa.Table:
    """The last row of each key of ``changes`` (in binlog order: ``_seq``, an update's before image first), in
    that order: merging these into current state gives what merging all of ``changes`` gives (complete images)."""
    if not changes.num_rows:
        return changes
    return rows_at(changes, last_of_keys(changes, pk, use_threads=False))


def _skip_row(s: Skipped) -> dict[str, Any]:
    return {
        "file": os.path.basename(s.file),
        "start": s.start,
        "end": s.end,
        "reason": s.reason,
        "events_lost": s.events_lost,
        "resynced": s.resynced,
        "transaction_start": s.transaction_start,
    }


def _write_task(
    splits: Iterable[Split],
    lake: str,
    layouts: dict[str, Layout],
    schemas: dict[str, pa.Schema],
    pk: dict[str, list[str]],
    plan: _TaskPlan,
) -> Iterator[dict[str, Any]]:
    """Decode splits; write each table's changes and the events as Parquet files and the last change of each key
    as staged Arrow files; report them (nothing is committed)."""
    staging = _staging_dir(lake, plan.batch)
    renamed = {table_dir(*t) for s in plan.renames for pair in s.pairs for t in pair}
    for split in splits:
        with _profiled(f"decode-{split.index}"), _no_cycle_collection():
            report = _write_split(split, lake, layouts, schemas, pk, plan, staging, renamed)
        yield report


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector off while a split is decoded, one collection after: decoding makes millions
    of short-lived objects and almost no cycles (a 260 MB split leaves ~300), so its collections cost ~10 % of
    the task's time for nothing.  Reference counting still frees everything else at once."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        gc.collect()


def _write_split(
    split: Split,
    lake: str,
    layouts: dict[str, Layout],
    schemas: dict[str, pa.Schema],
    pk: dict[str, list[str]],
    plan: _TaskPlan,
    staging: str,
    renamed: set[str],
) -> dict[str, Any]:
    writers: dict[str, _TableWriter] = {}
    seen: dict[int, tuple[TableMapEvent, _Layout]] = {}  # id(table map) -> its layout (the map kept: ids stay unique)
    by_id: dict[str, _Layout] = {}
    events: list[EventRecord] = []
    event_sink = ParquetSink(os.path.join(lake, EVENTS_DIR), EVENTS_DIR, EVENTS, ["file", "type"])
    counts: Counter[str] = Counter()
    truncates: list[tuple[str, int]] = []
    prepared: dict[str, set[str]] = defaultdict(set)  # XID without an outcome in the batch -> its tables
    skips: list[Skipped] = []
    for rec in decode_split(
        split, tablemaps=False, read=plan.read, schema=plan.tracker(split), skips=skips, remap=plan.enriched, rows=False
    ):
        if isinstance(rec, Changes):
            tm = rec.table_map
            hit = seen.get(id(tm))
            if hit is None or hit[0] is not tm:
                mid = map_id(tm)
                lay = by_id.get(mid)
                if lay is None:
                    key = table_dir(tm.schema, tm.table)
                    names = [n for n, _ in layouts[mid]]
                    where = {n: i for i, n in enumerate(names)}
                    data = [f.name for f in schemas[key] if f.name not in _META_NAMES]
                    members = tuple(c.set_values for c in tm.columns)
                    lay = by_id[mid] = _Layout(key, names, tuple(where.get(n) for n in data), members)
                    if key not in writers:
                        uri = os.path.join(lake, key, "changes")
                        w = writers[key] = _TableWriter(key, uri, schemas[key], pk.get(key), split.file.name)
                        if key in renamed:
                            w.spoil()
                hit = seen[id(tm)] = (tm, lay)
            lay = hit[1]
            rolled_back: bool | None = rec.rolled_back
            if rec.xid is not None and not rec.rolled_back:
                rolled_back = plan.outcomes.get(rec.xid)
                if rolled_back is None:
                    prepared[rec.xid].add(lay.key)
            counts[f"{lay.key} {rec.op}"] += writers[lay.key].add(rec, lay, rolled_back)
        elif isinstance(rec, EventRecord):
            events.append(rec)
            if len(events) >= FLUSH_ROWS:
                event_sink.write(pa.Table.from_batches([event_batch(split.file, events)]))
                events = []
        elif isinstance(rec, Truncate):
            key = table_dir(rec.database, rec.table) if rec.table else _database_key(rec.database)
            truncates.append((key, rec.seq))
            for k in _keys_of(key, writers):  # changes of the table before the statement and maybe after: no
                if k in writers:  # single "last" change of each key
                    writers[k].spoil()
    if events:
        event_sink.write(pa.Table.from_batches([event_batch(split.file, events)]))
    current: dict[str, str] = {}
    files: list[DataFile] = []
    for key, w in writers.items():
        w.flush()
        done = w.sink.close()
        if done is not None:
            files.append(done)
        path = w.current_file(staging)
        if path is not None:
            current[key] = path
    event_file = event_sink.close()
    return {
        "split": split.index,
        "files": files,
        "events": [event_file] if event_file is not None else [],
        "counts": counts,
        "truncates": truncates,
        "prepared": {x: sorted(k) for x, k in prepared.items()},
        "skips": [_skip_row(s) for s in skips],
        "current": current,
    }


def _database_key(database: str) -> str:
    """The key of every table of ``database`` in a truncate report (DROP DATABASE): its folder and a slash."""
    return table_dir(database, "").rsplit("/", 1)[0] + "/"


def _keys_of(key: str, tables: Iterable[str]) -> list[str]:
    """The tables a truncate report's ``key`` stands for among ``tables`` (all of a database for its key)."""
    return [k for k in tables if k.startswith(key)] if key.endswith("/") else [key]


# -- driver ------------------------------------------------------------------------------------------------------


def _type_tag(t: pa.DataType) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in str(t)).strip("_")


def resolve_layout(cols: Layout, schema: list[pa.Field]) -> Layout:
    """Lake names of a table map's columns against the table's columns so far (``schema`` grows in place): same
    name and type -> that column; a new name -> a new column; a known name with another type -> ``name__type``."""
    have = {f.name: f.type for f in schema}
    out: Layout = []
    for n, t in cols:
        name = f"{n}__col" if n in _META_NAMES else n
        if name in have and have[name] != t:
            name = f"{name}__{_type_tag(t)}"
        if name not in have:
            schema.append(pa.field(name, t))
            have[name] = t
        out.append((name, t))
    return out


class Progress:
    """What a run is doing, on ``stream`` (stderr): on a terminal one redrawn line per stage (a bar of Spark's task
    counts, tasks done/total, seconds so far), otherwise plain log lines (a stage's start, each change of its task
    count at most every ``interval`` seconds, its end with the time it took)."""

    def __init__(self, spark: Any, stream: Any = None, *, interval: float = 0.5) -> None:
        self.sc = spark.sparkContext if spark is not None else None
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def log(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
        self.stream.write(f"binlake ingest: {text}\n")
        self.stream.flush()

    def _tasks(self) -> tuple[int, int]:
        """(completed, total) tasks of the active stages."""
        assert self.sc is not None
        tracker = self.sc.statusTracker()
        done = total = 0
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return done, total

    def show(self, label: str, done: int, total: int, seconds: float) -> None:
        """Draw the state of a stage: the bar on a terminal, a log line otherwise."""
        if self.tty:
            width = 30
            fill = width * done // max(total, 1)
            self.stream.write(
                f"\r\x1b[K{label:<10} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} tasks  {seconds:.0f} s"
            )
            self.stream.flush()
        else:
            self.log(f"{label}: {done}/{total} tasks, {seconds:.0f} s")

    def _poll(self, label: str, t0: float) -> None:
        last = (-1, -1)
        while not self._stop.wait(self.interval):
            if self.sc is None:
                continue
            now = self._tasks()
            if now[1] and (self.tty or now != last):
                self.show(label, *now, time.monotonic() - t0)
                last = now

    def timed(self, label: str, fn: Callable[[], T]) -> T:
        """``fn()`` run on the driver, its time logged as ``label`` (the stages' times say where a run goes)."""
        t0 = time.monotonic()
        with _profiled(f"driver-{label.replace(' ', '-')}"):
            out = fn()
        self.log(f"{label}: done in {time.monotonic() - t0:.1f} s")
        return out

    def run(self, label: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` with the progress of its Spark jobs shown as ``label``."""
        t0 = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._poll, args=(label, t0), daemon=True)
        self._thread.start()
        try:
            return fn()
        finally:
            self._stop.set()
            self._thread.join()
            if self.tty:
                self.stream.write("\r\x1b[K")
            self.log(f"{label}: done in {time.monotonic() - t0:.1f} s")


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
    """The schema where the next batch starts: the last batch's start state and DDL, over the ``--schema`` seed."""
    tracker = SchemaTracker.from_sql(seed) if seed else SchemaTracker()
    if manifest is None:
        return tracker
    ddl = [Statement.from_json(v) for v in manifest.get("statements", [])]
    last = tracker_at(manifest.get("schema", []), ddl, 1 << 200)
    known = last.tables
    return SchemaTracker({**{k: v for k, v in tracker.tables.items() if k not in known}, **known})


def ingest(
    spark: Any,
    sources: list[str],
    lake: str,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Progress | None = None,
    read: ReadSpec | None = None,
) -> IngestResult:
    """Ingest what is new in ``sources`` into ``lake`` (finishing an interrupted batch first); see the module doc.

    ``read``: decoding options (``schema_sql`` seeds the schema of the first batch), decryptor, ``on_error``.
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
        for f in list_binlogs(src):
            files.setdefault(f.name, f)
    ordered = sorted(files.values(), key=lambda f: (f.seq, f.name))
    new_bytes = sum(max(0, f.size - positions.get(f.name, 4)) for f in ordered)
    cores = int(getattr(spark.sparkContext, "defaultParallelism", 1) or 1)
    split_bytes = min(split_bytes, max(MIN_SPLIT_BYTES, -(-new_bytes // cores)))  # every core gets a range
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
        maps = _MapLog(tracker, _known_layouts(lake))
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


@dataclass
class _Known:
    """What the lake's ``_schema_history`` says: the layout of every map id, the latest primary key of every
    table, and the column facts (``tablemaps`` view dicts) of every map id and of each table's last named map."""

    layouts: dict[str, Layout] = field(default_factory=dict)
    pk: dict[str, list[str]] = field(default_factory=dict)
    maps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _known_layouts(lake: str) -> _Known:
    """What the lake's ``_schema_history`` knows (:class:`_Known`), read once per batch."""
    history = read_table(os.path.join(lake, HISTORY_DIR))
    known = _Known()
    if history is None:
        return known
    for row in history.sort_by([("batch", "ascending"), ("first_pos", "ascending")]).to_pylist():
        known.layouts[row["map_id"]] = [
            (n, pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(t))).field(0).type)
            for n, t in zip(row["lake_columns"], row["lake_types"], strict=True)
        ]
        index = {c["name"]: i for i, c in enumerate(row["columns"])}
        key = table_dir(row["database"], row["table"])
        known.pk[key] = [row["lake_columns"][index[c]] for c in row["primary_key"] if c in index]
        known.maps[row["map_id"]] = row["columns"]
        if any(c["name"] != f"col_{c['index'] + 1}" for c in row["columns"]):
            known.tables[key] = row["columns"]
    return known


class _MapLog:
    """The table maps of a batch as the driver's scan meets them (:func:`scan_statements`), in binlog order: one
    row (the ``tablemaps`` view's, with the lake layout and key) each time a table's layout differs from the one
    before, so the first occurrence of every layout and the last layout of every table are there.

    Maps that log no column names (MINIMAL/NO_LOG metadata) are named by :class:`~binlake.spark.enrich.Namer`
    (from an earlier named map of the table, in this batch or in the lake's history, or from the DDL that
    ``tracker``, the scan's own, follows); ``enriched`` holds their columns by map id, for the tasks to decode
    their rows with."""

    def __init__(self, tracker: SchemaTracker | None = None, known: _Known | None = None) -> None:
        self.rows: list[dict[str, Any]] = []
        self.known = known or _Known()
        self.enriched: dict[str, tuple[Column, ...]] = {}
        self._namer = Namer(tracker, self.known.tables)
        self._last: dict[str, str] = {}  # table -> the map id of its last table map
        self._seen: dict[int, tuple[TableMapEvent, str, str]] = {}  # id -> (table map, table, map id)
        self._unnamed: dict[str, tuple[Column, ...] | None] = {}  # map id -> its named columns (None: none known)

    def __call__(self, split: Split, pos: int, tm: TableMapEvent) -> None:
        seen = self._seen.get(id(tm))  # the scan gives identical maps as one object
        if seen is None or seen[0] is not tm:
            if len(self._seen) >= 1024:
                self._seen.clear()
            seen = self._seen[id(tm)] = (tm, table_dir(tm.schema, tm.table), map_id(tm))
        _, key, mid = seen
        if self._last.get(key) == mid:
            return
        self._last[key] = mid
        if named(tm):
            self._namer.learn(key, tm)
        else:
            tm = self._name(key, mid, tm)
        row = tablemap_rows(split.file, [TableMapRecord(tm, mid, pos, pos, 1)])[0]
        row["lake"] = [(n, lake_type(c)) for n, c in zip(tm.column_names, tm.columns, strict=True)]
        row["primary_key_index"] = list(tm.primary_key)
        self.rows.append(row)

    def _name(self, key: str, mid: str, tm: TableMapEvent) -> TableMapEvent:
        """``tm`` with its columns named as known (the first answer for a map id holds for the whole batch)."""
        if mid not in self._unnamed:
            facts = self.known.maps.get(mid)
            cols = borrow(tm.columns, facts) if facts is not None else self._namer.columns(key, tm)
            self._unnamed[mid] = cols
            if cols is not None:
                self.enriched[mid] = cols
        cols = self._unnamed[mid]
        return tm if cols is None else replace(tm, columns=cols)


def _run_batch(
    spark: Any,
    lake: str,
    manifest: dict[str, Any],
    progress: Progress,
    result: IngestResult,
    read: ReadSpec,
    maps: _MapLog | None = None,
) -> None:
    """Run one planned batch: ``maps`` are its table maps when the planning scan collected them (a batch finished
    after a crash scans its ranges again from the schema it started with: the same maps)."""
    batch: int = manifest["batch"]
    splits = [_split_from(v) for v in manifest["splits"]]
    statements = [Statement.from_json(v) for v in manifest.get("statements", [])]
    outcomes = {s.xid: s.rolled_back for s in statements if s.kind == "xa"}
    renames = [s for s in statements if s.kind == "rename"]
    ddl = [s for s in statements if s.kind == "ddl"]
    shutil.rmtree(_staging_dir(lake, batch), ignore_errors=True)  # an interrupted attempt's
    progress.log(f"batch {batch}: {len(splits)} splits of {len({s.file.name for s in splits})} files")

    # 1. table maps -> the lake layout of every map and every table's schema (binlog order decides new columns)
    if maps is None:
        tracker = tracker_from_json(manifest.get("schema", []))
        maps = _MapLog(tracker, _known_layouts(lake))
        progress.timed("table maps", lambda: scan_statements(splits, tracker, read, maps))
    known, pk = maps.known.layouts, dict(maps.known.pk)
    plan = _TaskPlan(read, manifest.get("schema", []), ddl, outcomes, renames, batch, maps.enriched)
    schemas: dict[str, list[pa.Field]] = {}
    layouts: dict[str, Layout] = {}
    new_history: list[dict[str, Any]] = []
    for row in maps.rows:
        key = table_dir(row["database"], row["table"])
        if key not in schemas:
            existing = table_schema(os.path.join(lake, key, "changes"))
            schemas[key] = [f for f in existing if f.name not in _META_NAMES] if existing is not None else []
        mid = row["map_id"]
        if mid not in layouts:
            layouts[mid] = known.get(mid) or resolve_layout(row["lake"], schemas[key])
            for n, t in layouts[mid]:
                if n not in {f.name for f in schemas[key]}:
                    schemas[key].append(pa.field(n, t))
            if mid not in known and mid not in {h["map_id"] for h in new_history}:
                new_history.append(_history_row(row, layouts[mid], batch))
        pk[key] = [layouts[mid][i][0] for i in row["primary_key_index"]]
    full = {k: pa.schema([*v, *(pa.field(n, t) for n, t in META)]) for k, v in schemas.items()}

    # 2. decode and write Parquet in the tasks
    rdd = spark.sparkContext.parallelize(splits, max(1, len(splits)))
    task_pk = {k: v for k, v in pk.items() if k in full and v}
    reports: list[dict[str, Any]] = progress.run(
        "decode", lambda: _collect(rdd, lambda it: _write_task(it, lake, layouts, full, task_pk, plan))
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
    latest = _staged_latest(reports, by_table)
    progress.timed(
        "current", lambda: _update_current(lake, batch, pk, full, by_table, earlier_xa, truncates, renames, latest)
    )

    _atomic_write(
        os.path.join(_batches_dir(lake), f"{batch:010d}.done"),
        json.dumps({"xa_pending": {x: sorted(k) for x, k in sorted(pending.items())}}),
    )
    shutil.rmtree(_staging_dir(lake, batch), ignore_errors=True)
    result.batches += 1
    result.files += len({s.file.name for s in splits})
    result.bytes += sum((s.stop if s.stop is not None else s.file.size) - s.start for s in splits)
    result.skips.extend(skips)
    result.xa_pending = len(pending)
    result.renames += len(renames)


HISTORY = pa.schema(
    [
        ("database", pa.string()),
        ("table", pa.string()),
        ("map_id", pa.string()),
        ("table_id", pa.int64()),
        ("first_file", pa.string()),
        ("first_pos", pa.int64()),
        ("primary_key", pa.list_(pa.string())),
        ("columns", pa.list_(COLUMN)),
        ("lake_columns", pa.list_(pa.string())),
        ("lake_types", pa.list_(pa.string())),
        ("batch", pa.int64()),
    ]
)

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


def _history_row(row: dict[str, Any], layout: Layout, batch: int) -> dict[str, Any]:
    return {
        "database": row["database"],
        "table": row["table"],
        "map_id": row["map_id"],
        "table_id": row["table_id"],
        "first_file": row["file"],
        "first_pos": row["first_pos"],
        "primary_key": row["primary_key"],
        "columns": row["columns"],
        "lake_columns": [n for n, _ in layout],
        "lake_types": [pa.schema([pa.field("t", t)]).serialize().to_pybytes().hex() for _, t in layout],
        "batch": batch,
    }


# -- current state ---------------------------------------------------------------------------------------------


def _key_of(row: dict[str, Any], pk: list[str]) -> tuple[Any, ...]:
    return tuple(row.get(c) for c in pk)


def _merge_partial(current: pa.Table, changes: pa.Table, pk: list[str], schema: pa.Schema) -> pa.Table:
    """:func:`merge_current` for changes with partial images: row by row, a column an image lacks keeps the value
    it had (from an earlier change of the batch or from ``current``)."""
    cols = [n for n in schema.names if n not in ("_seq", "_ts")]
    state: dict[tuple[Any, ...], dict[str, Any] | None] = {}
    base: dict[tuple[Any, ...], tuple[Any, ...] | None] = {}  # key -> the key of `current` that fills the rest
    before: tuple[Any, ...] = ()
    fill: tuple[Any, ...] | None
    for r in changes.to_pylist():
        absent = set(r["_absent"] or ())
        vals = {c: r[c] for c in cols if c in r and c not in absent}
        vals["_seq"], vals["_ts"] = r["_seq"], r["_ts"]
        op = r["_op"]
        if op == "update_preimage":
            before = _key_of(vals, pk)
            continue
        if op == "insert":
            k = _key_of(vals, pk)
            state[k], base[k] = vals, None
        elif op == "delete":
            k = _key_of(vals, pk)
            state[k], base[k] = None, None
        else:  # update_postimage: the key of its preimage, the columns it holds
            old = state.get(before, ...)
            if old is ...:
                old, fill = {}, before
            else:
                fill = base.get(before)
            new = {**(old or {}), **vals}
            k = tuple(vals[c] if c in vals else before[i] for i, c in enumerate(pk))
            new.update(zip(pk, k, strict=True))
            if k != before:
                state[before], base[before] = None, None
            state[k], base[k] = new, fill
    filled: dict[tuple[Any, ...], dict[str, Any]] = {}
    key_schema = pa.schema([schema.field(c) for c in pk])
    wanted = {b for b in base.values() if b is not None}
    if wanted and current.num_rows:
        keys = pa.Table.from_pylist([dict(zip(pk, b, strict=True)) for b in wanted], schema=key_schema)
        for row in current.join(keys, keys=pk, join_type="inner").to_pylist():
            filled[_key_of(row, pk)] = row
    rows = [{**filled.get(base[k] or (), {}), **v} for k, v in state.items() if v is not None]
    touched = pa.Table.from_pylist([dict(zip(pk, k, strict=True)) for k in state], schema=key_schema)
    return _replace_keys(current, touched, pk, pa.Table.from_pylist(rows, schema=schema), ordered=False)


def _replace_keys(current: pa.Table, keys: pa.Table, pk: list[str], new_rows: pa.Table, ordered: bool) -> pa.Table:
    """``current`` without the rows of ``keys``, plus ``new_rows``: in ``_seq`` order (``ordered``: both are, and
    every row of ``new_rows`` comes after those of ``current``, so they are only appended)."""
    if current.num_rows and keys.num_rows:
        current = current.append_column("_i", pa.array(np.arange(current.num_rows, dtype=np.int64)))
        keep = current.select([*pk, "_i"]).join(keys, keys=pk, join_type="left anti")
        current = rows_at(current, keep["_i"].to_numpy()).drop_columns(["_i"])
    out = pa.concat_tables([current, new_rows])
    return out if ordered else out.sort_by([("_seq", "ascending")])


def merge_current(
    current: pa.Table | None, changes: pa.Table, pk: list[str], schema: pa.Schema, *, ordered: bool = False
) -> pa.Table:
    """``current`` (rows of ``schema``: the table's columns, ``_seq``, ``_ts``) after ``changes`` (change-table
    rows that count: not rolled back), by primary key ``pk``.  ``ordered``: ``changes`` are in binlog order already
    (``_seq``, an update's before image first) and all after ``current``'s rows (one batch's, as the tasks give
    them): nothing is sorted.

    Complete images: the latest change of each key wins (vectorised).  Partial images (``_absent``): a column an
    image lacks keeps its previous value; an insert that lacks a column leaves it null (the server's default is in
    no event).
    """
    current = _conform(current if current is not None else schema.empty_table(), schema)
    if not changes.num_rows:
        return current
    up = pc.is_in(changes["_op"], pa.array(["insert", "update_postimage"]))
    changes = changes.append_column("_up", up)
    if not ordered:
        changes = changes.sort_by([("_seq", "ascending"), ("_up", "ascending")])
    if "_absent" in changes.column_names and changes["_absent"].null_count < changes.num_rows:
        return _merge_partial(current, changes, pk, schema)
    latest = np.sort(last_of_keys(changes, pk))  # one row per key, in binlog order
    keep = latest[changes["_up"].to_numpy(zero_copy_only=False)[latest]]
    wanted = [n for n in schema.names if n in changes.column_names]
    new_rows = _conform(rows_at(changes.select(wanted), keep), schema)
    return _replace_keys(current, rows_at(changes.select(pk), latest), pk, new_rows, ordered)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns (missing ones null, others dropped, types cast)."""
    return pa.Table.from_arrays(
        [
            table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
            for f in schema
        ],
        schema=schema,
    )


class _Current:
    """The current-state tables a batch touches, in memory: each loaded as it was before the batch (so a re-run after
    a crash computes the same states), written at the end in one overwrite commit per table."""

    def __init__(self, lake: str, batch: int, pk: dict[str, list[str]], schemas: dict[str, pa.Schema]) -> None:
        self.lake, self.batch, self.pk, self.changes_schemas = lake, batch, pk, schemas
        self.tables: dict[str, pa.Table] = {}
        self.schemas: dict[str, pa.Schema] = {}

    def uri(self, key: str) -> str:
        return os.path.join(self.lake, key, "current")

    def schema(self, key: str) -> pa.Schema:
        """The current table's columns: the change table's (as this batch knows them), ``_seq``, ``_ts``."""
        if key not in self.schemas:
            full = self.changes_schemas.get(key) or table_schema(os.path.join(self.lake, key, "changes"))
            fields = [f for f in (full or []) if f.name not in _META_NAMES]
            for f in table_schema(self.uri(key)) or []:
                if f.name not in {g.name for g in fields} and f.name not in ("_seq", "_ts"):
                    fields.append(f)
            self.schemas[key] = pa.schema([*fields, pa.field("_seq", SEQ), pa.field("_ts", UTC_TS)])
        return self.schemas[key]

    def get(self, key: str) -> pa.Table:
        if key not in self.tables:
            before = read_table_before(self.uri(key), self.batch)
            schema = self.schema(key)
            self.tables[key] = _conform(before if before is not None else schema.empty_table(), schema)
        return self.tables[key]

    def empty(self, key: str) -> None:
        self.tables[key] = self.schema(key).empty_table()

    def move(self, src: str, dst: str) -> None:
        """RENAME: ``dst`` gets ``src``'s rows (and key), ``src`` is left empty."""
        moved = self.get(src)
        names = {f.name for f in self.schema(dst)}
        self.schemas[dst] = pa.schema([*(f for f in self.schema(src) if f.name not in names), *self.schema(dst)])
        self.tables[dst] = _conform(moved, self.schema(dst))
        self.pk.setdefault(dst, self.pk[src])
        self.empty(src)

    def write(self) -> None:
        for key, table in sorted(self.tables.items()):
            overwrite(self.uri(key), _conform(table, self.schema(key)), self.batch)


def _counted(lake: str, key: str, files: list[DataFile], earlier_xa: list[str], latest: list[str] | None) -> pa.Table:
    """The change rows of one table that current state applies: the rows of XA transactions prepared in an earlier
    batch and committed in this one, and this batch's: the last change of each key the tasks staged (``latest``:
    their files) or, when a split gave none, every counted row of the batch's Parquet files."""
    import pyarrow.parquet as pq

    parts: list[pa.Table] = []
    if earlier_xa:
        old = read_table(os.path.join(lake, key, "changes"))
        if old is not None:
            old = old.filter(pc.is_in(old["_xid"], pa.array(earlier_xa, pa.string())))
            parts.append(counted_changes(old))
    if latest is not None:
        for path in latest:
            with pa.memory_map(path) as src:
                parts.append(pa.ipc.open_file(src).read_all())
    else:
        parts.extend(counted_changes(pq.read_table(os.path.join(lake, key, "changes", f.path))) for f in files)
    if not parts:
        return pa.table({"_seq": pa.array([], SEQ)})
    return pa.concat_tables(parts, promote_options="default")


def _staged_latest(reports: list[dict[str, Any]], by_table: dict[str, list[DataFile]]) -> dict[str, list[str]]:
    """Per table, the staged last-change files of the batch's splits (in split order), for the tables every split
    that wrote changes of them staged one for (``""``: the split's rows of it did not count)."""
    out: dict[str, list[str]] = {}
    spoiled: set[str] = set()
    for rep in sorted(reports, key=lambda r: int(r["split"])):
        current: dict[str, str] = rep["current"]
        for key in {f.table for f in rep["files"]}:
            if key not in current:
                spoiled.add(key)
            elif current[key]:
                out.setdefault(key, []).append(current[key])
            else:
                out.setdefault(key, [])
    return {k: v for k, v in out.items() if k not in spoiled and k in by_table}


def _update_current(
    lake: str,
    batch: int,
    pk: dict[str, list[str]],
    schemas: dict[str, pa.Schema],
    by_table: dict[str, list[DataFile]],
    earlier_xa: dict[str, list[str]],
    truncates: list[tuple[int, str]],
    renames: list[Statement],
    latest: dict[str, list[str]],
) -> None:
    """Apply this batch to the current-state tables: each table's changes in ``_seq`` order, cut where a
    statement empties a table (``truncates``: (seq, table)) or moves it (``renames``); ``latest``: the tables the
    tasks reduced to the last change of each key (:func:`_staged_latest`)."""
    cur = _Current(lake, batch, pk, schemas)
    changes = {
        key: _counted(lake, key, by_table.get(key, []), earlier_xa.get(key, []), latest.get(key))
        for key in set(by_table) | set(earlier_xa)
        if pk.get(key)
    }
    applied: dict[str, Decimal] = {}

    def advance(key: str, upto: int | None) -> None:
        """Apply the changes of ``key`` before ``upto`` (all of them for ``None``) not applied yet."""
        ch = changes.get(key)
        if ch is None or not ch.num_rows:
            return
        seg = ch
        if key in applied:
            seg = seg.filter(pc.greater_equal(seg["_seq"], pa.scalar(applied[key], SEQ)))
        if upto is not None:
            seg = seg.filter(pc.less(seg["_seq"], pa.scalar(Decimal(upto), SEQ)))
            applied[key] = Decimal(upto)
        else:
            applied[key] = Decimal(10**38 - 1)
        if seg.num_rows:
            ordered = key not in earlier_xa  # else rows of an earlier batch come first
            cur.tables[key] = merge_current(cur.get(key), seg, pk[key], cur.schema(key), ordered=ordered)

    known = set(pk) | set(changes) | {table_dir(*t) for s in renames for pair in s.pairs for t in pair}
    ops: list[tuple[int, int, str, Any]] = [
        (seq, 0, "truncate", k) for seq, key in truncates for k in _keys_of(key, known)
    ]
    ops += [(s.seq, 1, "rename", s.pairs) for s in renames]
    for seq, _, kind, what in sorted(ops, key=lambda o: (o[0], o[1])):
        if kind == "truncate":
            advance(what, seq)
            if pk.get(what) or os.path.isdir(cur.uri(what)):
                cur.empty(what)
            continue
        for src, dst in what:
            s, d = table_dir(*src), table_dir(*dst)
            advance(s, seq)
            advance(d, seq)
            if pk.get(s):
                cur.move(s, d)
    for key in changes:
        advance(key, None)
    cur.write()
