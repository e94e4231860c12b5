"""Inputs the fuzzers found that broke a guarantee, minimised, kept so the fixes stay fixed.

Each test names the target that found it and the fix.
"""

from __future__ import annotations

import contextlib
import struct

import pytest
from tests.fuzz.targets import Seeds, values

from binlake.coltypes import Column, ColumnType
from binlake.decoder import decode_event
from binlake.errors import BinlogError, UnsupportedError
from binlake.events.context import DecodeContext
from binlake.events.table_map import TableMapEvent


def _table_map(types: bytes) -> bytes:
    """A TABLE_MAP_EVENT of `d`.`t` with these column types and no metadata (Table_map_log_event::write_data_body)."""
    body = (7).to_bytes(6, "little") + b"\x01\x00" + b"\x01d\x00" + b"\x01t\x00"
    body += bytes([len(types)]) + types + b"\x00" + bytes([(1 << len(types)) - 1])
    return struct.pack("<IBIIIH", 0, 19, 1, 19 + len(body), 0, 0) + body


def test_old_decimal_column_without_metadata() -> None:
    """values target: IndexError in Column.build for a pre-5.0 DECIMAL (type 0), which logs no metadata
    (table_def, sql/rpl_utility.cc).  A table map holding one failed to decode at all.  Fix: coltypes.Column.build
    reads precision/scale only when the two bytes are there."""
    col = Column.build(0, ColumnType.DECIMAL, b"")
    assert (col.precision, col.scale, col.meta_bytes) == (None, None, b"")
    ev = decode_event(_table_map(bytes([ColumnType.DECIMAL, ColumnType.LONG])), 4, DecodeContext())
    assert isinstance(ev, TableMapEvent)
    assert [c.type for c in ev.columns] == ["DECIMAL", "LONG"]
    # its values cannot be read (their length is not logged): a BinlogError, through the row decoder
    with pytest.raises(UnsupportedError, match=r"pre-MySQL-5\.0 DECIMAL"):
        values(Seeds(), b"\xfb\xc6\xa8l@X\x1b}\x9e\xf6\x08/h\xd4\x93\xaa")


@pytest.mark.parametrize("data", [b"\xd3V\xcf\x93j\xe2\xa2D;3\xf7\x17\xae", b"\x01"])
def test_values_target_inputs(data: bytes) -> None:
    """values target: the first inputs that reached Column.build with old DECIMAL metadata."""
    with contextlib.suppress(BinlogError):
        values(Seeds(), data)
