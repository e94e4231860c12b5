"""Types of the compiled row decoder, row printer and header walk (``_speedups.c``), used by
:mod:`binlake.rowdecoder`, :mod:`binlake.render.dump.rowtext` and :mod:`binlake.reader` when it is built."""

from collections.abc import Callable
from mmap import mmap

_Column = tuple[int, int, int, int, Callable[[bytes, int], tuple[object, int]], Callable[[object], object] | None]

class Plan:
    def __init__(
        self,
        mode: int,
        width: int,
        absent: object,
        images: tuple[tuple[_Column, ...], ...],
    ) -> None: ...
    def rows(self, buf: bytes) -> list[tuple[tuple[object, ...] | None, tuple[object, ...] | None]] | None: ...

_TextColumn = tuple[int, int, int, bytes, bytes, bytes]

class TextPlan:
    def __init__(self, images: tuple[tuple[bytes, tuple[_TextColumn, ...]], ...]) -> None: ...
    def text(self, buf: bytes, head: bytes) -> tuple[str, int] | None: ...

def walk(
    buf: bytes | bytearray | memoryview | mmap, start: int, stop: int
) -> tuple[bytes, bytes, bytes, bytes, bytes, int, int, int]:
    """The event headers of a binlog image from ``start`` while below ``stop``: (positions int64, sizes uint32,
    codes uint8, flags uint16, timestamps uint32 as packed native arrays, the position where it stopped, why: 0 the
    range ended, 1 partial header, 2 size below 19 (``bad_size``), 3 partial event; ``bad_size``)."""
