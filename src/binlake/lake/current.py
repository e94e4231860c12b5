"""Current state: the rows of each keyed table as its last change left them, kept by a batch in proportion to what
the batch changed, not to the table's size.

A current-state table's files are each sorted by the primary key, with Delta statistics of the key and ``_seq``,
in small row groups (:mod:`binlake.lake.files`).  A batch (:func:`update_current`):

1. takes each touched table's files as they were before the batch (a :class:`~binlake.lake.fileset.FileSet`);
2. walks the batch's statements that empty, move or alter tables (TRUNCATE, DROP, DROP DATABASE, CREATE OR
   REPLACE, RENAME, swaps included, ALTER TABLE of columns) in binlog order: before each, the changes of the tables
   it names up to it are merged into their sets; then it empties a set, moves it to its new name, or writes its
   files again with the columns the server's table has after the ALTER (:mod:`binlake.lake.alter`);
3. merges what is left of every table's changes;
4. commits each table once: the difference between its set before and after (removes, files re-added with a
   deletion vector of the rows they lost, or rewritten without them (layout ``cow``, the lake's
   :class:`~binlake.lake.records.LakeSettings`), new files), with the batch's application transaction, so a
   batch re-run after a crash at any moment commits only to the tables that have not got it, the same content.

A merge (:mod:`binlake.lake.merge`) is a task per key range: it reads its range of the batch's change rows (the
decode tasks' staged last change of each key, or a split's change files), finds the live rows of their keys by
the files' key bounds and row groups' statistics, and writes the new rows as a sorted file; the driver keeps only
the sets and the positions the tasks report.  A batch of at most :data:`LOCAL_ROWS` change rows merges here, one
range per table, with no Spark job; a larger one (a first load) is cut into ranges of
:data:`~binlake.lake.merge.RANGE_ROWS` rows run by the caller's :class:`~binlake.lake.runner.Runner` (Spark's
executors in ``binlake ingest``), which write sorted, non-overlapping files.

Example::

    update_current(lake, batch, pk, schemas, by_table, {}, emptied, renames, staged_latest(reports, by_table))
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.lake import deltalog
from binlake.lake.alter import Alteration, AlterResult, AlterTask, alter_file
from binlake.lake.fileset import FileSet
from binlake.lake.merge import (
    MergeTask,
    Source,
    change_rows,
    counted_changes,
    describe_source,
    merge_range,
    plan_ranges,
)
from binlake.lake.names import table_dir
from binlake.lake.records import DataFile, Emptied, Statement, TaskReport
from binlake.lake.runner import InProcessRunner, Runner
from binlake.lake.tables import META_NAMES, SEQ, UTC_TS
from binlake.storage import writing

if TYPE_CHECKING:
    from binlake.lake.lake import Lake  # (the lake imports this module: lake.batch commits through it)

__all__ = [
    "LOCAL_ROWS",
    "MapLayout",
    "Unconverted",
    "database_key",
    "keys_of",
    "replace_current",
    "staged_latest",
    "update_current",
]


@dataclass(frozen=True, slots=True)
class Unconverted:
    """Values an ALTER TABLE left NULL in a table's current state (:mod:`binlake.lake.alter`): ``count`` values of
    column ``column`` of table ``key`` (``db/table``) after ``query``, and ``why`` there is no exact conversion.  Its
    text is the line the ingest's report and the table's commit say."""

    key: str
    column: str
    count: int
    query: str
    why: str

    def __str__(self) -> str:
        return f"{self.key}.{self.column}: {self.count} value(s) set NULL after {self.query!r} ({self.why})"


#: A batch of at most this many change rows (of the tables a merge step touches) merges in this process, one task
#: per table: a Spark job would cost more than the merge.
LOCAL_ROWS = 1 << 18


def database_key(database: str) -> str:
    """The key of every table of ``database`` in a truncate report (DROP DATABASE): its folder and a slash."""
    return table_dir(database, "").rsplit("/", 1)[0] + "/"


def keys_of(key: str, tables: Iterable[str]) -> list[str]:
    """The tables a truncate report's ``key`` stands for among ``tables`` (all of a database for its key)."""
    return [k for k in tables if k.startswith(key)] if key.endswith("/") else [key]


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


@dataclass(frozen=True, slots=True)
class MapLayout:
    """A table map's layout where the batch met it (``seq``), for table ``key``: per column, its change-table column,
    its name in the table and its lake type.  The current table names its columns as the table does; the change
    table as :func:`binlake.ingest.layouts.resolve_layout` does (``name__type`` for a column whose type changed).
    ``map_id``: the table map's id (:func:`binlake.ingest.extract.map_id`; empty for a layout made otherwise), for the
    batch to keep the layout of XA transactions left waiting (:class:`~binlake.lake.records.BatchDone`)."""

    key: str
    seq: int
    columns: tuple[tuple[str, str, pa.DataType], ...]
    map_id: str = ""


@dataclass(frozen=True, slots=True)
class _Segment:
    """The changes of table ``key`` whose ``_seq`` is in ``[lo, hi)`` (``None``: unbounded)."""

    key: str
    lo: int | None
    hi: int | None


class _Batch:
    """The current-state tables one batch touches, as file sets (module docstring)."""

    def __init__(
        self,
        lake: Lake,
        batch: int,
        pk: dict[str, list[str]],
        schemas: dict[str, pa.Schema],
        runner: Runner,
        layouts: Sequence[MapLayout],
        alterations: Sequence[Alteration],
    ) -> None:
        self.lake, self.batch, self.pk, self.changes_schemas, self.runner = lake, batch, pk, schemas, runner
        self.sets: dict[str, FileSet] = {}
        self.schemas: dict[str, pa.Schema] = {}
        self.sources: dict[str, list[Source]] = {}
        self.layouts: dict[str, list[MapLayout]] = {}
        for m in sorted(layouts, key=lambda m: m.seq):
            self.layouts.setdefault(m.key, []).append(m)
        self.alterations: dict[str, list[Alteration]] = {}
        for a in sorted(alterations, key=lambda a: a.seq):
            self.alterations.setdefault(a.key, []).append(a)
        for key, alters in self.alterations.items():  # the key before the batch's first ALTER (``pk``: after its last)
            self.pk[key] = list(alters[0].pk_before)
        self.names: dict[str, dict[str, str]] = {}  # per table: change column -> current column, where they differ
        self.unconverted: list[Unconverted] = []  # what the alterations could not convert exactly (module alter)

    def get(self, key: str) -> FileSet:
        if key not in self.sets:
            self.sets[key] = FileSet.before(self.lake.current(key), key, self.batch)
        return self.sets[key]

    def schema(self, key: str) -> pa.Schema:
        """The current table's columns: those it had before the batch, then the columns of the batch's table maps
        before its first ALTER (named as the table names them), ``_seq``, ``_ts``.  A table new to the current
        state whose batch has no table map of it before its first ALTER (an XA transaction's rows, a table renamed
        and altered at once) takes the change table's columns."""
        if key not in self.schemas:
            alters = self.alterations.get(key)
            upto = alters[0].seq if alters else None
            fields = [f for f in self.get(key).schema or [] if f.name not in ("_seq", "_ts")]
            if not fields and not any(upto is None or m.seq < upto for m in self.layouts.get(key, [])):
                full = self.changes_schemas.get(key) or self.lake.schema_of(self.lake.changes(key))
                fields = [f for f in (full or []) if f.name not in META_NAMES]
            self.schemas[key] = pa.schema([*fields, pa.field("_seq", SEQ), pa.field("_ts", UTC_TS)])
            self._take_maps(key, None, upto)
        return self.schemas[key]

    def _take_maps(self, key: str, lo: int | None, hi: int | None) -> None:
        """Add the columns of ``key``'s table maps logged in ``[lo, hi)`` to its current columns: by the table's
        name of each, where the current table has none of that name or one of the same type; else (a type change
        the DDL did not say: a statement the tracker could not follow) by its change-table name, as today.  The
        batch's maps hold a table's map again after each statement that gave the table a new definition (the
        ingest's scan logs it again), so the maps from a RENAME or an ALTER on describe every row after it."""
        fields = [f for f in self.schemas[key] if f.name not in ("_seq", "_ts")]
        have = {f.name: f.type for f in fields}
        names = self.names.setdefault(key, {})
        for m in self.layouts.get(key, []):
            if (lo is not None and m.seq < lo) or (hi is not None and m.seq >= hi):
                continue
            for stored, name, t in m.columns:
                current = name if have.get(name, t) == t else stored
                if current not in have:
                    fields.append(pa.field(current, t))
                    have[current] = t
                if have[current] == t:
                    names[stored] = current
        self.schemas[key] = pa.schema([*fields, pa.field("_seq", SEQ), pa.field("_ts", UTC_TS)])

    def move(self, src: str, dst: str, seq: int) -> None:
        """RENAME at ``seq``: ``dst`` gets ``src``'s files, key and columns, then the columns of ``dst``'s table maps
        logged after it (up to its next ALTER); ``src`` is left empty.  The columns ``dst`` had before (a table of
        that name renamed or dropped earlier) are not the server's table any more."""
        self.schema(dst)  # (before the move: the columns ``dst`` has, the batch's maps of it taken once)
        self.pk.setdefault(dst, self.pk[src])
        if any(f.name not in ("_seq", "_ts") for f in self.schema(src)):  # (else: no columns known, ``dst``'s own)
            self.schemas[dst] = self.schema(src)
            self.names[dst] = {}  # (the change-table names of ``src``'s maps are not those of ``dst``'s change table)
            later = [a.seq for a in self.alterations.get(dst, []) if a.seq > seq]
            self._take_maps(dst, seq, later[0] if later else None)
        self.get(dst).take(self.get(src))

    def alter(self, a: Alteration) -> None:
        """ALTER TABLE: the table's live files written again with its new columns (a task per file on the runner)
        where the statement changed what its rows hold, and its columns (and key) from here on the statement's."""
        fs, before = self.get(a.key), self.schema(a.key)
        a = a.resolved(before if fs.live() else pa.schema([]))  # no row: the columns as the DDL declares them
        if a.rewrites(before):
            files = fs.live()
            tasks = [AlterTask(a.key, fs.table.uri, before, a.columns, a.pk, f) for f in files]
            runner = self.runner if len(tasks) > 1 else InProcessRunner()  # one file: no job
            results: list[AlterResult] = runner.map(alter_file, tasks)
            for f, done in zip(files, results, strict=True):
                fs.replace([f.id], done.files)
            failed: dict[str, int] = {}
            for done in results:
                for name, n in done.unconverted.items():
                    failed[name] = failed.get(name, 0) + n
            notes = {c.name: c.note for c in a.columns}
            for name, n in sorted(failed.items()):
                why = notes.get(name) or "no exact conversion to its new type"
                self.unconverted.append(Unconverted(a.key, name, n, a.query, why))
        self.pk[a.key] = list(a.pk)
        self.schemas[a.key] = pa.schema([*a.schema, pa.field("_seq", SEQ), pa.field("_ts", UTC_TS)])
        self.names[a.key] = {}
        later = [b.seq for b in self.alterations.get(a.key, []) if b.seq > a.seq]
        self._take_maps(a.key, a.seq, later[0] if later else None)

    # -- the batch's change rows ----------------------------------------------------------------------------------

    def add_sources(self, key: str, files: list[DataFile], earlier_xa: list[str], latest: list[str] | None) -> None:
        """Where the change rows of ``key`` that current state applies are: the rows of XA transactions prepared in
        an earlier batch and committed in this one (gathered into a staged file), and this batch's: the last change
        of each key the tasks staged (``latest``: their files) or, when a split gave none, the batch's change files
        of the table."""
        out: list[Source] = []
        if earlier_xa:
            xa = self._xa_rows(key, earlier_xa)
            if xa is not None:
                out.append(describe_source(xa, counted=True, sorted=False))
        if latest is not None:
            staging = self.lake.staging(self.batch)
            out += [describe_source(staging / name, counted=True, sorted=True) for name in latest]
        else:
            table = self.lake.changes(key)
            out += [describe_source(table / f.path, counted=False, sorted=False) for f in files]
        self.sources[key] = [s for s in out if s.rows]

    def _xa_rows(self, key: str, xids: list[str]) -> Any:
        """The counted change rows of ``key`` of the transactions ``xids`` (earlier batches'), written to the
        batch's staging folder (their location), or ``None`` when there are none."""
        table = self.lake.changes(key)
        snap = deltalog.read_snapshot(table)
        if snap is None:
            return None
        wanted = pc.field("_xid").isin(pa.array(xids, pa.string()))
        parts: list[pa.Table] = []
        for path, add in snap.files.items():
            if add.get("deletionVector") is None:
                parts.append(change_rows(deltalog.file_location(table, path), snap.schema, wanted))
            else:
                rows = pa.Table.from_batches(deltalog.scan_file(table, path, snap.schema, snap.deletion_vector(path)))
                parts.append(rows.filter(pc.is_in(rows["_xid"], pa.array(xids, pa.string()))))
        rows = counted_changes(pa.concat_tables(parts, promote_options="default")) if parts else None
        if rows is None or not rows.num_rows:
            return None
        out = self.lake.staging(self.batch) / f"xa-{uuid.uuid4().hex}.parquet"
        with writing(out), out.open_output() as sink:
            pq.write_table(rows, sink, compression="zstd")
        return out

    # -- merging --------------------------------------------------------------------------------------------------

    def merge(self, segments: Sequence[_Segment]) -> None:
        """Merge ``segments`` into their tables' sets: in this process, a task per table, when they hold at most
        :data:`LOCAL_ROWS` change rows; else a task per key range of each table, on the runner."""
        segments = [s for s in segments if self.sources.get(s.key)]
        if not segments:
            return
        big = sum(src.rows for s in segments for src in self.sources[s.key]) > LOCAL_ROWS
        tasks: list[MergeTask] = []
        for seg in segments:
            fs, schema, pk = self.get(seg.key), self.schema(seg.key), self.pk[seg.key]
            first = schema.field(pk[0])
            names = tuple((a, b) for a, b in self.names.get(seg.key, {}).items() if a != b)
            stored = {b: a for a, b in names}
            sources = self.sources[seg.key]
            partial = any(s.partial for s in sources)
            ranges = (
                plan_ranges(sources, first.with_name(stored.get(first.name, first.name)))
                if big and not partial
                else [(None, None)]
            )
            for lo, hi in ranges:
                files = tuple(fs.overlapping(first, lo, hi))
                tasks.append(MergeTask(seg.key, fs.table.uri, schema, tuple(pk), tuple(sources), files, (lo, hi),
                                       (seg.lo, seg.hi), names=names))  # fmt: skip
        runner = self.runner if big else InProcessRunner()
        for result in runner.map(merge_range, tasks):
            fs = self.sets[result.key]
            for home, path, rows in result.deleted:
                fs.delete(home, path, rows)
            fs.add(result.files)

    def commit(self) -> None:
        layout = self.lake.settings().current_layout
        for key, fs in sorted(self.sets.items()):
            notes = [str(u) for u in self.unconverted if u.key == key]
            fs.commit(self.schema(key), self.pk.get(key) or [], batch=self.batch, fence=self.lake.check, layout=layout,
                      runner=self.runner, note="; ".join(notes) or None)  # fmt: skip


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
    runner: Runner | None = None,
    layouts: Sequence[MapLayout] = (),
    alterations: Sequence[Alteration] = (),
) -> tuple[list[str], list[Unconverted]]:
    """Apply this batch to the current-state tables (module docstring): each table's changes in ``_seq`` order,
    cut where a statement empties a table (``emptied``), moves it (``renames``) or alters its columns
    (``alterations``, :mod:`binlake.lake.alter`); ``latest``: the tables the tasks reduced to the last change of
    each key (:func:`staged_latest`); ``runner``: where the range tasks of a large batch run (default: this
    process); ``layouts``: the batch's table maps (how the change tables name the current tables' columns).  The
    tables it may have committed to (their keys), and what the alterations could not convert exactly (values set
    NULL), one line per column."""
    run = _Batch(lake, batch, dict(pk), schemas, runner or InProcessRunner(), layouts, alterations)
    for key in sorted(set(by_table) | set(earlier_xa)):
        if pk.get(key):
            run.add_sources(key, by_table.get(key, []), earlier_xa.get(key, []), latest.get(key))
            if run.sources[key]:  # a table the batch applies row changes to has a current state, empty or not:
                run.get(key).explicit = True  # (else whether it had one would hang on where batches were cut)
    start: dict[str, int | None] = {}  # where each table's next segment starts
    done: set[str] = set()

    def segments(keys: Iterable[str], upto: int | None) -> list[_Segment]:
        out = []
        for k in keys:
            if k in run.sources and k not in done:
                out.append(_Segment(k, start.get(k), upto))
                if upto is None:
                    done.add(k)
                else:
                    start[k] = upto
        return out

    known = set(run.pk) | set(run.sources) | {table_dir(*t) for s in renames for pair in s.pairs for t in pair}
    ops: list[tuple[int, int, str, Any]] = [(e.seq, 0, "truncate", k) for e in emptied for k in keys_of(e.key, known)]
    ops += [(s.seq, 1, "rename", s.pairs) for s in renames]
    ops += [(a.seq, 2, "alter", a) for a in alterations]
    for seq, _, kind, what in sorted(ops, key=lambda o: (o[0], o[1])):
        if kind == "alter":
            run.merge(segments([what.key], seq))
            run.alter(what)
            continue
        if kind == "truncate":
            run.merge(segments([what], seq))
            if what in run.sets or lake.has_table(lake.current(what)):  # (a table never given rows: none)
                run.get(what).empty()
            continue
        for src, dst in what:
            s, d = table_dir(*src), table_dir(*dst)
            run.merge(segments([s, d], seq))
            if run.pk.get(s):
                run.move(s, d, seq)
    run.merge(segments(sorted(run.sources), None))
    run.commit()
    return sorted(run.sets), run.unconverted


def replace_current(
    lake: Lake, key: str, files: Sequence[DataFile], schema: pa.Schema, pk: Sequence[str], batch: int
) -> None:
    """Make ``files`` (a snapshot's chunks, each sorted by the key) the whole current state of ``key`` as batch
    ``batch``, once."""
    fs = FileSet.before(lake.current(key), key, batch)
    fs.empty()
    fs.add(files)
    layout = lake.settings().current_layout
    fs.commit(schema, pk, batch=batch, fence=lake.check, layout=layout, runner=InProcessRunner())  # nothing to rewrite
