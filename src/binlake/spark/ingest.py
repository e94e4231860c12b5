"""``binlake ingest``: binlogs -> a lake of Delta tables, incrementally and exactly once.

Lake layout (every name from the binlog percent-encoded by :mod:`binlake.spark.names`)::

    LAKE/<db>.<table>/changes   one row per row change: the table's own typed columns, then _op (insert |
                                update_preimage | update_postimage | delete), _file, _pos, _row, _gtid, _ts
                                (commit time), _seq (decimal(38,0), binlog order across files),
                                _rolled_back (its transaction ended in ROLLBACK: not applied to current)
    LAKE/<db>.<table>/current   tables with a primary key: the rows as they are after the last change, + _seq, _ts
    LAKE/_events                every event (the ``events`` view's columns)
    LAKE/_schema_history        every distinct table map: columns, key, lake column names, where first seen
    LAKE/_binlake/batches/      the plan of each batch (NNNNNNNNNN.json) and its completion mark (.done)

A run is one or more batches.  A batch's plan (its byte ranges and the positions reached after it) is written
atomically before any table is touched; each table's commit carries the Delta application transaction
``(binlake-ingest, batch)``, so re-running an unfinished batch (after a kill -9 at any moment) decodes the same
ranges and commits only to the tables that have not got it: every table ends as one clean run leaves it.  Column
changes (ALTER TABLE) add columns to the tables (schema merge); a column whose type changes gets a second column
``<name>__<type>``.

Example::

    binlake ingest /var/lib/mysql/ --lake /data/lake
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from binlake.spark.arrow import COLUMN, EVENTS, SEQ, UTC_TS, event_batch, lake_type, tablemap_rows, to_lake
from binlake.spark.extract import Change, EventRecord, TableMapRecord, Truncate, decode_split, map_id
from binlake.spark.lake import DataFile, commit_files, overwrite, read_table, table_schema, txn_version, write_parquet
from binlake.spark.names import table_dir
from binlake.spark.plan import DEFAULT_SPLIT_BYTES, BinlogFile, Split, list_binlogs, plan_splits

__all__ = ["IngestResult", "ingest"]

META = [
    ("_op", pa.string()),
    ("_file", pa.string()),
    ("_pos", pa.int64()),
    ("_row", pa.int32()),
    ("_gtid", pa.string()),
    ("_ts", UTC_TS),
    ("_seq", SEQ),
    ("_rolled_back", pa.bool_()),
]
_META_NAMES = {n for n, _ in META}
FLUSH_ROWS = 65536
EVENTS_DIR = "_events"
HISTORY_DIR = "_schema_history"
Layout = list[tuple[str, pa.DataType]]  # per column of a table map: lake column name and type


@dataclass
class IngestResult:
    """What a run did (the final summary)."""

    batches: int = 0
    files: int = 0
    bytes: int = 0
    events: int = 0
    changes: Counter[str] = field(default_factory=Counter)  # "db.table op" -> count
    seconds: float = 0.0


# -- tasks (run on executors) ------------------------------------------------------------------------------------


def _tablemap_task(splits: Iterable[Split]) -> Iterator[dict[str, Any]]:
    for split in splits:
        recs = [r for r in decode_split(split, changes=False) if isinstance(r, TableMapRecord)]
        for r, row in zip(recs, tablemap_rows(split.file, recs), strict=True):
            row["lake"] = [
                (n, lake_type(c)) for n, c in zip(r.table_map.column_names, r.table_map.columns, strict=True)
            ]
            row["primary_key_index"] = list(r.table_map.primary_key)
            yield row


class _TableBuffer:
    """Rows of one lake table from one task, flushed to Parquet every FLUSH_ROWS."""

    def __init__(self, key: str, uri: str, schema: pa.Schema) -> None:
        self.key, self.uri, self.schema = key, uri, schema
        self.rows: list[tuple[dict[str, int], tuple[object, ...], tuple[object, ...]]] = []
        self.files: list[DataFile] = []

    def add(self, where: dict[str, int], image: tuple[object, ...], meta: tuple[object, ...]) -> None:
        self.rows.append((where, image, meta))
        if len(self.rows) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        arrays = []
        for f in self.schema:
            if f.name in _META_NAMES:
                i = [n for n, _ in META].index(f.name)
                vals = [m[i] for _, _, m in self.rows]
                arrays.append(pa.array(vals, f.type))
            else:
                arrays.append(to_lake([img[w[f.name]] if f.name in w else None for w, img, _ in self.rows], f.type))
        self.files.append(write_parquet(pa.Table.from_arrays(arrays, schema=self.schema), self.uri, self.key))
        self.rows = []


def _write_task(
    splits: Iterable[Split], lake: str, layouts: dict[str, Layout], schemas: dict[str, pa.Schema]
) -> Iterator[dict[str, Any]]:
    """Decode splits; write each table's changes and the events as Parquet files; report them (not committed)."""
    for split in splits:
        buffers: dict[str, _TableBuffer] = {}
        where: dict[int, tuple[str, dict[str, int]]] = {}  # id(table map) -> (table key, lake name -> index)
        events: list[EventRecord] = []
        event_files: list[DataFile] = []
        counts: Counter[str] = Counter()
        truncates: list[tuple[str, int]] = []
        name = split.file.name
        for rec in decode_split(split):
            if isinstance(rec, EventRecord):
                events.append(rec)
                if len(events) >= FLUSH_ROWS:
                    event_files.append(_write_events(split, events, lake))
                    events = []
            elif isinstance(rec, Change):
                tm = rec.table_map
                w = where.get(id(tm))
                if w is None:
                    key = table_dir(tm.schema, tm.table)
                    layout = layouts[map_id(tm)]
                    w = where[id(tm)] = (key, {n: i for i, (n, _) in enumerate(layout)})
                    if key not in buffers:
                        buffers[key] = _TableBuffer(key, os.path.join(lake, key, "changes"), schemas[key])
                buf = buffers[w[0]]
                ts = _utc(rec.ts)
                seq = Decimal(rec.seq)
                if rec.op == "update":
                    assert rec.before is not None and rec.after is not None
                    buf.add(
                        w[1],
                        rec.before,
                        ("update_preimage", name, rec.pos, rec.row, rec.gtid, ts, seq, rec.rolled_back),
                    )
                    buf.add(
                        w[1],
                        rec.after,
                        ("update_postimage", name, rec.pos, rec.row, rec.gtid, ts, seq, rec.rolled_back),
                    )
                else:
                    image = rec.after if rec.op == "insert" else rec.before
                    assert image is not None
                    buf.add(w[1], image, (rec.op, name, rec.pos, rec.row, rec.gtid, ts, seq, rec.rolled_back))
                counts[f"{w[0]} {rec.op}"] += 1
            elif isinstance(rec, Truncate):
                truncates.append((table_dir(rec.database, rec.table), rec.seq))
        if events:
            event_files.append(_write_events(split, events, lake))
        for b in buffers.values():
            b.flush()
        yield {
            "split": split.index,
            "files": [f for b in buffers.values() for f in b.files],
            "events": event_files,
            "counts": counts,
            "truncates": truncates,
        }


def _utc(seconds: int) -> Any:
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.UTC)


def _write_events(split: Split, events: list[EventRecord], lake: str) -> DataFile:
    batch = event_batch(split.file, events)
    return write_parquet(pa.Table.from_batches([batch]), os.path.join(lake, EVENTS_DIR), EVENTS_DIR)


# -- driver ------------------------------------------------------------------------------------------------------


def _type_tag(t: pa.DataType) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in str(t)).strip("_")


def resolve_layout(cols: Layout, schema: list[pa.Field]) -> Layout:
    """Lake names of a table map's columns against the table's columns so far (``schema`` grows in place): same
    name and type -> that column; a new name -> a new column; a known name with another type -> ``name__type``."""
    have = {f.name: f.type for f in schema}
    out: Layout = []
    for n, t in cols:
        name = f"{n}__col" if n in _META_NAMES else n
        if name in have and have[name] != t:
            name = f"{name}__{_type_tag(t)}"
        if name not in have:
            schema.append(pa.field(name, t))
            have[name] = t
        out.append((name, t))
    return out


class Progress:
    """A progress bar on a TTY (Spark's task counts), log lines otherwise."""

    def __init__(self, spark: Any, stream: Any = None) -> None:
        self.sc = spark.sparkContext
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def log(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
        self.stream.write(f"binlake ingest: {text}\n")
        self.stream.flush()

    def _poll(self, label: str) -> None:
        last = ""
        while not self._stop.wait(0.5):
            tracker = self.sc.statusTracker()
            done = total = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if not total:
                continue
            if self.tty:
                width = 30
                fill = width * done // total
                self.stream.write(f"\r{label} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} tasks")
                self.stream.flush()
            elif f"{done}/{total}" != last:
                last = f"{done}/{total}"
                self.log(f"{label}: {done}/{total} tasks")

    def run(self, label: str, fn: Callable[[], Any]) -> Any:
        self._stop.clear()
        self._thread = threading.Thread(target=self._poll, args=(label,), daemon=True)
        self._thread.start()
        try:
            return fn()
        finally:
            self._stop.set()
            self._thread.join()
            if self.tty:
                self.stream.write("\r\x1b[K")
                self.stream.flush()


def _batches_dir(lake: str) -> str:
    return os.path.join(lake, "_binlake", "batches")


def _last_manifest(lake: str) -> tuple[dict[str, Any] | None, bool]:
    d = _batches_dir(lake)
    if not os.path.isdir(d):
        return None, True
    plans = sorted(n for n in os.listdir(d) if n.endswith(".json"))
    if not plans:
        return None, True
    with open(os.path.join(d, plans[-1]), encoding="utf-8") as f:
        manifest: dict[str, Any] = json.load(f)
    return manifest, os.path.exists(os.path.join(d, plans[-1][:-5] + ".done"))


def _atomic_write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _split_json(s: Split) -> list[Any]:
    return [s.file.path, s.file.name, s.file.seq, s.file.size, s.start, s.stop, s.index]


def _split_from(v: list[Any]) -> Split:
    return Split(BinlogFile(v[0], v[1], v[2], v[3]), v[4], v[5], v[6])


def ingest(
    spark: Any,
    sources: list[str],
    lake: str,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest what is new in ``sources`` into ``lake`` (finishing an interrupted batch first); see the module doc."""
    lake = os.path.abspath(lake)
    progress = progress or Progress(spark)
    result = IngestResult()
    t0 = time.monotonic()
    manifest, done = _last_manifest(lake)
    if manifest is not None and not done:
        progress.log(f"finishing interrupted batch {manifest['batch']}")
        _run_batch(spark, lake, manifest, progress, result)
    positions: dict[str, int] = dict(manifest["positions"]) if manifest is not None else {}
    files: dict[str, BinlogFile] = {}
    for src in sources:
        for f in list_binlogs(src):
            files.setdefault(f.name, f)
    ordered = sorted(files.values(), key=lambda f: (f.seq, f.name))
    splits = plan_splits(ordered, split_bytes=split_bytes, resume=positions, whole_tail=False)
    if splits:
        after = dict(positions)
        for s in splits:
            after[s.file.name] = s.stop if s.stop is not None else s.file.size
        batch = (manifest["batch"] + 1) if manifest is not None else 1
        manifest = {"batch": batch, "splits": [_split_json(s) for s in splits], "positions": after}
        _atomic_write(os.path.join(_batches_dir(lake), f"{batch:010d}.json"), json.dumps(manifest, indent=1))
        _run_batch(spark, lake, manifest, progress, result)
    elif result.batches == 0:
        progress.log("nothing new")
    result.seconds = time.monotonic() - t0
    return result


def _run_batch(spark: Any, lake: str, manifest: dict[str, Any], progress: Progress, result: IngestResult) -> None:
    batch: int = manifest["batch"]
    splits = [_split_from(v) for v in manifest["splits"]]
    sc = spark.sparkContext
    rdd = sc.parallelize(splits, max(1, len(splits)))
    progress.log(f"batch {batch}: {len(splits)} splits of {len({s.file.name for s in splits})} files")

    # 1. table maps -> the lake layout of every map and every table's schema (binlog order decides new columns)
    maps: list[dict[str, Any]] = progress.run("table maps", lambda: rdd.mapPartitions(_tablemap_task).collect())
    maps.sort(key=lambda r: (r["file_seq"], r["first_pos"]))
    history = read_table(os.path.join(lake, HISTORY_DIR))
    known: dict[str, Layout] = {}
    if history is not None:
        for row in history.select(["map_id", "lake_columns", "lake_types"]).to_pylist():
            known[row["map_id"]] = [
                (n, pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(t))).field(0).type)
                for n, t in zip(row["lake_columns"], row["lake_types"], strict=True)
            ]
    schemas: dict[str, list[pa.Field]] = {}
    layouts: dict[str, Layout] = {}
    pk: dict[str, list[str]] = {}
    new_history: list[dict[str, Any]] = []
    for row in maps:
        key = table_dir(row["database"], row["table"])
        if key not in schemas:
            existing = table_schema(os.path.join(lake, key, "changes"))
            schemas[key] = [f for f in existing if f.name not in _META_NAMES] if existing is not None else []
        mid = row["map_id"]
        if mid not in layouts:
            layouts[mid] = known.get(mid) or resolve_layout(row["lake"], schemas[key])
            for n, t in layouts[mid]:
                if n not in {f.name for f in schemas[key]}:
                    schemas[key].append(pa.field(n, t))
            if mid not in known and mid not in {h["map_id"] for h in new_history}:
                new_history.append(_history_row(row, layouts[mid], batch))
        pk[key] = [layouts[mid][i][0] for i in row["primary_key_index"]]
    full = {k: pa.schema([*v, *(pa.field(n, t) for n, t in META)]) for k, v in schemas.items()}

    # 2. decode and write Parquet in the tasks
    reports: list[dict[str, Any]] = progress.run(
        "decode", lambda: rdd.mapPartitions(lambda it: _write_task(it, lake, layouts, full)).collect()
    )

    # 3. commit every table (each idempotent for this batch)
    by_table: dict[str, list[DataFile]] = defaultdict(list)
    event_files: list[DataFile] = []
    truncates: dict[str, int] = {}
    for rep in reports:
        for f in rep["files"]:
            by_table[f.table].append(f)
        event_files.extend(rep["events"])
        for key, seq in rep["truncates"]:
            truncates[key] = max(truncates.get(key, 0), seq)
        result.changes.update(rep["counts"])
        result.events += sum(f.rows for f in rep["events"])
    for key, fs in sorted(by_table.items()):
        commit_files(os.path.join(lake, key, "changes"), fs, full[key], batch)
    if event_files:
        commit_files(os.path.join(lake, EVENTS_DIR), event_files, EVENTS, batch)
    hist_uri = os.path.join(lake, HISTORY_DIR)
    if new_history and txn_version(hist_uri) < batch:
        from deltalake import write_deltalake

        from binlake.spark.lake import _commit

        write_deltalake(
            hist_uri, pa.Table.from_pylist(new_history, schema=HISTORY), mode="append", commit_properties=_commit(batch)
        )

    # 4. current state of tables with a primary key: latest change per key, in binlog order
    for key in sorted(set(by_table) | set(truncates)):
        if pk.get(key) and key in full:
            _update_current(lake, key, pk[key], by_table.get(key, []), truncates.get(key), full[key], batch)
        elif key in truncates and txn_version(os.path.join(lake, key, "current")) > -1:
            cur = read_table(os.path.join(lake, key, "current"))
            assert cur is not None
            overwrite(os.path.join(lake, key, "current"), cur.slice(0, 0), batch)

    _atomic_write(os.path.join(_batches_dir(lake), f"{batch:010d}.done"), "")
    result.batches += 1
    result.files += len({s.file.name for s in splits})
    result.bytes += sum((s.stop if s.stop is not None else s.file.size) - s.start for s in splits)


HISTORY = pa.schema(
    [
        ("database", pa.string()),
        ("table", pa.string()),
        ("map_id", pa.string()),
        ("table_id", pa.int64()),
        ("first_file", pa.string()),
        ("first_pos", pa.int64()),
        ("primary_key", pa.list_(pa.string())),
        ("columns", pa.list_(COLUMN)),
        ("lake_columns", pa.list_(pa.string())),
        ("lake_types", pa.list_(pa.string())),
        ("batch", pa.int64()),
    ]
)


def _history_row(row: dict[str, Any], layout: Layout, batch: int) -> dict[str, Any]:
    return {
        "database": row["database"],
        "table": row["table"],
        "map_id": row["map_id"],
        "table_id": row["table_id"],
        "first_file": row["file"],
        "first_pos": row["first_pos"],
        "primary_key": row["primary_key"],
        "columns": row["columns"],
        "lake_columns": [n for n, _ in layout],
        "lake_types": [pa.schema([pa.field("t", t)]).serialize().to_pybytes().hex() for _, t in layout],
        "batch": batch,
    }


def _update_current(
    lake: str, key: str, pk: list[str], files: list[DataFile], truncate: int | None, schema: pa.Schema, batch: int
) -> None:
    """Apply this batch's changes of one table to its current-state table (one atomic overwrite commit)."""
    uri = os.path.join(lake, key, "current")
    if txn_version(uri) >= batch:
        return
    import pyarrow.parquet as pq

    cols = [f.name for f in schema if f.name not in _META_NAMES]
    parts = [pq.read_table(os.path.join(lake, key, "changes", f.path)) for f in files]
    changes = pa.concat_tables(parts, promote_options="default") if parts else schema.empty_table()
    # a transaction that ended in ROLLBACK was logged for its non-transactional tables; the rest was undone
    changes = changes.filter(pc.invert(pc.fill_null(changes["_rolled_back"], False)))
    if truncate is not None:
        changes = changes.filter(pc.greater(changes["_seq"], pa.scalar(Decimal(truncate), SEQ)))
    up = pc.is_in(changes["_op"], pa.array(["insert", "update_postimage"]))
    changes = changes.append_column("_up", up)
    changes = changes.sort_by([("_seq", "ascending"), ("_up", "ascending")])
    changes = changes.append_column("_i", pa.array(range(changes.num_rows), pa.int64()))
    last = changes.select([*pk, "_i"]).group_by(pk).aggregate([("_i", "max")])
    latest = changes.take(last["_i_max"])
    upserts = latest.filter(latest["_up"])
    out_schema = pa.schema([*(schema.field(c) for c in cols), schema.field("_seq"), schema.field("_ts")])
    new_rows = pa.Table.from_arrays(
        [
            upserts[c] if c in upserts.column_names else pa.nulls(upserts.num_rows, out_schema.field(c).type)
            for c in out_schema.names
        ],
        schema=out_schema,
    )
    current = None if truncate is not None else read_table(uri)
    if current is not None and current.num_rows:
        current = current.append_column("_i", pa.array(range(current.num_rows), pa.int64()))
        keep = current.select([*pk, "_i"]).join(latest.select(pk), keys=pk, join_type="left anti")
        current = current.take(keep["_i"])
        current = pa.Table.from_arrays(
            [
                current[c] if c in current.column_names else pa.nulls(current.num_rows, out_schema.field(c).type)
                for c in out_schema.names
            ],
            schema=out_schema,
        )
        new_rows = pa.concat_tables([current, new_rows])
    overwrite(uri, new_rows.sort_by([("_seq", "ascending")]), batch)
