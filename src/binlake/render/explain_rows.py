"""The row images of a rows event, field by field, for ``binlake explain``.

A rows event's decoder (:func:`binlake.events.rows.decode_rows`) reads the fixed part and the columns-present
bitmaps and keeps the row images as one ``rest of the event`` field.  :class:`RowImages` gives those fields their
meanings and splits the images: each row change is a null bitmap (one bit per column present in the image, LSB
first; ``Rows_log_event::write_row`` / ``pack_row`` in sql/rpl_record.cc), then the stored value of each present
non-NULL column, its length prefix apart where it has one.  An update has a before image (``WHERE``) and an after
image (``SET``); the after image of a PARTIAL_UPDATE_ROWS_EVENT starts with ``binlog_row_value_options`` and, with
PARTIAL_JSON_UPDATES, one bit per JSON column saying which ones hold diffs (``Rows_log_event::print_verbose_one_row``
in sql/log_event.cc).  A MariaDB compressed rows event (``binlog_buf_compress`` in sql/log_event.cc) shows its
compression header and zlib stream as the event's bytes, and its images in :attr:`RowImages.uncompressed`, offsets
counted in the uncompressed rows as binlake's errors count them.

Values are read by the value families' readers (:func:`binlake.values.reader_for`, not the row decoder),
shown as ``binlake dump -vv`` prints them (``@3='tiny' /* BLOB/TEXT meta=2 nullable=1 is_null=0 */``, the text of
:mod:`binlake.render.dump.rowtext`) and as the typed Python value (:func:`binlake.values.typed`).  Every span is read
through a :class:`~binlake.trace.TracingCursor`, so the fields still tile the event's bytes; rows past ``limit``
are one field ``… M more rows (K bytes)``.

Example (``INSERT INTO comp VALUES (3, 3, 'tiny', 'x')``, a WRITE_ROWS_EVENT_V1; cut to 100 columns)::

    $ binlake explain corpus-bin.000009 --at 1370
    ...
    │ 28  │ 0f       │ columns-present bitmap │ columns in the image: all 4                      │
    │ 29  │ f0       │ row 1 null bitmap      │ one bit per column present (4): none NULL        │
    │ 30  │ 03000000 │ row 1 @1 `id`          │ @1=3 /* INT meta=0 nullable=0 is_null=0 */ —     │
    │     │          │                        │ column 1 `id` (LONG), no metadata; Python 3      │
    ...
    │ 38  │ 0400     │ row 1 @3 `txt` length  │ 4 bytes of value follow (2-byte length prefix)   │
    │ 40  │ 74696e79 │ row 1 @3 `txt`         │ @3='tiny' /* BLOB/TEXT meta=2 nullable=1         │
    │     │          │                        │ is_null=0 */ — column 3 `txt` (BLOB), 2-byte     │
    │     │          │                        │ length prefix; Python 'tiny'                     │
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence

from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError, MalformedError, TruncatedError
from binlake.events.base import Event
from binlake.events.context import DecodeContext
from binlake.events.rows import ROWS_FLAGS, RowsEvent
from binlake.render.dump.rowtext import RENDER, line_texts
from binlake.render.explain_fields import Row, column_meta, field_row, flags_text, generic, label, n_bytes, plain
from binlake.rowdecoder import PARTIAL_JSON_UPDATES, partial_json_reader
from binlake.trace import TraceField, TracingCursor
from binlake.values import Reader, reader_for, typed
from binlake.values.json_binary import apply_json_diffs
from binlake.values.strings import BLOB_TYPES, VARLEN_TYPES, length_bytes
from binlake.wire import bits_lsb_first

__all__ = ["UNCOMPRESSED", "RowImages"]

T = ColumnType
UNCOMPRESSED = "uncompressed rows"  # the section of the rows of a compressed event
# Types whose stored value starts with a length prefix of ``length_bytes(col)`` bytes (Field_varstring::pack,
# Field_blob::pack; JSON, GEOMETRY and VECTOR are blobs on the wire)
_PREFIXED = VARLEN_TYPES | BLOB_TYPES | {T.JSON, T.GEOMETRY, T.VECTOR}
_CLIP = 120  # characters of a value's text shown in the text table (the JSON form has all of it)


class RowImages:
    """The meanings of one rows event's fields, its row images split into fields.

    :meth:`meaning` is an ``explain`` meaning function (:data:`binlake.render.explain.Meaning`); after it has seen
    the ``rest of the event`` field, :attr:`uncompressed` holds the rows of a compressed event and :attr:`error` the
    first problem met in the images.  ``limit`` row changes are shown in full (``None``: all).
    """

    def __init__(self, ev: RowsEvent, limit: int | None) -> None:
        self.ev = ev
        self.limit = limit
        self.uncompressed: list[Row] = []
        self.error: BinlogError | None = None

    def meaning(self, f: TraceField, ev: Event, ctx: DecodeContext) -> list[Row]:
        """The rows of one field of the event (``decode_rows``' labels)."""
        rows_ev, tm, v = self.ev, self.ev.table_map, f.value
        if f.name == "table_id":
            table = f"`{tm.schema}`.`{tm.table}`" if tm is not None else "no TABLE_MAP_EVENT in scope for it"
            return [field_row(f, f"{v}: {table}")]
        if f.name == "flags" and isinstance(v, int):
            return [field_row(f, flags_text(v, ROWS_FLAGS))]
        if f.name == "extra row info length" and isinstance(v, int):
            return [field_row(f, f"{n_bytes(v)}, these 2 included")]
        if f.name == "extra row info" and rows_ev.extra is not None:
            x = rows_ev.extra
            parts = (
                [f"NDB format {x.ndb_format}, {n_bytes(len(x.ndb_data or b''))}"] if x.ndb_format is not None else []
            )
            if x.partition_id is not None:
                parts.append(f"partition {x.partition_id}")
            if x.source_partition_id is not None:
                parts.append(f"from partition {x.source_partition_id}")
            return [field_row(f, ", ".join(parts) or generic(f))]
        if f.name == "column count":
            width = f"{v} columns"
            if tm is not None and tm.column_count != v:
                width += f", but its table map has {tm.column_count}"
            return [field_row(f, width)]
        if f.name.endswith("columns-present bitmap") and isinstance(v, bytes):
            which = (
                "after image" if f.name.startswith("after") else "before image" if rows_ev.kind == "update" else "image"
            )
            return [field_row(f, f"columns in the {which}: {self._present(v)}")]
        if f.name == "rest of the event":
            return self._rest(f)
        return [field_row(f)]

    def _present(self, bits: bytes) -> str:
        here = bits_lsb_first(bits, self.ev.column_count)
        cols = self._columns()
        if all(here):
            return f"all {len(here)}"
        names = [label(cols[i]) if cols is not None else f"col {i + 1}" for i, h in enumerate(here) if h]
        return f"{len(names)} of {len(here)}: " + (", ".join(names) or "none")

    def _columns(self) -> tuple[Column, ...] | None:
        tm = self.ev.table_map
        return tm.columns if tm is not None and tm.column_count == self.ev.column_count else None

    def _rest(self, f: TraceField) -> list[Row]:
        """The row images: split into fields, or one field saying why they cannot be."""
        ev, cols = self.ev, self._columns()
        if not ev.rows_data:
            return [field_row(f, "no row images")]
        if cols is None:
            why = "its table map has another column count" if ev.table_map is not None else "no table map in scope"
            return [field_row(f, f"row images ({n_bytes(len(ev.rows_data))}), not split: {why}")]
        if not ev.compressed:
            return _Walker(ev, cols, f.offset, self.limit).run(self._fail)
        self.uncompressed = [
            Row(UNCOMPRESSED, r.name, r.offset, r.raw, r.value, r.meaning)
            for r in _Walker(ev, cols, 0, self.limit).run(self._fail)
        ]
        return _compression(f, len(ev.rows_data))

    def _fail(self, e: BinlogError) -> None:
        self.error = self.error or e


def _compression(f: TraceField, size: int) -> list[Row]:
    """The compressed rows: ``binlog_buf_compress``'s header byte (0x80 | algorithm << 4 | length bytes), the
    uncompressed length big-endian in that many bytes, then the zlib stream (``binlog_buf_uncompress``)."""
    raw = f.raw
    lenlen = raw[0] & 0x07
    head = (
        f"0x{raw[0]:02x}: compressed (0x80), algorithm {(raw[0] & 0x70) >> 4} (zlib), "
        f"{n_bytes(lenlen)} of uncompressed length follow"
    )
    rows = [Row("", "compression header", f.offset, raw[:1], raw[0], head)]
    rows.append(
        Row("", "uncompressed length", f.offset + 1, raw[1 : 1 + lenlen], size, f"{n_bytes(size)} (big-endian)")
    )
    stream = raw[1 + lenlen :]
    meaning = (
        f"zlib stream: {n_bytes(len(stream))} -> {n_bytes(size)} of row images, explained below with offsets in "
        "the uncompressed rows"
    )
    rows.append(Row("", "compressed rows", f.offset + 1 + lenlen, stream, None, meaning))
    return rows


class _Walker:
    """Reads the row changes of ``ev.rows_data`` value by value through a :class:`TracingCursor`, whose offsets are
    those of the event (``base``: the offset of ``rows_data[0]``; 0 for a compressed event's uncompressed rows)."""

    def __init__(self, ev: RowsEvent, cols: tuple[Column, ...], base: int, limit: int | None) -> None:
        self.ev, self.cols, self.base, self.limit = ev, cols, base, limit
        self.trace: list[object] = []
        self.c = TracingCursor(ev.rows_data, base=-base, trace=self.trace)
        self.rows: list[Row] = []
        self.record = True
        self.readers: dict[tuple[int, bool], Reader] = {}

    def run(self, fail: Callable[[BinlogError], None]) -> list[Row]:
        """The fields of the row images; a problem is passed to ``fail`` and ends the walk with one field over the
        bytes left."""
        c = self.c
        n, shown_end = 0, 0
        what = "row 1"
        try:
            while c.pos < c.end:
                if self.limit is not None and n == self.limit and self.record:
                    self.record, shown_end = False, c.pos
                n += 1
                what = f"row {n}"
                self._change(what)
                if self.record:
                    shown_end = c.pos
        except BinlogError as e:
            err = self._error(e)
            fail(err)
            at = shown_end
            if self.record and self.rows:
                at = self.rows[-1].offset + self.rows[-1].size - self.base
            self.rows.append(self._span_row(at, "(not decoded)", None, f"{what}: {err.message}"))
            return self.rows
        if not self.record:
            more = n - (self.limit or 0)
            name = f"… {more} more rows ({n_bytes(c.end - shown_end)})"
            self.rows.append(self._span_row(shown_end, name, more, "not shown: --rows N or --rows all shows them"))
        return self.rows

    def _span_row(self, start: int, name: str, value: object, meaning: str) -> Row:
        raw = self.ev.rows_data[start:]
        return Row("", name, start + self.base, raw, value, meaning)

    def _error(self, e: BinlogError) -> BinlogError:
        """``e`` naming the event's position; an offset in a compressed event's uncompressed rows names no byte of
        the event, so it moves into the message (as :meth:`RowsEvent.rows` does)."""
        err = e.at_pos(self.ev.header.pos)
        if self.ev.compressed and err.offset is not None:
            err.message, err.offset = f"{err.message} (byte {err.offset} of the uncompressed rows)", None
        return err

    def _change(self, what: str) -> None:
        ev = self.ev
        if ev.kind != "update":
            self._image(what, ev.columns_before, frozenset(), {})
            return
        before = self._image(f"{what} before", ev.columns_before, frozenset(), {})
        partial: frozenset[int] = frozenset()
        if ev.partial:
            partial = self._value_options(f"{what} after")
        self._image(f"{what} after", ev.columns_after or ev.columns_before, partial, before)

    def _value_options(self, what: str) -> frozenset[int]:
        """PARTIAL_UPDATE_ROWS: ``binlog_row_value_options`` and the partial-JSON bits (``partial_updates`` in
        binlake.rowdecoder reads the same); the JSON columns whose after value is a list of diffs."""
        c, cols = self.c, self.cols
        options = c.packed_int(f"{what} value options")
        partial_on = bool(options & PARTIAL_JSON_UPDATES)
        self._add(f"0x{options:x}" + (" = PARTIAL_JSON_UPDATES" if partial_on else ": whole values"), options)
        if not partial_on:
            return frozenset()
        json_cols = [col for col in cols if col.real_type_code == T.JSON]
        bits = bits_lsb_first(c.take((len(json_cols) + 7) // 8, f"{what} partial JSON bits"), len(json_cols))
        present = bits_lsb_first(self.ev.columns_after or self.ev.columns_before, len(cols))
        partial = frozenset(col.index for col, b in zip(json_cols, bits, strict=True) if b and present[col.index])
        shown = [f"{_at(col)} {'diffs' if b else 'whole'}" for col, b in zip(json_cols, bits, strict=True)]
        self._add("one bit per JSON column: " + ", ".join(shown), sorted(i + 1 for i in partial))
        return partial

    def _image(
        self, what: str, present_bits: bytes, partial: frozenset[int], before: dict[int, object]
    ) -> dict[int, object]:
        """One image: its null bitmap, then each present non-NULL value; returns the typed values by column index."""
        c, buf = self.c, self.ev.rows_data
        present = [col for col, h in zip(self.cols, bits_lsb_first(present_bits, len(self.cols)), strict=True) if h]
        if not present:
            raise MalformedError("row image of no columns in non-empty rows data", offset=c.pos + self.base)
        nulls = bits_lsb_first(c.take((len(present) + 7) // 8, f"{what} null bitmap"), len(present))
        null_cols = [col for col, null in zip(present, nulls, strict=True) if null]
        listed = ", ".join(_at(col) for col in null_cols)
        meaning = f"one bit per column present ({len(present)}): " + (f"NULL {listed}" if listed else "none NULL")
        self._add(meaning, [col.index + 1 for col in null_cols])
        values: dict[int, object] = {col.index: None for col in null_cols}
        for col, null in zip(present, nulls, strict=True):
            if null:
                continue
            name = f"{what} {_at(col)}"
            start = c.pos
            at = start + self.base  # errors name offsets in the event, as the cursor's do
            try:
                stored, end = self._reader(col, col.index in partial)(buf, start)
            except BinlogError as e:
                raise type(e)(f"{_column(col)} at byte {start} of the rows: {e.message}", offset=at) from None
            except Exception as e:  # a reader's slip on bad bytes is still a BinlogError (as _Image.check does)
                raise MalformedError(f"{_column(col)} at byte {start} of the rows: {e!r}", offset=at) from None
            if end > c.end:
                raise TruncatedError(f"{_column(col)} at byte {start} runs past the end of the rows", offset=at)
            nlen = length_bytes(col) if col.real_type_code in _PREFIXED else 0
            if 0 < nlen <= end - start and int.from_bytes(buf[start : start + nlen], "little") == end - start - nlen:
                c.take(nlen, f"{name} length")
                length = end - start - nlen
                self._add(
                    f"{n_bytes(length)} of value follow{'s' if length == 1 else ''} ({nlen}-byte length prefix)",
                    length,
                )
            c.take(end - c.pos, name)
            values[col.index] = self._value(col, stored, col.index in partial, before)
        return values

    def _reader(self, col: Column, partial: bool) -> Reader:
        key = (col.index, partial)
        reader = self.readers.get(key)
        if reader is None:
            reader = self.readers[key] = partial_json_reader(col) if partial else reader_for(col)
        return reader

    def _value(self, col: Column, stored: object, partial: bool, before: dict[int, object]) -> object:
        """Record the value field just read: the ``-vv`` text and the typed value; return the typed value."""
        if not self.record:
            return stored
        conv = None if partial else typed(col)
        try:
            value = stored if conv is None else conv(stored)
            if partial and isinstance(stored, list) and isinstance(before.get(col.index), str | bytes):
                value = apply_json_diffs(before[col.index], stored)  # type: ignore[arg-type]
            python = repr(value)
        except BinlogError as e:  # shown, not fatal: `binlake dump` prints the stored value all the same
            value, python = None, f"(not converted: {e.message})"
        text = vv_text(col, stored)
        detail = f"{_column(col)}, {column_meta(col)}" + (": JSON diffs" if partial else "")
        self.rows.append(
            _from_trace(
                self.trace,
                {
                    "column": col.index + 1,
                    "name": col.name,
                    "type": col.real_type,
                    "meta": col.meta,
                    "text": text,
                    "typed": _jsonable(value),
                    "python": python,
                },
                f"{_clip(text)} — {detail}; Python {_clip(python)}",
            )
        )
        return value

    def _add(self, meaning: str, value: object) -> None:
        """A row of the field the cursor just recorded."""
        if self.record:
            self.rows.append(_from_trace(self.trace, value, meaning))


def _from_trace(trace: Sequence[object], value: object, meaning: str) -> Row:
    f = trace[-1]
    assert isinstance(f, TraceField)
    return Row("", f.name, f.offset, f.raw, value, meaning)


def vv_text(col: Column, stored: object) -> str:
    """``@N=value /* TYPE meta=M nullable=N is_null=0 */``: one value's line of ``binlake dump -vv`` without its
    ``###   `` (``log_event_print_value``, through :mod:`binlake.render.dump.rowtext`'s renderers).

    >>> vv_text(Column.build(0, ColumnType.LONG, b""), 7)
    '@1=7 /* INT meta=0 nullable=1 is_null=0 */'
    """
    prefix, suffix, _ = line_texts(col)
    render = RENDER.get(col.real_type_code)
    value = repr(stored) if render is None else render(col, stored)
    return prefix.removeprefix("###   ") + value + suffix.rstrip("\n")


def _at(col: Column) -> str:
    """``@3`` (as ``-vv`` numbers columns), with the column's name where the table map logs it: ``@3 `txt```."""
    return f"@{col.index + 1}" + (f" `{col.name}`" if col.name is not None else "")


def _column(col: Column) -> str:
    return f"column {col.index + 1}" + (f" `{col.name}`" if col.name is not None else "") + f" ({col.real_type})"


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP else f"{text[: _CLIP - 1]}… ({len(text)} characters)"


def _jsonable(value: object) -> object:
    """A JSON-friendly form of a typed value: numbers, strings and lists as they are, bytes as text or hex,
    DECIMAL and temporal values as their text, anything else as its ``str``."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return plain(bytes(value))
    if isinstance(value, list | tuple | frozenset | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, decimal.Decimal | datetime.date | datetime.time | datetime.timedelta):
        return str(value)
    return str(value)
