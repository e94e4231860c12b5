"""``binlake ingest --host H --lake LAKE [--follow]``: a running server's binlog, landed in the lake exactly once.

Two parts, each restarting from its own durable state:

- the **mirror** (:class:`binlake.replication.mirror.Mirror`, a thread of the driver) copies the server's binlog
  files byte for byte, CRC32 verified, into ``LAKE/_binlogs/`` through :mod:`binlake.storage` (a local folder or an
  object store).  Its state is the copies themselves: a restarted mirror cuts a partial event off its last file and
  asks the server to go on at that file's size;
- the **file ingest** (:func:`binlake.ingest.run.ingest_held`) lands what is new in those files, a batch at a time,
  its tasks on the runner (Spark's executors for ``binlake ingest``).  A batch's plan (its byte ranges, and
  :attr:`~binlake.lake.records.BatchManifest.resume`: the end of its last whole transaction with the GTID state
  there) is written before any table is touched and every table's commit carries the batch number, so a batch cut by
  a kill is finished, exactly once, by the next run.  A transaction the mirror has only part of is left for the next
  batch (the planner stops an unfinished file at its last transaction boundary).

The first run into an empty lake starts the stream at a :class:`~binlake.replication.position.ResumePoint`: given
(``--from FILE[:POS]``, ``--from-start``), or returned by a snapshot that fills the lake first (``snapshot``, which
``binlake ingest --host`` makes of :func:`binlake.snapshot.snapshot_held`: its batch records the snapshot's point as
its resume point, and the next batch lands the changes from there on).  A lake whose last batch has a resume point
goes on from it whatever the options say.

Without ``follow`` the mirror copies up to the server's current end, the ingest lands it, and the run ends.  With
``follow`` a batch is committed every ``interval`` seconds, or sooner when ``batch_bytes`` were copied since the
last one; nothing is kept per batch, so memory stays flat however long it runs.  A lost connection is retried by
the replication client (capped exponential backoff, one log line per attempt); a binlog the server purged at the
point the mirror goes on from is an error naming it.  The password stays in the driver's
:class:`~binlake.replication.options.ConnectionOptions` (a :class:`~binlake.replication.options.Secret`, which
refuses to be pickled): no Spark task, manifest or log line holds it.

Example::

    options = ConnectionOptions("db1", "repl", server_id=4242, password=Secret(...))
    live_ingest(SparkRunner(spark), options, "s3://bucket/lake", start=ResumePoint("binlog.000042", 4), follow=True)
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from binlake.binlogs import list_binlogs
from binlake.changes.filters import table_glob
from binlake.errors import BinlogError, ReplicationError
from binlake.ingest.plan import DEFAULT_SPLIT_BYTES
from binlake.ingest.progress import Progress
from binlake.ingest.run import IngestResult, ingest_held
from binlake.ingest.statements import ReadSpec
from binlake.lake.lake import BINLOGS_DIR, Lake
from binlake.lake.names import decode_name
from binlake.lake.runner import Runner
from binlake.metrics import NO_METRICS, Metrics
from binlake.replication.client import connected
from binlake.replication.definitions import ServerDefinitions
from binlake.replication.mirror import Mirror, copy_source, mirror_files
from binlake.replication.options import ConnectionOptions
from binlake.replication.position import ResumePoint, StartAt
from binlake.replication.privileges import require_replication
from binlake.storage import Location, StorageError

__all__ = [
    "BINLOGS_DIR",
    "DEFAULT_INTERVAL",
    "LiveResult",
    "Snapshot",
    "binlogs_of",
    "live_ingest",
    "stream_started",
    "tell_batches",
]

DEFAULT_INTERVAL = 10.0
STREAM_START = "stream-start.json"
"""In ``LAKE/_binlake/``: where the stream of a lake without a batch yet starts (a ResumePoint's JSON)."""
_POLL = 0.05  # seconds between looks at the mirror while a batch's time is not up

Snapshot = Callable[[Lake, ConnectionOptions], ResumePoint]
"""A consistent snapshot of the server's tables into an empty lake, returning the binlog point it was taken at (the
snapshot issue's function): the stream starts there.  It is called with the lake's writer lease held (by the
:class:`Lake` it is given), before the mirror starts, once per lake: the point it returns is kept."""


def binlogs_of(lake: Lake) -> Location:
    """Where a live ingest mirrors the server's binlogs: ``LAKE/_binlogs``."""
    return lake.binlogs


@dataclass(slots=True)
class LiveResult:
    """What a live run did: batches, bytes mirrored and landed, events, row changes per ``"db/table op"`` (one key
    per table and operation: bounded however long the run), and where the stream goes on next."""

    batches: int = 0
    mirrored: int = 0
    bytes: int = 0
    events: int = 0
    changes: Counter[str] = field(default_factory=Counter)
    resume: ResumePoint | None = None
    seconds: float = 0.0

    def add(self, r: IngestResult) -> None:
        self.batches += r.batches
        self.bytes += r.bytes
        self.events += r.events
        self.changes.update(r.changes)
        self.resume = r.resume or self.resume


def live_ingest(
    runner: Runner,
    options: ConnectionOptions,
    lake: str | Lake,
    *,
    start: ResumePoint | None = None,
    from_start: bool = False,
    snapshot: Snapshot | None = None,
    snapshot_again: Callable[[Lake, ConnectionOptions], object] | None = None,
    reread: Callable[[Lake, ConnectionOptions, list[str]], object] | None = None,
    check: Callable[[Lake, ConnectionOptions], None] | None = None,
    follow: bool = False,
    interval: float = DEFAULT_INTERVAL,
    batch_bytes: int | None = None,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Progress | None = None,
    read: ReadSpec | None = None,
    cores: int | None = None,
    wait: float = 0.0,
    lease_seconds: float = 60.0,
    on_batch: Callable[[IngestResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    metrics: Metrics = NO_METRICS,
    maintain_every: int = 0,
) -> LiveResult:
    """Mirror the server of ``options`` into ``lake`` and land its changes; see the module docstring.

    An empty lake starts at ``start``, at the oldest binlog the server has (``from_start``), or where ``snapshot``
    leaves it; otherwise this is an error saying so.  ``snapshot_again``: called with the lease held, before the
    mirror starts, on a lake the stream already writes (``binlake ingest --snapshot TABLES``: chosen tables
    snapshotted again, the stream then going on from the lake's resume point); an empty lake given it is an error.
    ``reread``: called with the lease held after a batch in which an ALTER TABLE left values NULL in a table's
    current state (a conversion binlake does not mirror, :class:`~binlake.lake.current.Unconverted`), with those
    tables as ``--tables`` globs: they are snapshotted again, as ``snapshot_again`` does, so the current state
    equals the server's before the next batch (the result's :attr:`~binlake.ingest.run.IngestResult.reread` says
    so); where it cannot be (a privilege, a password typed at the prompt), the batch's report says why and the
    values stay NULL until ``--snapshot DB.TABLE``.

    Before the lake is touched (its writer lease included) the user's privileges to stream are asked
    (:func:`~binlake.replication.privileges.require_replication`), then ``check`` (the snapshot's:
    :func:`binlake.snapshot.check_snapshot`): a refusal names what is missing and leaves the lake as it was.
    ``interval`` and ``batch_bytes``: when a following run
    commits a batch.  ``on_batch``: called after each batch with what it did.  ``should_stop``: asked between
    batches (a following run ends after the batch in which it became true).  ``metrics``: told of the mirror's
    events and reconnections and of each batch committed (:mod:`binlake.metrics`).  ``maintain_every``: a slice of
    maintenance after every N-th batch (:func:`binlake.lake.maintain.after_batch`), the lease held (the mirror goes
    on meanwhile).  The rest is :func:`ingest`'s.
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    progress = progress or Progress(runner)
    result = LiveResult()
    t0 = time.monotonic()
    connected(options, require_replication)
    if check is not None:
        check(lake, options)
    with lake.writing(wait=wait, lease_seconds=lease_seconds, on_wait=progress.log):
        if snapshot_again is not None:
            if lake.last_manifest()[0] is None:
                raise BinlogError(
                    "the lake is empty: tables are snapshotted again only in a lake the stream writes (its first "
                    "snapshot takes every table, or --tables)",
                    file=lake.root.uri,
                )
            snapshot_again(lake, options)
        point = _start_point(lake, options, start, from_start, snapshot)
        definitions = ServerDefinitions(options, progress.log)  # what the maps and the DDL read do not say
        binlogs = binlogs_of(lake)
        first = StartAt.oldest() if point is None else StartAt.at(point.file)
        mirror = Mirror(binlogs, options, start=first, follow=follow, metrics=metrics)
        failed: list[BaseException] = []  # the mirror thread's error, at most one

        def copy() -> None:
            try:
                mirror.run()
            except BaseException as e:  # handed to the driver's loop, which raises it
                failed.append(e)

        thread = threading.Thread(target=copy, name="binlake-mirror", daemon=True)
        thread.start()
        try:
            while True:
                finished = _wait_for_batch(thread, mirror, interval if follow else None, batch_bytes, result)
                if failed:
                    raise failed[0]
                mirror.sync()  # every whole event copied so far is in the files the batch plans from
                result.mirrored = mirror.stats.bytes
                files = list_binlogs(binlogs.uri)
                if point is None and files:  # --from-start: the stream starts where the oldest binlog does
                    point = ResumePoint(files[0].name, 4)
                r = ingest_held(runner, files, lake, split_bytes=split_bytes, progress=progress, read=read, cores=cores,
                                start=point, definitions=definitions, maintain_every=maintain_every)  # fmt: skip
                if reread is not None and r.unconverted:
                    _read_again(lake, options, reread, r, progress)
                result.add(r)
                if r.batches:
                    tell_batches(metrics, r, binlogs)
                if on_batch is not None:
                    on_batch(r)
                if finished or (should_stop is not None and should_stop()):
                    break
        finally:
            mirror.stop()
            thread.join()
    if failed:
        raise failed[0]
    result.seconds = time.monotonic() - t0
    return result


def _read_again(
    lake: Lake,
    options: ConnectionOptions,
    reread: Callable[[Lake, ConnectionOptions, list[str]], object],
    r: IngestResult,
    progress: Progress,
) -> None:
    """Snapshot again the tables of ``r`` in which an ALTER TABLE left values NULL (``live_ingest``'s ``reread``);
    record them in ``r.reread``, or, where the server refuses or the snapshot cannot run, leave them as they are and
    say why (the ingest goes on: those values stay NULL, as the report says)."""
    tables = [tuple(decode_name(p) for p in key.split("/", 1)) for key in sorted({u.key for u in r.unconverted})]
    names = [f"{db}.{table}" for db, table in tables]
    progress.log(f"an ALTER TABLE left values NULL: reading {', '.join(names)} again from the server")
    try:
        reread(lake, options, [table_glob(db, table) for db, table in tables])
    except ReplicationError as e:
        progress.log(f"  cannot read them again ({e}); `binlake ingest --host ... --snapshot DB.TABLE` can")
        return
    r.reread = names


def tell_batches(metrics: Metrics, r: IngestResult, binlogs: Location | None = None) -> None:
    """Tell ``metrics`` of the batches ``r`` committed: their row changes per operation, skips, and (a live ingest,
    whose mirror copies into ``binlogs``) the point the lake reached; a file ingest's events are counted here, a
    live ingest's by the mirror's replication client as it reads them."""
    rows: Counter[str] = Counter()
    for key, n in r.changes.items():  # "db/table op"
        rows[key.rpartition(" ")[2]] += n
    resume = r.resume if binlogs is not None else None
    point = (resume.file, resume.position) if resume is not None else None
    pending = None if resume is None or binlogs is None else lambda: _event_time(binlogs, resume)
    events = 0 if binlogs is not None else r.events
    metrics.committed(point, rows=rows, events=events, batches=r.batches, skips=len(r.skips), pending=pending)


def _event_time(binlogs: Location, point: ResumePoint) -> int | None:
    """The timestamp of the first event of the mirror's copy at or after ``point`` (the first one a batch ending
    there has not landed): the header's first 4 bytes at ``point``, or at position 4 of the next file where
    ``point`` is the end of its file; ``None`` where the copy holds no such event yet."""
    ts = _timestamp_at(binlogs / point.file, point.position)
    if ts is None:
        names = [f.name for f in mirror_files(binlogs)]
        if point.file in names[:-1]:
            ts = _timestamp_at(binlogs / names[names.index(point.file) + 1], 4)
    return ts


def _timestamp_at(loc: Location, position: int) -> int | None:
    """The timestamp field of an event header at ``position`` of the copy ``loc`` (``None``: it ends before)."""
    source = copy_source(loc)
    try:
        with open(source, "rb") if isinstance(source, str) else source.open() as f:
            f.seek(position)
            head = bytes(f.read(4))
    except (OSError, StorageError):
        return None
    return int.from_bytes(head, "little") if len(head) == 4 else None


def _start_point(
    lake: Lake, options: ConnectionOptions, start: ResumePoint | None, from_start: bool, snapshot: Snapshot | None
) -> ResumePoint | None:
    """Where the stream of ``lake`` starts (``None``: at the oldest binlog the server has, its name not known yet).
    The start of an empty lake is kept in ``LAKE/_binlake/stream-start.json`` until its first batch records its
    resume point, so a run killed before that goes on from the same start (not from a second snapshot)."""
    manifest, _done = lake.last_manifest()
    if manifest is not None:
        if manifest.resume is None:
            raise BinlogError(
                "this lake was landed from binlog files, not from a server: it has no point to stream from (ingest "
                "a server into a lake of its own)",
                file=lake.root.uri,
            )
        return manifest.resume
    kept = lake.root / "_binlake" / STREAM_START
    if kept.exists():
        return ResumePoint.from_json(kept.read_bytes())
    copies = mirror_files(binlogs_of(lake))
    if start is None and copies:  # --from-start, killed before its first batch: the mirror knows where it started
        return ResumePoint(copies[0].name, 4)
    if start is None and not from_start:
        if snapshot is None:
            raise ReplicationError(
                f"{lake.root} is empty: say where the stream starts (--from-start, or --from FILE[:POS])"
            )
        start = snapshot(lake, options)
    if start is not None:
        lake.check()
        kept.write_bytes(start.to_json().encode("utf-8"))
    return start


def stream_started(lake: Lake) -> bool:
    """Has the stream of a lake without a batch started already (its start kept, or binlogs mirrored: a run killed
    before its first batch), so that it takes no snapshot (:func:`_start_point`)?"""
    return (lake.root / "_binlake" / STREAM_START).exists() or bool(mirror_files(binlogs_of(lake)))


def _wait_for_batch(
    thread: threading.Thread, mirror: Mirror, interval: float | None, batch_bytes: int | None, result: LiveResult
) -> bool:
    """Wait until the next batch is due: ``interval`` seconds passed (``None``: never), ``batch_bytes`` were copied
    since the last batch, or the mirror ended (returns True: this batch is the last)."""
    deadline = None if interval is None else time.monotonic() + interval
    while thread.is_alive():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        if batch_bytes is not None and mirror.stats.bytes - result.mirrored >= batch_bytes:
            return False
        time.sleep(_POLL)
    return True
