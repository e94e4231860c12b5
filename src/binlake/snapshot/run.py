"""Take a consistent snapshot of a server's tables into a lake, as one committed batch the stream goes on from.

Steps (each resumable: a snapshot killed at any moment and run again finishes what is left and gives the lake one
uninterrupted run gives):

1. plan (once): a consistent-snapshot transaction on the driver's connection; the tables (globs; default every base
   table outside the system schemas), each one's columns, primary key and ``SHOW CREATE TABLE``, the chunk bounds;
   written as a :class:`~binlake.lake.records.SnapshotPlan` in ``LAKE/_binlake/snapshots/NNNNNNNNNN/``;
2. chunks: every chunk without a :class:`~binlake.lake.records.ChunkDone` record is read by a task in a consistent
   snapshot of its own (:mod:`.chunks`), run by the spec's :class:`~binlake.lake.runner.Runner` (Spark tasks in
   parallel, :class:`binlake.spark.runner.SparkRunner`, or this process);
3. one point: chunks read before the latest chunk's point are brought forward to it from the binlog
   (:mod:`.reconcile`);
4. land as batch ``B`` (:meth:`binlake.lake.lake.Lake.batch`): each table's chunk files committed to its change
   table (op ``read``) and, keyed tables, as its current-state table; the tables' schema in ``_schema_history``;
   then the batch manifest, whose positions are the snapshot's point (every binlog before its file read to its
   end), whose schema is the tables' ``SHOW CREATE TABLE``, whose resume point is the snapshot's point (a snapshot
   taken again keeps the stream's), and its completion mark.  The file ingest (and the live ingest) go on from
   there: the first change they land is the first transaction after the point.

A table altered, emptied, renamed or dropped while steps 2 and 3 run (a chunk finds its definition changed, or the
binlog between the chunks' points changes it otherwise than by rows: :class:`~binlake.errors.TableChangedError`)
makes the snapshot start again from a new plan, at most :data:`RESTARTS` times.

Example::

    result = take_snapshot(options, "lake/", SnapshotSpec(tables=["shop.*"], runner=SparkRunner(spark)))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from binlake.changes.records import Transaction
from binlake.changes.sources import ServerSource
from binlake.changes.stream import ChangeStream
from binlake.errors import BinlogError, TableChangedError
from binlake.ingest.extract import column_info
from binlake.ingest.layouts import history_row
from binlake.ingest.progress import Progress
from binlake.ingest.statements import tracker_at, tracker_to_json
from binlake.lake.lake import Lake
from binlake.lake.records import BatchManifest, ChunkDone, SnapshotPlan, SnapshotPoint
from binlake.lake.runner import InProcessRunner, Runner
from binlake.replication.options import ConnectionOptions
from binlake.schema import SchemaTracker
from binlake.snapshot.chunks import (
    changes_schema,
    chunk_record,
    chunk_task,
    current_schema,
    done_chunks,
    lake_pk,
    snapshot_dir,
)
from binlake.snapshot.columns import to_column
from binlake.snapshot.reconcile import reconcile
from binlake.snapshot.server import (
    ServerAddress,
    begin_snapshot,
    binlog_seq,
    connect,
    describe_tables,
    lake_fields,
    plan_chunks,
    select_tables,
    snapshot_method,
    snapshot_tables,
)

__all__ = [
    "SnapshotResult",
    "SnapshotSpec",
    "check_snapshot",
    "server_transactions",
    "snapshot_held",
    "take_snapshot",
]

RESTARTS = 3  # times a snapshot starts again from a new plan when a table changes under it (TableChangedError)
Transactions = Callable[[SnapshotPoint], Iterable[Transaction]]


@dataclass
class SnapshotResult:
    """What a snapshot did: its batch, its point, rows per table (``db.table``), chunks read now and before."""

    batch: int
    point: SnapshotPoint
    rows: dict[str, int] = field(default_factory=dict)
    chunks_read: int = 0
    chunks_resumed: int = 0
    reconciled: int = 0
    seconds: float = 0.0


def server_transactions(options: ConnectionOptions) -> Transactions:
    """The server's transactions from a point on, over a replication connection (``options.server_id`` must be
    unique among the server's replicas)."""
    from binlake.replication import ReplicationClient, StartAt

    def read(point: SnapshotPoint) -> Iterator[Transaction]:
        client = ReplicationClient(options, StartAt.at(point.file, point.position), follow=False)
        try:
            yield from ChangeStream(ServerSource(client))
        finally:
            client.close()

    return read


def check_snapshot(options: ConnectionOptions, lake: Lake, globs: Sequence[str], *, again: bool = False) -> None:
    """Refuse (:class:`~binlake.errors.BinlogError` naming what is missing), before anything of ``lake`` is
    touched, a snapshot that could not do what it is asked:

    - the first snapshot of an empty lake, or chosen tables again (``again``): the tables it would read
      (:func:`~binlake.snapshot.server.snapshot_tables`: none where some should be, or SELECT refused, names the
      privilege), and RELOAD where its method takes the global read lock (MySQL);
    - ``globs`` for the first snapshot of a lake the stream already writes (``binlake ingest --tables``): the lake
      took its first snapshot already, so tables the globs match that it does not know (no snapshot took them, the
      stream read no ``CREATE`` of them) would never get their rows: refused, naming them (``--snapshot`` takes
      them); globs that match nothing new change nothing (the same command run again goes on)."""
    from binlake.replication.privileges import require_reload

    manifest, _ = lake.last_manifest()
    if manifest is not None and not again and not globs:
        return
    with connect(options) as conn:
        if manifest is None or again:
            snapshot_tables(conn, globs)
            assert conn.info is not None
            if snapshot_method(conn.info) == "lock":
                require_reload(conn)
            return
        tracker = tracker_at(manifest.schema, manifest.statements, 1 << 200)
        unknown = [f"{db}.{name}" for db, name in select_tables(conn, globs) if tracker.table(db, name) is None]
    if unknown:
        where = f" (it streams from {manifest.resume.file}:{manifest.resume.position})" if manifest.resume else ""
        listed = ", ".join(unknown[:10]) + (", ..." if len(unknown) > 10 else "")
        raise BinlogError(
            f"--tables chooses the tables of an empty lake's first snapshot, and this lake has taken its own"
            f"{where}: {listed} match {', '.join(globs)} but the lake does not hold them; snapshot them with "
            f"--snapshot {','.join(globs)} (keyed tables), or leave --tables out",
            file=lake.root.uri,
        )


def _plan_path(lake: Lake, batch: int) -> Any:
    return snapshot_dir(lake, batch) / "plan.json"


def _load_plan(lake: Lake, batch: int) -> SnapshotPlan | None:
    loc = _plan_path(lake, batch)
    return SnapshotPlan.from_json(loc.read_bytes().decode("utf-8"), loc.uri) if loc.exists() else None


def _quiet(_: str) -> None:
    pass


def _untracked(label: str, run: Callable[[], list[ChunkDone]]) -> list[ChunkDone]:
    del label
    return run()


@dataclass(frozen=True)
class SnapshotSpec:
    """What to snapshot and how: ``tables`` (globs; default every base table outside the system schemas);
    ``transactions``, where the binlog is read from to bring chunks to one point (default: the server, over a
    replication connection); ``runner``, what reads the chunks (default: this process, one after the other;
    :class:`binlake.spark.runner.SparkRunner` for Spark tasks: :func:`~binlake.snapshot.chunks.chunk_task`);
    ``password_file``, where chunk readers in other processes read the password (else ``$BINLAKE_PASSWORD``);
    ``chunk_rows``, about how many rows a chunk holds; ``log``, the progress lines; ``progress``, what shows the
    chunks' tasks as they run.

    ``again``: snapshot ``tables`` of a lake the stream already writes (``binlake ingest --snapshot TABLES``).  The
    batch keeps the stream's position ``R``: the snapshot, taken at ``T >= R``, replaces the tables' current state,
    and the stream goes on from ``R``, so the changes of ``(R, T]`` are applied again over rows that already have
    them.  For a keyed table that converges to the server's rows (each change sets its row to its after image, and
    the last change of each key wins); for a table without a key it would count rows twice, so such tables are
    refused."""

    tables: Sequence[str] = ()
    transactions: Transactions | None = None
    runner: Runner = field(default_factory=InProcessRunner)
    password_file: str | None = None
    chunk_rows: int = 100_000
    log: Callable[[str], None] = _quiet
    again: bool = False
    progress: Progress | None = None


def take_snapshot(
    options: ConnectionOptions, lake: str | Lake, spec: SnapshotSpec | None = None, *, wait: float = 0.0
) -> SnapshotResult:
    """Snapshot the server ``options`` names into ``lake`` as ``spec`` says (module docstring), holding the lake's
    writer lease (waiting ``wait`` seconds for another writer)."""
    lake = lake if isinstance(lake, Lake) else Lake(lake)
    spec = spec or SnapshotSpec()
    with lake.writing(wait=wait, on_wait=spec.log):
        return snapshot_held(options, lake, spec)


def snapshot_held(options: ConnectionOptions, lake: Lake, spec: SnapshotSpec) -> SnapshotResult:
    """:func:`take_snapshot` for a caller that holds the lake's writer lease (the live ingest)."""
    log, again = spec.log, spec.again
    t0 = time.monotonic()
    manifest, done_mark = lake.last_manifest()
    batch = manifest.batch + 1 if manifest is not None else 1
    landed = _load_plan(lake, manifest.batch) if manifest is not None else None
    if landed is not None and manifest is not None:
        if not done_mark:
            batch = manifest.batch  # landed, its manifest written, its mark not yet
        elif not again:
            log(f"snapshot: batch {manifest.batch} is landed already")
            return SnapshotResult(manifest.batch, landed.point)
    plan = _load_plan(lake, batch)
    if plan is None:
        if manifest is not None and not again:
            raise BinlogError(
                "the lake already holds batches: a first snapshot starts an empty lake (snapshot chosen tables "
                "again with again=True, binlake ingest --snapshot TABLES)",
                file=lake.root.uri,
            )
        if manifest is not None and not done_mark:
            raise BinlogError("the lake's last batch is unfinished: ingest it first", file=lake.root.uri)
        plan = _plan(options, lake, batch, spec.tables, spec.chunk_rows, log, again=manifest is not None)
    else:
        log(f"snapshot: resuming the snapshot of batch {batch}")
    result = SnapshotResult(batch, plan.point)
    for attempt in range(1, RESTARTS + 2):
        try:
            done, target = _read(options, lake, plan, spec, result)
            break
        except TableChangedError as e:
            if attempt > RESTARTS:
                raise
            log(f"snapshot: {e}: starting it again ({attempt} of {RESTARTS})")
            _discard(lake, plan)
            plan = _plan(options, lake, batch, spec.tables, spec.chunk_rows, log, again=manifest is not None)
    result.point = target
    _land(options, lake, plan, done, target, log, result)
    result.seconds = time.monotonic() - t0
    return result


def _read(
    options: ConnectionOptions, lake: Lake, plan: SnapshotPlan, spec: SnapshotSpec, result: SnapshotResult
) -> tuple[dict[int, ChunkDone], SnapshotPoint]:
    """Read the chunks of ``plan`` not read yet and bring every chunk to one point (module docstring, steps 2 and
    3); the chunk records and that point.  :class:`~binlake.errors.TableChangedError` when a table changed."""
    log = spec.log
    done = done_chunks(lake, plan)
    todo = [c for c in plan.chunks if c.index not in done]
    result.chunks_resumed = len(done)
    if done and todo:
        log(f"snapshot: {len(done)} of {len(plan.chunks)} chunks already read, reading the {len(todo)} left")
    if todo:
        task = chunk_task(lake, plan, spec.runner, options, ServerAddress.of(options, spec.password_file))
        runs = spec.progress.run if spec.progress is not None else _untracked
        records: list[ChunkDone] = runs("snapshot", lambda: spec.runner.map(task, todo))
        for d in records:
            done[d.chunk] = d
        result.chunks_read = len(todo)
        done = done_chunks(lake, plan)
    missing = [c.index for c in plan.chunks if c.index not in done]
    if missing:
        raise BinlogError(f"snapshot chunks {missing[:10]} were not read", file=lake.root.uri)
    target = max([plan.point, *(d.point for d in done.values())])
    behind = sum(1 for d in done.values() if d.point < target)
    if behind:
        read = spec.transactions or server_transactions(options)
        done = reconcile(lake, plan, done, target, read, log)
        result.reconciled = behind
    return done, target


def _discard(lake: Lake, plan: SnapshotPlan) -> None:
    """Forget ``plan`` and its chunk records (their files stay unreferenced, as a killed chunk's do): the next
    plan replaces it."""
    for record in done_chunks(lake, plan):
        chunk_record(lake, plan.batch, record).delete()
    _plan_path(lake, plan.batch).delete()


def _plan(
    options: ConnectionOptions,
    lake: Lake,
    batch: int,
    globs: Sequence[str],
    chunk_rows: int,
    log: Callable[[str], None],
    *,
    again: bool = False,
) -> SnapshotPlan:
    if again and not globs:
        raise BinlogError("name the tables to snapshot again", file=lake.root.uri)
    with connect(options) as conn:
        point = begin_snapshot(conn)
        names = snapshot_tables(conn, globs)
        described = describe_tables(conn, names)
        chunks = plan_chunks(conn, described, chunk_rows)
    keyless = [f"{t.database}.{t.name}" for t in described if not t.primary_key]
    if again and keyless:
        raise BinlogError(
            f"tables without a primary key cannot be snapshotted again while the stream goes on (their rows would "
            f"count twice): {', '.join(keyless)}",
            file=lake.root.uri,
        )
    plan = SnapshotPlan(batch, point, tuple(described), tuple(chunks))
    for t in described:
        n = sum(1 for c in chunks if c.table == t.key)
        key = "no primary key: one task" if not t.primary_key else f"key ({', '.join(t.primary_key)})"
        log(f"snapshot: {t.database}.{t.name}: about {t.rows} rows, {n} chunk(s), {key}")
    log(f"snapshot: {len(described)} tables at {point.file}:{point.position} (GTID {point.gtid or '-'})")
    lake.check()
    _plan_path(lake, batch).write_bytes(plan.to_json().encode("utf-8"))
    return plan


def _land(
    options: ConnectionOptions,
    lake: Lake,
    plan: SnapshotPlan,
    done: dict[int, ChunkDone],
    target: SnapshotPoint,
    log: Callable[[str], None],
    result: SnapshotResult,
) -> None:
    batch = plan.batch
    before = lake.manifest(batch - 1)  # the stream's last batch (a snapshot taken again keeps its place)
    tracker = tracker_at(before.schema, before.statements, 1 << 200) if before is not None else SchemaTracker()
    history: list[dict[str, Any]] = []
    flavor = plan.point.flavor or "mariadb"  # the server's FULL table maps name the columns (to_column)
    for t in plan.tables:
        tracker.execute(t.create, t.database)
        pk = [c.casefold() for c in t.primary_key]
        cols = [
            to_column(i, c, pk.index(c.name.casefold()) if c.name.casefold() in pk else None, flavor)
            for i, c in enumerate(t.columns)
        ]
        row = {
            "database": t.database,
            "table": t.name,
            "map_id": f"snapshot-{batch}-{t.key}",
            "table_id": 0,
            "file": target.file,
            "first_pos": target.position,
            "primary_key": list(t.primary_key),
            "columns": [column_info(c, c.name or "") for c in cols],
        }
        history.append(history_row(row, [(f.name, f.type) for f in lake_fields(t)], batch))
    if before is not None:  # snapshotted again: the stream goes on where it was (see take_snapshot)
        positions, resume = dict(before.positions), before.resume
    else:
        resume = target.resume_point()
        with connect(options) as conn:
            logs = conn.binary_logs()
        positions = {name: size for name, size in logs if binlog_seq(name) < target.seq}
        positions[target.file] = target.position
    manifest = BatchManifest(batch, (), positions, tracker_to_json(tracker), (), resume)
    with lake.batch(manifest) as landing:
        for t in plan.tables:
            chunks = [done[c.index] for c in plan.chunks if c.table == t.key]
            landing.changes(t.key, [d.changes for d in chunks if d.changes is not None], changes_schema(t))
            if t.primary_key:
                current = [d.current for d in chunks if d.current is not None]
                landing.replace_current(t.key, current, current_schema(t), lake_pk(t))
            result.rows[f"{t.database}.{t.name}"] = sum(d.rows for d in chunks)
        landing.history(history)
    for t in plan.tables:
        log(f"snapshot: {t.database}.{t.name}: {result.rows[f'{t.database}.{t.name}']} rows landed")
    log(f"snapshot: batch {batch} landed at {target.file}:{target.position} (GTID {target.gtid or '-'})")
