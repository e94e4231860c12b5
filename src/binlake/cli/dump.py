"""``binlake dump FILE... [filters]``: the command line of :func:`binlake.render.dump.dump`, its options named as
``mariadb-binlog``'s.

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> parser.parse_args(["a.000001", "--flashback"]).flashback
    True
"""

from __future__ import annotations

import argparse
import sys

from binlake.cli.decode import add_decode_arguments, decode_options, decryptor_of
from binlake.cli.filters import add_filter_arguments, filter_from_args
from binlake.errors import BinlogError
from binlake.render.dump import DumpOptions, dump

__all__ = ["add_arguments", "run"]


class _Refused(argparse.Action):
    """A ``mariadb-binlog`` option ``binlake dump`` does not offer: taken by its name, so that the command line says
    what to do instead (its help) rather than calling it an unknown argument."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        instead = (self.help or "").removeprefix(_REFUSED)
        parser.error(f"{'/'.join(self.option_strings)} is not offered: {instead}")


_REFUSED = "refused: "


def _decode_rows(value: str) -> str:
    """``--base64-output``: ``DECODE-ROWS`` (any case, as the tool takes it), what ``binlake dump`` prints."""
    if value.upper() != "DECODE-ROWS":
        raise argparse.ArgumentTypeError(
            f"{value!r}: binlake dump prints rows decoded and no BINLOG '...' statements, which is DECODE-ROWS only"
        )
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake dump`` (named as ``mariadb-binlog``'s).  Those a user of the tool passes by habit
    are taken: ``-vv`` and ``--base64-output=DECODE-ROWS`` say what ``dump`` prints anyway, and the ones it does not
    offer (``-v`` alone, ``--hexdump``, ``--read-from-remote-server``, ``--force-read``) are refused saying what to
    use instead."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, printed in order")
    tool = parser.add_argument_group(
        "mariadb-binlog's habits", "taken for command lines written for the tool; binlake dump prints its -vv text"
    )
    tool.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="-vv is what binlake dump prints (each row value with its type), so it changes nothing; -v alone "
        "(values without their types) is refused",
    )
    tool.add_argument(
        "--base64-output",
        type=_decode_rows,
        metavar="DECODE-ROWS",
        help="DECODE-ROWS is what binlake dump prints (rows decoded, no BINLOG statements), so it changes nothing; "
        "other values are refused",
    )
    refused = {
        ("-H", "--hexdump"): "binlake explain FILE --at POS shows an event's bytes one by one",
        ("-R", "--read-from-remote-server"): "binlake tail --host H --user U --server-id N --from-start --no-follow "
        "prints a server's binlogs",
        ("-f", "--force-read"): "--on-error skip-event (or skip-transaction) reads on past a damaged event, reporting "
        "each skip",
    }
    for names, instead in refused.items():
        tool.add_argument(*names, action=_Refused, help=_REFUSED + instead)
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


def run(args: argparse.Namespace) -> int:
    """Run ``binlake dump`` with parsed arguments."""
    if args.verbose == 1:
        raise BinlogError(
            "-v prints values without their types, which binlake dump does not offer: give -vv, its text, or nothing"
        )
    options = DumpOptions(
        filter=filter_from_args(args),
        flashback=args.flashback,
        table_metadata=not args.flashback if args.table_metadata is None else args.table_metadata,
        on_error=args.on_error,
    )
    return dump(args.files, options, sys.stdout.buffer, decode_options(args), decryptor_of(args))
