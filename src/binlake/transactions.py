"""Where a transaction starts and ends in a binlog, and the groups of event types that decide it: one definition
for ``binlake stats``, the damaged-log reader (:mod:`binlake.recovery`), the ingest's planner and task decoder
(:mod:`binlake.ingest.plan`, :mod:`binlake.ingest.extract`), and a replication client that must hand on whole
transactions and resume where the last whole one ends.

The servers write a transaction as one group of events (MariaDB ``sql/log_event.h`` "event groups";
``MYSQL_BIN_LOG::write_transaction`` / ``ordered_commit`` in MySQL ``sql/binlog.cc``):

* a GTID event opens it: MySQL GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT, GTID_TAGGED_LOG_EVENT (a ``BEGIN`` query
  follows for DML), MariaDB GTID_EVENT (it stands for ``BEGIN`` itself, unless FL_STANDALONE: a statement alone);
* without GTIDs (MySQL 5.x and older, MariaDB 5.x) a ``BEGIN`` (``START TRANSACTION``, ``XA START``) query opens
  it, or any other event that belongs to a transaction (INTVAR, TABLE_MAP, ...) when none is open: such a group
  is one statement, ended by that statement's event or, logged as rows (MySQL 5.1 before GA wrote non-transactional
  rows without ``BEGIN``), by its last rows event (STMT_END_F);
* it ends with an XID event (commit), an XA_PREPARE event (``XA PREPARE``: the outcome is a later ``XA COMMIT`` /
  ``XA ROLLBACK`` statement, a group of its own; ``XA COMMIT ... ONE PHASE`` commits), a ``COMMIT`` / ``ROLLBACK``
  / ``XA COMMIT`` / ``XA ROLLBACK`` / ``XA PREPARE`` query, or, for a group opened without ``BEGIN`` (DDL, a
  MariaDB standalone group, a statement logged alone), with its statement (QUERY, EXECUTE_LOAD_QUERY and the old
  LOAD events): DDL is a transaction of its own;
* events between transactions (format descriptions, rotates, stops, GTID lists, checkpoints, ...) belong to none;
  one that comes while a transaction is open (a log cut short) cuts it off.  Heartbeats (replication only) change
  nothing.

:class:`Transactions` applies the rule event by event, sans-IO: it sees a type code, a position and, for the few
events where it matters, the statement text, the MariaDB GTID's FL_STANDALONE flag and XA_PREPARE's one-phase
flag; :meth:`Transactions.event` takes them from a decoded event.  Each event gets a :class:`Step`: does a
transaction begin or end with it, did an open one get cut off, what transaction control the statement is; the
tracker keeps the open transaction's start and GTID and the position where a reader could resume with a whole
transaction next (:attr:`Transactions.resume`).

A header walk sees only type codes: :data:`CUT` finds the boundaries visible there (before a GTID event, after an
XID or XA_PREPARE), each of which is also a boundary of the event-level rule.

Example::

    trx = Transactions()
    for ev in read_events(path):
        step = trx.event(ev)
        if step.ends:
            print(trx.gtid, "from", trx.start, "ends at", ev.header.end_pos, step.outcome)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from binlake.events.base import Event, EventType
from binlake.events.rows import STMT_END_F, RowsEvent
from binlake.sql.statements import Control, control, may_control

__all__ = [
    "BETWEEN_EVENTS",
    "CUT",
    "END_EVENTS",
    "FILE_END_EVENTS",
    "GTID_EVENTS",
    "QUERY_EVENTS",
    "ROWS_EVENTS",
    "STATEMENT_EVENTS",
    "Grouping",
    "Outcome",
    "Step",
    "Transactions",
    "last_boundary",
    "next_boundary",
]

E = EventType
T = TypeVar("T")

GTID_EVENTS = frozenset({E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT, E.GTID_TAGGED_LOG_EVENT, E.GTID_EVENT})
"""Events that open a transaction (and carry its GTID)."""
QUERY_EVENTS = frozenset({E.QUERY_EVENT, E.QUERY_COMPRESSED_EVENT})
"""Events whose statement text binlake reads (DDL, transaction control, TRUNCATE, RENAME, ...)."""
STATEMENT_EVENTS = QUERY_EVENTS | {E.EXECUTE_LOAD_QUERY_EVENT, E.LOAD_EVENT, E.NEW_LOAD_EVENT, E.EXEC_LOAD_EVENT}
"""Events that run a statement: the statement ends a transaction opened without ``BEGIN``."""
ROWS_EVENTS = frozenset(RowsEvent.type_codes)
"""Events that carry row images."""
END_EVENTS = frozenset({E.XID_EVENT, E.XA_PREPARE_LOG_EVENT})
"""Events that end the transaction they are in."""
BETWEEN_EVENTS = frozenset(
    {
        E.FORMAT_DESCRIPTION_EVENT,
        E.START_EVENT_V3,
        E.ROTATE_EVENT,
        E.STOP_EVENT,
        E.PREVIOUS_GTIDS_LOG_EVENT,
        E.GTID_LIST_EVENT,
        E.BINLOG_CHECKPOINT_EVENT,
        E.START_ENCRYPTION_EVENT,
        E.INCIDENT_EVENT,
    }
)
"""Events written between transactions, never inside one."""
FILE_END_EVENTS = frozenset({E.ROTATE_EVENT, E.STOP_EVENT})
"""Events after which nothing follows in the same file."""
_IGNORED = frozenset({E.HEARTBEAT_LOG_EVENT, E.HEARTBEAT_LOG_EVENT_V2})  # the connection's, not the log's
# events that never move a boundary of an open transaction (rows end only a statement logged without BEGIN)
_PLAIN = frozenset(int(c) for c in EventType) - GTID_EVENTS - END_EVENTS - STATEMENT_EVENTS - BETWEEN_EVENTS - _IGNORED

CUT = re.compile(
    b"(?<=[%s])|[%s]" % (re.escape(bytes(sorted(END_EVENTS))), re.escape(bytes(sorted(GTID_EVENTS)))),
)
"""Transaction boundaries in a header walk's type codes (one byte per event): the match's index is the first
event of a transaction (a GTID event, or the event after an XID or XA_PREPARE; the walk's length when that is the
last event)."""


def next_boundary(codes: bytes, i: int = 0) -> int | None:
    """The index in a header walk's ``codes`` of the first transaction boundary (:data:`CUT`) at or after the
    event at index ``i``: a transaction's first event, or ``len(codes)`` after a last event that ends one;
    ``None`` when there is none."""
    m = CUT.search(codes, i)
    return None if m is None else m.start()


def last_boundary(codes: bytes) -> int | None:
    """The index of the last transaction boundary in ``codes`` (as :func:`next_boundary`), ``None`` when none."""
    after_end = max(codes.rfind(c) for c in END_EVENTS)
    k = max(after_end + 1 if after_end >= 0 else -1, *(codes.rfind(c) for c in GTID_EVENTS))
    return None if k < 0 else k


Outcome = Literal["commit", "rollback", "prepare"]
_ENDING: dict[str, Outcome] = {
    "commit": "commit",
    "rollback": "rollback",
    "xa_commit": "commit",
    "xa_rollback": "rollback",
    "xa_prepare": "prepare",
}
_BEGINNING = frozenset({"begin", "xa_start"})


@dataclass(frozen=True, slots=True)
class Step:
    """What one event does to the transaction stream.

    ``inside``: the event belongs to a transaction (else it is between transactions, or ignored).  ``begins``:
    it is the transaction's first event; ``ends``: its last (an event can be both: a statement logged alone).
    ``outcome``: how an ending transaction ends: ``commit``, ``rollback``, or ``prepare`` (an XA transaction
    prepared for two-phase commit, decided by a later ``XA COMMIT``/``XA ROLLBACK``).  ``cut``: the start of a
    transaction that was open before this event and never ended (a log cut short, or a damaged one), else
    ``None``.  ``control``: the transaction control the event's statement is (savepoints among it), if any.
    """

    inside: bool
    begins: bool = False
    ends: bool = False
    outcome: Outcome | None = None
    cut: int | None = None
    control: Control | None = None


_OUTCOMES: tuple[Outcome | None, ...] = (None, "commit", "rollback", "prepare")
_STEPS = {
    (inside, begins, ends, outcome): Step(inside, begins, ends, outcome)
    for inside in (False, True)
    for begins in (False, True)
    for ends in (False, True)
    for outcome in _OUTCOMES
}
_INSIDE = _STEPS[(True, False, False, None)]
_OUTSIDE = _STEPS[(False, False, False, None)]


def _step(
    inside: bool,
    begins: bool,
    ends: bool = False,
    outcome: Outcome | None = None,
    cut: int | None = None,
    ctl: Control | None = None,
) -> Step:
    if ctl is None and cut is None:
        return _STEPS[(inside, begins, ends, outcome)]
    return Step(inside, begins, ends, outcome, cut, ctl)


class Transactions:
    """The transaction rule of the module docstring, fed one event at a time (sans-IO).

    After each :meth:`feed` (or :meth:`event`), :attr:`start` and :attr:`gtid` describe the transaction that
    event belongs to (``None`` between transactions; :attr:`gtid` also when its transaction has none) and
    :attr:`resume` is the position after the last event that left no transaction open: where reading can start
    again with a whole transaction next (``None`` until one is known).

    ``gtids``: the stream is known to carry GTID events (a reader starting mid-file knows it from the events
    before its start); after :meth:`lost` it decides whether a ``BEGIN`` can open a transaction (without GTIDs)
    or belongs to one whose GTID event was lost (with them).
    """

    __slots__ = ("_begun", "_ended", "_gtids", "_implicit", "_lost", "_outer_end", "gtid", "resume", "start")

    def __init__(self, *, gtids: bool = False) -> None:
        self.start: int | None = None
        self.gtid: str | None = None
        self.resume: int | None = None
        self._begun = False  # BEGIN (or a MariaDB GTID that is not standalone): the transaction runs to its end
        self._implicit = False  # opened by an ordinary event (no GTID, no BEGIN): one statement
        self._ended = False  # the last event ended its transaction
        self._gtids = gtids
        self._lost = False  # events were lost: a transaction may be open without our knowing its start
        self._outer_end: int | None = None

    @property
    def open(self) -> bool:
        """Is a transaction open after the last event (one that has not ended yet)?"""
        return self.start is not None and not self._ended

    def feed(
        self,
        code: int,
        pos: int,
        end: int | None = None,
        *,
        query: bytes | None = None,
        text: str | None = None,
        sql_mode: int = 0,
        gtid: str | None = None,
        standalone: bool = False,
        one_phase: bool = False,
        statement_end: bool = False,
    ) -> Step:
        """One event: its type ``code``, its position ``pos`` (an event inside a TRANSACTION_PAYLOAD: the
        payload's) and ``end`` (the position after it; ``None`` inside a payload, whose own end was fed before).

        For a statement event, ``query`` (the raw statement) or ``text`` (decoded) and ``sql_mode``; for a GTID
        event, ``gtid`` (its text) and, for MariaDB's, ``standalone`` (FL_STANDALONE); for XA_PREPARE,
        ``one_phase``; for a rows event, ``statement_end`` (STMT_END_F).
        """
        if self._ended:
            self.start, self.gtid, self._begun, self._ended, self._implicit = None, None, False, False, False
        if end is not None:
            self._outer_end = end
        if code in GTID_EVENTS:
            cut = self.start
            self.start, self.gtid, self._lost, self._gtids, self._implicit = pos, gtid, False, True, False
            self._begun = code == E.GTID_EVENT and not standalone
            return _step(True, True, cut=cut)
        if code in END_EVENTS:
            outcome: Outcome = "prepare" if code == E.XA_PREPARE_LOG_EVENT and not one_phase else "commit"
            return self._end(pos, outcome)
        if code in STATEMENT_EVENTS:
            ctl = None
            if code in QUERY_EVENTS:
                if text is None and query is not None and may_control(query):
                    text = query.decode("utf-8", "surrogateescape")
                ctl = control(text, sql_mode) if text is not None else None
            return self._statement(pos, ctl)
        if code in BETWEEN_EVENTS:
            cut = self.start
            self.start, self.gtid, self._begun, self._lost, self._implicit = None, None, False, False, False
            if self._outer_end is not None:
                self.resume = self._outer_end
            return _step(False, False, cut=cut)
        if code in _IGNORED:
            return _INSIDE if self.start is not None else _OUTSIDE
        begins = self.start is None and not self._lost
        if begins:  # an event of a statement logged without BEGIN
            self.start, self._implicit = pos, True
        if statement_end and self._implicit and not self._begun and code in ROWS_EVENTS:
            return self._end(pos, "commit", alone=begins)
        return _step(True, True) if begins else _INSIDE

    def event(self, ev: Event) -> Step:
        """:meth:`feed` with what a decoded event says."""
        h = ev.header
        code = h.type_code
        inner = h.in_payload is not None
        end = None if inner else h.pos + h.event_size
        if code in _PLAIN and self.start is not None and not self._ended and not self._implicit:
            if end is not None:  # the common case: a table map, rows, ... inside an open transaction
                self._outer_end = end
            return _INSIDE
        pos = h.in_payload if h.in_payload is not None else h.pos
        if code in GTID_EVENTS:
            g = getattr(ev, "gtid", None)
            standalone = bool(getattr(ev, "standalone", False))
            return self.feed(code, pos, end, gtid=None if g is None else str(g), standalone=standalone)
        if code in QUERY_EVENTS:
            if not may_control(getattr(ev, "query_raw", b"")):
                return self.feed(code, pos, end)  # a statement that is not transaction control
            mode = ev.status("SQL_MODE")  # type: ignore[attr-defined]
            text: str = ev.query  # type: ignore[attr-defined]
            return self.feed(code, pos, end, text=text, sql_mode=mode if isinstance(mode, int) else 0)
        if code == E.XA_PREPARE_LOG_EVENT:
            return self.feed(code, pos, end, one_phase=bool(getattr(ev, "one_phase", False)))
        if code in ROWS_EVENTS:
            return self.feed(code, pos, end, statement_end=bool(getattr(ev, "flags", 0) & STMT_END_F))
        return self.feed(code, pos, end)

    def lost(self) -> None:
        """Events were lost here (a damaged stretch): whatever transaction was open is no longer known.  Until the
        next GTID event (or, in a stream without GTIDs, ``BEGIN``), an end event, or an event between transactions,
        every event belongs to that broken transaction."""
        self.start, self.gtid, self._begun, self._ended, self._lost = None, None, False, False, True
        self._implicit = False

    def finish(self) -> int | None:
        """The stream ends here (end of a file that may be cut short): the start of the transaction left open, if
        one was (it ends without its end), and the tracker starts afresh."""
        start = self.start if not self._ended else None
        self.start, self.gtid, self._begun, self._ended, self._lost = None, None, False, False, False
        self._implicit = False
        return start

    # -- the rule

    def _end(self, pos: int, outcome: Outcome, ctl: Control | None = None, *, alone: bool = False) -> Step:
        """The transaction ends with this event; ``alone``: the event is a transaction by itself.  An end event
        with no transaction open (the XID a MySQL 5.0 autocommit statement logs after it, or a log read from
        inside a transaction) ends no transaction binlake saw begin: :attr:`start` stays ``None``."""
        begins = alone and self.start is None and not self._lost
        if begins:
            self.start = pos
        self._ended, self._lost = True, False
        if self._outer_end is not None:
            self.resume = self._outer_end
        return _step(True, begins, True, outcome, None, ctl)

    def _statement(self, pos: int, ctl: Control | None) -> Step:
        kind = ctl.kind if ctl is not None else ""
        if kind in _BEGINNING:
            if self.start is None and not (self._lost and self._gtids):
                self.start, self.gtid, self._begun, self._lost, self._implicit = pos, None, True, False, False
                return _step(True, True, ctl=ctl)
            self._begun = True
            return _step(True, False, ctl=ctl)
        outcome = _ENDING.get(kind)
        if outcome is not None:  # XA COMMIT/ROLLBACK of a prepared transaction: a group of its own
            return self._end(pos, outcome, ctl, alone=kind in ("xa_commit", "xa_rollback"))
        if self._lost:
            return _step(True, False, ctl=ctl)
        if self.start is None:  # a statement logged alone: a transaction of its own
            return self._end(pos, "commit", ctl, alone=True)
        if not self._begun:  # the statement of a group opened without BEGIN (DDL after its GTID)
            return self._end(pos, "commit", ctl)
        return _step(True, False, ctl=ctl)


class Grouping(Generic[T]):
    """The items of the transaction being read (row changes, statements), in binlog order, handed on when it ends:
    the one grouping of events into transactions, for the change stream (:class:`binlake.changes.ChangeStream`) and
    the ingest's tasks (:func:`binlake.ingest.extract.decode_split`), each event stepped by :class:`Transactions`.

    Each event's :class:`Step` is given twice: to :meth:`before` before the event's items go in (:meth:`add`), and to
    :meth:`after`.  :meth:`before` hands back the items of the transaction the event cuts off, one that never ended
    (a log cut short or damaged, a transaction begun before the last one's end), and opens the one the event begins;
    :meth:`after` hands back the items of the transaction the event ends (``step.outcome`` says how).  What to do
    with a transaction cut off is the reader's: the change stream drops it, the ingest keeps what is there.
    :meth:`undone` gives the items a ``ROLLBACK TO SAVEPOINT`` undoes.

    >>> g, trx = Grouping[str](), Transactions()
    >>> g.before(trx.feed(E.QUERY_EVENT, 100, 150, text="BEGIN")), g.open
    (None, True)
    >>> g.add("row 1"); g.after(trx.feed(E.WRITE_ROWS_EVENT, 150, 200)) is None
    True
    >>> g.after(trx.feed(E.XID_EVENT, 200, 231))
    ['row 1']
    """

    __slots__ = ("_savepoints", "items", "open")

    def __init__(self) -> None:
        self.items: list[T] = []
        self.open = False  # a transaction began (its first event was read) and has not ended or been cut off
        self._savepoints: dict[str, int] = {}  # SAVEPOINT name -> len(items) when it was set

    def before(self, step: Step) -> list[T] | None:
        """``step`` of the next event, before its items: the items of the transaction it cuts off (``None``: none)."""
        if step.cut is None and step.inside and not step.begins and step.control is None:
            return None  # the common case: an event inside the open transaction
        cut = self._take() if self.open and (step.cut is not None or step.begins or not step.inside) else None
        if step.begins:
            self.open = True
        ctl = step.control
        if ctl is not None and ctl.kind == "savepoint":
            self._savepoints[ctl.name] = len(self.items)
        return cut

    def add(self, item: T) -> None:
        self.items.append(item)

    def undone(self, step: Step) -> list[T]:
        """The items the ``ROLLBACK TO SAVEPOINT`` of ``step`` undoes: those since its savepoint (none for another
        step, or a savepoint this transaction did not set)."""
        ctl = step.control
        at = self._savepoints.get(ctl.name) if ctl is not None and ctl.kind == "rollback_to" else None
        return self.items[at:] if at is not None else []

    def after(self, step: Step) -> list[T] | None:
        """``step`` of the event, after its items: the transaction's items when the event ends it (``None``: it
        does not)."""
        return self._take() if step.ends else None

    def finish(self) -> list[T] | None:
        """The input ends here (or the open transaction is lost): the items of the transaction left open (``None``:
        none was), and the grouping starts afresh."""
        was = self.open
        items = self._take()
        return items if was else None

    def _take(self) -> list[T]:
        items, self.items, self.open = self.items, [], False
        self._savepoints.clear()
        return items
