"""Types of the compiled row decoder (``_speedups.c``), used by :mod:`binlake.rowdecoder` when it is built."""

from collections.abc import Callable

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
