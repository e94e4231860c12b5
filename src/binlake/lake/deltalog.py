"""binlake's own Delta log: a table's state read from its log (:func:`read_snapshot`), commits delta-rs cannot make
(:func:`commit`: deletion vectors, which its ``AddAction`` has no field for, on a path removed and re-added in one
commit), and the reading of data files with their deletion vectors applied (:func:`scan_file`).

Reading.  :func:`read_snapshot` lists ``_delta_log``, reads the newest complete classic checkpoint at or below the
version wanted (single or multi-part Parquet) and the JSON commits after it, and replays them (PROTOCOL.md, "Action
Reconciliation": in one commit a ``remove`` and an ``add`` of one path re-add it, so removes go first).  Each file
keeps its ``add`` action as the log has it, deletion vector descriptor and tags included: ``DeltaTable.
get_add_actions`` shows neither.

Committing.  :func:`commit` writes version ``read + 1`` only if absent (:meth:`binlake.storage.Location.
create_bytes`: a no-replace link on local disks, ``If-None-Match: *`` on S3, exists-then-put under the writer lease
elsewhere), after calling the caller's ``fence`` (``Lake.check``: the writer lease is held and not about to
expire).  A lost race reads the table again and plans the commit again, a bounded number of times with backoff.
A table gets deletion vectors by one commit that upgrades its protocol to reader 3 / writer 7 with the
``deletionVectors`` feature (keeping the features its legacy versions implied, PROTOCOL.md "Table Features for New
and Existing Tables") and sets ``delta.enableDeletionVectors``.  Every ``delta.checkpointInterval``-th version
(delta-rs' default: 100) it has delta-rs write a checkpoint, as delta-rs does after its own commits, so readers
replay a bounded log whoever committed.

Example::

    version = commit_batch(loc, batch=7, app_id="binlake-ingest", adds=files, schema=schema,
                           deletes=lambda snap: {"part-1.parquet": np.array([3], np.uint64)}, fence=lake.check)
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable

from binlake.lake import dv as dvs
from binlake.lake import parallel
from binlake.lake.records import DataFile, LakeFormatError
from binlake.storage import Entry, Location, StorageError, locate

__all__ = [
    "Action",
    "LogFiles",
    "Snapshot",
    "commit",
    "commit_batch",
    "conform",
    "delete_rows",
    "deletion_actions",
    "delta_table",
    "file_location",
    "log_files",
    "new_file",
    "newest_version",
    "read_snapshot",
    "remove",
    "same_content_to",
    "scan_file",
    "scan_rows",
    "snapshot_before",
    "table_actions",
    "txn",
    "version_before",
]

_Data = TypeVar("_Data", pa.Table, pa.RecordBatch)
Action = dict[str, Any]  # one line of a commit, as JSON: {"add": {...}}, {"remove": {...}}, {"txn": {...}} ...

LOG = "_delta_log"
_ENGINE = "binlake"
_ATTEMPTS = 8  # a lost race reads the table again; more than a few in a row means something else is wrong
_CHECKPOINT_INTERVAL = 100  # delta-rs' default for delta.checkpointInterval
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")
_VERSIONED = re.compile(r"^\d{20}\.")

# The features legacy protocol versions imply (PROTOCOL.md, "Writer Version Requirements", "Reader Version
# Requirements"): an upgrade to table features lists them all, as it cannot prove one was never used.
_LEGACY_WRITER = (
    (2, ("appendOnly", "invariants")),
    (3, ("checkConstraints",)),
    (4, ("changeDataFeed", "generatedColumns")),
    (5, ("columnMapping",)),
    (6, ("identityColumns",)),
)
_LEGACY_READER = ((2, ("columnMapping",)),)
DV = "deletionVectors"
NTZ = "timestampNtz"  # a column of timestamp_ntz (a DATETIME) needs it

# What binlake's readers (scan_file) and writer (commit) respect.  A feature outside these sets, or one of them
# active in a way binlake does not implement (the checks in Snapshot.check), makes it refuse the table rather than
# misread or miswrite it.
_READS = frozenset({DV, "timestampNtz", "columnMapping", "vacuumProtocolCheck", "variantType"})
_COLUMN_KINDS = (  # column metadata of features binlake's writer does not implement
    ("delta.generationExpression", "generated columns"),
    ("delta.identity.", "identity columns"),
    ("delta.invariants", "column invariants"),
)
_WRITES = frozenset({*_READS, "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
                     "identityColumns", "domainMetadata"})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A table at one ``version``: its ``protocol`` and ``metadata`` (the actions' JSON objects), its ``files`` (path
    -> its ``add`` action object, deletion vector included), its application transactions ``txns`` (appId ->
    version) and its ``tombstones`` (the ``remove`` actions of files, or deletion vectors, no longer in it, as far as
    the log and its checkpoint still hold them: what vacuum keeps within its retention)."""

    table: Location
    version: int
    protocol: dict[str, Any]
    metadata: dict[str, Any]
    files: dict[str, dict[str, Any]]
    txns: dict[str, int]
    tombstones: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def schema(self) -> pa.Schema:
        """The table's Arrow schema (delta-rs' mapping of its Delta schema, as ``DeltaTable.schema().to_arrow()``)."""
        from deltalake import Schema

        return pa.schema(Schema.from_json(self.metadata["schemaString"]).to_arrow())

    @classmethod
    def new(cls, table: Location, schema: pa.Schema) -> Snapshot:
        """The table ``table`` about to be created with ``schema``'s columns, as :func:`commit` plans its version 0
        on (version -1): a new table id, no file, Delta's first protocol (reader 1, writer 2: what delta-rs'
        ``DeltaTable.create`` picks where no column needs a feature; :func:`table_actions` raises it as the columns
        and deletion vectors need)."""
        meta = {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps({"type": "struct", "fields": _delta_fields(schema)}, separators=(",", ":")),
                "partitionColumns": [], "configuration": {}, "createdTime": _now_ms()}  # fmt: skip
        return cls(table, -1, {"minReaderVersion": 1, "minWriterVersion": 2}, meta, {}, {})

    @property
    def features(self) -> tuple[frozenset[str], frozenset[str]]:
        """(reader, writer) features the table supports, explicit or implied by legacy protocol versions."""
        p = self.protocol
        reader = set(p.get("readerFeatures") or ())
        writer = set(p.get("writerFeatures") or ())
        if int(p["minReaderVersion"]) < 3:
            reader.update(f for v, names in _LEGACY_READER if int(p["minReaderVersion"]) >= v for f in names)
        if int(p["minWriterVersion"]) < 7:
            writer.update(f for v, names in _LEGACY_WRITER if int(p["minWriterVersion"]) >= v for f in names)
        return frozenset(reader), frozenset(writer)

    def check(self, *, write: bool) -> None:
        """Refuse (:class:`~binlake.lake.records.LakeFormatError`) a table binlake cannot read (or, ``write``,
        write) correctly: a feature it does not implement, or column mapping, append-only, change data feed,
        constraints, generated or identity columns in use."""
        reader, writer = self.features
        unknown = (reader | writer if write else reader) - (_WRITES if write else _READS)
        config = self.metadata.get("configuration") or {}
        used = []
        if config.get("delta.columnMapping.mode", "none") != "none":
            used.append("column mapping")
        if '"variant"' in self.metadata["schemaString"]:  # the feature without a column of the type is harmless:
            used.append("variant columns")  # delta-rs' set_table_properties lists it on every table-features table
        if write:
            if config.get("delta.appendOnly") == "true":
                used.append("delta.appendOnly")
            if config.get("delta.enableChangeDataFeed") == "true":
                used.append("change data feed")
            if any(k.startswith("delta.constraints.") for k in config):
                used.append("CHECK constraints")
            schema = self.metadata["schemaString"]
            used += [what for key, what in _COLUMN_KINDS if key in schema]
        if unknown or used:
            what = ", ".join([*sorted(unknown), *used])
            raise LakeFormatError(f"binlake cannot {'write' if write else 'read'} this Delta table: {what}",
                                  file=self.table.uri)  # fmt: skip

    def deletion_vector(self, path: str) -> dvs.DeletionVector | None:
        d = self.files[path].get("deletionVector")
        return None if d is None else dvs.DeletionVector.from_json(d)

    def num_records(self, path: str) -> int:
        """The rows in the data file ``path`` (its ``numRecords`` statistic; the Parquet footer where the log has
        none), deleted ones included."""
        n = _stats(self.files[path]).get("numRecords")
        if n is None:
            with file_location(self.table, path).open_input() as f:
                return int(pq.ParquetFile(f).metadata.num_rows)
        return int(n)

    def live_records(self, path: str) -> int:
        """The rows of ``path`` the table holds: its records less those its deletion vector deletes."""
        d = self.files[path].get("deletionVector")
        return self.num_records(path) - (0 if d is None else int(d["cardinality"]))


def _stats(add: Mapping[str, Any]) -> dict[str, Any]:
    text = add.get("stats")
    return dict(json.loads(text)) if text else {}


def file_location(table: Location, path: str) -> Location:
    """Where the data file of an action's ``path`` (a relative, URL-encoded path, or an absolute URI) is."""
    plain = urllib.parse.unquote(path)
    return locate(plain) if "://" in plain or plain.startswith("/") else table / plain


# -- reading the log ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogFiles:
    """What a table's ``_delta_log`` holds: its JSON ``commits`` and complete classic ``checkpoints`` by version
    (each checkpoint's parts), and ``versioned``: every file whose name starts with a version (commits, checkpoint
    parts whole or not, checksums), with that version."""

    commits: dict[int, Entry]
    checkpoints: dict[int, list[Entry]]
    versioned: list[tuple[int, Entry]]


def log_files(table: Location) -> LogFiles:
    """The files of the log of the table at ``table`` (none when there is no table)."""
    commits: dict[int, Entry] = {}
    parts: dict[tuple[int, int], list[Entry]] = {}
    versioned: list[tuple[int, Entry]] = []
    for entry in (table / LOG).list():
        name = entry.location.name
        if m := _COMMIT.match(name):
            commits[int(m[1])] = entry
        elif m := _CHECKPOINT.match(name):
            parts.setdefault((int(m[1]), int(m[3] or 1)), []).append(entry)
        if _VERSIONED.match(name):
            versioned.append((int(name[:20]), entry))
    checkpoints: dict[int, list[Entry]] = {}
    for (v, n), found in sorted(parts.items()):
        if len(found) == n:
            checkpoints[v] = sorted(found, key=lambda e: e.location.uri)
    return LogFiles(commits, checkpoints, versioned)


def newest_version(table: Location) -> int | None:
    """The newest version of the table at ``table`` (one listing of its log), or ``None`` when there is no table."""
    log = log_files(table)
    return max([*log.commits, *log.checkpoints], default=None)


def read_snapshot(table: Location, version: int | None = None) -> Snapshot | None:
    """The table at ``table`` as of ``version`` (default: its newest), or ``None`` when there is no table."""
    log = log_files(table)
    if not log.commits and not log.checkpoints:
        return None
    newest = max([*log.commits, *log.checkpoints])
    target = newest if version is None else version
    if target > newest or target < 0:
        raise StorageError(f"no version {target} of this Delta table (its newest is {newest})", file=table.uri)
    start = max((v for v in log.checkpoints if v <= target), default=-1)
    missing = [v for v in range(start + 1, target + 1) if v not in log.commits]
    if missing:
        raise StorageError(f"version {target} of this Delta table is no longer in its log (commit {missing[0]} is "
                           "gone: cleaned up past its retention)", file=table.uri)  # fmt: skip
    state = _State()
    if start >= 0:
        for part in log.checkpoints[start]:
            state.apply_checkpoint(part.location)
    todo = [log.commits[v].location for v in range(start + 1, target + 1)]
    for body in _read_all(todo):
        state.apply_commit([_clean(json.loads(line)) for line in body.splitlines() if line.strip()])
    if state.protocol is None or state.metadata is None:
        raise LakeFormatError("a Delta log without its protocol or metadata", file=table.uri)
    return Snapshot(table, target, state.protocol, state.metadata, state.files, state.txns, state.tombstones)


def _read_all(files: list[Location]) -> Iterator[bytes]:
    """The bytes of ``files``, in order: read side by side when there are several (an object store's latency per
    request), in this thread for a few (a thread pool costs more than it saves there)."""
    yield from parallel.each(Location.read_bytes, files, inline=4)


def snapshot_before(table: Location, app_id: str, batch: int) -> Snapshot | None:
    """The table at ``table`` as it was before batch ``batch`` of application ``app_id`` was committed to it: its
    newest snapshot when it has not got the batch, else the one before the commit that carries it; ``None`` when
    there was no table then (:func:`version_before`)."""
    snap = read_snapshot(table)
    if snap is None or snap.txns.get(app_id, -1) < batch:
        return snap
    version = version_before(table, batch, (app_id,))
    return None if version is None else read_snapshot(table, version)


def version_before(table: Location, batch: int, app_ids: Sequence[str]) -> int | None:
    """The last version of the table at ``table`` before its first commit carrying batch ``batch`` or a later one of
    any of ``app_ids`` (its newest when it has none), or ``None`` when there was no table then (no table, or one
    created by such a commit).  The commits are read back from the newest, down to one carrying an earlier batch of
    those applications (a table's batches only grow): a batch being re-run is the table's last, and a table read as
    of a recent batch reads a few commits.  A commit that only changes the table's columns or protocol just before
    the first such commit is part of its batch (:func:`binlake.lake.delta.add_columns`: the columns the batch
    adds); any other carrying no batch of those applications (maintenance) belongs to the batch before it."""
    log = log_files(table)
    commits = log.commits
    newest = max([*commits, *log.checkpoints], default=None)
    if newest is None:
        return None
    first: int | None = None  # the oldest commit seen carrying ``batch`` or later
    for version in range(newest, -1, -1):
        if version not in commits:  # read back to where the log was cleaned up: its checkpoint says the rest
            kept = read_snapshot(table, version + 1)
            if first is None and kept is not None and all(kept.txns.get(a, -1) < batch for a in app_ids):
                return newest
            raise StorageError(f"the commits before version {version + 1} of this Delta table are no longer in its "
                               "log (cleaned up past their retention)", file=table.uri)  # fmt: skip
        actions = [json.loads(line) for line in commits[version].location.read_bytes().splitlines() if line.strip()]
        carried = [int(a["txn"]["version"]) for a in actions if "txn" in a and a["txn"].get("appId") in app_ids]
        if any(v >= batch for v in carried):
            first = version
        elif carried:
            break
        elif first == version + 1 and all(set(a) <= {"commitInfo", "metaData", "protocol"} for a in actions):
            first = version  # the columns (or protocol) the batch's own commit needed, in a commit of their own
    if first is None:
        return newest
    return first - 1 if first > 0 else None


def same_content_to(table: Location, version: int, app_ids: Sequence[str]) -> int:
    """The newest version of the table at ``table`` with the content of ``version`` as a batch left it: the versions
    after it, read forward, as long as their commits are maintenance's (a compaction under its own application
    transaction or none, a vacuum), not a batch's (carrying an application transaction of ``app_ids``; adding
    columns or upgrading the protocol, as a batch does in a commit before its own; a restore, as a rewinding batch
    does).  So a reader of the lake as of a batch reads a table compacted since in its compacted files, which a
    vacuum keeps."""
    commits = log_files(table).commits
    while version + 1 in commits:
        actions = [json.loads(line) for line in commits[version + 1].location.read_bytes().splitlines() if line.strip()]
        if any(
            a["txn"].get("appId") in app_ids if "txn" in a else "metaData" in a or "protocol" in a for a in actions
        ) or any(a["commitInfo"].get("operation") == "RESTORE" for a in actions if "commitInfo" in a):
            break
        version += 1
    return version


def _clean(value: Any) -> Any:
    """An action as binlake keeps it: absent fields (a checkpoint's nulls, a JSON commit's ``null``) dropped."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _tombstone_key(action: Mapping[str, Any]) -> str:
    """What a tombstone is kept under: the file's path, and the unique id of its deletion vector when it has one (a
    file re-added with a new deletion vector leaves its old one as a tombstone: time travel before it reads it)."""
    d = action.get("deletionVector")
    return action["path"] if d is None else f"{action['path']}#{dvs.DeletionVector.from_json(d).unique_id}"


class _State:
    def __init__(self) -> None:
        self.protocol: dict[str, Any] | None = None
        self.metadata: dict[str, Any] | None = None
        self.files: dict[str, dict[str, Any]] = {}
        self.txns: dict[str, int] = {}
        self.tombstones: dict[str, dict[str, Any]] = {}

    def apply_checkpoint(self, part: Location) -> None:
        with part.open_input() as f:
            pf = pq.ParquetFile(f)
            # its tombstones before its files: a file re-added with a new deletion vector has both (a remove of it
            # with the old one), and is in the table
            names = [n for n in ("protocol", "metaData", "txn", "remove", "add") if n in pf.schema_arrow.names]
            data = pf.read(columns=names)
        for name in names:
            column = data.column(name)
            rows = column.filter(pc.is_valid(column)).to_pylist(maps_as_pydicts="strict")
            for row in rows:
                self.apply(name, _clean(row))

    def apply_commit(self, actions: list[dict[str, Any]]) -> None:
        # a commit may remove and re-add one path (a new deletion vector): its removes go before its adds
        for action in sorted(actions, key=lambda a: "add" in a):
            for name, body in action.items():
                self.apply(name, body)

    def apply(self, name: str, body: dict[str, Any]) -> None:
        if name == "add":
            body.pop("stats_parsed", None)
            body.pop("partitionValues_parsed", None)
            self.files[body["path"]] = body
            self.tombstones.pop(_tombstone_key(body), None)
        elif name == "remove":
            self.files.pop(body["path"], None)
            self.tombstones[_tombstone_key(body)] = body
        elif name == "metaData":
            self.metadata = body
        elif name == "protocol":
            self.protocol = body
        elif name == "txn":
            self.txns[body["appId"]] = int(body["version"])


# -- reading data files ------------------------------------------------------------------------------------------


def scan_file(
    table: Location,
    path: str,
    schema: pa.Schema,
    deletion_vector: dvs.DeletionVector | None,
    columns: Sequence[str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of the data file ``path`` of ``table`` that the table holds (its deletion vector's rows left out),
    as record batches of ``schema`` (or its ``columns``): a column the file predates (ALTER TABLE ADD COLUMN
    upstream) reads as nulls, as Delta readers do."""
    deleted = None if deletion_vector is None else dvs.read_rows(table, deletion_vector)
    yield from scan_rows(file_location(table, path), schema, deleted, columns)


def scan_rows(
    file: Location, schema: pa.Schema, deleted: dvs.Rows | None, columns: Sequence[str] | None = None
) -> Iterator[pa.RecordBatch]:
    """:func:`scan_file` of the Parquet file ``file`` less its rows ``deleted`` (row indexes)."""
    wanted = pa.schema([schema.field(c) for c in columns]) if columns is not None else schema
    with file.open_input() as f:
        pf = pq.ParquetFile(f)
        keep = None if deleted is None else dvs.keep_mask(deleted, pf.metadata.num_rows)
        present = [n for n in wanted.names if n in pf.schema_arrow.names]
        at = 0
        for group in range(pf.num_row_groups):  # a row group at a time: its columns decode side by side
            part = pf.read_row_group(group, columns=present)
            if keep is not None:
                part, at = part.filter(pa.array(keep[at : at + part.num_rows])), at + part.num_rows
            for batch in part.to_batches():
                yield conform(batch, wanted)


def conform(data: _Data, schema: pa.Schema) -> _Data:
    """``data`` (a table or a record batch) with exactly the columns of ``schema``, cast to its types: one the data
    lacks (a file written before ALTER TABLE ADD COLUMN upstream) is null, one it has beyond them is left out."""
    names = data.schema.names
    cols = [
        data.column(names.index(f.name)).cast(f.type) if f.name in names else pa.nulls(data.num_rows, f.type)
        for f in schema
    ]
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(cols, schema=schema)
    return pa.Table.from_arrays(cols, schema=schema)


# -- writing commits --------------------------------------------------------------------------------------------------


def _now_ms() -> int:
    return int(time.time() * 1000)


def _delta_fields(schema: pa.Schema) -> list[dict[str, Any]]:
    from deltalake import Schema

    fields: list[dict[str, Any]] = json.loads(Schema.from_arrow(schema).to_json())["fields"]
    return fields


def reshaped(snap: Snapshot, schema: pa.Schema) -> bool:
    """Is ``schema`` more than ``snap``'s table's columns with columns added at the end: a column dropped, renamed,
    moved or of another type?"""
    have = [(f["name"], f["type"]) for f in json.loads(snap.metadata["schemaString"])["fields"]]
    want = [(f["name"], f["type"]) for f in _delta_fields(schema)]
    return want[: len(have)] != have


def table_actions(
    snap: Snapshot, *, schema: pa.Schema | None = None, deletion_vectors: bool = False, replace: bool = False
) -> list[Action]:
    """The ``protocol`` and ``metaData`` actions that make ``snap``'s table take ``schema``'s columns it lacks (added
    at the end, nullable; ``replace``: ``schema``'s columns exactly, an ALTER TABLE's) and, with
    ``deletion_vectors``, hold deletion vectors: reader 3 / writer 7 with the ``deletionVectors`` feature, every
    feature the old versions implied kept, and ``delta.enableDeletionVectors`` (PROTOCOL.md: writers only write DVs
    where it is true).  Nothing when the table has both already."""
    out: list[Action] = []
    meta = dict(snap.metadata)
    changed = False
    if schema is not None and replace:
        have = json.loads(meta["schemaString"])
        have["fields"] = _delta_fields(schema)
        meta["schemaString"] = json.dumps(have)
        changed = True
    elif schema is not None:
        from deltalake import Schema

        have = json.loads(meta["schemaString"])
        names = {f["name"] for f in have["fields"]}
        new = [f for f in schema if f.name not in names]
        if new:
            have["fields"] += json.loads(Schema.from_arrow(pa.schema(new)).to_json())["fields"]
            meta["schemaString"] = json.dumps(have)
            changed = True
    wanted = ({DV} if deletion_vectors else set()) | ({NTZ} if '"timestamp_ntz"' in meta["schemaString"] else set())
    reader, writer = snap.features
    if any(f not in reader or f not in writer for f in wanted):
        readers = (reader & {"columnMapping"} if int(snap.protocol["minReaderVersion"]) < 3 else reader) | wanted
        protocol = {"minReaderVersion": 3, "minWriterVersion": 7}
        out.append(
            {"protocol": {**protocol, "readerFeatures": sorted(readers), "writerFeatures": sorted(writer | readers)}}
        )
    if deletion_vectors:
        config = dict(meta.get("configuration") or {})
        if config.get("delta.enableDeletionVectors") != "true":
            meta["configuration"] = {**config, "delta.enableDeletionVectors": "true"}
            changed = True
    if changed:
        out.append({"metaData": meta})
    return out


def new_file(f: DataFile) -> Action:
    """The ``add`` of a new data file (:class:`~binlake.lake.records.DataFile`, written beside the table)."""
    add = {"path": urllib.parse.quote(f.path), "partitionValues": {}, "size": f.size, "modificationTime": f.mtime_ms,
           "dataChange": True, "stats": f.delta_stats()}  # fmt: skip
    if f.tags:
        add["tags"] = dict(f.tags)
    return {"add": add}


def txn(app_id: str, version: int) -> Action:
    """The application transaction ``(app_id, version)``: a commit that carries it is made once (a writer checks
    the table's ``txns`` first)."""
    return {"txn": {"appId": app_id, "version": version, "lastUpdated": _now_ms()}}


def remove(add: Mapping[str, Any]) -> Action:
    """The ``remove`` of a data file the table holds (its ``add`` action)."""
    return _remove(add, _now_ms())


def _remove(add: Mapping[str, Any], now: int) -> Action:
    body = {"path": add["path"], "deletionTimestamp": now, "dataChange": True, "extendedFileMetadata": True,
            "partitionValues": add.get("partitionValues") or {}, "size": add["size"]}  # fmt: skip
    for kept in ("tags", "deletionVector", "baseRowId", "defaultRowCommitVersion"):
        if add.get(kept) is not None:
            body[kept] = add[kept]
    return {"remove": body}


def delete_rows(snap: Snapshot, rows: Mapping[str, dvs.Rows]) -> list[Action]:
    """The actions that delete the rows ``rows[path]`` (row indexes) from each data file ``path`` of ``snap``
    (:func:`deletion_actions`, with the rows its deletion vector deleted already)."""
    changes: list[tuple[Mapping[str, Any], dvs.Rows, int, bool]] = []
    for path, new in rows.items():
        if path not in snap.files:
            raise LakeFormatError(f"no data file {path} in version {snap.version} of the table", file=snap.table.uri)
        old = snap.deletion_vector(path)
        every = np.unique(np.asarray(new, np.uint64))
        if old is not None:
            every = np.union1d(dvs.read_rows(snap.table, old), every)
        changes.append((snap.files[path], every, snap.num_records(path), True))
    return deletion_actions(snap.table, changes)


def deletion_actions(
    table: Location, files: Sequence[tuple[Mapping[str, Any], dvs.Rows, int, bool]], *, again: bool = False
) -> list[Action]:
    """The actions that make each data file of ``files`` hold all its rows but ``rows``: per file its ``add``
    action (as the table has it, ``committed``, or as a new file would be added), ``rows`` (sorted row indexes:
    every row deleted, those its deletion vector deletes now included) and its record count.

    A committed file gets a ``remove`` of its ``add`` and an ``add`` of it again with a deletion vector of ``rows``
    (statistics kept, with ``numRecords`` and ``tightBounds: false``: min/max may now be wider than the rows left),
    only the ``remove`` when no row of it is left, nothing when ``rows`` are those its deletion vector has.  A new
    file is added with a deletion vector of ``rows`` (without one when there are none), or not at all when no row
    of it is left.  ``again``: a committed file whose deletion vector has ``rows`` already gets it written again
    too (maintenance gathers a table's deletion vectors into one file).  New deletion vectors are written
    (:func:`binlake.lake.dv.write_deletion_vectors`, all of them into one file) before this returns."""
    now = _now_ms()
    union: dict[str, dvs.Rows] = {}
    adds: dict[str, tuple[Mapping[str, Any], int, bool]] = {}
    out: list[Action] = []
    for add, every, n, committed in files:
        path = add["path"]
        if every.size and int(every[-1]) >= n:
            raise LakeFormatError(f"row {int(every[-1])} of {path} deleted, a file of {n} rows", file=table.uri)
        old = add.get("deletionVector")
        if every.size == n:
            if committed:
                out.append(_remove(add, now))
        elif committed and (
            (old is None and not every.size) or (old is not None and every.size == old["cardinality"] and not again)
        ):
            continue  # nothing new deleted
        elif every.size:
            union[path], adds[path] = every, (add, n, committed)
        else:
            out.append({"add": dict(add)})
    for path, dv in dvs.write_deletion_vectors(table, union).items():
        was, n, committed = adds[path]
        add = dict(was)
        stats = _stats(add)
        stats["numRecords"] = n
        stats["tightBounds"] = False
        add.update(deletionVector=dv.to_json(), stats=json.dumps(stats), dataChange=True)
        out += [_remove(was, now), {"add": add}] if committed else [{"add": add}]
    return out


def commit(
    table: Location,
    plan: Callable[[Snapshot], list[Action] | None],
    *,
    fence: Callable[[], None],
    operation: str = "WRITE",
    parameters: Mapping[str, str] | None = None,
    create: pa.Schema | None = None,
) -> int | None:
    """Commit the actions ``plan`` makes of the table's newest snapshot as its next version; that version, or
    ``None`` when ``plan`` says there is nothing to commit (returns ``None``).  ``fence`` is called just before the
    commit file is written (``Lake.check``).  A commit another writer's beat is planned again on the new snapshot,
    up to a bound, with backoff.  Where there is no table, ``create`` (its columns) makes the commit its version 0,
    with its protocol and metadata (:meth:`Snapshot.new`, as ``plan``'s :func:`table_actions` left them): the table
    and its first files in one commit."""
    for attempt in range(_ATTEMPTS):
        snap = read_snapshot(table)
        if snap is None and create is not None:
            snap = Snapshot.new(table, create)
        if snap is None:
            raise StorageError("no Delta table here", file=table.uri)
        snap.check(write=True)
        actions = plan(snap)
        if actions is None:
            return None
        info = {"timestamp": _now_ms(), "operation": operation, "operationParameters": dict(parameters or {}),
                "engineInfo": _engine(), "txnId": str(uuid.uuid4()),
                "isBlindAppend": not any("remove" in a for a in actions)}  # fmt: skip
        if snap.version < 0:  # the protocol, then the metadata, as plan's table_actions left them
            given = {k: a for a in actions for k in a if k in ("protocol", "metaData")}
            first = [given.get(k, {k: v}) for k, v in (("protocol", snap.protocol), ("metaData", snap.metadata))]
            actions = [*first, *(a for a in actions if not given.keys() & a.keys())]
        else:
            info["readVersion"] = snap.version
        body = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in [{"commitInfo": info}, *actions])
        version = snap.version + 1
        fence()
        if (table / LOG / f"{version:020d}.json").create_bytes(body.encode("utf-8")):
            _checkpoint_if_due(table, version, snap)
            return version
        time.sleep(min(0.05 * 2**attempt, 2.0))
    raise StorageError(f"a Delta commit lost {_ATTEMPTS} races in a row to other writers", file=table.uri)


def _engine() -> str:
    from binlake.version import __version__

    return f"{_ENGINE}/{__version__}"


def _checkpoint_if_due(table: Location, version: int, snap: Snapshot) -> None:
    """A checkpoint of ``version`` by delta-rs when it is a multiple of the table's checkpoint interval."""
    config = snap.metadata.get("configuration") or {}
    interval = int(config.get("delta.checkpointInterval") or _CHECKPOINT_INTERVAL)
    if version and version % interval == 0:
        delta_table(table, version).create_checkpoint()


def delta_table(loc: Location, version: int | None = None) -> DeltaTable:
    """The Delta table at ``loc`` (as of ``version``) as delta-rs reads it, with the storage options of its
    location."""
    return DeltaTable(loc.delta_uri, version=version, storage_options=loc.delta_options())


def commit_batch(
    table: Location,
    *,
    batch: int,
    app_id: str,
    fence: Callable[[], None],
    adds: Sequence[DataFile] = (),
    deletes: Callable[[Snapshot], Mapping[str, dvs.Rows]] | None = None,
    schema: pa.Schema | None = None,
) -> int | None:
    """Commit batch ``batch`` (application transaction ``app_id``) to ``table`` once: the new files ``adds``, the
    rows ``deletes(snapshot)`` names deleted (row indexes per data file of that snapshot, planned again if another
    writer commits first), the columns of ``schema`` the table lacks; the version, or ``None`` when the table has
    the batch already."""

    def plan(snap: Snapshot) -> list[Action] | None:
        if snap.txns.get(app_id, -1) >= batch:
            return None
        rows = {p: r for p, r in (deletes(snap) if deletes else {}).items() if len(r)}
        actions = table_actions(snap, schema=schema, deletion_vectors=bool(rows))
        actions += delete_rows(snap, rows) if rows else []
        actions += [new_file(f) for f in adds]
        actions.append(txn(app_id, batch))
        return actions

    return commit(table, plan, fence=fence, operation="MERGE" if deletes else "WRITE", parameters={"batch": str(batch)})
