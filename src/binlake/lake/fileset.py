"""A current-state table's live files as a batch changes them (:class:`FileSet`), and the one commit per table and
batch that makes the table so (:meth:`FileSet.commit`).

A batch works on a :class:`FileSet`, not on the committed table, so that the statements of one batch compose:
``TRUNCATE`` empties the set (:meth:`FileSet.empty`), ``RENAME a TO b`` moves ``a``'s set as it stands at that
point to ``b`` (:meth:`FileSet.take`), each segment of changes between them deletes rows from files
(:meth:`FileSet.delete`, row positions that accumulate per file) and adds new files (:meth:`FileSet.add`).  The
set starts as the table was *before* the batch (:func:`binlake.lake.deltalog.snapshot_before`), so a batch re-run
after a crash computes the same sets, whatever it committed before it died.

The commit is the difference between that start and the final set, in one Delta commit carrying the batch's
application transaction (made once: a table that has the batch is left alone):

* a file no longer in the set: ``remove``;
* a file that lost rows: ``remove`` and ``add`` again with a deletion vector of every row it lost (layout ``dv``),
  or written again without them by a :func:`rewrite_files` task (layout ``cow``, copy-on-write);
* a new file: ``add``;
* a file of another table's folder (a rename moved it here): copied into this table's folder first (a vacuum of
  the other table must not delete what this one references), its deletion vector written again here (row positions
  are the file's own, so they hold in the copy).

:func:`rewrite_files` (a task: the live rows of some files as new sorted files) is also what maintenance compacts
small files with: ``FileSet.replace`` then :meth:`FileSet.commit` under the maintenance's own application id.

Example::

    fs = FileSet.before(lake.current("db/t"), "db/t", batch=7)
    fs.delete(f.home, f.path, np.array([3, 9], np.uint64))
    fs.add(new_files)
    fs.commit(schema, batch=7, fence=lake.check, layout="dv", runner=InProcessRunner())
"""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, TypeGuard

import numpy as np
import pyarrow as pa

from binlake.lake import delta, deltalog, parallel
from binlake.lake import dv as dvs
from binlake.lake.files import FILE_ROWS, ROW_GROUP_ROWS, CurrentSink, key_bounds, sorted_by, write_sorted
from binlake.lake.records import DataFile, LakeFormatError, check_version
from binlake.lake.runner import Runner
from binlake.storage import Location

__all__ = ["FileSet", "LiveFile", "RewriteResult", "RewriteTask", "in_file", "rewrite_files"]

Layout = Literal["dv", "cow"]
_NONE = np.zeros(0, np.uint64)


@dataclass(frozen=True, slots=True)
class LiveFile:
    """A data file of a table as a batch sees it: ``home``, the table folder whose log named it (``path`` is
    relative to it, URL-encoded as in the log, or absolute), its ``rows`` (deleted ones included), ``size``,
    ``mtime_ms``, Delta ``stats`` (JSON text), the deletion vector descriptor ``dv`` committed with it (JSON
    object, relative to ``home``), ``deleted``: the row positions this batch deleted that ``dv`` does not hold, and
    the ``add`` action's ``tags`` (:func:`~binlake.lake.files.sorted_by`).  A record of the tasks (:meth:`to_json`)."""

    VERSION: ClassVar[int] = 1

    home: str
    path: str
    rows: int
    size: int
    mtime_ms: int
    stats: str | None = None
    dv: dict[str, Any] | None = None
    deleted: dvs.Rows | None = field(default=None, compare=False)
    tags: dict[str, str] | None = None

    @property
    def id(self) -> tuple[str, str]:
        return (self.home, self.path)

    @property
    def location(self) -> Location:
        return deltalog.file_location(Location(self.home), self.path)

    @property
    def touched(self) -> bool:
        """Has this batch deleted rows of it?"""
        return self.deleted is not None and bool(self.deleted.size)

    @property
    def sorted_by(self) -> list[str] | None:
        """The key the file's rows are in ascending order of, each key once (``None``: no such promise)."""
        return sorted_by(self.tags)

    def deleted_rows(self) -> dvs.Rows:
        """Every row of the file the set no longer holds: its deletion vector's and this batch's."""
        committed = (
            _NONE if self.dv is None else dvs.read_rows(Location(self.home), dvs.DeletionVector.from_json(self.dv))
        )
        return committed if self.deleted is None else np.union1d(committed, self.deleted)

    def add_action(self) -> dict[str, Any]:
        """The body of the ``add`` action of this file as a new file of its table (no deletion vector)."""
        add = {"path": self.path, "partitionValues": {}, "size": self.size, "modificationTime": self.mtime_ms,
               "dataChange": True, "stats": self.stats or json.dumps({"numRecords": self.rows})}  # fmt: skip
        if self.tags:
            add["tags"] = dict(self.tags)
        return add

    @classmethod
    def new(cls, table: Location, f: DataFile) -> LiveFile:
        """The file ``f`` a task wrote in the table folder ``table``."""
        return cls(table.uri, urllib.parse.quote(f.path), f.rows, f.size, f.mtime_ms, f.stats, tags=f.tags)

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "home": self.home, "path": self.path, "rows": self.rows,
                           "size": self.size, "mtime_ms": self.mtime_ms, "stats": self.stats, "dv": self.dv,
                           "deleted": None if self.deleted is None else dvs.rows_to_text(self.deleted),
                           "tags": self.tags})  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> LiveFile:
        v = json.loads(text)
        check_version("a live file record (of a task)", v.get("version"), cls.VERSION)
        deleted = None if v["deleted"] is None else dvs.rows_from_text(v["deleted"])
        return cls(str(v["home"]), str(v["path"]), int(v["rows"]), int(v["size"]), int(v["mtime_ms"]), v["stats"],
                   v["dv"], deleted, v.get("tags"))  # fmt: skip


class FileSet:
    """The live files of the current-state table at ``table`` (key ``key``) as a batch changes them; ``base`` is
    the table before the batch (``None``: there was none)."""

    def __init__(self, table: Location, key: str, base: deltalog.Snapshot | None) -> None:
        self.table, self.key, self.base = table, key, base
        self.files: dict[tuple[str, str], LiveFile] = {}
        self.explicit = False  # emptied or moved by a statement: committed even when it ends empty
        self._bounds: dict[tuple[str, str], tuple[Any, Any] | None] = {}
        if base is not None:
            base.check(write=True)
            for path, add in base.files.items():
                mtime = int(add.get("modificationTime") or 0)
                f = LiveFile(table.uri, path, base.num_records(path), int(add["size"]), mtime, add.get("stats"),
                             add.get("deletionVector"), tags=add.get("tags"))  # fmt: skip
                self.files[f.id] = f

    @classmethod
    def before(cls, table: Location, key: str, batch: int, app_id: str = delta.APP_ID) -> FileSet:
        """The table's files as they were before batch ``batch``."""
        return cls(table, key, deltalog.snapshot_before(table, app_id, batch))

    @property
    def schema(self) -> pa.Schema | None:
        """The table's columns before the batch (``None``: no table)."""
        return None if self.base is None else self.base.schema

    def live(self) -> list[LiveFile]:
        return list(self.files.values())

    def empty(self) -> None:
        """TRUNCATE, DROP, CREATE OR REPLACE: no row left."""
        self.files = {}
        self.explicit = True

    def take(self, other: FileSet) -> None:
        """RENAME ``other`` TO this table: this set becomes ``other``'s as it stands, ``other`` is left empty."""
        self.files, other.files = dict(other.files), {}
        self._bounds.update(other._bounds)
        self.explicit = other.explicit = True

    def add(self, files: Sequence[DataFile]) -> None:
        """New files written in this table's folder."""
        for f in files:
            live = LiveFile.new(self.table, f)
            self.files[live.id] = live

    def delete(self, home: str, path: str, rows: dvs.Rows) -> None:
        """Rows (positions) of the file ``(home, path)`` the set no longer holds."""
        f = self.files[(home, path)]
        self.files[f.id] = replace(f, deleted=rows if f.deleted is None else np.union1d(f.deleted, rows))

    def replace(self, old: Sequence[tuple[str, str]], new: Sequence[DataFile]) -> None:
        """Files ``old`` (ids) replaced by ``new`` (files of this table holding their live rows: a compaction)."""
        for o in old:
            del self.files[o]
        self.add(new)

    def bounds(self, f: LiveFile, first: pa.Field) -> tuple[Any, Any] | None:
        """The (min, max) of the first key column ``first`` in ``f`` as Python values (``None``: unknown)."""
        if f.id not in self._bounds:
            b = key_bounds(f.stats, first)
            self._bounds[f.id] = None if b is None else (b[0].as_py(), b[1].as_py())
        return self._bounds[f.id]

    def overlapping(self, first: pa.Field, lo: Any, hi: Any) -> list[LiveFile]:
        """The files that may hold a key whose first column is in ``[lo, hi)`` (``None``: unbounded)."""
        out = []
        for f in self.files.values():
            b = self.bounds(f, first)
            if b is None or ((lo is None or b[1] >= lo) and (hi is None or b[0] < hi)):
                out.append(f)
        return out

    # -- the commit ---------------------------------------------------------------------------------------------

    def commit(
        self,
        schema: pa.Schema,
        pk: Sequence[str],
        *,
        batch: int,
        fence: Any,
        layout: Layout,
        runner: Runner,
        app_id: str = delta.APP_ID,
        data_change: bool = True,
        note: str | None = None,
        gather: bool = False,
    ) -> int | None:
        """Make the table hold this set, as batch ``batch`` of ``app_id`` (module docstring): the version
        committed, or ``None`` when the table has the batch already or there is nothing to commit.  ``fence`` is
        called before the commit (``Lake.check``); ``runner`` runs the copy-on-write rewrites.  ``data_change``
        false: the set holds the same rows as the table, laid out anew (maintenance's compaction: a commit
        ``OPTIMIZE`` whose actions say ``dataChange: false``, which a Delta streaming reader skips).  A ``schema``
        that is not the table's with columns added at the end (an ALTER TABLE dropped, renamed, converted or placed
        a column: :mod:`binlake.lake.alter`) is the table's new schema, in the same commit; ``note`` (what such an
        ALTER could not convert) goes into the commit's ``operationParameters`` as ``unconverted``, in the table's
        history.  ``gather``: every deletion vector of the table kept in a file is written again, with those the
        commit makes, into the commit's one deletion-vector file (maintenance: a table's live deletion vectors in
        one file, however many batches wrote them)."""
        now = deltalog.read_snapshot(self.table)
        if now is not None and now.txns.get(app_id, -1) >= batch:
            return None
        if now is None and not self.files and not self.explicit:
            return None
        if layout == "cow":
            self._rewrite(schema, pk, runner)
        self._copy_here()
        entries = list(self.files.values())
        needs_dv = any(f.touched for f in entries) or (gather and any(in_file(f.dv) for f in entries))
        retyped = now is not None and deltalog.reshaped(now, schema)
        if now is not None and not retyped and any(n not in now.schema.names for n in schema.names):
            delta.add_columns(self.table, schema)
        base = self.base.files if self.base is not None else {}

        def plan(snap: deltalog.Snapshot) -> list[deltalog.Action] | None:
            if snap.txns.get(app_id, -1) >= batch:
                return None
            if set(snap.files) != set(base) or any(
                snap.files[p].get("deletionVector") != a.get("deletionVector") for p, a in base.items()
            ):
                raise LakeFormatError(f"the table changed while batch {batch} was applied to it", file=self.table.uri)
            here = {f.path: f for f in entries}
            actions = deltalog.table_actions(snap, schema=schema if retyped else None, deletion_vectors=needs_dv,
                                             replace=retyped)  # fmt: skip
            changed: list[tuple[dict[str, Any], dvs.Rows, int, bool]] = []
            for path, add in snap.files.items():
                f = here.get(path)
                if f is None:
                    actions.append(deltalog.remove(add))
                elif f.touched or (gather and in_file(add.get("deletionVector"))):
                    changed.append((add, f.deleted_rows(), f.rows, True))
            for f in entries:
                if f.path not in snap.files:
                    changed.append((f.add_action(), f.deleted_rows() if f.touched else _NONE, f.rows, False))
            actions += deltalog.deletion_actions(self.table, changed, again=gather)
            if not data_change:
                for a in actions:
                    for kind in ("add", "remove"):
                        if kind in a:
                            a[kind]["dataChange"] = False
            actions.append(deltalog.txn(app_id, batch))
            return actions

        operation = "MERGE" if data_change else "OPTIMIZE"
        parameters = {"batch": str(batch), **({"unconverted": note} if note else {})}
        return deltalog.commit(self.table, plan, fence=fence, operation=operation, parameters=parameters,
                               create=schema)  # fmt: skip

    def _rewrite(self, schema: pa.Schema, pk: Sequence[str], runner: Runner) -> None:
        """Copy-on-write: each file that lost rows (or holds a deletion vector of another table) written again in
        this table's folder without them."""
        todo = [f for f in self.files.values() if f.touched or (f.dv is not None and f.home != self.table.uri)]
        tasks = [RewriteTask(self.key, self.table.uri, schema, tuple(pk), (f,)) for f in todo]
        for f, done in zip(todo, runner.map(rewrite_files, tasks), strict=True):
            self.replace([f.id], done.files)

    def _copy_here(self) -> None:
        """Files of other tables' folders (renamed here) copied into this one, with every row they lost."""
        away = [f for f in self.files.values() if f.home != self.table.uri]

        def copy(f: LiveFile) -> LiveFile:
            name = f"part-{uuid.uuid4().hex}.parquet"
            f.location.copy_to(self.table / name)
            lost = f.deleted_rows()
            return LiveFile(self.table.uri, name, f.rows, f.size, int(time.time() * 1000), f.stats, None,
                            lost if lost.size else None, f.tags)  # fmt: skip

        copies = parallel.each(copy, away)
        for f, c in zip(away, copies, strict=True):
            del self.files[f.id]
            self.files[c.id] = c


def in_file(dv: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """Is the deletion vector descriptor ``dv`` (of an ``add`` action) one kept in a file (not inline)?  A storage
    type binlake does not know counts as a file: reading the descriptor then fails
    (:meth:`binlake.lake.dv.DeletionVector.from_json`) rather than a file going unseen (a vacuum deleting it)."""
    return dv is not None and dv.get("storageType") != "i"


@dataclass(frozen=True, slots=True)
class RewriteTask:
    """Write the live rows of ``inputs`` (files with the rows they lost) as new files of the table ``key`` in its
    folder ``location``, with ``schema``'s columns, sorted by ``pk``.  A record of the tasks."""

    VERSION: ClassVar[int] = 1

    key: str
    location: str
    schema: pa.Schema
    pk: tuple[str, ...]
    inputs: tuple[LiveFile, ...]
    file_rows: int = FILE_ROWS
    row_group_rows: int = ROW_GROUP_ROWS

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "key": self.key, "location": self.location,
                           "schema": self.schema.serialize().to_pybytes().hex(), "pk": list(self.pk),
                           "inputs": [f.to_json() for f in self.inputs], "file_rows": self.file_rows,
                           "row_group_rows": self.row_group_rows})  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> RewriteTask:
        v = json.loads(text)
        check_version("a rewrite task", v.get("version"), cls.VERSION)
        schema = pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(v["schema"])))
        return cls(str(v["key"]), str(v["location"]), schema, tuple(v["pk"]),
                   tuple(LiveFile.from_json(f) for f in v["inputs"]), int(v["file_rows"]),
                   int(v["row_group_rows"]))  # fmt: skip


@dataclass(frozen=True, slots=True)
class RewriteResult:
    """The files a :class:`RewriteTask` wrote (none: no row was left)."""

    VERSION: ClassVar[int] = 1

    files: tuple[DataFile, ...] = ()

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "files": [f.to_json() for f in self.files]})

    @classmethod
    def from_json(cls, text: str) -> RewriteResult:
        v = json.loads(text)
        check_version("a rewrite result", v.get("version"), cls.VERSION)
        return cls(tuple(DataFile.from_json(f) for f in v["files"]))


def rewrite_files(task: RewriteTask) -> RewriteResult:
    """Run a :class:`RewriteTask`: one input is streamed a row group at a time (its order kept); several are read
    whole, merged and sorted (a compaction of small files)."""
    table = Location(task.location)
    if len(task.inputs) == 1:
        f = task.inputs[0]
        lost = f.deleted_rows()
        sink = CurrentSink(table, task.key, task.schema, task.pk, task.row_group_rows)
        for part in deltalog.scan_rows(f.location, task.schema, lost if lost.size else None):
            sink.write(pa.Table.from_batches([part]))
        done = sink.close()
        return RewriteResult(() if done is None else (done,))
    parts: list[pa.RecordBatch] = []
    for f in task.inputs:
        lost = f.deleted_rows()
        parts.extend(deltalog.scan_rows(f.location, task.schema, lost if lost.size else None))
    rows = pa.Table.from_batches(parts, schema=task.schema)
    files = write_sorted(rows, table, task.key, task.pk, file_rows=task.file_rows, row_group_rows=task.row_group_rows)
    return RewriteResult(tuple(files))
