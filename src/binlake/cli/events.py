"""``binlake events FILE... [--type TYPE] [--json] [--follow]``: the lines of :mod:`binlake.render.events`, one per
event."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from binlake.cli.decode import add_decode_arguments, decode_options, decryptor_of
from binlake.cli.report import error_line
from binlake.errors import BinlogError
from binlake.render import open_log
from binlake.render.events import event_json, event_line, parse_types

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake events``."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, listed in the order given")
    parser.add_argument("--start-position", type=int, metavar="POS", help="first event to list (an event start)")
    parser.add_argument("--stop-position", type=int, metavar="POS", help="list only events that start before POS")
    parser.add_argument(
        "--type",
        action="append",
        dest="types",
        metavar="TYPE",
        default=[],
        help="list only events of this type (server name such as TABLE_MAP_EVENT, or code); repeatable",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--follow",
        action="store_true",
        help="at the end of the (last) file, wait for the server to write more, like tail -f (Ctrl-C stops)",
    )
    parser.add_argument(
        "--idle-timeout", type=float, metavar="SECONDS", help="with --follow: stop after this long without new bytes"
    )
    add_decode_arguments(parser)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``binlake events``; return the exit status (:attr:`~binlake.errors.ExitStatus.ERROR` when any file stopped
    at a BinlogError: the others are listed still)."""
    out = sys.stdout if out is None else out
    if args.idle_timeout is not None and not args.follow:
        raise BinlogError("--idle-timeout: only with --follow (it bounds the wait for new bytes)")
    try:
        wanted = parse_types(args.types)
    except ValueError as e:
        raise BinlogError(str(e)) from None
    options = decode_options(args)
    status = 0
    for i, path in enumerate(args.files):
        if len(args.files) > 1 and not args.json:
            out.write(f"# {path}\n")
        follow = bool(args.follow) and i == len(args.files) - 1
        try:
            for ev in open_log(
                path,
                options,
                command="events",
                on_error=args.on_error,
                start=args.start_position,
                stop=args.stop_position,
                decryptor=decryptor_of(args),
                follow=follow,
                idle_timeout=args.idle_timeout,
            ):
                if wanted and ev.header.type_code not in wanted:
                    continue
                out.write((json.dumps(event_json(ev, path)) if args.json else event_line(ev)) + "\n")
                if follow:
                    out.flush()
        except BinlogError as e:
            out.flush()
            print(error_line("events", e, path, on_error=args.on_error), file=sys.stderr)
            status = e.exit_status
    return status
