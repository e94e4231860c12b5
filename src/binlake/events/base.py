"""The common event header, the event base class and the type-code table.

Every event starts with the v4 common header (``libs/mysql/binlog/event/binlog_event.h``, ``Log_event_header``):

=======  ====  ================================================
offset   size  field
=======  ====  ================================================
0        4     timestamp (seconds since the epoch)
4        1     type code
5        4     server id
9        4     event size (header + body + checksum)
13       4     log position (end of this event in the source log; 0 in v1 and in some relay-log events)
17       2     flags (``LOG_EVENT_*_F``)
=======  ====  ================================================

v1 (MySQL 3.23) headers stop after the event size (13 bytes).  Each event family module decodes the bytes after the
header with a function; :data:`binlake.decoder.DECODERS`, the one dispatch table, maps type codes to them, and a
type code it does not list decodes to :class:`RawEvent`.

Example::

    >>> EventType.name_of(19), EventType.name_of(162), EventType.name_of(99)
    ('TABLE_MAP_EVENT', 'GTID_EVENT', 'UNKNOWN_EVENT_99')
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from binlake.codes import CodeEnum

__all__ = [
    "HEADER",
    "LOG_EVENT_ARTIFICIAL_F",
    "LOG_EVENT_BINLOG_IN_USE_F",
    "LOG_EVENT_FLAGS",
    "LOG_EVENT_FORCED_ROTATE_F",
    "LOG_EVENT_IGNORABLE_F",
    "LOG_EVENT_MTS_ISOLATE_F",
    "LOG_EVENT_NO_FILTER_F",
    "LOG_EVENT_RELAY_LOG_F",
    "LOG_EVENT_SKIP_REPLICATION_F",
    "LOG_EVENT_SUPPRESS_USE_F",
    "LOG_EVENT_THREAD_SPECIFIC_F",
    "LOG_EVENT_UPDATE_TABLE_MAP_VERSION_F",
    "Event",
    "EventHeader",
    "EventType",
    "RawEvent",
    "quicken",
]

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, size, log_pos, flags
HEADER_V1 = struct.Struct("<IBII")  # 3.23: no log_pos, no flags


class EventType(CodeEnum):
    """``Log_event_type`` of MySQL (``binlog_event.h``) and MariaDB (``sql/log_event.h``)."""

    UNKNOWN_EVENT = 0
    START_EVENT_V3 = 1
    QUERY_EVENT = 2
    STOP_EVENT = 3
    ROTATE_EVENT = 4
    INTVAR_EVENT = 5
    LOAD_EVENT = 6
    SLAVE_EVENT = 7
    CREATE_FILE_EVENT = 8
    APPEND_BLOCK_EVENT = 9
    EXEC_LOAD_EVENT = 10
    DELETE_FILE_EVENT = 11
    NEW_LOAD_EVENT = 12
    RAND_EVENT = 13
    USER_VAR_EVENT = 14
    FORMAT_DESCRIPTION_EVENT = 15
    XID_EVENT = 16
    BEGIN_LOAD_QUERY_EVENT = 17
    EXECUTE_LOAD_QUERY_EVENT = 18
    TABLE_MAP_EVENT = 19
    PRE_GA_WRITE_ROWS_EVENT = 20
    PRE_GA_UPDATE_ROWS_EVENT = 21
    PRE_GA_DELETE_ROWS_EVENT = 22
    WRITE_ROWS_EVENT_V1 = 23
    UPDATE_ROWS_EVENT_V1 = 24
    DELETE_ROWS_EVENT_V1 = 25
    INCIDENT_EVENT = 26
    HEARTBEAT_LOG_EVENT = 27
    IGNORABLE_LOG_EVENT = 28
    ROWS_QUERY_LOG_EVENT = 29
    WRITE_ROWS_EVENT = 30
    UPDATE_ROWS_EVENT = 31
    DELETE_ROWS_EVENT = 32
    GTID_LOG_EVENT = 33
    ANONYMOUS_GTID_LOG_EVENT = 34
    PREVIOUS_GTIDS_LOG_EVENT = 35
    TRANSACTION_CONTEXT_EVENT = 36
    VIEW_CHANGE_EVENT = 37
    XA_PREPARE_LOG_EVENT = 38
    PARTIAL_UPDATE_ROWS_EVENT = 39
    TRANSACTION_PAYLOAD_EVENT = 40
    HEARTBEAT_LOG_EVENT_V2 = 41
    GTID_TAGGED_LOG_EVENT = 42
    # MariaDB (sql/log_event.h)
    ANNOTATE_ROWS_EVENT = 160
    BINLOG_CHECKPOINT_EVENT = 161
    GTID_EVENT = 162
    GTID_LIST_EVENT = 163
    START_ENCRYPTION_EVENT = 164
    QUERY_COMPRESSED_EVENT = 165
    WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
    UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
    DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
    WRITE_ROWS_COMPRESSED_EVENT = 169
    UPDATE_ROWS_COMPRESSED_EVENT = 170
    DELETE_ROWS_COMPRESSED_EVENT = 171

    @classmethod
    def unknown_name(cls, code: int) -> str:
        return f"UNKNOWN_EVENT_{code}"


# LOG_EVENT_*_F of binlog_event.h / MariaDB log_event.h: the flags of the common header
LOG_EVENT_BINLOG_IN_USE_F = 0x0001  # in a FORMAT_DESCRIPTION: the server has the file open (set until it closes it)
LOG_EVENT_FORCED_ROTATE_F = 0x0002
LOG_EVENT_THREAD_SPECIFIC_F = 0x0004  # the statement depends on its session (its temporary tables, pseudo_thread_id)
LOG_EVENT_SUPPRESS_USE_F = 0x0008  # the statement's default database is not to be USEd before it
LOG_EVENT_UPDATE_TABLE_MAP_VERSION_F = 0x0010
LOG_EVENT_ARTIFICIAL_F = 0x0020  # made up by a dump thread or a replica, not written by the server for itself
LOG_EVENT_RELAY_LOG_F = 0x0040
LOG_EVENT_IGNORABLE_F = 0x0080  # a reader that does not know the event's type may skip it
LOG_EVENT_NO_FILTER_F = 0x0100
LOG_EVENT_MTS_ISOLATE_F = 0x0200
LOG_EVENT_SKIP_REPLICATION_F = 0x0400
# the flags' names by bit, from the constants above
LOG_EVENT_FLAGS: dict[int, str] = {
    bit: name for name, bit in list(globals().items()) if name.startswith("LOG_EVENT_") and name.endswith("_F")
}


@dataclass(frozen=True, slots=True)
class EventHeader:
    """The common header of one event, plus where the event was found.

    ``pos`` is the byte position of the event in its file or stream (for an event inside a TRANSACTION_PAYLOAD: its
    offset in the uncompressed payload, with ``in_payload`` the payload event's position).  ``checksum`` is the
    stored CRC32 (``None`` when the log has no checksums).
    """

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int
    pos: int
    checksum: int | None = None
    in_payload: int | None = None

    @property
    def type(self) -> str:
        """The server's name of the type, e.g. ``TABLE_MAP_EVENT``."""
        return EventType.name_of(self.type_code)

    @property
    def end_pos(self) -> int:
        return self.pos + self.event_size

    @property
    def flag_names(self) -> list[str]:
        return [name for bit, name in LOG_EVENT_FLAGS.items() if self.flags & bit] + (
            [f"0x{self.flags & ~sum(LOG_EVENT_FLAGS):04x}"] if self.flags & ~sum(LOG_EVENT_FLAGS) else []
        )


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every decoded event: the header, and a one-line human summary."""

    header: EventHeader

    type_codes: ClassVar[tuple[int, ...]] = ()

    @property
    def type(self) -> str:
        return self.header.type

    @property
    def type_code(self) -> int:
        return self.header.type_code

    def summary(self) -> str:
        """One line for ``binlake events``; families override it."""
        return ""


@dataclass(frozen=True, slots=True)
class RawEvent(Event):
    """An event whose type binlake does not decode: its bytes after the common header, checksum excluded."""

    body: bytes

    def summary(self) -> str:
        return f"{len(self.body)} bytes not decoded"


def quicken(classes: Iterable[type]) -> list[type]:
    """Give each frozen, slotted dataclass of ``classes`` an ``__init__`` that stores the fields through their
    slots' descriptors; the classes changed.

    The ``__init__`` dataclasses generates for a frozen class calls ``object.__setattr__`` once per field (its own
    ``__setattr__`` refuses): 1.1 us for an event header of nine fields, paid for every header and every event a
    decoder makes.  Storing through the slot descriptors (C calls) takes about half that; the signature, the
    defaults and the frozen instances are the same (tests/events/test_quicken.py).  Classes with anything else in
    their ``__init__`` (``__post_init__``, factories, init-only or keyword-only fields) are left alone.

    >>> @dataclass(frozen=True, slots=True)
    ... class P:
    ...     x: int
    ...     y: int = 0
    >>> quicken([P]) == [P], P(1) == P(1, 0)
    (True, True)
    """
    import dataclasses

    changed = []
    for cls in classes:
        params = getattr(cls, "__dataclass_params__", None)
        if params is None or not params.frozen or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
            continue
        fields = dataclasses.fields(cls)
        setters = {f.name: _slot_setter(cls, f.name) for f in fields}
        simple = all(
            f.init and not f.kw_only and f.default_factory is dataclasses.MISSING and setters[f.name] for f in fields
        )
        if not simple:
            continue
        ns: dict[str, object] = {f"_set_{f.name}": setters[f.name] for f in fields}
        params_src = []
        for f in fields:
            if f.default is dataclasses.MISSING:
                params_src.append(f.name)
            else:
                ns[f"_default_{f.name}"] = f.default
                params_src.append(f"{f.name}=_default_{f.name}")
        body = "".join(f"\n    _set_{f.name}(self, {f.name})" for f in fields) or "\n    pass"
        exec(f"def __init__(self, {', '.join(params_src)}):{body}", ns)  # as dataclasses makes its own __init__
        init = ns["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
        cls.__init__ = init  # type: ignore[misc]
        changed.append(cls)
    return changed


def _slot_setter(cls: type, name: str) -> Callable[[object, object], None] | None:
    """The ``__set__`` of the slot ``name`` of ``cls`` or of a base class, ``None`` when it has no slot."""
    for klass in cls.__mro__:
        slot = klass.__dict__.get(name)
        if slot is not None and hasattr(slot, "__set__") and name in klass.__dict__.get("__slots__", ()):
            return slot.__set__  # type: ignore[no-any-return]
    return None
