"""DECIMAL: MySQL's binary decimal (``decimal2bin``/``bin2decimal`` in ``strings/decimal.cc``) to an exact ``Decimal``.

A ``DECIMAL(p, s)`` value is stored big-endian in groups: the integer part's ``(p - s) % 9`` leading digits in
``DIG2BYTES[(p - s) % 9]`` bytes, then ``(p - s) // 9`` groups of 9 digits in 4 bytes each; then the fraction's
``s // 9`` groups of 4 bytes and its ``s % 9`` trailing digits in ``DIG2BYTES[s % 9]`` bytes.  The top bit of the
first byte is flipped (set for non-negative values) and every byte of a negative value is inverted, so that the
bytes sort like the numbers.  A group larger than its digit count allows is malformed, as ``bin2decimal`` says.

Readers return a ``Decimal`` carrying exactly ``s`` fraction digits (``Decimal('1.50')`` for 1.5 in
``DECIMAL(5,2)``), built from an exact integer so no ``decimal`` context rounding applies at any precision (MySQL 65,
MariaDB 65 with scale up to 38).  ``RENDER`` prints it as ``decimal2string`` does for ``mariadb-binlog``: fixed
point with all ``s`` fraction digits.

The pre-5.0 DECIMAL (type 0, an unpacked string whose length no table map logs) is not decodable from a binlog;
its reader raises :class:`UnsupportedError`, as ``mariadb-binlog`` gives up on it ("Found Old DECIMAL").

Example::

    >>> from binlake.coltypes import Column
    >>> col = Column.build(0, ColumnType.NEWDECIMAL, bytes([5, 2]))
    >>> READERS[ColumnType.NEWDECIMAL](col)(bytes.fromhex("7ffc9c"), 0)
    (Decimal('-3.99'), 3)
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError, TruncatedError, UnsupportedError
from binlake.values.row import Reader, ReaderFactory

__all__ = ["DIG2BYTES", "READERS", "RENDER", "decimal_size", "precision_scale"]

T = ColumnType

# bytes that hold 0..9 leftover digits: dig2bytes[] in strings/decimal.cc
DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_DIGITS_PER_GROUP = 9


def precision_scale(col: Column) -> tuple[int, int]:
    """``(precision, scale)`` of a DECIMAL column: from ``col`` when set, else from ``meta`` (precision << 8 | scale).

    Raises :class:`MalformedError` for metadata no server writes (precision 0, scale above precision).
    """
    precision = col.precision if col.precision is not None else col.meta >> 8
    scale = col.scale if col.scale is not None else col.meta & 0xFF
    if precision < 1 or scale > precision:
        raise MalformedError(f"DECIMAL({precision},{scale}) metadata of column {col.index + 1} is impossible")
    return precision, scale


def decimal_size(precision: int, scale: int) -> int:
    """Bytes of a ``DECIMAL(precision, scale)`` value (``decimal_bin_size``): ``decimal_size(10, 2) == 5``."""
    intg = precision - scale
    return (intg // 9 * 4 + DIG2BYTES[intg % 9]) + (scale // 9 * 4 + DIG2BYTES[scale % 9])


def groups(precision: int, scale: int) -> tuple[tuple[int, int, int, int], ...]:
    """``(shift, mask, digits, weight)`` for every group, read from the whole value as one big-endian integer.

    ``shift``/``mask`` cut the group out of that integer, ``digits`` bounds it (``< 10**digits``) and ``weight``
    is ``10**`` the position of its last digit in the unscaled integer (the value times ``10**scale``).
    """
    intg = precision - scale
    # (bytes, digits) most significant first: leading digits, integer groups, fraction groups, trailing digits
    layout = [(DIG2BYTES[intg % 9], intg % 9)] + [(4, 9)] * (intg // 9)
    layout += [(4, 9)] * (scale // 9) + [(DIG2BYTES[scale % 9], scale % 9)]
    out: list[tuple[int, int, int, int]] = []
    shift = 0
    digit_pos = 0
    for nbytes, digits in reversed(layout):
        if nbytes:
            out.append((shift, (1 << (8 * nbytes)) - 1, 10**digits, 10**digit_pos))
        shift += 8 * nbytes
        digit_pos += digits
    return tuple(out)


def _newdecimal_reader(col: Column) -> Reader:
    precision, scale = precision_scale(col)
    size = decimal_size(precision, scale)
    group_table = groups(precision, scale)
    sign_bit = 1 << (8 * size - 1)
    negative_mask = ((1 << (8 * size)) - 1) ^ sign_bit  # invert every bit but the (already flipped) sign bit
    from_bytes = int.from_bytes
    exponent = f"E-{scale}" if scale else ""

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise TruncatedError(
                f"DECIMAL({precision},{scale}) value of column {col.index + 1} at byte {pos}: "
                f"needs {size} bytes, {max(len(buf) - pos, 0)} left"
            )
        stored = from_bytes(buf[pos:end], "big")
        negative = not stored & sign_bit
        stored ^= negative_mask if negative else sign_bit
        unscaled = 0
        for shift, mask, bound, weight in group_table:
            group = (stored >> shift) & mask
            if group >= bound:
                raise MalformedError(
                    f"DECIMAL({precision},{scale}) value of column {col.index + 1} at byte {pos}: "
                    f"digit group {group} out of range"
                )
            unscaled += group * weight
        # "12345E-2" parses to Decimal('123.45') with exactly `scale` fraction digits, faster than slicing a string
        return Decimal(f"-{unscaled}{exponent}" if negative else f"{unscaled}{exponent}"), end

    return read


def _old_decimal_reader(col: Column) -> Reader:
    def read(buf: bytes, pos: int) -> tuple[object, int]:
        raise UnsupportedError(
            f"column {col.index + 1} is a pre-MySQL-5.0 DECIMAL: its stored length is not in the binlog"
        )

    return read


READERS: dict[int, ReaderFactory] = {
    T.NEWDECIMAL: _newdecimal_reader,
    T.DECIMAL: _old_decimal_reader,
}


def render_decimal(col: Column, value: object) -> str:
    """Fixed point with every fraction digit of the column: ``-0.0000000001``, ``0.00``, ``12345``."""
    assert isinstance(value, Decimal)
    return format(value, "f")


RENDER: dict[int, Callable[[Column, object], str]] = {T.NEWDECIMAL: render_decimal}
