"""The events of ``binlake dump`` about the log itself: FORMAT_DESCRIPTION, ROTATE, GTID_LIST,
BINLOG_CHECKPOINT, STOP, START_ENCRYPTION, INCIDENT, and any event of a type it does not print.

Each is its event's ``print()`` in MariaDB's ``sql/log_event_client.cc``; under ``--flashback`` the STOP event
prints last.  :data:`HANDLERS` is this family's part of the printer's dispatch table, :func:`unknown_event` the
printer's fallback.

Example (corpus-bin.000009 of the corpus)::

    #261122 10:27:21 server id 1  end_log_pos 299 CRC32 0x3993401d \tGtid list [0-1-292]
    #261122 10:27:21 server id 1  end_log_pos 343 CRC32 0x9d2a89b4 \tBinlog checkpoint corpus-bin.000008
    ...
    #261122 10:27:21 server id 1  end_log_pos 10510 CRC32 0x66e5f3f0 \tRotate to corpus-bin.000010  pos: 4
"""

from __future__ import annotations

import time

from binlake.events.base import LOG_EVENT_ARTIFICIAL_F, LOG_EVENT_IGNORABLE_F, Event, EventType
from binlake.events.control import IncidentEvent, RotateEvent, StopEvent
from binlake.events.format import FormatDescriptionEvent
from binlake.events.gtid import BinlogCheckpointEvent, GtidListEvent
from binlake.events.mariadb import StartEncryptionEvent
from binlake.render.dump.output import Handler, Output
from binlake.render.dump.quoting import DELIM

__all__ = ["HANDLERS", "unknown_event"]

E = EventType

# Log_event::get_type_str of the types printed by name
_TYPE_STR: dict[int, str] = {E.START_ENCRYPTION_EVENT: "Start_encryption"}


def _fde(out: Output, ev: Event) -> None:
    assert isinstance(ev, FormatDescriptionEvent)
    start = out.options.filter.start_position
    if start is not None and start > 4 and ev.header.pos == 4:
        return  # read only for its format (check_header): --base64-output=DECODE-ROWS does not print it
    t = time.localtime(ev.header.timestamp)
    created = f"{t.tm_year % 100:02d}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:2d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    text = (
        f"{out.header(ev)}\tStart: binlog v {ev.binlog_version}, server v {ev.server_version} created {created}"
        + (" at startup" if ev.create_timestamp else "")
        + "\n"
    )
    if ev.in_use:
        text += "# Warning: this binlog is either in use or was not closed properly.\n"
    if ev.create_timestamp and not ev.header.flags & LOG_EVENT_ARTIFICIAL_F:
        text += f"ROLLBACK{DELIM}\n"
    out.emit(text)


def _gtid_list(out: Output, ev: Event) -> None:
    assert isinstance(ev, GtidListEvent)
    gtids = sorted(ev.gtids, key=lambda g: (g.domain_id, g.server_id, g.seq_no))
    listed = ",\n# ".join(f"{g.domain_id}-{g.server_id}-{g.seq_no}" for g in gtids)
    out.emit(f"{out.header(ev)}\tGtid list [{listed}]\n")


def _checkpoint(out: Output, ev: Event) -> None:
    assert isinstance(ev, BinlogCheckpointEvent)
    name = ev.binlog_file_raw.decode("utf-8", "surrogateescape")
    out.emit(f"{out.header(ev)}\tBinlog checkpoint {name}\n")


def _rotate(out: Output, ev: Event) -> None:
    assert isinstance(ev, RotateEvent)
    name = ev.name_raw.decode("utf-8", "surrogateescape")
    out.emit(f"{out.header(ev)}\tRotate to {name}  pos: {ev.position}\n")


def _stop_event(out: Output, ev: Event) -> None:
    assert isinstance(ev, StopEvent)
    out.stop_text(f"{out.header(ev)}\tStop\n")


def _start_encryption(out: Output, ev: Event) -> None:
    assert isinstance(ev, StartEncryptionEvent)
    if ev.header.flags & LOG_EVENT_IGNORABLE_F:  # as a server sends it to replicas, the log after it decrypted
        unknown_event(out, ev)
        return
    out.emit(
        f"# Encryption scheme: {ev.crypto_scheme}, key_version: {ev.key_version}, nonce: {ev.nonce.hex()}\n"
        "# The rest of the binlog is encrypted!\n"
    )


def _incident(out: Output, ev: Event) -> None:
    assert isinstance(ev, IncidentEvent)
    message = ev.message_raw.decode("utf-8", "surrogateescape")
    out.emit(f"{out.header(ev)}\n# Incident: {message}\nRELOAD DATABASE; # Shall generate syntax error\n")


def unknown_event(out: Output, ev: Event) -> None:
    """``Unknown_log_event::print`` / ``Ignorable_log_event::print``."""
    if ev.header.flags & LOG_EVENT_IGNORABLE_F:
        name = _TYPE_STR.get(ev.header.type_code, ev.header.type)
        out.emit(f"{out.header(ev)}\tIgnorable\n# Ignorable event type {ev.header.type_code} ({name})\n")
    else:
        out.emit(f"{out.header(ev)}\n# Unknown event\n")


HANDLERS: dict[int, Handler] = {
    E.FORMAT_DESCRIPTION_EVENT: _fde,
    E.GTID_LIST_EVENT: _gtid_list,
    E.BINLOG_CHECKPOINT_EVENT: _checkpoint,
    E.ROTATE_EVENT: _rotate,
    E.STOP_EVENT: _stop_event,
    E.START_ENCRYPTION_EVENT: _start_encryption,
    E.INCIDENT_EVENT: _incident,
}
