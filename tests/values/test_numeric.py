"""Integers, FLOAT/DOUBLE, BIT and YEAR: golden bytes from the corpus, round trips over full ranges, truncation."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError, TruncatedError
from binlake.values import numeric, reader_for

T = ColumnType

INT_SIZES: dict[int, int] = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}


def column(code: int, meta: bytes = b"", unsigned: bool | None = None) -> Column:
    return Column.build(0, code, meta).with_(unsigned=unsigned)


def read_at(col: Column, data: bytes) -> object:
    """Read ``data`` placed between unrelated bytes, checking the reader consumes exactly ``len(data)``."""
    buf = b"\xa5\x5a" + data + b"\xee"
    value, end = reader_for(col)(buf, 2)
    assert end == 2 + len(data)
    return value


# (type, metadata hex, SIGNEDNESS, stored hex, value, mariadb-binlog -vv text): row images of corpus-bin.000002
# (tables t_int, t_float, t_bit, t_temporal.y) and the text its reference decoding prints for them.
GOLDEN = [
    (T.LONG, "", False, "01000000", 1, "1"),
    (T.SHORT, "", False, "0080", -32768, "-32768 (32768)"),
    (T.SHORT, "", False, "c7cf", -12345, "-12345 (53191)"),
    (T.INT24, "", True, "ffffff", 16777215, "-1 (16777215)"),
    (T.INT24, "", True, "b1cb74", 7654321, "7654321"),
    (T.INT24, "", False, "000080", -8388608, "-8388608 (8388608)"),
    (T.LONGLONG, "", False, "0000000000000080", -(2**63), "-9223372036854775808 (9223372036854775808)"),
    (T.LONGLONG, "", False, "eb7e16820befddee", -1234567890123456789, "-1234567890123456789 (17212176183586094827)"),
    (T.LONGLONG, "", True, "f8ffffffffffffff", 18446744073709551608, "-8 (18446744073709551608)"),
    (T.LONGLONG, "", True, "ffffffffffffff7f", 9223372036854775807, "9223372036854775807"),
    (T.TINY, "", True, "80", 128, "-128 (128)"),
    (T.LONG, "", True, "00000080", 2147483648, "-2147483648 (2147483648)"),
    (T.FLOAT, "04", False, "0000c03f", 1.5, "1.5                 "),
    (T.FLOAT, "04", False, "25529a44", 1234.5670166015625, "1234.57             "),
    (T.FLOAT, "04", False, "eeff7fff", -3.402820018375656e38, "-3.40282e+38        "),
    (T.FLOAT, "04", True, "01000000", 1.401298464324817e-45, "1.4013e-45          "),
    (T.DOUBLE, "08", False, "3fe45f9ce774a642", 12345678901234.123, "12345678901234.123047"),
    (T.DOUBLE, "08", False, "ffffffffffffefff", -1.7976931348623157e308, "-1.7976931348623157081e+308"),
    (T.DOUBLE, "08", False, "0100000000000000", 5e-324, "4.9406564584124654418e-324"),
    (T.DOUBLE, "08", True, "9a9999999999c93f", 0.2, "0.2000000000000000111"),
    (T.DOUBLE, "08", False, "92d54d06cff08044", 1e22, "1e+22"),
    (T.BIT, "0100", None, "00", 0, "b'0'"),
    (T.BIT, "0200", None, "03", 3, "b'11'"),
    (T.BIT, "0101", None, "012c", 300, "b'100101100'"),
    (T.BIT, "0703", None, "7fffffff", 2**31 - 1, "b'1111111111111111111111111111111'"),
    (
        T.BIT,
        "0008",
        None,
        "deadbeefcafebabe",
        0xDEADBEEFCAFEBABE,
        "b'1101111010101101101111101110111111001010111111101011101010111110'",
    ),
    (T.YEAR, "", None, "01", 1901, "1901"),
    (T.YEAR, "", None, "a9", 2069, "2069"),
    (T.YEAR, "", None, "00", 0, "1900"),  # YEAR 0000: mariadb-binlog prints 1900 + stored byte
]


@pytest.mark.parametrize(("code", "meta", "unsigned", "stored", "value", "text"), GOLDEN)
def test_corpus_values(code: int, meta: str, unsigned: bool | None, stored: str, value: object, text: str) -> None:
    col = column(code, bytes.fromhex(meta), unsigned)
    got = read_at(col, bytes.fromhex(stored))
    assert got == value and type(got) is type(value)
    assert numeric.RENDER[code](col, got) == text


@pytest.mark.parametrize("code", list(INT_SIZES))
@pytest.mark.parametrize("unsigned", [None, False, True])
@given(data=st.data())
def test_int_round_trip(code: int, unsigned: bool | None, data: st.DataObject) -> None:
    bits = 8 * INT_SIZES[code]
    lo, hi = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    x = data.draw(st.integers(lo, hi) | st.sampled_from([lo, hi, 0]))
    stored = x.to_bytes(bits // 8, "little", signed=x < 0)
    col = column(code, unsigned=unsigned)
    assert read_at(col, stored) == x
    # mariadb-binlog reads the same bits as signed and adds the unsigned reading when that is negative
    signed = int.from_bytes(stored, "little", signed=True)
    expected = str(signed) if signed >= 0 else f"{signed} ({int.from_bytes(stored, 'little')})"
    assert numeric.RENDER[code](col, x) == expected


@given(st.floats(width=32, allow_nan=False))
def test_float_round_trip(x: float) -> None:
    col = column(T.FLOAT, b"\x04")
    got = read_at(col, struct.pack("<f", x))
    assert got == x and math.copysign(1, got) == math.copysign(1, x)
    assert numeric.RENDER[T.FLOAT](col, got) == "%-20g" % x  # noqa: UP031 - C printf, as mariadb-binlog


@given(st.floats(allow_nan=False))
def test_double_round_trip(x: float) -> None:
    col = column(T.DOUBLE, b"\x08")
    got = read_at(col, struct.pack("<d", x))
    assert got == x and math.copysign(1, got) == math.copysign(1, x)
    assert numeric.RENDER[T.DOUBLE](col, got) == "%.20g" % x  # noqa: UP031 - C printf, as mariadb-binlog


@given(st.integers(1, 64).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, 2**n - 1))))
def test_bit_round_trip(case: tuple[int, int]) -> None:
    bits, x = case
    col = column(T.BIT, bytes([bits % 8, bits // 8]))  # Field_bit metadata: extra bits, then whole bytes
    assert col.bits == bits
    assert read_at(col, x.to_bytes((bits + 7) // 8, "big")) == x
    text = numeric.RENDER[T.BIT](col, x)
    assert text == "b'" + bin(x)[2:].rjust(bits, "0") + "'"


def test_bit_width_falls_back_to_metadata() -> None:
    col = Column(index=0, type_code=T.BIT, meta=0x0101, real_type_code=T.BIT)  # bits not filled in
    assert numeric.bit_width(col) == 9
    assert reader_for(col)(b"\x01\x00", 0) == (256, 2)


def test_bit_with_bits_past_its_width_is_malformed() -> None:
    col = column(T.BIT, bytes([1, 1]))  # BIT(9)
    with pytest.raises(MalformedError):
        reader_for(col)(b"\x02\x00", 0)


@pytest.mark.parametrize("stored", [0, *range(1, 256)])
def test_year(stored: int) -> None:
    col = column(T.YEAR)
    value = read_at(col, bytes([stored]))
    assert value == (1900 + stored if stored else 0)
    assert numeric.RENDER[T.YEAR](col, value) == str(1900 + stored)


CASES = [
    (column(T.TINY), b"\x01"),
    (column(T.SHORT, unsigned=True), b"\x01\x02"),
    (column(T.INT24), b"\x01\x02\x03"),
    (column(T.INT24, unsigned=True), b"\x01\x02\x03"),
    (column(T.LONG), b"\x01\x02\x03\x04"),
    (column(T.LONGLONG, unsigned=True), bytes(8)),
    (column(T.FLOAT, b"\x04"), bytes(4)),
    (column(T.DOUBLE, b"\x08"), bytes(8)),
    (column(T.BIT, b"\x01\x08"), bytes(9)),
    (column(T.YEAR), b"\x7f"),
]


@pytest.mark.parametrize(("col", "stored"), CASES, ids=lambda c: getattr(c, "type", None))
def test_truncated_value_raises(col: Column, stored: bytes) -> None:
    read = reader_for(col)
    assert read(stored, 0)[1] == len(stored)
    for cut in range(len(stored)):
        with pytest.raises(TruncatedError):
            read(stored[:cut], 0)
        with pytest.raises(TruncatedError):
            read(b"xyz" + stored[:cut], 3)
