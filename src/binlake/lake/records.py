"""The values that cross a process or a file boundary in an ingest, as typed, versioned records with explicit JSON.

* :class:`Split`: a byte range of a :class:`~binlake.binlogs.BinlogFile` the driver plans and a task decodes (kept in
  the batch manifest);
* :class:`FileIdentity`: which binlog a file name stood for when the lake landed it (kept in the batch manifest);
* :class:`Statement`: what the driver learns from a batch's QUERY events (DDL, renames, XA outcomes);
* :class:`DataFile`, :class:`Emptied`, :class:`SkipRecord` and :class:`TaskReport`: what a task wrote and saw, sent
  to the driver as JSON (so a driver and executors running different binlake versions fail with a clear message
  instead of unpickling one another's classes);
* :class:`BatchManifest` and :class:`BatchDone`: a batch's plan, written before any table is touched, and its
  completion mark (``LAKE/_binlake/batches/NNNNNNNNNN.json`` and ``.done``);
* :class:`SnapshotPoint`, :class:`SnapshotColumn`, :class:`SnapshotTable`, :class:`SnapshotChunk`,
  :class:`SnapshotPlan` and :class:`ChunkDone`: a consistent snapshot's plan and each chunk's result
  (``LAKE/_binlake/snapshots/NNNNNNNNNN/``, :mod:`binlake.snapshot`).

Each record's JSON is an object with named fields; the top-level ones carry a ``version``.  A manifest or mark
written by an older binlake (version 1: no version field, positional lists) still reads; one from a newer binlake
fails with :class:`LakeFormatError` saying so.

Example::

    m = BatchManifest(3, (Split(BinlogFile("s3://b/binlog.000001", "binlog.000001", 1, 9000), 4, None),), {...})
    assert BatchManifest.from_json(m.to_json()) == m
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from binlake.binlogs import BinlogFile
from binlake.errors import BinlogError, ReplicationError, UnsupportedError
from binlake.replication.definitions import SnapshotColumn
from binlake.replication.position import Flavor, ResumePoint
from binlake.sql.statements import TableRef
from binlake.sql.temporary import TemporaryState

__all__ = [
    "BatchDone",
    "BatchFold",
    "BatchManifest",
    "ChunkDone",
    "DataFile",
    "Emptied",
    "FileIdentity",
    "LakeFormatError",
    "LakeSettings",
    "SkipRecord",
    "SnapshotChunk",
    "SnapshotPlan",
    "SnapshotPoint",
    "SnapshotTable",
    "Split",
    "Statement",
    "TaskReport",
    "check_version",
]


class LakeFormatError(BinlogError):
    """A record of the lake (a manifest, a completion mark, a task report) that this binlake cannot read."""


def check_version(kind: str, found: object, known: int, where: str | None = None) -> None:
    """Refuse a record of format version ``found`` where this binlake reads ``known``."""
    if found != known:
        raise LakeFormatError(
            f"{kind} has format version {found!r}, this binlake reads version {known} and older: it was written by "
            "another binlake version (install the same version on the driver and the executors)",
            file=where,
        )


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """Which binlog a file is, beyond its name: the server that started it (``server_id``), when
    (``created``: its FORMAT_DESCRIPTION's header timestamp, kept by a server's replication stream too), and a
    SHA-256 ``digest`` of its first ``prefix`` bytes (:mod:`binlake.ingest.identity`).  A server never changes a
    byte it wrote but the FORMAT_DESCRIPTION's in-use flag (cleared when it closes the file), which the digest
    leaves out, so a file's identity holds from its head as it grows, whatever it is called."""

    server_id: int
    created: int
    prefix: int
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"server_id": self.server_id, "created": self.created, "prefix": self.prefix, "digest": self.digest}

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> FileIdentity:
        return cls(int(v["server_id"]), int(v["created"]), int(v["prefix"]), str(v["digest"]))


@dataclass(frozen=True, slots=True)
class Split:
    """A byte range ``[start, stop)`` of one file decoded by one task; ``stop`` ``None`` means to the end."""

    file: BinlogFile
    start: int
    stop: int | None
    index: int = 0

    @property
    def end(self) -> int:
        """Where the range ends: ``stop``, or the file's size when planned."""
        return self.stop if self.stop is not None else self.file.size

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file.to_json(), "start": self.start, "stop": self.stop, "index": self.index}

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> Split:
        stop = v["stop"]
        return cls(
            BinlogFile.from_json(v["file"]), int(v["start"]), None if stop is None else int(stop), int(v["index"])
        )


@dataclass(frozen=True, slots=True)
class Statement:
    """What the driver learnt at ``seq``: ``kind`` ``ddl`` (a statement that changed the tracked schema, run in a
    session whose temporary tables were ``scope``), ``rename`` (``pairs`` of base tables ``(db, table)`` from ->
    to, in execution order), ``xa`` (``xid`` resolved; ``rolled_back``) or ``temporary`` (the sessions' temporary
    tables from ``seq`` on: ``temporary``, recorded where a split starts and where the batch ends, if changed).
    ``collation_server``: the DDL's session's (:func:`binlake.schema.server_collation`; a table created without a
    charset may take it), ``None`` where not logged.

    A record of the batch manifest: :meth:`to_json` writes version :attr:`VERSION` (``collation_server`` only where
    known: a record without it reads as before), :meth:`from_json` reads it and the positional lists of version 1
    (no ``scope``, no ``temporary`` kind)."""

    VERSION: ClassVar[int] = 2

    kind: Literal["ddl", "rename", "xa", "temporary"]
    seq: int
    file: str
    pos: int
    db: str | None = None
    sql_mode: int = 0
    query: str = ""
    pairs: tuple[tuple[TableRef, TableRef], ...] = ()
    xid: str = ""
    rolled_back: bool = False
    scope: tuple[TableRef, ...] = ()  # folded names (binlake.sql.statements.folded)
    temporary: TemporaryState | None = None
    collation_server: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.VERSION, "kind": self.kind, "seq": self.seq}
        out.update(file=self.file, pos=self.pos)
        if self.kind in ("ddl", "rename"):
            out.update(db=self.db, sql_mode=self.sql_mode, query=self.query)
        if self.pairs:
            out["pairs"] = [[list(a), list(b)] for a, b in self.pairs]
        if self.kind == "xa":
            out.update(xid=self.xid, rolled_back=self.rolled_back)
        if self.scope:
            out["scope"] = [list(t) for t in self.scope]
        if self.temporary is not None:
            out["temporary"] = self.temporary.to_json()
        if self.collation_server is not None:
            out["collation_server"] = self.collation_server
        return out

    @classmethod
    def from_json(cls, v: dict[str, Any] | Sequence[Any]) -> Statement:
        if not isinstance(v, dict):  # version 1
            pairs = tuple((_ref(a), _ref(b)) for a, b in v[7])
            return cls(v[0], int(v[1]), v[2], v[3], v[4], v[5], v[6], pairs, v[8], v[9])
        if v.get("version") != cls.VERSION:
            raise UnsupportedError(
                f"a statement record of version {v.get('version')!r} (this binlake reads "
                f"version {cls.VERSION}): written by another binlake"
            )
        temporary = v.get("temporary")
        return cls(
            v["kind"],
            int(v["seq"]),
            v["file"],
            int(v["pos"]),
            v.get("db"),
            int(v.get("sql_mode", 0)),
            v.get("query", ""),
            tuple((_ref(a), _ref(b)) for a, b in v.get("pairs", ())),
            v.get("xid", ""),
            bool(v.get("rolled_back", False)),
            tuple(_ref(t) for t in v.get("scope", ())),
            TemporaryState.from_json(temporary) if temporary is not None else None,
            v.get("collation_server"),
        )


def _ref(v: Sequence[Any]) -> TableRef:
    return (str(v[0]), str(v[1]))


@dataclass(frozen=True, slots=True)
class DataFile:
    """A Parquet file written by a task or the driver, not yet part of any table: ``table`` is the lake table's key
    (``db/table``, or ``_events``), ``path`` relative to the table's folder, ``schema`` the serialized Arrow schema
    of the file, ``stats`` its Delta statistics (the JSON text of an ``add`` action's ``stats``: a current-state
    file's key and ``_seq`` bounds, :func:`binlake.lake.files.delta_stats`; ``None``: only its row count is known),
    ``tags`` the ``add`` action's tags (a current-state file's promise that its rows are sorted by the key:
    :func:`binlake.lake.files.sorted_by`).  A record without ``stats`` or ``tags`` (an older binlake's) reads as
    ``None``."""

    table: str
    path: str
    size: int
    rows: int
    mtime_ms: int
    schema: bytes
    stats: str | None = None
    tags: dict[str, str] | None = None

    @property
    def arrow_schema(self) -> Any:
        import pyarrow as pa

        return pa.ipc.read_schema(pa.py_buffer(self.schema))

    def to_json(self) -> dict[str, Any]:
        out = {"table": self.table, "path": self.path, "size": self.size, "rows": self.rows,
               "mtime_ms": self.mtime_ms, "schema": self.schema.hex()}  # fmt: skip
        if self.stats is not None:
            out["stats"] = self.stats
        if self.tags:
            out["tags"] = dict(self.tags)
        return out

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> DataFile:
        stats, tags = v.get("stats"), v.get("tags")
        return cls(v["table"], v["path"], int(v["size"]), int(v["rows"]), int(v["mtime_ms"]),
                   bytes.fromhex(v["schema"]), None if stats is None else str(stats),
                   {str(k): str(t) for k, t in tags.items()} if tags else None)  # fmt: skip

    def delta_stats(self) -> str:
        """The ``stats`` of the file's ``add`` action: :attr:`stats`, or its row count alone."""
        return self.stats if self.stats is not None else json.dumps({"numRecords": self.rows})


@dataclass(frozen=True, slots=True)
class Emptied:
    """A statement that empties a table without row events (TRUNCATE, DROP, CREATE OR REPLACE) at ``seq``; ``key``
    is the table's (``db/table``), or a database's (``db/``: DROP DATABASE, every table of it)."""

    key: str
    seq: int

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "seq": self.seq}

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> Emptied:
        return cls(v["key"], int(v["seq"]))


@dataclass(frozen=True, slots=True)
class SkipRecord:
    """What ``--on-error skip-*`` skipped (a row of the lake's ``_skips`` table, without its batch)."""

    file: str
    start: int
    end: int
    reason: str
    events_lost: int
    resynced: bool
    transaction_start: int | None

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "start": self.start, "end": self.end, "reason": self.reason,
                "events_lost": self.events_lost, "resynced": self.resynced,
                "transaction_start": self.transaction_start}  # fmt: skip

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> SkipRecord:
        ts = v["transaction_start"]
        return cls(v["file"], int(v["start"]), int(v["end"]), v["reason"], int(v["events_lost"]), bool(v["resynced"]),
                   None if ts is None else int(ts))  # fmt: skip


@dataclass(frozen=True, slots=True)
class TaskReport:
    """What one task wrote for one split, for the driver to commit: each table's Parquet files, the events' file,
    the row changes per ``"db/table op"``, the statements emptying tables, the XA transactions prepared without an
    outcome in the batch (XID -> their tables -> the map id of the table map their rows of it were logged with), the
    skips, and per keyed table the staged file of the last change of each key (its path below the batch's staging
    folder; ``""``: no change of the split counts; absent: the split gives none, see :mod:`binlake.ingest.tasks`)."""

    VERSION = 2

    split: int
    files: tuple[DataFile, ...] = ()
    events: tuple[DataFile, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    emptied: tuple[Emptied, ...] = ()
    prepared: dict[str, dict[str, str]] = field(default_factory=dict)
    skips: tuple[SkipRecord, ...] = ()
    current: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.VERSION,
                "split": self.split,
                "files": [f.to_json() for f in self.files],
                "events": [f.to_json() for f in self.events],
                "counts": self.counts,
                "emptied": [e.to_json() for e in self.emptied],
                "prepared": self.prepared,
                "skips": [s.to_json() for s in self.skips],
                "current": self.current,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> TaskReport:
        v = json.loads(text)
        check_version("a task report (from an executor)", v.get("version"), cls.VERSION, None)
        return cls(
            int(v["split"]),
            tuple(DataFile.from_json(f) for f in v["files"]),
            tuple(DataFile.from_json(f) for f in v["events"]),
            {k: int(n) for k, n in v["counts"].items()},
            tuple(Emptied.from_json(e) for e in v["emptied"]),
            {x: {str(k): str(m) for k, m in t.items()} for x, t in v["prepared"].items()},
            tuple(SkipRecord.from_json(s) for s in v["skips"]),
            dict(v["current"]),
        )


@dataclass(frozen=True, slots=True)
class BatchManifest:
    """A batch's plan, written before any table is touched: its byte ranges, the position of every file after it,
    the schema in force where it starts (``schema``: :func:`binlake.ingest.statements.tracker_to_json`'s format,
    the schema tracker's own) and the statements its QUERY events hold.  A batch re-run after a crash decodes
    exactly these ranges.

    ``resume``: where the binlog stream goes on after the batch, the end of its last whole transaction, with the
    GTID state there (:class:`~binlake.replication.position.ResumePoint`, its own versioned JSON): committed with
    the batch's tables, it is what a live ingest (``binlake ingest --host``) streams from next.  ``None`` before
    the first batch of a lake, and in manifests of version 2 and older.

    ``identities``: the identity of every file landed so far, by name (version 4 on; empty before).  ``rewinds``: this
    batch lands no range but takes the lake back to what it was before batch ``rewinds`` (every table, its
    positions, schema and files), because that batch stopped inside a transaction (binlake before version 4 of
    this record landed the whole events of a file cut short, not its whole transactions); the batches after it
    land those ranges again."""

    VERSION = 4
    READS = (2, 3, 4)  # the versions with a version field this binlake reads (version 1 has none)

    batch: int
    splits: tuple[Split, ...]
    positions: dict[str, int]
    schema: dict[str, Any] | list[Any] = field(default_factory=list)
    statements: tuple[Statement, ...] = ()
    resume: ResumePoint | None = None
    identities: dict[str, FileIdentity] = field(default_factory=dict)
    rewinds: int | None = None

    @property
    def files(self) -> int:
        return len({s.file.name for s in self.splits})

    @property
    def bytes(self) -> int:
        return sum(s.end - s.start for s in self.splits)

    @property
    def outcomes(self) -> dict[str, bool]:
        """The XA transactions the batch's statements decide: XID -> rolled back (the last outcome of each)."""
        return {s.xid: s.rolled_back for s in self.statements if s.kind == "xa"}

    @property
    def renames(self) -> list[Statement]:
        """The batch's ``RENAME TABLE`` statements (and ``ALTER TABLE ... RENAME``), in binlog order."""
        return [s for s in self.statements if s.kind == "rename"]

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.VERSION,
                "batch": self.batch,
                "splits": [s.to_json() for s in self.splits],
                "positions": self.positions,
                "schema": self.schema,
                "statements": [s.to_json() for s in self.statements],
                "resume": None if self.resume is None else json.loads(self.resume.to_json()),
                "identities": {name: f.to_json() for name, f in self.identities.items()},
                "rewinds": self.rewinds,
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str, where: str | None = None) -> BatchManifest:
        """Read a manifest; ``where`` names it in errors.  Version 3 (no file identities), version 2 (no resume
        point either) and version 1 (binlake 0.1: no version, splits and statements as positional lists) read
        too."""
        try:
            v = json.loads(text)
        except ValueError as e:
            raise LakeFormatError(f"a batch manifest that is not JSON: {e}", file=where) from None
        if "version" not in v:
            return cls._from_v1(v)
        if v["version"] not in cls.READS:
            check_version("this batch manifest", v["version"], cls.VERSION, where)
        resume = v.get("resume")
        try:
            point = None if resume is None else ResumePoint.from_json(json.dumps(resume))
        except ReplicationError as e:
            raise LakeFormatError(f"a batch manifest whose resume point does not read: {e}", file=where) from None
        return cls(
            int(v["batch"]),
            tuple(Split.from_json(s) for s in v["splits"]),
            {k: int(p) for k, p in v["positions"].items()},
            v["schema"],
            tuple(Statement.from_json(s) for s in v["statements"]),
            point,
            {name: FileIdentity.from_json(f) for name, f in v.get("identities", {}).items()},
            None if v.get("rewinds") is None else int(v["rewinds"]),
        )

    @classmethod
    def _from_v1(cls, v: dict[str, Any]) -> BatchManifest:
        splits = tuple(
            Split(BinlogFile(s[0], s[1], int(s[2]), int(s[3])), int(s[4]), s[5], int(s[6])) for s in v["splits"]
        )
        statements = tuple(Statement.from_json(s) for s in v.get("statements", []))  # positional: their version 1
        return cls(
            int(v["batch"]), splits, {k: int(p) for k, p in v["positions"].items()}, v.get("schema", []), statements
        )


@dataclass(frozen=True, slots=True)
class BatchDone:
    """A batch's completion mark: what it leaves for the next batch, the XA transactions prepared and still waiting
    for their ``XA COMMIT``/``ROLLBACK`` (XID -> the tables their changes are in), and what a reader of the lake as
    of this batch reads: ``tables``, the Delta version of every table of the lake once the batch was committed (its
    folder below the lake's root, ``db/t/changes``, ``_events`` ... -> version; :meth:`binlake.lake.lake.Lake.
    snapshot`).  ``tables`` is ``None`` in a mark of version 2 and older (binlake before it), and a reader then
    finds the versions in the tables' logs.

    ``xa_layouts``: for a waiting XA transaction, per table, the layout its rows were logged with: per column of that
    table map, its change-table column and its name in the table (``[[stored, name], ...]``).  The batch that commits
    the transaction alone logs no table map of it, and a column renamed since the layout landed (maps that log no
    names) is still under its landed name in the change table.  Version 4 on; empty in older marks (their waiting
    transactions are read by the table's columns, as binlake before it did)."""

    VERSION = 4
    READS = (2, 3, 4)  # the versions with a version field this binlake reads (binlake 0.1's marks have none)

    xa_pending: dict[str, tuple[str, ...]] = field(default_factory=dict)
    tables: dict[str, int] | None = None
    xa_layouts: dict[str, dict[str, tuple[tuple[str, str], ...]]] = field(default_factory=dict)

    def to_json(self) -> str:
        pending = {x: sorted(k) for x, k in sorted(self.xa_pending.items())}
        out: dict[str, Any] = {"version": self.VERSION, "xa_pending": pending}
        if self.tables is not None:
            out["tables"] = dict(sorted(self.tables.items()))
        if self.xa_layouts:
            out["xa_layouts"] = {
                x: {k: [list(c) for c in cols] for k, cols in sorted(t.items())}
                for x, t in sorted(self.xa_layouts.items())
            }
        return json.dumps(out)

    @classmethod
    def from_json(cls, text: str, where: str | None = None) -> BatchDone:
        """Read a mark; one of version 3 (no ``xa_layouts``), version 2 (no ``tables`` either) or of binlake 0.1 (no
        version; empty, or only ``xa_pending``) reads too."""
        v = json.loads(text) if text.strip() else {}
        if "version" in v and v["version"] not in cls.READS:
            check_version("this batch's completion mark", v["version"], cls.VERSION, where)
        tables = v.get("tables")
        layouts = {
            x: {str(k): tuple((str(s), str(n)) for s, n in cols) for k, cols in t.items()}
            for x, t in v.get("xa_layouts", {}).items()
        }
        return cls({x: tuple(k) for x, k in v.get("xa_pending", {}).items()},
                   None if tables is None else {str(k): int(n) for k, n in tables.items()}, layouts)  # fmt: skip


@dataclass(frozen=True, slots=True)
class BatchFold:
    """Finished batches' manifests and completion marks folded into one record by maintenance
    (``LAKE/_binlake/batches/AAAAAAAAAA-BBBBBBBBBB.fold``, batches A to B): each kept as the JSON text of its own
    record (``manifests``, ``marks``: batch -> text), so it reads as it would from its own file, whatever version
    it was written in."""

    VERSION: ClassVar[int] = 1

    manifests: dict[int, str]
    marks: dict[int, str]

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "manifests": {str(b): t for b, t in sorted(self.manifests.items())},
                           "marks": {str(b): t for b, t in sorted(self.marks.items())}})  # fmt: skip

    @classmethod
    def from_json(cls, text: str, where: str | None = None) -> BatchFold:
        v = json.loads(text)
        check_version("a fold of batch records", v.get("version"), cls.VERSION, where)
        return cls({int(b): str(t) for b, t in v["manifests"].items()}, {int(b): str(t) for b, t in v["marks"].items()})


@dataclass(frozen=True, slots=True)
class LakeSettings:
    """How a lake lays out what it writes (``LAKE/_binlake/settings.json``; a lake without the file has the
    defaults).  ``current_layout``: how a batch removes the old rows of the keys it changes from a current-state
    table's files: ``dv`` (the default) marks them in a deletion vector per file (the table needs reader 3 / writer
    7 with the ``deletionVectors`` feature), ``cow`` rewrites every file it touches without them (copy-on-write:
    the table keeps its protocol, a batch writes whole files again).  See :mod:`binlake.lake.current`.
    ``retention``: seconds maintenance keeps what a version of a table within them needs (time travel works
    within it; Delta's default ``delta.deletedFileRetentionDuration`` of 7 days): :mod:`binlake.lake.maintain`."""

    VERSION: ClassVar[int] = 1
    LAYOUTS: ClassVar[tuple[str, ...]] = ("dv", "cow")
    RETENTION: ClassVar[float] = 7 * 86400.0

    current_layout: Literal["dv", "cow"] = "dv"
    retention: float = RETENTION

    def __post_init__(self) -> None:
        if self.current_layout not in self.LAYOUTS:
            raise LakeFormatError(f"current_layout {self.current_layout!r} is not one of {', '.join(self.LAYOUTS)}")
        if not self.retention >= 0:
            raise LakeFormatError(f"retention {self.retention!r} is not a number of seconds >= 0")

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "current_layout": self.current_layout, "retention": self.retention})

    @classmethod
    def from_json(cls, text: str, where: str | None = None) -> LakeSettings:
        """Read the settings; a file of an earlier binlake (no ``retention``) has the default retention."""
        v = json.loads(text)
        check_version("the lake's settings", v.get("version"), cls.VERSION, where)
        return cls(v.get("current_layout", "dv"), float(v.get("retention", cls.RETENTION)))


# -- the consistent snapshot (binlake.snapshot) -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class SnapshotPoint:
    """Where a consistent snapshot stands in the binlog: every transaction that ends at or before ``position`` of
    ``file`` (the binlog point of the transaction that read it: :func:`binlake.snapshot.server.begin_snapshot`) is
    in it, none after; ``seq`` orders files (the numeric extension of the binlog's name); ``gtid`` is the GTID state
    there (MariaDB's ``BINLOG_GTID_POS``, MySQL's executed GTID set), ``None`` where unknown; ``flavor`` says which
    (a record without one was written when only MariaDB was snapshotted).  Points order by ``(seq, position)``."""

    seq: int
    position: int
    file: str = field(compare=False)
    gtid: str | None = field(default=None, compare=False)
    flavor: Flavor | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "seq": self.seq, "position": self.position, "gtid": self.gtid, "flavor": self.flavor}

    def resume_point(self) -> ResumePoint:
        """The point as the stream's :class:`~binlake.replication.position.ResumePoint`."""
        return ResumePoint(self.file, self.position, self.gtid, self.flavor)

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> SnapshotPoint:
        gtid = v.get("gtid")
        flavor = v.get("flavor", "mariadb")
        if flavor not in ("mariadb", "mysql", None):
            raise LakeFormatError(f"a snapshot point of an unknown server flavor {flavor!r}")
        return cls(int(v["seq"]), int(v["position"]), str(v["file"]), None if gtid is None else str(gtid), flavor)


@dataclass(frozen=True, slots=True)
class SnapshotTable:
    """One table of a snapshot: its lake key (``db/table``), names, columns, primary key (column names in key
    order, empty: none) and ``SHOW CREATE TABLE`` text (which seeds the lake's schema history)."""

    key: str
    database: str
    name: str
    columns: tuple[SnapshotColumn, ...]
    primary_key: tuple[str, ...]
    create: str
    rows: int = 0  # the server's estimate when planned (information_schema.TABLES.TABLE_ROWS)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "database": self.database, "name": self.name,
                "columns": [c.to_json() for c in self.columns], "primary_key": list(self.primary_key),
                "create": self.create, "rows": self.rows}  # fmt: skip

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> SnapshotTable:
        return cls(str(v["key"]), str(v["database"]), str(v["name"]),
                   tuple(SnapshotColumn.from_json(c) for c in v["columns"]), tuple(v["primary_key"]), str(v["create"]),
                   int(v.get("rows", 0)))  # fmt: skip


@dataclass(frozen=True, slots=True)
class SnapshotChunk:
    """Chunk ``index`` of a snapshot: the rows of table ``table`` (its key) whose first primary-key column (an
    integer) is in ``[lo, hi)`` (``None``: unbounded on that side; both ``None``: the whole table)."""

    index: int
    table: str
    lo: int | None = None
    hi: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "table": self.table, "lo": self.lo, "hi": self.hi}

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> SnapshotChunk:
        lo, hi = v.get("lo"), v.get("hi")
        return cls(int(v["index"]), str(v["table"]), None if lo is None else int(lo), None if hi is None else int(hi))

    def contains(self, first_key: object) -> bool:
        """Is a row whose first key column holds ``first_key`` in this chunk?"""
        if self.lo is None and self.hi is None:
            return True
        if not isinstance(first_key, int):
            return False
        return (self.lo is None or first_key >= self.lo) and (self.hi is None or first_key < self.hi)


@dataclass(frozen=True, slots=True)
class SnapshotPlan:
    """A snapshot's plan, written before any chunk is read: the lake batch it lands as, the point of the planning
    transaction (where every table's columns and the chunk bounds were read), the tables and the chunks."""

    VERSION: ClassVar[int] = 1

    batch: int
    point: SnapshotPoint
    tables: tuple[SnapshotTable, ...]
    chunks: tuple[SnapshotChunk, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.VERSION,
                "batch": self.batch,
                "point": self.point.to_json(),
                "tables": [t.to_json() for t in self.tables],
                "chunks": [c.to_json() for c in self.chunks],
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str, where: str | None = None) -> SnapshotPlan:
        v = json.loads(text)
        check_version("this snapshot plan", v.get("version"), cls.VERSION, where)
        return cls(
            int(v["batch"]),
            SnapshotPoint.from_json(v["point"]),
            tuple(SnapshotTable.from_json(t) for t in v["tables"]),
            tuple(SnapshotChunk.from_json(c) for c in v["chunks"]),
        )


@dataclass(frozen=True, slots=True)
class ChunkDone:
    """A chunk read and written: the point of the transaction that read it, its rows, and its Parquet files in
    the change table and (keyed tables) the current-state table, not committed yet."""

    VERSION: ClassVar[int] = 1

    chunk: int
    point: SnapshotPoint
    rows: int
    changes: DataFile | None
    current: DataFile | None

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.VERSION,
                "chunk": self.chunk,
                "point": self.point.to_json(),
                "rows": self.rows,
                "changes": None if self.changes is None else self.changes.to_json(),
                "current": None if self.current is None else self.current.to_json(),
            }
        )

    @classmethod
    def from_json(cls, text: str, where: str | None = None) -> ChunkDone:
        v = json.loads(text)
        check_version("a snapshot chunk's record", v.get("version"), cls.VERSION, where)
        ch, cur = v.get("changes"), v.get("current")
        return cls(
            int(v["chunk"]),
            SnapshotPoint.from_json(v["point"]),
            int(v["rows"]),
            None if ch is None else DataFile.from_json(ch),
            None if cur is None else DataFile.from_json(cur),
        )
