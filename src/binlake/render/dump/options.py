"""The options of ``binlake dump``: :class:`DumpOptions` and their command line, named as ``mariadb-binlog``'s.

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_dump_arguments(parser)
    >>> parser.parse_args(["a.000001", "--flashback"]).flashback
    True
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from binlake.render import add_decode_arguments

__all__ = ["DumpOptions", "add_dump_arguments"]


@dataclass(slots=True)
class DumpOptions:
    """What ``binlake dump`` prints: the options of ``mariadb-binlog`` it supports (how the files are decoded is
    :func:`~binlake.render.dump.dump`'s ``decode`` and ``decryptor``)."""

    start_position: int | None = None
    stop_position: int | None = None
    start_datetime: int | None = None
    stop_datetime: int | None = None
    database: str | None = None
    table: str | None = None
    flashback: bool = False
    table_metadata: bool = True
    on_error: str = "stop"


def _datetime(text: str) -> int:
    """``--start-datetime`` as ``mariadb-binlog`` reads it: local time ``YYYY-MM-DD HH:MM:SS``."""
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return int(time.mktime(time.strptime(text, fmt)))
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"not a date and time (YYYY-MM-DD HH:MM:SS): {text!r}")


def add_dump_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake dump`` (named as ``mariadb-binlog``'s)."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, printed in order")
    parser.add_argument("--start-position", type=int, help="first event to print (in the first file)")
    parser.add_argument("--stop-position", type=int, help="print events that start before this (in the last file)")
    parser.add_argument("--start-datetime", type=_datetime, help="first event at or after this local time")
    parser.add_argument("--stop-datetime", type=_datetime, help="stop at the first event at or after this time")
    parser.add_argument("-d", "--database", help="only this database's statements and rows")
    parser.add_argument("--table", help="only this table's rows")
    parser.add_argument(
        "--flashback", action="store_true", help="print the undo: rows events reversed and inverted, as the tool"
    )
    parser.add_argument(
        "--print-table-metadata",
        dest="table_metadata",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the # Columns / # Primary Key lines of each table map (default: on, off with --flashback)",
    )
    add_decode_arguments(parser)
