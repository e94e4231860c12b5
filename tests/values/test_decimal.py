"""DECIMAL: corpus golden bytes, a decimal2bin encoder round trip up to (65,38), malformed and truncated input."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError, TruncatedError, UnsupportedError
from binlake.values import decimal, reader_for

T = ColumnType
DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # strings/decimal.cc


def column(precision: int, scale: int) -> Column:
    return Column.build(0, T.NEWDECIMAL, bytes([precision, scale]))


def decimal2bin(negative: bool, int_digits: str, frac_digits: str, precision: int, scale: int) -> bytes:
    """``decimal2bin`` of strings/decimal.cc, digit strings in, bytes out (test encoder, kept independent)."""
    intg = precision - scale
    ipart = int_digits.rjust(intg, "0")
    lead = intg % 9
    pieces = [(ipart[:lead], DIG2BYTES[lead])]
    pieces += [(ipart[i : i + 9], 4) for i in range(lead, intg, 9)]
    pieces += [(frac_digits[i : i + 9], 4) for i in range(0, scale - scale % 9, 9)]
    pieces += [(frac_digits[scale - scale % 9 :], DIG2BYTES[scale % 9])]
    raw = bytearray(b"".join(int(d or "0").to_bytes(n, "big") for d, n in pieces if n))
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    raw[0] ^= 0x80
    return bytes(raw)


# (metadata hex = precision, scale; stored hex; mariadb-binlog -vv text): corpus-bin.000002 table t_decimal
GOLDEN = [
    ("0100", "80", "0"),
    ("0100", "76", "-9"),
    ("0a0a", "8000000000", "0.0000000000"),
    ("0a0a", "44653600f6", "-0.9999999999"),
    ("0904", "81869f270f", "99999.9999"),
    ("1304", "8f423f3b9ac9ff270f", "999999999999999.9999"),
    ("4100", "e33b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff", "9" * 65),
    ("260a", "76c4653600c4653600c4653600c4653600f6", "-9999999999999999999999999999.9999999999"),
    ("0703", "58f0fc18", "-9999.999"),
    ("0a00", "7ffffffffe", "-1"),
    ("140a", "7ffffffffffffffffffe", "-0.0000000001"),
    ("411e", "7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe", "-0." + "0" * 29 + "1"),
    ("1209", "875bcd15075bcd15", "123456789.123456789"),
    ("2626", "875bcd1500bc614e35b7bf87350e34c04e", "0.12345678901234567890123456789012345678"),
    ("260a", "7ffffffffffffffffefffffffffffffffffe", "-1000000000.0000000001"),
    ("0c04", "800000011388", "1.5000"),
    (
        "411e",
        "7f439eb1ca484078caf1cb3fd0f8a086f8a432eaff439eb1ca484078fc85",
        "-12345678901234567890123456789012345.123456789012345678901234567890",
    ),
]


@pytest.mark.parametrize(("meta", "stored", "text"), GOLDEN)
def test_corpus_values(meta: str, stored: str, text: str) -> None:
    col = Column.build(0, T.NEWDECIMAL, bytes.fromhex(meta))
    data = bytes.fromhex(stored)
    value, end = reader_for(col)(b"\x00" + data + b"\xff", 1)
    assert end == 1 + len(data)
    assert isinstance(value, Decimal)
    assert value == Decimal(text) and value.as_tuple().exponent == -(col.scale or 0)
    assert decimal.RENDER[T.NEWDECIMAL](col, value) == text


@st.composite
def decimals(draw: st.DrawFn) -> tuple[int, int, bool, str, str]:
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(precision, 38)))
    int_len = draw(st.integers(0, precision - scale))
    int_digits = draw(st.text("0123456789", min_size=int_len, max_size=int_len)).lstrip("0")
    frac_digits = draw(st.text("0123456789", min_size=scale, max_size=scale))
    return precision, scale, draw(st.booleans()), int_digits, frac_digits


@given(decimals())
def test_round_trip(case: tuple[int, int, bool, str, str]) -> None:
    precision, scale, negative, int_digits, frac_digits = case
    stored = decimal2bin(negative, int_digits, frac_digits, precision, scale)
    assert len(stored) == decimal.decimal_size(precision, scale)
    col = column(precision, scale)
    value, end = reader_for(col)(stored, 0)
    assert end == len(stored)
    text = ("-" if negative else "") + (int_digits or "0") + ("." + frac_digits if scale else "")
    assert value == Decimal(text)
    assert isinstance(value, Decimal) and value.as_tuple().exponent == -scale
    assert decimal.RENDER[T.NEWDECIMAL](col, value) == text


@pytest.mark.parametrize(("precision", "scale", "size"), [(1, 0, 1), (9, 0, 4), (10, 2, 5), (65, 30, 30), (38, 38, 17)])
def test_size(precision: int, scale: int, size: int) -> None:
    assert decimal.decimal_size(precision, scale) == size


def test_metadata_fallback_and_impossible_metadata() -> None:
    col = Column(index=0, type_code=T.NEWDECIMAL, meta=5 << 8 | 2, real_type_code=T.NEWDECIMAL)
    assert decimal.precision_scale(col) == (5, 2)
    with pytest.raises(MalformedError):
        reader_for(column(2, 3))
    with pytest.raises(MalformedError):
        reader_for(column(0, 0))


def test_digit_group_out_of_range_is_malformed() -> None:
    # DECIMAL(9,0): one 4-byte group; 0x3B9ACA00 = 10**9 does not fit in 9 digits
    with pytest.raises(MalformedError):
        reader_for(column(9, 0))(bytes.fromhex("bb9aca00"), 0)
    # DECIMAL(2,0): leading group of 2 digits in 1 byte; 100 does not fit
    with pytest.raises(MalformedError):
        reader_for(column(2, 0))(bytes([0x80 | 100]), 0)


@pytest.mark.parametrize(("precision", "scale"), [(1, 0), (10, 2), (65, 30), (38, 38)])
def test_truncated_value_raises(precision: int, scale: int) -> None:
    stored = decimal2bin(True, "1", "1" * scale, precision, scale)
    read = reader_for(column(precision, scale))
    for cut in range(len(stored)):
        with pytest.raises(TruncatedError):
            read(stored[:cut], 0)
        with pytest.raises(TruncatedError):
            read(b"ab" + stored[:cut], 2)


def test_old_decimal_is_unsupported() -> None:
    col = Column(index=0, type_code=T.DECIMAL, meta=0, real_type_code=T.DECIMAL)
    read = reader_for(col)  # the table map still decodes
    with pytest.raises(UnsupportedError):
        read(b"0000012.50", 0)
