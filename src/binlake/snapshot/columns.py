"""A snapshotted column three ways: the :class:`~binlake.coltypes.Column` a FULL table map of it carries (so its
lake type is :func:`binlake.ingest.arrow.lake_type`'s, the stream's), the SELECT expression that reads its stored
value exactly, and the conversion of the text the server sends for it into the lake value the binlog decoder's
gives for the same cell (:func:`column_array`: Arrow parses a batch at a time; the value-by-value path takes what
PyMySQL would return to :func:`binlake.ingest.arrow.to_lake`, the stream's own conversion).

Why not PyMySQL's values as they come: a FLOAT's text is rounded to 6 digits (``CAST(f AS DOUBLE)`` is the stored
single, widened exactly); INET4/INET6/UUID come as text where the binlog holds their binary form; BIT comes as
big-endian bytes, SET as comma-joined text, GEOMETRY as the server's record (4-byte SRID, then WKB), TIMESTAMP in
the session's time zone (the snapshot sets ``+00:00``).

Example::

    col = SnapshotColumn("n", "int", "int(10) unsigned", True, 10, 0, None, None, None)
    to_column(0, col, pk=None).unsigned      # True
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pymysql.converters
from pymysql.constants import FIELD_TYPE

from binlake.coltypes import Column, ColumnType
from binlake.ingest.arrow import to_lake
from binlake.lake.tables import UTC_TS
from binlake.replication.definitions import SnapshotColumn, quote
from binlake.replication.position import Flavor
from binlake.replication.resultset import ColumnDefinition
from binlake.sql.lexer import STRING_KINDS, tokens, unquote
from binlake.values.spatial import Geometry
from binlake.values.vector import CONVERTERS as VECTOR_CONVERTERS

__all__ = ["column_array", "from_server", "select_expr", "to_column"]

T = ColumnType
BINARY = 63  # the collation id of the binary charset

# information_schema DATA_TYPE -> the real type code a MariaDB 10.11 table map logs (Field::binlog_type() and
# Field::real_type() of each Field in sql/field.cc; BLOB and TEXT of every size are BLOB with their pack length)
_CODES: dict[str, int] = {
    "tinyint": T.TINY,
    "smallint": T.SHORT,
    "mediumint": T.INT24,
    "int": T.LONG,
    "bigint": T.LONGLONG,
    "float": T.FLOAT,
    "double": T.DOUBLE,
    "decimal": T.NEWDECIMAL,
    "date": T.DATE,
    "datetime": T.DATETIME2,
    "timestamp": T.TIMESTAMP2,
    "time": T.TIME2,
    "year": T.YEAR,
    "bit": T.BIT,
    "char": T.STRING,
    "binary": T.STRING,
    "varchar": T.VARCHAR,
    "varbinary": T.VARCHAR,
    "enum": T.ENUM,
    "set": T.SET,
    "inet4": T.STRING,
    "inet6": T.STRING,
    "uuid": T.STRING,
}
_BLOBS = {"tinytext": 1, "tinyblob": 1, "text": 2, "blob": 2, "mediumtext": 3, "mediumblob": 3}
_BLOBS |= {"longtext": 4, "longblob": 4}
_GEOMETRIES = {"geometry": 0, "point": 1, "linestring": 2, "polygon": 3, "multipoint": 4, "multilinestring": 5}
_GEOMETRIES |= {"multipolygon": 6, "geometrycollection": 7, "geomcollection": 7}  # MySQL 8 names it geomcollection
# MySQL's types of their own (MariaDB's JSON is a LONGTEXT: ``information_schema`` says longtext)
_MYSQL_BLOBS = {"json": T.JSON, "vector": T.VECTOR}
_COMPRESSED = (T.VARCHAR_COMPRESSED, T.BLOB_COMPRESSED)
_FIXED_BINARY = {"inet4": 4, "inet6": 16, "uuid": 16}  # MariaDB type plugins: BINARY(n) in the table map


def members(column_type: str) -> tuple[str, ...]:
    """The member names of an ``enum('a','b')``/``set(...)`` declaration, unquoted (``''`` is a quote).

    >>> members("enum('a','it''s','')")
    ('a', "it's", '')
    """
    inner = column_type[column_type.index("(") + 1 : column_type.rindex(")")]
    return tuple(unquote(t) for t in tokens(inner) if t.kind in STRING_KINDS)


def _set_pack(n: int) -> int:
    """Bytes of a SET of ``n`` members (Field_set::pack_length: 1, 2, 3, 4 or 8)."""
    size = (n + 7) // 8
    return 8 if size > 4 else size


def to_column(index: int, col: SnapshotColumn, pk: int | None, flavor: Flavor = "mariadb") -> Column:
    """The column as a FULL table map of the server describes it (names, signedness, charset, members, key):
    MariaDB 10.11's, or (``flavor`` ``"mysql"``) MySQL 8.0.23 to 9.x's (:class:`binlake.coltypes.MetadataWriter`
    has the sources of what each counts).

    The MySQL types of their own come only from MySQL, whatever ``flavor``: JSON (245, 4 length bytes, binary JSON,
    no charset entry; MariaDB's JSON is a LONGTEXT and ``information_schema`` says ``longtext``) and VECTOR (242,
    MySQL 9; 4 length bytes, binary charset, its dimension).  ``flavor`` changes what only the schema history shows,
    never a lake type: MySQL logs no charset for GEOMETRY (``is_character_type`` of ``sql/log_event.cc``) and logs
    each column's visibility (COLUMN_VISIBILITY, 8.0.23+; ``information_schema`` here does not say which columns
    are INVISIBLE, so every one is taken as visible).  YEAR is an unsigned ``Field_tiny`` on both, with its
    SIGNEDNESS bit (MySQL from 8.0.21)."""
    dtype = col.data_type
    mysql = flavor == "mysql"
    words = col.column_type.lower().replace("*/", " ").split()
    unsigned = "unsigned" in words or dtype == "year"  # YEAR: an unsigned Field_tiny (MariaDB and MySQL)
    compressed = "compressed" in words  # MariaDB's COMPRESSED columns (types 140, 141; one more length byte)
    code: int
    length: int | None
    if dtype in _MYSQL_BLOBS:
        code, length = _MYSQL_BLOBS[dtype], 4  # Field_json, Field_vector: a Field_blob with 4 length bytes
    elif dtype in _BLOBS:
        code, length = T.BLOB, _BLOBS[dtype]
    elif dtype in _GEOMETRIES:
        code, length = T.GEOMETRY, 4
    elif dtype in ("float", "double"):
        code, length = _CODES[dtype], 4 if dtype == "float" else 8
    else:
        code = _CODES.get(dtype, T.STRING)
        length = _FIXED_BINARY.get(dtype, col.length)
    charset = col.collation
    if dtype in _FIXED_BINARY or dtype in _GEOMETRIES or charset is None:
        charset = BINARY  # binary strings and blobs have no collation in information_schema
    charsets = {T.STRING, T.VARCHAR, T.BLOB, T.ENUM, T.SET, *_COMPRESSED, T.VECTOR}
    if not mysql:  # MariaDB logs GEOMETRY's charset (binary): MetadataWriter.geometry_charset
        charsets.add(T.GEOMETRY)
    type_code: int = T.STRING if code in (T.ENUM, T.SET) else code
    if compressed and code in (T.VARCHAR, T.BLOB):
        type_code = T.VARCHAR_COMPRESSED if code == T.VARCHAR else T.BLOB_COMPRESSED
        code = type_code
        if type_code == T.VARCHAR_COMPRESSED and length is not None:
            length += 1
    enum_values = members(col.column_type) if dtype == "enum" else None
    set_values = members(col.column_type) if dtype == "set" else None
    if enum_values is not None:
        length = 1 if len(enum_values) < 256 else 2
    if set_values is not None:
        length = _set_pack(len(set_values))
    numeric = code in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL, T.FLOAT, T.DOUBLE, T.YEAR)
    sized = (T.STRING, T.VARCHAR, T.BLOB, T.GEOMETRY, T.ENUM, T.SET, T.FLOAT, T.DOUBLE, *_COMPRESSED, T.JSON, T.VECTOR)
    return Column(
        index=index,
        type_code=type_code,
        meta=0,
        nullable=col.nullable,
        real_type_code=code,
        length=length if code in sized else None,
        precision=col.precision if code == T.NEWDECIMAL else None,
        scale=col.scale if code == T.NEWDECIMAL else None,
        fsp=col.fsp if code in (T.DATETIME2, T.TIMESTAMP2, T.TIME2) else None,
        bits=col.precision if code == T.BIT else None,
        name=col.name,
        unsigned=unsigned if numeric else None,
        charset=charset if code in charsets else None,
        enum_values=enum_values,
        set_values=set_values,
        geometry_type=_GEOMETRIES.get(dtype),
        pk_position=pk,
        visible=True if mysql else None,
        vector_dimension=_dimension(col.column_type) if code == T.VECTOR else None,
    )


def _dimension(column_type: str) -> int | None:
    """A VECTOR's dimension: ``vector(3)`` -> 3."""
    m = re.search(r"\((\d+)\)", column_type)
    return int(m.group(1)) if m else None


def select_expr(col: SnapshotColumn) -> str:
    """The expression that reads the column's stored value exactly (see the module docstring)."""
    q = quote(col.name)
    if col.data_type == "float":
        return f"CAST({q} AS DOUBLE)"
    if col.data_type in _FIXED_BINARY:
        return f"CAST({q} AS BINARY({_FIXED_BINARY[col.data_type]}))"
    return q


def _bits(v: object) -> object:
    return int.from_bytes(v, "big") if isinstance(v, bytes) else v


def _set(v: object) -> object:
    """A SET's text (its members in definition order, comma-joined) as that list: the lake's value.  Not through
    the members ``information_schema`` lists, which print a 4-byte character as ``?``."""
    if isinstance(v, str):
        return v.split(",") if v else []
    return v


def _geometry(v: object) -> object:
    if isinstance(v, bytes) and len(v) >= 4:
        return Geometry(int.from_bytes(v[:4], "little"), v[4:])
    return v


def _utc(v: object) -> object:
    return v.replace(tzinfo=dt.UTC) if isinstance(v, dt.datetime) else v


def _same(v: object) -> object:
    return v


def from_server(col: SnapshotColumn) -> Callable[[object], object]:
    """What turns PyMySQL's value of the column (read with :func:`select_expr`, session time zone ``+00:00``)
    into the binlog decoder's Python value of the same cell (a SET: the lake's list, see :func:`_set`)."""
    dtype = col.data_type
    if dtype == "bit":
        return _bits
    if dtype == "set":
        return _set
    if dtype in _GEOMETRIES:
        return _geometry
    if dtype == "timestamp":
        return _utc
    if dtype == "decimal":
        return lambda v: Decimal(v) if isinstance(v, str) else v
    if dtype == "vector":  # the text protocol sends the stored float32s: the binlog decoder's own conversion
        return VECTOR_CONVERTERS[T.VECTOR](to_column(0, col, None))  # type: ignore[return-value]
    return _same


_INT_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year"})
_PER_VALUE: dict[str, Callable[[str], object]] = {
    **{k: int for k in _INT_TYPES},
    "float": float,
    "double": float,
    "decimal": Decimal,
    "date": pymysql.converters.convert_date,
    "datetime": pymysql.converters.convert_datetime,
    "timestamp": pymysql.converters.convert_datetime,
    "time": pymysql.converters.convert_timedelta,
}
# a DATE/DATETIME/TIMESTAMP with a zero year, month or day: no Arrow date holds it, so null (the binlog's
# InvalidDate/InvalidDatetime lands null too)
_ZERO_PART = r"^(0000|\d{4}-00|\d{4}-\d\d-00)"


def _parsed(col: SnapshotColumn, t: pa.DataType, text: pa.Array) -> pa.Array:
    """The column's text parsed by Arrow into the lake type ``t`` (raises ``pa.ArrowInvalid`` on a value it does
    not read, which :func:`column_array` then converts value by value)."""
    dtype = col.data_type
    if dtype in _INT_TYPES:
        return text.cast(t)
    if dtype in ("float", "double"):
        return text.cast(pa.float64()).cast(t, safe=False)  # FLOAT: the single widened exactly, narrowed back
    if dtype == "decimal":
        return text.cast(t)  # precision above 38: the text itself
    zero = pc.fill_null(pc.match_substring_regex(text, _ZERO_PART), False)
    valid = pc.if_else(zero, pa.scalar(None, pa.string()), text)
    if dtype == "date":
        return valid.cast(pa.date32())
    out = valid.cast(pa.timestamp("us"))
    return out.cast(UTC_TS) if dtype == "timestamp" else out


# the result column types whose text PyMySQL returns as bytes when their charset is binary (pymysql.connections
# TEXT_TYPES): the snapshot's value-by-value conversion gets what PyMySQL would give
_TEXT_TYPES = frozenset(
    {
        FIELD_TYPE.BIT,
        FIELD_TYPE.BLOB,
        FIELD_TYPE.LONG_BLOB,
        FIELD_TYPE.MEDIUM_BLOB,
        FIELD_TYPE.STRING,
        FIELD_TYPE.TINY_BLOB,
        FIELD_TYPE.VAR_STRING,
        FIELD_TYPE.VARCHAR,
        FIELD_TYPE.GEOMETRY,
    }
)


def _as_text(cells: pa.Array) -> pa.Array | None:
    """Cells (binary) as UTF-8 text, or ``None`` where one is not UTF-8."""
    text = cells.view(pa.string())
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return text


def column_array(
    col: SnapshotColumn, column: Column, t: pa.DataType, cells: pa.Array, field: ColumnDefinition
) -> pa.Array:
    """One column of a batch of rows as the server sent them (``cells``: each value's text, an Arrow binary array;
    ``field``: the server's description of the result column), as the lake's Arrow array of type ``t``:

    - text and binary strings as they come (the connection's charset is utf8mb4);
    - numbers and temporal values parsed by Arrow a batch at a time;
    - the rest, and a batch Arrow cannot parse (an invalid date such as ``2020-02-31`` that ALLOW_INVALID_DATES
      stored), value by value: each text as PyMySQL gives it (``bytes`` for a binary string, else ``str``), parsed
      by PyMySQL's own parser, then :func:`from_server` and :func:`~binlake.ingest.arrow.to_lake`, the stream's
      conversion."""
    binary = (field.type_code in _TEXT_TYPES and field.charset == BINARY) or col.data_type == "vector"
    per_value = _PER_VALUE.get(col.data_type)
    convert = from_server(col)
    if per_value is None and convert is _same and not binary and t == pa.string():
        text = _as_text(cells)
        if text is not None:
            return text
    if per_value is None and convert is _same and binary and t == pa.binary():
        return cells
    if per_value is not None and col.data_type != "time":
        text = _as_text(cells)
        if text is not None:
            try:
                return _parsed(col, t, text)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                pass
    raw = cells.to_pylist()
    values: list[object] = raw if binary else [None if v is None else v.decode("utf-8") for v in raw]
    if col.data_type == "set":
        return pa.array([convert(v) for v in values], t)
    parse = per_value or _same
    return to_lake([None if v is None else convert(parse(v)) for v in values], t, column.set_values)  # type: ignore[arg-type]
