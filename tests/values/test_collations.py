"""Collation ids -> names, charsets and codecs, checked against the ids real servers wrote."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.values import collations as c

from . import _binlog


@pytest.mark.parametrize(
    ("cid", "name", "charset", "codec"),
    [
        (8, "latin1_swedish_ci", "latin1", "cp1252"),
        (33, "utf8mb3_general_ci", "utf8mb3", "utf-8"),
        (35, "ucs2_general_ci", "ucs2", "ucs2"),
        (45, "utf8mb4_general_ci", "utf8mb4", "utf-8"),
        (46, "utf8mb4_bin", "utf8mb4", "utf-8"),
        (54, "utf16_general_ci", "utf16", "utf-16-be"),
        (56, "utf16le_general_ci", "utf16le", "utf-16-le"),
        (60, "utf32_general_ci", "utf32", "utf-32-be"),
        (63, "binary", "binary", None),
        (13, "sjis_japanese_ci", "sjis", "sjis"),
        (28, "gbk_chinese_ci", "gbk", "gbk"),
        (51, "cp1251_general_ci", "cp1251", "cp1251"),
        (25, "greek_general_ci", "greek", "greek"),
        (224, "utf8mb4_unicode_ci", "utf8mb4", "utf-8"),
        (247, "utf8mb4_vietnamese_ci", "utf8mb4", "utf-8"),
        (248, "gb18030_chinese_ci", "gb18030", "gb18030"),
        (255, "utf8mb4_0900_ai_ci", "utf8mb4", "utf-8"),
        (275, "utf8mb4_hr_0900_ai_ci", "utf8mb4", "utf-8"),
        (309, "utf8mb4_0900_bin", "utf8mb4", "utf-8"),
        (323, "utf8mb4_mn_cyrl_0900_as_cs", "utf8mb4", "utf-8"),
        # MariaDB: NO PAD twins, its own croatian, UCA-14.0.0 (ids written by MariaDB 10.11.19 in the corpus)
        (1032, "latin1_swedish_nopad_ci", "latin1", "cp1252"),
        (1070, "utf8mb4_nopad_bin", "utf8mb4", "utf-8"),
        (608, "utf8mb4_croatian_ci", "utf8mb4", "utf-8"),
        (2304, "utf8mb4_uca1400_ai_ci", "utf8mb4", "utf-8"),
        (2048 + (2 << 8) + 7, "ucs2_uca1400_nopad_as_cs", "ucs2", "ucs2"),
        (3072, "utf32_uca1400_ai_ci", "utf32", "utf-32-be"),
    ],
)
def test_known_ids(cid: int, name: str, charset: str, codec: str | None) -> None:
    assert (c.collation_name(cid), c.charset_name(cid), c.codec(cid)) == (name, charset, codec)


def test_unknown_and_renamed_ids() -> None:
    assert c.collation_name(17) is None and c.charset_name(5000) is None and c.codec(100) is None
    assert c.collation_name(245) == "utf8mb4_croatian_ci"
    assert c.collation_name(245, mariadb=True) == "utf8mb4_croatian_mysql561_ci"


def test_every_decoder_exists() -> None:
    # every name codec() gives has a decoder; the charsets without a rule each have a shipped table
    for cid in range(4096):
        name = c.codec(cid)
        if name is not None:
            assert callable(c.decoder(name))
    with pytest.raises(KeyError):
        c.decoder("shift_jis")  # a Python codec that is not the server's mapping is no decoder


def test_corpus_table_map_collations_are_known() -> None:
    # every collation id MariaDB 10.11 wrote for the t_char table (COLUMN_CHARSET optional metadata)
    path = _binlog.CORPUS / "mariadb" / "binlogs" / "corpus-bin.000002"
    if not path.exists():
        pytest.skip("corpus not present (expected under ../shared/corpus)")
    ids = {8, 33, 45, 35, 54, 60, 13, 28, 51, 1032, 608, 2304, 46, 63}
    assert all(c.collation_name(i) is not None for i in ids)


@given(st.binary(max_size=64))
def test_latin1_is_total_like_mysql(raw: bytes) -> None:
    text = c.decode(raw, "cp1252")
    assert isinstance(text, str) and len(text) == len(raw)


@given(st.text(max_size=40))
def test_decode_round_trips_and_keeps_invalid_bytes(text: str) -> None:
    for name in ("utf-8", "utf-16-be", "utf-32-be"):
        assert c.decode(text.encode(name, "surrogatepass"), name) in (
            text,
            text.encode(name, "surrogatepass"),
        )
    assert c.decode(b"\xc3", "utf-8") == b"\xc3"
