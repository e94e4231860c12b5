"""The work of one ingest task (in this process, or a Spark executor's Python worker: a
:class:`~binlake.lake.runner.Runner` runs it): decode a split and write each table's changes, the events and the last
change of each key, as files the driver then hands the lake (nothing is committed here).

A task decodes its split with :func:`binlake.ingest.extract.decode_split` (rows left undecoded), builds each lake
table's data columns straight from the rows events' bytes with :mod:`binlake.ingest.columnar` (the tuple path where
that cannot), adds the META columns (``_op``, ``_seq``...) vectorised per rows event, and writes Parquet row groups
of :data:`FLUSH_ROWS` rows; for tables with a primary key it stages the last change of each key as a Parquet file
sorted by the key (:meth:`_TableWriter.current_file`).

Files go to the lake's storage through :class:`~binlake.lake.Lake` (a local folder or an object store), and the
task's :class:`~binlake.lake.records.TaskReport` goes back to the driver (as JSON from another process:
:mod:`binlake.lake.runner`).

Example (what :func:`binlake.ingest.run.ingest` runs for every split)::

    task = partial(write_task, lake, layouts, schemas, pk, plan)
    reports = runner.map(task, splits)
"""

from __future__ import annotations

import gc
import itertools
import os
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from binlake.coltypes import Column
from binlake.events.table_map import TableMapEvent
from binlake.ingest.arrow import event_batch, safe_array, to_lake, transpose, utc_seconds
from binlake.ingest.columnar import plan_for, table_for
from binlake.ingest.extract import Changes, EventRecord, Truncate, decode_split, map_id
from binlake.ingest.layouts import Layout
from binlake.ingest.progress import profiled
from binlake.ingest.statements import SEQ_FILE, SEQ_POS, ReadSpec, tracker_at
from binlake.lake.current import database_key, keys_of
from binlake.lake.delta import ParquetSink
from binlake.lake.lake import Lake
from binlake.lake.merge import STAGED, counted_changes, latest_changes, write_staged
from binlake.lake.names import table_dir
from binlake.lake.records import DataFile, Emptied, SkipRecord, Split, Statement, TaskReport
from binlake.lake.tables import EVENTS, EVENTS_DIR, META_DICTIONARY, META_NAMES, meta_columns, seq_array
from binlake.recovery import Skipped
from binlake.schema import SchemaTracker
from binlake.storage import writing
from binlake.wire import bits_lsb_first

if TYPE_CHECKING:
    from binlake._columnar import Plan


__all__ = ["FLUSH_ROWS", "TaskPlan", "write_task"]


FLUSH_ROWS = 65536  # rows of one table (or events) per row group
# change rows a table writer gathers for the last change of each key before reducing them (with the rows of the
# last reduction) to one row per key: once per split for splits of the default size (keys rarely repeat within a
# row group, so reducing each one did the work twice), and a bound on the memory of larger ones
LATEST_ROWS = 1 << 20
#: Rows per record batch of a staged file of last changes: a merge task reads the batches its key range overlaps,
#: so smaller ones read fewer rows of other ranges (a fifth of the keys from 8 staged Parquet files of 34 K rows
#: each: 0.098 s with groups of 64 K rows, 0.065 s with 16 K, 0.052 s with 8 K).
STAGED_GROUP_ROWS = 1 << 14


@dataclass(frozen=True)
class TaskPlan:
    """What every task of a batch gets besides its splits (pickled once per task)."""

    read: ReadSpec
    schema: dict[str, Any] | list[Any]  # SchemaTracker state at the batch start (statements.tracker_to_json)
    ddl: list[Statement]
    outcomes: dict[str, bool]  # XID -> rolled back, for the XA outcomes seen in the batch
    renames: list[Statement]
    batch: int
    enriched: dict[str, tuple[Column, ...]]  # map id -> columns named by the driver (maps that log no names)

    def tracker(self, split: Split) -> SchemaTracker:
        return tracker_at(self.schema, self.ddl, split.file.seq * SEQ_FILE + split.start * SEQ_POS)


_OPS = pa.array(["insert", "update_preimage", "update_postimage", "delete"], pa.string())
_OP_CODE = {"insert": 0, "update": 1, "delete": 3}  # an update's two rows: 1 (its before image) and 2 (after)
_BEFORE, _AFTER = itemgetter(0), itemgetter(1)
_UNSEEN: Any = object()  # a key _TableWriter has not looked up yet (its caches hold None too)


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

    Data columns are built by the compiled columnar builder (:mod:`binlake.ingest.columnar`) straight from each rows
    event's bytes where it handles the layout and the bytes; other events are decoded to tuples, and runs of them
    transposed and converted a column at a time.  The META columns are built per rows event, vectorised.

    For a table with a primary key it also keeps the *last change of each key* among the rows current state
    applies (not rolled back, not waiting for an XA outcome): what the driver merges into the current-state table
    instead of reading every change back.  A split whose rows of the table include partial images (``_absent``) or
    a statement emptying the table gives none (the driver then reads the split's files)."""

    def __init__(self, key: str, sink: ParquetSink, schema: pa.Schema, pk: list[str] | None, file: str) -> None:
        self.key, self.schema, self.pk, self.file = key, schema, pk, file
        self.data = [f for f in schema if f.name not in META_NAMES]
        self.chunks: list[tuple[Changes, int, list[str] | None, list[str] | None, bool | None]] = []
        self.rows = 0
        self.parts: list[list[pa.Array]] = []  # data columns of the rows before the open run, in order
        self.fast = table_for([f.type for f in self.data])  # the open run of the columnar builder
        self.images: list[tuple[object, ...]] = []  # or the open run of decoded images ...
        self.layout: _Layout | None = None  # ... all of this layout
        self.plans: dict[tuple[int, str, bytes, bytes | None], Plan | None] = {}
        self.absent: dict[tuple[int, bytes], list[str] | None] = {}
        self.sink = sink
        self.latest: list[pa.Table] | None = [] if pk else None  # counted change rows, reduced every LATEST_ROWS
        self.latest_rows = 0

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
        hit = self.absent.get(key, _UNSEEN)
        if hit is _UNSEEN:
            hit = self.absent[key] = _absent_names(bitmap, layout.names)
        return cast("list[str] | None", hit)

    def _fast(self, ev: Any, layout: _Layout) -> int | None:
        """Append the event's images with the columnar builder: how many, ``None`` when it cannot."""
        if self.fast is None or ev.partial:
            return None
        key = (id(layout), ev.kind, ev.columns_before, ev.columns_after)
        plan = self.plans.get(key, _UNSEEN)
        if plan is _UNSEEN:
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
        """The META columns of the buffered rows (vectorised per rows event: :func:`~binlake.lake.tables.meta_columns`)
        and whether any image is partial."""
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
        partial = any(a is not None or b is not None for _, _, a, b, _ in chunks)
        absent: list[list[str] | None] = []
        for c, k, a, b, _ in chunks if partial else ():  # one entry per row: only when some image is partial
            absent.extend((a, b) * k if c.op == "update" else [a] * k)
        take = pa.array(ci)
        arrays = meta_columns(
            total,
            op=_OPS.take(pa.array(op)),
            file=_arr_str([self.file]).take(pa.array(np.zeros(total, np.int32))),
            pos=pa.array(np.fromiter((c.pos for c, _, _, _, _ in chunks), np.int64, n)[ci]),
            row=pa.array(row.astype(np.int32)),
            gtid=_arr_str([c.gtid for c, _, _, _, _ in chunks]).take(take),
            ts=utc_seconds([c.ts for c, _, _, _, _ in chunks]).take(take),
            seq=seq_array(np.array([c.seq for c, _, _, _, _ in chunks], dtype=object), ci, row),
            rolled_back=pa.array([rb for _, _, _, _, rb in chunks], pa.bool_()).take(take),
            xid=_arr_str([c.xid for c, _, _, _, _ in chunks]).take(take),
            absent=safe_array(absent, pa.list_(pa.string())) if partial else None,
        )
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
            if partial:
                self.latest = None
                return
            keep = [*(f.name for f in self.data), "_op", "_seq", "_ts"]  # what merge_current reads
            self.latest.append(counted_changes(table).select(keep))
            self.latest_rows += self.latest[-1].num_rows
            if self.latest_rows >= LATEST_ROWS:
                self.latest = [latest_changes(pa.concat_tables(self.latest), self.pk)]
                self.latest_rows = 0  # the reduced rows (one per key) are not counted: reducing stays linear

    def spoil(self) -> None:
        """A statement empties the table inside the split: the driver applies the split's changes itself."""
        self.latest = None

    def current_file(self, lake: Lake, batch: int) -> str | None:
        """Write the last change of each key (:meth:`flush` first) as a staged file in the batch's staging folder
        (:func:`~binlake.lake.merge.write_staged`: sorted by the key in small record batches, of which a merge task
        of a key range reads its range's); its name there, ``""`` when no row counts, ``None`` when the split gives
        none (see the class docstring)."""
        if self.latest is None or self.pk is None:
            return None
        if not self.latest or not any(t.num_rows for t in self.latest):
            return ""
        table = latest_changes(pa.concat_tables(self.latest), self.pk)  # sorted by the key
        name = f"{uuid.uuid4().hex}{STAGED}"
        staged = lake.staging(batch) / name
        with writing(staged):  # a full disk, one gone read-only
            write_staged(table, staged, self.pk, STAGED_GROUP_ROWS)
        return name


def _arr_str(values: list[str | None]) -> pa.Array:
    return safe_array(values, pa.string())


def _skip_record(s: Skipped) -> SkipRecord:
    return SkipRecord(os.path.basename(s.file), s.start, s.end, s.reason, s.events_lost, s.resynced,
                      s.transaction_start)  # fmt: skip


def write_task(
    lake: Lake,
    layouts: dict[str, Layout],
    schemas: dict[str, pa.Schema],
    pk: dict[str, list[str]],
    plan: TaskPlan,
    split: Split,
) -> TaskReport:
    """Decode ``split``; write each table's changes and the events as Parquet files and the last change of each key
    as a staged Parquet file; the :class:`~binlake.lake.records.TaskReport` of them (nothing is committed)."""
    renamed = {table_dir(*t) for s in plan.renames for pair in s.pairs for t in pair}
    with profiled(f"decode-{split.index}"), _no_cycle_collection():
        return _write_split(split, lake, layouts, schemas, pk, plan, renamed)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector off while a split is decoded, one young-generation collection after: decoding
    makes millions of short-lived objects and almost no cycles (a 260 MB split leaves ~300), so its collections
    cost ~10 % of the task's time for nothing.  Reference counting still frees everything else at once.  With
    collection off every object the split made stays in generation 0, so collecting that generation frees the
    split's cycles without walking the worker's long-lived objects (a full collection: ~40 ms per split)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        gc.collect(0)


def _write_split(
    split: Split,
    lake: Lake,
    layouts: dict[str, Layout],
    schemas: dict[str, pa.Schema],
    pk: dict[str, list[str]],
    plan: TaskPlan,
    renamed: set[str],
) -> TaskReport:
    writers: dict[str, _TableWriter] = {}
    # id(table map) -> the map, its layout and map id (the map kept: ids stay unique)
    seen: dict[int, tuple[TableMapEvent, _Layout, str]] = {}
    by_id: dict[str, _Layout] = {}
    events: list[EventRecord] = []
    event_sink = lake.sink(lake.own(EVENTS_DIR), EVENTS_DIR, EVENTS, ["file", "type"])
    counts: Counter[str] = Counter()
    emptied: list[Emptied] = []
    prepared: dict[str, dict[str, str]] = defaultdict(dict)  # XID without an outcome in the batch -> table -> map id
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
                    data = [f.name for f in schemas[key] if f.name not in META_NAMES]
                    members = tuple(c.set_values for c in tm.columns)
                    lay = by_id[mid] = _Layout(key, names, tuple(where.get(n) for n in data), members)
                    if key not in writers:
                        sink = lake.sink(lake.changes(key), key, schemas[key], META_DICTIONARY)
                        w = writers[key] = _TableWriter(key, sink, schemas[key], pk.get(key), split.file.name)
                        if key in renamed:
                            w.spoil()
                hit = seen[id(tm)] = (tm, lay, mid)
            _, lay, mid = hit
            rolled_back: bool | None = rec.rolled_back
            if rec.xid is not None and not rec.rolled_back:
                rolled_back = plan.outcomes.get(rec.xid)
                if rolled_back is None:
                    prepared[rec.xid][lay.key] = mid
            counts[f"{lay.key} {rec.op}"] += writers[lay.key].add(rec, lay, rolled_back)
        elif isinstance(rec, EventRecord):
            events.append(rec)
            if len(events) >= FLUSH_ROWS:
                event_sink.write(pa.Table.from_batches([event_batch(split.file, events)]))
                events = []
        elif isinstance(rec, Truncate):
            key = table_dir(rec.database, rec.table) if rec.table else database_key(rec.database)
            emptied.append(Emptied(key, rec.seq))
            for k in keys_of(key, writers):  # changes of the table before the statement and maybe after: no
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
        name = w.current_file(lake, plan.batch)
        if name is not None:
            current[key] = name
    event_file = event_sink.close()
    return TaskReport(
        split.index,
        tuple(files),
        (event_file,) if event_file is not None else (),
        dict(counts),
        tuple(emptied),
        {x: dict(sorted(t.items())) for x, t in prepared.items()},
        tuple(_skip_record(s) for s in skips),
        current,
    )
