"""Types of the compiled Arrow column builder (``_columnar.c``), used by :mod:`binlake.ingest.columnar`."""

_Step = tuple[int, int, int, int]  # (vkind, target or -1, p1, p2)
_Column = tuple[int, int, bytes | None, bytes, bytes | None]  # (length, null_count, validity, data, offsets)

class Plan:
    def __init__(self, targets: tuple[int, ...], images: tuple[tuple[_Step, ...], ...]) -> None: ...

class Table:
    def __init__(self, targets: tuple[int, ...]) -> None: ...
    @property
    def length(self) -> int: ...
    def append(self, plan: Plan, rows_data: bytes, /) -> int | None: ...
    def finish(self) -> list[_Column]: ...

# Arrow target kinds (the A_* enum of _columnar.c)
A_INT64: int
A_DEC128: int
A_FLOAT32: int
A_FLOAT64: int
A_DATE32: int
A_TIMESTAMP: int
A_VAR: int
# How a stored value is read (the V_* enum)
V_INT: int
V_YEAR: int
V_BIT: int
V_FLOAT: int
V_DOUBLE: int
V_DATE: int
V_DATETIME2: int
V_TIMESTAMP2: int
V_DECIMAL: int
V_TEXT: int
V_BYTES: int
