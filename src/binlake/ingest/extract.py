"""Decode one split into records: events, table maps and row changes, each with its transaction's GTID and time.

This is the work of one task, in plain Python (no Spark imported), so it is testable on its own and the data
source and the ingest job share it.  Transactions are tracked as the servers write them
(:class:`binlake.transactions.Transactions`), and their changes grouped as the change stream groups its
(:class:`binlake.transactions.Grouping`): a GTID event (MySQL GTID_LOG_EVENT, MariaDB GTID_EVENT) or ``BEGIN`` opens
one; XID, ``COMMIT``/``ROLLBACK``, XA_PREPARE, or the single statement after a GTID without ``BEGIN`` (DDL) closes
it.  A change's ``ts`` is its transaction's commit time (the closing event's timestamp), so changes are buffered
until their transaction closes.

``seq`` orders every change across files and is unique::

    seq = file_seq * 10**20 + event_pos * 10**10 + (offset_in_payload + row_index)

``event_pos`` is the rows event's position (for an event inside a MySQL TRANSACTION_PAYLOAD: the payload's),
``offset_in_payload`` the inner event's offset in the uncompressed payload (0 otherwise) and ``row_index`` the
row's index in its event; a row image takes at least one byte, so ``offset + row_index`` stays below the next
event's offset.  Positions are below 2**32 < 10**10; the value fits ``decimal(38,0)``.

Row changes come one record per rows event (:class:`Changes`: its rows as the decoder returns them, one list), so
consumers build their columns from whole events and no per-row object is made.

Example::

    for rec in decode_split(split):
        if isinstance(rec, Changes):
            for before, after in rec.rows:
                print(rec.database, rec.table, rec.op, after)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from binlake.coltypes import Column
from binlake.events.base import Event
from binlake.events.control import XaPrepareEvent
from binlake.events.format import FormatDescriptionEvent, StartV3Event
from binlake.events.query import QueryEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import TableMapEvent
from binlake.ingest.statements import SEQ_FILE, SEQ_POS, START_EVENTS, ReadSpec, open_split
from binlake.lake.records import Split
from binlake.recovery import Skipped
from binlake.schema import SchemaTracker
from binlake.sql.statements import Scope, emptied, may_empty
from binlake.sql.temporary import TemporaryTables
from binlake.transactions import QUERY_EVENTS, Grouping, Transactions

__all__ = [
    "Changes",
    "EventRecord",
    "TableMapRecord",
    "Truncate",
    "decode_split",
    "map_id",
    "render_value",
]


@dataclass(slots=True)
class EventRecord:
    """One event with its place in the transaction stream (``trx_pos``: position of the transaction's first event;
    ``trx_seq``: index of this event in it; both ``None`` for events outside transactions).

    Not frozen, unlike the events: one is made per event of a split, and a frozen dataclass' ``__init__`` (one
    ``object.__setattr__`` per field) took 0.76 µs where this one takes 0.2."""

    event: Event
    pos: int
    payload_offset: int | None
    gtid: str | None
    trx_pos: int | None
    trx_seq: int | None


@dataclass(frozen=True, slots=True)
class TableMapRecord:
    """A run of identical table maps in one split: the first and last position where it was in force."""

    table_map: TableMapEvent
    map_id: str
    first_pos: int
    last_pos: int
    count: int


@dataclass(slots=True)
class Changes:
    """The row changes of one rows event: ``rows`` as :meth:`~binlake.events.rows.RowsEvent.rows` returns them,
    ``(before, after)`` images in table-map column order (``None`` where the event has none).  Row ``i`` has
    sequence number ``seq + i``; ``ts``, ``rolled_back`` and ``xid`` are its transaction's."""

    table_map: TableMapEvent
    op: str
    rows: list[tuple[tuple[object, ...] | None, tuple[object, ...] | None]]
    pos: int
    seq: int
    gtid: str | None
    ts: int = 0
    rolled_back: bool = False  # its transaction ended in ROLLBACK (logged for non-transactional tables in it)
    xid: str | None = None  # its transaction was XA PREPAREd (two-phase): the outcome is a later XA COMMIT/ROLLBACK
    event: Any = None  # the RowsEvent when decode_split(rows=False) left decoding to the consumer (``rows`` empty)

    @property
    def database(self) -> str:
        return self.table_map.schema

    @property
    def table(self) -> str:
        return self.table_map.table


@dataclass(slots=True)
class Truncate:
    """A statement that empties a table without row events (TRUNCATE, DROP, CREATE OR REPLACE), at ``seq``; an
    empty ``table``: every table of ``database`` (DROP DATABASE)."""

    database: str
    table: str
    seq: int
    pos: int
    gtid: str | None
    statement: str
    ts: int = 0


Record = EventRecord | TableMapRecord | Changes | Truncate

_FOLLOWED = QUERY_EVENTS | START_EVENTS  # the events that change the sessions' temporary tables


_MAP_IDS: dict[tuple[object, ...], str] = {}  # the layout's fields -> map_id: every transaction logs its table map


def map_id(tm: TableMapEvent) -> str:
    """A stable id of a table map's layout (schema, table, column types, metadata, nullability, optional fields)."""
    key = (
        tm.schema,
        tm.table,
        tm.column_types,
        tm.metadata,
        tm.null_bitmap,
        *((f.type_code, f.raw) for f in tm.optional),
    )
    hit = _MAP_IDS.get(key)
    if hit is None:
        if len(_MAP_IDS) >= 4096:
            _MAP_IDS.clear()
        hit = _MAP_IDS[key] = _digest(tm)
    return hit


def _digest(tm: TableMapEvent) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    for part in (tm.schema.encode("utf-8", "surrogateescape"), tm.table.encode("utf-8", "surrogateescape")):
        h.update(len(part).to_bytes(4, "little") + part)
    h.update(bytes(tm.column_types) + b"\0" + tm.metadata + b"\0" + tm.null_bitmap + b"\0")
    for f in tm.optional:
        h.update(f.type_code.to_bytes(1, "little") + len(f.raw).to_bytes(4, "little") + f.raw)
    return h.hexdigest()[:16]


def decode_split(
    split: Split,
    *,
    changes: bool = True,
    tablemaps: bool = True,
    rows: bool = True,
    read: ReadSpec | None = None,
    schema: SchemaTracker | None = None,
    skips: list[Skipped] | None = None,
    remap: Mapping[str, tuple[Column, ...]] | None = None,
) -> Iterator[Record]:
    """Every record of ``split`` in binlog order (:class:`EventRecord` per event, :class:`TableMapRecord` per run,
    :class:`Changes` per rows event and :class:`Truncate` per emptying statement, the last two when their
    transaction closes).  ``changes=False`` skips row decoding (for the events and table-map views),
    ``tablemaps=False`` the table-map runs (the ingest learns its table maps on the driver), ``rows=False`` leaves
    each :class:`Changes`' rows undecoded (``event`` holds the rows event: the ingest decodes it into columns).

    ``read``: decoding options, decryptor and ``on_error`` (:class:`~binlake.ingest.statements.ReadSpec`);
    ``schema``: the tracker of the DDL in force at the split's start (:func:`~binlake.ingest.statements.tracker_at`),
    whose sessions' temporary tables are where the split's statements find them (a ``TRUNCATE t`` of a temporary
    ``t`` empties no base table);
    ``skips``: receives each skip of ``on_error`` ``skip-*`` (a ``skip-transaction`` skip also drops the changes of
    the broken transaction read before the damage).  A transaction closed by XA_PREPARE (not ONE PHASE) tags its
    changes with the XID: whether they count is decided by a later ``XA COMMIT``/``XA ROLLBACK``.
    ``remap``: columns to decode the rows of some table maps with, by :func:`map_id` (the facts a map does not log,
    given by the ingest driver: :mod:`binlake.columns`).
    """
    f = split.file
    base = f.seq * SEQ_FILE
    trx = Transactions()
    group: Grouping[Changes | Truncate] = Grouping()  # the open transaction's changes, until it closes
    trx_seq = 0
    runs: dict[int, TableMapRecord] = {}  # table id -> current run
    last_ts = 0
    remapped = _Remapper(remap or {})
    got: list[Skipped] = skips if skips is not None else []
    seen_skips = len(got)
    # followed here in event order: the decoder's tracker has already followed a statement when it comes out, and
    # a statement's names are read in its session's temporary tables before it (DROP TABLE t drops a temporary t)
    temporary = TemporaryTables(schema.temporary.state if schema is not None else None)
    for ev in open_split(split, read or ReadSpec(), schema, got):
        if len(got) > seen_skips:
            if any(s.transaction_start is not None for s in got[seen_skips:]):
                group.finish()  # the broken transaction's
                trx.finish()
            seen_skips = len(got)
        h = ev.header
        inner = h.in_payload is not None
        pos = h.in_payload if h.in_payload is not None else h.pos
        off = h.pos if inner else 0
        step = trx.event(ev)
        cut = group.before(step)
        if cut:  # a transaction that never ended (a damaged log): keep what is there
            yield from _closed(cut, last_ts, False)
        trx_seq = 0 if step.begins else trx_seq + 1
        if step.control is not None:
            for c in group.undone(step):  # the changes since the savepoint were undone
                if isinstance(c, Changes):
                    c.rolled_back = True
        if h.type_code in _FOLLOWED:
            if isinstance(ev, QueryEvent):
                scope = temporary.statement(ev)
                if changes:
                    for t in _truncates(ev, base + pos * SEQ_POS, pos, trx.gtid, scope):
                        group.add(t)
            elif isinstance(ev, FormatDescriptionEvent | StartV3Event):
                temporary.started(ev)
        if step.outcome == "prepare":
            ctl = step.control
            xid = ev.xid_text if isinstance(ev, XaPrepareEvent) else ctl.xid if ctl is not None else None
            for c in group.items:
                if isinstance(c, Changes):
                    c.xid = xid
        inside = step.inside
        yield EventRecord(ev, pos, off if inner else None, trx.gtid, trx.start, trx_seq if inside else None)
        if tablemaps and isinstance(ev, TableMapEvent):
            run = runs.get(ev.table_id)
            mid = map_id(ev)
            if run is not None and run.map_id == mid:
                runs[ev.table_id] = TableMapRecord(run.table_map, mid, run.first_pos, pos, run.count + 1)
            else:
                if run is not None:
                    yield run
                runs[ev.table_id] = TableMapRecord(ev, mid, pos, pos, 1)
        elif changes and isinstance(ev, RowsEvent):
            if remap and getattr(ev, "table_map", None) is not None:
                ev = remapped(ev)
            chunk = _changes(ev, base + pos * SEQ_POS + off, pos, trx.gtid, rows)
            if chunk is not None:
                group.add(chunk)
        if step.ends:
            ended = group.after(step)
            if ended is not None:
                yield from _closed(ended, h.timestamp, step.outcome == "rollback")
        last_ts = h.timestamp
    rest = group.finish()
    if rest:  # the split ends inside a transaction (a damaged or still-written file): keep what is there
        yield from _closed(rest, last_ts, False)
    yield from runs.values()


def _closed(pending: list[Changes | Truncate], ts: int, rolled_back: bool) -> list[Changes | Truncate]:
    """The records of a transaction that closed at time ``ts`` (its changes undone when ``rolled_back``)."""
    for c in pending:
        c.ts = ts
        if rolled_back and isinstance(c, Changes):
            c.rolled_back = True
    return pending


class _Remapper:
    """Rows events whose table map ``remap`` names get a copy of the map with those columns (one copy per map)."""

    def __init__(self, remap: Mapping[str, tuple[Column, ...]]) -> None:
        self.remap = remap
        self.seen: dict[int, tuple[TableMapEvent, TableMapEvent | None]] = {}  # id(map) -> (map, its copy)

    def __call__(self, ev: Any) -> Any:
        tm = ev.table_map
        hit = self.seen.get(id(tm))
        if hit is None or hit[0] is not tm:
            cols = self.remap.get(map_id(tm))
            if len(self.seen) >= 1024:
                self.seen.clear()
            hit = self.seen[id(tm)] = (tm, None if cols is None else replace(tm, columns=cols))
        return ev if hit[1] is None else replace(ev, table_map=hit[1])


def _changes(ev: Any, seq0: int, pos: int, gtid: str | None, decode: bool) -> Changes | None:
    tm = ev.table_map
    if not decode and tm is not None and tm.column_count == ev.column_count:
        return Changes(tm, ev.kind, [], pos, seq0, gtid, event=ev) if ev.rows_data else None
    rows = ev.rows(True)  # without its table map (or with another column count) this raises the decoder's error
    if not rows:
        return None
    return Changes(ev.table_map, ev.kind, rows, pos, seq0, gtid)


def _truncates(ev: Any, seq: int, pos: int, gtid: str | None, scope: Scope) -> list[Truncate]:
    """A :class:`Truncate` per base table the statement of ``ev`` (its session's temporary tables: ``scope``)
    empties without row events (:func:`binlake.sql.statements.emptied`: TRUNCATE, DROP TABLE, CREATE OR REPLACE
    TABLE, a sequence's CREATE/ALTER/DROP; DROP DATABASE gives one whose ``table`` is empty)."""
    raw = getattr(ev, "query_raw", None)
    if isinstance(raw, bytes) and not may_empty(raw):
        return []
    query = str(getattr(ev, "query", ""))
    status = getattr(ev, "status", None)
    mode = status("SQL_MODE") if status is not None else 0
    tables = emptied(query, str(getattr(ev, "db", "") or ""), mode if isinstance(mode, int) else 0, scope)
    return [Truncate(d, t, seq, pos, gtid, query[:200]) for d, t in tables]


# -- rendering values as text (the `changes` view's before/after maps) ----------------------------------------


def render_value(value: object) -> str:
    """A value as text for the ``changes`` view's maps: numbers as Python prints them, ``Decimal`` in fixed point,
    dates and times ISO 8601 (TIMESTAMP with ``+00:00``), TIME as ``[-]H:MM:SS[.ffffff]``, bytes as ``0x`` + hex,
    SET members comma-joined in sorted order, GEOMETRY as ``SRID=n;0x<wkb>``, VECTOR as a JSON array, zero dates
    as MySQL prints them (``0000-00-00``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Decimal):
        return format(value, "f")  # fixed point with every fraction digit, as the servers print it (not 0E-30)
    if isinstance(value, bool | int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "0x" + bytes(value).hex()
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, dt.timedelta):
        return _render_time(value)
    if isinstance(value, frozenset | set):
        return ",".join(sorted(str(v) for v in value))
    if isinstance(value, tuple):
        return json.dumps(list(value))
    srid = getattr(value, "srid", None)
    if srid is not None:
        return f"SRID={srid};0x{value.wkb.hex()}"  # type: ignore[attr-defined]
    return str(value)


def _render_time(value: dt.timedelta) -> str:
    us = value // dt.timedelta(microseconds=1)
    sign = "-" if us < 0 else ""
    us = abs(us)
    s, frac = divmod(us, 1_000_000)
    text = f"{sign}{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{text}.{frac:06d}" if frac else text


def column_info(col: Column, name: str) -> dict[str, object]:
    """The ``tablemaps`` view's description of one column."""
    return {
        "index": col.index,
        "name": name,
        "type": col.real_type,
        "type_code": col.real_type_code,
        "nullable": col.nullable,
        "unsigned": col.unsigned,
        "charset": col.charset,
        "length": col.length,
        "precision": col.precision,
        "scale": col.scale,
        "fsp": col.fsp,
        "bits": col.bits,
        "enum_values": list(col.enum_values) if col.enum_values is not None else None,
        "set_values": list(col.set_values) if col.set_values is not None else None,
        "geometry_type": col.geometry_type,
        "vector_dimension": col.vector_dimension,
        "pk_position": col.pk_position,
        "visible": col.visible,
    }
