"""The SQL type names ``binlake dump`` prints: a table map's ``# Columns(...)``/``# Primary Key(...)`` lines and
the ``TYPE`` of each row line's ``/* TYPE meta=M nullable=N is_null=N */`` comment.

``columns_lines``/``primary_key_line`` are MariaDB's ``Table_map_log_event::print_columns``/``print_primary_key``
(``sql/log_event_client.cc``), quirks included; ``value_type_name`` is the type text of ``log_event_print_value``.
The two name the same types differently (``SMALLINT`` against ``SHORTINT``, ``VARCHAR(50)`` against
``VARSTRING(200)``), as the client does, so they are two functions.

Example::

    >>> from binlake.coltypes import Column, ColumnType
    >>> value_type_name(Column.build(0, ColumnType.VARCHAR, b"\\xc8\\x00"))
    'VARSTRING(200)'
"""

from __future__ import annotations

from dataclasses import dataclass

from binlake.coltypes import Column, ColumnType
from binlake.events.table_map import OptionalMetadataType, TableMapEvent
from binlake.render.dump.quoting import pretty_str
from binlake.values import collations
from binlake.wire import bits_msb_first

__all__ = ["columns_lines", "primary_key_line", "value_type_name"]

T = ColumnType
M = OptionalMetadataType

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
# log_event_print_value: the type text of a value


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
