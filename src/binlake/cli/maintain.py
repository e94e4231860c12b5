"""``binlake maintain LAKE [--retention DURATION] [--only STEP] [--dry-run] [--wait SECONDS]``: the command line of
:func:`binlake.lake.maintain.maintain`."""

from __future__ import annotations

import argparse

from binlake.cli.report import option_type
from binlake.errors import BinlogError
from binlake.lake.lake import Lake
from binlake.lake.maintain import STEPS, maintain, parse_duration
from binlake.lake.records import LakeSettings

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``maintain`` command's arguments to ``parser``."""
    parser.add_argument("lake", metavar="LAKE", help="a lake written by binlake ingest: a folder or a URI (s3://...)")
    parser.add_argument(
        "--retention",
        type=option_type(parse_duration),
        metavar="DURATION",
        help="keep what time travel to any moment this recent needs: 7d, 36h, 90m, 0 (default: the lake's "
        "setting, 7d unless --save-retention changed it)",
    )
    parser.add_argument(
        "--save-retention",
        action="store_true",
        help="with --retention: make it the lake's setting (what the ingests' automatic maintenance uses too)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=STEPS,
        metavar="STEP",
        help=f"run only this step ({', '.join(STEPS)}; repeatable; default all)",
    )
    parser.add_argument("--dry-run", action="store_true", help="say what it would do, change nothing")
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when an ingest is writing the lake, wait up to SECONDS for it (default 0: stop at once, exit 3)",
    )


def run(args: argparse.Namespace) -> int:
    """Maintain ``args.lake``; print one summary line per step; 0 when done."""
    if args.save_retention and args.retention is None:
        parser: argparse.ArgumentParser = args.parser
        parser.error("--save-retention needs --retention DURATION")
    lake = Lake(args.lake)
    if not lake.root.is_dir():
        raise BinlogError("no lake here", file=lake.root.uri)
    steps = tuple(args.only or STEPS)
    if args.dry_run:  # reads only: no lease, beside a running ingest
        report = maintain(lake, retention=args.retention, only=steps, dry_run=True)
    else:
        with lake.writing(wait=args.wait):
            if args.save_retention:
                old = lake.settings()
                lake.write_settings(LakeSettings(old.current_layout, args.retention))
            report = maintain(lake, retention=args.retention, only=steps)
    for line in report.lines(steps):
        print(line)
    return 0
