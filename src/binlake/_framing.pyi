"""Types of the compiled event framing (``_framing.c``), used by :class:`binlake.decoder.Decoder`."""

from mmap import mmap

def frame(
    buf: bytes | bytearray | memoryview | mmap, offset: int, checksum_len: int, verify: bool, fast: bytes, limit: int
) -> list[tuple[int, int, int, int, int, int, int | None, bytes]]:
    """The whole, intact events of ``buf`` from ``offset`` (at most ``limit``, only types marked in the 256-byte
    ``fast`` mask): (size, timestamp, type_code, server_id, log_pos, flags, stored CRC32 or None, body)."""
