"""A model of current state and a writer of batches for it: tests of :func:`binlake.lake.current.update_current`
without Spark or a server.

A :class:`Batch` is a list of operations in binlog order (inserts, updates with or without a key change, deletes,
with complete or partial row images, rolled back or in XA transactions; TRUNCATE, RENAME with swaps, DROP DATABASE;
XA COMMIT/ROLLBACK of transactions prepared in earlier batches).  :func:`write_batch` lands it as the ingest does
before its current-state step: change files committed to the change tables (split in two "splits"), the decode
tasks' staged last change of each key where a task would stage one, XA outcomes resolved in the change tables; and
returns :func:`update_current`'s arguments.  :class:`Model` applies the same operations to dicts, the oracle.

Used by ``tests/test_current.py`` and its child process ``tests/_current_child.py`` (kill -9 mid-batch).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from binlake.lake import Lake
from binlake.lake.current import database_key, keys_of, update_current
from binlake.lake.delta import read_table
from binlake.lake.files import sort_keys
from binlake.lake.merge import counted_changes, latest_changes
from binlake.lake.names import table_dir
from binlake.lake.records import DataFile, Emptied, Statement
from binlake.lake.runner import Runner
from binlake.lake.tables import META, UTC_TS

DB = "db"
TABLES = ["t1", "t2", "t3"]
DATA = [("k1", pa.int64()), ("k2", pa.string()), ("v", pa.string()), ("n", pa.int64())]
SCHEMA = pa.schema([*(pa.field(n, t) for n, t in DATA), *(pa.field(n, t) for n, t in META)])
COLUMNS = [n for n, _ in DATA]


def key_of(table: str) -> str:
    return table_dir(DB, table)


@dataclass
class Op:
    """One operation: ``kind`` insert | update | delete (``key``: the row's key; ``new``: the values it sets, the
    key columns included for an update that changes them; ``partial``: the columns its images lack) | truncate |
    rename (``pairs``) | drop_db | xa (``xid`` resolved, ``rolled_back``).  ``xid``/``rolled_back`` of a row
    operation: prepared in an XA transaction / in a transaction that rolled back."""

    kind: str
    table: str = ""
    key: tuple[Any, ...] = ()
    new: dict[str, Any] = field(default_factory=dict)
    partial: bool = False
    xid: str | None = None
    rolled_back: bool = False
    pairs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Batch:
    number: int
    ops: list[Op]
    cut: int = 0  # ops before it are the first split's, the others the second's
    staged: bool = True  # tasks stage the last change of each key where they can

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Batch:
        v = json.loads(text)
        ops = [Op(**{**o, "key": tuple(o["key"]), "pairs": [tuple(p) for p in o["pairs"]]}) for o in v.pop("ops")]
        return cls(ops=ops, **v)


class Model:
    """Current state as dicts: table -> key -> row (the data columns)."""

    def __init__(self, pk: list[str]) -> None:
        self.pk = pk
        self.tables: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {t: {} for t in TABLES}
        self.prepared: dict[str, list[Op]] = {}  # XID -> its row operations, applied at XA COMMIT

    def key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[c] for c in self.pk)

    def apply(self, op: Op) -> None:
        if op.kind in ("insert", "update", "delete"):
            if op.xid is not None:
                self.prepared.setdefault(op.xid, []).append(op)
            elif not op.rolled_back:
                self._row(op)
        elif op.kind == "truncate":
            self.tables[op.table] = {}
        elif op.kind == "drop_db":
            self.tables = {t: {} for t in TABLES}
        elif op.kind == "rename":
            for a, b in op.pairs:
                self.tables[b], self.tables[a] = self.tables[a], {}
        elif op.kind == "xa":
            ops = self.prepared.pop(op.xid or "", [])
            if not op.rolled_back:
                for o in ops:
                    self._row(o)

    def _row(self, op: Op) -> None:
        rows = self.tables[op.table]
        if op.kind == "insert":
            rows[op.key] = {c: op.new.get(c) for c in COLUMNS}
        elif op.kind == "delete":
            del rows[op.key]
        else:
            row = {**rows.pop(op.key), **op.new}
            rows[self.key(row)] = row

    def rows(self, table: str) -> list[dict[str, Any]]:
        return sorted(self.tables[table].values(), key=lambda r: self.key(r))


def generate(rng: random.Random, model: Model, number: int, ops: int) -> Batch:
    """A batch of ``ops`` random operations valid where ``model`` stands (applied to it as they are made): keys
    collide often (a small domain), a key an XA transaction holds is left alone until its outcome, as the server's
    locks would."""
    locked: dict[str, set[tuple[Any, ...]]] = {}  # table -> keys of prepared transactions
    for done in model.prepared.values():
        for o in done:
            locked.setdefault(o.table, set()).update(
                {o.key, model.key({**dict(zip(model.pk, o.key, strict=True)), **o.new})}
            )
    out: list[Op] = []
    xa_open = list(model.prepared)
    for _ in range(ops):
        kind = rng.choices(["insert", "update", "delete", "truncate", "rename", "drop_db", "xa"],
                           [30, 30, 15, 3, 4, 1, 3])[0]  # fmt: skip
        busy = set(locked)  # statements wait for the XA transactions' metadata locks: not generated meanwhile
        table = rng.choice(TABLES)
        rows = model.tables[table]
        free = [k for k in rows if k not in locked.get(table, set())]
        if kind == "xa":
            if not xa_open:
                continue
            xid = xa_open.pop(0)
            op = Op("xa", xid=xid, rolled_back=rng.random() < 0.3)
            for o in model.prepared.get(xid, []):
                locked.get(o.table, set()).discard(o.key)
        elif kind == "truncate":
            if table in busy:
                continue
            op = Op("truncate", table)
        elif kind == "drop_db":
            if busy:
                continue
            op = Op("drop_db")
        elif kind == "rename":
            a, b = rng.sample(TABLES, 2)
            if a in busy or b in busy:
                continue
            op = Op("rename", pairs=[(a, "tmp"), (b, a), ("tmp", b)] if rng.random() < 0.5 else [(a, b)])
        else:
            partial = rng.random() < 0.2
            new = {"v": rng.choice(["a", "b", None, "ccc"]), "n": rng.randrange(-5, 5)}
            if partial:
                del new[rng.choice(["v", "n"])]
            if kind == "insert":
                k = _fresh(rng, model, rows, locked.get(table, set()))
                if k is None:
                    continue
                new.update(zip(model.pk, k, strict=True))
                op = Op("insert", table, k, new, partial)
            elif not free:
                continue
            else:
                k = rng.choice(free)
                if kind == "update" and rng.random() < 0.25:
                    moved = _fresh(rng, model, rows, locked.get(table, set()))
                    if moved is None:
                        continue
                    new.update((c, v) for c, v in zip(model.pk, moved, strict=True) if v != k[model.pk.index(c)])
                op = Op(kind, table, k, new if kind == "update" else {}, partial)
            if rng.random() < 0.1:
                op.rolled_back = True
            elif rng.random() < 0.1 and op.kind == "insert":
                op.xid = f"xid-{number}-{len(out)}"
                xa_open.append(op.xid)
                locked.setdefault(table, set()).add(op.key)
        model.apply(op)
        out.append(op)
    return Batch(number, out, rng.randrange(0, len(out) + 1), rng.random() < 0.7)


def _fresh(
    rng: random.Random, model: Model, rows: dict[tuple[Any, ...], Any], locked: set[tuple[Any, ...]]
) -> tuple[Any, ...] | None:
    """A key no row has (nor a prepared transaction holds)."""
    for _ in range(20):
        k = tuple(rng.randrange(0, 40) if c == "k1" else rng.choice("xyz") for c in model.pk)
        if k not in rows and k not in locked:
            return k
    return None


# -- landing a batch ------------------------------------------------------------------------------------------------


def _seq(batch: int, i: int) -> int:
    return (batch * 1000 + i) * 10**10


def _rows(op: Op, seq: int, pk: list[str], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The change rows of a row operation (``old``: the row before it, for an update's or a delete's images)."""
    ts = dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seq // 10**10)
    rolled_back = None if op.xid is not None else op.rolled_back
    meta = {"_file": "f", "_pos": seq // 10**10, "_row": 0, "_gtid": None, "_ts": ts, "_seq": Decimal(seq),
            "_rolled_back": rolled_back, "_xid": op.xid, "_absent": None}  # fmt: skip
    before = dict(zip(pk, op.key, strict=True)) if op.partial else dict(old or {})
    before_absent = [c for c in COLUMNS if c not in before] if op.partial else None
    if op.kind == "insert":
        row = {c: op.new.get(c) for c in COLUMNS}
        absent = [c for c in COLUMNS if c not in op.new] if op.partial else None
        return [{**meta, **row, "_op": "insert", "_absent": absent}]
    if op.kind == "delete":
        return [{**meta, **{c: before.get(c) for c in COLUMNS}, "_op": "delete", "_absent": before_absent}]
    after = dict(op.new) if op.partial else {**(old or {}), **op.new}
    after_absent = [c for c in COLUMNS if c not in after] if op.partial else None
    return [
        {**meta, **{c: before.get(c) for c in COLUMNS}, "_op": "update_preimage", "_absent": before_absent},
        {**meta, **{c: after.get(c) for c in COLUMNS}, "_op": "update_postimage", "_absent": after_absent},
    ]


def write_batch(lake: Lake, batch: Batch, replay: Model) -> dict[str, Any]:
    """Land ``batch`` as the ingest does before its current-state step (module docstring), following ``replay``
    (the model before the batch, brought along: it gives an update's and a delete's old row); the arguments of
    :func:`update_current`."""
    pk = replay.pk
    rows: list[tuple[int, str, dict[str, Any]]] = []  # (split, table, change row)
    emptied: list[Emptied] = []
    renames: list[Statement] = []
    outcomes: dict[str, bool] = {}
    touched: set[str] = set()  # tables a statement empties or moves in this batch
    prepared_before = {x: list(o) for x, o in replay.prepared.items()}
    for i, op in enumerate(batch.ops):
        seq = _seq(batch.number, i)
        split = 0 if i < batch.cut else 1
        if op.kind in ("insert", "update", "delete"):
            old = replay.tables[op.table].get(op.key) if op.kind != "insert" else None
            rows += [(split, op.table, r) for r in _rows(op, seq, pk, old)]
        elif op.kind == "truncate":
            emptied.append(Emptied(key_of(op.table), seq))
            touched.add(op.table)
        elif op.kind == "drop_db":
            emptied.append(Emptied(database_key(DB), seq))
            touched.update(TABLES)
        elif op.kind == "rename":
            pairs = tuple(((DB, a), (DB, b)) for a, b in op.pairs)
            renames.append(Statement("rename", seq, "f", 0, DB, 0, "RENAME", pairs))
            touched.update(t for p in op.pairs for t in p)
        elif op.kind == "xa":
            outcomes[op.xid or ""] = op.rolled_back
        replay.apply(op)
    by_table: dict[str, list[DataFile]] = {}
    latest: dict[str, list[str]] = {}
    for table in sorted({t for _, t, _ in rows}):
        key = key_of(table)
        mine = [(s, r) for s, t, r in rows if t == table]
        for _, r in mine:  # an XA transaction of this batch with its outcome in it
            if r["_xid"] in outcomes:
                r["_rolled_back"] = outcomes[r["_xid"]]
        partial = any(r["_absent"] is not None for _, r in mine)
        staged = batch.staged and not partial and table not in touched
        for split in (0, 1):
            part = pa.Table.from_pylist([r for s, r in mine if s == split], schema=SCHEMA)
            if not part.num_rows:
                continue
            by_table.setdefault(key, []).append(_write(lake, key, part))
            if staged:
                latest.setdefault(key, []).append(_stage(lake, batch.number, part, pk))
        lake.commit(lake.changes(key), by_table[key], SCHEMA, batch.number)
    earlier_xa: dict[str, list[str]] = {}
    resolved: dict[str, dict[str, bool]] = {}  # table -> the outcomes of its XA transactions: one commit (ingest.py)
    for xid, rolled_back in outcomes.items():
        for table in sorted({o.table for o in prepared_before.get(xid, [])}):
            key = key_of(table)
            resolved.setdefault(key, {})[xid] = rolled_back
            if not rolled_back:
                earlier_xa.setdefault(key, []).append(xid)
    for key, xa in sorted(resolved.items()):
        lake.resolve_rollbacks(lake.changes(key), xa, batch.number)
    return {
        "batch": batch.number,
        "pk": {key_of(t): list(pk) for t in [*TABLES, "tmp"]},
        "schemas": {k: SCHEMA for k in by_table},
        "by_table": by_table,
        "earlier_xa": earlier_xa,
        "emptied": emptied,
        "renames": renames,
        "latest": {k: v for k, v in latest.items() if k in by_table},
    }


def _write(lake: Lake, key: str, rows: pa.Table) -> DataFile:
    name = f"part-{uuid.uuid4().hex}.parquet"
    with (lake.changes(key) / name).open_output() as sink:
        pq.write_table(rows, sink)
        size = sink.tell()
    return DataFile(key, name, size, rows.num_rows, int(time.time() * 1000), rows.schema.serialize().to_pybytes())


def _stage(lake: Lake, batch: int, rows: pa.Table, pk: list[str]) -> str:
    """What a decode task stages: the last counted change of each key, sorted by the key (tasks.py)."""
    keep = [*COLUMNS, "_op", "_seq", "_ts"]
    table = latest_changes(counted_changes(rows).select(keep), pk).sort_by(sort_keys(pk))
    if not table.num_rows:
        return ""
    name = f"{uuid.uuid4().hex}.parquet"
    with (lake.staging(batch) / name).open_output() as sink:
        pq.write_table(table, sink, row_group_size=4)
    return name


def run(lake: Lake, args: dict[str, Any], runner: Runner | None = None) -> list[str]:
    """The current-state step of a batch landed by :func:`write_batch`; the tables it committed to (keys)."""
    a = dict(args)
    latest = {k: [n for n in v if n] for k, v in a.pop("latest").items()}
    keys, _ = update_current(lake, a.pop("batch"), runner=runner, latest=latest, **a)
    return keys


def lake_rows(lake: Lake, table: str, pk: list[str]) -> list[dict[str, Any]]:
    """The data columns of the current-state table of ``table`` as binlake's reader gives them, sorted by key."""
    data = read_table(lake.current(key_of(table)))
    if data is None:
        return []
    rows = [{c: r.get(c) for c in COLUMNS} for r in data.to_pylist()]  # a table only ever emptied has no columns
    return sorted(rows, key=lambda r: tuple(r[c] for c in pk))


def keys_in(key: str) -> list[str]:
    return keys_of(key, [key_of(t) for t in TABLES])


__all__ = ["COLUMNS", "SCHEMA", "TABLES", "UTC_TS", "Batch", "Model", "Op", "generate", "lake_rows", "run",
           "write_batch"]  # fmt: skip
