"""Rows events: WRITE/UPDATE/DELETE_ROWS in every version, PARTIAL_UPDATE_ROWS, and MariaDB's compressed ones.

Layout (``Rows_event::Rows_event`` in ``libs/mysql/binlog/event/rows_event.cpp``; MariaDB
``Rows_log_event::Rows_log_event`` and ``row_log_event_uncompress`` in ``sql/log_event.cc``)::

    post-header  table_id        6 (4 when the FDE's post-header length for the type is 6: sources before 5.1.4)
                 flags           2   STMT_END_F 0x1, NO_FOREIGN_KEY_CHECKS_F 0x2, RELAXED_UNIQUE_CHECKS_F 0x4,
                                     COMPLETE_ROWS_F 0x8
                 (v2 only, when the post-header length is 10)
                 extra_len       2   bytes of extra row info *including* these 2
                 extra info      TLV chunks: NDB (0): [len u8 (counts itself)][format u8][data]; PART (1):
                                     partition id u16, plus the source partition u16 for updates
    body         column_count    packed integer (the table's width)
                 columns_before  (width + 7) / 8 bytes, LSB first: columns present in the (before) image
                 columns_after   same, UPDATE and PARTIAL_UPDATE only
                 rows            row images to the end of the event (compressed events: MariaDB's
                                 ``binlog_buf_compress`` format, see :func:`mariadb_uncompress`)

Versions: 0 = PRE_GA (20-22, MySQL 5.1 before 5.1.16), 1 = 23-25 (and MariaDB's compressed 166-168), 2 = 30-32
(MariaDB's compressed 169-171, MySQL's PARTIAL_UPDATE_ROWS 39).  Rows are decoded lazily from ``rows_data`` against
the table map that was in scope when the event was decoded (:mod:`binlake.rowdecoder`).

Example (a WRITE_ROWS v2 of one INT column after its table map; checksum excluded)::

    >>> from binlake.decoder import decode_event
    >>> from binlake.events.context import DecodeContext
    >>> from binlake.events.format import synthetic_fde
    >>> ctx = DecodeContext(fde=synthetic_fde(checksum=False))
    >>> tm = bytes.fromhex("00000000 13 01000000 25000000 00000000 0000 2a0000000000 0100 016400 017400 01 03 00 01")
    >>> ctx.table_maps[42] = decode_event(tm, 4, ctx)
    >>> ev = decode_event(bytes.fromhex("00000000 1e 01000000 28000000 00000000 0000 2a0000000000 0100 0200"
    ...                                 "01 01 00 07000000"), 41, ctx)
    >>> ev.kind, ev.version, ev.rows()
    ('insert', 2, [(None, (7,))])
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from binlake.errors import BinlogError, DecompressionError, MalformedError, UnsupportedError
from binlake.events.base import Event, EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.table_map import TableMapEvent
from binlake.values.row import ABSENT, Image, Row
from binlake.wire import bits_lsb_first

__all__ = [
    "ROWS_FLAGS",
    "ExtraRowInfo",
    "RowsEvent",
    "decode_rows",
    "mariadb_uncompress",
]

E = EventType
Kind = Literal["insert", "update", "delete"]

# Rows_event::enum_flag (rows_event.h)
STMT_END_F = 0x1
ROWS_FLAGS = {
    STMT_END_F: "STMT_END_F",
    0x2: "NO_FOREIGN_KEY_CHECKS_F",
    0x4: "RELAXED_UNIQUE_CHECKS_F",
    0x8: "COMPLETE_ROWS_F",
}
ROWS_HEADER_LEN_V2 = 10  # post-header with the extra-row-info length (rows_event.h)
EXTRA_ROW_INFO_NDB = 0  # enum_extra_row_info_typecode
EXTRA_ROW_INFO_PART = 1

# type code -> (kind, version, compressed)
_TYPES: dict[int, tuple[Kind, int, bool]] = {
    E.PRE_GA_WRITE_ROWS_EVENT: ("insert", 0, False),
    E.PRE_GA_UPDATE_ROWS_EVENT: ("update", 0, False),
    E.PRE_GA_DELETE_ROWS_EVENT: ("delete", 0, False),
    E.WRITE_ROWS_EVENT_V1: ("insert", 1, False),
    E.UPDATE_ROWS_EVENT_V1: ("update", 1, False),
    E.DELETE_ROWS_EVENT_V1: ("delete", 1, False),
    E.WRITE_ROWS_EVENT: ("insert", 2, False),
    E.UPDATE_ROWS_EVENT: ("update", 2, False),
    E.DELETE_ROWS_EVENT: ("delete", 2, False),
    E.PARTIAL_UPDATE_ROWS_EVENT: ("update", 2, False),
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: ("insert", 1, True),
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1: ("update", 1, True),
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: ("delete", 1, True),
    E.WRITE_ROWS_COMPRESSED_EVENT: ("insert", 2, True),
    E.UPDATE_ROWS_COMPRESSED_EVENT: ("update", 2, True),
    E.DELETE_ROWS_COMPRESSED_EVENT: ("delete", 2, True),
}


@dataclass(frozen=True, slots=True)
class ExtraRowInfo:
    """The extra row info of a v2 rows event (``Rows_event::Extra_row_info``).

    ``ndb_format``/``ndb_data``: NDB cluster's chunk (format byte and payload); ``partition_id``: the partition the
    rows are in, ``source_partition_id``: for updates that move rows, the partition they come from.  ``raw`` is the
    whole section after its length field, kept for chunks of types no server documents.
    """

    raw: bytes
    ndb_format: int | None = None
    ndb_data: bytes | None = None
    partition_id: int | None = None
    source_partition_id: int | None = None


@dataclass(frozen=True, slots=True)
class RowsEvent(Event):
    """One rows event: its fixed fields, the present-column bitmaps and the undecoded row images.

    ``columns_before``/``columns_after`` are the columns-present bitmaps as stored (LSB first; for inserts and
    deletes ``columns_after`` is ``None`` and ``columns_before`` describes the one image).  ``rows_data`` is the
    row images (uncompressed for MariaDB's compressed events), ``rows_offset`` its offset in the event (``None``
    when it was compressed), ``table_map`` the map of ``table_id`` in scope at decode time (``None`` when the log
    does not carry it: a file read from the middle of a transaction, or pre-GA events).
    """

    table_id: int
    flags: int
    kind: Kind
    version: int
    extra: ExtraRowInfo | None
    column_count: int
    columns_before: bytes
    columns_after: bytes | None
    rows_data: bytes
    rows_offset: int | None
    compressed: bool
    table_map: TableMapEvent | None

    type_codes = tuple(_TYPES)

    @property
    def flag_names(self) -> list[str]:
        return [name for bit, name in ROWS_FLAGS.items() if self.flags & bit]

    @property
    def stmt_end(self) -> bool:
        """STMT_END_F: the last rows event of its statement (table maps may be released after it)."""
        return bool(self.flags & STMT_END_F)

    @property
    def partial(self) -> bool:
        """A PARTIAL_UPDATE_ROWS_EVENT: after images may hold JSON diffs instead of whole JSON values."""
        return self.header.type_code == E.PARTIAL_UPDATE_ROWS_EVENT

    @property
    def present_before(self) -> list[bool]:
        """Per column: is it in the (before) image?"""
        return bits_lsb_first(self.columns_before, self.column_count)

    @property
    def present_after(self) -> list[bool]:
        """Per column: is it in the after image (updates; inserts and deletes repeat :attr:`present_before`)?"""
        return bits_lsb_first(self.columns_after or self.columns_before, self.column_count)

    def rows(self, typed: bool = True) -> list[tuple[Row | None, Row | None]]:
        """Every row change as ``(before, after)``: ``before`` is ``None`` for inserts, ``after`` for deletes.

        Each image is a tuple in table-map column order: ``None`` for NULL, :data:`~binlake.values.row.ABSENT` for
        a column not in the image, else the value (``typed=False``: the stored value that ``binlake dump`` prints,
        see :mod:`binlake.values`).  Raises :class:`~binlake.errors.BinlogError` (naming the event's position) when
        the table map is missing or a row image is malformed.
        """
        from binlake.rowdecoder import partial_updates, row_decoder  # late: `binlake events` decodes no rows

        if not self.rows_data:
            return []
        try:
            tm = self.table_map
            if tm is None:
                raise MalformedError(
                    f"rows event for table id {self.table_id} without its TABLE_MAP_EVENT "
                    "(read the binlog from the start of the transaction)"
                )
            if tm.column_count != self.column_count:
                raise MalformedError(
                    f"rows event has {self.column_count} columns, its table map `{tm.schema}`.`{tm.table}` "
                    f"has {tm.column_count}"
                )
            if self.partial:
                return partial_updates(tm.columns, self.columns_before, self.columns_after, self.rows_data, typed)
            after = self.columns_after if self.kind == "update" else None
            return row_decoder(tm.columns, self.kind, self.columns_before, after, typed).rows(self.rows_data)
        except BinlogError as e:
            err = e.at_pos(self.header.pos)
            if err.offset is not None and self.rows_offset is not None:
                err.offset += self.rows_offset
            elif err.offset is not None:  # an offset in decompressed rows data names no byte of the event
                err.message = f"{err.message} (byte {err.offset} of the uncompressed rows)"
                err.offset = None
            raise err from None

    def iter_rows(self, typed: bool = True) -> Iterator[tuple[Row | None, Row | None]]:
        """The row changes of :meth:`rows` one by one (decoded together: an event's rows are one buffer)."""
        return iter(self.rows(typed))

    def row_dicts(self, typed: bool = True) -> list[tuple[dict[str, object] | None, dict[str, object] | None]]:
        """:meth:`rows` with each image as ``{column name: value}``; absent columns are left out.

        Names come from the table map's COLUMN_NAME metadata, ``col_N`` (1-based) where it is not logged.
        """
        tm = self.table_map
        names = tm.column_names if tm is not None else []
        return [(_as_dict(names, before), _as_dict(names, after)) for before, after in self.iter_rows(typed)]

    def summary(self) -> str:
        tm = self.table_map
        table = f"`{tm.schema}`.`{tm.table}`" if tm is not None else "(no table map)"
        flags = f" {'|'.join(self.flag_names)}" if self.flags else ""
        return f"table_id {self.table_id} {table} {self.kind} v{self.version}, {len(self.rows_data)} bytes{flags}"


def _as_dict(names: list[str], image: Image | None) -> dict[str, object] | None:
    if image is None:
        return None
    return {name: value for name, value in zip(names, image, strict=True) if value is not ABSENT}


def mariadb_uncompress(data: bytes, max_size: int, what: str = "compressed rows") -> bytes:
    """Uncompress MariaDB's ``binlog_buf_compress`` format (``binlog_buf_uncompress`` in ``sql/log_event.cc``).

    One header byte ``0x80 | alg << 4 | lenlen`` (alg 0 = zlib, lenlen 1..4), the uncompressed length big-endian in
    ``lenlen`` bytes, then a zlib stream.  A length above ``max_size``, a stream that does not inflate to exactly
    that length, or any other algorithm raises :class:`~binlake.errors.DecompressionError`.

    >>> mariadb_uncompress(bytes([0x81, 3]) + zlib.compress(b"abc"), 100)
    b'abc'
    """
    if not data or data[0] & 0x80 == 0:
        raise DecompressionError(f"{what}: no compression header")
    alg, lenlen = (data[0] & 0x70) >> 4, data[0] & 0x07
    if alg != 0:
        raise DecompressionError(f"{what}: compression algorithm {alg} (only 0 = zlib exists)")
    if not 1 <= lenlen <= 4 or len(data) < 1 + lenlen:
        raise DecompressionError(f"{what}: bad length field ({lenlen} bytes)")
    size = int.from_bytes(data[1 : 1 + lenlen], "big")
    if size > max_size:
        raise DecompressionError(f"{what}: claims {size} bytes uncompressed, over the limit of {max_size}")
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data[1 + lenlen :], size + 1)
    except zlib.error as e:
        raise DecompressionError(f"{what}: zlib: {e}") from None
    if len(out) != size or not inflater.eof:
        raise DecompressionError(f"{what}: inflates to {len(out)} bytes or more, the header says {size}")
    return out


def _extra_row_info(raw: bytes, update: bool, base: int) -> ExtraRowInfo:
    """Parse the v2 extra-row-info chunks (``Rows_event::Rows_event``); an unknown chunk type ends the parse."""
    ndb_format = ndb_data = part = source = None
    pos = 0
    while pos < len(raw):
        kind = raw[pos]
        pos += 1
        if kind == EXTRA_ROW_INFO_NDB:
            # [len][format][data]: len counts the whole chunk after the type byte; only the first chunk is used
            if pos + 2 > len(raw) or raw[pos] < 2 or pos + raw[pos] > len(raw):
                raise MalformedError("invalid NDB extra row info", offset=base + pos)
            n = raw[pos]
            if ndb_format is None:
                ndb_format, ndb_data = raw[pos + 1], raw[pos + 2 : pos + n]
            pos += n
        elif kind == EXTRA_ROW_INFO_PART:
            need = 4 if update else 2
            if pos + need > len(raw):
                raise MalformedError("invalid partition extra row info", offset=base + pos)
            part = int.from_bytes(raw[pos : pos + 2], "little")
            if update:
                source = int.from_bytes(raw[pos + 2 : pos + 4], "little")
            pos += need
        else:
            break
    return ExtraRowInfo(raw, ndb_format, ndb_data, part, source)


def decode_rows(header: EventHeader, body: bytes, ctx: DecodeContext) -> RowsEvent:
    """Decode a rows event's fixed part; the row images stay bytes until :meth:`RowsEvent.rows`."""
    code = header.type_code
    kind, version, compressed = _TYPES[code]
    post_len = ctx.post_header_len(code)
    if version == 0 and post_len < 6:
        # Servers that wrote pre-GA rows events gave them a post-header; a format description without one is
        # from a server that never wrote them, or from the WL#2325 prototypes ("5.2.2-a_drop6p13"), which number
        # events differently (their type 20 is 8 bytes of something else)
        raise UnsupportedError(
            f"{EventType.name_of(code)} under a format description without its post-header "
            f"({ctx.fde.server_version if ctx.fde else 'none'}): not a rows event of any released server"
        )
    c = ctx.cursor(body)
    table_id = c.uint(4 if post_len == 6 else 6, "table_id")
    flags = c.u16("flags")
    extra = None
    if post_len == ROWS_HEADER_LEN_V2:
        extra_len = c.u16("extra row info length")
        if extra_len < 2:
            raise MalformedError(f"extra row info length {extra_len} is below its own 2 bytes")
        base = c.pos + ctx.header_len
        extra = _extra_row_info(c.take(extra_len - 2, "extra row info"), kind == "update", base)
    elif post_len > c.pos:
        c.skip(post_len - c.pos, "post-header")  # a post-header longer than this decoder knows
    width = c.packed_int("column count")
    nbytes = (width + 7) // 8
    before = c.take(nbytes, "columns-present bitmap")
    after = c.take(nbytes, "after-image columns-present bitmap") if kind == "update" else None
    rows_offset: int | None = c.pos + ctx.header_len
    data = c.rest()
    if compressed:
        data = mariadb_uncompress(data, ctx.options.max_decompressed)
        rows_offset = None
    return RowsEvent(
        header,
        table_id,
        flags,
        kind,
        version,
        extra,
        width,
        before,
        after,
        data,
        rows_offset,
        compressed,
        ctx.table_maps.get(table_id),
    )
