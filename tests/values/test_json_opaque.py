"""MySQL binary JSON opaque values (``JSONB_TYPE_OPAQUE``: a field type byte, a length, the bytes), built byte by
byte as ``sql-common/json_binary.cc`` serializes them.  Only DECIMAL and the temporal types are typed JSON values
(``Json_wrapper::type()`` in ``sql-common/json_dom.cc``); every other field type, VAR_STRING (253) included, is
``J_OPAQUE``, printed by ``wrapper_to_string`` as ``"base64:typeNN:"`` and ``base64_encode`` of the bytes
(``mysys/base64.cc``: a newline after every 76 characters, escaped in the JSON string), whatever the bytes are.

MariaDB's JSON is text, so no MariaDB server writes these: MySQL's do (``json-opaque.binlog`` of the corpus, type 15,
is in ``test_json_binary.py``).
"""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.values import json_binary as jb

OPAQUE, SMALL_OBJECT, SMALL_ARRAY, STRING = 0x0F, 0x00, 0x02, 0x0C


def varlen(n: int) -> bytes:
    """json_binary's length: 7 bits per byte, low bits first, high bit = more."""
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def opaque(field_type: int, data: bytes) -> bytes:
    """The value bytes of an opaque value (without its type byte)."""
    return bytes([field_type]) + varlen(len(data)) + data


def scalar(field_type: int, data: bytes) -> bytes:
    """A document that is one opaque value."""
    return bytes([OPAQUE]) + opaque(field_type, data)


def object_of(key: bytes, field_type: int, data: bytes) -> bytes:
    """``{key: opaque}`` in the small object layout: count, size, key entry (offset, length), value entry (type,
    offset), the key, the value; offsets from the byte after the type byte."""
    value = opaque(field_type, data)
    header = 2 + 2 + 4 + 3
    size = header + len(key) + len(value)
    body = (
        (1).to_bytes(2, "little")
        + size.to_bytes(2, "little")
        + header.to_bytes(2, "little")
        + len(key).to_bytes(2, "little")
        + bytes([OPAQUE])
        + (header + len(key)).to_bytes(2, "little")
        + key
        + value
    )
    return bytes([SMALL_OBJECT]) + body


def test_var_string_is_opaque_whatever_its_bytes() -> None:
    assert jb.to_text(scalar(253, b"abc")) == '"base64:type253:YWJj"'
    assert jb.to_text(scalar(253, b"\xff\xfe")) == '"base64:type253://4="'  # not UTF-8: never an error
    assert jb.to_text(object_of(b"k", 253, b"\xc3")) == '{"k": "base64:type253:ww=="}'
    assert jb.to_text(scalar(253, b"")) == '"base64:type253:"'


@pytest.mark.parametrize("field_type", [1, 3, 8, 13, 15, 16, 245, 249, 250, 251, 252, 253, 254, 255])
def test_every_other_field_type_prints_as_base64(field_type: int) -> None:
    data = bytes(range(7))
    assert jb.to_text(scalar(field_type, data)) == f'"base64:type{field_type}:AAECAwQFBg=="'


def test_long_values_break_their_base64_every_76_characters() -> None:
    # base64_encode writes '\n' before each group once 76 characters are out; double_quote escapes it
    assert jb.to_text(scalar(252, b"\0" * 57)) == '"base64:type252:' + "A" * 76 + '"'
    assert jb.to_text(scalar(252, b"\0" * 60)) == '"base64:type252:' + "A" * 76 + "\\n" + "AAAA" + '"'
    text = jb.to_text(scalar(254, bytes(200)))
    assert text.count("\\n") == 3 and "\n" not in text


def test_decimal_and_temporals_are_typed() -> None:
    # NEWDECIMAL: precision, scale, decimal2bin; DATE/TIME/DATETIME/TIMESTAMP: the packed 8-byte longlong
    assert jb.to_text(scalar(246, bytes([4, 2]) + bytes([0x80 | 12, 34]))) == "12.34"
    date = ((2024 * 13 + 2) << 5 | 29) << 17
    assert jb.to_text(scalar(10, (date << 24).to_bytes(8, "little"))) == '"2024-02-29"'
    stamp = (date | 13 << 12 | 14 << 6 | 15) << 24 | 123456
    assert jb.to_text(scalar(12, stamp.to_bytes(8, "little"))) == '"2024-02-29 13:14:15.123456"'
    assert jb.to_text(scalar(7, stamp.to_bytes(8, "little"))) == '"2024-02-29 13:14:15.123456"'
    time = -((1 << 12 | 2 << 6 | 3) << 24 | 500000)
    assert jb.to_text(scalar(11, time.to_bytes(8, "little", signed=True))) == '"-01:02:03.500000"'


@given(st.integers(0, 255).filter(lambda t: t not in (7, 10, 11, 12, 246)), st.binary(max_size=300))
def test_opaque_bytes_never_fail(field_type: int, data: bytes) -> None:
    text = jb.to_text(object_of(b"key", field_type, data))
    prefix = f'{{"key": "base64:type{field_type}:'
    assert text.startswith(prefix) and text.endswith('"}')
    assert base64.b64decode(text[len(prefix) : -2].replace("\\n", "")) == data


def test_the_json_column_converter_prints_them() -> None:
    col = Column(0, ColumnType.JSON, 4, real_type_code=ColumnType.JSON, length=4)
    convert = jb.CONVERTERS[ColumnType.JSON](col)
    assert convert is not None and convert(object_of(b"a", 253, b"\x80")) == '{"a": "base64:type253:gA=="}'
