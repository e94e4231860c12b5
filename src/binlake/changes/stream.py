"""The change stream: decoded events in, whole transactions of row changes and statements out.

:class:`ChangeStream` reads an :class:`~binlake.changes.sources.EventSource` (files, or a server through the
replication client) and yields one :class:`~binlake.changes.records.Transaction` per transaction the source holds
whole, with its kept changes and the resume point right after it.  Transaction boundaries are
:class:`binlake.transactions.Transactions`' (the one rule binlake has), and the items of each are grouped by
:class:`binlake.transactions.Grouping` (as the ingest's tasks group theirs); the filters are
:class:`binlake.changes.filters.ChangeFilter`'s.

What it does per event:

* GTID events and ``BEGIN`` open a transaction (its GTID, its session's thread id); MariaDB's GTID of an XA
  transaction opens it with ``XA START``;
* ANNOTATE_ROWS (MariaDB) and ROWS_QUERY (MySQL) give the statement text of the rows events after them, until the
  transaction ends (as Debezium keeps it);
* a rows event becomes a :class:`~binlake.changes.records.RowsChange` when its table and kind pass the filter, its
  table map named by :class:`~binlake.changes.naming.TableCatalog`; in a statement on a table whose map says it
  has triggers (MariaDB's TM_BIT_HAS_TRIGGERS_F), the rows of the other tables are marked as made by triggers;
* a QUERY event that is neither the transaction's opening nor its closing becomes a
  :class:`~binlake.changes.records.Statement` (with the INTVAR/RAND/USER_VAR events and LOAD DATA file blocks
  before it); transaction control is always kept, other statements when their database and ``statement`` pass
  the filter; the start and the rollback of a two-phase ALTER are not (its COMMIT ALTER is the change);
* XID, ``COMMIT``/``ROLLBACK``, XA_PREPARE, or a statement logged alone end it.

A transaction is delivered only whole: one cut short (a log that ends inside it, a damaged stretch) or begun
before a start position is dropped and counted in :attr:`ChangeStream.dropped`.  Transactions outside the filter's
positions, datetimes or GTID sets are not delivered either; every other one is, even when no change of it passed
the filter (its :attr:`~binlake.changes.records.Transaction.resume` still moves a reader on).

Example::

    stream = ChangeStream(FileSource(paths), ChangeFilter(databases=("shop",)))
    for trx in stream:
        ...
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from binlake.changes.filters import ChangeFilter, MysqlGtid
from binlake.changes.naming import TableCatalog
from binlake.changes.records import RowsChange, Statement, Transaction
from binlake.changes.sources import EventSource
from binlake.events.base import Event, EventType
from binlake.events.control import RowsQueryEvent, XaPrepareEvent
from binlake.events.gtid import (
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_START_ALTER_E1,
    GtidEvent,
    MariaGtid,
    MariaGtidEvent,
)
from binlake.events.mariadb import AnnotateRowsEvent
from binlake.events.query import QueryEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import TableMapEvent
from binlake.transactions import QUERY_EVENTS, Grouping, Step, Transactions

__all__ = ["ChangeStream"]

E = EventType
# the events that set up the next statement: INTVAR, RAND, USER_VAR, and the file blocks of a LOAD DATA
_CONTEXT = frozenset({E.INTVAR_EVENT, E.RAND_EVENT, E.USER_VAR_EVENT, E.BEGIN_LOAD_QUERY_EVENT, E.APPEND_BLOCK_EVENT})
_HAS_TRIGGERS_F = 0x4000  # Table_map_log_event::TM_BIT_HAS_TRIGGERS_F (MariaDB sql/log_event.h)
# Q_GTID_FLAGS3 bits of MariaDB's binlog_alter_two_phase (sql/log_event.h): the ALTER's text is logged at its
# start and again at its commit or rollback; only the COMMIT ALTER is the change (as binlake.schema counts it)
_OWN_CONTROL = frozenset({"begin", "commit", "rollback", "xa_commit", "xa_rollback"})


class _Open:
    """The transaction being read."""

    __slots__ = (
        "begin_pos",
        "commit_us",
        "context",
        "file",
        "gtid",
        "gtid_key",
        "opening",
        "query",
        "server_id",
        "start",
        "thread_id",
        "timestamp",
        "triggered",
        "xid",
    )

    def __init__(self, file: str, ev: Event) -> None:
        h = ev.header
        self.file = file
        self.start = self.begin_pos = h.in_payload if h.in_payload is not None else h.pos
        self.timestamp = h.timestamp
        self.server_id = h.server_id
        self.gtid: str | None = None
        self.gtid_key: MariaGtid | MysqlGtid | None = None
        self.commit_us: int | None = None
        self.thread_id: int | None = None
        self.opening: str | None = None
        self.xid: str | None = None
        self.query: str | None = None
        self.triggered = False  # a table map of the statement being read says its table has triggers
        self.context: list[Event] = []


class ChangeStream:
    """See the module docstring.  Iterate it once; :attr:`dropped` counts the transactions not held whole."""

    def __init__(self, source: EventSource, filter: ChangeFilter | None = None) -> None:
        self.source = source
        self.filter = filter or ChangeFilter()
        self.catalog = TableCatalog(source.schema, source.definitions)
        self.dropped = 0
        self._trx = Transactions()
        self._group: Grouping[RowsChange | Statement] = Grouping()  # the open transaction's items

    def __iter__(self) -> Iterator[Transaction]:
        f = self.filter
        trx, group = self._trx, self._group
        cur: _Open | None = None
        for loc in self.source:
            ev = loc.event
            if loc.gap:
                trx.lost()  # read from inside a file: the transaction there began unseen
            step = trx.event(ev)
            if group.before(step) is not None:  # a transaction cut off: not whole
                self.dropped += 1
                cur = None
            if not step.inside:
                continue
            if step.begins:
                if f.stop_datetime is not None and ev.header.timestamp >= f.stop_datetime:
                    return
                cur = _Open(loc.file, ev)
            if cur is None:  # inside a transaction whose start was not read
                continue
            self._event(cur, ev, loc.file, loc.end, step)
            items = group.after(step)
            if items is not None:
                out = self._close(cur, ev, step, loc.end, items)
                cur = None
                if out is not None:
                    yield out
        if group.finish() is not None:  # the source ended inside a transaction: not whole
            self.dropped += 1

    # -- one event of an open transaction

    def _event(self, cur: _Open, ev: Event, file: str, end: int, step: Step) -> None:
        """Take ``ev`` into ``cur``."""
        code = ev.header.type_code
        if isinstance(ev, RowsEvent):
            self._rows(cur, ev, file, end)
        elif code in QUERY_EVENTS or code == E.EXECUTE_LOAD_QUERY_EVENT:
            self._query(cur, ev, file, end, step)
        elif code in _CONTEXT:
            cur.context.append(ev)
        elif isinstance(ev, MariaGtidEvent):
            cur.gtid, cur.gtid_key = str(ev.gtid), ev.gtid
            cur.thread_id = ev.thread_id
            if ev.flags & FL_PREPARED_XA and ev.xid is not None:
                fmt, gtrid, bqual = ev.xid
                cur.xid = f"X'{gtrid.hex()}',X'{bqual.hex()}',{fmt}"
                cur.opening = f"XA START {cur.xid}"
            elif not ev.standalone:
                cur.opening = "BEGIN"
        elif isinstance(ev, GtidEvent):
            if not ev.anonymous:
                cur.gtid, cur.gtid_key = ev.gtid, (ev.uuid, ev.tag, ev.gno)
            if ev.original_commit_timestamp:
                cur.commit_us = ev.original_commit_timestamp
        elif isinstance(ev, AnnotateRowsEvent | RowsQueryEvent):
            cur.query = ev.query
        elif isinstance(ev, TableMapEvent) and ev.flags & _HAS_TRIGGERS_F:
            cur.triggered = True

    def _rows(self, cur: _Open, ev: RowsEvent, file: str, end: int) -> None:
        tm = ev.table_map
        f = self.filter
        by_trigger = cur.triggered and tm is not None and not tm.flags & _HAS_TRIGGERS_F
        if ev.stmt_end:
            cur.triggered = False
        if tm is None or not f.wants_op(ev.kind) or not f.wants_table(tm.schema, tm.table) or not ev.rows_data:
            return
        info = self.catalog.info(tm)
        if info.columns is not tm.columns:  # columns named from the DDL or an earlier map: decode with them
            ev = replace(ev, table_map=info.table_map)
        h = ev.header
        pos = h.in_payload if h.in_payload is not None else h.pos
        self._group.add(RowsChange(ev.kind, info, ev, file, pos, end, h.timestamp, h.server_id, cur.query, by_trigger))

    def _query(self, cur: _Open, ev: Event, file: str, end: int, step: Step) -> None:
        assert isinstance(ev, QueryEvent)
        ctl = step.control
        context, cur.context = tuple(cur.context), []
        if cur.thread_id is None:
            cur.thread_id = ev.thread_id
        kind = ctl.kind if ctl is not None else ""
        if kind in _OWN_CONTROL:
            if kind == "begin":
                cur.opening = "BEGIN"
                cur.begin_pos = ev.header.pos
            return
        if ctl is None and not (self.filter.wants_op("statement") and self.filter.wants_database(ev.db)):
            return
        flags3 = ev.status("GTID_FLAGS3")
        if isinstance(flags3, tuple) and flags3[0] & (FL_START_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            return  # a two-phase ALTER is its COMMIT ALTER
        if kind == "xa_start":
            cur.xid = ctl.xid if ctl is not None else None
        self._group.add(Statement(ev, context, file, ev.header.pos, end, ctl))

    # -- the end of a transaction

    def _close(
        self, cur: _Open, ev: Event, step: Step, end: int, items: list[RowsChange | Statement]
    ) -> Transaction | None:
        f = self.filter
        if not f.wants_gtid(cur.gtid_key):
            return None
        if f.start_datetime is not None and cur.timestamp < f.start_datetime:
            return None
        outcome = step.outcome or "commit"
        closing: str | None
        ctl = step.control
        if isinstance(ev, XaPrepareEvent):
            cur.xid = ev.xid_text
            closing = f"XA COMMIT {ev.xid_text} ONE PHASE" if ev.one_phase else f"XA PREPARE {ev.xid_text}"
        elif ev.header.type_code == E.XID_EVENT:
            closing = "COMMIT"
        elif ctl is not None and ctl.kind in ("commit", "rollback"):
            closing = "ROLLBACK" if ctl.kind == "rollback" else "COMMIT"
        elif ctl is not None and ctl.kind in ("xa_commit", "xa_rollback"):
            cur.xid = ctl.xid
            closing = None  # the XA COMMIT / ROLLBACK statement is the transaction's one item
            items.append(Statement(ev, (), cur.file, ev.header.pos, end, ctl))  # type: ignore[arg-type]
        else:
            closing = None  # a statement logged alone (DDL): its statement is its one item
        return Transaction(
            file=cur.file,
            start=cur.start,
            end=end,
            begin_pos=cur.begin_pos,
            gtid=cur.gtid,
            timestamp=cur.timestamp,
            commit_us=cur.commit_us,
            server_id=cur.server_id,
            thread_id=cur.thread_id,
            flavor=self.source.flavor,
            outcome=outcome,
            xid=cur.xid,
            opening=cur.opening,
            closing=closing,
            items=items,
            resume=self.source.resume_point(),
        )
