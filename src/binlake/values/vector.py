"""MySQL 9 VECTOR columns: a BLOB-like value (``col.length`` length bytes) of little-endian float32 elements.

``Field_vector`` (``sql/field.cc``) stores ``dimension * 4`` bytes; the table map's VECTOR_DIMENSIONALITY optional
metadata gives the dimension.  The reader returns the stored ``bytes``; the converter a ``tuple[float, ...]``
(each float32 widened to a Python float exactly).

Example::

    >>> from binlake.coltypes import Column
    >>> CONVERTERS[242](Column.build(0, 242, b"\\x04"))(bytes.fromhex("0000803f000080bf"))
    (1.0, -1.0)
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError
from binlake.values.strings import length_prefixed, render_quoted

__all__ = ["CONVERTERS", "READERS", "RENDER"]

T = ColumnType
Reader = Callable[[bytes, int], tuple[object, int]]
Converter = Callable[[object], object]


def _reader(col: Column) -> Reader:
    return length_prefixed(col.length or 0, "VECTOR")


def _converter(col: Column) -> Converter:
    dimension = col.vector_dimension

    def convert(stored: object) -> object:
        raw: bytes = stored  # type: ignore[assignment]
        count, rest = divmod(len(raw), 4)
        if rest or (dimension is not None and count != dimension):
            raise MalformedError(f"VECTOR value of {len(raw)} bytes for dimension {dimension}")
        return struct.unpack(f"<{count}f", raw)

    return convert


def _render(col: Column, value: object) -> str:
    return render_quoted(value)  # type: ignore[arg-type]


READERS: dict[int, Callable[[Column], Reader]] = {T.VECTOR: _reader}
CONVERTERS: dict[int, Callable[[Column], Converter | None]] = {T.VECTOR: _converter}
RENDER: dict[int, Callable[[Column, object], str]] = {T.VECTOR: _render}
