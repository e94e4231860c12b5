"""A text result set, bytes in (sans-IO): what the server answers to COM_QUERY, read without PyMySQL's row reader.

The layout (MariaDB ``sql/protocol.cc``: ``Protocol::send_result_set_metadata``, ``Protocol_text::store_*``,
``net_store_length``; the client/server protocol's "Text Resultset"), for a client without CLIENT_DEPRECATE_EOF
(PyMySQL does not ask for it):

- a packet holding the column count (length-encoded integer), or an ERR packet (``0xFF``), or an OK packet (``0x00``,
  a statement without rows);
- one column definition packet per column (``catalog``, ``schema``, ``table``, ``org_table``, ``name``,
  ``org_name`` as length-encoded strings, then ``0x0C``, charset u16, length u32, type u8, flags u16, decimals u8);
- an EOF packet (``0xFE``, warnings u16, status u16);
- a packet per row: each cell a length-encoded string (the value as text), or ``0xFB`` for NULL;
- an EOF packet, or an ERR packet when the statement failed half-way.

Rows come out as :class:`RowBatch`es, one Arrow binary column per result column (validity bitmap, int32 offsets,
data as ``bytes``: :func:`pyarrow.Array.from_buffers` takes them as they are), a batch of the whole rows of what
was fed: memory holds what one read brought, whatever the result's size.  The rows are cut by
``binlake._framing.text_rows`` where it is built, else by :func:`text_rows` here, which gives the same.

Example::

    reader = TextResultReader()
    conn.send_query("SELECT 1, NULL")           # binlake.replication.connection.ReplicationConnection
    while not reader.done:
        reader.feed(conn.read())
        for batch in reader.batches(): ...       # reader.columns: the ColumnDefinitions
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from binlake._compiled import compiled
from binlake.errors import MalformedError, TruncatedError
from binlake.replication.protocol import (
    EOF_PACKET,
    ERR_PACKET,
    MAX_PAYLOAD,
    OK_PACKET,
    parse_error_packet,
    server_error,
)
from binlake.wire import read_packed_int

__all__ = ["ColumnDefinition", "RowBatch", "TextResultReader", "parse_column_definition", "text_rows"]

_framing = compiled("_framing")

SERVER_MORE_RESULTS_EXISTS = 0x0008  # the EOF's status flag: another result set follows (mysql_com.h)
MORE, END, ERROR, LONG = 0, 1, 2, 3  # where text_rows stopped: see text_rows
_FIXED = struct.Struct("<HIBHB")  # charset, length, type, flags, decimals (after the 0x0C length byte)
_I32 = struct.Struct("<i")

Column = tuple[bytes, bytes, bytes]  # validity bitmap, int32 offsets, data (Arrow's binary layout)


@dataclass(frozen=True, slots=True)
class ColumnDefinition:
    """A result column as the server describes it (``type_code``: ``enum_field_types``; ``charset``: the collation
    id of the text it sends, 63 for binary)."""

    name: str
    type_code: int
    charset: int
    length: int
    flags: int
    decimals: int


@dataclass(frozen=True, slots=True)
class RowBatch:
    """Whole rows of a result: ``rows`` of them, each result column as Arrow binary buffers (validity bitmap with a
    bit set per non-NULL cell, ``rows + 1`` little-endian int32 offsets, data)."""

    rows: int
    columns: tuple[Column, ...]


def parse_column_definition(payload: bytes | memoryview) -> ColumnDefinition:
    """A column definition packet (Protocol::send_result_set_metadata, CLIENT_PROTOCOL_41)."""
    try:
        off = 0
        texts = []
        for _ in range(6):  # catalog, schema, table, org_table, name, org_name
            size, off = read_packed_int(payload, off)
            texts.append(bytes(payload[off : off + (size or 0)]))
            off += size or 0
        _, off = read_packed_int(payload, off)  # the length of the fixed fields: 0x0C
        charset, length, type_code, flags, decimals = _FIXED.unpack_from(payload, off)
    except (TruncatedError, struct.error) as e:
        raise MalformedError(f"a malformed column definition packet: {e}") from None
    return ColumnDefinition(texts[4].decode("utf-8", "replace"), type_code, charset, length, flags, decimals)


def text_rows(buf: bytes | bytearray | memoryview, offset: int, ncols: int) -> tuple[int, int, int, list[Column]]:
    """The row packets of ``buf`` from ``offset`` as Arrow binary columns: ``(end, rows, stop, columns)``, stopped
    at ``end`` before the first packet that is incomplete (``stop`` :data:`MORE`), the end-of-rows packet
    (:data:`END`), an ERR packet (:data:`ERROR`) or a 16 MiB packet continued by the next (:data:`LONG`).  A row
    whose cells do not fill its packet raises ``ValueError``.  ``binlake._framing.text_rows`` is the same in C."""
    if offset < 0 or offset > len(buf) or ncols < 1:
        raise ValueError("text_rows: offset must be inside buf and ncols at least 1")
    view = memoryview(buf)
    valid = [bytearray() for _ in range(ncols)]
    offsets = [array("i", [0]) for _ in range(ncols)]
    data = [bytearray() for _ in range(ncols)]
    end, n, rows, stop = offset, len(view), 0, MORE
    while n - end >= 4:
        length = view[end] | view[end + 1] << 8 | view[end + 2] << 16
        if length == MAX_PAYLOAD:
            stop = LONG
            break
        if n - end - 4 < length:
            break
        if length and view[end + 4] == EOF_PACKET:
            stop = END
            break
        if length and view[end + 4] == ERR_PACKET:
            stop = ERROR
            break
        _row_into(view[end + 4 : end + 4 + length], end, rows, valid, offsets, data)
        rows += 1
        end += 4 + length
    columns = [(bytes(v), o.tobytes(), bytes(d)) for v, o, d in zip(valid, offsets, data, strict=True)]
    return end, rows, stop, columns


def _row_into(
    payload: memoryview, at: int, row: int, valid: list[bytearray], offsets: list[array[int]], data: list[bytearray]
) -> None:
    """Append one row packet's cells to the columns (``at``: where its packet is, for the error)."""
    off, size_of = 0, len(payload)
    for i in range(len(data)):
        if row % 8 == 0:
            valid[i].append(0)
        try:
            size, off = read_packed_int(payload, off)
        except TruncatedError:
            raise ValueError(
                f"text_rows: the row at {at} ends inside a cell (or has fewer than {len(data)} cells)"
            ) from None
        if size is not None:
            if off + size > size_of:
                raise ValueError(f"text_rows: the row at {at} ends inside a cell (or has fewer than {len(data)} cells)")
            if len(data[i]) + size > 0x7FFFFFFF:
                raise ValueError("text_rows: a column's data passes 2 GiB in one call")
            data[i] += payload[off : off + size]
            off += size
            valid[i][row // 8] |= 1 << (row % 8)
        offsets[i].append(len(data[i]))
    if off != size_of:
        raise ValueError(f"text_rows: {size_of - off} bytes after the last cell of the row at {at}")


_cut = _framing.text_rows if _framing is not None else text_rows


class TextResultReader:
    """One text result set, bytes in (module docstring): :meth:`feed` what the socket gives, then take
    :meth:`batches`; :attr:`columns` once the definitions are in, :attr:`done` after the last row.  It holds only
    bytes not yet cut into rows (less than a packet, or one row's packets).  An ERR packet raises the
    :func:`~binlake.replication.protocol.server_error` of its code; a malformed packet
    :class:`~binlake.errors.MalformedError`."""

    def __init__(self) -> None:
        self.columns: list[ColumnDefinition] | None = None
        self.done = False
        self._buf = bytearray()
        self._count: int | None = None  # the column count, once read
        self._defs: list[ColumnDefinition] = []

    def feed(self, data: bytes) -> None:
        if self.done and data:
            raise MalformedError(f"{len(data)} bytes after the end of a result set")
        self._buf += data

    def batches(self) -> Iterator[RowBatch]:
        """The whole rows fed so far and not yet taken (a batch per call, and one per row longer than a packet)."""
        if self.done or not self._header():
            return
        assert self.columns is not None
        while not self.done:
            try:
                end, rows, stop, columns = _cut(self._buf, 0, len(self.columns))
            except ValueError as e:
                raise MalformedError(f"a malformed result row: {e}") from None
            del self._buf[:end]
            if rows:
                yield RowBatch(rows, tuple(columns))
            if stop == MORE:
                return
            if stop == LONG:
                long = self._long_row()
                if long is None:
                    return
                yield long
                continue
            got = self._packet(0)
            assert got is not None  # text_rows stops at END or ERROR only before a whole packet
            if stop == END:
                self._end(*got)
            else:
                self._error(got[0])

    def _packet(self, off: int) -> tuple[memoryview, int] | None:
        """The whole packet at ``off`` (payload, end), or ``None`` while it is incomplete."""
        buf = self._buf
        if len(buf) - off < 4:
            return None
        length = buf[off] | buf[off + 1] << 8 | buf[off + 2] << 16
        if len(buf) - off - 4 < length:
            return None
        return memoryview(buf)[off + 4 : off + 4 + length], off + 4 + length

    def _header(self) -> bool:
        """Read the column count, definitions and their EOF; whether they are all in."""
        off = 0
        while self.columns is None:
            got = self._packet(off)
            if got is None:
                break
            payload, off = got
            with payload:
                first = payload[0] if payload else -1
                if self._count is None:
                    if first == ERR_PACKET:
                        self._error(payload)
                    if first == OK_PACKET:
                        self.columns, self.done = [], True
                    else:
                        self._count = _column_count(payload)
                elif len(self._defs) < self._count:
                    self._defs.append(parse_column_definition(payload))
                elif first == EOF_PACKET:
                    self.columns = self._defs
                else:
                    raise MalformedError(f"no EOF packet after {self._count} column definitions")
        del self._buf[:off]
        return self.columns is not None

    @staticmethod
    def _error(payload: memoryview) -> None:
        err = parse_error_packet(bytes(payload))
        raise server_error(err.code, err.message)

    def _long_row(self) -> RowBatch | None:
        """The row at the buffer's start, longer than one packet (16 MiB continuations), once all of it is in."""
        assert self.columns is not None
        parts: list[bytes] = []
        off = 0
        while True:
            got = self._packet(off)
            if got is None:
                return None
            payload, off = got
            with payload:
                parts.append(bytes(payload))
            if len(parts[-1]) < MAX_PAYLOAD:
                break
        ncols = len(self.columns)
        valid, data = [bytearray() for _ in range(ncols)], [bytearray() for _ in range(ncols)]
        offsets = [array("i", [0]) for _ in range(ncols)]
        try:
            _row_into(memoryview(b"".join(parts)), 0, 0, valid, offsets, data)
        except ValueError as e:
            raise MalformedError(f"a malformed result row: {e}") from None
        del self._buf[:off]
        return RowBatch(
            1, tuple((bytes(v), o.tobytes(), bytes(d)) for v, o, d in zip(valid, offsets, data, strict=True))
        )

    def _end(self, payload: memoryview, end: int) -> None:
        with payload:
            status = payload[3] | payload[4] << 8 if len(payload) >= 5 else 0
        if status & SERVER_MORE_RESULTS_EXISTS:
            raise MalformedError("another result set follows a single statement's")
        if end != len(self._buf):
            raise MalformedError(f"{len(self._buf) - end} bytes after the end of a result set")
        self._buf.clear()
        self.done = True


def _column_count(payload: memoryview) -> int:
    """The column count packet's count (at least one)."""
    try:
        count, off = read_packed_int(payload, 0)
    except TruncatedError as e:
        raise MalformedError(f"a malformed column count packet: {e}") from None
    if count is None or count < 1 or off != len(payload):
        raise MalformedError(f"a malformed column count packet: {bytes(payload[:16])!r}")
    return count
