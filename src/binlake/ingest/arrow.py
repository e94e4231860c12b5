"""Arrow schemas of the three views and of the lake's change tables, and the conversion of decoded values to them.

Views (``spark.read.format("binlake").option("view", ...)``):

* ``events``: one row per event (:data:`binlake.lake.tables.EVENTS`, the lake's ``_events`` table);
* ``tablemaps``: one row per run of identical table maps in a partition (:data:`TABLEMAPS`); ``map_id``
  identifies a layout, so ``groupBy("map_id")`` gives the distinct maps;
* ``changes``: one row per row change (:data:`CHANGES`); ``before``/``after`` are ``map<string,string>`` from
  column name to the value rendered as text (:func:`binlake.ingest.extract.render_value`; SQL NULL is a null map
  value, a column missing from a MINIMAL image is a missing key), so one schema holds every table.

Lake change tables use each column's own type (:func:`lake_type`), e.g. ``INT`` -> ``int64``, ``DECIMAL(10,2)``
-> ``decimal128(10,2)``, ``DATETIME`` -> ``timestamp[us]`` (no zone), ``TIMESTAMP`` -> ``timestamp[us, UTC]``.

Example::

    >>> lake_type(Column.build(0, 3, b"")), lake_type(Column.build(0, 246, b"\\x0a\\x02"))
    (DataType(int64), Decimal128Type(decimal128(10, 2)))
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from binlake.binlogs import BinlogFile
from binlake.coltypes import Column, ColumnType
from binlake.events.base import EventType
from binlake.ingest.extract import Changes, EventRecord, TableMapRecord, column_info, render_value
from binlake.lake.tables import COLUMN, EVENTS, SEQ, UTC_TS
from binlake.values.row import ABSENT

__all__ = [
    "CHANGES",
    "TABLEMAPS",
    "change_batch",
    "event_batch",
    "lake_type",
    "safe_array",
    "tablemap_batch",
    "to_lake",
    "transpose",
    "utc_seconds",
]

T = ColumnType

TABLEMAPS = pa.schema(
    [
        ("file", pa.string()),
        ("file_seq", pa.int64()),
        ("first_pos", pa.int64()),
        ("last_pos", pa.int64()),
        ("occurrences", pa.int64()),
        ("map_id", pa.string()),
        ("table_id", pa.int64()),
        ("database", pa.string()),
        ("table", pa.string()),
        ("column_count", pa.int32()),
        ("primary_key", pa.list_(pa.string())),
        ("columns", pa.list_(COLUMN)),
    ]
)

CHANGES = pa.schema(
    [
        ("database", pa.string()),
        ("table", pa.string()),
        ("op", pa.string()),
        ("before", pa.map_(pa.string(), pa.string())),
        ("after", pa.map_(pa.string(), pa.string())),
        ("file", pa.string()),
        ("pos", pa.int64()),
        ("row", pa.int32()),
        ("gtid", pa.string()),
        ("ts", UTC_TS),
        ("seq", SEQ),
        ("map_id", pa.string()),
    ]
)


def _clean(value: object) -> object:
    """``value`` with every string made valid UTF-8 (undecodable bytes kept as ``\\xNN`` escapes)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_clean(v) for v in value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def safe_array(values: Sequence[object], t: pa.DataType) -> pa.Array:
    """``pa.array(values, t)``; names and texts decoded with surrogate escapes are cleaned on the (rare) failure."""
    try:
        return pa.array(values, t)
    except UnicodeEncodeError:
        return pa.array(_clean(values), t)


def utc_seconds(seconds: Sequence[int]) -> pa.Array:
    """Unix seconds as a ``timestamp[us, UTC]`` array (vectorised: no ``datetime`` per value)."""
    return pa.array(np.asarray(seconds, dtype=np.int64) * 1_000_000, pa.int64()).view(UTC_TS)


_TYPE_NAMES: pa.Array | None = None  # EventType.name_of(code) at index code, for every one-byte code


def _type_names(codes: np.ndarray[Any, Any]) -> pa.Array:
    """``EventType.name_of`` of each code, vectorised (a lookup array taken at the codes)."""
    global _TYPE_NAMES
    if _TYPE_NAMES is None:
        _TYPE_NAMES = pa.array([EventType.name_of(c) for c in range(256)], pa.string())
    return _TYPE_NAMES.take(pa.array(codes))


def event_batch(file: BinlogFile, records: Sequence[EventRecord]) -> pa.RecordBatch:
    """The ``events`` view rows of ``records`` (events of ``file``)."""
    n = len(records)
    hs = [r.event.header for r in records]
    codes = np.fromiter((h.type_code for h in hs), np.int32, n)
    cols: list[Any] = [
        pa.repeat(safe_array([file.name], pa.string())[0], n),
        pa.repeat(pa.scalar(file.seq, pa.int64()), n),
        [r.pos for r in records],
        [r.payload_offset for r in records],
        [None if r.payload_offset is not None else h.end_pos for r, h in zip(records, hs, strict=True)],
        _type_names(codes),
        pa.array(codes),
        [h.server_id for h in hs],
        utc_seconds([h.timestamp for h in hs]),
        [h.flags for h in hs],
        [r.gtid for r in records],
        [r.trx_pos for r in records],
        [r.trx_seq for r in records],
        [r.event.summary() for r in records],
    ]
    arrays = [c if isinstance(c, pa.Array) else safe_array(c, f.type) for c, f in zip(cols, EVENTS, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=EVENTS)


def tablemap_rows(file: BinlogFile, records: Sequence[TableMapRecord]) -> list[dict[str, object]]:
    """The ``tablemaps`` view rows as dicts (also the lake's ``_schema_history`` rows)."""
    out = []
    for r in records:
        tm = r.table_map
        names = tm.column_names
        out.append(
            {
                "file": file.name,
                "file_seq": file.seq,
                "first_pos": r.first_pos,
                "last_pos": r.last_pos,
                "occurrences": r.count,
                "map_id": r.map_id,
                "table_id": tm.table_id,
                "database": tm.schema,
                "table": tm.table,
                "column_count": tm.column_count,
                "primary_key": [names[i] for i in tm.primary_key],
                "columns": [column_info(c, n) for c, n in zip(tm.columns, names, strict=True)],
            }
        )
    return out


def tablemap_batch(file: BinlogFile, records: Sequence[TableMapRecord]) -> pa.RecordBatch:
    rows = tablemap_rows(file, records)
    try:
        return pa.RecordBatch.from_pylist(rows, schema=TABLEMAPS)
    except UnicodeEncodeError:
        return pa.RecordBatch.from_pylist([_clean(r) for r in rows], schema=TABLEMAPS)


def _image(names: list[str], image: tuple[object, ...] | None) -> list[tuple[str, str | None]] | None:
    if image is None:
        return None
    return [(n, None if v is None else render_value(v)) for n, v in zip(names, image, strict=True) if v is not ABSENT]


def change_batch(file: BinlogFile, chunks: Sequence[Changes], map_ids: dict[int, str]) -> pa.RecordBatch:
    """The ``changes`` view rows of ``chunks`` (one row per row change); ``map_ids`` maps ``id(table_map)`` to its
    :func:`~extract.map_id`."""
    names: dict[int, list[str]] = {}
    befores: list[object] = []
    afters: list[object] = []
    db: list[object] = []
    table: list[object] = []
    op: list[object] = []
    pos: list[object] = []
    row: list[object] = []
    gtid: list[object] = []
    ts: list[int] = []
    seq: list[object] = []
    mid: list[object] = []
    for c in chunks:
        key = id(c.table_map)
        n = names.get(key)
        if n is None:
            n = names[key] = c.table_map.column_names
        k = len(c.rows)
        for before, after in c.rows:
            befores.append(_image(n, before))
            afters.append(_image(n, after))
        for col, v in ((db, c.database), (table, c.table), (op, c.op), (pos, c.pos), (gtid, c.gtid)):
            col.extend([v] * k)
        ts.extend([c.ts] * k)
        row.extend(range(k))
        seq.extend(Decimal(c.seq + i) for i in range(k))
        mid.extend([map_ids[key]] * k)
    cols: list[Any] = [db, table, op, befores, afters, [file.name] * len(op), pos, row, gtid, utc_seconds(ts), seq, mid]
    arrays = [c if isinstance(c, pa.Array) else safe_array(c, f.type) for c, f in zip(cols, CHANGES, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=CHANGES)


# -- typed lake columns ------------------------------------------------------------------------------------------

_INTS = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.YEAR})


def lake_type(col: Column) -> pa.DataType:
    """The Arrow type of a column in the lake's change and current-state tables (``docs/formats/values.md``).

    Integers are ``int64`` whatever their declared width, on purpose: every TINYINT to INT UNSIGNED and every BIGINT
    value fits exactly; the commonest schema change, widening an integer (``INT`` -> ``BIGINT``, adding
    ``UNSIGNED``), leaves the lake column as it is (no Delta type widening, readers' schemas stay put); a MINIMAL or
    NO_LOG table map does not say the signedness a narrow type would need; and Parquet stores small values as
    compactly in ``int64`` (dictionary and bit-packed encodings: the same bytes for a TINYINT column as ``int16``).
    BIGINT UNSIGNED (and BIGINT of unlogged signedness), BIT(64) and SET masks are ``decimal128(20, 0)``, which holds
    every value up to 2**64 - 1 exactly.
    """
    t = col.real_type_code
    if t in _INTS:
        return pa.int64()
    if t == T.LONGLONG:
        return pa.int64() if col.unsigned is False else pa.decimal128(20, 0)  # unknown signedness: room for both
    if t == T.BIT:
        return pa.decimal128(20, 0) if (col.bits or 64) > 63 else pa.int64()
    if t == T.FLOAT:
        return pa.float32()
    if t == T.DOUBLE:
        return pa.float64()
    if t in (T.NEWDECIMAL, T.DECIMAL):
        p, s = col.precision, col.scale
        return pa.decimal128(p, s) if p is not None and s is not None and 0 < p <= 38 and s <= p else pa.string()
    if t in (T.DATE, T.NEWDATE):
        return pa.date32()
    if t in (T.DATETIME, T.DATETIME2):
        return pa.timestamp("us")
    if t in (T.TIMESTAMP, T.TIMESTAMP2):
        return UTC_TS
    if t == T.ENUM:
        return pa.string() if col.enum_values is not None else pa.int64()
    if t == T.SET:
        return pa.list_(pa.string()) if col.set_values is not None else pa.decimal128(20, 0)  # 64-member mask
    if t == T.GEOMETRY:
        return pa.struct([("srid", pa.int64()), ("wkb", pa.binary())])
    if t == T.VECTOR:
        return pa.list_(pa.float32())
    if col.is_character and not col.is_text:
        return pa.binary()
    return pa.string()  # CHAR/VARCHAR/TEXT in a known charset, JSON (as text), TIME (as text)


def _to_text(v: object) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    return render_value(v)


def _converter(t: pa.DataType, members: Sequence[str] | None = None) -> Callable[[object], object]:
    """Python value -> the value ``pa.array(..., t)`` accepts (zero dates and absent columns become null); a SET
    value's members in ``members`` order (the column's definition order) where given, else sorted."""
    if pa.types.is_string(t):
        return _to_text
    if pa.types.is_binary(t):
        return lambda v: v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogateescape")
    if pa.types.is_date(t):
        return lambda v: v if isinstance(v, dt.date) else None
    if pa.types.is_timestamp(t):
        return lambda v: v if isinstance(v, dt.datetime) else None
    if pa.types.is_decimal(t):
        return lambda v: Decimal(v) if isinstance(v, int | Decimal) else None
    if pa.types.is_list(t) and pa.types.is_string(t.value_type):
        if members is not None:
            return lambda v: [m for m in members if m in v] if isinstance(v, frozenset | set) else None
        return lambda v: sorted(v) if isinstance(v, frozenset | set) else None
    if pa.types.is_struct(t):
        return lambda v: {"srid": getattr(v, "srid", None), "wkb": getattr(v, "wkb", None)}
    return lambda v: v


_TEMPORAL_OK = {pa.types.is_date: (dt.date, dt.datetime, type(None)), pa.types.is_timestamp: (dt.datetime, type(None))}


def _direct(t: pa.DataType, values: Values) -> bool:
    """Whether ``pa.array(values, t)`` gives what converting value by value gives, or refuses: true of types whose
    converter is the identity for every value ``pa.array`` accepts (a string column holding ``bytes`` that are not
    UTF-8, a zero date, ``ABSENT``: refused).  Dates and timestamps only when every value is one (``pa.array`` would
    take a number as days or microseconds since 1970 where the converter gives null)."""
    for test, kinds in _TEMPORAL_OK.items():
        if test(t):
            return set(map(type, values)) <= set(kinds)
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_decimal(t)
    )


Values = Sequence[object] | np.ndarray[Any, Any]  # one column: a list, or a numpy object array


_INTS_OK = {int, type(None)}


def _whole_decimal(values: Values, t: pa.DataType) -> pa.Array:
    """Integers (BIGINT UNSIGNED, BIT, SET masks) as ``decimal128(p <= 20, 0)`` through a 64-bit integer array:
    ~4x faster than ``pa.array`` building each decimal.  Negative values go through int64; a value out of both
    ranges raises ``OverflowError``."""
    try:
        return pa.array(values, pa.uint64()).cast(t)
    except OverflowError:
        return pa.array(values, pa.int64()).cast(t)


def to_lake(values: Values, t: pa.DataType, members: Sequence[str] | None = None) -> pa.Array:
    """One column of values (``None``/``ABSENT`` -> null) as an Arrow array of type ``t`` (``members``: a SET
    column's members, which orders each value's).

    >>> to_lake([1, None, ABSENT], pa.int64()).to_pylist(), to_lake([b"a", "\u00e9"], pa.string()).to_pylist()
    ([1, None, None], ['a', 'é'])
    >>> to_lake([frozenset({"b", "c"})], pa.list_(pa.string()), ("c", "b", "a")).to_pylist()
    [['c', 'b']]
    """
    if _direct(t, values):
        try:
            if pa.types.is_decimal(t) and t.scale == 0 and t.precision <= 20 and set(map(type, values)) <= _INTS_OK:
                return _whole_decimal(values, t)
            return pa.array(values, t)
        except (TypeError, ValueError, OverflowError):  # ArrowTypeError, ArrowInvalid, UnicodeEncodeError: one by one
            pass
    conv = _converter(t, members)
    return safe_array([None if v is None or v is ABSENT else conv(v) for v in values], t)


def transpose(images: list[tuple[object, ...]], width: int) -> list[list[object]]:
    """Row images (tuples of ``width`` values) as ``width`` column lists (``map(itemgetter(i), ...)`` per column:
    faster than ``zip(*images)`` or a 2-d numpy object array on rows of ``Decimal``, ``datetime`` and text).

    >>> transpose([(1, "a"), (2, None)], 2)
    [[1, 2], ['a', None]]
    """
    return [list(map(itemgetter(i), images)) for i in range(width)]
