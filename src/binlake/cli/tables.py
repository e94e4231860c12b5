"""``binlake tables LAKE [TABLE] [--limit N] [--batch N]``: the command line of :mod:`binlake.lake.show`."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from binlake.errors import BinlogError
from binlake.lake.lake import Lake
from binlake.lake.show import list_tables, show_table

__all__ = ["LIMIT", "add_arguments", "run"]

LIMIT = 20
"""Rows shown of a table unless ``--limit`` says otherwise."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``tables`` command's arguments to ``parser``."""
    parser.add_argument("lake", metavar="LAKE", help="a lake written by binlake ingest: a folder or a URI (s3://...)")
    parser.add_argument(
        "table",
        nargs="?",
        metavar="TABLE",
        help="show the first rows of this table: db.table (its current state), db.table/changes, _events, ...",
    )
    parser.add_argument("--limit", type=int, metavar="N", help=f"rows to show with TABLE (default {LIMIT})")
    parser.add_argument(
        "--batch",
        type=int,
        metavar="N",
        help="every table as of batch N (time travel, within the tables' log retention; default: the last complete "
        "batch, never a batch an ingest is still committing)",
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """List the tables of ``args.lake``, or show ``args.table``; 0 on success, a
    :class:`~binlake.errors.BinlogError` when there is nothing to show."""
    out = out or sys.stdout
    if args.limit is not None and not args.table:
        raise BinlogError("--limit N is the rows shown of a TABLE: give TABLE too")
    lake = Lake(args.lake)
    if not lake.root.is_dir():
        raise BinlogError("no lake here", file=lake.root.uri)
    at = lake.snapshot(args.batch)
    if not args.table:
        list_tables(lake, at, out)
        return 0
    found = lake.find(args.table, lake.tables(at))
    if found is None:
        when = "" if at.batch is None else f" as of batch {at.batch}"
        raise BinlogError(f"no table {args.table!r} in {lake.root}{when} (run `binlake tables LAKE` to list them)")
    show_table(lake, found, max(0, LIMIT if args.limit is None else args.limit), out)
    return 0
