"""``binlake ingest SOURCE... --lake LAKE [--master URL]`` and ``binlake ingest --host H ... --lake LAKE [--follow]``:
the command-line face of :mod:`binlake.ingest.run` (binlog files) and :mod:`binlake.ingest.live` (a running server).

:mod:`binlake.cli` imports this module only when the ``ingest`` command runs, so the decoder's commands never load
Spark; it imports Spark itself only in :func:`run`.  ``spark-submit .../binlake/cli/ingest.py SOURCE --lake LAKE``
runs it on a cluster (the master is spark-submit's).

Example::

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    sys.exit(run(parser.parse_args(["binlogs/", "--lake", "lake/"])))
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from binlake.ingest.live import Snapshot
    from binlake.ingest.progress import Progress
    from binlake.lake.lake import Lake
    from binlake.metrics import Metrics, MetricsRun
    from binlake.replication.options import ConnectionOptions
    from binlake.replication.position import ResumePoint
    from binlake.spark.runner import SparkRunner

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``ingest`` command's arguments to ``parser`` (with the decoding options every subcommand shares:
    ``--verify-checksum``, ``--unknown-events``, ``--schema``, ``--key-file``/``--file-key-file``, ``--on-error``)."""
    from binlake.cli.connection import add_connection_arguments
    from binlake.cli.decode import add_decode_arguments
    from binlake.cli.metrics import add_metrics_arguments

    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help="binlog file, folder or glob, local or a URI: s3://, gs://, abfs://, hdfs://, file:// (several allowed;"
        " none with --host)",
    )
    parser.add_argument("--lake", required=True, help="lake folder or URI (created if missing)")
    parser.add_argument(
        "--master",
        help="Spark master URL, e.g. spark://host:7077, yarn, k8s://... (default: spark-submit's, else local[*])",
    )
    parser.add_argument("--split-mb", type=int, default=64, help="target MiB of binlog per Spark task (default 64)")
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when another ingest is writing the lake, wait up to SECONDS for it (default 0: stop at once)",
    )
    parser.add_argument(
        "--lease-seconds",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long this ingest's hold on the lake lasts unless renewed (it is, every third of it, while the "
        "ingest runs): how long a killed ingest keeps other machines' ingests waiting (default 60)",
    )
    parser.add_argument(
        "--maintain-every",
        type=int,
        default=10,
        metavar="N",
        help="after every N-th batch, a bounded slice of `binlake maintain` (compaction, deletion-vector purge, vacuum "
        "by the lake's retention, checkpoints, landed binlog copies) while this ingest holds the lake (default 10; 0: "
        "never)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show Spark's own output (the JVM's warnings and log lines) as well; by default it goes to a file "
        "that is kept, and named, only when Spark fails",
    )
    add_decode_arguments(parser)
    live = parser.add_argument_group("a running server (--host): its binlogs mirrored into LAKE/_binlogs, then landed")
    live.add_argument(
        "--tables",
        action="append",
        metavar="GLOBS",
        help="the tables an empty lake's snapshot reads: db.table globs, comma-separated or repeated (default: every "
        "base table outside the system schemas)",
    )
    live.add_argument(
        "--chunk-rows",
        type=int,
        default=100_000,
        metavar="N",
        help="a snapshot reads a keyed table in chunks of about N rows, one Spark task each (default 100000)",
    )
    live.add_argument(
        "--snapshot",
        action="append",
        metavar="TABLES",
        help="snapshot these tables (globs, keyed tables only) again, then go on with the stream (a lake the stream "
        "already writes)",
    )
    live.add_argument(
        "--no-snapshot",
        action="store_true",
        help="an empty lake takes no snapshot: its stream starts at --from or --from-start",
    )
    live.add_argument(
        "--no-reread",
        action="store_true",
        help="after an ALTER TABLE whose conversion binlake does not mirror (its values set NULL in current state, "
        "as the batch's report says), do not read the table again from the server (by default it is, before the "
        "next batch, as --snapshot DB.TABLE does)",
    )
    where = live.add_mutually_exclusive_group()
    where.add_argument(
        "--from-start",
        action="store_true",
        help="with --no-snapshot: an empty lake starts at the server's oldest binlog",
    )
    where.add_argument(
        "--from",
        dest="from_point",
        metavar="FILE[:POS]",
        help="with --no-snapshot: an empty lake starts at this binlog and position",
    )
    live.add_argument(
        "--follow", action="store_true", help="keep running, a batch at a time (else stop at the server's current end)"
    )
    live.add_argument(
        "--interval",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="with --follow: commit a batch every SECONDS (default 10)",
    )
    live.add_argument(
        "--batch-mib", type=int, metavar="N", help="commit a batch as soon as N MiB were mirrored since the last one"
    )
    add_connection_arguments(parser, required=False)
    add_metrics_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run the ingest described by ``args``; print the summary; 0 on success.  A problem is a
    :class:`~binlake.errors.BinlogError`, Ctrl-C an :class:`~binlake.errors.Interrupted` saying what the lake holds
    (the command line prints them)."""
    from binlake.cli.metrics import metrics_options
    from binlake.errors import BinlogError, Interrupted, after_ctrl_c
    from binlake.metrics import start_metrics
    from binlake.spark.session import (
        build_context,
        finish_class_sharing,
        java_missing,
        java_problem,
        local_cores,
        resolved_master,
    )

    conflict = _conflicting_start(args)
    if conflict:  # (before Spark starts)
        raise BinlogError(conflict)
    if args.maintain_every < 0:
        raise BinlogError("--maintain-every N: N is a number of batches, 0 or more (0: no maintenance)")
    missing = None if "PYSPARK_GATEWAY_PORT" in os.environ else java_missing()  # (spark-submit's JVM runs already)
    if missing is not None:  # (before the lake is touched)
        raise BinlogError(missing)
    # (before Spark starts too: a port taken is said at once)
    watch = start_metrics(
        metrics_options(args),
        "ingest --host" if args.host else "ingest",
        stages=("stream", "commit") if args.host else (),
    )
    log = None if args.verbose else _jvm_log()
    if log is not None:  # nor the Python side's: py4j logs a Ctrl-C in a call as a traceback on the root logger
        logging.getLogger().addHandler(logging.NullHandler())
    keep_log = interrupted = False
    # the JVM starts first, in a thread: the imports below, the plan and the scan of the binlogs run meanwhile
    with ThreadPoolExecutor(1) as starter:
        spark = starter.submit(build_context, args.master, jvm_log=log)
        try:
            if args.host is not None:
                return _live(args, spark, local_cores(args.master), watch)
            return _ingest(args, spark, local_cores(args.master), watch.metrics)
        except BaseException as e:
            if after_ctrl_c(e):  # (pyspark may fail again on its way out of the interrupted call)
                interrupted = True
                snapshot = args.host is not None and not args.no_snapshot
                raise Interrupted(_interrupted(args.lake, snapshot=snapshot)) from None
            if isinstance(e, BinlogError) or not isinstance(e, Exception):
                raise
            if spark.done() and spark.exception() is e:  # Java too old, a bad master URL, ...
                java = java_problem()
                if java is not None:
                    raise BinlogError(java) from None
                keep_log = True
                where = resolved_master(args.master) or "spark-submit's master"
                raise BinlogError(f"cannot start Spark on {where}: {e}{_see(log)}") from None
            keep_log = True
            print(f"binlake ingest: Spark failed{_see(log)}", file=sys.stderr)
            raise
        finally:
            watch.close()
            # (a JVM that failed to start has already raised, where it was needed; one interrupted in the middle of
            # a call may not answer another)
            if not interrupted and spark.exception() is None:
                finish_class_sharing(spark.result())
            if log is not None and not keep_log:
                os.unlink(log)


def _interrupted(lake_uri: str, *, snapshot: bool) -> str:
    """What the lake holds after a Ctrl-C, and what the next run does (:class:`~binlake.errors.Interrupted`'s text);
    ``snapshot``: an empty lake's run starts with a snapshot (``--host`` without ``--no-snapshot``)."""
    from binlake.errors import BinlogError
    from binlake.lake.lake import Lake

    try:
        manifest, done = Lake(lake_uri).last_manifest()
    except BinlogError:
        return "the lake could not be read to say what it holds"
    if manifest is None:
        chunks = " (a snapshot goes on with the chunks it read)" if snapshot else ""
        return f"no batch is landed; the next run starts again{chunks}"
    if not done:
        return f"batch {manifest.batch} is not finished; the next run finishes it"
    landed = "batch 1 is" if manifest.batch == 1 else f"batches 1 to {manifest.batch} are"
    return f"{landed} landed; the next run goes on after batch {manifest.batch}"


def _jvm_log() -> str:
    """A new file for the Spark driver JVM's own output (``build_context(jvm_log=...)``)."""
    fd, path = tempfile.mkstemp(prefix="binlake-spark-", suffix=".log")
    os.close(fd)
    return path


def _see(log: str | None) -> str:
    return "" if log is None else f" (Spark's own output: {log})"


def _ingest(args: argparse.Namespace, spark: Future[Any], cores: int | None, metrics: Metrics) -> int:
    from binlake.cli.decode import decode_options, decryptor_of
    from binlake.errors import BinlogError
    from binlake.ingest.progress import Progress
    from binlake.ingest.run import ingest, summary
    from binlake.ingest.statements import ReadSpec
    from binlake.spark.runner import SparkRunner

    if not args.sources:
        raise BinlogError("give binlog files (SOURCE...) or a server (--host)")
    read = ReadSpec(decode_options(args), decryptor_of(args), args.on_error)
    runner = SparkRunner(spark)
    result = ingest(runner, list(args.sources), args.lake, split_bytes=args.split_mb << 20,
                    progress=Progress(runner), read=read, cores=cores, wait=args.wait,
                    lease_seconds=args.lease_seconds, maintain_every=args.maintain_every)  # fmt: skip
    if result.batches and metrics.enabled:
        from binlake.ingest.live import tell_batches

        tell_batches(metrics, result)
    print(summary(result))
    return 0


def _live(args: argparse.Namespace, spark: Future[Any], cores: int | None, watch: MetricsRun) -> int:
    from binlake.cli.connection import connection_from_args
    from binlake.cli.decode import decode_options, decryptor_of
    from binlake.errors import BinlogError
    from binlake.ingest.live import live_ingest
    from binlake.ingest.progress import Progress
    from binlake.ingest.run import IngestResult, summary, warnings
    from binlake.ingest.statements import ReadSpec
    from binlake.replication.connection import BinlogSizes
    from binlake.replication.position import ResumePoint
    from binlake.spark.runner import SparkRunner

    if args.sources:
        raise BinlogError("--host reads a server: give no SOURCE with it")
    if args.interval <= 0 or (args.batch_mib is not None and args.batch_mib <= 0) or args.chunk_rows <= 0:
        raise BinlogError("--interval, --batch-mib and --chunk-rows are positive")
    start = None
    if args.from_point:
        file, _, pos = args.from_point.partition(":")
        if pos and not pos.isdigit():
            raise BinlogError(f"--from {args.from_point}: not FILE[:POS]")
        start = ResumePoint(file, int(pos) if pos else 4)
    runner = SparkRunner(spark)
    progress = Progress(runner, quiet=args.follow)  # months of batches with nothing new say nothing

    def batch_done(r: IngestResult) -> None:
        if r.batches:
            where = f" -> {r.resume.file}:{r.resume.position}" if r.resume else ""
            gtid = f" (GTID {r.resume.gtid})" if r.resume and r.resume.gtid else ""
            progress.log(f"{summary(r).splitlines()[0]}{where}{gtid}")
            for line in warnings(r):
                progress.log(line)
        else:
            progress.idle()

    options = connection_from_args(args, follow=args.follow)
    sizes = BinlogSizes(options)
    watch.poll_server(sizes, sizes.close)
    read = ReadSpec(decode_options(args), decryptor_of(args), args.on_error)
    first, again, reread = _snapshots(args, runner, progress)
    result = live_ingest(runner, options, args.lake, start=start, from_start=args.from_start, snapshot=first,
                         snapshot_again=again, reread=None if args.no_reread else reread,
                         check=_snapshot_check(args), follow=args.follow,
                         interval=args.interval, batch_bytes=args.batch_mib << 20 if args.batch_mib else None,
                         split_bytes=args.split_mb << 20, progress=progress, read=read, cores=cores,
                         wait=args.wait, lease_seconds=args.lease_seconds, on_batch=batch_done,
                         metrics=watch.metrics, maintain_every=args.maintain_every)  # fmt: skip
    where = f", going on at {result.resume.file}:{result.resume.position}" if result.resume else ""
    batches = "1 batch" if result.batches == 1 else f"{result.batches} batches"
    print(f"ingested {batches} from {args.host}: {result.mirrored} bytes mirrored, {result.events}"
          f" events, {sum(result.changes.values())} row changes in {result.seconds:.1f} s{where}")  # fmt: skip
    return 0


def _globs(values: list[str] | None) -> list[str]:
    """``--tables``/``--snapshot`` values: each a glob or a comma-separated list of them."""
    return [g.strip() for v in values or () for g in v.split(",") if g.strip()]


def _conflicting_start(args: argparse.Namespace) -> str | None:
    """What is wrong with the start options together, if anything.  An empty lake starts with a snapshot (its
    tables: ``--tables``) unless ``--no-snapshot`` says it starts at ``--from``/``--from-start``;
    ``--snapshot TABLES`` is for a lake the stream already writes, whose start is its own."""
    given = "--from" if args.from_point else "--from-start" if args.from_start else None
    if args.host is None:
        snap = [o for o, v in (("--tables", args.tables), ("--snapshot", args.snapshot)) if v is not None]
        return f"{snap[0]} snapshots a server's tables: it goes with --host" if snap else None
    if args.snapshot is not None:
        if not _globs(args.snapshot):
            return "--snapshot names the tables to snapshot again"
        clash = "--no-snapshot" if args.no_snapshot else "--tables" if args.tables is not None else given
        if clash:
            return f"--snapshot TABLES snapshots tables of a lake the stream writes: {clash} does not go with it"
    elif args.no_snapshot:
        if args.tables is not None:
            return "--tables chooses the snapshot's tables: it does not go with --no-snapshot"
    elif given:
        return f"an empty lake's snapshot decides where its stream starts: {given} goes with --no-snapshot only"
    elif args.tables is not None and not _globs(args.tables):
        return "--tables names at least one table"
    return None


def _snapshot_check(args: argparse.Namespace) -> Callable[[Lake, ConnectionOptions], None] | None:
    """What the live ingest asks before it touches the lake, for the snapshot the options ask for
    (:func:`binlake.snapshot.check_snapshot`): ``--snapshot TABLES``, an empty lake's first snapshot (``--tables``
    or every table), and ``--tables`` given for a lake that took its first snapshot already."""
    from binlake.ingest.live import stream_started
    from binlake.snapshot import check_snapshot

    if args.snapshot is not None:
        globs, again = _globs(args.snapshot), True
    elif args.no_snapshot:
        return None
    else:
        globs, again = _globs(args.tables), False

    def check(lake: Lake, options: ConnectionOptions) -> None:
        if not again and lake.last_manifest()[0] is None and stream_started(lake):
            return  # an empty lake whose stream started without a snapshot (--from-start killed early) takes none
        check_snapshot(options, lake, globs, again=again)

    return check


def _snapshots(
    args: argparse.Namespace, runner: SparkRunner, progress: Progress
) -> tuple[
    Snapshot | None,
    Callable[[Lake, ConnectionOptions], object] | None,
    Callable[[Lake, ConnectionOptions, list[str]], object],
]:
    """The live ingest's snapshot hooks the options ask for: an empty lake's first snapshot (unless
    ``--no-snapshot``), ``--snapshot TABLES`` taken again, and tables read again after an ALTER TABLE left values
    NULL (``live_ingest``'s ``reread``); their chunks are Spark tasks."""
    from binlake.errors import ReplicationError
    from binlake.replication.options import PASSWORD_ENV
    from binlake.snapshot import SnapshotSpec, snapshot_held

    def spec(options: ConnectionOptions, tables: list[str], *, again: bool = False) -> SnapshotSpec:
        if options.password and args.password_file is None and PASSWORD_ENV not in os.environ:
            raise ReplicationError(
                "the snapshot's Spark tasks read the server's password where they run: give it with --password-file "
                f"or ${PASSWORD_ENV} (a password typed at the prompt stays in this process)"
            )
        pw = None if args.password_file is None else str(args.password_file)  # (Spark tasks read it where they run)
        return SnapshotSpec(tables, runner=runner, password_file=pw, chunk_rows=args.chunk_rows, log=progress.log,
                            again=again, progress=progress)  # fmt: skip

    def first(lake: Lake, options: ConnectionOptions) -> ResumePoint:
        return snapshot_held(options, lake, spec(options, _globs(args.tables))).point.resume_point()

    def again(lake: Lake, options: ConnectionOptions) -> None:
        snapshot_held(options, lake, spec(options, _globs(args.snapshot), again=True))

    def reread(lake: Lake, options: ConnectionOptions, tables: list[str]) -> None:
        snapshot_held(options, lake, spec(options, tables, again=True))

    if args.snapshot is not None:
        return None, again, reread
    return (None if args.no_snapshot else first), None, reread


def main(argv: list[str] | None = None) -> int:
    """``python -m binlake.cli.ingest SOURCE... --lake DIR`` (the same as ``binlake ingest``), and what
    ``spark-submit`` runs of this file."""
    from binlake.cli import main as binlake

    return binlake(["ingest", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
