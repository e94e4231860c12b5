"""Which columns a table map's SIGNEDNESS and charset entries count is the writer's choice, and the writers differ:
MariaDB gives YEAR a sign bit and GEOMETRY a charset, MySQL 8.0.21+ gives YEAR a sign bit and GEOMETRY no charset,
MySQL 8.0.20 and earlier neither (``binlake.coltypes.MetadataWriter`` has the sources).  Table maps built byte by
byte here as each writer lays them out; the same maps written by a real MariaDB are in
``tests/server/test_metadata_writer.py``.
"""

from __future__ import annotations

import struct

import pytest

from binlake.coltypes import ColumnType
from binlake.decoder import decode_event
from binlake.errors import MalformedError
from binlake.events.context import DecodeContext
from binlake.events.format import synthetic_fde
from binlake.events.table_map import TableMapEvent, metadata_writer
from binlake.render.explain import explain_event

T = ColumnType
MARIADB, MYSQL, MYSQL_OLD = "10.11.19-MariaDB-log", "8.0.40", "8.0.20"


def table_map_bytes(types: bytes, meta: bytes, optional: bytes) -> bytes:
    """A TABLE_MAP_EVENT of ``d``.``t`` as rows_event.h lays it out (no checksum)."""
    n = len(types)
    body = (
        struct.pack("<Q", 42)[:6]
        + b"\x01\x00"
        + b"\x01d\x00\x01t\x00"
        + bytes([n])
        + types
        + bytes([len(meta)])
        + meta
        + b"\xff" * ((n + 7) // 8)
        + optional
    )
    return struct.pack("<IBIIIH", 0, 19, 1, 19 + len(body), 0, 0) + body


def context(version: str) -> DecodeContext:
    return DecodeContext(fde=synthetic_fde(version, checksum=False))


def table_map(types: bytes, meta: bytes, optional: bytes, version: str) -> TableMapEvent:
    """The table map decoded under a format description of ``version``."""
    ev = decode_event(table_map_bytes(types, meta, optional), 4, context(version))
    assert isinstance(ev, TableMapEvent)
    return ev


def tlv(code: int, value: bytes) -> bytes:
    return bytes([code, len(value)]) + value


# CREATE TABLE yr (id INT PRIMARY KEY, y YEAR, u INT UNSIGNED, s INT, ub BIGINT UNSIGNED, t TINYINT UNSIGNED)
YR_TYPES = bytes([T.LONG, T.YEAR, T.LONG, T.LONG, T.LONGLONG, T.TINY])


@pytest.mark.parametrize(
    ("version", "bits"),
    [
        (MARIADB, 0b01101100),  # id y u s ub t: Field_year is a Field_tiny logged UNSIGNED (binlog_type_info)
        (MYSQL, 0b00101100),  # has_signedess_information_type: YEAR has a bit, written 0
        (MYSQL_OLD, 0b01011000),  # is_numeric_type of sql/field.h: no bit for YEAR
    ],
)
def test_year_signedness_follows_the_writer(version: str, bits: int) -> None:
    tm = table_map(YR_TYPES, b"", tlv(1, bytes([bits])), version)
    assert [c.unsigned for c in tm.columns if c.type_code != T.YEAR] == [False, True, False, True, True]
    assert tm.columns[1].unsigned == {MARIADB: True, MYSQL: False, MYSQL_OLD: None}[version]


# CREATE TABLE geo (id INT PRIMARY KEY, a VARCHAR(10) CHARACTER SET latin1, g GEOMETRY,
#   b VARCHAR(10) CHARACTER SET utf8mb4, p POINT, c TEXT CHARACTER SET ucs2, e ENUM('x','y') CHARACTER SET latin1)
GEO_TYPES = bytes([T.LONG, T.VARCHAR, T.GEOMETRY, T.VARCHAR, T.GEOMETRY, T.BLOB, T.STRING])
GEO_META = b"\x0a\x00" + b"\x04" + b"\x28\x00" + b"\x04" + b"\x02" + bytes([T.ENUM, 1])
GEO_CHARSETS = [None, 8, 63, 45, 63, 35, None]


def test_mariadb_counts_geometry_in_column_charset() -> None:
    # init_charset_field: m_cs of Field_geom is binary, so 5 character columns, logged one by one
    tm = table_map(GEO_TYPES, GEO_META, tlv(3, bytes([8, 63, 45, 63, 35])) + tlv(7, b"\x00\x01"), MARIADB)
    assert [c.charset for c in tm.columns] == GEO_CHARSETS
    assert [c.geometry_type for c in tm.columns if c.type_code == T.GEOMETRY] == [0, 1]


def test_mariadb_counts_geometry_in_default_charset_overrides() -> None:
    # DEFAULT_CHARSET: default latin1, overrides by index among the 5 character columns (g=1, b=2, p=3, c=4)
    value = bytes([8, 1, 63, 2, 45, 3, 63, 4, 35])
    tm = table_map(GEO_TYPES, GEO_META, tlv(2, value), MARIADB)
    assert [c.charset for c in tm.columns] == GEO_CHARSETS


def test_mysql_leaves_geometry_out_of_the_charsets() -> None:
    # is_character_type(field->real_type()): STRING, VAR_STRING, VARCHAR, BLOB; not GEOMETRY
    tm = table_map(GEO_TYPES, GEO_META, tlv(3, bytes([8, 45, 35])), MYSQL)
    assert [c.charset for c in tm.columns] == [None, 8, None, 45, None, 35, None]
    with pytest.raises(MalformedError, match="COLUMN_CHARSET: 5 entries for 3 columns"):
        table_map(GEO_TYPES, GEO_META, tlv(3, bytes([8, 63, 45, 63, 35])), MYSQL)


def test_the_writer_comes_from_the_format_description() -> None:
    assert metadata_writer("10.5.15-MariaDB-1:10.5.15+maria~focal-log") == metadata_writer(MARIADB)
    assert (metadata_writer(MARIADB).year_signedness, metadata_writer(MARIADB).geometry_charset) == (True, True)
    assert (metadata_writer("8.0.21").year_signedness, metadata_writer("8.0.21").geometry_charset) == (True, False)
    assert metadata_writer("8.0.20-debug").year_signedness is False
    assert metadata_writer("9.6.0") == metadata_writer(None) == metadata_writer("8.4.3")


def test_explain_names_the_columns_each_entry_counts() -> None:
    raw = table_map_bytes(YR_TYPES, b"", tlv(1, bytes([0b01101100])))
    meanings = [r.meaning for r in explain_event(raw, 4, context(MARIADB)).rows]
    signs = (
        "col 1 is signed, col 2 is unsigned, col 3 is unsigned, col 4 is signed, col 5 is unsigned, col 6 is unsigned"
    )
    assert any(m.startswith(f"SIGNEDNESS: {signs} [") for m in meanings), meanings
    raw = table_map_bytes(GEO_TYPES, GEO_META, tlv(3, bytes([8, 63, 45, 63, 35])))
    meanings = [r.meaning for r in explain_event(raw, 4, context(MARIADB)).rows]
    charsets = "col 2: latin1_swedish_ci (8), col 3: binary (63), col 4: utf8mb4_general_ci (45), col 5: binary (63)"
    assert any(m.startswith(f"COLUMN_CHARSET: {charsets}, col 6: ucs2_general_ci (35) [") for m in meanings), meanings
