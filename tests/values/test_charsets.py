"""Text in every charset of the server, decoded from binlogs the server wrote, equals what SELECT returns.

The server is the oracle three times over:

* every charset of ``SHOW CHARACTER SET`` has a decoder (``binary`` alone is excluded: its values are bytes);
* each shipped table (``binlake.values.charmap``) is what the running server says code by code
  (:func:`binlake.testing.charmaps.server_codes`: every 1- and 2-byte sequence, and the 3-byte ones of
  ujis/eucjpms, offered to a column of the charset), and so is the latin1 rule;
* every code of every charset, INSERTed by the server into a column of that charset and decoded by binlake from
  the binlog, equals the text PyMySQL gets for it over utf8mb4 (``tests/values/_charset_binlog.py``); ENUM and
  SET member names too; the surrogate code points some charsets store (and ``SELECT`` sends as invalid UTF-8)
  stay bytes, their ENUM names ``\\xNN`` escapes.

The lake's twin is ``tests/spark/test_charsets_lake.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from binlake.testing.charmaps import server_codes, table_charsets
from binlake.testing.mariadb import MariaDBServer
from binlake.values import charmap, collations

from ._charset_binlog import (
    EXCLUDED,
    SURROGATE_MEMBER,
    SURROGATE_PAIR,
    SURROGATES,
    UNICODE,
    CharsetBinlog,
    charset_binlog_server,
    decoded_rows,
    differences,
    every_code,
)

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def charset_server() -> Iterator[tuple[MariaDBServer, CharsetBinlog]]:
    with charset_binlog_server() as pair:
        yield pair


def test_every_server_charset_has_a_decoder(charset_server: tuple[MariaDBServer, CharsetBinlog]) -> None:
    charsets = {str(r[0]) for r in charset_server[0].query("SHOW CHARACTER SET")}
    assert len(charsets) >= 40
    # every collation of the server: binlake knows its charset and has a decoder for it
    rows = charset_server[0].query(
        "SELECT id, character_set_name FROM information_schema.collations WHERE id IS NOT NULL"
    )
    ids = [(int(str(i)), str(cs)) for i, cs in rows]
    assert {cs for _, cs in ids} == charsets
    assert [(i, cs) for i, cs in ids if collations.charset_name(i) != cs] == []
    assert [(i, cs) for i, cs in ids if cs not in EXCLUDED and collations.codec(i) is None] == []
    assert charmap.names() <= charsets  # no table for a charset the server does not have
    assert set(UNICODE) | {"latin1"} | charmap.names() == charsets - set(EXCLUDED)


def test_tables_are_the_servers_mapping(charset_server: tuple[MariaDBServer, CharsetBinlog]) -> None:
    wanted = table_charsets(charset_server[0])
    assert set(wanted) == charmap.names()
    for cs, maxlen in wanted.items():
        assert server_codes(charset_server[0], cs, maxlen) == charmap.load(cs).codes, cs
    latin1 = server_codes(charset_server[0], "latin1", 1)
    assert {code: collations.decode(code, "cp1252") for code in latin1} == latin1
    assert len(latin1) == 256


def test_every_code_of_every_charset_decodes_as_select_returns_it(
    charset_server: tuple[MariaDBServer, CharsetBinlog],
) -> None:
    data = charset_server[1]
    wrong = differences(data.codes, decoded_rows(data.files, "codes"))
    assert not wrong, "\n".join(wrong[:40])
    assert len(data.codes[0]) == len(data.charsets) + 1
    assert data.code_count == sum(len(every_code(cs)) for cs in data.charsets) > 4_500_000


def test_enum_and_set_names_decode_with_the_column_charset(charset_server: tuple[MariaDBServer, CharsetBinlog]) -> None:
    data = charset_server[1]
    wrong = differences(data.names, decoded_rows(data.files, "names"))
    assert not wrong, "\n".join(wrong[:40])
    assert len(data.names[1]) == 2 * len(data.charsets) + 1


def test_surrogate_code_points_stay_bytes_and_enum_names_stay_text(
    charset_server: tuple[MariaDBServer, CharsetBinlog],
) -> None:
    """utf8mb3, utf8mb4, ucs2 and utf32 store U+D800..U+DFFF; SELECT sends them as ED A0 80..., no UTF-8 at all.
    binlake keeps such a value's bytes (as for any value that is no text) and escapes such an ENUM name."""
    data = charset_server[1]
    rows = decoded_rows(data.files, "surrogates")
    assert set(rows) == set(data.surrogates) == {1, 2}
    for row_id, text in ((1, "".join(map(chr, range(0xD800, 0xE000)))), (2, SURROGATE_PAIR)):
        stored, row = data.surrogates[row_id], rows[row_id]
        for cs, encoding in SURROGATES.items():
            assert stored[f"c_{cs}"] == text.encode(encoding, "surrogatepass")
            assert row[f"c_{cs}"] == stored[f"c_{cs}"], (row_id, cs)
            member = SURROGATE_MEMBER.encode(encoding, "surrogatepass")
            assert stored[f"e_{cs}"] == member
            assert row[f"e_{cs}"] == member.decode("ascii", "backslashreplace")
            row[f"e_{cs}"].encode("utf-8")  # raises on a lone surrogate
