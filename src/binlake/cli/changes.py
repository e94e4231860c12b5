"""``binlake changes SOURCE... [--format debezium|sql] [--flashback] [filters]``, or ``--host`` for a running
server: the command line of :mod:`binlake.render.changes` over :class:`binlake.changes.ChangeStream`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from binlake.changes.sources import EventSource, FileSource, ServerSource
from binlake.changes.stream import ChangeStream
from binlake.cli.connection import add_connection_arguments, connection_from_args
from binlake.cli.debezium import add_debezium_arguments, debezium_options
from binlake.cli.decode import add_decode_arguments, decode_options, decryptor_of
from binlake.cli.filters import add_filter_arguments, filter_from_args
from binlake.errors import BinlogError
from binlake.events.base import Event
from binlake.render import open_log
from binlake.render.changes import write_changes

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake changes``."""
    parser.add_argument("sources", nargs="*", metavar="SOURCE", help="binlog files, folders or globs (not with --host)")
    parser.add_argument(
        "--format",
        choices=("debezium", "sql"),
        default="debezium",
        help="debezium: one JSON line per row change (default); sql: statements that replay the changes",
    )
    parser.add_argument(
        "--flashback", action="store_true", help="with --format sql: the statements that undo the changes"
    )
    parser.add_argument(
        "--local-load",
        type=Path,
        metavar="DIR",
        help="sql: write the files of statement-format LOAD DATA here and replay them as LOAD DATA LOCAL INFILE",
    )
    add_debezium_arguments(parser)
    add_filter_arguments(parser)
    add_decode_arguments(parser)
    server = parser.add_argument_group("reading a server (with --host)")
    server.add_argument("--from", dest="from_", metavar="FILE[:POS]", help="start at this binlog (and position)")
    server.add_argument("--gtid", metavar="STATE", help="start after this GTID state")
    server.add_argument("--follow", action="store_true", help="go on as the server writes (else stop at its end)")
    add_connection_arguments(parser, required=False)


def _server_source(args: argparse.Namespace) -> EventSource:
    from binlake.replication.client import ReplicationClient
    from binlake.replication.definitions import ServerDefinitions
    from binlake.replication.position import StartAt

    if args.sources:
        raise BinlogError("give binlog files or --host, not both")
    if args.start_position is not None or args.stop_position is not None:
        raise BinlogError("--start-position/--stop-position read files; with --host say where with --from FILE:POS")
    if args.from_ and args.gtid:
        raise BinlogError("--from and --gtid both say where to start: give one")
    if args.from_:
        start = StartAt.parse_at(args.from_)
    elif args.gtid:
        start = StartAt.after_gtid(args.gtid)
    else:
        start = StartAt.oldest()
    options = connection_from_args(args, follow=args.follow)
    client = ReplicationClient(options, start, follow=args.follow, decode_options=decode_options(args))
    return ServerSource(client, definitions=ServerDefinitions(options, _note))


def _note(line: str) -> None:
    print(f"binlake: {line}", file=sys.stderr)


def _file_source(args: argparse.Namespace) -> EventSource:
    from binlake.binlogs import list_binlogs

    if args.from_ or args.gtid or args.follow:
        raise BinlogError("--from, --gtid and --follow read a server: give --host")
    if not args.sources:
        raise BinlogError("give binlog files, folders or globs (or --host)")
    files: list[str] = []
    for source in args.sources:
        found = [f.path for f in list_binlogs(source)]
        if not found:
            raise BinlogError(f"no binlog file at {source}")
        files += found
    on_error = args.on_error

    def opener(path: str, **kw: object) -> Iterator[Event]:
        return open_log(path, kw.pop("options"), command="changes", on_error=on_error, **kw)  # type: ignore[arg-type]

    return FileSource(
        files,
        options=decode_options(args),
        start=args.start_position,
        stop=args.stop_position,
        decryptor=decryptor_of(args),
        open_log=opener,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``binlake changes`` with parsed arguments."""
    from binlake.render.changes.debezium import DebeziumOptions
    from binlake.render.changes.sql import SqlOptions

    if args.flashback and args.format != "sql":
        raise BinlogError("--flashback writes SQL: give --format sql")
    try:
        change_filter = filter_from_args(args)
        source = _server_source(args) if args.host else _file_source(args)
    except ValueError as e:
        raise BinlogError(str(e)) from None
    options: DebeziumOptions | SqlOptions
    if args.format == "debezium":
        options = debezium_options(args)
    else:
        options = SqlOptions(flashback=args.flashback, local_load=args.local_load)
    stream = ChangeStream(source, change_filter)
    out = sys.stdout.buffer
    try:
        write_changes(iter(stream), out, options)
    finally:
        out.flush()
        if stream.dropped:
            print(
                f"binlake changes: {stream.dropped} transaction(s) left out: not whole in what was read "
                "(a start or stop inside a transaction, or a log cut short)",
                file=sys.stderr,
            )
    return 0
