"""The filter options of ``binlake dump``, ``changes`` and ``tail``: the command line of
:class:`~binlake.changes.filters.ChangeFilter` (what each selection means is said there).

Example::

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_filter_arguments(p)
    >>> f = filter_from_args(p.parse_args(["-d", "shop*", "--ops", "insert,update"]))
    >>> f.databases, sorted(f.ops)
    (('shop*',), ['insert', 'update'])
"""

from __future__ import annotations

import argparse

from binlake.changes.filters import OPS, ChangeFilter, parse_datetime, parse_gtids, parse_ops
from binlake.cli.report import option_type

__all__ = ["add_filter_arguments", "filter_from_args"]


def add_filter_arguments(parser: argparse.ArgumentParser, *, positions: bool = True) -> None:
    """The filter options (:mod:`binlake.changes.filters`), in a group of their own; ``positions``: with the
    byte-position ones (commands reading files)."""
    g = parser.add_argument_group("filters (shared by dump, changes and tail)")
    g.add_argument(
        "-d",
        "--database",
        dest="databases",
        action="append",
        default=[],
        metavar="GLOB",
        help="only this database's rows and statements (a glob; repeatable)",
    )
    g.add_argument(
        "--table",
        dest="tables",
        action="append",
        default=[],
        metavar="GLOB",
        help="only this table's rows (a glob, or db.table; repeatable)",
    )
    g.add_argument(
        "--ops",
        type=option_type(parse_ops),
        metavar="LIST",
        help=f"only these kinds of change, comma-separated: {', '.join(OPS)} (default: all)",
    )
    if positions:
        g.add_argument("--start-position", type=int, metavar="POS", help="start at this position (in the first file)")
        g.add_argument("--stop-position", type=int, metavar="POS", help="stop before this position (in the last file)")
    g.add_argument("--start-datetime", type=option_type(parse_datetime), metavar="TIME", help="from this local time on")
    g.add_argument("--stop-datetime", type=option_type(parse_datetime), metavar="TIME", help="stop at this local time")
    g.add_argument(
        "--include-gtids", type=option_type(parse_gtids), metavar="SET", help="only transactions in this GTID set"
    )
    g.add_argument(
        "--exclude-gtids", type=option_type(parse_gtids), metavar="SET", help="leave out transactions in this GTID set"
    )


def filter_from_args(args: argparse.Namespace) -> ChangeFilter:
    """The :class:`~binlake.changes.filters.ChangeFilter` of options added by :func:`add_filter_arguments`."""
    return ChangeFilter(
        databases=tuple(args.databases),
        tables=tuple(args.tables),
        ops=args.ops if args.ops is not None else frozenset(OPS),
        start_position=getattr(args, "start_position", None),
        stop_position=getattr(args, "stop_position", None),
        start_datetime=args.start_datetime,
        stop_datetime=args.stop_datetime,
        include_gtids=args.include_gtids,
        exclude_gtids=args.exclude_gtids,
    )
