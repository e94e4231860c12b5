"""``binlake mirror --host H --user U --server-id N DIR [--from-start | --from FILE] [--follow]``: the command line
of :class:`binlake.replication.mirror.Mirror`."""

from __future__ import annotations

import argparse

from binlake.cli.connection import add_connection_arguments, connection_from_args
from binlake.cli.metrics import add_metrics_arguments, metrics_options
from binlake.errors import BinlogError, Interrupted
from binlake.metrics import start_metrics
from binlake.replication.connection import BinlogSizes
from binlake.replication.mirror import Mirror
from binlake.replication.position import StartAt

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake mirror``."""
    parser.add_argument(
        "directory", metavar="DIR", help="where the copies go: a folder or an object-store URI (created if missing)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--from-start", action="store_true", help="an empty DIR starts at the oldest binlog")
    where.add_argument("--from", dest="from_file", metavar="FILE", help="an empty DIR starts at this binlog")
    parser.add_argument(
        "--follow", action="store_true", help="keep copying as the server writes (else stop at its current end)"
    )
    add_connection_arguments(parser)
    add_metrics_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``binlake mirror``: 0 when the copy reached the server's end; a :class:`BinlogError` or Ctrl-C
    (:class:`~binlake.errors.Interrupted`) as the command line reports them."""
    start = StartAt.oldest() if args.from_start else StartAt.at(args.from_file) if args.from_file else None
    watch = start_metrics(metrics_options(args), "mirror", stages=("stream",))
    try:
        options = connection_from_args(args, follow=args.follow)
        sizes = BinlogSizes(options)
        watch.poll_server(sizes, sizes.close)
        stats = Mirror(args.directory, options, start=start, follow=args.follow, metrics=watch.metrics).run()
    except KeyboardInterrupt:
        done = f"{args.directory} holds every event copied so far; the next run goes on from there"
        raise Interrupted(done) from None
    except OSError as e:
        raise BinlogError(e.strerror or str(e), file=args.directory) from None
    finally:
        watch.close()
    files = f" ({stats.first} .. {stats.last})" if stats.first else ""
    print(f"mirrored {stats.events} events, {stats.bytes} bytes into {args.directory}{files}")
    return 0
