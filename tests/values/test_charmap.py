"""The shipped charset tables and their decoder (``binlake.values.charmap``), without a server.

tests/values/test_charsets.py proves the tables are the server's mapping; here: the decoder of a whole value is
the text of its codes one after another, bytes that split into no codes stay bytes, the file format round-trips,
and the cases issue 11 names decode as the server decodes them.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.coltypes import Column
from binlake.coltypes import ColumnType as T
from binlake.values import charmap, collations, strings

CHARSETS = sorted(charmap.names())


def _reference(table: charmap.Charmap, raw: bytes) -> str | bytes:
    """Split ``raw`` into codes the slow way: at each byte, the one code that starts there, if any."""
    out, pos = [], 0
    while pos < len(raw):
        for size in (1, 2, 3):
            if raw[pos : pos + size] in table.codes:
                out.append(table.codes[raw[pos : pos + size]])
                pos += size
                break
        else:
            return raw
    return "".join(out)


def test_every_table_loads_small_and_lazily() -> None:
    assert len(CHARSETS) == 32
    for cs in CHARSETS:
        table = charmap.load(cs)
        assert charmap.load(cs) is table  # read once
        assert all(len(text) == 1 for text in table.codes.values())
        assert all(table.decode(code) == text for code, text in table.codes.items())


@pytest.mark.parametrize("cs", CHARSETS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_value_is_its_codes_in_a_row(cs: str, data: st.DataObject) -> None:
    table = charmap.load(cs)
    codes = data.draw(st.lists(st.sampled_from(sorted(table.codes)), max_size=40))
    assert table.decode(b"".join(codes)) == "".join(table.codes[c] for c in codes)
    noise = data.draw(st.binary(max_size=12))
    raw = b"".join(codes) + noise
    assert table.decode(raw) == _reference(table, raw)


@given(st.dictionaries(st.integers(0, 0xFFFFFF), st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c < 0xE000)))
def test_the_file_format_round_trips(pairs: dict[int, int]) -> None:
    codes = {n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big"): chr(c) for n, c in pairs.items()}
    data = charmap.pack(codes)
    assert data[:5] == b"BLCM\x01" and charmap.unpack(data) == codes
    with pytest.raises(ValueError):
        charmap.unpack(b"BLCM\x02" + data[5:])


@pytest.mark.parametrize(
    ("collation", "raw", "text"),
    [
        (13, b"C:\x81\x5fdir", "C:\\dir"),  # sjis: the server's backslash, not the full-width one
        (12, b"C:\xa1\xc0dir", "C:\\dir"),  # ujis
        (97, b"\xa1\xc1\xa1\xc2\xa1\xdd\xa1\xf1\xa1\xf2\xa2\xcc", "～∥－￠￡￢"),  # eucjpms is not euc_jp
        (19, b"\x81\x41", "갂"),  # euckr: the UHC range
        (1, b"\xf9\xd6", "碁"),  # big5 0xF9D6..0xF9FE
        (36, b"\xfc\xfd", "ⁿ²"),  # cp866
        (22, b"\x95", "•"),  # koi8u
        (25, b"\xa1\xa2", "ʽʼ"),  # greek
        (16, b"\xaf", "‾"),  # hebrew
        (3, b"plain ASCII \xa8", "plain ASCII ¤"),  # dec8, hp8, swe7, armscii8, keybcs2, geostd8: no Python codec
        (10, b"[\\]", "ÄÖÅ"),  # swe7: 7-bit, national letters in place of ASCII punctuation
        (92, b"\xc0", "ა"),  # geostd8
        (13, b"\xf0\x40", "?"),  # sjis user-defined area: stored, but no Unicode character: SELECT says ?
        (11, b"\xe9", "?"),  # ascii: the server stores any byte, SELECT gives ? above 0x7F
        (13, b"ok\x81", b"ok\x81"),  # a code cut short: not valid sjis, the value stays bytes
        (13, b"\xfd", b"\xfd"),  # a byte no sjis code starts with
        (35, b"\xd8\x3d\xde\x00", b"\xd8\x3d\xde\x00"),  # ucs2: two codes without characters, not one pair
        (35, b"\x00a\x20\xac", "a€"),
    ],
)
def test_issue_cases_decode_as_the_server_does(collation: int, raw: bytes, text: str | bytes) -> None:
    col = Column.build(0, T.VARCHAR, b"\x40\x00").with_(charset=collation)
    convert = strings.CONVERTERS[T.VARCHAR](col)
    assert convert is not None
    assert convert(raw) == text
    assert collations.decode(raw, collations.codec(collation) or "") == text
