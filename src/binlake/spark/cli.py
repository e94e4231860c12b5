"""``binlake ingest SOURCE... --lake DIR [--master URL]``: the command-line face of :mod:`binlake.spark.ingest`.

``cli.py`` imports this module only when the ``ingest`` command runs, so the decoder's commands never load Spark.

Example::

    parser = argparse.ArgumentParser()
    add_ingest_arguments(parser)
    sys.exit(ingest_main(parser.parse_args(["binlogs/", "--lake", "lake/"])))
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_ingest_arguments", "ingest_main"]


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``ingest`` command's arguments to ``parser``."""
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="binlog file, folder or glob (several allowed)")
    parser.add_argument("--lake", required=True, help="lake folder (created if missing)")
    parser.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    parser.add_argument("--split-mb", type=int, default=64, help="target MiB of binlog per Spark task (default 64)")


def ingest_main(args: argparse.Namespace) -> int:
    """Run the ingest described by ``args``; print the summary; 0 on success."""
    from binlake.errors import BinlogError
    from binlake.spark.ingest import Progress, ingest
    from binlake.spark.session import build_session

    spark = build_session(args.master)
    progress = Progress(spark)
    try:
        result = ingest(spark, list(args.sources), args.lake, split_bytes=args.split_mb << 20, progress=progress)
    except BinlogError as e:
        print(f"binlake ingest: {e}", file=sys.stderr)
        return 1
    secs = max(result.seconds, 1e-9)
    out = sys.stdout
    out.write(
        f"ingested {result.batches} batch(es): {result.files} files, {result.bytes / 1e6:.1f} MB, "
        f"{result.events} events, {sum(result.changes.values())} row changes in {result.seconds:.1f} s "
        f"({result.bytes / 1e6 / secs:.1f} MB/s, {result.events / secs:.0f} events/s)\n"
    )
    for key, n in sorted(result.changes.items()):
        out.write(f"  {key}: {n}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m binlake.spark.cli SOURCE... --lake DIR`` (the same as ``binlake ingest``)."""
    parser = argparse.ArgumentParser(prog="binlake ingest", description=__doc__.splitlines()[0] if __doc__ else None)
    add_ingest_arguments(parser)
    return ingest_main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
