"""Lake data columns built in C straight from rows-event bytes: no Python object per value.

The tuple path of ``binlake ingest`` decodes each rows event to tuples (``RowsEvent.rows()``), transposes them
and converts each column with :func:`binlake.ingest.arrow.to_lake`.  This module gives the same Arrow arrays from
the compiled ``binlake._columnar`` (``_columnar.c``): a :class:`ColumnTable` holds growable Arrow buffers of one
lake table's target columns; :func:`plan_for` compiles, once per (layout, change kind, columns-present bitmaps),
how each present column's stored value is read and which target it feeds; ``ColumnTable.append(plan, rows_data)``
appends every row image of a rows event as one output row (insert: after images; delete: before images; update:
before then after image of each row), and :meth:`ColumnTable.finish` returns the arrays (zero-copy from the
buffers).  Targets no present column feeds are NULL, as ``to_lake`` makes :data:`~binlake.values.row.ABSENT`.

Supported (column, target) pairs (anything else: :func:`plan_for` returns ``None`` and the caller keeps the tuple
path for that layout): integers of every size and sign, YEAR, BIT, ENUM/SET without member names -> ``int64``
when every value fits, ``decimal128(p, 0)`` when every value has at most ``p`` digits; FLOAT -> ``float32`` /
``float64``; DOUBLE -> ``float64``; DATE -> ``date32``; DATETIME(n) -> ``timestamp[us]``; TIMESTAMP(n) ->
``timestamp[us, tz=UTC]``; DECIMAL(p, s) -> ``decimal128(P >= p, s)``; CHAR/VARCHAR/TEXT in utf8mb3/utf8mb4 ->
``string``; BINARY/VARBINARY/BLOB (charset binary or unknown) -> ``binary`` (BINARY(n) padded to ``n`` with
``\\0`` as its converter does).  Zero or invalid dates and datetimes and the zero TIMESTAMP are NULL, as
``to_lake`` makes :class:`~binlake.values.temporal.InvalidDate`/``InvalidDatetime``.

``append`` returns ``None`` and appends nothing when the bytes are malformed or a value would not convert the same
way (text that is not UTF-8): the caller decodes that event by the tuple path, which converts it or raises the
precise :class:`~binlake.errors.BinlogError`.  PARTIAL_UPDATE_ROWS events (``RowsEvent.partial``) carry value
options in their after images and always take the tuple path.

Example::

    >>> from binlake.coltypes import Column
    >>> cols = (Column.build(0, 3, b"").with_(unsigned=False), Column.build(1, 15, b"\\x0a\\x00").with_(charset=45))
    >>> targets = [pa.int64(), pa.string()]
    >>> table, plan = table_for(targets), plan_for(cols, "insert", b"\\x03", None, [0, 1], targets)
    >>> table.append(plan, b"\\x00\\x07\\x00\\x00\\x00\\x02hi" + b"\\x02\\x08\\x00\\x00\\x00") if AVAILABLE else 2
    2
    >>> [a.to_pylist() for a in table.finish()] if AVAILABLE else [[7, 8], ["hi", None]]
    [[7, 8], ['hi', None]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from binlake._compiled import compiled
from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError
from binlake.values.decimal import precision_scale
from binlake.values.numeric import bit_width
from binlake.values.strings import BLOB_TYPES, VARLEN_TYPES, length_bytes, text_codec
from binlake.values.temporal import column_fsp
from binlake.wire import bits_lsb_first

if TYPE_CHECKING:
    from binlake._columnar import Plan

if TYPE_CHECKING:
    from binlake import _columnar
else:  # the compiled builder (src/binlake/_columnar.c), when it was built and is not turned off
    _columnar = compiled("_columnar")

AVAILABLE = _columnar is not None
"""The compiled ``binlake._columnar`` is built and ``BINLAKE_PURE_PYTHON`` is not set."""

__all__ = ["AVAILABLE", "ColumnTable", "plan_for", "table_for"]

T = ColumnType


_INT_SIZES: dict[int, int] = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}
# stored sizes enum_set._enum_reader / _set_reader take
_ENUM_SET_SIZES: dict[int, tuple[int, ...]] = {T.ENUM: (1, 2), T.SET: (1, 2, 3, 4, 8)}
# length-prefixed strings read as stored (MariaDB's compressed columns are not: their converter inflates them)
_STRINGS = (VARLEN_TYPES | BLOB_TYPES) - {T.VARCHAR_COMPRESSED, T.BLOB_COMPRESSED}
_UTC_US = pa.timestamp("us", tz="UTC")
_NAIVE_US = pa.timestamp("us")


def _akind(t: pa.DataType) -> int | None:
    """The ``_columnar`` buffer kind of an Arrow target type (its ``A_*`` constants), ``None`` for types it does not
    build (only called where the extension is there)."""
    if pa.types.is_decimal128(t):
        return _columnar.A_DEC128
    if pa.types.is_timestamp(t):
        return _columnar.A_TIMESTAMP if t in (_UTC_US, _NAIVE_US) else None
    simple = {
        pa.int64(): _columnar.A_INT64,
        pa.float32(): _columnar.A_FLOAT32,
        pa.float64(): _columnar.A_FLOAT64,
        pa.date32(): _columnar.A_DATE32,
    }
    if t in simple:
        return simple[t]
    return _columnar.A_VAR if t in (pa.string(), pa.binary()) else None


def _akinds(targets: Sequence[pa.DataType]) -> tuple[int, ...] | None:
    kinds = tuple(_akind(t) for t in targets)
    return None if None in kinds else kinds  # type: ignore[return-value]


def _int_target(lo: int, hi: int) -> Callable[[pa.DataType], bool]:
    """Targets every integer in ``[lo, hi]`` converts to exactly: int64, or a decimal128 of scale 0 and enough
    digits (``to_lake`` goes through uint64/int64 or ``Decimal``)."""

    def fits(t: pa.DataType) -> bool:
        if t == pa.int64():
            return bool(lo >= -(1 << 63) and hi < 1 << 63)
        return bool(pa.types.is_decimal128(t) and t.scale == 0 and len(str(max(-lo, hi))) <= t.precision)

    return fits


def _is(*types: pa.DataType) -> Callable[[pa.DataType], bool]:
    return lambda t: t in types


def _source(col: Column) -> tuple[int, int, int, Callable[[pa.DataType], bool]] | None:
    """``(vkind, p1, p2, accepts)`` of a column: how C reads its stored value (the extension's ``V_*`` constants)
    and which target types take it; ``None`` for columns C does not read.
    Raises :class:`BinlogError` for metadata no server writes."""
    code = col.real_type_code
    if code in _INT_SIZES:
        size, signed = _INT_SIZES[code], col.unsigned is not True  # numeric._int_reader: unknown sign reads signed
        half = 1 << (8 * size - 1)
        return (
            _columnar.V_INT,
            size,
            int(signed),
            _int_target(-half if signed else 0, half - 1 if signed else 2 * half - 1),
        )
    if code in _ENUM_SET_SIZES:
        names = col.enum_values if code == T.ENUM else col.set_values
        size = col.length or 0
        if names is not None or size not in _ENUM_SET_SIZES[code]:
            return None
        return _columnar.V_INT, size, 0, _int_target(0, (1 << (8 * size)) - 1)
    if code == T.YEAR:
        return _columnar.V_YEAR, 0, 0, _int_target(0, 1900 + 255)
    if code == T.BIT:
        bits = bit_width(col)
        return (_columnar.V_BIT, bits, 0, _int_target(0, (1 << bits) - 1)) if 0 <= bits <= 64 else None
    if code == T.FLOAT:
        return _columnar.V_FLOAT, 0, 0, _is(pa.float32(), pa.float64())
    if code == T.DOUBLE:
        return _columnar.V_DOUBLE, 0, 0, _is(pa.float64())
    if code in (T.DATE, T.NEWDATE):
        return _columnar.V_DATE, 0, 0, _is(pa.date32())
    if code == T.DATETIME2:
        return _columnar.V_DATETIME2, column_fsp(col), 0, _is(_NAIVE_US)
    if code == T.TIMESTAMP2:
        return _columnar.V_TIMESTAMP2, column_fsp(col), 0, _is(_UTC_US)
    if code == T.NEWDECIMAL:
        p, s = precision_scale(col)
        fits = lambda t: pa.types.is_decimal128(t) and t.scale == s and t.precision >= p  # noqa: E731
        return (_columnar.V_DECIMAL, p, s, fits) if p <= 38 else None
    if code in _STRINGS:
        nlen = length_bytes(col)
        if not 1 <= nlen <= 4:
            return None
        if not col.is_text:  # bytes; strings._string_converter pads BINARY(n)
            pad = col.length or 0 if col.charset == 63 and code == T.STRING else 0
            return _columnar.V_BYTES, nlen, pad, _is(pa.binary())
        if text_codec(col) == "utf-8":
            return _columnar.V_TEXT, nlen, 0, _is(pa.string())
    return None


def plan_for(
    columns: tuple[Column, ...],
    kind: str,
    before: bytes,
    after: bytes | None,
    index: Sequence[int | None],
    targets: Sequence[pa.DataType],
) -> Plan | None:
    """The compiled plan of ``kind`` rows (``"insert"``, ``"delete"``, ``"update"``) of ``columns`` with these
    columns-present bitmaps, for a :class:`ColumnTable` of ``targets``: ``index[t]`` is the index in ``columns`` of
    the column feeding target ``t`` (``None``: NULL).  ``None`` when the extension is not there or some present
    column cannot be read by it, or not converted the way ``to_lake`` converts it to its target (the caller then
    uses the tuple path for this layout).  Columns fed to no target are still read and checked.

    Build it once per layout and reuse it (nothing is cached here); use it only with a table of the same
    ``targets`` (the extension checks the buffer kinds, not the decimal precision or scale).
    """
    if _columnar is None or len(index) != len(targets):
        return None
    kinds = _akinds(targets)
    if kinds is None:
        return None
    feeds: dict[int, int] = {}
    for t, j in enumerate(index):
        if j is not None:
            if j in feeds:  # one column feeding two targets
                return None
            feeds[j] = t
    if kind not in ("insert", "delete", "update"):
        return None
    bitmaps = [before, after] if kind == "update" else [before]
    images: list[tuple[tuple[int, int, int, int], ...]] = []
    for bitmap in bitmaps:
        if bitmap is None or len(bitmap) < (len(columns) + 7) // 8:
            return None
        steps = []
        for j, (col, here) in enumerate(zip(columns, bits_lsb_first(bitmap, len(columns)), strict=True)):
            if not here:
                continue
            try:
                source = _source(col)
            except BinlogError:  # impossible metadata: the tuple path raises it
                return None
            target = feeds.get(j, -1)
            if source is None or (target >= 0 and not source[3](targets[target])):
                return None
            steps.append((source[0], target, source[1], source[2]))
        images.append(tuple(steps))
    return _columnar.Plan(kinds, tuple(images))


class ColumnTable:
    """Growable Arrow columns of ``targets``, filled by :meth:`append` and handed over by :meth:`finish`.

    ``append(plan, rows_data)`` appends the row images of one rows event (``RowsEvent.rows_data``) and returns how
    many output rows it appended, or ``None`` with nothing appended when the tuple path must decode the event.
    """

    __slots__ = ("_table", "append", "targets")

    append: Callable[[Plan, bytes], int | None]

    def __init__(self, targets: Sequence[pa.DataType], kinds: tuple[int, ...]) -> None:
        assert _columnar is not None
        self.targets = tuple(targets)
        self._table = _columnar.Table(kinds)
        self.append = self._table.append

    def __len__(self) -> int:
        """Rows appended since the last :meth:`finish`."""
        return self._table.length

    def finish(self) -> list[pa.Array]:
        """One array per target of every row appended so far (zero-copy from the buffers); empties the table."""
        out = []
        for t, (n, nulls, valid, data, offsets) in zip(self.targets, self._table.finish(), strict=True):
            bitmap = None if valid is None else pa.py_buffer(valid)
            if offsets is None:
                buffers = [bitmap, pa.py_buffer(data)]
            else:
                buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)]
            out.append(pa.Array.from_buffers(t, n, buffers, null_count=nulls))
        return out


def table_for(targets: Sequence[pa.DataType]) -> ColumnTable | None:
    """An empty :class:`ColumnTable` of ``targets``; ``None`` when the extension is not there or some target type
    is not one it builds (int64, decimal128, float32/64, date32, timestamp[us] naive or UTC, string, binary)."""
    if _columnar is None:
        return None
    kinds = _akinds(targets)
    return None if kinds is None else ColumnTable(targets, kinds)
