"""Row images to tuples: one specialised decoder per table layout, built once and reused for every row.

A row image (``Rows_log_event::write_row`` / ``pack_row`` in ``sql/rpl_record.cc``) is a null bitmap with one bit
per column *present in the image* (LSB first, ``(present + 7) / 8`` bytes), then the stored value of each present
non-NULL column in table order.  The after image of a PARTIAL_UPDATE_ROWS_EVENT first carries
``binlog_row_value_options`` (packed integer) and, when it has ``PARTIAL_JSON_UPDATES``, one bit per JSON column of
the table saying which ones hold JSON diffs instead of a document (``Rows_log_event::print_verbose_one_row`` in
``sql/log_event.cc``).

:func:`row_decoder` compiles, per ``(columns, kind, present bitmaps, typed)``, one Python function that reads all
row changes of an event: the loop over rows and every column are in line; integer and floating columns are
``struct.unpack_from`` calls (consecutive ones merged into one call when none of them is NULL), every other column
calls its reader from :func:`binlake.values.reader_for` and, in typed mode, its converter from
:func:`binlake.values.typed`.  Nothing is checked per value that the readers do not check themselves: when
anything fails, the row is re-read column by column (``_Image.check``) to raise a
:class:`~binlake.errors.BinlogError` naming the column and its offset, so no foreign exception escapes.

Example::

    >>> from binlake.coltypes import Column
    >>> cols = (Column.build(0, 3, b""), Column.build(1, 15, b"\\x0a\\x00"))
    >>> dec = row_decoder(cols, "insert", b"\\x03", typed=False)
    >>> dec.rows(b"\\x00\\x07\\x00\\x00\\x00\\x02hi" + b"\\x02\\x08\\x00\\x00\\x00")
    [(None, (7, b'hi')), (None, (8, None))]
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from typing import TYPE_CHECKING, cast

from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError, MalformedError, TruncatedError
from binlake.events.rows import ABSENT
from binlake.values import Converter, Reader, reader_for
from binlake.values import typed as converter_for
from binlake.values.json_binary import apply_json_diffs, parse_json_diffs
from binlake.wire import bits_lsb_first, read_packed_int

if TYPE_CHECKING:
    from binlake.events.rows import RowsEvent
    from binlake.events.table_map import TableMapEvent

__all__ = ["CACHE_SIZE", "Image", "Row", "RowDecoder", "row_changes", "row_decoder"]

Row = tuple[object, ...]
Image = Row

T = ColumnType
PARTIAL_JSON_UPDATES = 1  # enum_binlog_row_value_options (sql/system_variables.h)
CACHE_SIZE = 512

# Columns stored as one little-endian struct field (Field_*::pack in sql/field.cc), read in line rather than
# through their reader; binlake.values.numeric decodes the same layouts (tests/rows check that both agree).
_STRUCT_CODES: dict[int, tuple[str, str]] = {
    T.TINY: ("b", "B"),
    T.SHORT: ("h", "H"),
    T.LONG: ("i", "I"),
    T.LONGLONG: ("q", "Q"),
    T.FLOAT: ("f", "f"),
    T.DOUBLE: ("d", "d"),
}


def _struct_code(col: Column, converter: object) -> str | None:
    codes = _STRUCT_CODES.get(col.real_type_code)
    if codes is None or converter is not None:
        return None
    return codes[1] if col.unsigned is True else codes[0]


class _Image:
    """One image layout: the present columns with their readers, and the generated source that reads them."""

    __slots__ = ("cols", "partial", "prefix", "typed")

    def __init__(self, columns: tuple[Column, ...], present: bytes, typed: bool, partial: frozenset[int], prefix: str):
        here = bits_lsb_first(present, len(columns))
        self.cols = [c for c, h in zip(columns, here, strict=True) if h]
        self.typed = typed
        self.partial = partial
        self.prefix = prefix

    def readers(self) -> list[tuple[Column, Reader, Converter | None]]:
        """``(column, reader, converter)`` of every present column, in image order."""
        out: list[tuple[Column, Reader, Converter | None]] = []
        for col in self.cols:
            if col.index in self.partial:
                out.append((col, _partial_json_reader(col), None))
            else:
                out.append((col, reader_for(col), converter_for(col) if self.typed else None))
        return out

    def source(self, columns: tuple[Column, ...], ns: dict[str, object], indent: str) -> tuple[list[str], str]:
        """Statements that read one image at ``pos`` into locals, and the tuple expression of the image."""
        if not self.cols:
            return [f"{indent}raise MalformedError('row image of no columns in non-empty rows data', offset=pos)"], ""
        nbytes = (len(self.cols) + 7) // 8
        lines = [
            f"q = pos + {nbytes}",
            "if q > blen:",
            "    raise TruncatedError('row image null bitmap runs past the end of the rows', offset=pos)",
            "nulls = from_bytes(buf[pos:q], 'little')",
            "pos = q",
        ]
        plan: list[tuple[int, Column, str | None]] = []
        for bit, (col, reader, conv) in enumerate(self.readers()):
            code = None if col.index in self.partial else _struct_code(col, conv)
            if code is None:
                ns[f"r{self.prefix}{col.index}"] = reader
                if conv is not None:
                    ns[f"c{self.prefix}{col.index}"] = conv
            plan.append((bit, col, code))
        i = 0
        while i < len(plan):
            j = i
            while j < len(plan) and plan[j][2] is not None:
                j += 1
            if j - i >= 2:
                lines += self._struct_run(plan[i:j], ns)
                i = j
            else:
                lines += self._one(plan[i], ns)
                i += 1
        present = {c.index for c in self.cols}
        values = ", ".join(f"{self.prefix}{c.index}" if c.index in present else "ABSENT" for c in columns)
        return [indent + line for line in lines], f"({values},)"

    def _one(self, step: tuple[int, Column, str | None], ns: dict[str, object]) -> list[str]:
        bit, col, code = step
        v = f"{self.prefix}{col.index}"
        out = [f"if nulls & {1 << bit}:", f"    {v} = None", "else:"]
        if code is not None:
            st = struct.Struct("<" + code)
            ns[f"s{v}"] = st.unpack_from
            return [*out, f"    {v} = s{v}(buf, pos)[0]", f"    pos += {st.size}"]
        out.append(f"    {v}, pos = r{v}(buf, pos)")
        if f"c{v}" in ns:
            out.append(f"    {v} = c{v}({v})")
        return out

    def _struct_run(self, run: list[tuple[int, Column, str | None]], ns: dict[str, object]) -> list[str]:
        """Columns read by one ``unpack_from`` when none is NULL, else one by one."""
        mask = sum(1 << bit for bit, _, _ in run)
        st = struct.Struct("<" + "".join(code or "" for _, _, code in run))
        name = f"run{self.prefix}{run[0][1].index}"
        ns[name] = st.unpack_from
        out = [f"if nulls & {mask}:"]
        for step in run:
            out += ["    " + line for line in self._one(step, ns)]
        targets = ", ".join(f"{self.prefix}{col.index}" for _, col, _ in run)
        return [*out, "else:", f"    {targets} = {name}(buf, pos)", f"    pos += {st.size}"]

    def check(self, buf: bytes, start: int) -> int | BinlogError:
        """Re-read the image at ``start`` column by column: its end, or the error naming the failing column."""
        try:
            readers = self.readers()
        except BinlogError as e:
            return e
        if not readers:
            return MalformedError("row image of no columns in non-empty rows data", offset=start)
        nbytes = (len(readers) + 7) // 8
        if start + nbytes > len(buf):
            return TruncatedError(f"row image null bitmap needs {nbytes} bytes, {len(buf) - start} left", offset=start)
        nulls = bits_lsb_first(buf[start : start + nbytes], len(readers))
        pos = start + nbytes
        for (col, reader, converter), null in zip(readers, nulls, strict=True):
            if null:
                continue
            name = f"column {col.index + 1}" + (f" `{col.name}`" if col.name else "") + f" ({col.real_type})"
            try:
                value, end = reader(buf, pos)
                if converter is not None:
                    converter(value)
            except BinlogError as e:
                return type(e)(f"{name} at byte {pos} of the rows: {e.message}", offset=pos)
            except Exception as e:
                return MalformedError(f"{name} at byte {pos} of the rows: {e!r}", offset=pos)
            if end > len(buf):
                return TruncatedError(f"{name} at byte {pos} runs past the end of the rows", offset=pos)
            pos = end
        return pos


class RowDecoder:
    """The compiled decoder of one layout: ``columns``, the change ``kind`` and its columns-present bitmaps.

    ``kind`` is ``"insert"``/``"delete"`` (one image per row, bitmap ``before``), ``"update"`` (before and after
    images) or ``"image"`` (:meth:`read_image` of single images, used for PARTIAL_UPDATE_ROWS after images whose
    JSON columns in ``partial`` hold diffs).  ``source`` is the generated code, for the curious.
    """

    __slots__ = ("_fast", "_images", "columns", "kind", "source", "typed")

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
        self._images = [_Image(columns, before, typed, partial, "a")]
        if kind == "update":
            assert after is not None
            self._images.append(_Image(columns, after, typed, frozenset(), "b"))
        ns: dict[str, object] = {
            "from_bytes": int.from_bytes,
            "ABSENT": ABSENT,
            "TruncatedError": TruncatedError,
            "MalformedError": MalformedError,
            "diagnose": self._diagnose,
        }
        if kind == "image":
            body, image = self._images[0].source(columns, ns, "        ")
            lines = [
                "def read(buf, pos):",
                "    start = pos",
                "    blen = len(buf)",
                "    try:",
                *body,
                "    except Exception as e:",
                "        raise diagnose(buf, start, e) from None",
                f"    return {image or '()'}, pos",
            ]
        else:
            parts = [img.source(columns, ns, "            ") for img in self._images]
            images = [image or "()" for _, image in parts]
            change = {"insert": f"(None, {images[0]})", "delete": f"({images[0]}, None)"}.get(kind)
            lines = [
                "def read(buf, pos):",
                "    out = []",
                "    append = out.append",
                "    blen = len(buf)",
                "    start = pos",
                "    try:",
                "        while pos < blen:",
                "            start = pos",
                *(line for body, _ in parts for line in body),
                f"            append({change or f'({images[0]}, {images[1]})'})",
                "    except Exception as e:",
                "        raise diagnose(buf, start, e) from None",
                "    return out",
            ]
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, f"<{kind} rows of {len(columns)} columns>", "exec"), ns)
        self._fast = ns["read"]

    def rows(self, buf: bytes) -> list[tuple[Row | None, Row | None]]:
        """Every ``(before, after)`` row change in ``buf`` (rows data of one event)."""
        return cast("list[tuple[Row | None, Row | None]]", self._fast(buf, 0))  # type: ignore[operator]

    def read_image(self, buf: bytes, pos: int) -> tuple[Row, int]:
        """One image at ``pos`` (``kind == "image"``) and the position after it."""
        return cast("tuple[Row, int]", self._fast(buf, pos))  # type: ignore[operator]

    def _diagnose(self, buf: bytes, start: int, original: BaseException) -> BinlogError:
        """The error of the row change at ``start``, found by re-reading it column by column."""
        if isinstance(original, BinlogError) and original.offset is None:
            original.offset = start
        pos: int | BinlogError = start
        for img in self._images:
            assert isinstance(pos, int)
            pos = img.check(buf, pos)
            if isinstance(pos, BinlogError):
                return pos
        return original if isinstance(original, BinlogError) else MalformedError(f"row: {original!r}", offset=start)


def _partial_json_reader(col: Column) -> Reader:
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
    """The decoder of ``kind`` rows of ``columns`` with these columns-present bitmaps, compiled on first use and
    kept in an LRU of :data:`CACHE_SIZE` layouts."""
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


# -- row changes of one event ----------------------------------------------------------------------------------


def row_changes(ev: RowsEvent, tm: TableMapEvent, typed: bool) -> list[tuple[Row | None, Row | None]]:
    """``(before, after)`` per row change of ``ev``; errors carry offsets into ``ev.rows_data``."""
    if ev.partial:
        return _partial_updates(ev, tm.columns, typed)
    after = ev.columns_after if ev.kind == "update" else None
    return row_decoder(tm.columns, ev.kind, ev.columns_before, after, typed).rows(ev.rows_data)


def _partial_updates(ev: RowsEvent, columns: tuple[Column, ...], typed: bool) -> list[tuple[Row | None, Row | None]]:
    """PARTIAL_UPDATE_ROWS: each after image starts with value options and partial-JSON bits.

    A JSON column sent as diffs comes back, typed, as the before image's document with every diff applied (JSON
    text, as the JSON converter returns); raw, and wherever the before image lacks the document, as the list of
    :class:`~binlake.values.json_binary.JsonDiff` itself.
    """
    data = ev.rows_data
    end = len(data)
    after_bits = ev.columns_after or ev.columns_before
    present_after = bits_lsb_first(after_bits, len(columns))
    json_cols = [c.index for c in columns if c.real_type_code == T.JSON]
    nbytes = (len(json_cols) + 7) // 8
    read_before = row_decoder(columns, "image", ev.columns_before, typed=typed).read_image
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
