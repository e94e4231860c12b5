"""Current state: the rows of each keyed table as its last change left them, merged from change rows in binlog
order (complete images vectorised by key, partial MINIMAL/NOBLOB images column by column), with statements that
empty or move tables (TRUNCATE, DROP, DROP DATABASE, CREATE OR REPLACE, RENAME) applied where they were logged.

It runs on the driver with pyarrow alone (no Spark): a batch's tasks reduce their splits to the last change of
each key (:func:`latest_changes`), so what the driver merges is at most a row per key and split, and the merge is a
few vectorised pyarrow operations on that (1.5 M keys of the benchmark in about a second); a Spark job would add a
shuffle and its start-up to it, and the result still has to become one Delta commit per table here.

Example::

    merge_current(None, changes, ["id"], schema)   # the table after `changes`
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from binlake.lake.names import table_dir
from binlake.lake.records import DataFile, Emptied, Statement, TaskReport
from binlake.lake.tables import META_NAMES, SEQ, UTC_TS

if TYPE_CHECKING:
    from binlake.lake.lake import Lake  # (the lake imports this module: lake.batch commits through it)

__all__ = [
    "counted_changes",
    "database_key",
    "keys_of",
    "last_of_keys",
    "latest_changes",
    "merge_current",
    "rows_at",
    "staged_latest",
    "update_current",
]


def last_of_keys(table: pa.Table, pk: list[str], *, use_threads: bool = True) -> np.ndarray[Any, Any]:
    """The index of the last row of each key ``pk`` in ``table`` (in no particular order).

    Whole-number DECIMAL keys (BIGINT UNSIGNED is ``decimal128(20, 0)`` in the lake) are grouped as 64-bit
    integers where every value fits: hashing those is ~1.5x faster than hashing 128-bit decimals.

    >>> t = pa.table({"k": pa.array([1, 2, 1], pa.decimal128(20, 0))})
    >>> sorted(last_of_keys(t, ["k"]).tolist())
    [1, 2]
    """
    cols = []
    for name in pk:
        col = table[name]
        if pa.types.is_decimal(col.type) and col.type.scale == 0 and col.type.precision <= 20:
            for narrow in (pa.int64(), pa.uint64()):
                try:
                    col = col.cast(narrow)
                    break
                except pa.ArrowInvalid:  # a value out of its range
                    continue
        cols.append(col)
    buckets = min(os.cpu_count() or 1, 8) if use_threads and table.num_rows >= _BUCKET_ROWS else 1
    if buckets > 1 and len(cols) == 1 and pa.types.is_integer(cols[0].type) and not cols[0].null_count:
        return _last_by_bucket(cols[0].to_numpy(), buckets)
    keys = pa.table([*cols, pa.array(np.arange(table.num_rows, dtype=np.int64))], names=[*pk, "_i"])
    last: np.ndarray[Any, Any] = (
        keys.group_by(pk, use_threads=use_threads).aggregate([("_i", "max")])["_i_max"].to_numpy()
    )
    return last


_BUCKET_ROWS = 1 << 20  # from this many rows an integer key is grouped in buckets, one thread each


def _last_by_bucket(key: np.ndarray[Any, Any], buckets: int) -> np.ndarray[Any, Any]:
    """:func:`last_of_keys` of one integer key column, the rows split by ``key % buckets`` and each bucket grouped
    in a thread of its own (a key's rows all fall in one bucket; pyarrow groups without the GIL): on the driver's
    4.8 M staged rows of the benchmark 0.33-0.4 s where one threaded group_by took 0.7-1.0 s."""
    part = key % buckets
    rows = [np.flatnonzero(part == b) for b in range(buckets)]

    def last(index: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        t = pa.table({"k": key[index], "_i": index})
        found: np.ndarray[Any, Any] = (
            t.group_by(["k"], use_threads=False).aggregate([("_i", "max")])["_i_max"].to_numpy()
        )
        return found

    with ThreadPoolExecutor(buckets) as pool:
        return np.concatenate(list(pool.map(last, rows)))


def rows_at(table: pa.Table, index: np.ndarray[Any, Any]) -> pa.Table:
    """The rows of ``table`` at ``index`` (distinct), in table order: a filter by mask, several times faster than
    ``take`` on the chunked columns of a table built a run at a time.

    >>> rows_at(pa.table({"a": [1, 2, 3]}), np.array([2, 0]))["a"].to_pylist()
    [1, 3]
    """
    mask = np.zeros(table.num_rows, np.bool_)
    mask[index] = True
    return table.filter(pa.array(mask))


def counted_changes(changes: pa.Table) -> pa.Table:
    """The change rows current state applies: not rolled back, not waiting for an XA outcome (``_rolled_back``
    null).  A transaction that ended in ROLLBACK was logged for its non-transactional tables; the rest was undone."""
    counts = pc.fill_null(pc.equal(changes["_rolled_back"], False), False)
    return changes if pc.all(counts).as_py() is not False else changes.filter(counts)  # all count: no copy


def latest_changes(changes: pa.Table, pk: list[str]) -> pa.Table:
    """The last row of each key of ``changes`` (in binlog order: ``_seq``, an update's before image first), in
    that order: merging these into current state gives what merging all of ``changes`` gives (complete images)."""
    if not changes.num_rows:
        return changes
    return rows_at(changes, last_of_keys(changes, pk, use_threads=False))


def database_key(database: str) -> str:
    """The key of every table of ``database`` in a truncate report (DROP DATABASE): its folder and a slash."""
    return table_dir(database, "").rsplit("/", 1)[0] + "/"


def keys_of(key: str, tables: Iterable[str]) -> list[str]:
    """The tables a truncate report's ``key`` stands for among ``tables`` (all of a database for its key)."""
    return [k for k in tables if k.startswith(key)] if key.endswith("/") else [key]


def _key_of(row: dict[str, Any], pk: list[str]) -> tuple[Any, ...]:
    return tuple(row.get(c) for c in pk)


def _merge_partial(current: pa.Table, changes: pa.Table, pk: list[str], schema: pa.Schema) -> pa.Table:
    """:func:`merge_current` for changes with partial images: row by row, a column an image lacks keeps the value
    it had (from an earlier change of the batch or from ``current``)."""
    cols = [n for n in schema.names if n not in ("_seq", "_ts")]
    state: dict[tuple[Any, ...], dict[str, Any] | None] = {}
    base: dict[tuple[Any, ...], tuple[Any, ...] | None] = {}  # key -> the key of `current` that fills the rest
    before: tuple[Any, ...] = ()
    fill: tuple[Any, ...] | None
    for r in changes.to_pylist():
        absent = set(r["_absent"] or ())
        vals = {c: r[c] for c in cols if c in r and c not in absent}
        vals["_seq"], vals["_ts"] = r["_seq"], r["_ts"]
        op = r["_op"]
        if op == "update_preimage":
            before = _key_of(vals, pk)
            continue
        if op == "insert":
            k = _key_of(vals, pk)
            state[k], base[k] = vals, None
        elif op == "delete":
            k = _key_of(vals, pk)
            state[k], base[k] = None, None
        else:  # update_postimage: the key of its preimage, the columns it holds
            old = state.get(before, ...)
            if old is ...:
                old, fill = {}, before
            else:
                fill = base.get(before)
            new = {**(old or {}), **vals}
            k = tuple(vals[c] if c in vals else before[i] for i, c in enumerate(pk))
            new.update(zip(pk, k, strict=True))
            if k != before:
                state[before], base[before] = None, None
            state[k], base[k] = new, fill
    filled: dict[tuple[Any, ...], dict[str, Any]] = {}
    key_schema = pa.schema([schema.field(c) for c in pk])
    wanted = {b for b in base.values() if b is not None}
    if wanted and current.num_rows:
        keys = pa.Table.from_pylist([dict(zip(pk, b, strict=True)) for b in wanted], schema=key_schema)
        for row in current.join(keys, keys=pk, join_type="inner").to_pylist():
            filled[_key_of(row, pk)] = row
    rows = [{**filled.get(base[k] or (), {}), **v} for k, v in state.items() if v is not None]
    touched = pa.Table.from_pylist([dict(zip(pk, k, strict=True)) for k in state], schema=key_schema)
    return _replace_keys(current, touched, pk, pa.Table.from_pylist(rows, schema=schema), ordered=False)


def _replace_keys(current: pa.Table, keys: pa.Table, pk: list[str], new_rows: pa.Table, ordered: bool) -> pa.Table:
    """``current`` without the rows of ``keys``, plus ``new_rows``: in ``_seq`` order (``ordered``: both are, and
    every row of ``new_rows`` comes after those of ``current``, so they are only appended)."""
    if current.num_rows and keys.num_rows:
        current = current.append_column("_i", pa.array(np.arange(current.num_rows, dtype=np.int64)))
        keep = current.select([*pk, "_i"]).join(keys, keys=pk, join_type="left anti")
        current = rows_at(current, keep["_i"].to_numpy()).drop_columns(["_i"])
    out = pa.concat_tables([current, new_rows])
    return out if ordered else out.sort_by([("_seq", "ascending")])


def merge_current(
    current: pa.Table | None, changes: pa.Table, pk: list[str], schema: pa.Schema, *, ordered: bool = False
) -> pa.Table:
    """``current`` (rows of ``schema``: the table's columns, ``_seq``, ``_ts``) after ``changes`` (change-table
    rows that count: not rolled back), by primary key ``pk``.  ``ordered``: ``changes`` are in binlog order already
    (``_seq``, an update's before image first) and all after ``current``'s rows (one batch's, as the tasks give
    them): nothing is sorted.

    Complete images: the latest change of each key wins (vectorised).  Partial images (``_absent``): a column an
    image lacks keeps its previous value; an insert that lacks a column leaves it null (the server's default is in
    no event).
    """
    current = _conform(current if current is not None else schema.empty_table(), schema)
    if not changes.num_rows:
        return current
    up = pc.is_in(changes["_op"], pa.array(["insert", "update_postimage"]))
    changes = changes.append_column("_up", up)
    if not ordered:
        changes = changes.sort_by([("_seq", "ascending"), ("_up", "ascending")])
    if "_absent" in changes.column_names and changes["_absent"].null_count < changes.num_rows:
        return _merge_partial(current, changes, pk, schema)
    latest = np.zeros(changes.num_rows, np.bool_)  # one row per key, in binlog order (a mask: no sort)
    latest[last_of_keys(changes, pk)] = True
    keep = latest & changes["_up"].to_numpy(zero_copy_only=False)
    wanted = [n for n in schema.names if n in changes.column_names]
    new_rows = _conform(changes.select(wanted).filter(pa.array(keep)), schema)
    return _replace_keys(current, changes.select(pk).filter(pa.array(latest)), pk, new_rows, ordered)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns (missing ones null, others dropped, types cast)."""
    return pa.Table.from_arrays(
        [
            table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
            for f in schema
        ],
        schema=schema,
    )


class _Current:
    """The current-state tables a batch touches, in memory: each loaded as it was before the batch (so a re-run after
    a crash computes the same states), written at the end in one overwrite commit per table."""

    def __init__(self, lake: Lake, batch: int, pk: dict[str, list[str]], schemas: dict[str, pa.Schema]) -> None:
        self.lake, self.batch, self.pk, self.changes_schemas = lake, batch, pk, schemas
        self.tables: dict[str, pa.Table] = {}
        self.schemas: dict[str, pa.Schema] = {}

    def schema(self, key: str) -> pa.Schema:
        """The current table's columns: the change table's (as this batch knows them), ``_seq``, ``_ts``."""
        if key not in self.schemas:
            full = self.changes_schemas.get(key) or self.lake.schema_of(self.lake.changes(key))
            fields = [f for f in (full or []) if f.name not in META_NAMES]
            for f in self.lake.schema_of(self.lake.current(key)) or []:
                if f.name not in {g.name for g in fields} and f.name not in ("_seq", "_ts"):
                    fields.append(f)
            self.schemas[key] = pa.schema([*fields, pa.field("_seq", SEQ), pa.field("_ts", UTC_TS)])
        return self.schemas[key]

    def get(self, key: str) -> pa.Table:
        if key not in self.tables:
            before = self.lake.read_before(self.lake.current(key), self.batch)
            schema = self.schema(key)
            self.tables[key] = _conform(before if before is not None else schema.empty_table(), schema)
        return self.tables[key]

    def empty(self, key: str) -> None:
        self.tables[key] = self.schema(key).empty_table()

    def move(self, src: str, dst: str) -> None:
        """RENAME: ``dst`` gets ``src``'s rows (and key), ``src`` is left empty."""
        moved = self.get(src)
        names = {f.name for f in self.schema(dst)}
        self.schemas[dst] = pa.schema([*(f for f in self.schema(src) if f.name not in names), *self.schema(dst)])
        self.tables[dst] = _conform(moved, self.schema(dst))
        self.pk.setdefault(dst, self.pk[src])
        self.empty(src)

    def write(self) -> None:
        for key, table in sorted(self.tables.items()):
            self.lake.overwrite(self.lake.current(key), _conform(table, self.schema(key)), self.batch)


def _counted(
    lake: Lake, batch: int, key: str, files: list[DataFile], earlier_xa: list[str], latest: list[str] | None
) -> pa.Table:
    """The change rows of one table that current state applies: the rows of XA transactions prepared in an earlier
    batch and committed in this one, and this batch's: the last change of each key the tasks staged (``latest``:
    their files) or, when a split gave none, every counted row of the batch's Parquet files."""
    import pyarrow.parquet as pq

    parts: list[pa.Table] = []
    if earlier_xa:
        old = lake.read(lake.changes(key))
        if old is not None:
            old = old.filter(pc.is_in(old["_xid"], pa.array(earlier_xa, pa.string())))
            parts.append(counted_changes(old))
    if latest is not None:
        staging = lake.staging(batch)
        for name in latest:
            loc = staging / name
            with pa.memory_map(loc.uri) if loc.is_local else loc.open_input() as src:
                parts.append(pa.ipc.open_file(src).read_all())
    else:
        table = lake.changes(key)
        for f in files:
            loc = table / f.path
            parts.append(counted_changes(pq.read_table(loc.path, filesystem=loc.fs)))
    if not parts:
        return pa.table({"_seq": pa.array([], SEQ)})
    return pa.concat_tables(parts, promote_options="default")


def staged_latest(reports: list[TaskReport], by_table: dict[str, list[DataFile]]) -> dict[str, list[str]]:
    """Per table, the staged last-change files of the batch's splits (in split order), for the tables every split
    that wrote changes of them staged one for (``""``: the split's rows of it did not count)."""
    out: dict[str, list[str]] = {}
    spoiled: set[str] = set()
    for rep in sorted(reports, key=lambda r: r.split):
        current = rep.current
        for key in {f.table for f in rep.files}:
            if key not in current:
                spoiled.add(key)
            elif current[key]:
                out.setdefault(key, []).append(current[key])
            else:
                out.setdefault(key, [])
    return {k: v for k, v in out.items() if k not in spoiled and k in by_table}


def update_current(
    lake: Lake,
    batch: int,
    pk: dict[str, list[str]],
    schemas: dict[str, pa.Schema],
    by_table: dict[str, list[DataFile]],
    earlier_xa: dict[str, list[str]],
    emptied: list[Emptied],
    renames: list[Statement],
    latest: dict[str, list[str]],
) -> None:
    """Apply this batch to the current-state tables: each table's changes in ``_seq`` order, cut where a
    statement empties a table (``emptied``) or moves it (``renames``); ``latest``: the tables the tasks reduced to
    the last change of each key (:func:`staged_latest`)."""
    cur = _Current(lake, batch, pk, schemas)
    changes = {
        key: _counted(lake, batch, key, by_table.get(key, []), earlier_xa.get(key, []), latest.get(key))
        for key in set(by_table) | set(earlier_xa)
        if pk.get(key)
    }
    applied: dict[str, Decimal] = {}

    def advance(key: str, upto: int | None) -> None:
        """Apply the changes of ``key`` before ``upto`` (all of them for ``None``) not applied yet."""
        ch = changes.get(key)
        if ch is None or not ch.num_rows:
            return
        seg = ch
        if key in applied:
            seg = seg.filter(pc.greater_equal(seg["_seq"], pa.scalar(applied[key], SEQ)))
        if upto is not None:
            seg = seg.filter(pc.less(seg["_seq"], pa.scalar(Decimal(upto), SEQ)))
            applied[key] = Decimal(upto)
        else:
            applied[key] = Decimal(10**38 - 1)
        if seg.num_rows:
            ordered = key not in earlier_xa  # else rows of an earlier batch come first
            cur.tables[key] = merge_current(cur.get(key), seg, pk[key], cur.schema(key), ordered=ordered)

    known = set(pk) | set(changes) | {table_dir(*t) for s in renames for pair in s.pairs for t in pair}
    ops: list[tuple[int, int, str, Any]] = [(e.seq, 0, "truncate", k) for e in emptied for k in keys_of(e.key, known)]
    ops += [(s.seq, 1, "rename", s.pairs) for s in renames]
    for seq, _, kind, what in sorted(ops, key=lambda o: (o[0], o[1])):
        if kind == "truncate":
            advance(what, seq)
            if pk.get(what) or lake.has_table(lake.current(what)):
                cur.empty(what)
            continue
        for src, dst in what:
            s, d = table_dir(*src), table_dir(*dst)
            advance(s, seq)
            advance(d, seq)
            if pk.get(s):
                cur.move(s, d)
    for key in changes:
        advance(key, None)
    cur.write()
