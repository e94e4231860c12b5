"""``binlake stats FILE... [--json]``: the command line of :func:`binlake.render.stats.collect`."""

from __future__ import annotations

import argparse
import json
import sys

from binlake.cli.decode import add_decode_arguments, decode_options, decryptor_of
from binlake.render.stats import collect

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake stats``."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_decode_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``binlake stats``: 0 when every file decodes whole; a :class:`~binlake.errors.BinlogError` when one does
    not (the command line prints it)."""
    stats = collect(args.files, decode_options(args), decryptor_of(args), args.on_error)
    sys.stdout.write(json.dumps(stats.as_dict(), indent=2) + "\n" if args.json else stats.as_text())
    return 0
