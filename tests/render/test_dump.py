"""``binlake dump`` on the bundled example binlog and on table maps built byte by byte.

The example (``examples/example-bin.000001``, written by MariaDB 10.11, described in ``examples/README.md``) holds
121/302 inserts, 122/309 updates and 2/10 deletes on ``shop.customers``/``shop.orders``; those counts and the
declared schema are what the dump must show.  The corpus comparison with ``mariadb-binlog`` itself is in
``tests/corpus/test_corpus_dump.py``.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.changes.filters import ChangeFilter
from binlake.coltypes import Column, ColumnType
from binlake.decoder import decode_event
from binlake.events.context import DecodeContext
from binlake.events.format import synthetic_fde
from binlake.events.table_map import TableMapEvent
from binlake.reader import walk_headers
from binlake.render.dump import DumpOptions, dump
from binlake.render.dump.tablemap import columns_lines, primary_key_line, value_type_name
from binlake.render.flashback import invert, swap_images
from binlake.values.row import ABSENT

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "example-bin.000001"
T = ColumnType


def _dump(options: DumpOptions, path: Path = EXAMPLE) -> str:
    out = io.BytesIO()
    assert dump([str(path)], options, out) == 0
    return out.getvalue().decode("utf-8")


def _count(text: str, line: str) -> int:
    return sum(1 for x in text.splitlines() if x == line)


def test_example_row_counts_and_schema() -> None:
    text = _dump(DumpOptions())
    assert _count(text, "### INSERT INTO `shop`.`customers`") == 121
    assert _count(text, "### INSERT INTO `shop`.`orders`") == 302
    assert _count(text, "### UPDATE `shop`.`customers`") == 122
    assert _count(text, "### UPDATE `shop`.`orders`") == 309
    assert _count(text, "### DELETE FROM `shop`.`customers`") == 2
    assert _count(text, "### DELETE FROM `shop`.`orders`") == 10
    assert (
        "# Columns(`id` BIGINT UNSIGNED NOT NULL,\n"
        "#         `customer_id` INT UNSIGNED NOT NULL,\n"
        "#         `status` ENUM NOT NULL('new','paid','shipped','cancelled') CHARSET utf8mb4 COLLATE "
        "utf8mb4_general_ci,\n"
        "#         `total` DECIMAL(10,2) NOT NULL,\n"
        "#         `placed` DATETIME(6) NOT NULL,\n"
        "#         `note` VARCHAR(200) CHARSET utf8mb4 COLLATE utf8mb4_general_ci)\n"
        "# Primary Key(id)\n"
    ) in text
    # every event position appears once as "# at N", in file order
    at = [int(m) for m in re.findall(r"^# at (\d+)$", text, re.M)]
    assert at == [h.pos for h in walk_headers(EXAMPLE)]
    assert text.startswith("/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;\n")
    assert text.endswith(
        "# End of log file\nROLLBACK /* added by mysqlbinlog */;\n"
        "/*!50003 SET COMPLETION_TYPE=@OLD_COMPLETION_TYPE*/;\n"
        "/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n"
    )


def test_example_flashback_inverts_every_change() -> None:
    text = _dump(DumpOptions(flashback=True, table_metadata=False))
    assert _count(text, "### DELETE FROM `shop`.`customers`") == 121
    assert _count(text, "### DELETE FROM `shop`.`orders`") == 302
    assert _count(text, "### INSERT INTO `shop`.`customers`") == 2
    assert _count(text, "### INSERT INTO `shop`.`orders`") == 10
    assert _count(text, "### UPDATE `shop`.`orders`") == 309
    assert "# at " not in text and "# Columns(" not in text


def test_positions_and_filters() -> None:
    positions = [h.pos for h in walk_headers(EXAMPLE)]
    start, stop = positions[5], positions[40]
    text = _dump(DumpOptions(filter=ChangeFilter(start_position=start, stop_position=stop)))
    at = [int(m) for m in re.findall(r"^# at (\d+)$", text, re.M)]
    assert at == positions[5:40]
    assert "Start: binlog v 4" not in text  # the format description is read, not printed (as the tool)
    only_orders = _dump(DumpOptions(filter=ChangeFilter(tables=("orders",))))
    assert "### INSERT INTO `shop`.`orders`" in only_orders
    assert "`shop`.`customers`" not in only_orders.replace("#Q>", "")
    assert "### " not in _dump(DumpOptions(filter=ChangeFilter(databases=("no_such_db",)))).replace("### ALTER", "")


def _table_map(types: bytes, meta: bytes, nulls: bytes, optional: bytes, ncols: int) -> TableMapEvent:
    """A TABLE_MAP_EVENT of ``corpus`.`t`` (table id 42) from its parts (no checksum)."""
    body = (
        (42).to_bytes(6, "little")
        + b"\x01\x00"
        + b"\x06corpus\x00"
        + b"\x01t\x00"
        + bytes([ncols])
        + types
        + bytes([len(meta)])
        + meta
        + nulls
        + optional
    )
    header = b"\x00\x00\x00\x00" + bytes([19]) + (1).to_bytes(4, "little") + (19 + len(body)).to_bytes(4, "little")
    header += b"\x00\x00\x00\x00\x00\x00"
    ev = decode_event(header + body, 4, DecodeContext(fde=synthetic_fde(checksum=False)))
    assert isinstance(ev, TableMapEvent)
    return ev


def _tlv(code: int, value: bytes) -> bytes:
    return bytes([code, len(value)]) + value


def test_columns_with_names_charsets_signedness_and_prefix_key() -> None:
    # id INT UNSIGNED NOT NULL, name VARCHAR(10) utf8mb4 (40 bytes), raw VARBINARY(8), doc TEXT latin1
    types = bytes([T.LONG, T.VARCHAR, T.VARCHAR, T.BLOB])
    meta = b"\x28\x00" + b"\x08\x00" + b"\x02"
    names = b"".join(bytes([len(n)]) + n for n in (b"id", b"name", b"raw", b"doc"))
    optional = (
        _tlv(1, b"\x80")  # SIGNEDNESS: the one numeric column is unsigned
        + _tlv(2, bytes([45, 1, 63, 2, 8]))  # DEFAULT_CHARSET 45, column 1 binary, column 2 latin1
        + _tlv(4, names)
        + _tlv(9, bytes([0, 0, 3, 10]))  # PRIMARY_KEY_WITH_PREFIX: id, doc(10)
    )
    tm = _table_map(types, meta, b"\x0e", optional, 4)
    assert columns_lines(tm) == (
        "# Columns(`id` INT UNSIGNED NOT NULL,\n"
        "#         `name` VARCHAR(10) CHARSET utf8mb4 COLLATE utf8mb4_general_ci,\n"
        "#         `raw` VARBINARY(8),\n"
        "#         `doc` TEXT CHARSET latin1 COLLATE latin1_swedish_ci)\n"
    )
    assert primary_key_line(tm) == "# Primary Key(id, doc(10))\n"


def test_columns_without_optional_metadata_and_unnamed_types() -> None:
    # MINIMAL/NO_LOG metadata: no names, no charsets; old TIME has no name in the client and no separator after it
    types = bytes([T.LONG, T.TIME, T.STRING, T.BLOB])
    meta = bytes([T.STRING, 4]) + b"\x04"
    tm = _table_map(types, meta, b"\x0f", b"", 4)
    assert columns_lines(tm) == "# Columns(INT,\n#         INVALID_TYPE(11)BINARY(4),\n#         LONGBLOB)\n"
    assert primary_key_line(tm) == ""


@pytest.mark.parametrize(
    ("code", "meta_bytes", "expected"),
    [
        (T.LONG, b"", "INT"),
        (T.SHORT, b"", "SHORTINT"),
        (T.LONGLONG, b"", "LONGINT"),
        (T.NEWDECIMAL, b"\x0f\x02", "DECIMAL(15,2)"),
        (T.BIT, b"\x07\x01", "BIT(15)"),
        (T.DATETIME2, b"\x06", "DATETIME(6)"),
        (T.TIMESTAMP2, b"\x00", "TIMESTAMP(0)"),
        (T.DATETIME, b"", "DATETIME"),
        (T.VARCHAR, b"\xc8\x00", "VARSTRING(200)"),
        (T.VARCHAR_COMPRESSED, b"\xc8\x00", "VARSTRING(200) COMPRESSED"),
        (T.BLOB, b"\x01", "TINYBLOB/TINYTEXT"),
        (T.BLOB_COMPRESSED, b"\x02", "BLOB/TEXT COMPRESSED"),
        (T.STRING, bytes([0xFE, 10]), "STRING(10)"),
        (T.STRING, bytes([0xEE, 0x2C]), "STRING(300)"),  # a long CHAR (#37426): length bits in byte 0
        (T.STRING, bytes([T.ENUM, 1]), "ENUM(1 byte)"),
        (T.STRING, bytes([T.ENUM, 2]), "ENUM(2 bytes)"),
        (T.STRING, bytes([T.SET, 8]), "SET(8 bytes)"),
        (T.GEOMETRY, b"\x04", "GEOMETRY"),
    ],
)
def test_value_type_names(code: int, meta_bytes: bytes, expected: str) -> None:
    assert value_type_name(Column.build(0, code, meta_bytes)) == expected


def test_invert_minimal_update_swaps_only_shared_columns() -> None:
    before = (1, ABSENT, b"x")
    after = (1, b"new", ABSENT)
    assert swap_images(before, after) == ((1, ABSENT, b"x"), (1, b"new", ABSENT))
    assert invert("update", [((1, 2), (1, 3)), ((5, 6), (5, 7))]) == (
        "update",
        [((5, 7), (5, 6)), ((1, 3), (1, 2))],
    )
    assert invert("delete", [((1,), None)]) == ("insert", [(None, (1,))])


_values = st.one_of(st.none(), st.integers(), st.binary(max_size=4), st.just(ABSENT))


@given(st.lists(st.tuples(st.tuples(_values, _values), st.tuples(_values, _values)), max_size=5))
def test_flashback_twice_is_the_original(changes: list[tuple[tuple[object, ...], tuple[object, ...]]]) -> None:
    kind, once = invert("update", changes)
    assert invert(kind, once) == ("update", changes)
    for kind in ("insert", "delete"):
        rows: list[tuple[tuple[object, ...] | None, tuple[object, ...] | None]] = [
            (None, a) if kind == "insert" else (b, None) for b, a in changes
        ]
        back_kind, back = invert(*invert(kind, rows))
        assert (back_kind, back) == (kind, rows)


def test_cli_options(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    import argparse

    from binlake.cli.dump import add_arguments
    from binlake.cli.dump import run as dump_main

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert dump_main(parser.parse_args([str(EXAMPLE)])) == 0
    assert b"# Columns(" in capsysbinary.readouterr().out
    assert dump_main(parser.parse_args([str(EXAMPLE), "--no-print-table-metadata"])) == 0
    assert b"# Columns(" not in capsysbinary.readouterr().out
    assert dump_main(parser.parse_args([str(EXAMPLE), "--flashback"])) == 0
    out = capsysbinary.readouterr().out
    assert b"# Columns(" not in out and b"### DELETE FROM `shop`.`orders`" in out
    assert dump_main(parser.parse_args([str(EXAMPLE), "--start-datetime", "2100-01-01 00:00:00"])) == 0
    assert b"###" not in capsysbinary.readouterr().out
    from binlake.cli import main

    assert main(["dump", str(EXAMPLE), "--key-file", "/nonexistent/keys.txt"]) == 2
    err = capsysbinary.readouterr().err
    assert err == b"binlake dump: /nonexistent/keys.txt: cannot read key file: No such file or directory\n"


def test_json_diffs_print_as_mysqlbinlog() -> None:
    """``print_json_diff`` (MySQL sql/log_event.cc): calls nested from the last operation out, consecutive diffs of
    one operation sharing a call, values as ``json_wrapper_to_string(..., false)`` prints them."""
    from binlake.render.dump.jsondiff import json_diff_text
    from binlake.values.json_binary import JsonDiff, encode
    from binlake.values.json_binary import JsonDiffOperation as Op

    diffs = [
        JsonDiff(Op.REPLACE, "$.a", encode(1.5)),
        JsonDiff(Op.REPLACE, "$.b", encode("it's\n\x01")),
        JsonDiff(Op.INSERT, "$.c[0]", encode({"k": [None, True]})),
        JsonDiff(Op.INSERT, "$.d", encode(None)),
        JsonDiff(Op.REMOVE, "$.e", None),
    ]
    assert json_diff_text(diffs, "@3") == (
        "JSON_REMOVE(\n"
        "###      JSON_INSERT(\n"
        "###      JSON_ARRAY_INSERT(\n"
        "###      JSON_REPLACE(@3, '$.a', 1.5,\n"
        "###      '$.b', 'it\\'s\\n\\x01'),\n"
        "###      '$.c[0]', CAST('{\"k\": [null, true]}' AS JSON)),\n"
        "###      '$.d', null),\n"
        "###      '$.e')"
    )
    assert json_diff_text([], "@2") == "@2"  # no diffs: the column unchanged


def test_partial_json_rows_print_through_both_printers() -> None:
    """A JSON column holding diffs prints the same value by value and through the generated printer."""
    from binlake.render.dump.rowtext import RowsText
    from binlake.values.json_binary import JsonDiff, encode
    from binlake.values.json_binary import JsonDiffOperation as Op

    cols = (Column.build(0, T.LONG, b""), Column.build(1, T.JSON, b"\x04"))
    text = RowsText(cols, "update", ((True, False), (False, True)))
    change = ((7, ABSENT), (ABSENT, [JsonDiff(Op.REPLACE, "$.n", encode(-3))]))
    plain: list[str] = []
    text.plain([change], plain.append, "### UPDATE `d`.`t`\n")
    fast: list[str] = []
    text.compiled()([change], fast.append, "### UPDATE `d`.`t`\n")
    expected = (
        "### UPDATE `d`.`t`\n### WHERE\n###   @1=7 /* INT meta=0 nullable=1 is_null=0 */\n### SET\n"
        "###   @2=JSON_REPLACE(@2, '$.n', -3) /* JSON meta=4 nullable=1 is_null=0 */\n"
    )
    assert plain == fast == [expected]
