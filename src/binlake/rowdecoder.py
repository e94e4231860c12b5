"""Row images to tuples: one decoder per table layout, built once and reused for every row.

A row image (``Rows_log_event::write_row`` / ``pack_row`` in ``sql/rpl_record.cc``) is a null bitmap with one bit
per column *present in the image* (LSB first, ``(present + 7) / 8`` bytes), then the stored value of each present
non-NULL column in table order.  The after image of a PARTIAL_UPDATE_ROWS_EVENT first carries
``binlog_row_value_options`` (packed integer) and, when it has ``PARTIAL_JSON_UPDATES``, one bit per JSON column of
the table saying which ones hold JSON diffs instead of a document (``Rows_log_event::print_verbose_one_row`` in
``sql/log_event.cc``).

:func:`row_decoder` makes, per ``(columns, kind, present bitmaps, typed)``, a :class:`RowDecoder` holding each
present column's reader (:func:`binlake.values.reader_for`) and, typed, its converter (:func:`binlake.values.typed`).
Its Python decoder (:meth:`RowDecoder.rows_python`) reads an image column by column with them: it is the reference,
and every error names the column and its offset (a :class:`~binlake.errors.BinlogError`, never a foreign exception).

When the extension ``binlake._speedups`` (``_speedups.c``) is built and ``BINLAKE_PURE_PYTHON`` is not set
(:data:`ACCELERATED`), each decoder also holds a compiled plan of its layout (``_Image.plan``: per column a kind of
the extension's enum, read from its ``K_*`` constants, its parameters and the Python reader and converter for the
values C does not build) that decodes the whole event ~6x faster; on any problem with the bytes it returns
``None`` and the Python decoder runs, so results and errors are the Python decoder's (``tests/rows/test_speedups.py``
checks both against each other on random layouts and bytes).

Example::

    >>> from binlake.coltypes import Column
    >>> cols = (Column.build(0, 3, b""), Column.build(1, 15, b"\\x0a\\x00"))
    >>> dec = row_decoder(cols, "insert", b"\\x03", typed=False)
    >>> dec.rows(b"\\x00\\x07\\x00\\x00\\x00\\x02hi" + b"\\x02\\x08\\x00\\x00\\x00")
    [(None, (7, b'hi')), (None, (8, None))]
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from binlake._compiled import compiled
from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError, MalformedError, TruncatedError
from binlake.values import reader_for
from binlake.values import typed as converter_for
from binlake.values.decimal import precision_scale
from binlake.values.json_binary import apply_json_diffs, parse_json_diffs
from binlake.values.numeric import bit_width
from binlake.values.row import ABSENT, Converter, Reader, Row
from binlake.values.strings import BLOB_TYPES, VARLEN_TYPES, length_bytes, text_codec
from binlake.values.temporal import column_fsp
from binlake.wire import bits_lsb_first, read_packed_int

if TYPE_CHECKING:
    from binlake import _speedups
else:  # the compiled decoder (src/binlake/_speedups.c), when it was built and is not turned off
    _speedups = compiled("_speedups")

ACCELERATED = _speedups is not None
"""Row changes are decoded by the compiled ``binlake._speedups`` (built by ``pip install``; off when the environment
sets ``BINLAKE_PURE_PYTHON``), the Python decoder being the fallback and the reference."""

__all__ = [
    "ACCELERATED",
    "CACHE_SIZE",
    "PARTIAL_JSON_UPDATES",
    "RowDecoder",
    "fixed_kinds",
    "partial_json_reader",
    "partial_updates",
    "plan_mode",
    "row_decoder",
]

T = ColumnType
PARTIAL_JSON_UPDATES = 1  # enum_binlog_row_value_options (sql/system_variables.h)
CACHE_SIZE = 512

Params = Callable[[Column], tuple[int, int]]
"""The two integer parameters of a column's kind in ``_speedups``' plans (see the enum in ``_speedups.c``)."""


def _no_params(col: Column) -> tuple[int, int]:
    return 0, 0


def _fsp(col: Column) -> tuple[int, int]:
    return column_fsp(col), 0


def _bit(col: Column) -> tuple[int, int]:
    return (bit_width(col) + 7) // 8, bit_width(col)


_INT_SIZES: dict[int, int] = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}


def _int_params(col: Column) -> tuple[int, int]:
    return _INT_SIZES[col.real_type_code], int(col.unsigned is not True)  # unlogged signedness reads as signed


def _enum_set_params(col: Column) -> tuple[int, int]:
    return col.length or 0, 0


@functools.cache
def fixed_kinds(ext: ModuleType) -> dict[int, tuple[int, Params]]:
    """The kinds both of ``_speedups``' plans (``Plan`` here, ``TextPlan`` in :mod:`binlake.render.dump.rowtext`)
    read alike: per real type, the kind (the extension ``ext``'s ``K_*`` constants) and a function of the column
    giving its two parameters."""
    return {
        T.FLOAT: (ext.K_FLOAT, _no_params),
        T.DOUBLE: (ext.K_DOUBLE, _no_params),
        T.YEAR: (ext.K_YEAR, _no_params),
        T.BIT: (ext.K_BIT, _bit),
        T.DATE: (ext.K_DATE, _no_params),
        T.NEWDATE: (ext.K_DATE, _no_params),
        T.DATETIME2: (ext.K_DATETIME2, _fsp),
        T.TIMESTAMP2: (ext.K_TIMESTAMP2, _fsp),
        T.TIME2: (ext.K_TIME2, _fsp),
        T.NEWDECIMAL: (ext.K_DECIMAL, precision_scale),
    }


@functools.cache
def _plan_kinds(ext: ModuleType) -> dict[int, tuple[int, Params]]:
    """The kinds of ``Plan``'s columns: :func:`fixed_kinds`, integers, ENUM and SET; every type not listed is read
    by its Python reader (``K_PY``), strings by ``K_STRING`` (:meth:`_Image.plan`)."""
    return {
        **{code: (ext.K_INT, _int_params) for code in _INT_SIZES},
        **fixed_kinds(ext),
        T.ENUM: (ext.K_UINT, _enum_set_params),
        T.SET: (ext.K_UINT, _enum_set_params),
    }


# Strings whose typed value is their UTF-8 text when they have a utf8 charset (the C plan decodes those itself).
_TEXT = frozenset({T.STRING, T.VARCHAR, T.VAR_STRING, T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})


def _length_bytes(col: Column) -> int | None:
    """Bytes of the length prefix of a string or blob column (``None`` for other types)."""
    return length_bytes(col) if col.real_type_code in VARLEN_TYPES or col.real_type_code in BLOB_TYPES else None


def _utf8_text(col: Column, typed: bool) -> bool:
    """Does the typed value of this string column decode with plain UTF-8 (utf8mb3/utf8mb4 charsets)?

    Then ``bytes.decode('utf-8')`` gives what its converter gives (``collations.decode``) whenever it succeeds, and
    the converter is only needed for bytes that are not UTF-8.
    """
    return typed and col.real_type_code in _TEXT and text_codec(col) == "utf-8"


def _name(col: Column) -> str:
    """How errors name a column: ``column 2 `name` (TYPE)``."""
    return f"column {col.index + 1}" + (f" `{col.name}`" if col.name else "") + f" ({col.real_type})"


class _Image:
    """One image layout: its present columns in image order, each with its reader and converter."""

    __slots__ = ("columns", "nbytes", "readers", "steps", "template")

    def __init__(self, columns: tuple[Column, ...], present: bytes, typed: bool, partial: frozenset[int]):
        here = bits_lsb_first(present, len(columns))
        self.columns = columns
        self.readers: list[tuple[Column, Reader, Converter | None]] = [
            (col, partial_json_reader(col), None)
            if col.index in partial
            else (col, reader_for(col), converter_for(col) if typed else None)
            for col, h in zip(columns, here, strict=True)
            if h
        ]
        self.nbytes = (len(self.readers) + 7) // 8
        # (null-bitmap bit, output index, reader, converter) per present column
        self.steps = [(1 << bit, col.index, r, conv) for bit, (col, r, conv) in enumerate(self.readers)]
        self.template: list[object] = [ABSENT] * len(columns)

    def plan(self, typed: bool, ext: ModuleType) -> tuple[tuple[int, int, int, int, Reader, Converter | None], ...]:
        """The image for the extension ``ext``'s ``Plan``: per present column ``(kind, index, p1, p2, reader,
        converter)`` (images with partial JSON columns have no plan)."""
        kinds = _plan_kinds(ext)
        out = []
        for col, reader, conv in self.readers:
            nlen = _length_bytes(col)
            kind, p1, p2 = ext.K_PY, 0, 0
            if nlen is not None:
                kind, p1, p2 = ext.K_STRING, nlen, int(_utf8_text(col, typed))
            elif col.real_type_code in kinds:
                kind, params = kinds[col.real_type_code]
                p1, p2 = params(col)
            out.append((kind, col.index, p1, p2, reader, conv))
        return tuple(out)

    def read(self, buf: bytes, pos: int) -> tuple[Row, int]:
        """The image at ``pos`` and the position after it; the error names the column that failed and its offset."""
        if not self.steps:
            raise MalformedError("row image of no columns in non-empty rows data", offset=pos)
        blen = len(buf)
        end = pos + self.nbytes
        if end > blen:
            raise TruncatedError(f"row image null bitmap needs {self.nbytes} bytes, {blen - pos} left", offset=pos)
        nulls = int.from_bytes(buf[pos:end], "little")
        pos = end
        values = self.template.copy()
        for bit, index, reader, conv in self.steps:
            if nulls & bit:
                values[index] = None
                continue
            try:
                value, end = reader(buf, pos)
                if conv is not None:
                    value = conv(value)
            except Exception as e:  # a reader met bytes it did not expect: malformed, never a foreign error
                raise self._error(index, pos, e) from None
            if end > blen:
                raise TruncatedError(
                    f"{_name(self.columns[index])} at byte {pos} runs past the end of the rows", offset=pos
                )
            values[index] = value
            pos = end
        return tuple(values), pos

    def _error(self, index: int, pos: int, e: Exception) -> BinlogError:
        """The error of the column at ``index`` whose value at ``pos`` raised ``e``."""
        where = f"{_name(self.columns[index])} at byte {pos} of the rows"
        if isinstance(e, BinlogError):
            return type(e)(f"{where}: {e.message}", offset=pos)
        return MalformedError(f"{where}: {e!r}", offset=pos)


class RowDecoder:
    """The decoder of one layout: ``columns``, the change ``kind`` and its columns-present bitmaps.

    ``kind`` is ``"insert"``/``"delete"`` (one image per row, bitmap ``before``), ``"update"`` (before and after
    images) or ``"image"`` (:meth:`read_image` of single images, used for PARTIAL_UPDATE_ROWS after images whose
    JSON columns in ``partial`` hold diffs).  ``accelerated`` says whether :meth:`rows` runs the compiled decoder
    first.
    """

    __slots__ = ("_images", "_plan", "columns", "kind", "typed")

    def __init__(
        self,
        columns: tuple[Column, ...],
        kind: str,
        before: bytes,
        after: bytes | None,
        typed: bool,
        partial: frozenset[int] = frozenset(),
    ) -> None:
        self.columns = columns
        self.kind = kind
        self.typed = typed
        self._images = [_Image(columns, before, typed, partial)]
        if kind == "update":
            assert after is not None
            self._images.append(_Image(columns, after, typed, frozenset()))
        self._plan = None
        if _speedups is not None and kind != "image":
            mode = plan_mode(kind, _speedups)
            plans = tuple(img.plan(typed, _speedups) for img in self._images)
            self._plan = _speedups.Plan(mode, len(columns), ABSENT, plans)

    @property
    def accelerated(self) -> bool:
        return self._plan is not None

    def rows(self, buf: bytes) -> list[tuple[Row | None, Row | None]]:
        """Every ``(before, after)`` row change in ``buf`` (rows data of one event).

        The compiled decoder returns ``None`` for bytes it does not take (anything that is an error): the Python
        decoder then runs and raises the precise :class:`~binlake.errors.BinlogError`.
        """
        if self._plan is not None:
            out = self._plan.rows(buf)
            if out is not None:
                return out
        return self.rows_python(buf)

    def rows_python(self, buf: bytes) -> list[tuple[Row | None, Row | None]]:
        """:meth:`rows` by the Python decoder alone (the reference the compiled one is tested against)."""
        out: list[tuple[Row | None, Row | None]] = []
        append = out.append
        pos, blen = 0, len(buf)
        first = self._images[0].read
        if self.kind == "update":
            second = self._images[1].read
            while pos < blen:
                before, pos = first(buf, pos)
                after, pos = second(buf, pos)
                append((before, after))
        elif self.kind == "delete":
            while pos < blen:
                before, pos = first(buf, pos)
                append((before, None))
        else:
            while pos < blen:
                after, pos = first(buf, pos)
                append((None, after))
        return out

    def read_image(self, buf: bytes, pos: int) -> tuple[Row, int]:
        """One image at ``pos`` (``kind == "image"``) and the position after it."""
        return self._images[0].read(buf, pos)


def plan_mode(kind: str, ext: ModuleType) -> int:
    """The mode of the extension ``ext``'s ``Plan`` for rows of ``kind`` (its ``MODE_*`` constants)."""
    modes: dict[str, int] = {"insert": ext.MODE_INSERT, "delete": ext.MODE_DELETE, "update": ext.MODE_UPDATE}
    return modes[kind]


def partial_json_reader(col: Column) -> Reader:
    """Reads a JSON column's diffs: the same length prefix as the document (``col.length`` bytes), then diffs."""
    nbytes = col.length or 4

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        start = pos + nbytes
        if start > len(buf):
            raise TruncatedError("JSON diff length runs past the end of the rows", offset=pos)
        end = start + int.from_bytes(buf[pos:start], "little")
        return parse_json_diffs(buf, start, end), end

    return read


# -- the cache: a decoder per layout ---------------------------------------------------------------------------

_Key = tuple[str, bytes, bytes | None, bool, frozenset[int]]
_cache: OrderedDict[tuple[tuple[Column, ...], _Key], RowDecoder] = OrderedDict()
# The same table map decoded again returns the same ``columns`` tuple (table_map._layout is cached), so most
# lookups hit this identity-keyed front, which hashes no Column.
_by_id: dict[tuple[int, _Key], RowDecoder] = {}


def row_decoder(
    columns: tuple[Column, ...],
    kind: str,
    before: bytes,
    after: bytes | None = None,
    typed: bool = True,
    partial: frozenset[int] = frozenset(),
) -> RowDecoder:
    """The decoder of ``kind`` rows of ``columns`` with these columns-present bitmaps, made on first use and kept
    in an LRU of :data:`CACHE_SIZE` layouts."""
    key: _Key = (kind, before, after, typed, partial)
    dec = _by_id.get((id(columns), key))
    if dec is not None and dec.columns is columns:
        return dec
    dec = _cache.get((columns, key))
    if dec is None:
        dec = RowDecoder(columns, kind, before, after, typed, partial)
        _cache[(columns, key)] = dec
        if len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end((columns, key))
    if len(_by_id) >= CACHE_SIZE:
        _by_id.clear()
    _by_id[(id(columns), key)] = dec
    return dec


# -- PARTIAL_UPDATE_ROWS -----------------------------------------------------------------------------------------


def partial_updates(
    columns: tuple[Column, ...], before_bits: bytes, after_bits: bytes | None, data: bytes, typed: bool
) -> list[tuple[Row | None, Row | None]]:
    """The row changes of a PARTIAL_UPDATE_ROWS event's rows ``data``: each after image starts with value options
    and partial-JSON bits.

    A JSON column sent as diffs comes back, typed, as the before image's document with every diff applied (JSON
    text, as the JSON converter returns); raw, and wherever the before image lacks the document, as the list of
    :class:`~binlake.values.json_binary.JsonDiff` itself.
    """
    end = len(data)
    after_bits = after_bits or before_bits
    present_after = bits_lsb_first(after_bits, len(columns))
    json_cols = [c.index for c in columns if c.real_type_code == T.JSON]
    nbytes = (len(json_cols) + 7) // 8
    read_before = row_decoder(columns, "image", before_bits, typed=typed).read_image
    out: list[tuple[Row | None, Row | None]] = []
    pos = 0
    while pos < end:
        before, pos = read_before(data, pos)
        options, pos = read_packed_int(data, pos, end)
        if options is None:
            raise MalformedError("binlog_row_value_options is the NULL marker", offset=pos - 1)
        partial: frozenset[int] = frozenset()
        if options & PARTIAL_JSON_UPDATES:
            if pos + nbytes > end:
                raise TruncatedError("partial-JSON bitmap runs past the end of the rows", offset=pos)
            bits = bits_lsb_first(data[pos : pos + nbytes], len(json_cols))
            pos += nbytes
            partial = frozenset(i for i, b in zip(json_cols, bits, strict=True) if b and present_after[i])
        at = pos
        after, pos = row_decoder(columns, "image", after_bits, typed=typed, partial=partial).read_image(data, pos)
        if partial and typed:
            values = list(after)
            for i in sorted(partial):
                diffs, base = values[i], before[i]
                if isinstance(diffs, list) and isinstance(base, str | bytes):
                    try:
                        values[i] = apply_json_diffs(base, diffs)
                    except BinlogError as e:
                        raise type(e)(f"column {i + 1}: {e.message}", offset=at) from None
            after = tuple(values)
        out.append((before, after))
    return out
