"""Types of the compiled event framing and header walk (``_framing.c``), used by :class:`binlake.decoder.Decoder`
and :func:`binlake.reader.header_table`."""

from mmap import mmap

EOF_PACKET: int  # the first byte of an end-of-rows packet (binlake.replication.protocol.EOF_PACKET)
ERR_PACKET: int  # the first byte of an ERR packet (binlake.replication.protocol.ERR_PACKET)

def frame(
    buf: bytes | bytearray | memoryview | mmap, offset: int, checksum_len: int, verify: bool, fast: bytes, limit: int
) -> list[tuple[int, int, int, int, int, int, int | None, bytes]]:
    """The whole, intact events of ``buf`` from ``offset`` (at most ``limit``, only types marked in the 256-byte
    ``fast`` mask): (size, timestamp, type_code, server_id, log_pos, flags, stored CRC32 or None, body)."""

def walk(
    buf: bytes | bytearray | memoryview | mmap, start: int, stop: int
) -> tuple[bytes, bytes, bytes, bytes, bytes, int]:
    """The headers of the whole events of a binlog image from ``start`` while below ``stop``: positions int64, sizes
    uint32, codes uint8, flags uint16, timestamps uint32 as packed native arrays, and the position where it stopped
    (below ``min(stop, len(buf))`` when the bytes there are no whole event)."""
