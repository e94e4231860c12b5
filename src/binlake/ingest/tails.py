"""Where the whole transactions of a file end, and whether a position is inside one: what a batch of the ingest may
land of a file that is still being written or still being copied, and what it may go on from.

A batch lands whole transactions only (:mod:`binlake.transactions`, the one rule).  The planner cuts a file that does
not end with its ROTATE or STOP at the last boundary its header walk sees (:func:`binlake.ingest.plan.plan_file`);
:func:`last_whole` decodes the events after it for a last group whose end the walk cannot see (DDL, a MariaDB
standalone group, a non-transactional ``BEGIN ... COMMIT``).  What follows the last whole transaction waits for the
rest of the file: a server still writing it (its format description flagged in use), or a copy still under way
(not flagged, but cut short: an interrupted ``cp``, download or sync).

:func:`inside` answers whether a position a lake recorded is inside a transaction, which binlake before version 4
of the batch manifest could record for a copy cut short (it landed the file's whole events); the ingest then lands
again from before the batch that recorded it (:func:`binlake.ingest.run.ingest`).

Example::

    end = last_whole(file, boundary, ReadSpec())   # the end of the last whole transaction after ``boundary``
    inside(file, 22785, ReadSpec())                # True: a transaction started at 22522 is still open there
"""

from __future__ import annotations

import itertools

from binlake.binlogs import BinlogFile
from binlake.errors import BinlogError
from binlake.ingest.statements import ReadSpec
from binlake.reader import header_table, read_events, walk_headers
from binlake.transactions import BETWEEN_EVENTS, GTID_EVENTS, Transactions, last_boundary

__all__ = ["inside", "last_whole", "plainly_outside"]

_OPENS = GTID_EVENTS | BETWEEN_EVENTS  # an event of these types at a position: nothing is open there


def last_whole(file: BinlogFile, start: int, read: ReadSpec) -> int:
    """The end of the last whole transaction of ``file`` after ``start`` (a transaction boundary), by the event
    rule (:class:`~binlake.transactions.Transactions`); ``start`` when none ends there, or when the events after
    it do not decode (damaged: the task that decodes them reports it)."""
    try:
        table = header_table(file.source, start)
        if table.end <= start:
            return start
        trx = Transactions()
        for ev in read_events(file.source, options=read.options, start=start, stop=table.end, decryptor=read.decryptor):
            trx.event(ev)
    except BinlogError:
        return start
    return max(start, trx.resume or start)


def plainly_outside(file: BinlogFile, pos: int) -> bool:
    """Whether one look at the event at ``pos`` (an event boundary of ``file``) shows no transaction open there: it
    is the file's start, a GTID event or an event between transactions, or no whole event is there yet (nothing
    goes on from it now).  ``False`` says nothing: :func:`inside` decodes to tell."""
    if pos <= 4:
        return True
    try:
        first = list(itertools.islice(walk_headers(file.source, pos), 1))
    except BinlogError:
        return True
    return not first or first[0].type_code in _OPENS


def inside(file: BinlogFile, pos: int, read: ReadSpec) -> bool:
    """Whether ``pos`` (an event boundary of ``file``) is inside a transaction: unless :func:`plainly_outside`, the
    events from the last boundary a header walk sees before ``pos`` are decoded by the event rule.  ``False`` where
    it cannot be told: bytes that do not decode (an encrypted file without its key, a damaged one)."""
    if plainly_outside(file, pos):
        return False
    try:
        table = header_table(file.source, 4, pos)
        k = last_boundary(table.codes)
        if k == len(table):  # the event before pos ended a transaction
            return False
        start = 4 if k is None else table.positions[k]
        trx = Transactions()
        for ev in read_events(file.source, options=read.options, start=start, stop=pos, decryptor=read.decryptor):
            trx.event(ev)
    except BinlogError:
        return False
    return trx.open
