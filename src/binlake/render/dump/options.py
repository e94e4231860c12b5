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
from dataclasses import dataclass, field

from binlake.changes.filters import ChangeFilter, add_filter_arguments
from binlake.render import add_decode_arguments

__all__ = ["DumpOptions", "add_dump_arguments"]


@dataclass(slots=True)
class DumpOptions:
    """What ``binlake dump`` prints: the options of ``mariadb-binlog`` it supports (how the files are decoded is
    :func:`~binlake.render.dump.dump`'s ``decode`` and ``decryptor``).

    ``filter``: the selections ``dump``, ``changes`` and ``tail`` share (:mod:`binlake.changes.filters`).  Where
    ``mariadb-binlog`` has the same option (one ``--database``, one ``--table``, the positions and datetimes) the
    text is the tool's; several ``--database``/``--table`` globs, ``--ops`` and GTID sets are binlake's own: a
    rows event of another table or operation is left out as a filtered table's is, a statement of another
    database as the tool leaves it out, and a transaction outside the GTID sets is left out whole (its events
    print nothing, not even ``# at``)."""

    filter: ChangeFilter = field(default_factory=ChangeFilter)
    flashback: bool = False
    table_metadata: bool = True
    on_error: str = "stop"


def add_dump_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake dump`` (named as ``mariadb-binlog``'s)."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, printed in order")
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
    add_filter_arguments(parser)
    add_decode_arguments(parser)
