"""Integers, floating point, BIT and YEAR: readers of their row-image bytes and their ``mariadb-binlog`` text.

Layouts are each ``Field``'s ``pack()`` in ``sql/field.cc``: integers and floats little-endian in their pack length
(TINY 1, SHORT 2, INT24 3, LONG 4, LONGLONG 8, FLOAT 4, DOUBLE 8); BIT big-endian in ``(bits + 7) // 8`` bytes
(``Field_bit``); YEAR one byte, 0 for the year 0000, else ``year - 1900`` (``Field_year``).  The integer readers
return the signed value unless the SIGNEDNESS optional metadata says the column is unsigned (``col.unsigned is
True``); a column whose signedness is not logged reads as signed, as ``mariadb-binlog`` prints it.

``RENDER`` gives the text ``mariadb-binlog -vv`` prints after ``### @N=`` (``log_event_print_value`` in MariaDB's
``sql/log_event_client.cc``): integers as signed with the unsigned reading in parentheses when negative, FLOAT as
``%-20g`` (padded to 20 characters), DOUBLE as ``%.20g``, BIT as ``b'0101'``, YEAR as ``%04d`` of ``1900 + byte``.

Example::

    >>> from binlake.coltypes import Column
    >>> col = Column.build(0, ColumnType.LONG, b"")
    >>> READERS[ColumnType.LONG](col)(b"\\xff\\xff\\xff\\xff", 0)
    (-1, 4)
    >>> RENDER[ColumnType.LONG](col, -1)
    '-1 (4294967295)'
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError, TruncatedError
from binlake.values.row import Reader, ReaderFactory

__all__ = ["READERS", "RENDER"]

T = ColumnType

# (pack length, signed struct, unsigned struct) per integer type; INT24 has no struct format.
_INT_LAYOUT: dict[int, tuple[int, struct.Struct | None, struct.Struct | None]] = {
    T.TINY: (1, struct.Struct("<b"), struct.Struct("<B")),
    T.SHORT: (2, struct.Struct("<h"), struct.Struct("<H")),
    T.INT24: (3, None, None),
    T.LONG: (4, struct.Struct("<i"), struct.Struct("<I")),
    T.LONGLONG: (8, struct.Struct("<q"), struct.Struct("<Q")),
}
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def _truncated(col: Column, pos: int, size: int, have: int) -> TruncatedError:
    return TruncatedError(
        f"{col.real_type} value of column {col.index + 1} at byte {pos}: needs {size} bytes, {max(have, 0)} left"
    )


def _struct_reader(col: Column, fmt: struct.Struct) -> Reader:
    """A reader of one fixed-size value that ``fmt`` unpacks (the common hot path)."""
    size = fmt.size
    unpack_from = fmt.unpack_from

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(col, pos, size, len(buf) - pos)
        return unpack_from(buf, pos)[0], end

    return read


def _int_reader(col: Column) -> Reader:
    size, signed_fmt, unsigned_fmt = _INT_LAYOUT[col.real_type_code]
    unsigned = col.unsigned is True
    fmt = unsigned_fmt if unsigned else signed_fmt
    if fmt is not None:
        return _struct_reader(col, fmt)
    signed = not unsigned
    from_bytes = int.from_bytes

    def read_int24(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(col, pos, size, len(buf) - pos)
        return from_bytes(buf[pos:end], "little", signed=signed), end

    return read_int24


def _float_reader(col: Column) -> Reader:
    return _struct_reader(col, _F32)


def _double_reader(col: Column) -> Reader:
    return _struct_reader(col, _F64)


def bit_width(col: Column) -> int:
    """Bits of a BIT column: ``col.bits``, else from the metadata (byte 1 full bytes, byte 0 extra bits)."""
    if col.bits is not None:
        return col.bits
    return (col.meta >> 8) * 8 + (col.meta & 0xFF)


def _bit_reader(col: Column) -> Reader:
    bits = bit_width(col)
    size = (bits + 7) // 8
    limit = 1 << bits
    from_bytes = int.from_bytes

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise _truncated(col, pos, size, len(buf) - pos)
        value = from_bytes(buf[pos:end], "big")
        if value >= limit:
            raise MalformedError(f"BIT({bits}) value of column {col.index + 1} at byte {pos} has bits set past {bits}")
        return value, end

    return read


def _year_reader(col: Column) -> Reader:
    def read(buf: bytes, pos: int) -> tuple[object, int]:
        if pos >= len(buf):
            raise _truncated(col, pos, 1, 0)
        stored = buf[pos]
        return (1900 + stored if stored else 0), pos + 1

    return read


READERS: dict[int, ReaderFactory] = {
    T.TINY: _int_reader,
    T.SHORT: _int_reader,
    T.INT24: _int_reader,
    T.LONG: _int_reader,
    T.LONGLONG: _int_reader,
    T.FLOAT: _float_reader,
    T.DOUBLE: _double_reader,
    T.BIT: _bit_reader,
    T.YEAR: _year_reader,
}


def render_int(col: Column, value: object) -> str:
    """``-1 (4294967295)`` for a negative LONG, ``7`` for 7: ``my_b_write_sint32_and_uint32`` and LONGLONG's twin.

    ``mariadb-binlog`` ignores signedness and prints the bits as a signed number, adding the unsigned reading when
    it is negative; an unsigned column's value ``4294967295`` therefore prints as ``-1 (4294967295)`` too.
    """
    assert isinstance(value, int)
    bits = _INT_LAYOUT[col.real_type_code][0] * 8
    raw = value & ((1 << bits) - 1)
    if raw >> (bits - 1):
        return f"{raw - (1 << bits)} ({raw})"
    return str(raw)


def render_float(col: Column, value: object) -> str:
    """FLOAT as C's ``%-20g`` of the value widened to double: ``'1.5' + 17 spaces``."""
    assert isinstance(value, float)
    return format(value, "<20g")


def render_double(col: Column, value: object) -> str:
    """DOUBLE as C's ``%-.20g``: ``0.10000000000000000555`` for 0.1."""
    assert isinstance(value, float)
    return format(value, ".20g")


def render_bit(col: Column, value: object) -> str:
    """``b'0101'`` with exactly as many digits as the column has bits (``my_b_write_bit``)."""
    assert isinstance(value, int)
    bits = bit_width(col)
    return f"b'{value:0{bits}b}'" if bits else "b''"


def render_year(col: Column, value: object) -> str:
    """``%04d`` of ``1900 + stored byte``: the year 0000 (stored 0) prints as ``1900``, as ``mariadb-binlog`` does."""
    assert isinstance(value, int)
    return f"{value if value else 1900:04d}"


RENDER: dict[int, Callable[[Column, object], str]] = {
    T.TINY: render_int,
    T.SHORT: render_int,
    T.INT24: render_int,
    T.LONG: render_int,
    T.LONGLONG: render_int,
    T.FLOAT: render_float,
    T.DOUBLE: render_double,
    T.BIT: render_bit,
    T.YEAR: render_year,
}
