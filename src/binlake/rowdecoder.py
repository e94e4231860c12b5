"""Row images to tuples: one specialised decoder per table layout, built once and reused for every row.

A row image (``Rows_log_event::write_row`` / ``pack_row`` in ``sql/rpl_record.cc``) is a null bitmap with one bit
per column *present in the image* (LSB first, ``(present + 7) / 8`` bytes), then the stored value of each present
non-NULL column in table order.  The after image of a PARTIAL_UPDATE_ROWS_EVENT first carries
``binlog_row_value_options`` (packed integer) and, when it has ``PARTIAL_JSON_UPDATES``, one bit per JSON column of
the table saying which ones hold JSON diffs instead of a document (``Rows_log_event::print_verbose_one_row`` in
``sql/log_event.cc``).

:func:`row_decoder` compiles, per ``(columns, kind, present bitmaps, typed)``, one Python function that reads all
row changes of an event: the loop over rows and every column are in line.  Integer and floating columns (INT24
too) are ``struct.unpack_from`` calls, consecutive ones merged into one call when none of them is NULL; DATETIME2,
NEWDECIMAL (specialised to its precision and scale) and length-prefixed strings are read in line, utf8 ones
decoded with ``bytes.decode`` (their reader or converter runs only for values the in-line code does not take:
invalid dates, out-of-range digit groups, bytes that are not UTF-8); every other column calls its reader from
:func:`binlake.values.reader_for` and, in typed mode, its converter from :func:`binlake.values.typed`.  In-line
reads do not check bounds: ``pos`` is checked once per row change, and when anything fails the row is re-read
column by column (``_Image.check``) to raise a :class:`~binlake.errors.BinlogError` naming the column and its
offset, so no foreign exception escapes.

When the optional extension ``binlake._speedups`` (``_speedups.c``) is built and ``BINLAKE_PURE_PYTHON`` is not set
(:data:`ACCELERATED`), each decoder also holds a compiled plan of its layout (``_Image.plan``: per column a kind,
its parameters and the Python reader and converter for the values C does not build) that decodes the whole event
~5x faster; on any problem with the bytes it returns ``None`` and the generated Python decoder runs, so results
and errors are the Python decoder's (``tests/rows/test_speedups.py`` checks both against the value readers).

Example::

    >>> from binlake.coltypes import Column
    >>> cols = (Column.build(0, 3, b""), Column.build(1, 15, b"\\x0a\\x00"))
    >>> dec = row_decoder(cols, "insert", b"\\x03", typed=False)
    >>> dec.rows(b"\\x00\\x07\\x00\\x00\\x00\\x02hi" + b"\\x02\\x08\\x00\\x00\\x00")
    [(None, (7, b'hi')), (None, (8, None))]
"""

from __future__ import annotations

import datetime as dt
import struct
from collections import OrderedDict
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple, cast

from binlake._compiled import compiled
from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError, MalformedError, TruncatedError
from binlake.events.rows import ABSENT
from binlake.values import Converter, Reader, reader_for
from binlake.values import typed as converter_for
from binlake.values.decimal import decimal_size, precision_scale
from binlake.values.decimal import groups as decimal_groups
from binlake.values.json_binary import apply_json_diffs, parse_json_diffs
from binlake.values.numeric import bit_width
from binlake.values.strings import BLOB_TYPES, VARLEN_TYPES, length_bytes, text_codec
from binlake.values.temporal import DATETIMEF_INT_OFS, column_fsp
from binlake.values.temporal import frac_reader_params as frac_params
from binlake.wire import bits_lsb_first, read_packed_int

if TYPE_CHECKING:
    from binlake.events.rows import RowsEvent
    from binlake.events.table_map import TableMapEvent

if TYPE_CHECKING:
    from binlake import _speedups
else:  # the compiled decoder (src/binlake/_speedups.c), when it was built and is not turned off
    _speedups = compiled("_speedups")

ACCELERATED = _speedups is not None
"""Row changes are decoded by the compiled ``binlake._speedups`` (built by ``pip install``; off when the environment
sets ``BINLAKE_PURE_PYTHON``), the generated Python decoder being the fallback and the reference."""

__all__ = ["ACCELERATED", "CACHE_SIZE", "Image", "Row", "RowDecoder", "row_changes", "row_decoder"]

Row = tuple[object, ...]
Image = Row

T = ColumnType
PARTIAL_JSON_UPDATES = 1  # enum_binlog_row_value_options (sql/system_variables.h)
CACHE_SIZE = 512

# Columns stored as one little-endian struct field (Field_*::pack in sql/field.cc), read in line rather than
# through their reader; binlake.values.numeric decodes the same layouts (tests/rows check that both agree).  INT24
# (Field_medium::pack, 3 bytes) is read as a 2-byte low half and a 1-byte high half carrying the sign.
_STRUCT_CODES: dict[int, tuple[str, str]] = {
    T.TINY: ("b", "B"),
    T.SHORT: ("h", "H"),
    T.INT24: ("Hb", "HB"),
    T.LONG: ("i", "I"),
    T.LONGLONG: ("q", "Q"),
    T.FLOAT: ("f", "f"),
    T.DOUBLE: ("d", "d"),
}
# Strings read in line: the length prefix (strings.length_prefixed), then the bytes; utf8 ones decoded in line.
_TEXT = frozenset({T.STRING, T.VARCHAR, T.VAR_STRING, T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})


# Kinds of binlake._speedups' column plans (its enum): per real type, the code and a function of the column giving
# its two parameters; every type not listed is read by its Python reader (kind 0).
_INT_SIZES: dict[int, int] = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}
# Kinds 2-10 are numbered alike in both of _speedups' enums (Plan and TextPlan), with the same parameters.
FIXED_KINDS: dict[int, tuple[int, Callable[[Column], tuple[int, int]]]] = {
    T.FLOAT: (2, lambda c: (0, 0)),
    T.DOUBLE: (3, lambda c: (0, 0)),
    T.YEAR: (4, lambda c: (0, 0)),
    T.BIT: (5, lambda c: ((bit_width(c) + 7) // 8, bit_width(c))),
    T.DATE: (6, lambda c: (0, 0)),
    T.NEWDATE: (6, lambda c: (0, 0)),
    T.DATETIME2: (7, lambda c: (column_fsp(c), 0)),
    T.TIMESTAMP2: (8, lambda c: (column_fsp(c), 0)),
    T.TIME2: (9, lambda c: (column_fsp(c), 0)),
    T.NEWDECIMAL: (10, precision_scale),
}
_PLAN_KINDS: dict[int, tuple[int, Callable[[Column], tuple[int, int]]]] = {
    **{code: (1, lambda c: (_INT_SIZES[c.real_type_code], int(c.unsigned is not True))) for code in _INT_SIZES},
    **FIXED_KINDS,
    T.ENUM: (12, lambda c: (c.length or 0, 0)),
    T.SET: (12, lambda c: (c.length or 0, 0)),
}
_KIND_STRING = 11


def _struct_code(col: Column, converter: object) -> str | None:
    codes = _STRUCT_CODES.get(col.real_type_code)
    if codes is None or converter is not None:
        return None
    return codes[1] if col.unsigned is True else codes[0]


def _length_bytes(col: Column) -> int | None:
    """Bytes of the length prefix of a string or blob column read in line (``None`` for other types)."""
    return length_bytes(col) if col.real_type_code in VARLEN_TYPES or col.real_type_code in BLOB_TYPES else None


def _utf8_text(col: Column, typed: bool) -> bool:
    """Does the typed value of this string column decode with plain UTF-8 (utf8mb3/utf8mb4 charsets)?

    Then ``bytes.decode('utf-8')`` gives what its converter gives (``collations.decode``) whenever it succeeds, and
    the converter is only needed for bytes that are not UTF-8.
    """
    return typed and col.real_type_code in _TEXT and text_codec(col) == "utf-8"


class _Step(NamedTuple):
    """One present column of an image: its bit in the null bitmap, how it is read, and its reader and converter."""

    bit: int
    col: Column
    reader: Reader
    conv: Converter | None
    code: str | None  # struct format when read by struct in line (no converter)


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

    def steps(self) -> list[_Step]:
        """Every present column as a :class:`_Step`, in image order."""
        return [
            _Step(bit, col, reader, conv, None if col.index in self.partial else _struct_code(col, conv))
            for bit, (col, reader, conv) in enumerate(self.readers())
        ]

    def plan(self) -> tuple[tuple[int, int, int, int, Reader, Converter | None], ...]:
        """The image for ``binlake._speedups.Plan``: per present column ``(kind, index, p1, p2, reader, converter)``."""
        out = []
        for step in self.steps():
            col = step.col
            nlen = _length_bytes(col)
            kind, p1, p2 = 0, 0, 0
            if nlen is not None:
                kind, p1, p2 = _KIND_STRING, nlen, int(_utf8_text(col, self.typed))
            elif col.index not in self.partial and col.real_type_code in _PLAN_KINDS:
                kind, params = _PLAN_KINDS[col.real_type_code]
                p1, p2 = params(col)
            out.append((kind, col.index, p1, p2, step.reader, step.conv))
        return tuple(out)

    def source(self, columns: tuple[Column, ...], ns: dict[str, object], indent: str) -> tuple[list[str], str]:
        """Statements that read one image at ``pos`` into locals, and the tuple expression of the image.

        Only struct reads and the readers check bounds; the values read in line do not, so the caller checks
        ``pos`` against ``blen`` once after the row and the diagnose path names the column that ran past the end.
        """
        if not self.cols:
            return [f"{indent}raise MalformedError('row image of no columns in non-empty rows data', offset=pos)"], ""
        nbytes = (len(self.cols) + 7) // 8
        if nbytes <= 3:
            bitmap = " | ".join(f"buf[pos + {k}] << {8 * k}" if k else "buf[pos]" for k in range(nbytes))
        else:
            bitmap = f"from_bytes(buf[pos:pos + {nbytes}], 'little')"
        lines = [f"nulls = {bitmap}", f"pos += {nbytes}"]
        plan = self.steps()
        for step in plan:
            if step.code is None:
                ns[f"r{self.prefix}{step.col.index}"] = step.reader
                if step.conv is not None:
                    ns[f"c{self.prefix}{step.col.index}"] = step.conv
        i = 0
        while i < len(plan):
            j = i
            while j < len(plan) and plan[j].code is not None:
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

    def _one(self, step: _Step, ns: dict[str, object]) -> list[str]:
        v = f"{self.prefix}{step.col.index}"
        head = [f"if nulls & {1 << step.bit}:", f"    {v} = None", "else:"]
        if step.code is not None:
            st = struct.Struct("<" + step.code)
            ns[f"s{v}"] = st.unpack_from
            if len(step.code) == 2:  # INT24
                return [*head, f"    l{v}, {v} = s{v}(buf, pos)", f"    {v} = {v} << 16 | l{v}", "    pos += 3"]
            return [*head, f"    {v} = s{v}(buf, pos)[0]", f"    pos += {st.size}"]
        col = step.col
        if col.index in self.partial:
            body = self._reader_call(v, ns)
        elif col.real_type_code == T.DATETIME2:
            body = self._datetime2(v, col)
        elif col.real_type_code == T.NEWDECIMAL:
            body = self._decimal(v, col)
        elif (nlen := _length_bytes(col)) is not None:
            body = self._string(v, nlen, _utf8_text(col, self.typed), ns)
        else:
            body = self._reader_call(v, ns)
        return [*head, *("    " + line for line in body)]

    def _reader_call(self, v: str, ns: dict[str, object]) -> list[str]:
        return [f"{v}, pos = r{v}(buf, pos)", *([f"{v} = c{v}({v})"] if f"c{v}" in ns else [])]

    @staticmethod
    def _datetime2(v: str, col: Column) -> list[str]:
        """DATETIME2 in line (see ``temporal._datetime2_reader``): ``datetime()`` rejects what the reader rejects
        (a negative value gives a year below 1, a fraction past its bound a microsecond past 999999), so the reader
        runs only for values ``datetime`` cannot hold, to return :class:`InvalidDatetime` or raise."""
        frac_bytes, unit, _ = frac_params(column_fsp(col))
        bits = 8 * frac_bytes
        size = 5 + frac_bytes
        out = [f"t = from_bytes(buf[pos:pos + {size}], 'big')"]
        us = "0"
        if frac_bytes:
            out.append(f"f = t & {(1 << bits) - 1}")
            us = "f" if unit == 1 else f"f * {unit}"
        out += [
            f"t = (t >> {bits}) - {DATETIMEF_INT_OFS}" if bits else f"t -= {DATETIMEF_INT_OFS}",
            "d = t >> 17",
            "m = d >> 5",
            "try:",
            f"    {v} = datetime(m // 13, m % 13, d & 31, t >> 12 & 31, t >> 6 & 63, t & 63, {us})",
            "except ValueError:",
            f"    {v} = r{v}(buf, pos)[0]",
            f"pos += {size}",
        ]
        return out

    @staticmethod
    def _decimal(v: str, col: Column) -> list[str]:
        """NEWDECIMAL in line, specialised to its (precision, scale) (see ``decimal._newdecimal_reader``): the digit
        groups cut from one big-endian integer with constant shifts; the reader raises for a group out of range."""
        precision, scale = precision_scale(col)
        size = decimal_size(precision, scale)
        sign_bit = 1 << (8 * size - 1)
        out = [
            f"t = from_bytes(buf[pos:pos + {size}], 'big')",
            f"if t & {sign_bit}:",
            f"    t ^= {sign_bit}",
            "    m = ''",
            "else:",
            f"    t ^= {((1 << (8 * size)) - 1) ^ sign_bit}",
            "    m = '-'",
        ]
        checks, terms = [], []
        for k, (shift, mask, bound, weight) in enumerate(decimal_groups(precision, scale)):
            group = f"(t >> {shift})" if shift else "t"
            out.append(f"g{k} = {group} & {mask}" if shift + mask.bit_length() < 8 * size else f"g{k} = {group}")
            checks.append(f"g{k} >= {bound}")
            terms.append(f"g{k} * {weight}" if weight > 1 else f"g{k}")
        exponent = f"E-{scale}" if scale else ""
        return [
            *out,
            f"if {' or '.join(checks)}:",
            f"    {v} = r{v}(buf, pos)[0]",
            "else:",
            f"    {v} = Decimal(f'{{m}}{{{' + '.join(terms)}}}{exponent}')",
            f"pos += {size}",
        ]

    @staticmethod
    def _string(v: str, nlen: int, utf8: bool, ns: dict[str, object]) -> list[str]:
        """A length-prefixed string in line (``strings.length_prefixed``), UTF-8 decoded in line when ``utf8``."""
        length = " | ".join(f"buf[pos + {k}] << {8 * k}" if k else "buf[pos]" for k in range(nlen))
        if nlen == 4:
            length = "from_bytes(buf[pos:pos + 4], 'little')"
        out = [f"t = pos + {nlen}", f"pos = t + ({length})", f"{v} = buf[t:pos]"]
        if utf8:
            return [
                *out,
                "try:",
                f"    {v} = {v}.decode('utf-8')",
                "except UnicodeDecodeError:",
                f"    {v} = c{v}({v})",
            ]
        return [*out, *([f"{v} = c{v}({v})"] if f"c{v}" in ns else [])]

    def _struct_run(self, run: list[_Step], ns: dict[str, object]) -> list[str]:
        """Columns read by one ``unpack_from`` when none is NULL, else one by one."""
        mask = sum(1 << step.bit for step in run)
        st = struct.Struct("<" + "".join(step.code or "" for step in run))
        name = f"run{self.prefix}{run[0].col.index}"
        ns[name] = st.unpack_from
        out = [f"if nulls & {mask}:"]
        for step in run:
            out += ["    " + line for line in self._one(step, ns)]
        targets: list[str] = []
        int24: list[str] = []
        for step in run:
            v = f"{self.prefix}{step.col.index}"
            if step.code is not None and len(step.code) == 2:
                targets += [f"l{v}", v]
                int24.append(f"    {v} = {v} << 16 | l{v}")
            else:
                targets.append(v)
        return [*out, "else:", f"    {', '.join(targets)} = {name}(buf, pos)", *int24, f"    pos += {st.size}"]

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
    JSON columns in ``partial`` hold diffs).  ``source`` is the generated code, for the curious; ``accelerated``
    says whether :meth:`rows` runs the compiled decoder first.
    """

    __slots__ = ("_fast", "_images", "_plan", "_source", "columns", "kind", "typed")

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
        self._source = ""
        self._fast: Callable[[bytes, int], object] | None = None
        self._plan = None
        if _speedups is not None and kind != "image":
            mode = ("insert", "delete", "update").index(kind)
            self._plan = _speedups.Plan(mode, len(columns), ABSENT, tuple(img.plan() for img in self._images))
        else:
            self._compile()

    def _compile(self) -> Callable[[bytes, int], object]:
        """Generate and compile the Python decoder (only on first need when the compiled plan decodes the rows)."""
        ns: dict[str, object] = {
            "from_bytes": int.from_bytes,
            "ABSENT": ABSENT,
            "TruncatedError": TruncatedError,
            "MalformedError": MalformedError,
            "diagnose": self._diagnose,
            "datetime": dt.datetime,
            "Decimal": Decimal,
        }
        overrun = "raise TruncatedError('row runs past the end of the rows', offset=start)"
        if self.kind == "image":
            body, image = self._images[0].source(self.columns, ns, "        ")
            lines = [
                "def read(buf, pos):",
                "    start = pos",
                "    blen = len(buf)",
                "    try:",
                *body,
                "        if pos > blen:",
                f"            {overrun}",
                "    except Exception as e:",
                "        raise diagnose(buf, start, e) from None",
                f"    return {image or '()'}, pos",
            ]
        else:
            parts = [img.source(self.columns, ns, "            ") for img in self._images]
            images = [image or "()" for _, image in parts]
            change = {"insert": f"(None, {images[0]})", "delete": f"({images[0]}, None)"}.get(self.kind)
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
                "            if pos > blen:",
                f"                {overrun}",
                f"            append({change or f'({images[0]}, {images[1]})'})",
                "    except Exception as e:",
                "        raise diagnose(buf, start, e) from None",
                "    return out",
            ]
        self._source = "\n".join(lines) + "\n"
        exec(compile(self._source, f"<{self.kind} rows of {len(self.columns)} columns>", "exec"), ns)
        self._fast = cast("Callable[[bytes, int], object]", ns["read"])
        return self._fast

    @property
    def source(self) -> str:
        """The generated Python code of this layout's decoder."""
        if self._fast is None:
            self._compile()
        return self._source

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
        """:meth:`rows` by the generated Python decoder alone (the reference the compiled one is tested against)."""
        return cast("list[tuple[Row | None, Row | None]]", (self._fast or self._compile())(buf, 0))

    def read_image(self, buf: bytes, pos: int) -> tuple[Row, int]:
        """One image at ``pos`` (``kind == "image"``) and the position after it."""
        return cast("tuple[Row, int]", (self._fast or self._compile())(buf, pos))

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
