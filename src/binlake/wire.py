"""Byte-level primitives: a bounds-checked cursor, packed integers, bitmaps, CRC32.

Nothing here knows about MySQL events; everything above the byte level builds on it.  Layouts follow MySQL's
``mysys/pack.cc`` (``net_field_length_ll``) and ``libs/mysql/binlog/event/event_reader.h``.

Example::

    >>> c = Cursor(bytes([0xFC, 0xFF, 0x00, 7]))
    >>> c.packed_int(), c.u8(), c.remaining
    (255, 7, 0)
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from binlake.errors import MalformedError, TruncatedError

__all__ = [
    "Cursor",
    "bits_lsb_first",
    "bits_msb_first",
    "crc32",
    "packed_int_size",
    "read_packed_int",
]

U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
I64 = struct.Struct("<q")
F32 = struct.Struct("<f")
F64 = struct.Struct("<d")


def crc32(data: bytes | memoryview, start: int = 0) -> int:
    """CRC32 as the binlog checksum uses it (the zlib polynomial, the same as ``my_checksum``)."""
    return zlib.crc32(data, start) & 0xFFFFFFFF


def packed_int_size(first: int) -> int:
    """Bytes a packed integer takes, from its first byte (1, 3, 4 or 9)."""
    if first < 0xFB:
        return 1
    if first == 0xFC:
        return 3
    if first == 0xFD:
        return 4
    return 9


def read_packed_int(buf: bytes | memoryview, pos: int, end: int | None = None) -> tuple[int | None, int]:
    """Decode a ``net_field_length_ll`` integer at ``pos``; return ``(value, next_pos)``.

    ``0xFB`` is SQL NULL (value ``None``).  Raises :class:`TruncatedError` past ``end`` (default: ``len(buf)``).
    """
    limit = len(buf) if end is None else end
    if pos >= limit:
        raise TruncatedError("packed integer past the end of its field", offset=pos)
    first = buf[pos]
    if first < 0xFB:
        return first, pos + 1
    if first == 0xFB:
        return None, pos + 1
    size = packed_int_size(first) - 1
    if pos + 1 + size > limit:
        raise TruncatedError("packed integer past the end of its field", offset=pos)
    return int.from_bytes(buf[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


def bits_lsb_first(data: bytes | memoryview, count: int) -> list[bool]:
    """The first ``count`` bits of ``data``, bit 0 of byte 0 first (null bitmaps, columns-present bitmaps)."""
    return [bool(data[i >> 3] & (1 << (i & 7))) for i in range(count)]


def bits_msb_first(data: bytes | memoryview, count: int) -> list[bool]:
    """The first ``count`` bits of ``data``, bit 7 of byte 0 first (SIGNEDNESS, COLUMN_VISIBILITY)."""
    return [bool(data[i >> 3] & (0x80 >> (i & 7))) for i in range(count)]


class Cursor:
    """A forward reader over ``buf[start:end]`` that raises :class:`TruncatedError` instead of reading past end.

    Offsets in errors are relative to ``base`` (set it to the event start so messages name the offset inside the
    event).  Reads return ``bytes`` copies for small fields and ``memoryview`` slices for ``view()``.
    """

    __slots__ = ("base", "buf", "end", "pos")

    def __init__(self, buf: bytes | memoryview, start: int = 0, end: int | None = None, base: int = 0) -> None:
        self.buf = buf
        self.pos = start
        self.end = len(buf) if end is None else end
        self.base = base

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int, what: str) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise TruncatedError(f"{what}: need {n} bytes, {self.end - p} left", offset=p - self.base)
        self.pos = p + n
        return p

    def u8(self, what: str = "u8") -> int:
        p = self._need(1, what)
        return self.buf[p]

    def uint(self, n: int, what: str = "integer") -> int:
        """Little-endian unsigned integer of ``n`` bytes."""
        p = self._need(n, what)
        return int.from_bytes(self.buf[p : p + n], "little")

    def u16(self, what: str = "u16") -> int:
        p = self._need(2, what)
        return int(U16.unpack_from(self.buf, p)[0])

    def u32(self, what: str = "u32") -> int:
        p = self._need(4, what)
        return int(U32.unpack_from(self.buf, p)[0])

    def u64(self, what: str = "u64") -> int:
        p = self._need(8, what)
        return int(U64.unpack_from(self.buf, p)[0])

    def f64(self, what: str = "double") -> float:
        p = self._need(8, what)
        return float(F64.unpack_from(self.buf, p)[0])

    def take(self, n: int, what: str = "bytes") -> bytes:
        p = self._need(n, what)
        return bytes(self.buf[p : p + n])

    def view(self, n: int, what: str = "bytes") -> memoryview:
        p = self._need(n, what)
        return memoryview(self.buf)[p : p + n]

    def rest(self) -> bytes:
        p, self.pos = self.pos, self.end
        return bytes(self.buf[p : self.end])

    def skip(self, n: int, what: str = "padding") -> None:
        self._need(n, what)

    def packed_int(self, what: str = "packed integer") -> int:
        """A ``net_field_length_ll`` integer; NULL (0xFB) is malformed where a length is expected."""
        try:
            value, end = read_packed_int(self.buf, self.pos, self.end)
        except TruncatedError as e:
            raise TruncatedError(f"{what}: truncated packed integer", offset=self.pos - self.base) from e
        if value is None:  # the cursor stays before the bad field, like every other failed read
            raise MalformedError(f"{what}: NULL marker where a length is expected", offset=self.pos - self.base)
        self.pos = end
        return value

    def packed_bytes(self, what: str = "length-prefixed bytes") -> bytes:
        n = self.packed_int(what)
        return self.take(n, what)

    def cstring(self, what: str = "NUL-terminated string") -> bytes:
        """Bytes up to (not including) the next NUL, which is consumed."""
        buf = self.buf
        idx = (
            bytes(buf[self.pos : self.end]).find(b"\0")
            if isinstance(buf, memoryview)
            else buf.find(b"\0", self.pos, self.end)
        )
        if idx < 0:
            raise TruncatedError(f"{what}: no terminating NUL", offset=self.pos - self.base)
        if isinstance(buf, memoryview):
            idx += self.pos
        out = bytes(buf[self.pos : idx])
        self.pos = idx + 1
        return out

    def bounded(self, end: int) -> Cursor:
        """A cursor of the same kind from here to ``end`` (a field with its own length), e.g. a status block."""
        return Cursor(self.buf, self.pos, min(end, self.end), self.base)

    def iter_tlv(self, what: str = "TLV") -> Iterator[tuple[int, int, memoryview]]:
        """Walk ``[type u8][length packed][value]`` entries to the end; yield ``(type, offset, value)``."""
        while self.pos < self.end:
            start = self.pos - self.base
            kind = self.u8(what)
            n = self.packed_int(what)
            yield kind, start, self.view(n, what)
