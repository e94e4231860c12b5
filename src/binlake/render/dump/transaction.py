"""The transaction boundaries of ``binlake dump``: MariaDB's GTID event (``START TRANSACTION``, ``XA START``),
XID (``COMMIT``) and XA_PREPARE.

``Gtid_log_event::print``, ``Xid_log_event::print`` and ``XA_prepare_log_event::print``
(``sql/log_event_client.cc``); under ``--flashback`` each boundary prints its opposite, the statements between
them being printed in reverse.  :data:`HANDLERS` is this family's part of the printer's dispatch table.

Example (corpus-bin.000009 of the corpus, the rows events between left out)::

    #261122 10:27:21 server id 1  end_log_pos 804 CRC32 0xb3e6bd91 \tGTID 0-1-294 trans
    /*M!100001 SET @@session.gtid_seq_no=294*//*!*/;
    START TRANSACTION
    /*!*/;
    ...
    #261122 10:27:21 server id 1  end_log_pos 1179 CRC32 0x07586387 \tXid = 443
    COMMIT/*!*/;
"""

from __future__ import annotations

from binlake.events.base import Event, EventType
from binlake.events.control import XaPrepareEvent, XidEvent
from binlake.events.gtid import (
    FL_ALLOW_PARALLEL,
    FL_COMMIT_ALTER_E1,
    FL_DDL,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_STANDALONE,
    FL_START_ALTER_E1,
    FL_TRANSACTIONAL,
    FL_WAITED,
    MariaGtidEvent,
)
from binlake.render.dump.output import Handler, Output
from binlake.render.dump.quoting import DELIM

__all__ = ["HANDLERS"]

E = EventType


def _xid_text(format_id: int, gtrid: bytes, bqual: bytes) -> str:
    """``XID::serialize``: ``X'7866',X'626e31',1``."""
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{format_id}"


def _gtid(out: Output, ev: Event) -> None:
    """``Gtid_log_event::print`` (MariaDB GTID)."""
    assert isinstance(ev, MariaGtidEvent)
    state = out.session
    lines: list[str] = []
    flashback = out.options.flashback
    if not flashback:
        words = [f"{out.header(ev)}\tGTID {ev.domain_id}-{ev.header.server_id}-{ev.seq_no}"]
        if ev.flags & FL_GROUP_COMMIT_ID:
            words.append(f" cid={ev.commit_id}")
        for bit, word in ((FL_DDL, " ddl"), (FL_TRANSACTIONAL, " trans"), (FL_WAITED, " waited")):
            if ev.flags & bit:
                words.append(word)
        if ev.flags_extra & FL_START_ALTER_E1:
            words.append(" START ALTER")
        if ev.flags_extra & FL_COMMIT_ALTER_E1:
            words.append(f" COMMIT ALTER id= {ev.sa_seq_no}")
        if ev.flags_extra & FL_ROLLBACK_ALTER_E1:
            words.append(f" ROLLBACK ALTER id= {ev.sa_seq_no}")
        lines.append("".join(words) + "\n")
        parallel = bool(ev.flags & FL_ALLOW_PARALLEL)
        if state.allow_parallel is None or state.allow_parallel != parallel:
            lines.append(f"/*M!100101 SET @@session.skip_parallel_replication={int(not parallel)}*/{DELIM}\n")
            state.allow_parallel = parallel
        if state.domain_id != ev.domain_id:
            lines.append(f"/*M!100001 SET @@session.gtid_domain_id={ev.domain_id}*/{DELIM}\n")
            state.domain_id = ev.domain_id
        if state.server_id != ev.header.server_id:
            lines.append(f"/*M!100001 SET @@session.server_id={ev.header.server_id}*/{DELIM}\n")
            state.server_id = ev.header.server_id
        lines.append(f"/*M!100001 SET @@session.gtid_seq_no={ev.seq_no}*/{DELIM}\n")
    if ev.flags & FL_PREPARED_XA and not flashback and ev.xid is not None:
        lines.append(f"XA START {_xid_text(*ev.xid)}{DELIM}\n")
    elif not ev.flags & FL_STANDALONE:
        lines.append(f"COMMIT\n{DELIM}\n" if flashback else f"START TRANSACTION\n{DELIM}\n")
    state.gtid_flags2 = ev.flags
    out.event_text("".join(lines))


def _xid(out: Output, ev: Event) -> None:
    assert isinstance(ev, XidEvent)
    end = "START TRANSACTION" if out.options.flashback else "COMMIT"
    out.event_text(f"{out.header(ev)}\tXid = {ev.xid}\n{end}{DELIM}\n")


def _xa_prepare(out: Output, ev: Event) -> None:
    assert isinstance(ev, XaPrepareEvent)
    xid = _xid_text(ev.format_id, ev.gtrid, ev.bqual)
    out.event_text(f"{out.header(ev)}\tXID = {xid}\nXA PREPARE {xid}\n{DELIM}\n")


HANDLERS: dict[int, Handler] = {
    E.GTID_EVENT: _gtid,
    E.XID_EVENT: _xid,
    E.XA_PREPARE_LOG_EVENT: _xa_prepare,
}
