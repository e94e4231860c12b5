"""Types of the compiled row decoder, row printer and SQL writer (``_speedups.c``), used by
:mod:`binlake.rowdecoder`, :mod:`binlake.render.dump.rowtext` and :mod:`binlake.render.changes.sql` when it is
built."""

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

_TextColumn = tuple[int, int, int, bytes, bytes, bytes]

class TextPlan:
    def __init__(self, images: tuple[tuple[bytes, tuple[_TextColumn, ...]], ...]) -> None: ...
    def text(self, buf: bytes, head: bytes) -> tuple[str, int] | None: ...

_SqlColumn = tuple[int, int, int, int, bytes]

class SqlPlan:
    def __init__(
        self, images: tuple[tuple[_SqlColumn, ...], ...], pieces: tuple[bytes | tuple[int, int], ...]
    ) -> None: ...
    def text(self, buf: bytes, comment: bytes) -> tuple[bytes, int] | None: ...

_JsonColumn = tuple[int, int, int, int]

class JsonPlan:
    def __init__(
        self,
        images: tuple[tuple[_JsonColumn, ...], ...],
        objects: tuple[tuple[tuple[bytes, int], ...] | None, tuple[tuple[bytes, int], ...] | None],
    ) -> None: ...
    def text(
        self, buf: bytes, source: bytes, after_row: bytes, txn: bytes | None, total: int, mine: int, tail: bytes
    ) -> tuple[bytes, int] | None: ...

# The change kind of a Plan (its mode)
MODE_INSERT: int
MODE_DELETE: int
MODE_UPDATE: int
# The kinds of Plan's and TextPlan's columns (the enum of _speedups.c)
K_PY: int
K_INT: int
K_FLOAT: int
K_DOUBLE: int
K_YEAR: int
K_BIT: int
K_DATE: int
K_DATETIME2: int
K_TIMESTAMP2: int
K_TIME2: int
K_DECIMAL: int
K_STRING: int
K_UINT: int
K_SET_BITS: int
