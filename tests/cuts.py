"""Binlogs as copies arrive in the world: cut short at every kind of boundary, or restamped as another server's file.

The cuts of ``examples/example-bin.000001`` (and two MySQL files of the corpus), each with where its whole
transactions end and how the ingest's one line says so; :func:`restamped` makes a file that is another binlog under
the same name (a ``RESET MASTER``, a rebuilt server).  ``tests/spark/test_cut_and_renamed.py`` holds the ingest
against them row by row; ``tests/faults/test_binlogs.py`` runs every reading command on them.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import NamedTuple

__all__ = ["CUTS", "EXAMPLE", "MYSQL_CUTS", "Cut", "MySQLCut", "restamped"]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "example-bin.000001"


class Cut(NamedTuple):
    """``head -c at_byte`` of the example: ``whole_to`` is where its whole transactions end (``None``: the format
    description is not whole, the file waits), ``says`` what the ingest's line about it holds."""

    at_byte: int
    whole_to: int | None
    says: str


# where the transaction the example file is cut in starts (GTID 0-1-15: its UPDATE's two rows events, 22785 and
# 30955) and how each cut reads in the ingest's log; the file ends whole transactions at 22522
CUTS = {
    "nothing": Cut(0, None, "0 bytes, less than its format description: waits"),
    "less than the magic": Cut(2, None, "2 bytes, less than its format description: waits"),
    "inside the format description": Cut(100, None, "100 bytes, less than its format description: waits"),
    "inside the GTID list": Cut(270, 256, "cut short at 270: its whole transactions end at 256, the 14 bytes"),
    "right after a GTID event": Cut(22564, 22522, "cut short at 22564: its whole transactions end at 22522, the 42 "),
    "inside an event header": Cut(22795, 22522, "cut short at 22795: its whole transactions end at 22522, the 273 "),
    "inside an event body": Cut(30000, 22522, "cut short at 30000: its whole transactions end at 22522, the 7478 "),
    "after a whole rows event": Cut(31000, 22522, "cut short at 31000: its whole transactions end at 22522, the 8478 "),
}


class MySQLCut(NamedTuple):
    """A MySQL binlog of the corpus (``mysql/PATH``) cut at ``at_byte``; its whole transactions end at ``whole_to``."""

    path: str
    at_byte: int
    whole_to: int


MYSQL_CUTS = {
    # MySQL 8.0.26: GTID, BEGIN (1199), TABLE_MAP ...: cut right after BEGIN
    "after BEGIN": MySQLCut("rust_mysql_common/binlog-invisible-columns.000001", 1275, 1120),
    # MySQL 8.0.31: GTID (651), a ZSTD TRANSACTION_PAYLOAD (730-1283) holding BEGIN ... XID: cut inside it
    "inside a compressed payload": MySQLCut("mysql-binlog-connector-rust/mysql-bin.000057", 1000, 651),
}


def restamped(binlog: bytes, seconds: int) -> bytes:
    """``binlog`` as if its server had started it ``seconds`` later (a RESET MASTER, a rebuilt server): the format
    description's timestamp moved and its CRC32 made again (computed without the in-use flag, as servers do)."""
    out = bytearray(binlog)
    size = int.from_bytes(out[13:17], "little")
    out[4:8] = (int.from_bytes(out[4:8], "little") + seconds).to_bytes(4, "little")
    event = bytearray(out[4 : 4 + size - 4])
    event[17] &= 0xFE
    out[size : size + 4] = zlib.crc32(bytes(event)).to_bytes(4, "little")
    return bytes(out)
