"""Acceptance: the three TABLE_MAP_EVENTs printed in the seed articles decode to exactly what the articles say.

- 000 (the "Visual Breakdown" article): ``xxd -s 620 -l 68 binlog.000024``, `presentation`.`person`, table id 95.
- 001 (MariaDB KB page + a mysqlbinlog excerpt): `test`.`t4` mapped to number 33, CRC32 0xbe3c6b05.  The hex as
  printed has one wrong byte, which the event's own CRC32 exposes (see ``SEED_001_FIXED``).
- 004 (a Chinese walk-through): `darren`.`t`, table id 433, server id 2490050396, given field by field.
"""

from __future__ import annotations

import zlib

import pytest

from binlake.decoder import decode_event
from binlake.errors import ChecksumError
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.format import synthetic_fde
from binlake.events.table_map import TableMapEvent
from binlake.render.explain import explain_event, parse_hex_dump, render_text

# seed 000, "Reading the Raw Bytes", as printed (offsets and ASCII column included)
SEED_000_XXD = """\
0000026c: 3210 3568 1301 0000 0044 0000 00b0 0200 2.5h.....D......
0000027c: 0000 005f 0000 0000 0001 000c 7072 6573 ..._........pres
0000028c: 656e 7461 7469 6f6e 0006 7065 7273 6f6e entation..person
0000029c: 0002 030f 0258 0202 0101 0002 03fc ff00 .....X..........
000002ac: fba8 d0d8 ....
"""
SEED_000 = bytes.fromhex(
    "32103568 13 01000000 44000000 b0020000 0000"  # common header
    "5f0000000000 0100"  # table id 95, TM_BIT_LEN_EXACT_F
    "0c 70726573656e746174696f6e 00 06 706572736f6e 00"  # presentation, person
    "02 030f 02 5802 02"  # 2 columns: LONG, VARCHAR(600 bytes); col 2 nullable
    "010100 0203fcff00"  # SIGNEDNESS, DEFAULT_CHARSET 255
    "fba8d0d8"  # CRC32
)

# seed 001, as printed: a mysqlbinlog "# at 892" line glued to the first line of a one-byte-group hex dump
SEED_001_PRINTED = """\
# at 892d4 e5 27 5a 13 8c 27 00 00 2d 00 00 00 7c 03 00 ..'Z..'..-...|..
00 00 00 21 00 00 00 00 00 01 00 04 74 65 73 74 ...!........test
00 02 74 34 00 01 03 01 01 05 6b 3c be ..t4......k<.
"""
SEED_001_AS_PRINTED = bytes.fromhex(
    "d4e5275a 13 8c270000 2d000000 7c030000 0000"
    "210000000000 0100"
    "04 74657374 00 02 7434 00"
    "01 03 01 01"  # column count, LONG, metadata length 1 (!), null bitmap
    "056b3cbe"
)
# The corrected event.  Byte 39, the metadata-length field, is printed as 0x01 but must be 0x00:
# - it is the only single-byte change of the 45 bytes that makes CRC32 equal the stored 0xbe3c6b05
#   (test_seed_001_exactly_one_byte_fixes_the_crc checks this by trying all 45 x 255 changes), and
# - it agrees with the seed's text: the one column is MYSQL_TYPE_LONG, which writes no metadata
#   (Field_long has no do_save_field_metadata), and as printed the null bitmap would have no byte left.
SEED_001_FIXED = bytes.fromhex(
    "d4e5275a 13 8c270000 2d000000 7c030000 0000"
    "210000000000 0100"
    "04 74657374 00 02 7434 00"
    "01 03 00 01"  # column count 1, LONG, metadata length 0, null bitmap 0x01 (nullable)
    "056b3cbe"
)

# seed 004, assembled from its field-by-field list (every field's bytes are printed there)
SEED_004 = bytes.fromhex(
    "212e0e5b 13 5c276b94 2e000000 aa010000 0000"  # timestamp, type 19, server id, size 46, log_pos 426, flags
    "b10100000000 0100"  # table id 433, flags 1
    "06 64617272656e 00 01 74 00"  # darren, t
    "01 03 00 00"  # 1 column, LONG, no metadata, null bitmap 0 (NOT NULL)
    "8fcb077d"  # CRC32 0x7d07cb8f
)


def mysql8(verify: bool = True) -> DecodeContext:
    return DecodeContext(DecodeOptions(verify_checksum=verify), fde=synthetic_fde())


def table_map(raw: bytes, pos: int) -> TableMapEvent:
    ev = decode_event(raw, pos, mysql8())
    assert isinstance(ev, TableMapEvent)
    return ev


# --- 000 ---------------------------------------------------------------------------------------------------------


def test_seed_000_hex_dump_parses_to_the_event() -> None:
    assert parse_hex_dump(SEED_000_XXD) == SEED_000
    assert len(SEED_000) == 68


def test_seed_000_header() -> None:
    h = table_map(SEED_000, 620).header
    assert (h.timestamp, h.type_code, h.server_id, h.event_size, h.log_pos, h.flags) == (1748308018, 19, 1, 68, 688, 0)
    assert h.end_pos == 688
    assert h.checksum == 0xD8D0A8FB


def test_seed_000_table_map() -> None:
    tm = table_map(SEED_000, 620)
    assert (tm.table_id, tm.flags, tm.flag_names) == (95, 0x0001, ["TM_BIT_LEN_EXACT_F"])
    assert (tm.schema, tm.table) == ("presentation", "person")
    id_col, name_col = tm.columns
    assert (id_col.type, id_col.nullable, id_col.unsigned) == ("LONG", False, False)  # ID INT NOT NULL, signed
    assert (name_col.type, name_col.length, name_col.nullable) == ("VARCHAR", 600, True)  # VARCHAR(150) utf8mb4
    assert name_col.charset == 255
    assert tm.null_bitmap == b"\x02"


def test_seed_000_optional_metadata() -> None:
    sign, charset = table_map(SEED_000, 620).optional
    assert (sign.type, sign.offset, sign.raw, sign.value) == ("SIGNEDNESS", 56, b"\x00", [False])
    assert (charset.type, charset.offset, charset.raw) == ("DEFAULT_CHARSET", 59, b"\xfc\xff\x00")
    assert charset.value == {"default": 255, "overrides": []}


def test_seed_000_collation_255() -> None:
    from binlake.values.collations import collation_name

    assert collation_name(255) == "utf8mb4_0900_ai_ci"


def test_seed_000_explained_like_the_visual_breakdown() -> None:
    ex = explain_event(SEED_000, 620, mysql8())
    assert ex.error is None
    by_name = {(r.section, r.name): r for r in ex.rows}
    assert by_name["post-header", "table_id"].raw.hex() == "5f0000000000"
    assert by_name["post-header", "flags"].meaning == "0x0001 = TM_BIT_LEN_EXACT_F"
    assert by_name["body", "column metadata"].meaning == "col 2 VARCHAR: max 600 bytes"
    assert by_name["body", "null bitmap"].meaning == "col 1 NOT NULL, col 2 nullable"
    tlv = [r for r in ex.rows if r.name == "optional metadata"]
    assert [(r.offset, r.raw.hex()) for r in tlv] == [(56, "010100"), (59, "0203fcff00")]
    assert tlv[0].meaning.startswith("SIGNEDNESS: col 1 is signed")
    assert tlv[1].meaning.startswith("DEFAULT_CHARSET: utf8mb4_0900_ai_ci (255)")
    assert ex.rows[-1].meaning == "CRC32 stored 0xd8d0a8fb, computed 0xd8d0a8fb: OK"
    text = render_text(ex)
    assert "68 bytes = 19 header + 8 post-header + 37 body + 4 checksum" in text


# --- 001 ---------------------------------------------------------------------------------------------------------


def test_seed_001_hex_dump_parses_to_the_printed_bytes() -> None:
    assert parse_hex_dump(SEED_001_PRINTED) == SEED_001_AS_PRINTED
    assert len(SEED_001_AS_PRINTED) == 45


def test_seed_001_as_printed_fails_its_checksum() -> None:
    with pytest.raises(ChecksumError) as e:
        decode_event(SEED_001_AS_PRINTED, 847, mysql8())
    assert e.value.pos == 847
    assert "stored 0xbe3c6b05, computed 0xa7275a44" in str(e.value)


def test_seed_001_explain_shows_the_mismatch() -> None:
    ex = explain_event(SEED_001_AS_PRINTED, 847, mysql8())
    assert isinstance(ex.error, ChecksumError)
    assert ex.checksum == (0xBE3C6B05, 0xA7275A44)
    assert ex.rows[-1].meaning.endswith("MISMATCH")
    assert "MISMATCH" in render_text(ex)


def test_seed_001_exactly_one_byte_fixes_the_crc() -> None:
    stored = int.from_bytes(SEED_001_AS_PRINTED[-4:], "little")
    fixes = []
    for i in range(len(SEED_001_AS_PRINTED)):
        for b in range(256):
            if b == SEED_001_AS_PRINTED[i]:
                continue
            fixed = bytearray(SEED_001_AS_PRINTED)
            fixed[i] = b
            if zlib.crc32(fixed[:-4]) == int.from_bytes(fixed[-4:], "little"):
                fixes.append((i, b))
    assert stored == 0xBE3C6B05
    assert fixes == [(39, 0x00)]
    assert bytes(SEED_001_AS_PRINTED[:39]) + b"\x00" + SEED_001_AS_PRINTED[40:] == SEED_001_FIXED


def test_seed_001_corrected_event() -> None:
    tm = table_map(SEED_001_FIXED, 847)
    h = tm.header
    # "#171206 13:43:00 server id 10124 end_log_pos 892 CRC32 0xbe3c6b05 Table_map: `test`.`t4` mapped to number 33"
    assert (h.server_id, h.log_pos, h.event_size, h.checksum) == (10124, 892, 45, 0xBE3C6B05)
    assert (tm.schema, tm.table, tm.table_id) == ("test", "t4", 33)
    assert [(c.type, c.nullable) for c in tm.columns] == [("LONG", True)]
    assert tm.optional == ()
    assert "`test`.`t4`" in tm.summary()
    assert explain_event(SEED_001_FIXED, 847, mysql8()).error is None


# --- 004 ---------------------------------------------------------------------------------------------------------


def test_seed_004() -> None:
    tm = table_map(SEED_004, 380)
    h = tm.header
    assert (h.timestamp, h.server_id, h.event_size, h.log_pos, h.flags) == (0x5B0E2E21, 2490050396, 46, 426, 0)
    assert h.checksum == 0x7D07CB8F
    assert (tm.table_id, tm.flags, tm.schema, tm.table) == (433, 1, "darren", "t")
    assert [(c.type_code, c.nullable) for c in tm.columns] == [(3, False)]
    assert (tm.metadata, tm.null_bitmap, tm.optional) == (b"", b"\x00", ())
