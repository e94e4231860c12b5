"""``binlake tail --host H --user U --server-id N [--from FILE[:POS] | --gtid SET | --from-start] [--no-follow]
[--format text|debezium] [--state FILE] [--output FILE] [filters]``: the command line of
:func:`binlake.render.changes.tail.tail`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from binlake.cli.connection import add_connection_arguments, connection_from_args
from binlake.cli.debezium import add_debezium_arguments, debezium_options
from binlake.cli.decode import add_decode_arguments, decode_options
from binlake.cli.filters import add_filter_arguments, filter_from_args
from binlake.cli.metrics import add_metrics_arguments, metrics_options
from binlake.errors import BinlogError, ExitStatus
from binlake.metrics import start_metrics
from binlake.render.changes.tail import By, TailOptions, resumed_state, tail
from binlake.replication.position import StartAt

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake tail``."""
    start = parser.add_argument_group("where a tail without a state starts (default: the server's current end)")
    where = start.add_mutually_exclusive_group()
    where.add_argument("--from", dest="from_", metavar="FILE[:POS]", help="at this binlog (and position)")
    where.add_argument("--gtid", metavar="SET", help="after this GTID state (a restart then resumes by GTID)")
    where.add_argument("--from-start", action="store_true", help="at the oldest binlog the server still has")
    parser.add_argument("--no-follow", action="store_true", help="stop at the server's current end")
    parser.add_argument(
        "--format",
        choices=("text", "debezium"),
        default="text",
        help="text: what binlake dump prints (default); debezium: one JSON line per row change",
    )
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="keep the resume point here after each transaction; an existing state says where to go on",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write here instead of standard output, exactly once across restarts with --state",
    )
    add_debezium_arguments(parser)
    add_filter_arguments(parser, positions=False)
    add_decode_arguments(parser, on_error=False)
    add_connection_arguments(parser)
    add_metrics_arguments(parser)


def _start(args: argparse.Namespace) -> tuple[StartAt, By]:
    """Where a tail without a state starts, and how its restarts resume."""
    if args.from_:
        return StartAt.parse_at(args.from_), "position"
    if args.gtid is not None:
        return StartAt.after_gtid(args.gtid), "gtid"
    return (StartAt.oldest() if args.from_start else StartAt.current()), "position"


def run(args: argparse.Namespace) -> int:
    """Run ``binlake tail``: 0 at the server's end (``--no-follow``), else the status of the error
    (:class:`~binlake.errors.ExitStatus`); Ctrl-C is :class:`~binlake.errors.Interrupted`."""
    follow = not args.no_follow
    watch = start_metrics(metrics_options(args), "tail", stages=("stream", "commit"))  # a port taken is said now
    try:
        if args.key_file is not None:
            raise BinlogError("a server sends its binlogs decrypted: --key-file reads files")
        options = TailOptions(
            start=StartAt.current(),  # (a state says where it goes on: the start options then say nothing)
            follow=follow,
            format=args.format,
            state=args.state,
            output=args.output,
            filter=filter_from_args(args),
            debezium=debezium_options(args) if args.format == "debezium" else None,
            decode=decode_options(args),
        )
        state = resumed_state(options)
        if state is None:
            start, by = _start(args)
            options = replace(options, start=start, by=by)
        connection = connection_from_args(args, follow=follow)
    except (BinlogError, ValueError) as e:
        watch.close()
        print(f"binlake tail: {e}", file=sys.stderr)
        return ExitStatus.ERROR
    return tail(options, state, connection, watch)
