"""Control and statement-context events: ROTATE, XID, INTVAR, RAND, USER_VAR, STOP, INCIDENT, HEARTBEAT (v1, v2),
IGNORABLE, ROWS_QUERY, VIEW_CHANGE, TRANSACTION_CONTEXT and XA_PREPARE.

Layouts, all little-endian (MySQL ``libs/mysql/binlog/event/control_events.{h,cpp}`` and ``statement_events.cpp``;
MariaDB ``sql/log_event.{h,cc}``)::

    ROTATE              position u64 (absent in binlog v1), next file name to the end
    XID                 xid u64
    INTVAR              type u8 (1 LAST_INSERT_ID, 2 INSERT_ID), value u64
    RAND                seed1 u64, seed2 u64
    USER_VAR            name_len u32, name, is_null u8; unless NULL: type u8, charset u32, value_len u32, value,
                        and (5.6+/10.x) flags u8 (UNSIGNED_F = 1)
    STOP                nothing
    INCIDENT            incident u16, message_len u8, message
    HEARTBEAT           the current file name to the end (the position is the header's log_pos); MariaDB past
                        4 GiB: the header's log_pos is 0 and a position u64 comes before the name
    HEARTBEAT_V2        TLV fields (type, length, value: packed integers): 1 file name, 2 position, 0 ends
    IGNORABLE           nothing binlake (or any server) reads
    ROWS_QUERY          length u8 (the text's length modulo 256, unused), the statement to the end
    VIEW_CHANGE         view_id 40 (NUL-padded), seq_number u64, cert_info_len u32, then cert_info_len pairs of
                        (key_len u16, key, value_len u32, value)
    TRANSACTION_CONTEXT server_uuid_len u8, thread_id u32, gtid_specified u8, write_set_len u32, read_set_len u32,
                        snapshot_version_len u32, then server_uuid, snapshot_version, write_set_len and
                        read_set_len items of (len u16, bytes)
    XA_PREPARE          one_phase u8, format_id u32, gtrid_len u32, bqual_len u32, gtrid, bqual

A server that streams a binlog sends an artificial ROTATE before any format description, so a decoder cannot
know whether that event ends in a CRC32; such a ROTATE's name then has 4 extra bytes (seen from MariaDB, mysql_async
issue 189).  :func:`decode_rotate` recognises them by recomputing the checksum and keeps them apart.

Example::

    >>> from binlake.events.base import EventHeader
    >>> from binlake.events.context import DecodeContext
    >>> body = (4).to_bytes(8, "little") + b"binlog.000002"
    >>> decode_rotate(EventHeader(0, 4, 1, 40, 0, 0x20, 0), body, DecodeContext()).summary()
    'to binlog.000002:4 (artificial)'
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import Decimal

from binlake.errors import MalformedError
from binlake.events.base import HEADER, LOG_EVENT_ARTIFICIAL_F, Event, EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.wire import F64, I64, U64, Cursor, crc32

__all__ = [
    "HeartbeatEvent",
    "IgnorableEvent",
    "IncidentEvent",
    "IntvarEvent",
    "RandEvent",
    "RotateEvent",
    "RowsQueryEvent",
    "StopEvent",
    "TransactionContextEvent",
    "UserVarEvent",
    "ValueType",
    "ViewChangeEvent",
    "XaPrepareEvent",
    "XidEvent",
]


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


# -- ROTATE --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RotateEvent(Event):
    """The binlog continues in ``name`` at ``position`` (a real rotate at a file's end, or an artificial one with
    LOG_EVENT_ARTIFICIAL_F at the start of a relay log or a replication stream).

    ``trailing_checksum`` is the CRC32 found at the end of a name of an artificial ROTATE read before any format
    description (see the module docstring); ``None`` otherwise.
    """

    position: int
    name_raw: bytes
    trailing_checksum: int | None = None

    @property
    def name(self) -> str:
        return _text(self.name_raw)

    @property
    def artificial(self) -> bool:
        return bool(self.header.flags & LOG_EVENT_ARTIFICIAL_F)

    def summary(self) -> str:
        return f"to {self.name}:{self.position}" + (" (artificial)" if self.artificial else "")


def decode_rotate(header: EventHeader, body: bytes, ctx: DecodeContext) -> RotateEvent:
    c = ctx.cursor(body)
    # binlog v1 has no post-header: the position is implicitly 4 (Rotate_event, control_events.cpp)
    position = c.u64("position") if ctx.post_header_len(EventType.ROTATE_EVENT) else 4
    name = c.rest()
    if ctx.fde is None and len(name) > 4:
        raw_header = HEADER.pack(
            header.timestamp, header.type_code, header.server_id, header.event_size, header.log_pos, header.flags
        )
        stored = int.from_bytes(name[-4:], "little")
        if crc32(raw_header + body[:-4]) == stored:
            return RotateEvent(header, position, name[:-4], stored)
    return RotateEvent(header, position, name)


# -- XID, INTVAR, RAND, STOP ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class XidEvent(Event):
    """COMMIT of a transaction on an XA-capable engine; ``xid`` is the server's internal transaction number."""

    xid: int

    def summary(self) -> str:
        return f"COMMIT /* xid={self.xid} */"


def decode_xid(header: EventHeader, body: bytes, ctx: DecodeContext) -> XidEvent:
    return XidEvent(header, ctx.cursor(body).u64("xid"))


class IntvarType(enum.IntEnum):
    """``Intvar_event::Int_event_type``."""

    INVALID_INT = 0
    LAST_INSERT_ID = 1
    INSERT_ID = 2


@dataclass(frozen=True, slots=True)
class IntvarEvent(Event):
    """The LAST_INSERT_ID() or auto-increment value the next statement used."""

    kind: int
    value: int

    @property
    def kind_name(self) -> str:
        try:
            return IntvarType(self.kind).name
        except ValueError:
            return f"UNKNOWN_{self.kind}"

    def summary(self) -> str:
        return f"SET {self.kind_name}={self.value}"


def decode_intvar(header: EventHeader, body: bytes, ctx: DecodeContext) -> IntvarEvent:
    c = ctx.cursor(body)
    return IntvarEvent(header, c.u8("type"), c.u64("value"))


@dataclass(frozen=True, slots=True)
class RandEvent(Event):
    """The RAND() seeds of the next statement."""

    seed1: int
    seed2: int

    def summary(self) -> str:
        return f"SET @@RAND_SEED1={self.seed1}, @@RAND_SEED2={self.seed2}"


def decode_rand(header: EventHeader, body: bytes, ctx: DecodeContext) -> RandEvent:
    c = ctx.cursor(body)
    return RandEvent(header, c.u64("seed1"), c.u64("seed2"))


@dataclass(frozen=True, slots=True)
class StopEvent(Event):
    """The server stopped; the log ends here without a ROTATE."""

    def summary(self) -> str:
        return "server stopped"


def decode_stop(header: EventHeader, body: bytes, ctx: DecodeContext) -> StopEvent:
    return StopEvent(header)


# -- USER_VAR ------------------------------------------------------------------------------------------------------


class ValueType(enum.IntEnum):
    """``Item_result`` (include/mysql/udf_registration_types.h): the type of a user variable's value."""

    STRING_RESULT = 0
    REAL_RESULT = 1
    INT_RESULT = 2
    ROW_RESULT = 3
    DECIMAL_RESULT = 4


_UNSIGNED_F = 1


@dataclass(frozen=True, slots=True)
class UserVarEvent(Event):
    """``SET @name := value`` as the next statement saw it.

    ``value_type`` is the raw ``Item_result``; ``charset`` the collation id of a string value (``63`` binary);
    ``flags`` is ``None`` when the server wrote none (before MySQL 5.6 / MariaDB 10.0).  :attr:`value` is the
    interpreted value: ``None`` (NULL), ``int``, ``float``, ``Decimal``, or ``str`` (``bytes`` for binary or a
    charset Python lacks).
    """

    name_raw: bytes
    is_null: bool
    value_type: int
    charset: int
    value_raw: bytes
    flags: int | None

    @property
    def name(self) -> str:
        return _text(self.name_raw)

    @property
    def value_type_name(self) -> str:
        try:
            return ValueType(self.value_type).name
        except ValueError:
            return f"UNKNOWN_{self.value_type}"

    @property
    def unsigned(self) -> bool:
        return bool((self.flags or 0) & _UNSIGNED_F)

    @property
    def value(self) -> object:
        raw = self.value_raw
        if self.is_null:
            return None
        if self.value_type == ValueType.INT_RESULT:
            return int((U64 if self.unsigned else I64).unpack(raw)[0])
        if self.value_type == ValueType.REAL_RESULT:
            return float(F64.unpack(raw)[0])
        if self.value_type == ValueType.DECIMAL_RESULT:
            return _user_var_decimal(raw)
        from binlake.values.collations import codec, decode

        name = codec(self.charset)
        return raw if name is None else decode(raw, name)

    def summary(self) -> str:
        value = self.value
        shown = "NULL" if value is None else repr(value) if isinstance(value, str | bytes) else str(value)
        return f"SET @`{self.name}`:={shown}"


def _user_var_decimal(raw: bytes) -> Decimal:
    """A DECIMAL user variable: precision u8, scale u8, then the binary decimal (``User_var_log_event::print``)."""
    from binlake.coltypes import Column, ColumnType
    from binlake.values.decimal import READERS

    if len(raw) < 2:
        raise MalformedError("DECIMAL user variable shorter than its precision and scale")
    col = Column.build(0, ColumnType.NEWDECIMAL, raw[:2])
    value, _ = READERS[ColumnType.NEWDECIMAL](col)(raw, 2)
    if not isinstance(value, Decimal):
        raise MalformedError("DECIMAL user variable did not decode to a decimal")
    return value


_VALUE_SIZES: dict[int, int] = {ValueType.INT_RESULT: 8, ValueType.REAL_RESULT: 8}
_VALID_TYPES = (ValueType.STRING_RESULT, ValueType.REAL_RESULT, ValueType.INT_RESULT, ValueType.DECIMAL_RESULT)


def decode_user_var(header: EventHeader, body: bytes, ctx: DecodeContext) -> UserVarEvent:
    c = ctx.cursor(body)
    name = c.take(c.u32("name_len"), "name")
    if c.u8("is_null"):
        return UserVarEvent(header, name, True, ValueType.STRING_RESULT, 63, b"", None)
    value_type = c.u8("type")
    charset = c.u32("charset")
    value = c.take(c.u32("value_len"), "value")
    if value_type not in _VALID_TYPES:  # User_var_event::User_var_event rejects ROW_RESULT and unknown types
        raise MalformedError(f"user variable of invalid type {value_type}")
    if _VALUE_SIZES.get(value_type, len(value)) != len(value):
        raise MalformedError(f"{ValueType(value_type).name} user variable of {len(value)} bytes")
    flags = c.u8("flags") if c.remaining else None
    return UserVarEvent(header, name, False, value_type, charset, value, flags)


# -- INCIDENT, HEARTBEAT, IGNORABLE, ROWS_QUERY -------------------------------------------------------------------

INCIDENTS = {0: "INCIDENT_NONE", 1: "INCIDENT_LOST_EVENTS"}


@dataclass(frozen=True, slots=True)
class IncidentEvent(Event):
    """Something happened on the source that the replica cannot know from the log (e.g. lost events)."""

    incident: int
    message_raw: bytes

    @property
    def incident_name(self) -> str:
        return INCIDENTS.get(self.incident, f"UNKNOWN_{self.incident}")

    @property
    def message(self) -> str:
        return _text(self.message_raw)

    def summary(self) -> str:
        return f"{self.incident_name}: {self.message}" if self.message_raw else self.incident_name


def decode_incident(header: EventHeader, body: bytes, ctx: DecodeContext) -> IncidentEvent:
    c = ctx.cursor(body)
    incident = c.u16("incident")
    message = c.take(c.u8("message_len"), "message") if c.remaining else b""
    return IncidentEvent(header, incident, message)


@dataclass(frozen=True, slots=True)
class HeartbeatEvent(Event):
    """A replication heartbeat: the source is at ``log_file``:``position`` (never written to a file)."""

    log_file_raw: bytes
    position: int

    @property
    def log_file(self) -> str:
        return _text(self.log_file_raw)

    def summary(self) -> str:
        return f"heartbeat at {self.log_file}:{self.position}"


HEARTBEAT_SUB_HEADER = 8
"""MariaDB's ``HB_SUB_HEADER_LEN``: the bytes of the position a heartbeat carries in its body past 4 GiB."""


def decode_heartbeat(header: EventHeader, body: bytes, ctx: DecodeContext) -> HeartbeatEvent:
    """``send_heartbeat_event`` (MariaDB ``sql/sql_repl.cc``): the header's ``log_pos`` is the position and the body
    the file name, except past 4 GiB, where ``log_pos`` does not hold the position: MariaDB then writes 0 there and
    the position as a u64 (``int8store``) before the name.  MySQL writes no such field (its HEARTBEAT_LOG_EVENT_V2
    carries large positions): a zero ``log_pos`` is read so only from MariaDB, or before any format description."""
    c = ctx.cursor(body)
    if header.log_pos == 0 and c.remaining >= HEARTBEAT_SUB_HEADER and (ctx.fde is None or ctx.is_mariadb):
        position = c.u64("heartbeat log position")
        return HeartbeatEvent(header, c.rest(), position)
    return HeartbeatEvent(header, c.rest(), header.log_pos)


def _packed_value(value: memoryview, what: str) -> int:
    return Cursor(value).packed_int(what)


def decode_heartbeat_v2(header: EventHeader, body: bytes, ctx: DecodeContext) -> HeartbeatEvent:
    """``Heartbeat_event_v2`` (control_events.cpp): OTW_HB_LOG_FILENAME_FIELD 1, OTW_HB_LOG_POSITION_FIELD 2,
    OTW_HB_HEADER_END_MARK 0; unknown fields are skipped by their length."""
    c = ctx.cursor(body)
    name, position = b"", 0
    while c.remaining:
        kind = c.packed_int("heartbeat field type")
        if kind == 0:
            break
        value = c.view(c.packed_int("heartbeat field length"), "heartbeat field")
        if kind == 1:
            name = bytes(value)
        elif kind == 2:
            position = _packed_value(value, "heartbeat log position")
    return HeartbeatEvent(header, name, position)


@dataclass(frozen=True, slots=True)
class IgnorableEvent(Event):
    """IGNORABLE_LOG_EVENT: a placeholder a server may skip; its body is kept as it is."""

    body: bytes

    def summary(self) -> str:
        return f"ignorable, {len(self.body)} bytes"


def decode_ignorable(header: EventHeader, body: bytes, ctx: DecodeContext) -> IgnorableEvent:
    return IgnorableEvent(header, bytes(body))


@dataclass(frozen=True, slots=True)
class RowsQueryEvent(Event):
    """The statement behind the following row events (``binlog_rows_query_log_events``)."""

    query_raw: bytes

    @property
    def query(self) -> str:
        return _text(self.query_raw)

    def summary(self) -> str:
        text = " ".join(self.query.split())
        return text if len(text) <= 200 else text[:197] + "..."


def decode_rows_query(header: EventHeader, body: bytes, ctx: DecodeContext) -> RowsQueryEvent:
    c = ctx.cursor(body)
    c.skip(1, "length (unused: the text runs to the end)")
    return RowsQueryEvent(header, c.rest())


# -- Group Replication: VIEW_CHANGE, TRANSACTION_CONTEXT ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ViewChangeEvent(Event):
    """A Group Replication membership change and the certification information at that point."""

    view_id: str
    seq_number: int
    certification_info: tuple[tuple[bytes, bytes], ...]
    rest: bytes

    def summary(self) -> str:
        return f"view {self.view_id}, seq {self.seq_number}, {len(self.certification_info)} certification entries"


def decode_view_change(header: EventHeader, body: bytes, ctx: DecodeContext) -> ViewChangeEvent:
    c = ctx.cursor(body)
    view_id = _text(c.take(40, "view_id").split(b"\0", 1)[0])
    seq_number = c.u64("seq_number")
    count = c.u32("cert_info_len")
    info = tuple((c.take(c.u16("key_len"), "key"), c.take(c.u32("value_len"), "value")) for _ in range(count))
    return ViewChangeEvent(header, view_id, seq_number, info, c.rest())


def _item_set(c: Cursor, count: int, what: str) -> tuple[bytes, ...]:
    return tuple(c.take(c.u16(what), what) for _ in range(count))


@dataclass(frozen=True, slots=True)
class TransactionContextEvent(Event):
    """Group Replication's certification input for one transaction: write set hashes, snapshot version."""

    server_uuid: str
    thread_id: int
    gtid_specified: bool
    snapshot_version: bytes
    write_set: tuple[bytes, ...]
    read_set: tuple[bytes, ...]

    def summary(self) -> str:
        return f"server {self.server_uuid}, thread {self.thread_id}, {len(self.write_set)} write-set items"


def decode_transaction_context(header: EventHeader, body: bytes, ctx: DecodeContext) -> TransactionContextEvent:
    c = ctx.cursor(body)
    uuid_len = c.u8("server_uuid_len")
    thread_id = c.u32("thread_id")
    gtid_specified = bool(c.u8("gtid_specified"))
    write_len, read_len, snapshot_len = c.u32("write_set_len"), c.u32("read_set_len"), c.u32("snapshot_len")
    uuid = _text(c.take(uuid_len, "server_uuid"))
    snapshot = c.take(snapshot_len, "snapshot_version")
    write_set = _item_set(c, write_len, "write set item")
    read_set = _item_set(c, read_len, "read set item")
    return TransactionContextEvent(header, uuid, thread_id, gtid_specified, snapshot, write_set, read_set)


# -- XA_PREPARE ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class XaPrepareEvent(Event):
    """XA PREPARE (or XA COMMIT ... ONE PHASE) of an XA transaction; ``gtrid``/``bqual``/``format_id`` is its XID."""

    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes

    @property
    def xid_text(self) -> str:
        """The XID as the servers print it: ``X'6774',X'',1``."""
        return f"X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}"

    def summary(self) -> str:
        return f"XA {'COMMIT' if self.one_phase else 'PREPARE'} {self.xid_text}" + (
            " ONE PHASE" if self.one_phase else ""
        )


_XID_MAX = 64  # MAXGTRIDSIZE / MAXBQUALSIZE


def decode_xa_prepare(header: EventHeader, body: bytes, ctx: DecodeContext) -> XaPrepareEvent:
    c = ctx.cursor(body)
    one_phase = bool(c.u8("one_phase"))
    format_id = c.u32("format_id")
    gtrid_len, bqual_len = c.u32("gtrid_length"), c.u32("bqual_length")
    if gtrid_len > _XID_MAX or bqual_len > _XID_MAX:
        raise MalformedError(f"XID lengths {gtrid_len}/{bqual_len} exceed {_XID_MAX}")
    return XaPrepareEvent(header, one_phase, format_id, c.take(gtrid_len, "gtrid"), c.take(bqual_len, "bqual"))
