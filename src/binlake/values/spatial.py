"""GEOMETRY columns: a BLOB (``col.length`` length bytes) holding a 4-byte little-endian SRID and then WKB.

``Field_geom`` stores MySQL's internal geometry format (``sql/spatial.h``): SRID, then the OGC Well-Known Binary
of the shape (byte-order byte, uint32 type code, coordinates).  The reader returns the stored ``bytes``; the
converter gives a :class:`Geometry`.

Example::

    >>> from binlake.coltypes import Column
    >>> g = CONVERTERS[255](Column.build(0, 255, b"\\x04"))(bytes(4) + bytes.fromhex("0101000000") + bytes(16))
    >>> g.srid, g.geometry_type, g.type_name
    (0, 1, 'POINT')
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError
from binlake.values.strings import length_prefixed, render_quoted

__all__ = ["CONVERTERS", "GEOMETRY_TYPES", "READERS", "RENDER", "Geometry"]

T = ColumnType
Reader = Callable[[bytes, int], tuple[object, int]]
Converter = Callable[[object], object]

# Field::geometry_type (sql/field.h): the codes of WKB and of the GEOMETRY_TYPE optional metadata
GEOMETRY_TYPES = {
    0: "GEOMETRY",
    1: "POINT",
    2: "LINESTRING",
    3: "POLYGON",
    4: "MULTIPOINT",
    5: "MULTILINESTRING",
    6: "MULTIPOLYGON",
    7: "GEOMETRYCOLLECTION",
}
_SRID = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class Geometry:
    """One spatial value: its SRID and its WKB (``shapely.wkb.loads(g.wkb)`` reads it)."""

    srid: int
    wkb: bytes

    @property
    def geometry_type(self) -> int:
        """OGC type code of the WKB (1 POINT .. 7 GEOMETRYCOLLECTION), read in the WKB's own byte order."""
        return int.from_bytes(self.wkb[1:5], "little" if self.wkb[0] == 1 else "big")

    @property
    def type_name(self) -> str:
        return GEOMETRY_TYPES.get(self.geometry_type, f"UNKNOWN_{self.geometry_type}")


def _reader(col: Column) -> Reader:
    return length_prefixed(col.length or 0, "GEOMETRY")


def _convert(stored: object) -> object:
    raw: bytes = stored  # type: ignore[assignment]
    if len(raw) < 9 or raw[4] > 1:
        raise MalformedError(f"GEOMETRY value of {len(raw)} bytes is not SRID + WKB")
    return Geometry(_SRID.unpack_from(raw)[0], bytes(raw[4:]))


def _converter(col: Column) -> Converter:
    return _convert


def _render(col: Column, value: object) -> str:
    return render_quoted(value)  # type: ignore[arg-type]


READERS: dict[int, Callable[[Column], Reader]] = {T.GEOMETRY: _reader}
CONVERTERS: dict[int, Callable[[Column], Converter | None]] = {T.GEOMETRY: _converter}
RENDER: dict[int, Callable[[Column, object], str]] = {T.GEOMETRY: _render}
