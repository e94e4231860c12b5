"""Decode one split into records: events, table maps and row changes, each with its transaction's GTID and time.

This is the work of one Spark task, in plain Python (no Spark imported), so it is testable on its own and the data
source and the ingest job share it.  Transactions are tracked as the servers write them: a GTID event (MySQL
GTID_LOG_EVENT, MariaDB GTID_EVENT) or ``BEGIN`` opens one; XID, ``COMMIT``/``ROLLBACK``, XA_PREPARE, or the single
statement after a GTID without ``BEGIN`` (DDL) closes it.  A change's ``ts`` is its transaction's commit time
(the closing event's timestamp), so changes are buffered until their transaction closes.

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
from binlake.events.base import Event, EventType
from binlake.events.control import XaPrepareEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import TableMapEvent
from binlake.recovery import Skipped
from binlake.schema import SchemaTracker
from binlake.spark.plan import Split
from binlake.spark.statements import SEQ_FILE, SEQ_POS, ReadSpec, open_split

__all__ = [
    "Changes",
    "EventRecord",
    "TableMapRecord",
    "Truncate",
    "decode_split",
    "map_id",
    "render_value",
]

E = EventType
_GTID = frozenset({E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT, E.GTID_TAGGED_LOG_EVENT, E.GTID_EVENT})
_QUERY = frozenset({E.QUERY_EVENT, E.QUERY_COMPRESSED_EVENT})
_TRX_END = frozenset({E.XID_EVENT, E.XA_PREPARE_LOG_EVENT})


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


def _gtid_text(ev: Event) -> str | None:
    g = getattr(ev, "gtid", None)
    return None if g is None else str(g)


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

    ``read``: decoding options, decryptor and ``on_error`` (:class:`~binlake.spark.statements.ReadSpec`);
    ``schema``: the tracker of the DDL in force at the split's start (:func:`~binlake.spark.statements.tracker_at`);
    ``skips``: receives each skip of ``on_error`` ``skip-*`` (a ``skip-transaction`` skip also drops the changes of
    the broken transaction read before the damage).  A transaction closed by XA_PREPARE (not ONE PHASE) tags its
    changes with the XID: whether they count is decided by a later ``XA COMMIT``/``XA ROLLBACK``.
    ``remap``: columns to decode the rows of some table maps with, by :func:`map_id` (maps that log no column
    names, named by the ingest driver: :mod:`binlake.spark.enrich`).
    """
    f = split.file
    base = f.seq * SEQ_FILE
    gtid: str | None = None
    trx_pos: int | None = None
    trx_seq = 0
    begun = False  # BEGIN seen: the transaction runs to XID/COMMIT
    pending: list[Changes | Truncate] = []
    savepoints: dict[str, int] = {}  # SAVEPOINT name -> len(pending) when it was set
    runs: dict[int, TableMapRecord] = {}  # table id -> current run
    last_ts = 0
    remapped = _Remapper(remap or {})
    got: list[Skipped] = skips if skips is not None else []
    seen_skips = len(got)
    for ev in open_split(split, read or ReadSpec(), schema, got):
        if len(got) > seen_skips:
            if any(s.transaction_start is not None for s in got[seen_skips:]):
                pending, gtid, trx_pos, trx_seq, begun = [], None, None, 0, False  # the broken transaction
            seen_skips = len(got)
        h = ev.header
        code = h.type_code
        inner = h.in_payload is not None
        pos = h.in_payload if h.in_payload is not None else h.pos
        off = h.pos if inner else 0
        closes = rollback = False
        if code in _GTID:
            # MariaDB's GTID_EVENT stands for BEGIN unless FL_STANDALONE (DDL); MySQL logs BEGIN after its GTID
            gtid, trx_pos, trx_seq, begun = _gtid_text(ev), pos, 0, getattr(ev, "standalone", None) is False
        elif code in _QUERY:
            q = str(getattr(ev, "query", "")).lstrip().upper()
            if q.startswith(("BEGIN", "XA START", "START TRANSACTION")):
                if trx_pos is None:
                    gtid, trx_pos, trx_seq = None, pos, 0
                begun = True
            elif (end := q.startswith("COMMIT") or _is_rollback(q)) or trx_pos is None or not begun:
                rollback = end and _is_rollback(q)
                if trx_pos is None:
                    gtid, trx_pos, trx_seq = None, pos, 0
                closes = True
            if q.startswith("SAVEPOINT"):
                savepoints[q.split(None, 1)[-1].strip("` ")] = len(pending)
            elif q.startswith("ROLLBACK TO"):  # the changes since the savepoint were undone
                at = savepoints.get(q.split()[-1].strip("` "))
                for c in pending[at or 0 :] if at is not None else ():
                    if isinstance(c, Changes):
                        c.rolled_back = True
            if changes:
                t = _truncates(ev, base + pos * SEQ_POS, pos, gtid)
                pending.extend(t)
        elif code in _TRX_END:
            closes = True
            if isinstance(ev, XaPrepareEvent) and not ev.one_phase:
                for c in pending:
                    if isinstance(c, Changes):
                        c.xid = ev.xid_text
        yield EventRecord(ev, pos, off if inner else None, gtid, trx_pos, trx_seq if trx_pos is not None else None)
        if trx_pos is not None:
            trx_seq += 1
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
            chunk = _changes(ev, base + pos * SEQ_POS + off, pos, gtid, rows)
            if chunk is not None:
                pending.append(chunk)
        if closes:
            for c in pending:
                c.ts = h.timestamp
                if rollback and isinstance(c, Changes):
                    c.rolled_back = True
            yield from pending
            pending = []
            savepoints.clear()
            gtid, trx_pos, trx_seq, begun = None, None, 0, False
        last_ts = h.timestamp
    if pending:  # the split ends inside a transaction (a damaged or still-written file): keep what is there
        for c in pending:
            c.ts = last_ts
        yield from pending
    yield from runs.values()


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


def _is_rollback(q: str) -> bool:
    """``ROLLBACK`` ends the transaction; ``ROLLBACK TO [SAVEPOINT] x`` does not."""
    return q.startswith("ROLLBACK") and not q.startswith("ROLLBACK TO")


def _changes(ev: Any, seq0: int, pos: int, gtid: str | None, decode: bool) -> Changes | None:
    tm = ev.table_map
    if not decode and tm is not None and tm.column_count == ev.column_count:
        return Changes(tm, ev.kind, [], pos, seq0, gtid, event=ev) if ev.rows_data else None
    rows = ev.rows(True)  # without its table map (or with another column count) this raises the decoder's error
    if not rows:
        return None
    return Changes(ev.table_map, ev.kind, rows, pos, seq0, gtid)


def _ident(text: str) -> tuple[str | None, str, str]:
    """``db.table`` / `` `db`.`table` `` at the start of ``text`` -> (db or None, table, rest)."""
    parts: list[str] = []
    s = text.lstrip()
    while True:
        if s.startswith("`"):
            end = 1
            buf = []
            while end < len(s):
                if s[end] == "`":
                    if s[end + 1 : end + 2] == "`":
                        buf.append("`")
                        end += 2
                        continue
                    break
                buf.append(s[end])
                end += 1
            parts.append("".join(buf))
            s = s[end + 1 :]
        else:
            n = 0
            while n < len(s) and (s[n].isalnum() or s[n] in "_$"):
                n += 1
            parts.append(s[:n])
            s = s[n:]
        if s.startswith(".") and len(parts) == 1:
            s = s[1:]
            continue
        break
    if len(parts) == 2:
        return parts[0], parts[1], s
    return None, parts[0], s


def _truncates(ev: Any, seq: int, pos: int, gtid: str | None) -> list[Truncate]:
    """Tables a statement empties without row events: TRUNCATE [TABLE] t, DROP TABLE [IF EXISTS] a, b,
    CREATE OR REPLACE TABLE t (its current state starts again from nothing), and DROP DATABASE|SCHEMA [IF EXISTS]
    d (every table of ``d``: a :class:`Truncate` whose ``table`` is empty)."""
    query = str(getattr(ev, "query", ""))
    db = str(getattr(ev, "db", "") or "")
    words = query.split(None, 4)
    upper = [w.upper() for w in words]
    if upper[:1] == ["TRUNCATE"]:
        rest = query.split(None, 2 if upper[1:2] == ["TABLE"] else 1)[-1]
        names = [rest]
    elif upper[:2] == ["DROP", "TABLE"] or upper[:3] == ["DROP", "TEMPORARY", "TABLE"]:
        rest = query.split(None, upper.index("TABLE") + 1)[-1]
        if rest.upper().startswith("IF EXISTS"):
            rest = rest[len("IF EXISTS") :]
        names = []
        while rest.strip():
            d, t, rest = _ident(rest)
            names.append(f"`{d}`.`{t}`" if d is not None else f"`{t}`")
            rest = rest.lstrip()
            if not rest.startswith(","):
                break
            rest = rest[1:]
    elif upper[:4] == ["CREATE", "OR", "REPLACE", "TABLE"]:
        names = [query.split(None, 4)[-1]]
    elif upper[:2] in (["DROP", "DATABASE"], ["DROP", "SCHEMA"]):
        rest = query.split(None, 2)[-1] if len(words) > 2 else ""
        if rest.upper().startswith("IF EXISTS"):
            rest = rest[len("IF EXISTS") :]
        _, name, _ = _ident(rest)
        return [Truncate(name, "", seq, pos, gtid, query[:200])] if name else []
    else:
        return []
    out = []
    for n in names:
        d, t, _ = _ident(n)
        if t:
            out.append(Truncate(d if d is not None else db, t, seq, pos, gtid, query[:200]))
    return out


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
