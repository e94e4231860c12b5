"""What the driver learns from a batch's QUERY events before any task runs: DDL, renames and XA outcomes.

Four things a task cannot know from its own byte range:

* the **schema** in force where its range starts: MariaDB 5.3 fractional TIME/DATETIME/TIMESTAMP columns are sized
  by their ``CREATE TABLE`` (:mod:`binlake.schema`), which may be in an earlier split, file or batch;
* each session's **temporary tables** there (:mod:`binlake.sql.temporary`): a ``TRUNCATE t`` or ``DROP TABLE t``
  in a session that created a ``TEMPORARY TABLE t`` empties that table, not the base table ``t``;
* the **outcome of XA transactions** it prepares: the rows are logged at ``XA PREPARE`` (MySQL's and MariaDB's
  XA_PREPARE_LOG_EVENT) and the ``XA COMMIT``/``XA ROLLBACK`` comes later as a separate statement;
* **table renames** (``RENAME TABLE a TO b``, ``ALTER TABLE a ... RENAME TO b``), which move a table's current
  state to another name (a temporary table's never).

:func:`scan_statements` finds them with a header walk that decodes only the format descriptions (a server start
forgets every temporary table) and the QUERY events whose bytes may hold such a statement (a regular expression on
the raw event: cheap; ``CREATE TEMPORARY`` passes as every ``CREATE`` does), falling back to a full decode for
encrypted or damaged files.  The schema and the sessions' temporary tables travel as JSON (:func:`tracker_to_json`)
with the batch's DDL (each with the temporary tables of its session, which it does not act on) and the sessions'
temporary tables where each split starts, when they changed; a task rebuilds the tracker of its split start with
:func:`tracker_at`.

Example::

    tracker = SchemaTracker()
    found = scan_statements(splits, tracker, ReadSpec())
    [s.query for s in found if s.kind == "ddl"]        # what changed the schema, in binlog order
    {s.xid: s.rolled_back for s in found if s.kind == "xa"}
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from binlake.decoder import Decryptor
from binlake.errors import BinlogError, UnsupportedError
from binlake.events.base import Event, EventType
from binlake.events.context import DecodeOptions
from binlake.events.format import FormatDescriptionEvent, StartV3Event
from binlake.events.query import QueryEvent
from binlake.events.table_map import TableMapEvent
from binlake.lake.records import Split, Statement
from binlake.reader import HeaderCache, byte_ranges, header_table, read_events, span, walk_headers
from binlake.recovery import OnError, Skipped, read_events_recovering
from binlake.schema import SchemaTracker, TableSchema, TrackedColumn, server_collation
from binlake.sql.lexer import leading_keyword
from binlake.sql.statements import RENAMING_KEYWORDS, SCHEMA_KEYWORDS, Scope, renames, xa_outcome
from binlake.sql.temporary import TemporaryState
from binlake.transactions import QUERY_EVENTS

__all__ = [
    "SEQ_FILE",
    "SEQ_POS",
    "START_EVENTS",
    "ReadSpec",
    "Statement",
    "TableMapSink",
    "open_split",
    "scan_statements",
    "tracker_at",
    "tracker_from_json",
    "tracker_to_json",
]

E = EventType
SEQ_FILE = 10**20
SEQ_POS = 10**10
START_EVENTS = frozenset({E.FORMAT_DESCRIPTION_EVENT, E.START_EVENT_V3})
"""The events that may say the server started (``create_timestamp`` set), which forgets every temporary table."""
_MAPS = frozenset({E.TABLE_MAP_EVENT, E.TRANSACTION_PAYLOAD_EVENT})  # table maps, and payloads that may hold some
# The events to look at in a header walk's type codes (one byte per event), without and with the table maps.
_PICK = re.compile(b"[%s]" % re.escape(bytes(sorted(QUERY_EVENTS | START_EVENTS))))
_PICK_MAPS = re.compile(b"[%s]" % re.escape(bytes(sorted(QUERY_EVENTS | START_EVENTS | _MAPS))))
# A QUERY event's statement follows the NUL that ends its default database (Query_log_event::write in MariaDB's
# sql/log_event_server.cc): a NUL, then a statement whose first keyword makes it worth decoding the event for (the
# DDL the schema tracker follows, renames, XA outcomes)
_CANDIDATE = leading_keyword(SCHEMA_KEYWORDS | RENAMING_KEYWORDS | {"XA"}, after=b"\x00")


@dataclass(frozen=True, slots=True)
class ReadSpec:
    """How tasks and the driver read binlogs: decoding options, the decryptor of encrypted MariaDB logs, and what to
    do at a damaged event (:mod:`binlake.recovery`).  Pickled to executors with each task."""

    options: DecodeOptions = field(default_factory=DecodeOptions)
    decryptor: Decryptor | None = None
    on_error: OnError = "stop"


# -- reading a split -----------------------------------------------------------------------------------------------


class _TrackFrom(SchemaTracker):
    """A tracker that ignores the DDL before ``start``: where a file's header events are damaged the recovering
    reader decodes it from its first event, while the tracker already holds the schema at the split's start."""

    __slots__ = ("start",)

    def __init__(self, base: SchemaTracker, start: int) -> None:
        super().__init__(base.tables, base.temporary.state, base.databases)
        self.start = start

    def observe(self, ev: QueryEvent) -> bool:
        return ev.header.pos >= self.start and super().observe(ev)

    def started(self, ev: FormatDescriptionEvent | StartV3Event) -> None:
        if ev.header.pos >= self.start:
            super().started(ev)


def open_split(
    split: Split, read: ReadSpec, schema: SchemaTracker | None = None, skips: list[Skipped] | None = None
) -> Iterator[Event]:
    """The events of ``split`` read as ``read`` says; under ``on_error`` ``skip-*`` each skip that starts in the
    split is appended to ``skips`` (the recovering reader starts at the split, after the file's header events; where
    those are damaged it reads the file from its start, and splits of one file do not report each other's skips)."""
    f = split.file
    if read.on_error == "stop":
        yield from read_events(
            f.source,
            options=read.options,
            start=split.start if split.start > 4 else None,
            stop=split.stop,
            decryptor=read.decryptor,
            schema=schema,
        )
        return
    stop = split.stop if split.stop is not None else 1 << 62

    def keep(s: Skipped) -> None:
        if skips is not None and split.start <= max(s.start, 4) < stop:
            skips.append(s)

    events = read_events_recovering(
        f.source,
        on_error=read.on_error,
        on_skip=keep,
        options=read.options,
        decryptor=read.decryptor,
        schema=_TrackFrom(schema, split.start) if schema is not None else None,
        start=split.start if split.start > 4 else None,
    )
    for ev in events:
        pos = ev.header.pos if ev.header.in_payload is None else ev.header.in_payload
        if pos >= stop:
            break
        if pos >= split.start:
            yield ev


# -- the driver's scan ------------------------------------------------------------------------------------------


TableMapSink = Callable[[Split, int, TableMapEvent], None]


def _surveyed(
    split: Split, read: ReadSpec, tracker: SchemaTracker, maps: bool, headers: HeaderCache | None = None
) -> Iterator[tuple[int, Event]]:
    """The format descriptions and the QUERY events of ``split`` that may be DDL or XA outcomes and, with ``maps``,
    its table maps (also those in MySQL TRANSACTION_PAYLOAD events), in binlog order, each with its position:
    decoded one by one after a header walk (``headers``' when given; identical table maps once per schema state),
    or by a full read where the header walk cannot see the type codes (encrypted logs) or fails (damage)."""
    f = split.file
    source = f.source
    wanted: list[tuple[int, int]] = []
    try:
        if any(h.type_code == E.START_ENCRYPTION_EVENT for h in itertools.islice(walk_headers(source, 4), 3)):
            raise BinlogError("encrypted: the header walk sees ciphertext type codes")
        if headers is not None:
            table = headers.table(source, split.start, split.stop)
        else:
            table = header_table(source, split.start, split.stop)
        error = table.error()
        if error is not None:
            raise error
        codes, positions, sizes = table.codes, table.positions, table.sizes
        with byte_ranges(source) as m:
            for found in (_PICK_MAPS if maps else _PICK).finditer(codes):
                i = found.start()
                pos, code = positions[i], codes[i]
                if code != E.QUERY_EVENT or _CANDIDATE.search(*span(m, pos, pos + sizes[i])):
                    wanted.append((pos, code))
    except BinlogError:
        shadow = tracker.copy()  # the reader's own, following the DDL as it reads
        for ev in open_split(split, read, shadow if maps else None):
            followed = isinstance(ev, QueryEvent | FormatDescriptionEvent | StartV3Event)
            if (followed and ev.header.in_payload is None) or (maps and isinstance(ev, TableMapEvent)):
                yield (ev.header.pos if ev.header.in_payload is None else ev.header.in_payload), ev
        return
    known: dict[tuple[bytes, int], TableMapEvent] = {}  # identical table-map bytes decode the same in one schema
    crc = 0  # bytes of the checksum (it covers the header, so identical maps differ there): known after a decode
    with byte_ranges(source) as m:
        for pos, code in wanted:
            if code == E.TABLE_MAP_EVENT:
                size = int.from_bytes(m[pos + 9 : pos + 13], "little")
                key = (m[pos + 19 : pos + size - crc], tracker.generation)
                hit = known.get(key)
                if hit is not None:
                    yield pos, hit
                    continue
            try:
                schema = tracker if code in _MAPS else None  # the caller follows statements and starts itself
                events = list(
                    read_events(
                        source, options=read.options, start=pos, stop=pos + 1, decryptor=read.decryptor, schema=schema
                    )
                )
            except BinlogError:
                if read.on_error == "stop":
                    raise
                continue  # a damaged event: the task that reads it skips it and reports the skip
            for ev in events:
                if isinstance(ev, TableMapEvent):
                    if code == E.TABLE_MAP_EVENT:
                        crc = 0 if ev.header.checksum is None else 4
                        known[(m[pos + 19 : pos + size - crc], tracker.generation)] = ev
                    yield pos, ev
                elif isinstance(ev, QueryEvent | FormatDescriptionEvent | StartV3Event):
                    yield pos, ev


def scan_statements(
    splits: Iterable[Split],
    tracker: SchemaTracker,
    read: ReadSpec,
    table_maps: TableMapSink | None = None,
    *,
    headers: HeaderCache | None = None,
) -> list[Statement]:
    """The DDL that changed ``tracker`` (updated in place), the renames and the XA outcomes of ``splits`` (in
    binlog order), in order, with the sessions' temporary tables where each split starts and where the last ends
    (``temporary`` statements, where they differ from the last recorded or, for the first, from ``tracker``'s).
    ``table_maps(split, pos, table_map)`` is called for every table map of the splits, in binlog order, decoded
    under the schema in force there (``pos``: its event's, or its TRANSACTION_PAYLOAD's, position); identical
    table maps under one schema state come as one object.  ``headers``: the :class:`~binlake.reader.HeaderCache`
    that planned the splits (:func:`~binlake.ingest.plan.plan_splits`), so the files' headers are not walked
    again."""
    out: list[Statement] = []
    recorded = tracker.temporary.state  # where the batch starts: tracker_to_json(tracker) has it
    last: Split | None = None
    for split in splits:
        f, last = split.file, split
        recorded = _temporary_at(out, tracker, recorded, split, split.start)
        for pos, ev in _surveyed(split, read, tracker, table_maps is not None, headers):
            if isinstance(ev, TableMapEvent):
                assert table_maps is not None
                table_maps(split, pos, ev)
                continue
            if isinstance(ev, FormatDescriptionEvent | StartV3Event):
                tracker.started(ev)
                continue
            assert isinstance(ev, QueryEvent)
            seq = f.seq * SEQ_FILE + pos * SEQ_POS
            query = ev.query
            mode = ev.status("SQL_MODE")
            sql_mode = mode if isinstance(mode, int) else 0
            xa = xa_outcome(query, sql_mode)
            if xa is not None:
                out.append(Statement("xa", seq, f.name, pos, xid=xa[0], rolled_back=xa[1]))
                continue
            scope = tracker.temporary.scope(ev)
            pairs = renames(query, ev.db or "", sql_mode, scope)
            if tracker.observe(ev):
                ran_in = tuple(sorted(scope.tables))
                server = server_collation(ev)
                out.append(
                    Statement(
                        "ddl", seq, f.name, pos, ev.db or None, sql_mode, query, scope=ran_in, collation_server=server
                    )
                )
            if pairs:
                out.append(Statement("rename", seq, f.name, pos, ev.db or None, sql_mode, query, pairs))
    if last is not None:
        _temporary_at(out, tracker, recorded, last, last.stop if last.stop is not None else last.file.size)
    return out


def _temporary_at(
    out: list[Statement], tracker: SchemaTracker, recorded: TemporaryState, split: Split, pos: int
) -> TemporaryState:
    """Record the sessions' temporary tables just before ``pos`` of ``split``'s file if they changed since
    ``recorded``; the state recorded now."""
    state = tracker.temporary.state
    if state != recorded:
        seq = split.file.seq * SEQ_FILE + pos * SEQ_POS - 1  # before the event at pos (tracker_at takes s.seq < seq)
        out.append(Statement("temporary", seq, split.file.name, pos, temporary=state))
    return state


# -- the schema as JSON ---------------------------------------------------------------------------------------


SCHEMA_STATE_VERSION = 3
"""The version :func:`tracker_to_json` writes (1: a bare list of the tables; 2: no charsets)."""


def tracker_to_json(tracker: SchemaTracker) -> dict[str, Any]:
    """The tracker's state as a JSON-able record (exact: no SQL is re-parsed): ``version``, ``tables`` (every
    table it knows as ``[db, table, columns, primary key, sequence, default collation]``, each column ``[name,
    type, params, unsigned, definition, collation]``), ``databases`` (their default collations) and ``temporary``
    (the sessions' temporary tables, :meth:`TemporaryState.to_json <binlake.sql.temporary.TemporaryState.to_json>`).
    """
    tables = [
        [
            ts.schema,
            ts.name,
            [[c.name, c.type_name, list(c.params), c.unsigned, c.definition, c.charset] for c in ts.columns],
            list(ts.primary_key),
            ts.sequence,
            ts.collation,
        ]
        for ts in tracker.tables.values()
    ]
    return {
        "version": SCHEMA_STATE_VERSION,
        "tables": tables,
        "databases": tracker.databases,
        "temporary": tracker.temporary.state.to_json(),
    }


def tracker_from_json(state: dict[str, Any] | Sequence[Any]) -> SchemaTracker:
    """Invert :func:`tracker_to_json`.  A state of version 2 loads with no charsets, one of version 1 (the list of
    tables alone) with no temporary tables, and one written before primary keys (``[db, table, columns]``) or
    sequences (``[db, table, columns, key]``) were tracked with none."""
    databases: dict[str, int] = {}
    if isinstance(state, dict):
        if state.get("version") not in (2, SCHEMA_STATE_VERSION):
            raise UnsupportedError(
                f"a schema state of version {state.get('version')!r} (this binlake reads versions 2 and "
                f"{SCHEMA_STATE_VERSION}): written by another binlake"
            )
        temporary: TemporaryState | None = TemporaryState.from_json(state["temporary"])
        rows: Sequence[Any] = state["tables"]
        databases = {str(k): int(v) for k, v in state.get("databases", {}).items()}
    else:
        temporary, rows = None, state
    tables = {}
    for schema, name, cols, *more in rows:
        columns = tuple(TrackedColumn(c[0], c[1], tuple(c[2]), c[3], c[4], c[5] if len(c) > 5 else None) for c in cols)
        key = tuple(more[0]) if more else ()
        sequence = bool(more[1]) if len(more) > 1 else False
        tables[(schema, name)] = TableSchema(schema, name, columns, key, sequence, more[2] if len(more) > 2 else None)
    return SchemaTracker(tables, temporary, databases)


def tracker_at(state: dict[str, Any] | Sequence[Any], statements: Sequence[Statement], seq: int) -> SchemaTracker:
    """The tracker of the batch start ``state`` after the batch's ``ddl`` statements before ``seq``, each run in its
    session's temporary tables, and with the sessions' temporary tables of the last ``temporary`` statement before
    ``seq``."""
    tracker = tracker_from_json(state)
    temporary = None
    for s in statements:
        if s.seq >= seq:
            continue
        if s.kind == "ddl":
            tracker.execute(s.query, s.db, s.sql_mode, Scope(frozenset(s.scope)), s.collation_server)
        elif s.kind == "temporary":
            temporary = s.temporary
    return tracker if temporary is None else SchemaTracker(tracker.tables, temporary, tracker.databases)
