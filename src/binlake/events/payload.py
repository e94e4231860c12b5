"""TRANSACTION_PAYLOAD_EVENT (40): a whole transaction's events, compressed (``binlog_transaction_compression``).

Layout (``Transaction_payload_event`` in ``libs/mysql/binlog/event/control_events.{h,cpp}``): no post-header is
read; the body is a list of fields, each ``type`` (packed integer), ``length`` (packed integer) and a value, up to
the end mark, then the payload::

    1  OTW_PAYLOAD_SIZE_FIELD               payload bytes (packed integer)
    2  OTW_PAYLOAD_COMPRESSION_TYPE_FIELD   0 ZSTD, 255 NONE (packed integer)
    3  OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD  bytes after decompression (packed integer)
    0  OTW_PAYLOAD_HEADER_END_MARK          (type only)
    payload                                 the events, without checksums, compressed as said

The decoder (``binlake.decoder.Decoder``) yields the payload event and then the events inside it, which it gets
from :meth:`TransactionPayloadEvent.uncompressed`.  Decompression needs the ``zstandard`` package (imported only
then) and is bounded: an uncompressed size above the caller's limit, or a stream that grows past it or past its
declared size, is a :class:`~binlake.errors.DecompressionError`, never an allocation.

Example::

    >>> from binlake.events.base import EventHeader
    >>> from binlake.events.context import DecodeContext
    >>> body = bytes([2, 3, 0xFC, 255, 0, 3, 1, 3, 1, 1, 3, 0]) + b"abc"  # 255 as a packed integer: fc ff 00
    >>> ev = decode_transaction_payload(EventHeader(0, 40, 1, 34, 0, 0, 4), body, DecodeContext())
    >>> ev.compression, ev.uncompressed(100), ev.summary()
    ('NONE', b'abc', 'NONE, 3 bytes -> 3 bytes')
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from binlake.errors import DecompressionError, MalformedError, UnsupportedError
from binlake.events.base import Event, EventHeader
from binlake.events.context import DecodeContext
from binlake.wire import Cursor

__all__ = ["COMPRESSION_TYPES", "TransactionPayloadEvent", "decode_transaction_payload"]

ZSTD = 0
NONE = 255
COMPRESSION_TYPES = {ZSTD: "ZSTD", NONE: "NONE"}

_END_MARK, _PAYLOAD_SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE = 0, 1, 2, 3
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class TransactionPayloadEvent(Event):
    """A compressed transaction: its fields as written and the payload bytes."""

    payload_size: int
    compression_type: int
    uncompressed_size: int
    payload: bytes

    @property
    def compression(self) -> str:
        return COMPRESSION_TYPES.get(self.compression_type, f"UNKNOWN_{self.compression_type}")

    def summary(self) -> str:
        return f"{self.compression}, {self.payload_size} bytes -> {self.uncompressed_size} bytes"

    def uncompressed(self, max_size: int) -> bytes:
        """The events inside, as bytes; at most ``max_size`` of them (else :class:`DecompressionError`)."""
        if self.uncompressed_size > max_size:
            raise DecompressionError(
                f"transaction payload claims {self.uncompressed_size} uncompressed bytes, more than the limit of "
                f"{max_size}",
                pos=self.header.pos,
            )
        if self.compression_type == NONE:
            data = self.payload
        elif self.compression_type == ZSTD:
            data = _zstd(self.payload, self.uncompressed_size)
        else:
            raise UnsupportedError(f"transaction payload compression type {self.compression_type}", pos=self.header.pos)
        if len(data) != self.uncompressed_size:
            raise DecompressionError(
                f"transaction payload gives {len(data)} bytes, its header says {self.uncompressed_size}",
                pos=self.header.pos,
            )
        return data


def _zstd(payload: bytes, limit: int) -> bytes:
    """Stream-decompress ``payload``, reading at most ``limit + 1`` bytes (one more shows a lying header)."""
    try:
        import zstandard
    except ImportError:
        raise UnsupportedError(
            "this binlog has ZSTD-compressed transactions (binlog_transaction_compression): pip install zstandard"
        ) from None
    out = bytearray()
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload), read_across_frames=True) as reader:
            while len(out) <= limit:
                chunk = reader.read(min(_CHUNK, limit + 1 - len(out)))
                if not chunk:
                    break
                out += chunk
    except zstandard.ZstdError as e:
        raise DecompressionError(f"zstd: {e}") from None
    return bytes(out)


def _field_value(value: memoryview, what: str) -> int:
    return Cursor(value).packed_int(what)


def decode_transaction_payload(header: EventHeader, body: bytes, ctx: DecodeContext) -> TransactionPayloadEvent:
    c = ctx.cursor(body)
    size: int | None = None
    compression, uncompressed_size = NONE, None
    while True:
        kind = c.packed_int("payload field type")
        if kind == _END_MARK:
            break
        value = c.view(c.packed_int("payload field length"), "payload field")
        if kind == _PAYLOAD_SIZE:
            size = _field_value(value, "payload_size")
        elif kind == _COMPRESSION_TYPE:
            compression = _field_value(value, "compression_type")
        elif kind == _UNCOMPRESSED_SIZE:
            uncompressed_size = _field_value(value, "uncompressed_size")
    if size is None:
        size = c.remaining
    if size != c.remaining:
        raise MalformedError(f"transaction payload_size {size} but {c.remaining} payload bytes follow")
    if uncompressed_size is None:
        if compression != NONE:
            raise MalformedError("compressed transaction payload without its uncompressed size")
        uncompressed_size = size
    return TransactionPayloadEvent(header, size, compression, uncompressed_size, c.rest())
