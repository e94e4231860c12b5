"""TABLE_MAP_EVENT (19): table id → schema, table and the column layout the following row events use.

Layout (``Table_map_event`` in ``libs/mysql/binlog/event/rows_event.h``, read in ``rows_event.cpp``; the seed
article ``000`` walks one byte by byte)::

    post-header  table_id      6 (4 when the FDE's post-header length for type 19 is 6: MySQL < 5.1.?)
                 flags         2   TM_BIT_LEN_EXACT_F 0x1, TM_REFERRED_FK_DB_F 0x2, TM_GENERATED_INVISIBLE_PK_F 0x4
    body         schema        packed length + bytes + NUL
                 table         packed length + bytes + NUL
                 column_count  packed
                 column_types  one byte per column
                 metadata      packed length + per-column metadata (coltypes.parse_field_metadata)
                 null_bits     (column_count + 7) / 8 bytes, LSB first, 1 = nullable
                 optional      TLV entries to the end (Table_map_event::Optional_metadata_fields, rows_event.cpp)

Optional-metadata entries are decoded into the per-column :class:`~binlake.coltypes.Column` views and also kept as
:class:`OptionalField` (type code, offset, raw bytes, decoded value) so ``binlake explain`` can show each one.

Example (the seed 000 event, checksum excluded)::

    >>> from binlake.decoder import decode_event
    >>> from binlake.events.context import DecodeContext
    >>> from binlake.events.format import synthetic_fde
    >>> raw = bytes.fromhex("32103568 13 01000000 44000000 b0020000 0000 5f0000000000 0100 0c70726573656e74"
    ...     "6174696f6e00 06706572736f6e00 02 030f 02 5802 02 010100 0203fcff00 fba8d0d8")
    >>> tm = decode_event(raw, 620, DecodeContext(fde=synthetic_fde()))
    >>> tm.table_id, tm.schema, tm.table, [c.type for c in tm.columns], tm.columns[1].length
    (95, 'presentation', 'person', ['LONG', 'VARCHAR'], 600)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from binlake.codes import CodeEnum
from binlake.coltypes import OLD_TEMPORAL, Column, ColumnType, MetadataWriter, parse_field_metadata
from binlake.errors import MalformedError
from binlake.events.base import Event, EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.format import server_version_tuple
from binlake.wire import Cursor, bits_lsb_first, bits_msb_first

__all__ = [
    "TM_BIT_HAS_TRIGGERS_F",
    "TM_FLAGS",
    "OptionalField",
    "OptionalMetadataType",
    "TableMapEvent",
    "decode_table_map",
    "metadata_writer",
]

TM_FLAGS = {0x1: "TM_BIT_LEN_EXACT_F", 0x2: "TM_REFERRED_FK_DB_F", 0x4: "TM_GENERATED_INVISIBLE_PK_F"}
# MariaDB's Table_map_log_event flag (sql/log_event.h): the table has triggers (mariadb-binlog says so; not a MySQL
# flag, so not among the TM_FLAGS names)
TM_BIT_HAS_TRIGGERS_F = 0x4000


class OptionalMetadataType(CodeEnum):
    """``Table_map_event::Optional_metadata_field_type`` (rows_event.h)."""

    SIGNEDNESS = 1
    DEFAULT_CHARSET = 2
    COLUMN_CHARSET = 3
    COLUMN_NAME = 4
    SET_STR_VALUE = 5
    ENUM_STR_VALUE = 6
    GEOMETRY_TYPE = 7
    SIMPLE_PRIMARY_KEY = 8
    PRIMARY_KEY_WITH_PREFIX = 9
    ENUM_AND_SET_DEFAULT_CHARSET = 10
    ENUM_AND_SET_COLUMN_CHARSET = 11
    COLUMN_VISIBILITY = 12
    VECTOR_DIMENSIONALITY = 13


@dataclass(frozen=True, slots=True)
class OptionalField:
    """One optional-metadata TLV entry: ``offset`` is from the start of the event (common header included)."""

    type_code: int
    offset: int
    raw: bytes
    value: object

    @property
    def type(self) -> str:
        return OptionalMetadataType.name_of(self.type_code)


@dataclass(frozen=True, slots=True)
class TableMapEvent(Event):
    """A decoded table map.  ``columns`` holds one :class:`~binlake.coltypes.Column` view per column; ``writer``
    says which columns its SIGNEDNESS and charset entries count (the server that wrote it decides)."""

    table_id: int
    flags: int
    schema: str
    table: str
    column_types: tuple[int, ...]
    metadata: bytes
    null_bitmap: bytes
    optional: tuple[OptionalField, ...]
    columns: tuple[Column, ...]
    writer: MetadataWriter

    @property
    def flag_names(self) -> list[str]:
        return [name for bit, name in TM_FLAGS.items() if self.flags & bit]

    @property
    def column_count(self) -> int:
        return len(self.column_types)

    @property
    def column_names(self) -> list[str]:
        """Names from COLUMN_NAME metadata, ``col_N`` (1-based) where the map does not log them."""
        return [c.name if c.name is not None else f"col_{c.index + 1}" for c in self.columns]

    @property
    def primary_key(self) -> tuple[int, ...]:
        """Indexes of the primary-key columns in key order (empty when not logged or no key)."""
        pk = sorted((c.pk_position, c.index) for c in self.columns if c.pk_position is not None)
        return tuple(i for _, i in pk)

    def summary(self) -> str:
        return f"table_id {self.table_id}: `{self.schema}`.`{self.table}` ({self.column_count} columns)"


def _name(c: Cursor, what: str) -> str:
    n = c.packed_int(f"{what} length")
    raw = c.take(n, what)
    c.skip(1, f"{what} NUL")
    return raw.decode("utf-8", "surrogateescape")


_Fields = tuple[int, int, str, str, tuple[int, ...], bytes, bytes, tuple[OptionalField, ...], tuple[Column, ...]]


@lru_cache(maxsize=64)
def metadata_writer(server_version: str | None) -> MetadataWriter:
    """What the server of the format description in force (``None``: none seen, taken as MySQL 8.4) counts in a
    table map's SIGNEDNESS and charset entries (the rules and their sources: :class:`MetadataWriter`)."""
    if server_version is None:
        return MetadataWriter()
    if "mariadb" in server_version.lower():
        return MetadataWriter(year_signedness=True, geometry_charset=True)
    return MetadataWriter(year_signedness=server_version_tuple(server_version) >= (8, 0, 21))


def decode_table_map(header: EventHeader, body: bytes, ctx: DecodeContext) -> TableMapEvent:
    """Decode a TABLE_MAP_EVENT body (post-header + payload, checksum excluded)."""
    id_len = 4 if ctx.post_header_len(EventType.TABLE_MAP_EVENT) == 6 else 6
    writer = metadata_writer(None if ctx.fde is None else ctx.fde.server_version)
    if ctx.trace is None:  # a busy binlog logs the same map for every transaction: its bytes are parsed once
        fields = _cached_fields(bytes(body), id_len, ctx.header_len, writer)
    else:  # `binlake explain`: every field through the traced cursor, the TLVs one entry each
        fields = _fields(ctx.cursor(body), id_len, ctx.header_len, writer, traced=True)
    table_id, flags, schema, table, types, metadata, nulls, optional, columns = fields
    if ctx.schema is not None and not OLD_TEMPORAL.isdisjoint(types):
        # MariaDB 5.3 TIME(n)/DATETIME(n)/TIMESTAMP(n) log no fsp: the table's DDL gives it (binlake.schema)
        columns = ctx.schema.complete(schema, table, columns)
    return TableMapEvent(header, table_id, flags, schema, table, types, metadata, nulls, optional, columns, writer)


@lru_cache(maxsize=1024)
def _cached_fields(body: bytes, id_len: int, header_len: int, writer: MetadataWriter) -> _Fields:
    return _fields(Cursor(body, base=-header_len), id_len, header_len, writer)


def _fields(c: Cursor, id_len: int, header_len: int, writer: MetadataWriter, traced: bool = False) -> _Fields:
    """Every field of a table map body read from ``c`` (offsets of optional fields are from the event start)."""
    table_id = c.uint(id_len, "table_id")
    flags = c.u16("flags")
    schema = _name(c, "schema name")
    table = _name(c, "table name")
    ncols = c.packed_int("column count")
    types = tuple(c.take(ncols, "column types"))
    meta_len = c.packed_int("metadata length")
    metadata = c.take(meta_len, "column metadata")
    nulls = c.take((ncols + 7) // 8, "null bitmap")
    opt_start = c.pos
    opt = bytes(c.buf[opt_start : c.end])
    if traced:
        for _ in c.iter_tlv("optional metadata"):
            pass
    optional, columns = _layout(types, metadata, nulls, opt, opt_start + header_len, writer)
    return table_id, flags, schema, table, types, metadata, nulls, optional, columns


@lru_cache(maxsize=4096)
def _layout(
    types: tuple[int, ...], metadata: bytes, nulls: bytes, opt: bytes, opt_offset: int, writer: MetadataWriter
) -> tuple[tuple[OptionalField, ...], tuple[Column, ...]]:
    """Columns and optional fields of a table map (cached: a busy binlog repeats the same map per transaction)."""
    try:
        metas = parse_field_metadata(types, metadata)
    except MalformedError as e:
        raise MalformedError(f"table map metadata: {e.message}", offset=e.offset) from None
    nullable = bits_lsb_first(nulls, len(types))
    cols = [Column.build(i, t, raw, nullable[i]) for i, (t, (_, raw)) in enumerate(zip(types, metas, strict=True))]
    fields = []
    c = Cursor(opt, base=-opt_offset)
    for code, off, value in c.iter_tlv("optional metadata"):
        parser = _OPTIONAL.get(code)
        decoded = parser(bytes(value), cols, writer) if parser is not None else None
        fields.append(OptionalField(code, off, bytes(value), decoded))
    return tuple(fields), tuple(_names_in_charset(c) for c in cols)


def _names_in_charset(col: Column) -> Column:
    """ENUM/SET member names are logged in the column's charset (ENUM_AND_SET_*_CHARSET): decode them with it."""
    if col.enum_values is None and col.set_values is None:
        return col
    from binlake.values.enum_set import member_names

    return col.with_(
        enum_values=member_names(col.enum_values, col.charset), set_values=member_names(col.set_values, col.charset)
    )


# --- optional metadata: each parser decodes one entry and applies it to the column views in place --------------

# a parser: the entry's bytes, the column views (changed in place), which columns the writer counts -> the value
_Parser = Callable[[bytes, list[Column], MetadataWriter], object]
# whether the writer gives a column a place in a per-column entry (SIGNEDNESS, the charset entries)
_Counted = Callable[[Column, MetadataWriter], bool]


def _packed_list(value: bytes, what: str) -> list[int]:
    c = Cursor(value)
    out = []
    while c.remaining:
        out.append(c.packed_int(what))
    return out


def _strings_per_column(value: bytes, what: str) -> list[list[str]]:
    """SET_STR_VALUE / ENUM_STR_VALUE: per column a packed count, then packed-length strings."""
    c = Cursor(value)
    out = []
    while c.remaining:
        n = c.packed_int(what)
        if n > c.remaining:
            raise MalformedError(f"{what}: {n} values cannot fit in {c.remaining} bytes")
        out.append([c.packed_bytes(what).decode("utf-8", "surrogateescape") for _ in range(n)])
    return out


def _assign(cols: list[Column], which: Sequence[int], values: Sequence[object], attr: str, what: str) -> None:
    """Set ``attr`` of the columns at ``which`` to ``values`` in order; more values than columns is malformed."""
    if len(values) > len(which):
        raise MalformedError(f"{what}: {len(values)} entries for {len(which)} columns")
    for i, v in zip(which, values, strict=False):
        cols[i] = cols[i].with_(**{attr: v})


def _idx(cols: list[Column], pred: Callable[[Column], bool]) -> list[int]:
    return [c.index for c in cols if pred(c)]


def _signedness(value: bytes, cols: list[Column], writer: MetadataWriter) -> list[bool]:
    numeric = _idx(cols, writer.has_signedness)
    bits = bits_msb_first(value, min(len(numeric), len(value) * 8))
    _assign(cols, numeric, bits, "unsigned", "SIGNEDNESS")
    return bits


def _charsets(pred: _Counted, what: str) -> _Parser:
    def default(value: bytes, cols: list[Column], writer: MetadataWriter) -> dict[str, object]:
        """DEFAULT_CHARSET: the default collation, then (index among these columns, collation) pairs."""
        which = _idx(cols, lambda c: pred(c, writer))
        nums = _packed_list(value, what)
        if not nums:
            raise MalformedError(f"{what}: empty")
        dflt, rest = nums[0], nums[1:]
        if len(rest) % 2:
            raise MalformedError(f"{what}: odd number of override values")
        per = [dflt] * len(which)
        overrides = list(zip(rest[::2], rest[1::2], strict=True))
        for k, coll in overrides:
            if k >= len(per):
                raise MalformedError(f"{what}: override for column {k} of {len(per)}")
            per[k] = coll
        _assign(cols, which, per, "charset", what)
        return {"default": dflt, "overrides": overrides}

    return default


def _column_charsets(pred: _Counted, what: str) -> _Parser:
    def column(value: bytes, cols: list[Column], writer: MetadataWriter) -> list[int]:
        ids = _packed_list(value, what)
        _assign(cols, _idx(cols, lambda c: pred(c, writer)), ids, "charset", what)
        return ids

    return column


def _column_names(value: bytes, cols: list[Column], _writer: MetadataWriter) -> list[str]:
    c = Cursor(value)
    names = []
    while c.remaining:
        names.append(c.packed_bytes("COLUMN_NAME").decode("utf-8", "surrogateescape"))
    _assign(cols, range(len(cols)), names, "name", "COLUMN_NAME")
    return names


def _str_values(real: int, attr: str, what: str) -> _Parser:
    def parse(value: bytes, cols: list[Column], _writer: MetadataWriter) -> list[list[str]]:
        lists = _strings_per_column(value, what)
        _assign(cols, _idx(cols, lambda c: c.real_type_code == real), [tuple(x) for x in lists], attr, what)
        return lists

    return parse


def _numbers(real: int, attr: str, what: str) -> _Parser:
    """GEOMETRY_TYPE / VECTOR_DIMENSIONALITY: one packed number per column of type ``real``."""

    def parse(value: bytes, cols: list[Column], _writer: MetadataWriter) -> list[int]:
        numbers = _packed_list(value, what)
        _assign(cols, _idx(cols, lambda c: c.real_type_code == real), numbers, attr, what)
        return numbers

    return parse


def _pk(pairs: list[tuple[int, int]], cols: list[Column], what: str) -> None:
    for pos, (i, prefix) in enumerate(pairs):
        if i >= len(cols):
            raise MalformedError(f"{what}: column {i} of {len(cols)}")
        cols[i] = cols[i].with_(pk_position=pos, pk_prefix=prefix)


def _simple_pk(value: bytes, cols: list[Column], _writer: MetadataWriter) -> list[int]:
    idx = _packed_list(value, "SIMPLE_PRIMARY_KEY")
    _pk([(i, 0) for i in idx], cols, "SIMPLE_PRIMARY_KEY")
    return idx


def _prefix_pk(value: bytes, cols: list[Column], _writer: MetadataWriter) -> list[tuple[int, int]]:
    nums = _packed_list(value, "PRIMARY_KEY_WITH_PREFIX")
    if len(nums) % 2:
        raise MalformedError("PRIMARY_KEY_WITH_PREFIX: odd number of values")
    pairs = list(zip(nums[::2], nums[1::2], strict=True))
    _pk(pairs, cols, "PRIMARY_KEY_WITH_PREFIX")
    return pairs


def _visibility(value: bytes, cols: list[Column], _writer: MetadataWriter) -> list[bool]:
    bits = bits_msb_first(value, min(len(cols), len(value) * 8))
    _assign(cols, range(len(cols)), bits, "visible", "COLUMN_VISIBILITY")
    return bits


def _is_char(c: Column, writer: MetadataWriter) -> bool:
    return writer.has_charset(c)


def _is_enum_set(c: Column, _writer: MetadataWriter) -> bool:
    return c.is_enum_or_set


M = OptionalMetadataType
_OPTIONAL: dict[int, _Parser] = {
    M.SIGNEDNESS: _signedness,
    M.DEFAULT_CHARSET: _charsets(_is_char, "DEFAULT_CHARSET"),
    M.COLUMN_CHARSET: _column_charsets(_is_char, "COLUMN_CHARSET"),
    M.COLUMN_NAME: _column_names,
    M.SET_STR_VALUE: _str_values(ColumnType.SET, "set_values", "SET_STR_VALUE"),
    M.ENUM_STR_VALUE: _str_values(ColumnType.ENUM, "enum_values", "ENUM_STR_VALUE"),
    M.GEOMETRY_TYPE: _numbers(ColumnType.GEOMETRY, "geometry_type", "GEOMETRY_TYPE"),
    M.SIMPLE_PRIMARY_KEY: _simple_pk,
    M.PRIMARY_KEY_WITH_PREFIX: _prefix_pk,
    M.ENUM_AND_SET_DEFAULT_CHARSET: _charsets(_is_enum_set, "ENUM_AND_SET_DEFAULT_CHARSET"),
    M.ENUM_AND_SET_COLUMN_CHARSET: _column_charsets(_is_enum_set, "ENUM_AND_SET_COLUMN_CHARSET"),
    M.COLUMN_VISIBILITY: _visibility,
    M.VECTOR_DIMENSIONALITY: _numbers(ColumnType.VECTOR, "vector_dimension", "VECTOR_DIMENSIONALITY"),
}
