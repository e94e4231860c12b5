"""Parallel chunks, one snapshot: every chunk brought forward to the same binlog point.

MariaDB's consistent snapshot belongs to one connection, so chunks read by parallel tasks are each consistent at
their own point ``P_i`` (:func:`binlake.snapshot.server.begin_snapshot`), all at or after the plan's.  The
snapshot's point is ``T = max(P_i)``; a chunk read at ``P_i < T`` is brought forward by the row changes of the
transactions committed in ``[P_i, T)`` whose rows fall in the chunk (read from the binlog, as the stream reads
it): the DBLog / Flink CDC reconciliation, done before landing rather than in the stream.

Why this equals one transaction at ``T``: chunks partition the table (by ranges of the first key column, or one
chunk for the whole table), so every row's fate is decided by one chunk.  The chunk holds exactly the rows of its
range as of ``P_i`` (a consistent snapshot); the binlog holds, in commit order, every change committed after
``P_i``; applying to the chunk those changes before ``T`` whose row (before image for the row it removes, after
image for the row it writes) is in the chunk's range gives the chunk's rows as of ``T``.  A key that moves between
chunks (an UPDATE of the key) is a removal in one and a write in the other, each applied where it belongs and only
if that chunk was read before it.  Tables without a primary key are one chunk, whose rows are a multiset: a change
removes one row equal to its before image and adds its after image.  Then the stream starts at ``T``: no change
before it is applied twice (it is in every chunk), none after it is missing.  ``tests/snapshot`` checks it under
writes during the snapshot, chunk by chunk, against ``SELECT``.

What a partial image (MINIMAL/NOBLOB) lacks is taken from the row as the chunk holds it.  Memory: the changes of
``[min P_i, T)`` to the snapshot's tables (the writes made while the snapshot ran), not the tables.

Example::

    done = reconcile(lake, plan, done, target, ChangeStream(source_from(min_point)))
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from binlake.changes.records import RowsChange, Statement, Transaction
from binlake.errors import TableChangedError
from binlake.ingest.arrow import to_lake
from binlake.lake.lake import Lake
from binlake.lake.names import table_dir
from binlake.lake.records import ChunkDone, SnapshotChunk, SnapshotPlan, SnapshotPoint, SnapshotTable
from binlake.schema import SchemaTracker
from binlake.snapshot.chunks import ChunkWriter, chunk_record
from binlake.snapshot.server import binlog_seq, lake_fields
from binlake.sql.statements import emptied, renames
from binlake.values.row import ABSENT

__all__ = ["reconcile"]

_FROM_FILE = object()  # a key's row as the chunk holds it (an update with a partial image of a row not yet edited)


@dataclass
class _Edits:
    """What the binlog changes in one chunk: keyed tables, the row of each key (``None``: removed); tables
    without a key, the count each row gains (negative: loses)."""

    rows: dict[tuple[Any, ...], dict[str, Any] | None] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)


def _image(names: Iterable[str], row: Iterable[Any] | None) -> dict[str, Any]:
    return dict(zip(names, row, strict=True)) if row is not None else {}


Members = dict[str, tuple[str, ...] | None]  # SET columns' members, as the binlog's table map names them


def _lake_rows(
    table: SnapshotTable, rows: list[dict[str, Any]], members: Members
) -> tuple[list[dict[str, Any]], list[set[str]]]:
    """Binlog values -> the lake's (as Python values of the Arrow columns), and per row the columns it lacks."""
    fields = lake_fields(table)
    out: list[dict[str, Any]] = [{} for _ in rows]
    absent: list[set[str]] = [set() for _ in rows]
    for f in fields:
        values = [r.get(f.name, ABSENT) for r in rows]
        for i, v in enumerate(values):
            if v is ABSENT or v is _FROM_FILE:
                absent[i].add(f.name)
        lake = to_lake([None if v is _FROM_FILE else v for v in values], f.type, members.get(f.name)).to_pylist()
        for o, v in zip(out, lake, strict=True):
            o[f.name] = v
    return out, absent


def _key_repr(row: dict[str, Any], names: Iterable[str]) -> str:
    return repr(tuple(row.get(n) for n in names))


def reconcile(
    lake: Lake,
    plan: SnapshotPlan,
    done: dict[int, ChunkDone],
    target: SnapshotPoint,
    transactions: Callable[[SnapshotPoint], Iterable[Transaction]],
    log: Callable[[str], None] = lambda _: None,
) -> dict[int, ChunkDone]:
    """Bring every chunk of ``done`` read before ``target`` forward to it (module docstring); ``transactions``
    gives the binlog's transactions from a point on.  Returns the chunk records, rewritten chunks' new."""
    behind = {i: d for i, d in done.items() if d.point < target}
    if not behind:
        return done
    tables = {t.key: t for t in plan.tables}
    chunks_of: dict[str, list[SnapshotChunk]] = {}
    for c in plan.chunks:
        chunks_of.setdefault(c.table, []).append(c)
    wanted = {plan.chunks[i].table for i in behind}
    edits: dict[int, _Edits] = {i: _Edits() for i in behind}
    start = min(d.point for d in behind.values())
    all_members: dict[str, Members] = {}
    log(f"snapshot: {len(behind)} chunk(s) read before {target.file}:{target.position}, bringing them forward")

    def chunk_of(key: str, first: object) -> int | None:
        for c in chunks_of[key]:
            if c.contains(first):
                return c.index if c.index in behind else None
        return None

    tracker = SchemaTracker()
    for t in plan.tables:
        tracker.execute(t.create, t.database)
    stream = iter(transactions(start))
    for trx in stream:
        at = SnapshotPoint(binlog_seq(trx.file), trx.start, trx.file)
        if at >= target:
            break
        for item in trx.items:
            if isinstance(item, Statement):
                _check_statement(item, tracker, plan.tables)
        if trx.outcome != "commit":
            continue  # a rolled-back transaction's rows are of non-transactional tables: not snapshotted consistently
        for item in trx.items:
            if not isinstance(item, RowsChange):
                continue
            key = table_dir(item.table.schema, item.table.name)
            if key not in wanted:
                continue
            table = tables[key]
            names = item.table.names
            members = {n: c.set_values for n, c in zip(names, item.table.columns, strict=True)}
            for before, after in item.rows():
                b, a = _image(names, before), _image(names, after)
                if not table.primary_key:
                    i = chunks_of[key][0].index
                    if i in behind and at >= behind[i].point:
                        _multiset(edits[i], table, b if before is not None else None, a if after is not None else None,
                                  members)  # fmt: skip
                    continue
                _keyed(edits, behind, table, chunk_of, at, b if before is not None else None,
                       a if after is not None else None)  # fmt: skip
                all_members.setdefault(key, {}).update(members)
    close = getattr(stream, "close", None)
    if close is not None:
        close()  # the replication connection, read no further than the target
    out = dict(done)
    for i, d in behind.items():
        key = plan.chunks[i].table
        out[i] = _rewrite(lake, plan, tables[key], d, edits[i], target, all_members.get(key, {}))
    return out


def _check_statement(stmt: Statement, tracker: SchemaTracker, tables: Iterable[SnapshotTable]) -> None:
    """Raise :class:`~binlake.errors.TableChangedError` when ``stmt`` empties, moves or redefines a snapshotted
    table: row changes alone cannot bring a chunk across it (the snapshot starts again).  The questions are the
    ingest's own: :func:`~binlake.sql.statements.emptied`, :func:`~binlake.sql.statements.renames` and
    :meth:`SchemaTracker.observe <binlake.schema.SchemaTracker.observe>`."""
    ev = stmt.event
    mode = ev.status("SQL_MODE")
    sql_mode = mode if isinstance(mode, int) else 0
    scope = tracker.temporary.scope(ev)
    db = ev.db or ""
    names = {(t.database.casefold(), t.name.casefold()): t for t in tables}
    touched = [
        *emptied(ev.query, db, sql_mode, scope),
        *(n for pair in renames(ev.query, db, sql_mode, scope) for n in pair),
    ]
    before = {k: tracker.table(t.database, t.name) for k, t in names.items()}
    if tracker.observe(ev):
        touched += [k for k, t in names.items() if tracker.table(t.database, t.name) != before[k]]
    for d, name in touched:
        hit = [t for (td, tn), t in names.items() if td == d.casefold() and (not name or tn == name.casefold())]
        if hit:
            raise TableChangedError(
                f"{hit[0].database}.{hit[0].name} was changed while the snapshot ran ({ev.query[:120]!r})",
                file=stmt.file,
                pos=stmt.pos,
            )


def _keyed(
    edits: dict[int, _Edits],
    behind: dict[int, ChunkDone],
    table: SnapshotTable,
    chunk_of: Callable[[str, object], int | None],
    at: SnapshotPoint,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> None:
    pk = table.primary_key

    def key(row: dict[str, Any], fallback: dict[str, Any] | None) -> tuple[Any, ...]:
        return tuple(row[c] if row.get(c, ABSENT) is not ABSENT else (fallback or {}).get(c) for c in pk)

    kb = key(before, None) if before is not None else None
    ka = key(after, before) if after is not None else None
    if kb is not None and kb != ka:
        i = chunk_of(table.key, kb[0])
        if i is not None and at >= behind[i].point:
            edits[i].rows[kb] = None
    if ka is not None and after is not None:
        i = chunk_of(table.key, ka[0])
        if i is not None and at >= behind[i].point:
            old = edits[i].rows.get(ka, ...)
            if before is None or kb != ka:
                base: dict[str, Any] = {}
            elif old is ...:
                base = {c: _FROM_FILE for c in (x.name for x in table.columns)}
            else:
                base = old or {}
            row = {**base, **{n: v for n, v in after.items() if v is not ABSENT}}
            if before is not None and kb == ka:
                row.update({n: v for n, v in before.items() if row.get(n) is _FROM_FILE and v is not ABSENT})
            edits[i].rows[ka] = row


def _multiset(
    e: _Edits, table: SnapshotTable, before: dict[str, Any] | None, after: dict[str, Any] | None, members: Members
) -> None:
    names = [c.name for c in table.columns]
    rows = [r for r in (before, after) if r is not None]
    if after is not None and before is not None:
        after = {**before, **{n: v for n, v in after.items() if v is not ABSENT}}
        rows = [before, after]
    lake_rows, _ = _lake_rows(table, rows, members)
    if before is not None:
        e.counts[_key_repr(lake_rows[0], names)] -= 1
    if after is not None:
        r = lake_rows[-1]
        e.counts[_key_repr(r, names)] += 1
        e.samples[_key_repr(r, names)] = r


def _rewrite(
    lake: Lake,
    plan: SnapshotPlan,
    table: SnapshotTable,
    done: ChunkDone,
    e: _Edits,
    target: SnapshotPoint,
    members: Members,
) -> ChunkDone:
    """The chunk's rows as of ``target``: its file without the rows the edits replace, plus their new rows."""
    names = [c.name for c in table.columns]
    schema = pa.schema(lake_fields(table))
    writer = ChunkWriter(lake, table, target, time.time_ns() // 1000)
    keyed = bool(table.primary_key)
    lake_keys: dict[str, tuple[Any, ...]] = {}
    new_rows: list[dict[str, Any]] = []
    absent: list[set[str]] = []
    if keyed:
        live = [(k, r) for k, r in e.rows.items() if r is not None]
        new_rows, absent = _lake_rows(table, [r for _, r in live], members)
        key_rows, _ = _lake_rows(table, [dict(zip(table.primary_key, k, strict=True)) for k in e.rows], members)
        lake_keys = {_key_repr(r, table.primary_key): k for r, k in zip(key_rows, e.rows, strict=True)}
    originals: dict[tuple[Any, ...], dict[str, Any]] = {}
    counts = Counter(e.counts)
    if done.changes is not None:
        loc = lake.changes(table.key) / done.changes.path
        with loc.open_input() as src:
            for batch in pq.ParquetFile(src).iter_batches(batch_size=8192, columns=names):
                rows = batch.to_pylist()
                keep = []
                for r in rows:
                    if keyed:
                        k = lake_keys.get(_key_repr(r, table.primary_key))
                        if k is not None:
                            originals[k] = r
                            continue
                    else:
                        kr = _key_repr(r, names)
                        if counts.get(kr, 0) < 0:
                            counts[kr] += 1
                            continue
                    keep.append(r)
                writer.write(pa.Table.from_pylist(keep, schema=schema))
    if keyed:
        live_keys = [k for k, r in e.rows.items() if r is not None]
        for k, row, gone in zip(live_keys, new_rows, absent, strict=True):
            orig = originals.get(k, {})
            for n in gone:
                row[n] = orig.get(n)
        writer.write(pa.Table.from_pylist(new_rows, schema=schema))
    else:
        extra = [e.samples[kr] for kr, n in counts.items() if n > 0 for _ in range(n)]
        writer.write(pa.Table.from_pylist(extra, schema=schema))
    changes, current = writer.close()
    out = ChunkDone(done.chunk, target, writer.rows, changes, current)
    chunk_record(lake, plan.batch, done.chunk).write_bytes(out.to_json().encode("utf-8"))
    for old, folder in ((done.changes, lake.changes(table.key)), (done.current, lake.current(table.key))):
        if old is not None:
            (folder / old.path).delete()
    return out
