"""Column type codes, their table-map metadata, and the one column view everything else reads.

The codes are ``enum_field_types`` of MySQL's ``include/field_types.h`` (plus MariaDB's compressed 140/141 from
``sql/field.h``).  The metadata each type writes into a TABLE_MAP_EVENT comes from each ``Field`` subclass's
``do_save_field_metadata()`` in ``sql/field.cc``; how a reader unpacks it follows ``Table_map_log_event::print_columns``
and ``log_event_print_value`` in ``sql/log_event.cc``.

Example::

    >>> parse_field_metadata([3, 15], b"\\x58\\x02")
    [(0, b''), (600, b'X\\x02')]
    >>> Column.build(1, 15, b"\\x58\\x02").length
    600
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from binlake.codes import CodeEnum
from binlake.errors import MalformedError, TruncatedError

__all__ = ["OLD_TEMPORAL", "Column", "ColumnType", "MetadataWriter", "metadata_size", "parse_field_metadata"]


class ColumnType(CodeEnum):
    """``enum_field_types`` (``include/field_types.h``; MariaDB ``include/mysql_com.h``)."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    BLOB_COMPRESSED = 140  # MariaDB
    VARCHAR_COMPRESSED = 141  # MariaDB
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


T = ColumnType

OLD_TEMPORAL = frozenset({T.TIMESTAMP, T.TIME, T.DATETIME})
"""Table-map types whose fsp only the DDL knows (MariaDB 5.3 hires layouts, see :mod:`binlake.values.temporal`):
their metadata is empty, :meth:`binlake.schema.SchemaTracker.complete` fills it in."""

# Bytes of table-map metadata per type: Field::do_save_field_metadata() in sql/field.cc, read back by table_def's
# constructor in sql/rpl_utility.cc (old DECIMAL and VAR_STRING write none).
_META_SIZE: dict[int, int] = {
    T.FLOAT: 1,
    T.DOUBLE: 1,
    T.TIMESTAMP2: 1,
    T.DATETIME2: 1,
    T.TIME2: 1,
    T.BLOB: 1,
    T.TINY_BLOB: 1,
    T.MEDIUM_BLOB: 1,
    T.LONG_BLOB: 1,
    T.GEOMETRY: 1,
    T.JSON: 1,
    T.VECTOR: 1,
    T.BLOB_COMPRESSED: 1,
    T.VARCHAR: 2,
    T.VARCHAR_COMPRESSED: 2,
    T.NEWDECIMAL: 2,
    T.BIT: 2,
    T.STRING: 2,
    T.ENUM: 2,
    T.SET: 2,
}

_NUMERIC = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL, T.DECIMAL, T.FLOAT, T.DOUBLE})
_CHARACTER = frozenset(
    {
        T.STRING,
        T.VAR_STRING,
        T.VARCHAR,
        T.BLOB,
        T.TINY_BLOB,
        T.MEDIUM_BLOB,
        T.LONG_BLOB,
        T.VARCHAR_COMPRESSED,
        T.BLOB_COMPRESSED,
        T.VECTOR,
    }  # VECTOR: a binary string type in MySQL 9
)


def metadata_size(type_code: int) -> int:
    """Bytes of table-map metadata a column of ``type_code`` writes (0 for types with none).

    Raises :class:`MalformedError` for TYPED_ARRAY (only used inside the server) and codes no server writes.
    """
    size = _META_SIZE.get(type_code)
    if size is not None:
        return size
    if type_code in ColumnType.__members__.values() and type_code not in (T.TYPED_ARRAY, T.INVALID, T.BOOL):
        return 0
    raise MalformedError(f"column type {type_code} ({ColumnType.name_of(type_code)}) cannot appear in a table map")


def parse_field_metadata(types: Sequence[int], block: bytes | memoryview) -> list[tuple[int, bytes]]:
    """Split a table map's metadata block into ``(meta, raw bytes)`` per column.

    ``meta`` is the number ``mysqlbinlog`` prints as ``meta=``: little-endian for 2-byte VARCHAR/BIT/DECIMAL, and
    ``byte0 << 8 | byte1`` for STRING/ENUM/SET and NEWDECIMAL (as ``Table_map_log_event`` reads them).
    """
    out: list[tuple[int, bytes]] = []
    pos = 0
    for code in types:
        n = metadata_size(code)
        raw = bytes(block[pos : pos + n])
        if len(raw) != n:
            raise TruncatedError(
                f"column metadata of a {ColumnType.name_of(code)} column runs past the metadata block",
                offset=pos,
            )
        pos += n
        if n == 0:
            meta = 0
        elif n == 1:
            meta = raw[0]
        elif code in (T.STRING, T.ENUM, T.SET, T.NEWDECIMAL):
            meta = raw[0] << 8 | raw[1]
        else:
            meta = raw[0] | raw[1] << 8
        out.append((meta, raw))
    if pos != len(block):
        raise MalformedError(f"metadata block has {len(block) - pos} bytes no column claims")
    return out


@dataclass(frozen=True, slots=True)
class Column:
    """Everything a table map says about one column, raw codes beside their meanings.

    ``type_code`` is the code in the table map; ``real_type_code`` the type the value is stored as (STRING columns
    hide ENUM and SET in their metadata).  ``length`` is the maximum byte length of string types and the number of
    length bytes of BLOB-like types; ``precision``/``scale`` describe DECIMAL, ``fsp`` fractional-second digits,
    ``bits`` the width of BIT.  Optional-metadata facts are ``None`` when the table map does not log them.
    """

    index: int
    type_code: int
    meta: int
    meta_bytes: bytes = b""
    nullable: bool = True
    real_type_code: int = 0
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    bits: int | None = None
    name: str | None = None
    unsigned: bool | None = None
    charset: int | None = None
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None
    pk_position: int | None = None
    pk_prefix: int | None = None
    visible: bool | None = None
    vector_dimension: int | None = None

    @property
    def type(self) -> str:
        return ColumnType.name_of(self.type_code)

    @property
    def real_type(self) -> str:
        return ColumnType.name_of(self.real_type_code)

    @property
    def is_numeric(self) -> bool:
        """A number whose sign the table map's SIGNEDNESS gives (which columns the entry counts:
        :class:`MetadataWriter`)."""
        return self.real_type_code in _NUMERIC

    @property
    def is_character(self) -> bool:
        """A string or blob, text in its charset unless the charset is ``binary`` (not ENUM/SET; which columns
        the charset entries count: :class:`MetadataWriter`)."""
        return self.real_type_code in _CHARACTER

    @property
    def is_enum_or_set(self) -> bool:
        return self.real_type_code in (T.ENUM, T.SET)

    @property
    def is_binary(self) -> bool:
        """Charset 63 (``binary``): BINARY/VARBINARY/BLOB, whose values stay bytes."""
        return self.charset == 63

    @property
    def is_text(self) -> bool:
        """Are the values text: a string or blob whose charset is known and not ``binary``?  Every other string
        column's values are bytes, wherever they are read: the row decoder's values, the lake's type (``binary``),
        Debezium JSON (base64), SQL (``X'..'``).  What fills in an unlogged charset: :mod:`binlake.columns`."""
        return self.is_character and self.charset is not None and self.charset != 63

    def with_(self, **changes: object) -> Column:
        """A copy with some fields changed (used while applying optional metadata)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def build(cls, index: int, type_code: int, meta_bytes: bytes, nullable: bool = True) -> Column:
        """Interpret one column's type code and metadata bytes (see ``Table_map_log_event::print_columns``)."""
        [(meta, raw)] = parse_field_metadata([type_code], meta_bytes)
        real = type_code
        length = precision = scale = fsp = bits = None
        if type_code == T.STRING and len(raw) == 2:
            # Field_string::do_save_field_metadata: byte0 = real_type ^ ((len & 0x300) >> 4), byte1 = len & 0xFF
            b0, b1 = raw[0], raw[1]
            if b0 & 0x30 != 0x30:
                length = b1 | (((b0 & 0x30) ^ 0x30) << 4)
                real = b0 | 0x30
            else:
                real = b0
                length = b1
            if real not in (T.STRING, T.ENUM, T.SET):
                real = T.STRING
        elif type_code in (T.ENUM, T.SET):
            length = raw[1]
        elif type_code in (T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED) or type_code in (
            T.BLOB,
            T.TINY_BLOB,
            T.MEDIUM_BLOB,
            T.LONG_BLOB,
            T.GEOMETRY,
            T.JSON,
            T.BLOB_COMPRESSED,
            T.VECTOR,
        ):
            length = meta
        elif type_code == T.NEWDECIMAL or (type_code == T.DECIMAL and len(raw) == 2):  # old DECIMAL logs none
            precision, scale = raw[0], raw[1]
        elif type_code in (T.TIMESTAMP2, T.DATETIME2, T.TIME2):
            fsp = meta
        elif type_code == T.BIT:
            bits = raw[1] * 8 + raw[0]
        elif type_code in (T.FLOAT, T.DOUBLE):
            length = meta
        return cls(
            index=index,
            type_code=type_code,
            meta=meta,
            meta_bytes=raw,
            nullable=nullable,
            real_type_code=real,
            length=length,
            precision=precision,
            scale=scale,
            fsp=fsp,
            bits=bits,
        )


@dataclass(frozen=True, slots=True)
class MetadataWriter:
    """Which columns a server's TABLE_MAP optional metadata counts: who gets a SIGNEDNESS bit, who gets an entry in
    DEFAULT_CHARSET/COLUMN_CHARSET.  Both entries list only those columns, in order, so a reader that counts
    differently from the writer shifts every later column's sign or charset onto its neighbour.

    The writers (follow them, not a printer):

    - MariaDB 10.5+ (``Table_map_log_event::init_signedness_field``/``init_charset_field`` in
      ``sql/log_event_server.cc``) asks each field's ``binlog_type_info()``: a sign bit wherever ``m_signedness`` is
      not ``SIGN_NOT_APPLICABLE``, which every ``Field_num`` sets (``binlog_signedness()`` in ``sql/field.h``),
      ``Field_year`` included (a ``Field_tiny``, logged UNSIGNED); a charset entry wherever ``m_cs`` is set and the
      field is not ENUM/SET: the strings and blobs, and ``Field_geom`` (``sql/sql_type_geom.cc`` passes
      ``field_charset()``, ``binary``) with every GEOMETRY subtype.
    - MySQL 8.0 (``sql/log_event.cc``): ``is_character_field`` is ``is_character_type(field->real_type())``:
      STRING, VAR_STRING, VARCHAR, BLOB (and VECTOR in 9.x), never GEOMETRY.  ``is_numeric_field`` asked
      ``is_numeric_type(field->binlog_type())`` of ``sql/field.h`` (TINY..LONGLONG, FLOAT, DOUBLE, DECIMAL,
      NEWDECIMAL) up to 8.0.20 (the fb-mysql 8.0.20 tree); later trees ask
      ``has_signedess_information_type()`` of ``sql/field_common_properties.h``, the same list plus YEAR ("YEAR
      still contains sign modifiers even if ignored"); 8.0.29 writes the YEAR bit (mysql-binlog-connector-java
      issue 108).  8.0.21 to 8.0.28 were not read: binlake takes the YEAR bit from 8.0.21 on.

    The printers differ from both (``mariadb-binlog``'s ``is_numeric_type`` in ``sql/log_event_client.cc`` skips
    YEAR); ``binlake dump`` follows the printer in its own module, the values follow the writer.
    """

    year_signedness: bool = True
    geometry_charset: bool = False

    def has_signedness(self, col: Column) -> bool:
        """``col`` has a bit in SIGNEDNESS."""
        return col.is_numeric or (self.year_signedness and col.real_type_code == T.YEAR)

    def has_charset(self, col: Column) -> bool:
        """``col`` has an entry in DEFAULT_CHARSET/COLUMN_CHARSET."""
        return col.is_character or (self.geometry_charset and col.real_type_code == T.GEOMETRY)
