"""``binlake changes``: a binlog's row changes as Debezium JSON lines, as SQL that replays them, or as SQL that
undoes them.

``binlake changes SOURCE... [--format debezium|sql] [--flashback] [filters]`` reads binlog files, folders or
globs (in binlog order); with ``--host`` it reads a running server through the replication client instead (from
its oldest binlog, or ``--from FILE[:POS]`` / ``--gtid SET``; to the server's current end, or on with
``--follow``).  The changes come from :class:`binlake.changes.ChangeStream` (whole transactions; the filters of
:mod:`binlake.changes.filters`), the text from :mod:`.debezium` or :mod:`.sql`.

Transactions a file holds only in part (a log cut short, a start or stop position inside one) are left out, and
said so on stderr.

Example::

    $ binlake changes binlogs/ --database shop --ops insert,update > changes.jsonl
    $ binlake changes binlog.000042 --format sql | mariadb -h replica
    $ binlake changes binlog.000042 --format sql --flashback --start-position 4 --stop-position 81920 > undo.sql
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from binlake.changes.filters import add_filter_arguments, filter_from_args
from binlake.changes.records import Transaction
from binlake.changes.sources import EventSource, FileSource, ServerSource
from binlake.changes.stream import ChangeStream
from binlake.errors import BinlogError
from binlake.events.base import Event
from binlake.render import add_decode_arguments, decode_options, decryptor_of, open_log

if TYPE_CHECKING:
    from binlake.render.changes.debezium import DebeziumEncoder, DebeziumOptions

__all__ = [
    "add_changes_arguments",
    "add_debezium_arguments",
    "changes_main",
    "debezium_encoder",
    "debezium_options",
    "write_changes",
]


def add_changes_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake changes``."""
    from binlake.replication.options import add_connection_arguments

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


def add_debezium_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the Debezium JSON (``binlake changes``, ``binlake tail``)."""
    from binlake.render.changes.debezium import SETTINGS

    parser.add_argument(
        "--name",
        "--topic-prefix",
        dest="name",
        default="binlake",
        help="debezium: the logical server name (source.name; Debezium's topic.prefix), default binlake",
    )
    parser.add_argument(
        "--processing-time",
        action="store_true",
        help="debezium: top-level ts_ms is the time the line is written (default: the change's own time)",
    )
    choices = "; ".join(f"{key}={'|'.join(values)}" for key, values in SETTINGS.items())
    parser.add_argument(
        "--debezium-option",
        dest="debezium_options",
        action="append",
        type=_debezium_option,
        default=[],
        metavar="KEY=VALUE[,...]",
        help=f"debezium: connector settings under Debezium's names, repeatable ({choices}; the first value of "
        "each is the default, the connector's); decimal.handling.mode=string,bigint.unsigned.handling.mode=precise "
        "gives binlake's output from before these options",
    )


def _debezium_option(text: str) -> str:
    """``--debezium-option``'s value, checked as it is read (a bad one is a usage error)."""
    from binlake.render.changes.debezium import ValueModes

    try:
        ValueModes.parse_text([text])
    except BinlogError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def debezium_encoder(args: argparse.Namespace) -> DebeziumEncoder:
    """The encoder of the options :func:`add_debezium_arguments` added."""
    from binlake.render.changes.debezium import DebeziumEncoder

    return DebeziumEncoder(debezium_options(args))


def debezium_options(args: argparse.Namespace) -> DebeziumOptions:
    """The :class:`~binlake.render.changes.debezium.DebeziumOptions` of :func:`add_debezium_arguments`' options."""
    from binlake.render.changes.debezium import DebeziumOptions, ValueModes

    modes = ValueModes.parse_text(args.debezium_options)
    return DebeziumOptions(name=args.name, processing_time=args.processing_time, modes=modes)


def _server_source(args: argparse.Namespace) -> EventSource:
    from binlake.replication.client import ReplicationClient
    from binlake.replication.definitions import ServerDefinitions
    from binlake.replication.options import connection_from_args
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
        return open_log(path, kw.pop("options"), on_error=on_error, **kw)  # type: ignore[arg-type]

    return FileSource(
        files,
        options=decode_options(args),
        start=args.start_position,
        stop=args.stop_position,
        decryptor=decryptor_of(args),
        open_log=opener,
    )


def write_changes(transactions: Iterator[Transaction], fmt: str, out: BinaryIO, args: argparse.Namespace) -> None:
    """Write the transactions in ``fmt`` (``debezium`` or ``sql``, with ``args``' options)."""
    if fmt == "debezium":
        encoder = debezium_encoder(args)
        for trx in transactions:
            data = encoder.encode(trx)
            if data:
                out.write(data)
        return
    from binlake.render.changes.sql import SqlOptions, SqlWriter

    def write(data: bytes) -> None:
        out.write(data)

    writer = SqlWriter(write, SqlOptions(flashback=args.flashback, local_load=args.local_load))
    writer.begin()
    try:
        for trx in transactions:
            writer.transaction(trx)
    finally:
        writer.finish()


def changes_main(args: argparse.Namespace) -> int:
    """Run ``binlake changes`` with parsed arguments."""
    if args.flashback and args.format != "sql":
        print("binlake: --flashback writes SQL: give --format sql", file=sys.stderr)
        return 2
    try:
        change_filter = filter_from_args(args)
        source = _server_source(args) if args.host else _file_source(args)
    except (BinlogError, ValueError) as e:
        print(f"binlake: {e}", file=sys.stderr)
        return 2
    stream = ChangeStream(source, change_filter)
    out = sys.stdout.buffer
    try:
        write_changes(iter(stream), args.format, out, args)
    except BinlogError as e:
        out.flush()
        print(f"binlake: {e}", file=sys.stderr)
        return 1
    finally:
        out.flush()
        if stream.dropped:
            print(
                f"binlake: {stream.dropped} transaction(s) left out: not whole in what was read "
                "(a start or stop inside a transaction, or a log cut short)",
                file=sys.stderr,
            )
    return 0
