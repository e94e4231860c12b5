"""``binlake dump``: the text ``mariadb-binlog --base64-output=DECODE-ROWS -vv --print-table-metadata`` prints.

Every line kind follows MariaDB's client code: the ``# at N`` lines, the flow of each event into the output and
the ``# Number of rows`` lines come from ``process_event``/``print_row_event`` in ``client/mysqlbinlog.cc``; the
event header line (``#YYMMDD HH:MM:SS server id N  end_log_pos N CRC32 0x... <TAB>...``) from
``Log_event::print_header``, each event's own lines from its ``print()`` in ``sql/log_event_client.cc``; the
``# Columns(...)``/``# Primary Key(...)`` lines from ``Table_map_log_event::print_columns``/``print_primary_key``;
and the ``### INSERT INTO``/``### WHERE``/``### SET``/``###   @N=value /* TYPE meta=M nullable=N is_null=N */``
blocks from ``Rows_log_event::print_verbose`` and ``log_event_print_value``, whose value text each value family
gives (``RENDER`` of the :mod:`binlake.values` modules).  Timestamps print in local time, as the tool does.

Where ``binlake._speedups`` is built (and ``BINLAKE_PURE_PYTHON`` not set), the ``###`` lines of a rows event are
written in C straight from its row images (:func:`text_plan`: the constant texts made here once per layout, the
values printed as the ``RENDER`` tables print them); a layout with another column type, an event it is not sure to
print the same way (a value its reader rejects, a NaN) and ``--flashback`` take the Python path below, which stays
the reference (``tests/render/test_rows_text.py`` checks both agree on random row images).

Like the tool, rows events of one statement are held back until the statement's last event (STMT_END_F), an
ANNOTATE_ROWS until the table map it belongs to, and ``--flashback`` prints the undo of the log: every buffered
event's text in reverse order, each statement's rows events reversed and inverted (:mod:`binlake.render.flashback`).

Where the tool fails (old MariaDB 5.3 temporal columns, MINIMAL images under ``--flashback``, encrypted logs without
the key) binlake goes on decoding correctly; a decoding error ends the dump with the text so far and exit code 1.

Example::

    $ binlake dump corpus-bin.000015 --start-position 710 --stop-position 796
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import re
import struct
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, cast

from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError
from binlake.events.base import Event, EventType, RawEvent
from binlake.events.context import DecodeOptions
from binlake.events.control import (
    IncidentEvent,
    IntvarEvent,
    RandEvent,
    RotateEvent,
    StopEvent,
    UserVarEvent,
    XaPrepareEvent,
    XidEvent,
)
from binlake.events.format import FormatDescriptionEvent
from binlake.events.gtid import BinlogCheckpointEvent, GtidListEvent, MariaGtidEvent
from binlake.events.load import ExecuteLoadQueryEvent, FileBlockEvent, FileIdEvent
from binlake.events.mariadb import AnnotateRowsEvent, StartEncryptionEvent
from binlake.events.query import QueryEvent
from binlake.events.rows import ABSENT, RowsEvent
from binlake.events.table_map import OptionalField, OptionalMetadataType, TableMapEvent
from binlake.render import add_decode_arguments, decode_options, open_log
from binlake.render.flashback import Change, Image, invert
from binlake.rowdecoder import FIXED_KINDS
from binlake.schema import SchemaTracker
from binlake.values import collations, json_binary, reader_for
from binlake.values.strings import length_bytes
from binlake.values.temporal import column_fsp
from binlake.wire import bits_lsb_first, bits_msb_first

try:  # the compiled row printer (src/binlake/_speedups.c), when it was built and is not turned off
    if os.environ.get("BINLAKE_PURE_PYTHON"):
        raise ImportError("BINLAKE_PURE_PYTHON is set")
    from binlake._speedups import TextPlan
except ImportError:
    TextPlan = None  # type: ignore[assignment,misc]

__all__ = [
    "DumpOptions",
    "TextPrinter",
    "add_dump_arguments",
    "columns_lines",
    "dump",
    "dump_main",
    "primary_key_line",
    "value_type_name",
]

T = ColumnType
E = EventType
M = OptionalMetadataType
DELIM = "/*!*/;"
FLUSH_AT = 1 << 20  # characters of text gathered before a write to the output
_TEXTS_KEPT = 512  # row printers kept (one per table layout, change kind and columns present)
_COMPILE_AFTER = 256  # row changes of a layout printed value by value before its printer is generated

# ---------------------------------------------------------------------------------------------------------------
# quoting (pretty_print_str / my_snprintf's %`s in MariaDB)

_PRETTY = str.maketrans({"\n": "\\n", "\r": "\\r", "\\": "\\\\", "\b": "\\b", "\t": "\\t", "'": "\\'", "\0": "\\0"})


def pretty_str(s: str, quote: str = "'") -> str:
    """``pretty_print_str``: ``'it\\'s'``; with ``quote="`"`` the identifier form (backticks not doubled)."""
    return quote + s.translate(_PRETTY) + quote


def backtick(s: str) -> str:
    """``%`s`` of ``my_snprintf``: ``table ``with`` backticks`` between backticks, inner ones doubled."""
    return "`" + s.replace("`", "``") + "`"


# ---------------------------------------------------------------------------------------------------------------
# Table_map_log_event::print_columns / print_primary_key

# cs->mbmaxlen of MariaDB's character sets (strings/ctype-*.c); every other set is single-byte
_MBMAXLEN = {
    "big5": 2,
    "cp932": 2,
    "eucjpms": 3,
    "euckr": 2,
    "gb2312": 2,
    "gbk": 2,
    "sjis": 2,
    "ujis": 3,
    "utf8mb3": 3,
    "utf8mb4": 4,
    "ucs2": 2,
    "utf16": 4,
    "utf16le": 4,
    "utf32": 4,
}
_NUMERIC = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL, T.FLOAT, T.DOUBLE})
_CHARACTER = frozenset({T.STRING, T.VAR_STRING, T.VARCHAR, T.BLOB, T.GEOMETRY})  # is_character_type (client)
_GEOMETRY_NAMES = (
    "GEOMETRY",
    "POINT",
    "LINESTRING",
    "POLYGON",
    "MULTIPOINT",
    "MULTILINESTRING",
    "MULTIPOLYGON",
    "GEOMETRYCOLLECTION",
)
_BLOB_SIZES = {1: "TINY", 2: "", 3: "MEDIUM", 4: "LONG"}
_INT_NAMES: dict[int, str] = {T.LONG: "INT", T.TINY: "TINYINT", T.SHORT: "SMALLINT", T.INT24: "MEDIUMINT"}
_TEMPORAL2_NAMES: dict[int, str] = {T.TIMESTAMP2: "TIMESTAMP", T.DATETIME2: "DATETIME", T.TIME2: "TIME"}


@dataclass(frozen=True, slots=True)
class _Charset:
    number: int
    name: str
    collation: str
    mbmaxlen: int


def _charset(number: int | None) -> _Charset | None:
    """``get_charset()``: ``None`` for an id the client does not know."""
    if number is None:
        return None
    coll = collations.collation_name(number, mariadb=True)
    cs = collations.charset_name(number)
    if coll is None or cs is None:
        return None
    return _Charset(number, cs, coll, _MBMAXLEN.get(cs, 1))


class _CharsetIter:
    """``Default_charset_iterator`` / ``Column_charset_iterator``: the collation of the next character column."""

    def __init__(self, default: object, per_column: object) -> None:
        self.default: int | None = None
        self.pairs: list[tuple[int, int]] = []
        self.column: list[int] = []
        if isinstance(default, dict):
            self.default = int(default["default"])
            self.pairs = [(int(k), int(c)) for k, c in default["overrides"]]
        elif isinstance(per_column, list):
            self.column = [int(c) for c in per_column]
        self.i = 0

    def next(self) -> _Charset | None:
        i, self.i = self.i, self.i + 1
        if self.default is not None:
            if self.pairs and self.pairs[0][0] == i:
                return _charset(self.pairs.pop(0)[1])
            return _charset(self.default)
        return _charset(self.column[i]) if i < len(self.column) else None


def _type_name(real: int, meta: bytes, p: int, cs: _Charset | None, geometry_type: int) -> tuple[str, int]:
    """``get_type_name``: the SQL type and the position after the column's metadata (unknown types: ``""``)."""
    binary = cs is None or cs.number == collations.BINARY
    if real in (T.LONG, T.TINY, T.SHORT, T.INT24, T.LONGLONG):
        return _INT_NAMES.get(real, "BIGINT"), p
    if real == T.NEWDECIMAL:
        return f"DECIMAL({meta[p]},{meta[p + 1]})", p + 2
    if real in (T.FLOAT, T.DOUBLE):
        return ("FLOAT" if real == T.FLOAT else "DOUBLE"), p + 1
    if real == T.BIT:
        return f"BIT({meta[p] + meta[p + 1] * 8})", p + 2
    if real in (T.TIMESTAMP2, T.DATETIME2, T.TIME2):
        base = _TEMPORAL2_NAMES[real]
        return (f"{base}({meta[p]})" if meta[p] else base), p + 1
    if real in (T.NEWDATE, T.DATE):
        return "DATE", p
    if real == T.YEAR:
        return "YEAR", p
    if real in (T.ENUM, T.SET):
        return ("ENUM" if real == T.ENUM else "SET"), p + 2
    if real == T.BLOB:
        kind = "BLOB" if binary else "TEXT"
        size = meta[p]
        return (f"{_BLOB_SIZES[size]}{kind}" if size in _BLOB_SIZES else f"INVALID_{kind}({size})"), p + 1
    if real in (T.VARCHAR, T.VAR_STRING):
        n = meta[p] | meta[p + 1] << 8
        return (f"VARBINARY({n})" if binary else f"VARCHAR({n // cs.mbmaxlen})"), p + 2  # type: ignore[union-attr]
    if real == T.STRING:
        n = (((meta[p] & 0x30) ^ 0x30) << 4) | meta[p + 1]
        return (f"BINARY({n})" if binary else f"CHAR({n // cs.mbmaxlen})"), p + 2  # type: ignore[union-attr]
    if real == T.GEOMETRY:
        name = _GEOMETRY_NAMES[geometry_type] if geometry_type < 8 else f"INVALID_GEOMETRY_TYPE({geometry_type})"
        return name, p + 1
    return "", p


def _optional(tm: TableMapEvent) -> dict[int, object]:
    """Decoded optional metadata by type (the last entry of a type wins, as in ``Optional_metadata_fields``)."""
    return {f.type_code: f.value if f.type_code != M.SIGNEDNESS else f.raw for f in tm.optional}


def columns_lines(tm: TableMapEvent) -> str:
    """The ``# Columns(...)`` lines of a table map, ``print_columns`` to the byte (its quirks included).

    A type the client cannot name prints ``INVALID_TYPE(n)`` and neither advances the metadata pointer nor
    prints a separator; charsets are taken in turn by the client's idea of a character column.
    """
    opt = _optional(tm)
    raw_sign = opt.get(M.SIGNEDNESS)
    signedness = bits_msb_first(raw_sign, len(raw_sign) * 8) if isinstance(raw_sign, bytes) else []
    charsets = _CharsetIter(opt.get(M.DEFAULT_CHARSET), opt.get(M.COLUMN_CHARSET))
    enum_set_charsets = _CharsetIter(opt.get(M.ENUM_AND_SET_DEFAULT_CHARSET), opt.get(M.ENUM_AND_SET_COLUMN_CHARSET))
    names = _list(opt.get(M.COLUMN_NAME))
    set_values = _list(opt.get(M.SET_STR_VALUE))
    enum_values = _list(opt.get(M.ENUM_STR_VALUE))
    geometry_types = _list(opt.get(M.GEOMETRY_TYPE))
    meta, p = tm.metadata + b"\0\0", 0  # a misaligned pointer may read past the block, the client reads garbage
    parts = ["# Columns("]
    n = tm.column_count
    geometry_type = 0
    for i, code in enumerate(tm.column_types):
        real = meta[p] if code == T.STRING and meta[p] in (T.ENUM, T.SET) else code
        cs = None
        if real in _CHARACTER:
            cs = charsets.next()
        elif real in (T.ENUM, T.SET):
            cs = enum_set_charsets.next()
        if names:
            parts.append(pretty_str(str(names.pop(0)), "`") + " ")
        if real == T.GEOMETRY:
            geometry_type = int(geometry_types.pop(0)) if geometry_types else 0  # type: ignore[call-overload]
        name, p = _type_name(real, meta, p, cs, geometry_type)
        if not name:
            parts.append(f"INVALID_TYPE({real})")
            continue
        parts.append(name)
        if real in _NUMERIC and signedness and signedness.pop(0):
            parts.append(" UNSIGNED")
        if not tm.null_bitmap[i // 8] & (1 << (i % 8)):
            parts.append(" NOT NULL")
        values = enum_values if real == T.ENUM else set_values if real == T.SET else None
        if values:
            parts.append("(" + ",".join(pretty_str(str(v)) for v in values.pop(0)) + ")")  # type: ignore[attr-defined]
        if cs is not None and (real in (T.ENUM, T.SET) or cs.number != collations.BINARY):
            parts.append(f" CHARSET {cs.name} COLLATE {cs.collation}")
        if i != n - 1:
            parts.append(",\n#         ")
    parts.append(")\n")
    return "".join(parts)


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def primary_key_line(tm: TableMapEvent) -> str:
    """``# Primary Key(id, doc(10))`` (names as logged, unquoted; the column index when names are not logged)."""
    opt = _optional(tm)
    simple = opt.get(M.SIMPLE_PRIMARY_KEY)
    prefixed = opt.get(M.PRIMARY_KEY_WITH_PREFIX)
    pairs: list[tuple[int, int]] = []
    if isinstance(prefixed, list) and prefixed:
        pairs = [(int(i), int(n)) for i, n in prefixed]
    elif isinstance(simple, list):
        pairs = [(int(i), 0) for i in simple]
    if not pairs:
        return ""
    names = _list(opt.get(M.COLUMN_NAME))
    keys = [(str(names[i]) if i < len(names) else str(i)) + (f"({n})" if n else "") for i, n in pairs]
    return f"# Primary Key({', '.join(keys)})\n"


# ---------------------------------------------------------------------------------------------------------------
# log_event_print_value: the type text of a value, and the per-table row printers


def value_type_name(col: Column) -> str:
    """The ``TYPE`` of ``/* TYPE meta=M ... */``: ``INT``, ``VARSTRING(200)``, ``ENUM(1 byte)``, ``DATETIME(6)``."""
    t, meta = col.real_type_code, col.meta
    simple: dict[int, str] = {
        T.LONG: "INT",
        T.TINY: "TINYINT",
        T.SHORT: "SHORTINT",
        T.INT24: "MEDIUMINT",
        T.LONGLONG: "LONGINT",
        T.FLOAT: "FLOAT",
        T.DOUBLE: "DOUBLE",
        T.TIMESTAMP: "TIMESTAMP",
        T.DATETIME: "DATETIME",
        T.TIME: "TIME",
        T.NEWDATE: "DATE",
        T.DATE: "DATE",
        T.YEAR: "YEAR",
        T.GEOMETRY: "GEOMETRY",
        T.JSON: "JSON",  # MySQL's binary JSON: mariadb-binlog has no name for it
    }
    if t in simple:
        return simple[t]
    if t == T.NEWDECIMAL:
        return f"DECIMAL({meta >> 8},{meta & 0xFF})"
    if t == T.BIT:
        return f"BIT({(meta >> 8) * 8 + (meta & 0xFF)})"
    if t in (T.TIMESTAMP2, T.DATETIME2, T.TIME2):
        return f"{_TEMPORAL2_NAMES[t]}({meta})"
    if t == T.ENUM:
        return "ENUM(1 byte)" if meta & 0xFF == 1 else f"ENUM({meta & 0xFF} bytes)"
    if t == T.SET:
        return f"SET({meta & 0xFF} bytes)"
    compressed = " COMPRESSED" if t in (T.BLOB_COMPRESSED, T.VARCHAR_COMPRESSED) else ""
    if t in (T.BLOB, T.BLOB_COMPRESSED, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        names = {1: "TINYBLOB/TINYTEXT", 2: "BLOB/TEXT", 3: "MEDIUMBLOB/MEDIUMTEXT", 4: "LONGBLOB/LONGTEXT"}
        return names.get(meta, f"BLOB({meta})") + compressed
    if t in (T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED):
        return f"VARSTRING({meta}){compressed}"
    if t == T.STRING:
        return f"STRING({col.length})"
    if t == T.VECTOR:
        return f"VECTOR({col.vector_dimension})" if col.vector_dimension is not None else "VECTOR"
    return T.name_of(t)


Renderer = Callable[[Column, object], str]


# ---------------------------------------------------------------------------------------------------------------
# the JSON diffs of a PARTIAL_UPDATE_ROWS after image, as MySQL's mysqlbinlog -vv prints them (mariadb-binlog
# cannot read these events): print_json_diff, json_wrapper_to_string and my_b_write_quoted in MySQL's
# sql/log_event.cc

# get_quote_table: \b \f \n \r \t \\ \' escaped, other bytes below 0x20 as \xNN, every other byte as is
_MYSQL_QUOTE = {c: b"\\x%02x" % c for c in range(32)}
_MYSQL_QUOTE.update({8: b"\\b", 12: b"\\f", 10: b"\\n", 13: b"\\r", 9: b"\\t", 92: b"\\\\", 39: b"\\'"})
_MYSQL_QUOTE_RE = re.compile(rb"[\x00-\x1f\\']")
_DIFF_SEPARATOR = "\n###      "


def mysql_quoted(raw: bytes) -> str:
    """MySQL's ``my_b_write_quoted``: ``'it\\'s'`` (bytes that are not UTF-8 come back as surrogate escapes)."""
    escaped = _MYSQL_QUOTE_RE.sub(lambda m: _MYSQL_QUOTE[m[0][0]], raw)
    return "'" + escaped.decode("utf-8", "surrogateescape") + "'"


def _json_diff_value(doc: bytes) -> str:
    """``json_wrapper_to_string(..., json_type=false)``: numbers, booleans and null as JSON prints them, strings
    and SQL scalars (dates, opaque values) as quoted text, objects and arrays as ``CAST('...' AS JSON)``."""
    value = json_binary.decode(doc)
    if isinstance(value, str):
        return mysql_quoted(value.encode("utf-8", "surrogatepass"))
    text = json_binary.dumps(value)
    if isinstance(value, dict | list):
        return f"CAST({mysql_quoted(text.encode('utf-8', 'surrogatepass'))} AS JSON)"
    if text.startswith('"'):  # a date, time or opaque value: its text without the JSON quotes
        return mysql_quoted(json.loads(text).encode("utf-8", "surrogatepass"))
    return text


def json_diff_text(diffs: Sequence[json_binary.JsonDiff], column: str) -> str:
    """``print_json_diff``: the diffs of one JSON column as nested calls on the column's old value.

    Consecutive diffs of one operation share one call; an INSERT whose path ends in ``]`` is JSON_ARRAY_INSERT.

    >>> from binlake.values.json_binary import JsonDiff, JsonDiffOperation as Op, encode
    >>> print(json_diff_text([JsonDiff(Op.REPLACE, "$.a", encode(1)), JsonDiff(Op.REMOVE, "$.b", None)], "@2"))
    JSON_REMOVE(
    ###      JSON_REPLACE(@2, '$.a', 1),
    ###      '$.b')
    """
    names = []
    for diff in diffs:
        if diff.operation == json_binary.JsonDiffOperation.REPLACE:
            names.append("JSON_REPLACE")
        elif diff.operation == json_binary.JsonDiffOperation.INSERT:
            names.append("JSON_ARRAY_INSERT" if diff.path.endswith("]") else "JSON_INSERT")
        else:
            names.append("JSON_REMOVE")
    calls = [names[i] + "(" for i in reversed(range(len(names))) if i == 0 or names[i - 1] != names[i]]
    out = [_DIFF_SEPARATOR.join(calls), column]
    if names:
        out.append(", ")
    for i, diff in enumerate(diffs):
        out.append(mysql_quoted(diff.path.encode("utf-8", "surrogatepass")))
        if diff.value is not None:
            out += (", ", _json_diff_value(diff.value))
        last = i == len(diffs) - 1
        if last or names[i + 1] != names[i]:
            out.append(")")
        if not last:
            out.append("," + _DIFF_SEPARATOR)
    return "".join(out)


def _json_value(document: Renderer, col: Column, value: object) -> str:
    """A JSON column's value: its document, or the diffs of a partial update (a list of ``JsonDiff``)."""
    if isinstance(value, list):
        return json_diff_text(value, f"@{col.index + 1}")
    return document(col, value)


def _renderers() -> dict[int, Renderer]:
    from binlake.values import decimal, enum_set, numeric, spatial, strings, temporal, vector

    table: dict[int, Renderer] = {}
    for mod in (numeric, decimal, temporal, strings, json_binary, spatial, enum_set, vector):
        table.update(getattr(mod, "RENDER", {}))
    table[T.JSON] = functools.partial(_json_value, table[T.JSON])
    return table


_RENDER = _renderers()


_INT_BITS: dict[int, int] = {T.TINY: 8, T.SHORT: 16, T.INT24: 24, T.LONG: 32, T.LONGLONG: 64}
_QUOTED = frozenset(  # rendered by strings.render_quoted (my_b_write_quoted)
    {T.STRING, T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED, T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB}
    | {T.BLOB_COMPRESSED}
)
_DATETIMES = frozenset({T.DATETIME2, T.DATETIME})
# Values printed as C's printf formats them, which Python's format specs reproduce (numeric.render_float/double)
_FORMAT_SPECS: dict[int, str] = {T.FLOAT: "<20g", T.DOUBLE: ".20g"}
RowsTextFn = Callable[[Sequence[Change], Callable[[str], None], str], None]


_LITERAL = str.maketrans(
    {"\\": "\\\\", '"': '\\"', "{": "{{", "}": "}}", **{chr(c): f"\\x{c:02x}" for c in (*range(32), 127)}}
)


def _lit(text: str) -> str:
    """``text`` as literal text of a generated triple-quoted f-string: braces doubled, quotes and controls escaped."""
    return text.translate(_LITERAL)


@dataclass(frozen=True, slots=True)
class _ValueCode:
    """How generated code prints one non-NULL value: ``stmts`` run first, then ``expr`` is formatted with
    ``conv`` (an f-string conversion or format spec: ``"!s"``, ``":f"``) between quotes when ``quoted``."""

    stmts: tuple[str, ...]
    expr: str
    conv: str = ""
    quoted: bool = False


def _value_code(col: Column, v: str, ns: dict[str, object]) -> _ValueCode:
    """The code that prints the non-NULL value held in variable ``v``.

    The common types print in line (``log_event_print_value``'s text, as the ``RENDER`` tables give it, which
    tests/render/test_dump.py checks value for value); an unusual value of them (a string with control bytes, an
    invalid date, an integer out of its type's range) and every other type go through the column's ``RENDER``
    function ``R<v>``.
    """
    code = col.real_type_code
    render = _RENDER.get(code)
    if render is None:  # a type no value family renders: its Python repr, rather than nothing
        return _ValueCode((), v, "!r")
    ns[f"R{v}"] = functools.partial(render, col)
    bits = _INT_BITS.get(code)
    if bits is not None:  # render_int: the bits as a signed number, then the unsigned reading when negative
        # (stored values come signed or unsigned as the column is: the likelier branch first)
        half, full = 1 << (bits - 1), 1 << bits
        negative = (f"elif -{half} <= {v} < 0:", f'    t{v} = f"{{{v}}} ({{{v} + {full}}})"')
        high = (f"elif {half} <= {v} < {full}:", f'    t{v} = f"{{{v} - {full}}} ({{{v}}})"')
        return _ValueCode(
            (
                f"if 0 <= {v} < {half}:",
                f"    t{v} = {v}",
                *((*high, *negative) if col.unsigned else (*negative, *high)),
                "else:",
                f"    t{v} = R{v}({v})",
            ),
            f"t{v}",
        )
    if code == T.NEWDECIMAL:  # format(d, "f"); str(d) is the same (and faster) while -exponent <= 6
        return _ValueCode((), v, "!s" if (col.scale if col.scale is not None else col.meta & 0xFF) <= 6 else ":f")
    spec = _FORMAT_SPECS.get(code)
    if spec is not None:
        return _ValueCode((), v, f":{spec}")
    if code in _QUOTED:  # no byte below 0x20 (isprintable() is False for all of them): the bytes as they are
        return _ValueCode(
            (f"s{v} = {v}.decode(U, SE)", f"if not s{v}.isprintable():", f"    s{v} = R{v}({v})[1:-1]"),
            f"s{v}",
            quoted=True,
        )
    if code in _DATETIMES:  # str(datetime): YYYY-MM-DD HH:MM:SS, then .ffffff unless microsecond is 0
        try:
            fsp = column_fsp(col)
        except BinlogError:
            return _ValueCode((), f"R{v}({v})")
        with_us = f"str({v})" if fsp == 6 else f"str({v})[:{19 + (fsp and fsp + 1)}]"
        zeros = "." + "0" * fsp if fsp else ""
        return _ValueCode(
            (
                f"if type({v}) is DT:",
                f"    s{v} = {with_us} if {v}.microsecond else str({v}) + {zeros!r}",
                "else:",
                f"    s{v} = R{v}({v})[1:-1]",
            ),
            f"s{v}",
            quoted=True,
        )
    return _ValueCode((), f"R{v}({v})")


def _image_code(
    columns: tuple[Column, ...],
    present: Sequence[bool],
    v: str,
    ns: dict[str, object],
    before: Sequence[bool] = (),
) -> tuple[list[str], list[str], str]:
    """``print_verbose_one_row`` of one image held in variable ``v``: the checks that it has no NULL where the fast
    code assumes none (NOT NULL columns), the statements, and the f-string part of its lines.

    ``before`` (the after image of an update): the columns present in the before image ``a``; a string or date
    equal to the before image's (an unchanged column) reuses its text.
    """
    checks: list[str] = []
    body: list[str] = []
    parts: list[str] = []
    for col, here in zip(columns, present, strict=True):
        if not here:
            continue
        var = f"{v}{col.index}"
        comment = _lit(f" /* {value_type_name(col)} meta={col.meta} nullable={int(col.nullable)} is_null=")
        code = _value_code(col, var, ns)
        quote = "'" if code.quoted else ""
        if col.nullable:
            # NULL and a value differ in the value text, its quotes and is_null: three variables, no inner f-string
            body += [f"if {var} is None:", f"    v{var} = 'NULL'", f"    n{var} = '1'"]
            if quote:
                body.append(f"    q{var} = ''")
            body += ["else:", *("    " + s for s in code.stmts)]
            value = f'f"{{{code.expr}{code.conv}}}"' if code.conv not in ("", "!s") else code.expr
            body += [f"    v{var} = {value}", f"    n{var} = '0'"]
            if quote:
                body.append(f'    q{var} = "{quote}"')
                quote = f"{{q{var}}}"
            parts.append(f"###   @{col.index + 1}={quote}{{v{var}}}{quote}{comment}{{n{var}}} */\\n")
        else:
            checks.append(f"{var} is None")
            if code.quoted and code.stmts and col.index < len(before) and before[col.index]:
                body += [f"if {var} == a{col.index}:", f"    {code.expr} = sa{col.index}", "else:"]
                body += ["    " + s for s in code.stmts]
            else:
                body += code.stmts
            parts.append(f"###   @{col.index + 1}={quote}{{{code.expr}{code.conv}}}{quote}{comment}0 */\\n")
    return checks, body, "".join(parts)


class _RowsText:
    """The ``### INSERT INTO ...``/``### WHERE``/``### SET`` text of the row changes of one layout.

    ``Rows_log_event::print_verbose``: the statement line, the clauses and one ``###   @N=value /* TYPE meta=M
    nullable=N is_null=N */`` line per present column.  :meth:`plain` prints it value by value through the
    ``RENDER`` tables.  Once a layout has printed :data:`_COMPILE_AFTER` row changes (compiling costs about as
    much as printing that many plainly), :meth:`text` generates one function for it whose f-string holds the whole
    text of a row change, its constant parts written into the code; NOT NULL columns print there without a NULL
    test, a row that has NULL in one anyway (a log that disagrees with its own table map) goes to :meth:`plain`.
    ``source`` is the generated code, for the curious.
    """

    __slots__ = ("_fast", "_lines", "_seen", "columns", "kind", "present", "source")

    def __init__(self, columns: tuple[Column, ...], kind: str, present: tuple[Sequence[bool], ...]):
        self.columns, self.kind, self.present = columns, kind, present
        self._seen = 0
        self._fast: RowsTextFn | None = None
        self.source = ""
        self._lines: list[tuple[Column, Renderer | None, str, str, str]] = []
        for col in columns:
            self._lines.append((col, _RENDER.get(col.real_type_code), *_line_texts(col)))

    def text(self, changes: Sequence[Change], append: Callable[[str], None], head: str) -> None:
        """Append the text of ``changes`` (each change one string), ``head`` being the ``### INSERT INTO ...`` line."""
        fast = self._fast
        if fast is None:
            self._seen += len(changes)
            if self._seen < _COMPILE_AFTER:
                self.plain(changes, append, head)
                return
            fast = self._fast = self.compiled()
        fast(changes, append, head)

    def plain(self, changes: Sequence[Change], append: Callable[[str], None], head: str) -> None:
        """:meth:`text` through the ``RENDER`` tables, value by value (a type without one prints its ``repr``)."""
        clauses = _SQL[self.kind][1:]
        for before, after in changes:
            images = (after,) if self.kind == "insert" else (before,) if self.kind == "delete" else (before, after)
            out = [head]
            for n, image in enumerate(images):
                if n == 1 and not any(self.present[1]):
                    out.append("### SET /* no columns */\n")
                    continue
                out.append(clauses[n] or "")
                for (col, render, prefix, suffix, null_line), value in zip(self._lines, image or (), strict=True):
                    if value is None:
                        out.append(null_line)
                    elif value is not ABSENT:
                        out += (prefix, repr(value) if render is None else render(col, value), suffix)
            append("".join(out))

    def compiled(self) -> RowsTextFn:
        """Generate and compile the function :meth:`text` runs for this layout."""
        columns, kind, present = self.columns, self.kind, self.present
        ns: dict[str, object] = {"U": "utf-8", "SE": "surrogateescape", "DT": datetime.datetime, "plain": self.plain}
        clauses = _SQL[kind][1:]
        images = ("a",) if kind == "delete" else ("b",) if kind == "insert" else ("a", "b")
        lines = ["def text(changes, append, head):", "    for a, b in changes:"]
        checks: list[str] = []
        body: list[str] = []
        fstring = ["{head}"]
        for n, (image, bits) in enumerate(zip(images, present, strict=True)):
            fstring.append(_lit(clauses[n] or ""))
            if n == 1 and not any(bits):
                fstring[-1] = _lit("### SET /* no columns */\n")
                continue
            c, b, f = _image_code(columns, bits, image, ns, () if n == 0 else present[0])
            lines.append(f"        {', '.join(f'{image}{i}' for i in range(len(columns)))}, = {image}")
            checks += c
            body += b
            fstring.append(f)
        if checks:
            lines += [
                f"        if {' or '.join(checks)}:",
                "            plain(((a, b),), append, head)",
                "            continue",
            ]
        lines += ["        " + s for s in body]
        lines.append(f'        append(f"""{"".join(fstring)}""")')
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, f"<{kind} text of {len(columns)} columns>", "exec"), ns)
        return cast(RowsTextFn, ns["text"])


def _line_texts(col: Column) -> tuple[str, str, str]:
    """The constant parts of a column's value line: ``###   @N=``, `` /* TYPE meta=M nullable=N is_null=0 */\n``
    and the whole NULL line."""
    comment = f"{value_type_name(col)} meta={col.meta} nullable={int(col.nullable)}"
    prefix = f"###   @{col.index + 1}="
    return prefix, f" /* {comment} is_null=0 */\n", f"{prefix}NULL /* {comment} is_null=1 */\n"


# Kinds of binlake._speedups.TextPlan's columns (its enum; keep in step): per real type, the kind and a function of
# the column giving its two parameters, read exactly as binlake.values' readers read them.  ENUM and SET only in
# the sizes their readers take; every other type is printed by the Python path.
_TEXT_KINDS: dict[int, tuple[int, Callable[[Column], tuple[int, int]]]] = {
    **{code: (1, lambda c: (_INT_BITS[c.real_type_code] // 8, 0)) for code in _INT_BITS},
    **FIXED_KINDS,
    **{code: (11, lambda c: (length_bytes(c), 0)) for code in _QUOTED},
    T.ENUM: (12, lambda c: (c.length if c.length in (1, 2) else 0, 0)),
    T.SET: (13, lambda c: (c.length if c.length in (1, 2, 3, 4, 8) else 0, 0)),
}


def text_plan(columns: tuple[Column, ...], kind: str, present: Sequence[bytes]) -> TextPlan | None:
    """The compiled printer of one layout's row images (``binlake._speedups.TextPlan``), ``present`` being the
    columns-present bitmap of each image; ``None`` when the extension is not there or a column is one it does not
    print (JSON, GEOMETRY, old temporal types, impossible metadata): the Python printer prints those."""
    if TextPlan is None:
        return None
    images = []
    for clause, bits in zip(_SQL[kind][1:], present, strict=False):
        cols = []
        for col, here in zip(columns, bits_lsb_first(bits, len(columns)), strict=True):
            if not here:
                continue
            spec = _TEXT_KINDS.get(col.real_type_code)
            if spec is None:
                return None
            try:
                p1, p2 = spec[1](col)
            except BinlogError:
                return None
            prefix, suffix, null_line = _line_texts(col)
            cols.append((spec[0], p1, p2, prefix.encode(), suffix.encode(), null_line.encode()))
        images.append(((clause or "").encode(), tuple(cols)))
    try:
        return TextPlan(tuple(images))
    except ValueError:  # a length or precision the C printer does not take
        return None


def _presence(image: Image | None) -> tuple[bool, ...]:
    """Which columns an image holds (those not :data:`ABSENT`)."""
    return tuple(value is not ABSENT for value in image or ())


# ---------------------------------------------------------------------------------------------------------------
# the printer


@dataclass(slots=True)
class DumpOptions:
    """What ``binlake dump`` prints: the options of ``mariadb-binlog`` it supports."""

    start_position: int | None = None
    stop_position: int | None = None
    start_datetime: int | None = None
    stop_datetime: int | None = None
    database: str | None = None
    table: str | None = None
    flashback: bool = False
    table_metadata: bool = True
    verify_checksum: bool = True
    key_file: str | None = None
    schema_sql: str | None = None
    on_error: str = "stop"


_ROWS_NAMES: dict[int, str] = {
    E.WRITE_ROWS_EVENT: "Write_rows",
    E.WRITE_ROWS_EVENT_V1: "Write_rows",
    E.UPDATE_ROWS_EVENT: "Update_rows",
    E.UPDATE_ROWS_EVENT_V1: "Update_rows",
    E.DELETE_ROWS_EVENT: "Delete_rows",
    E.DELETE_ROWS_EVENT_V1: "Delete_rows",
    E.WRITE_ROWS_COMPRESSED_EVENT: "Write_compressed_rows",
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: "Write_compressed_rows",
    E.UPDATE_ROWS_COMPRESSED_EVENT: "Update_compressed_rows",
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1: "Update_compressed_rows",
    E.DELETE_ROWS_COMPRESSED_EVENT: "Delete_compressed_rows",
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: "Delete_compressed_rows",
    E.PARTIAL_UPDATE_ROWS_EVENT: "Update_rows_partial",
    E.PRE_GA_WRITE_ROWS_EVENT: "Write_rows",
    E.PRE_GA_UPDATE_ROWS_EVENT: "Update_rows",
    E.PRE_GA_DELETE_ROWS_EVENT: "Delete_rows",
}
_FLASHBACK_NAMES = {"Write_rows": "Delete_rows", "Delete_rows": "Write_rows"}
_SQL: dict[str, tuple[str, str, str | None]] = {
    "insert": ("INSERT INTO", "### SET\n", None),
    "delete": ("DELETE FROM", "### WHERE\n", None),
    "update": ("UPDATE", "### WHERE\n", "### SET\n"),
}


# Query/GTID flags the printer reads (MariaDB sql/log_event.h, sql/sql_priv.h)
_THREAD_SPECIFIC_F = 0x4
_SUPPRESS_USE_F = 0x8
_SKIP_REPLICATION_F = 0x400
_IGNORABLE_F = 0x80
# Log_event::get_type_str of the types printed by name
_TYPE_STR: dict[int, str] = {E.START_ENCRYPTION_EVENT: "Start_encryption"}
_FL_STANDALONE, _FL_GROUP_COMMIT_ID, _FL_TRANSACTIONAL, _FL_ALLOW_PARALLEL = 0x01, 0x02, 0x04, 0x08
_FL_WAITED, _FL_DDL, _FL_PREPARED_XA, _FL_COMPLETED_XA = 0x10, 0x20, 0x40, 0x80
_FL_START_ALTER, _FL_COMMIT_ALTER, _FL_ROLLBACK_ALTER = 0x02, 0x04, 0x08
# (Q_FLAGS2 bit, printed inverted, session variable) in print_query_header's order
_FLAGS2_PRINTED = (
    (1 << 26, True, "foreign_key_checks"),
    (1 << 14, False, "sql_auto_is_null"),
    (1 << 27, True, "unique_checks"),
    (1 << 19, True, "autocommit"),
    (1 << 29, True, "check_constraint_checks"),
    (1 << 30, False, "sql_if_exists"),
    (1 << 24, False, "explicit_defaults_for_timestamp"),
    (1 << 31, False, "system_versioning_insert_history"),
)
_MARIADB_OPTIONS = frozenset({1 << 30, 1 << 24, 1 << 31})  # logged only by MariaDB (options_written_to_bin_log)
_LOAD_DIR = "/tmp"  # where mariadb-binlog would write LOAD DATA files (its --local-load default, the tmpdir)
_LOAD_DUP_REPLACE = 2


def _is_trans_keyword(query: bytes, is_xa: bool) -> bool:
    """``Query_log_event::is_trans_keyword``: statements that never change the current database."""
    if is_xa:
        return query[:3].upper() == b"XA "
    return (
        query == b"BEGIN"[: len(query)]
        or query == b"COMMIT"[: len(query)]
        or query[:9].upper() == b"SAVEPOINT"
        or query[:8].upper() == b"ROLLBACK"
    )


def _xid_text(format_id: int, gtrid: bytes, bqual: bytes) -> str:
    """``XID::serialize``: ``X'7866',X'626e31',1``."""
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{format_id}"


def _c_g(value: float, precision: int) -> str:
    """C's ``%.{precision}g``."""
    return f"{value:.{precision}g}"


@dataclass(slots=True)
class _Session:
    """``PRINT_EVENT_INFO``: what was printed last, so that SET statements repeat only on change."""

    db: str = ""
    flags2: int | None = None
    sql_mode: int | None = None
    auto_increment: tuple[int, int] = (0, 0)
    charset: tuple[int, ...] | None = None
    time_zone: str = ""
    lc_time_names: int = -1
    charset_database: int = -1
    thread_id: int | None = None
    allow_parallel: bool | None = None
    domain_id: int | None = None
    server_id: int | None = None
    gtid_flags2: int = 0
    skip_replication: int = 0


@dataclass(slots=True)
class TextPrinter:
    """Turns events into ``mariadb-binlog`` text; :meth:`feed` one event at a time, :meth:`finish` at the end.

    ``write`` receives the text in large chunks (str with surrogate escapes for bytes that are not UTF-8).
    """

    write: Callable[[str], None]
    options: DumpOptions = field(default_factory=DumpOptions)
    session: _Session = field(default_factory=_Session)
    _out: list[str] = field(default_factory=list)
    _size: int = 0
    _head: list[str] = field(default_factory=list)  # head_cache: headers waiting for the end of a statement
    _tail: list[str] = field(default_factory=list)  # tail_cache: the rows text of the statement so far
    _annotate: list[str] | None = None  # a kept ANNOTATE_ROWS (printed with the next table map)
    _row_count: int = 0
    _ignored: set[int] = field(default_factory=set)  # table ids whose maps --database/--table filter out
    _stmt: list[RowsEvent] = field(default_factory=list)  # --flashback: rows events of the current statement
    _undo: list[str] = field(default_factory=list)  # --flashback: each buffered event's text, printed reversed
    _stop: str = ""  # --flashback: the STOP event's text, printed last
    _texts: dict[tuple[int, str, tuple[tuple[bool, ...], ...]], tuple[tuple[Column, ...], _RowsText]] = field(
        default_factory=dict
    )
    _meta_lines: dict[tuple[int, int], tuple[tuple[Column, ...], tuple[OptionalField, ...], str]] = field(
        default_factory=dict
    )
    _text_plans: dict[tuple[int, str, bytes, bytes | None], tuple[tuple[Column, ...], TextPlan | None]] = field(
        default_factory=dict
    )
    _started: bool = False  # --start-datetime reached
    _ts_cache: tuple[int, str] = (-1, "")
    _checksum_on: bool = True
    _options_mask: int = 0xFFFFFFFF  # options_written_to_bin_log of the format description in force

    def begin(self) -> None:
        """The lines every dump starts with (``main`` in mysqlbinlog.cc)."""
        self._emit(
            "/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;\n"
            "/*!40019 SET @@session.max_delayed_threads=0*/;\n"
            "/*!50003 SET @OLD_COMPLETION_TYPE=@@COMPLETION_TYPE,COMPLETION_TYPE=0*/;\n"
            f"DELIMITER {DELIM}\n"
        )

    def finish(self) -> None:
        """The closing lines (and, with ``--flashback``, every held-back event's text in reverse order)."""
        if self.options.flashback:
            self._emit("".join(reversed(self._undo)))
            self._emit(f"COMMIT\n{DELIM}\n")
            self._emit(self._stop)
        self._emit("DELIMITER ;\n")
        self._emit(
            "# End of log file\nROLLBACK /* added by mysqlbinlog */;\n"
            "/*!50003 SET COMPLETION_TYPE=@OLD_COMPLETION_TYPE*/;\n"
            "/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n"
        )
        self.flush()

    def flush(self) -> None:
        if self._out:
            self.write("".join(self._out))
            self._out.clear()
            self._size = 0

    # -- output plumbing ----------------------------------------------------------------------------------------

    def _emit(self, text: str) -> None:
        """Straight to the result file."""
        self._out.append(text)
        self._size += len(text)
        if self._size > FLUSH_AT:
            self.flush()

    def _emit_parts(self, parts: list[str]) -> None:
        self._out += parts
        self._size += sum(map(len, parts))
        if self._size > FLUSH_AT:
            self.flush()

    def _event_text(self, text: str) -> None:
        """An event's own output buffer: printed at once, or held back for reversal under ``--flashback``."""
        if self.options.flashback:
            self._undo.append(text)
        else:
            self._emit(text)

    def _header(self, ev: Event) -> str:
        """``Log_event::print_header``: ``#261122 10:27:21 server id 1  end_log_pos 710 CRC32 0xaa425603 ``."""
        h = ev.header
        ts, text = self._ts_cache
        if ts != h.timestamp:
            t = time.localtime(h.timestamp)
            text = f"{t.tm_year % 100:02d}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:2d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            self._ts_cache = (h.timestamp, text)
        crc = f"CRC32 0x{h.checksum:08x} " if h.checksum is not None and self._checksum_on else ""
        return f"#{text} server id {h.server_id}  end_log_pos {h.log_pos} {crc}"

    # -- events -------------------------------------------------------------------------------------------------

    def feed(self, ev: Event) -> bool:
        """Print one event; ``False`` when ``--stop-position``/``--stop-datetime`` ends the dump here."""
        h = ev.header
        opts = self.options
        if isinstance(ev, FormatDescriptionEvent):
            self._checksum_on = ev.checksum_alg == 1
            self._options_mask = 0xFFFFFFFF if ev.is_mariadb else ~sum(_MARIADB_OPTIONS) & 0xFFFFFFFF
        elif not self._started:
            if opts.start_datetime is not None and h.timestamp < opts.start_datetime:
                return True
            self._started = True  # from the first event past --start-datetime on, print everything
        if (opts.stop_datetime is not None and h.timestamp >= opts.stop_datetime) or (
            opts.stop_position is not None and h.in_payload is None and h.pos >= opts.stop_position
        ):
            return False
        if not opts.flashback and h.in_payload is None:
            self._emit(f"# at {h.pos}\n")
        handler = _HANDLERS.get(h.type_code)
        if handler is not None and not isinstance(ev, RawEvent):  # a prototype log's TABLE_MAP comes undecoded
            handler(self, ev)
        elif isinstance(ev, RowsEvent):
            self._rows(ev)
        else:
            self._unknown(ev)
        return True

    def _fde(self, ev: Event) -> None:
        assert isinstance(ev, FormatDescriptionEvent)
        if self.options.start_position is not None and self.options.start_position > 4 and ev.header.pos == 4:
            return  # read only for its format (check_header): --base64-output=DECODE-ROWS does not print it
        t = time.localtime(ev.header.timestamp)
        created = f"{t.tm_year % 100:02d}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:2d}:{t.tm_min:02d}:{t.tm_sec:02d}"
        text = (
            f"{self._header(ev)}\tStart: binlog v {ev.binlog_version}, server v {ev.server_version} created {created}"
            + (" at startup" if ev.create_timestamp else "")
            + "\n"
        )
        if ev.in_use:
            text += "# Warning: this binlog is either in use or was not closed properly.\n"
        if ev.create_timestamp and not ev.header.flags & 0x20:
            text += f"ROLLBACK{DELIM}\n"
        self._emit(text)

    def _table_map(self, ev: Event) -> None:
        assert isinstance(ev, TableMapEvent)
        opts = self.options
        if (opts.database is not None and ev.schema != opts.database) or (
            opts.table is not None and ev.table != opts.table
        ):
            self._ignored.add(ev.table_id)
            return
        self._ignored.discard(ev.table_id)
        if self._annotate is not None:
            self._head.extend(self._annotate)
            self._annotate = None
        triggers = " (has triggers)" if ev.flags & 0x4000 else ""  # TM_BIT_HAS_TRIGGERS_F (MariaDB)
        self._head.append(
            f"{self._header(ev)}\tTable_map: {backtick(ev.schema)}.{backtick(ev.table)} "
            f"mapped to number {ev.table_id}{triggers}\n"
        )
        if opts.table_metadata:
            self._head.append(self._metadata_lines(ev))
        self._emit("".join(self._head))
        self._head.clear()
        self._stmt.clear()

    def _metadata_lines(self, tm: TableMapEvent) -> str:
        """``# Columns(...)`` and ``# Primary Key(...)``, made once per layout: a table map decoded again returns
        the same ``columns`` and ``optional`` tuples (``table_map._layout`` is cached), which hold all they print."""
        key = (id(tm.columns), id(tm.optional))
        cached = self._meta_lines.get(key)
        if cached is None or cached[0] is not tm.columns or cached[1] is not tm.optional:
            if len(self._meta_lines) >= _TEXTS_KEPT:
                self._meta_lines.clear()
            cached = (tm.columns, tm.optional, columns_lines(tm) + primary_key_line(tm))
            self._meta_lines[key] = cached
        return cached[2]

    def _annotate_rows(self, ev: Event) -> None:
        assert isinstance(ev, AnnotateRowsEvent)
        text = ev.query_raw
        lines = [f"{self._header(ev)}\tAnnotate_rows:\n"]
        for line in text.replace(b"\r", b"\n").split(b"\n"):
            if line:
                lines.append("#Q> " + line.decode("utf-8", "surrogateescape") + "\n")
        self._annotate = lines

    def _rows(self, ev: RowsEvent) -> None:
        """``print_row_event``: hold each event's text until the statement ends, then print it all."""
        stmt_end = ev.stmt_end
        if stmt_end:
            self._annotate = None  # an ANNOTATE_ROWS whose table maps were all filtered away
        if ev.table_id in self._ignored:
            if stmt_end:
                self._ignored.clear()
                self._emit("".join(self._head))
                self._head.clear()
            return
        if self.options.flashback:
            self._stmt.append(ev)
            if stmt_end:
                for i, e in enumerate(reversed(self._stmt)):
                    self._rows_text(e, flashback=True, stmt_end=i == len(self._stmt) - 1)
                self._stmt.clear()
        else:
            self._rows_text(ev, flashback=False, stmt_end=stmt_end)
        if stmt_end:
            self._emit(f"# Number of rows: {self._row_count}\n")
            self._row_count = 0

    def _rows_text(self, ev: RowsEvent, flashback: bool, stmt_end: bool) -> None:
        """``Rows_log_event::print_helper`` + ``print_verbose``: the header to head, the rows to tail."""
        name = _ROWS_NAMES.get(ev.header.type_code, ev.header.type)
        if flashback and not ev.compressed:
            name = _FLASHBACK_NAMES.get(name, name)
        self._head.append(
            f"{self._header(ev)}\t{name}: table id {ev.table_id}{' flags: STMT_END_F' if stmt_end else ''}\n"
        )
        tail = self._tail
        if ev.extra is not None and ev.extra.ndb_format is not None:
            data = ev.extra.ndb_data or b""
            tail.append(f"### Extra row data format: {ev.extra.ndb_format}, len: {len(data)} :")
            tail.append(("0x" + data.hex().upper() if data else "") + "\n")
        tm = ev.table_map
        if tm is None:
            tail.append(f"### Row event for unknown table #{ev.table_id}")
        elif flashback or not self._compiled_text(ev, tm):
            changes: Sequence[Change] = ev.rows(typed=False)
            kind: str = ev.kind
            if flashback:
                kind, changes = invert(kind, changes)
            self._changes_text(tm, kind, changes)
        if stmt_end:
            if self.options.flashback:
                self._undo.append("".join(self._head) + "".join(tail))
            else:  # the pieces themselves: joined once, in flush()
                self._emit_parts(self._head)
                self._emit_parts(tail)
            self._head.clear()
            tail.clear()

    def _compiled_text(self, ev: RowsEvent, tm: TableMapEvent) -> bool:
        """The rows text of ``ev`` straight from its row images by the compiled printer (:func:`text_plan`), when
        it takes the event; ``False`` leaves it to the Python path (decoded rows through :class:`_RowsText`)."""
        if TextPlan is None or ev.partial or not ev.rows_data or tm.column_count != ev.column_count:
            return False
        after = ev.columns_after if ev.kind == "update" else None
        key = (id(tm.columns), ev.kind, ev.columns_before, after)
        cached = self._text_plans.get(key)
        if cached is None or cached[0] is not tm.columns:
            if len(self._text_plans) >= _TEXTS_KEPT:
                self._text_plans.clear()
            present = (ev.columns_before,) if after is None else (ev.columns_before, after)
            cached = (tm.columns, text_plan(tm.columns, ev.kind, present))
            self._text_plans[key] = cached
        plan = cached[1]
        if plan is None:
            return False
        head = f"### {_SQL[ev.kind][0]} {backtick(tm.schema)}.{backtick(tm.table)}\n"
        try:
            done = plan.text(ev.rows_data, head.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:  # a name with a lone surrogate that is no escaped byte
            return False
        if done is None:
            return False
        self._tail.append(done[0])
        self._row_count += done[1]
        return True

    def _changes_text(self, tm: TableMapEvent, kind: str, changes: Sequence[Change]) -> None:
        tail = self._tail
        table = f"{backtick(tm.schema)}.{backtick(tm.table)}"
        if kind == "insert" and not changes:
            self._row_count += 1
            tail.append(f"### INSERT INTO {table} VALUES ()\n")
            return
        if not changes:
            return
        before, after = changes[0]  # every change of an event has the same columns in its images
        present = (
            (_presence(after),)
            if kind == "insert"
            else (_presence(before),)
            if kind == "delete"
            else (_presence(before), _presence(after))
        )
        key = (id(tm.columns), kind, present)
        cached = self._texts.get(key)
        if cached is None or cached[0] is not tm.columns:
            if len(self._texts) >= _TEXTS_KEPT:
                self._texts.clear()
            cached = (tm.columns, _RowsText(tm.columns, kind, present))
            self._texts[key] = cached
        self._row_count += len(changes)
        cached[1].text(changes, tail.append, f"### {_SQL[kind][0]} {table}\n")

    # -- statements (Query_log_event::print_query_header / print) -----------------------------------------------

    def _query(self, ev: Event) -> None:
        assert isinstance(ev, QueryEvent)
        state = self.session
        is_xa = bool(state.gtid_flags2 & (_FL_PREPARED_XA | _FL_COMPLETED_XA))
        trans = _is_trans_keyword(ev.query_raw, is_xa)
        if not trans and self.options.database is not None and ev.db != self.options.database:
            return
        suppress_use = trans or bool(ev.header.flags & _SUPPRESS_USE_F)
        self._skip_replication(ev)
        load = isinstance(ev, ExecuteLoadQueryEvent)
        name = (
            "Execute_load_query"
            if load
            else ("Query_compressed" if ev.header.type_code == E.QUERY_COMPRESSED_EVENT else "Query")
        )
        xid = ev.status("XID")
        out = [
            f"{self._header(ev)}\t{name}\tthread_id={ev.thread_id}\texec_time={ev.exec_time}\t"
            f"error_code={ev.error_code}\txid={xid if isinstance(xid, int) else 0}\n"
        ]
        if suppress_use:
            if not _is_trans_keyword(ev.query_raw, is_xa):
                state.db = ""
        elif ev.db is not None:
            different = state.db != ev.db
            state.db = ev.db
            if ev.db and different:
                out.append(f"use {backtick(ev.db)}{DELIM}\n")
        micro = ev.status("HRNOW")
        frac = f".{micro:06d}" if isinstance(micro, int) and 0 < micro <= 999999 else ""
        out.append(f"SET TIMESTAMP={ev.header.timestamp}{frac}{DELIM}\n")
        if state.thread_id is None or (ev.header.flags & _THREAD_SPECIFIC_F and ev.thread_id != state.thread_id):
            out.append(f"SET @@session.pseudo_thread_id={ev.thread_id}{DELIM}\n")
            state.thread_id = ev.thread_id
        flags2 = ev.status("FLAGS2")
        if isinstance(flags2, int):
            changed = 0xFFFFFFFF if state.flags2 is None else state.flags2 ^ flags2
            if changed:
                sets = []
                for bit, inverted, var in _FLAGS2_PRINTED:
                    if changed & bit & (self._options_mask if bit in _MARIADB_OPTIONS else bit):
                        sets.append(f"@@session.{var}={int(bool(flags2 & bit) != inverted)}")
                out.append(f"SET {', '.join(sets)}{DELIM}\n")
                state.flags2 = flags2
        sql_mode = ev.status("SQL_MODE")
        if isinstance(sql_mode, int) and sql_mode != state.sql_mode:
            out.append(f"SET @@session.sql_mode={sql_mode}{DELIM}\n")
            state.sql_mode = sql_mode
        auto = ev.status("AUTO_INCREMENT")
        auto_inc = auto if isinstance(auto, tuple) else (1, 1)
        if auto_inc != state.auto_increment:
            out.append(
                f"SET @@session.auto_increment_increment={auto_inc[0]}, "
                f"@@session.auto_increment_offset={auto_inc[1]}{DELIM}\n"
            )
            state.auto_increment = auto_inc
        charset = ev.status("CHARSET")
        if isinstance(charset, tuple) and charset != state.charset:
            cs = collations.charset_name(charset[0])
            out.append(f"/*!\\C {cs} */{DELIM}\n" if cs is not None else "# Ignored (Unknown charset) ")
            out.append(
                f"SET @@session.character_set_client={cs or 'Unknown'},@@session.collation_connection={charset[1]},"
                f"@@session.collation_server={charset[2]}{DELIM}\n"
            )
            state.charset = charset
        tz = ev.status("TIME_ZONE")
        if isinstance(tz, str) and tz and tz != state.time_zone:
            out.append(f"SET @@session.time_zone='{tz}'{DELIM}\n")
            state.time_zone = tz
        lc = ev.status("LC_TIME_NAMES")
        lc_time = lc if isinstance(lc, int) else 0
        if lc_time != state.lc_time_names:
            out.append(f"SET @@session.lc_time_names={lc_time}{DELIM}\n")
            state.lc_time_names = lc_time
        cdb = ev.status("CHARSET_DATABASE")
        charset_db = cdb if isinstance(cdb, int) else 0
        if charset_db != state.charset_database:
            out.append(f"SET @@session.collation_database={charset_db or 'DEFAULT'}{DELIM}\n")
            state.charset_database = charset_db
        query = ev.query_raw.decode("utf-8", "surrogateescape")
        gtid3 = ev.status("GTID_FLAGS3")
        alter = isinstance(gtid3, tuple) and gtid3[0] & (_FL_START_ALTER | _FL_COMMIT_ALTER | _FL_ROLLBACK_ALTER)
        if isinstance(ev, ExecuteLoadQueryEvent):
            raw = ev.query_raw
            local = f"{_LOAD_DIR}/SQL_LOAD_MB-{ev.file_id:x}-0"
            out.append(
                raw[: ev.fn_pos_start].decode("utf-8", "surrogateescape")
                + " LOCAL INFILE "
                + pretty_str(local)
                + (" REPLACE" if ev.dup_handling == _LOAD_DUP_REPLACE else "")
                + " INTO"
                + raw[ev.fn_pos_end :].decode("utf-8", "surrogateescape")
                + f"\n{DELIM}\n# file_id: {ev.file_id} \n"
            )
            self._emit("".join(out))  # Execute_load_query_log_event::print writes straight out, even under flashback
            return
        if self.options.flashback:
            if ev.query_raw == b"BEGIN":
                out.append(f"COMMIT\n{DELIM}\n")
            elif ev.query_raw == b"COMMIT":
                out.append(f"START TRANSACTION\n{DELIM}\n")
        elif alter:
            out.append(f"### {query}\n")
        else:
            out.append(f"{query}\n{DELIM}\n")
        self._event_text("".join(out))

    def _skip_replication(self, ev: Event) -> None:
        """``print_skip_replication_statement``: only when LOG_EVENT_SKIP_REPLICATION_F changes."""
        flag = int(bool(ev.header.flags & _SKIP_REPLICATION_F))
        if flag != self.session.skip_replication:
            self._emit(f"/*!50521 SET skip_replication={flag}*/{DELIM}\n")
            self.session.skip_replication = flag

    # -- transaction and control events --------------------------------------------------------------------------

    def _gtid(self, ev: Event) -> None:
        """``Gtid_log_event::print`` (MariaDB GTID)."""
        assert isinstance(ev, MariaGtidEvent)
        state = self.session
        out = []
        flashback = self.options.flashback
        if not flashback:
            words = [f"{self._header(ev)}\tGTID {ev.domain_id}-{ev.header.server_id}-{ev.seq_no}"]
            if ev.flags & _FL_GROUP_COMMIT_ID:
                words.append(f" cid={ev.commit_id}")
            for bit, word in ((_FL_DDL, " ddl"), (_FL_TRANSACTIONAL, " trans"), (_FL_WAITED, " waited")):
                if ev.flags & bit:
                    words.append(word)
            if ev.flags_extra & _FL_START_ALTER:
                words.append(" START ALTER")
            if ev.flags_extra & _FL_COMMIT_ALTER:
                words.append(f" COMMIT ALTER id= {ev.sa_seq_no}")
            if ev.flags_extra & _FL_ROLLBACK_ALTER:
                words.append(f" ROLLBACK ALTER id= {ev.sa_seq_no}")
            out.append("".join(words) + "\n")
            parallel = bool(ev.flags & _FL_ALLOW_PARALLEL)
            if state.allow_parallel is None or state.allow_parallel != parallel:
                out.append(f"/*M!100101 SET @@session.skip_parallel_replication={int(not parallel)}*/{DELIM}\n")
                state.allow_parallel = parallel
            if state.domain_id != ev.domain_id:
                out.append(f"/*M!100001 SET @@session.gtid_domain_id={ev.domain_id}*/{DELIM}\n")
                state.domain_id = ev.domain_id
            if state.server_id != ev.header.server_id:
                out.append(f"/*M!100001 SET @@session.server_id={ev.header.server_id}*/{DELIM}\n")
                state.server_id = ev.header.server_id
            out.append(f"/*M!100001 SET @@session.gtid_seq_no={ev.seq_no}*/{DELIM}\n")
        if ev.flags & _FL_PREPARED_XA and not flashback and ev.xid is not None:
            out.append(f"XA START {_xid_text(*ev.xid)}{DELIM}\n")
        elif not ev.flags & _FL_STANDALONE:
            out.append(f"COMMIT\n{DELIM}\n" if flashback else f"START TRANSACTION\n{DELIM}\n")
        state.gtid_flags2 = ev.flags
        self._event_text("".join(out))

    def _gtid_list(self, ev: Event) -> None:
        assert isinstance(ev, GtidListEvent)
        gtids = sorted(ev.gtids, key=lambda g: (g.domain_id, g.server_id, g.seq_no))
        listed = ",\n# ".join(f"{g.domain_id}-{g.server_id}-{g.seq_no}" for g in gtids)
        self._emit(f"{self._header(ev)}\tGtid list [{listed}]\n")

    def _checkpoint(self, ev: Event) -> None:
        assert isinstance(ev, BinlogCheckpointEvent)
        name = ev.binlog_file_raw.decode("utf-8", "surrogateescape")
        self._emit(f"{self._header(ev)}\tBinlog checkpoint {name}\n")

    def _rotate(self, ev: Event) -> None:
        assert isinstance(ev, RotateEvent)
        name = ev.name_raw.decode("utf-8", "surrogateescape")
        self._emit(f"{self._header(ev)}\tRotate to {name}  pos: {ev.position}\n")

    def _xid(self, ev: Event) -> None:
        assert isinstance(ev, XidEvent)
        end = "START TRANSACTION" if self.options.flashback else "COMMIT"
        self._event_text(f"{self._header(ev)}\tXid = {ev.xid}\n{end}{DELIM}\n")

    def _xa_prepare(self, ev: Event) -> None:
        assert isinstance(ev, XaPrepareEvent)
        xid = _xid_text(ev.format_id, ev.gtrid, ev.bqual)
        self._event_text(f"{self._header(ev)}\tXID = {xid}\nXA PREPARE {xid}\n{DELIM}\n")

    def _intvar(self, ev: Event) -> None:
        assert isinstance(ev, IntvarEvent)
        name = {1: "LAST_INSERT_ID", 2: "INSERT_ID"}.get(ev.kind, "INVALID_INT")
        self._emit(f"{self._header(ev)}\tIntvar\nSET {name}={ev.value}{DELIM}\n")

    def _rand(self, ev: Event) -> None:
        assert isinstance(ev, RandEvent)
        self._emit(f"{self._header(ev)}\tRand\nSET @@RAND_SEED1={ev.seed1}, @@RAND_SEED2={ev.seed2}{DELIM}\n")

    def _user_var(self, ev: Event) -> None:
        """``User_var_log_event::print``: strings in hex with their charset, numbers as the server printed them."""
        assert isinstance(ev, UserVarEvent)
        name = ev.name_raw.decode("utf-8", "surrogateescape")
        text = f"{self._header(ev)}\tUser_var\nSET @{backtick(name)}"
        raw = ev.value_raw
        if ev.is_null:
            value = "NULL"
        elif ev.value_type == 1:  # REAL_RESULT
            value = _c_g(struct.unpack("<d", raw[:8])[0], 14)
        elif ev.value_type == 2:  # INT_RESULT
            n = int.from_bytes(raw[:8], "little", signed=not (ev.flags or 0) & 1)
            value = str(n)
        elif ev.value_type == 4:  # DECIMAL_RESULT: precision, scale, then the binary decimal
            col = Column.build(0, T.NEWDECIMAL, raw[:2])
            dec, _ = reader_for(col)(raw, 2)
            value = _RENDER[T.NEWDECIMAL](col, dec)
        else:  # STRING_RESULT
            cs = collations.charset_name(ev.charset)
            coll = collations.collation_name(ev.charset, mariadb=True)
            value = "???" if cs is None or coll is None else f"_{cs} X'{raw.hex().upper()}' COLLATE `{coll}`"
        self._emit(f"{text}:={value}{DELIM}\n")

    def _stop_event(self, ev: Event) -> None:
        assert isinstance(ev, StopEvent)
        text = f"{self._header(ev)}\tStop\n"
        if self.options.flashback:
            self._stop = text
        else:
            self._emit(text)

    def _start_encryption(self, ev: Event) -> None:
        assert isinstance(ev, StartEncryptionEvent)
        if ev.header.flags & _IGNORABLE_F:  # as a server sends it to replicas, the log after it decrypted
            self._unknown(ev)
            return
        self._emit(
            f"# Encryption scheme: {ev.crypto_scheme}, key_version: {ev.key_version}, nonce: {ev.nonce.hex()}\n"
            "# The rest of the binlog is encrypted!\n"
        )

    def _file_block(self, ev: Event) -> None:
        """``Append_block_log_event::print`` (BEGIN_LOAD_QUERY prints the same, under its own name)."""
        assert isinstance(ev, FileBlockEvent)
        name = "Begin_load_query" if ev.header.type_code == E.BEGIN_LOAD_QUERY_EVENT else "Append_block"
        self._emit(f"{self._header(ev)}\n#{name}: file_id: {ev.file_id}  block_len: {len(ev.block)}\n")

    def _delete_file(self, ev: Event) -> None:
        assert isinstance(ev, FileIdEvent)
        self._emit(f"{self._header(ev)}\n#Delete_file: file_id={ev.file_id}\n")

    def _incident(self, ev: Event) -> None:
        assert isinstance(ev, IncidentEvent)
        message = ev.message_raw.decode("utf-8", "surrogateescape")
        self._emit(f"{self._header(ev)}\n# Incident: {message}\nRELOAD DATABASE; # Shall generate syntax error\n")

    def _unknown(self, ev: Event) -> None:
        """``Unknown_log_event::print`` / ``Ignorable_log_event::print``."""
        if ev.header.flags & _IGNORABLE_F:
            name = _TYPE_STR.get(ev.header.type_code, ev.header.type)
            self._emit(f"{self._header(ev)}\tIgnorable\n# Ignorable event type {ev.header.type_code} ({name})\n")
        else:
            self._emit(f"{self._header(ev)}\n# Unknown event\n")


Handler = Callable[[TextPrinter, Event], None]
_HANDLERS: dict[int, Handler] = {
    E.FORMAT_DESCRIPTION_EVENT: TextPrinter._fde,
    E.TABLE_MAP_EVENT: TextPrinter._table_map,
    E.ANNOTATE_ROWS_EVENT: TextPrinter._annotate_rows,
    E.QUERY_EVENT: TextPrinter._query,
    E.QUERY_COMPRESSED_EVENT: TextPrinter._query,
    E.EXECUTE_LOAD_QUERY_EVENT: TextPrinter._query,
    E.GTID_EVENT: TextPrinter._gtid,
    E.GTID_LIST_EVENT: TextPrinter._gtid_list,
    E.BINLOG_CHECKPOINT_EVENT: TextPrinter._checkpoint,
    E.ROTATE_EVENT: TextPrinter._rotate,
    E.XID_EVENT: TextPrinter._xid,
    E.XA_PREPARE_LOG_EVENT: TextPrinter._xa_prepare,
    E.INTVAR_EVENT: TextPrinter._intvar,
    E.RAND_EVENT: TextPrinter._rand,
    E.USER_VAR_EVENT: TextPrinter._user_var,
    E.STOP_EVENT: TextPrinter._stop_event,
    E.START_ENCRYPTION_EVENT: TextPrinter._start_encryption,
    E.BEGIN_LOAD_QUERY_EVENT: TextPrinter._file_block,
    E.APPEND_BLOCK_EVENT: TextPrinter._file_block,
    E.DELETE_FILE_EVENT: TextPrinter._delete_file,
    E.INCIDENT_EVENT: TextPrinter._incident,
}


# ---------------------------------------------------------------------------------------------------------------
# the command


def dump(files: Iterable[str], options: DumpOptions, out: BinaryIO) -> int:
    """Print ``files`` in order to ``out``; 0 on success, 1 when a file cannot be decoded (the error on stderr)."""

    def write(text: str) -> None:
        out.write(text.encode("utf-8", "surrogateescape"))

    decryptor = None
    if options.key_file is not None:
        from binlake.crypto import load_key_file, mariadb_decryptor

        try:
            decryptor = mariadb_decryptor(load_key_file(options.key_file))
        except (BinlogError, OSError) as e:
            print(f"ERROR: {e}", file=sys.stderr)
            return 1
    printer = TextPrinter(write, options)
    printer.begin()
    files = list(files)
    decode = DecodeOptions(verify_checksum=options.verify_checksum, schema_sql=options.schema_sql)
    schema = SchemaTracker.from_sql(options.schema_sql) if options.schema_sql else SchemaTracker()
    for n, path in enumerate(files):  # one schema for the run: DDL in one file applies to the next
        start = options.start_position if n == 0 else None
        last = n == len(files) - 1
        try:
            for ev in open_log(
                path, decode, on_error=options.on_error, start=start, decryptor=decryptor, schema=schema
            ):
                if not printer.feed(ev) and last:
                    break
        except BinlogError as e:
            printer.flush()  # like the tool: the text so far, no closing lines
            out.flush()
            print(f"ERROR: {e}", file=sys.stderr)
            return 1
    printer.finish()
    out.flush()
    return 0


def _datetime(text: str) -> int:
    """``--start-datetime`` as ``mariadb-binlog`` reads it: local time ``YYYY-MM-DD HH:MM:SS``."""
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return int(time.mktime(time.strptime(text, fmt)))
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"not a date and time (YYYY-MM-DD HH:MM:SS): {text!r}")


def add_dump_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake dump`` (named as ``mariadb-binlog``'s)."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, printed in order")
    parser.add_argument("--start-position", type=int, help="first event to print (in the first file)")
    parser.add_argument("--stop-position", type=int, help="print events that start before this (in the last file)")
    parser.add_argument("--start-datetime", type=_datetime, help="first event at or after this local time")
    parser.add_argument("--stop-datetime", type=_datetime, help="stop at the first event at or after this time")
    parser.add_argument("-d", "--database", help="only this database's statements and rows")
    parser.add_argument("--table", help="only this table's rows")
    parser.add_argument(
        "--flashback", action="store_true", help="print the undo: rows events reversed and inverted, as the tool"
    )
    parser.add_argument(
        "--print-table-metadata",
        dest="table_metadata",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the # Columns / # Primary Key lines of each table map (default: on, off with --flashback)",
    )
    add_decode_arguments(parser)


def dump_main(args: argparse.Namespace) -> int:
    """Run ``binlake dump`` with parsed arguments."""
    options = DumpOptions(
        start_position=args.start_position,
        stop_position=args.stop_position,
        start_datetime=args.start_datetime,
        stop_datetime=args.stop_datetime,
        database=args.database,
        table=args.table,
        flashback=args.flashback,
        table_metadata=not args.flashback if args.table_metadata is None else args.table_metadata,
        verify_checksum=args.verify_checksum,
        key_file=args.key_file,
        schema_sql=decode_options(args).schema_sql,
        on_error=args.on_error,
    )
    return dump(args.files, options, sys.stdout.buffer)
