"""Global transaction ids: MySQL GTID (33), ANONYMOUS_GTID (34), GTID_TAGGED (42) and PREVIOUS_GTIDS (35); MariaDB
GTID (162), GTID_LIST (163) and BINLOG_CHECKPOINT (161).

MySQL GTID / ANONYMOUS_GTID (``Gtid_event`` in ``libs/mysql/binlog/event/control_events.cpp``), each field present
only when the bytes before it were written and bytes remain::

    flags 1 (1 = may have statement-based changes), sid 16, gno i64            5.6
    typecode 1 (= 2), last_committed i64, sequence_number i64                  5.7.6+ logical clock
    immediate_commit_timestamp 7 (µs; bit 55 set: original_commit_timestamp 7 follows, else equal)   8.0.1+
    transaction_length packed integer                                          8.0.2+
    immediate_server_version 4 (bit 31 set: original_server_version 4 follows, else equal)         8.0.14+
    commit_group_ticket 8                                                      8.0.33+

GTID_TAGGED (MySQL 8.4+) is a message of the MySQL serialization library (``libs/mysql/serialization``)::

    format_version varlen, payload_size varlen (the whole message), last_non_ignorable_field_id varlen,
    then (field_id varlen, value) pairs: 0 flags, 1 uuid (16 varlen bytes), 2 gno (signed), 3 tag (varlen length +
    bytes), 4 last_committed (signed), 5 sequence_number (signed), 6 immediate_commit_timestamp,
    7 original_commit_timestamp, 8 transaction_length, 9 immediate_server_version, 10 original_server_version,
    11 commit_group_ticket

A varlen integer keeps its byte count in the trailing one-bits of its first byte (count = ones + 1; ``0xFF``: 8
raw bytes follow) and its value in the bits above; a signed one is zig-zag encoded (``(x << 1) ^ (x >> 63)``).

PREVIOUS_GTIDS (``Previous_gtids_event``; ``Gtid_set::add_gtid_encoding`` in ``sql/rpl_gtid_set.cc``)::

    n_sids u64 (top byte 1: tagged format, count in bits 8..55)
    per sid: uuid 16, (tagged: tag as varlen length + bytes), n_intervals u64, (start i64, end i64 exclusive)...

MariaDB (``Gtid_log_event``, ``Gtid_list_log_event``, ``Binlog_checkpoint_log_event`` in ``sql/log_event.cc``)::

    GTID              seq_no u64, domain_id u32, flags2 u8, [commit_id u64 if FL_GROUP_COMMIT_ID],
                      [format_id u32, gtrid_len u8, bqual_len u8, xid data if FL_PREPARED_XA|FL_COMPLETED_XA],
                      [flags_extra u8, [extra_engines u8], [sa_seq_no u64], [thread_id u32]] (zero-padded to 19)
    GTID_LIST         count u32 (low 28 bits; top 4 bits flags), count x (domain u32, server_id u32, seq_no u64)
    BINLOG_CHECKPOINT name_len u32, name

Example::

    >>> s = GtidSet((GtidInterval("3e11fa47-71ca-11e1-9e33-c80aa9429562", None, ((1, 6), (7, 8))),
    ...              GtidInterval("3e11fa47-71ca-11e1-9e33-c80aa9429562", "blue", ((1, 4),))))
    >>> str(s)
    '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7:blue:1-3'
"""

from __future__ import annotations

import struct
import uuid as _uuid
from collections.abc import Callable
from dataclasses import dataclass

from binlake.errors import MalformedError, TruncatedError, UnsupportedError
from binlake.events.base import Event, EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.wire import Cursor

__all__ = [
    "FL_ALLOW_PARALLEL",
    "FL_COMMIT_ALTER_E1",
    "FL_COMPLETED_XA",
    "FL_DDL",
    "FL_EXTRA_MULTI_ENGINE_E1",
    "FL_EXTRA_THREAD_ID",
    "FL_GROUP_COMMIT_ID",
    "FL_PREPARED_XA",
    "FL_ROLLBACK_ALTER_E1",
    "FL_STANDALONE",
    "FL_START_ALTER_E1",
    "FL_TRANSACTIONAL",
    "FL_WAITED",
    "GTID_FORMAT_TAGGED",
    "MARIA_GTID_FLAGS",
    "MARIA_GTID_FLAGS_EXTRA",
    "SERIALIZATION_FORMAT_VERSION",
    "BinlogCheckpointEvent",
    "GtidEvent",
    "GtidInterval",
    "GtidListEvent",
    "GtidSet",
    "MariaGtid",
    "MariaGtidEvent",
    "PreviousGtidsEvent",
    "read_varlen",
    "read_varlen_signed",
]

_I64 = struct.Struct("<q")
_LOGICAL_TIMESTAMP_TYPECODE = 2
_ANONYMOUS_SID = bytes(16)


def format_uuid(raw: bytes) -> str:
    return str(_uuid.UUID(bytes=raw))


def read_varlen(c: Cursor, what: str = "varlen integer") -> int:
    """An unsigned integer of the MySQL serialization library (``variable_length_integers.h``)."""
    first = c.u8(what)
    if first == 0xFF:
        return c.u64(what)
    size = ((~first) & (first + 1)).bit_length()  # trailing one-bits + 1
    return ((c.uint(size - 1, what) << 8) | first) >> size


def read_varlen_signed(c: Cursor, what: str = "varlen integer") -> int:
    """A zig-zag encoded signed integer of the serialization library."""
    value = read_varlen(c, what)
    return -(value >> 1) - 1 if value & 1 else value >> 1


def _varlen_string(c: Cursor, what: str) -> str:
    return c.take(read_varlen(c, what), what).decode("utf-8", "surrogateescape")


# -- GTID sets -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GtidInterval:
    """The transactions of one source (``uuid``, optionally ``tag``): half-open ``(start, end)`` gno ranges."""

    uuid: str
    tag: str | None
    intervals: tuple[tuple[int, int], ...]

    def ranges_text(self) -> str:
        return ":".join(f"{a}" if b == a + 1 else f"{a}-{b - 1}" for a, b in self.intervals)


@dataclass(frozen=True, slots=True)
class GtidSet:
    """A MySQL GTID set; ``str()`` prints it as ``SELECT @@gtid_executed`` does: ``uuid:1-5:7:tag:1-3,uuid2:1``."""

    entries: tuple[GtidInterval, ...]

    def __str__(self) -> str:
        by_uuid: dict[str, list[str]] = {}
        for e in self.entries:
            parts = by_uuid.setdefault(e.uuid, [])
            parts.append(f"{e.tag}:{e.ranges_text()}" if e.tag is not None else e.ranges_text())
        return ",".join(":".join([u, *parts]) for u, parts in by_uuid.items())

    def __contains__(self, gtid: object) -> bool:
        """``("uuid", "tag" or None, gno) in gtid_set``."""
        if not isinstance(gtid, tuple) or len(gtid) != 3:
            return False
        u, tag, gno = gtid
        return any(e.uuid == u and e.tag == tag and any(a <= gno < b for a, b in e.intervals) for e in self.entries)


# -- MySQL GTID events ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GtidEvent(Event):
    """A MySQL transaction's GTID (GTID_LOG_EVENT, GTID_TAGGED_LOG_EVENT) or its anonymous stand-in.

    Fields a server version did not write are ``None``.  Timestamps are microseconds since the epoch; server
    versions are ``major * 10000 + minor * 100 + patch`` (``80032`` is 8.0.32).  ``unparsed`` holds the ignorable
    fields of a newer GTID_TAGGED format that binlake does not know.
    """

    flags: int
    sid: bytes
    gno: int
    tag: str | None
    last_committed: int | None
    sequence_number: int | None
    immediate_commit_timestamp: int | None
    original_commit_timestamp: int | None
    transaction_length: int | None
    immediate_server_version: int | None
    original_server_version: int | None
    commit_group_ticket: int | None
    unparsed: bytes = b""

    @property
    def uuid(self) -> str:
        return format_uuid(self.sid)

    @property
    def anonymous(self) -> bool:
        return self.header.type_code == EventType.ANONYMOUS_GTID_LOG_EVENT

    @property
    def may_have_sbr(self) -> bool:
        """FLAG_MAY_HAVE_SBR: the transaction may contain statement-based changes."""
        return bool(self.flags & 1)

    @property
    def gtid(self) -> str:
        """``uuid:gno``, ``uuid:tag:gno``, or ``ANONYMOUS``."""
        if self.anonymous:
            return "ANONYMOUS"
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag is not None else f"{self.uuid}:{self.gno}"

    def summary(self) -> str:
        out = f"GTID {self.gtid}"
        if self.last_committed is not None:
            out += f" last_committed={self.last_committed} sequence_number={self.sequence_number}"
        if self.transaction_length is not None:
            out += f" transaction_length={self.transaction_length}"
        return out


def decode_gtid(header: EventHeader, body: bytes, ctx: DecodeContext) -> GtidEvent:
    c = ctx.cursor(body)
    flags = c.u8("gtid_flags")
    sid = c.take(16, "sid")
    gno = _I64.unpack(c.take(8, "gno"))[0]
    last = seq = imm_ts = orig_ts = length = imm_ver = orig_ver = ticket = None
    if c.remaining and c.buf[c.pos] == _LOGICAL_TIMESTAMP_TYPECODE:
        c.skip(1, "logical timestamp typecode")
        last = _I64.unpack(c.take(8, "last_committed"))[0]
        seq = _I64.unpack(c.take(8, "sequence_number"))[0]
        if c.remaining >= 7:
            imm_ts = c.uint(7, "immediate_commit_timestamp")
            orig_ts = imm_ts
            if imm_ts & (1 << 55):
                imm_ts &= ~(1 << 55)
                orig_ts = c.uint(7, "original_commit_timestamp")
            if c.remaining:
                length = c.packed_int("transaction_length")
            if c.remaining >= 4:
                imm_ver = c.u32("immediate_server_version")
                orig_ver = imm_ver
                if imm_ver & (1 << 31):
                    imm_ver &= ~(1 << 31)
                    orig_ver = c.u32("original_server_version")
                if c.remaining >= 8:
                    ticket = c.u64("commit_group_ticket")
    return GtidEvent(header, flags, sid, gno, None, last, seq, imm_ts, orig_ts, length, imm_ver, orig_ver, ticket)


# the format version of the mysql::serialization message a GTID_TAGGED event is (its first field): binlake reads 1
SERIALIZATION_FORMAT_VERSION = 1


def _uuid_field(c: Cursor) -> bytes:
    # a std::array<unsigned char, 16> field: 16 varlen integers, each a byte
    values = [read_varlen(c, "uuid byte") for _ in range(16)]
    if max(values) > 0xFF:
        raise MalformedError(f"GTID_TAGGED uuid byte {max(values)} is out of range")
    return bytes(values)


# field id -> reader; 2, 4, 5 are int64 (zig-zag), 3 a string, the rest unsigned
_TAGGED_FIELDS: dict[int, Callable[[Cursor], object]] = {
    0: read_varlen,
    1: _uuid_field,
    2: read_varlen_signed,
    3: lambda c: _varlen_string(c, "tag"),
    4: read_varlen_signed,
    5: read_varlen_signed,
    **dict.fromkeys(range(6, 12), read_varlen),
}


def decode_gtid_tagged(header: EventHeader, body: bytes, ctx: DecodeContext) -> GtidEvent:
    """Decode a GTID_TAGGED_LOG_EVENT (``Gtid_event::define_fields`` in control_events.h, read by
    ``mysql::serialization``).  Absent original timestamp/server version equal the immediate ones; fields after
    the known ones are kept in ``unparsed`` when the message says they may be ignored."""
    c = ctx.cursor(body)
    start = c.pos
    version = read_varlen(c, "serialization format version")
    if version != SERIALIZATION_FORMAT_VERSION:
        raise UnsupportedError(f"GTID_TAGGED_LOG_EVENT serialization format {version} (binlake reads 1)")
    size = read_varlen(c, "payload_size")
    last_non_ignorable = read_varlen(c, "last_non_ignorable_field_id")
    if start + size > len(body) or start + size < c.pos:
        raise MalformedError(f"GTID_TAGGED payload_size {size} does not fit the {len(body)}-byte event")
    m = c.bounded(start + size)
    v: dict[int, object] = {}
    unparsed = b""
    while m.remaining:
        at = m.pos
        fid = read_varlen(m, "field id")
        read = _TAGGED_FIELDS.get(fid)
        if read is None:
            if fid <= last_non_ignorable:
                raise UnsupportedError(f"GTID_TAGGED_LOG_EVENT field {fid} is unknown and may not be ignored")
            m.pos = at
            unparsed = m.rest()
            break
        v[fid] = read(m)

    def num(fid: int, default: int | None = None) -> int | None:
        value = v.get(fid, default)
        return value if isinstance(value, int) else default

    sid, tag = v.get(1), v.get(3)
    return GtidEvent(
        header,
        num(0, 0) or 0,
        sid if isinstance(sid, bytes) else _ANONYMOUS_SID,
        num(2, 0) or 0,
        tag if isinstance(tag, str) and tag else None,
        num(4, 0),
        num(5, 0),
        num(6),
        num(7, num(6)),
        num(8),
        num(9),
        num(10, num(9)),
        num(11),
        unparsed,
    )


@dataclass(frozen=True, slots=True)
class PreviousGtidsEvent(Event):
    """The GTIDs executed before this binlog file: ``gtid_set``; ``tagged`` says which encoding was used."""

    gtid_set: GtidSet
    tagged: bool

    def summary(self) -> str:
        return str(self.gtid_set) or "(empty)"


# mysql::gtid::Gtid_format::tagged (libs/mysql/gtid/gtid_format.h): the top byte of a PREVIOUS_GTIDS' n_sids word
# when its set holds tagged GTIDs (Gtid_set::encode_nsids_format); untagged is 0
GTID_FORMAT_TAGGED = 1
_MAX_ENTRIES = 1 << 20  # a count no event of this size could hold means a malformed event, not an allocation


def decode_previous_gtids(header: EventHeader, body: bytes, ctx: DecodeContext) -> PreviousGtidsEvent:
    c = ctx.cursor(body)
    word = c.u64("n_sids")
    tagged = word >> 56 == GTID_FORMAT_TAGGED
    n_sids = (word >> 8) & ((1 << 48) - 1) if tagged else word
    if n_sids * 24 > c.remaining:  # each sid takes at least 16 + 8 bytes
        raise MalformedError(f"PREVIOUS_GTIDS claims {n_sids} sids in {c.remaining} bytes")
    entries = []
    for _ in range(n_sids):
        sid = format_uuid(c.take(16, "sid"))
        tag = _varlen_string(c, "tag") if tagged else ""
        n = c.u64("n_intervals")
        if n * 16 > c.remaining:
            raise MalformedError(f"PREVIOUS_GTIDS claims {n} intervals in {c.remaining} bytes")
        raw = c.take(16 * n, "intervals")
        pairs = struct.unpack(f"<{2 * n}q", raw)
        entries.append(GtidInterval(sid, tag or None, tuple(zip(pairs[::2], pairs[1::2], strict=True))))
    return PreviousGtidsEvent(header, GtidSet(tuple(entries)), tagged)


# -- MariaDB -------------------------------------------------------------------------------------------------------

# Gtid_log_event::FL_* (flags2) of MariaDB sql/log_event.h
FL_STANDALONE = 0x01  # a statement alone (DDL, non-transactional): no COMMIT or XID follows
FL_GROUP_COMMIT_ID = 0x02  # a commit_id follows: groups of one id committed together
FL_TRANSACTIONAL = 0x04
FL_ALLOW_PARALLEL = 0x08
FL_WAITED = 0x10
FL_DDL = 0x20
FL_PREPARED_XA = 0x40  # XA PREPARE of the xid that follows
FL_COMPLETED_XA = 0x80  # XA COMMIT/ROLLBACK of the xid that follows
MARIA_GTID_FLAGS = {
    FL_STANDALONE: "FL_STANDALONE",
    FL_GROUP_COMMIT_ID: "FL_GROUP_COMMIT_ID",
    FL_TRANSACTIONAL: "FL_TRANSACTIONAL",
    FL_ALLOW_PARALLEL: "FL_ALLOW_PARALLEL",
    FL_WAITED: "FL_WAITED",
    FL_DDL: "FL_DDL",
    FL_PREPARED_XA: "FL_PREPARED_XA",
    FL_COMPLETED_XA: "FL_COMPLETED_XA",
}
# Gtid_log_event::FL_EXTRA_* and FL_*_ALTER_E1 (flags_extra; the QUERY event's Q_GTID_FLAGS3 carries the same bits)
FL_EXTRA_MULTI_ENGINE_E1 = 0x01
FL_START_ALTER_E1 = 0x02  # the START of a two-phase ALTER (binlog_alter_two_phase)
FL_COMMIT_ALTER_E1 = 0x04  # its COMMIT: the START's sequence number follows
FL_ROLLBACK_ALTER_E1 = 0x08  # its ROLLBACK: the START's sequence number follows
FL_EXTRA_THREAD_ID = 0x10
MARIA_GTID_FLAGS_EXTRA = {
    FL_EXTRA_MULTI_ENGINE_E1: "FL_EXTRA_MULTI_ENGINE_E1",
    FL_START_ALTER_E1: "FL_START_ALTER_E1",
    FL_COMMIT_ALTER_E1: "FL_COMMIT_ALTER_E1",
    FL_ROLLBACK_ALTER_E1: "FL_ROLLBACK_ALTER_E1",
    FL_EXTRA_THREAD_ID: "FL_EXTRA_THREAD_ID",
}


@dataclass(frozen=True, slots=True)
class MariaGtid:
    """One MariaDB GTID ``domain-server-seq``."""

    domain_id: int
    server_id: int
    seq_no: int

    def __str__(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


@dataclass(frozen=True, slots=True)
class MariaGtidEvent(Event):
    """A MariaDB event group's GTID (its server id is the header's); it opens the group in place of ``BEGIN``.

    ``xid`` is ``(format_id, gtrid, bqual)`` for XA groups (FL_PREPARED_XA / FL_COMPLETED_XA).
    """

    seq_no: int
    domain_id: int
    flags: int
    commit_id: int | None
    xid: tuple[int, bytes, bytes] | None
    flags_extra: int
    extra_engines: int | None
    sa_seq_no: int | None
    thread_id: int | None

    @property
    def gtid(self) -> MariaGtid:
        return MariaGtid(self.domain_id, self.header.server_id, self.seq_no)

    @property
    def standalone(self) -> bool:
        """FL_STANDALONE: a single statement (DDL, non-transactional), no COMMIT or XID follows."""
        return bool(self.flags & FL_STANDALONE)

    @property
    def flag_names(self) -> list[str]:
        return [n for bit, n in MARIA_GTID_FLAGS.items() if self.flags & bit]

    @property
    def flags_extra_names(self) -> list[str]:
        return [n for bit, n in MARIA_GTID_FLAGS_EXTRA.items() if self.flags_extra & bit]

    def summary(self) -> str:
        out = f"GTID {self.gtid}"
        if not self.standalone:
            out += " trans"
        if self.commit_id is not None:
            out += f" cid={self.commit_id}"
        if self.flags & FL_DDL:
            out += " ddl"
        if self.xid is not None:
            fmt, gtrid, bqual = self.xid
            what = "PREPARE" if self.flags & FL_PREPARED_XA else "COMPLETE"
            out += f" XA {what} X'{gtrid.hex()}',X'{bqual.hex()}',{fmt}"
        return out


def decode_maria_gtid(header: EventHeader, body: bytes, ctx: DecodeContext) -> MariaGtidEvent:
    c = ctx.cursor(body)
    seq_no = c.u64("seq_no")
    domain_id = c.u32("domain_id")
    flags = c.u8("flags2")
    commit_id = c.u64("commit_id") if flags & FL_GROUP_COMMIT_ID else None
    xid = None
    if flags & (FL_PREPARED_XA | FL_COMPLETED_XA):
        format_id = c.u32("xid format_id")
        gtrid_len, bqual_len = c.u8("gtrid_length"), c.u8("bqual_length")
        xid = (format_id, c.take(gtrid_len, "gtrid"), c.take(bqual_len, "bqual"))
    flags_extra = c.u8("flags_extra") if c.remaining else 0
    engines = c.u8("extra_engines") if flags_extra & 0x01 else None
    sa_seq_no = c.u64("sa_seq_no") if flags_extra & (0x04 | 0x08) else None
    thread_id = c.u32("thread_id") if flags_extra & 0x10 else None
    return MariaGtidEvent(header, seq_no, domain_id, flags, commit_id, xid, flags_extra, engines, sa_seq_no, thread_id)


@dataclass(frozen=True, slots=True)
class GtidListEvent(Event):
    """The binlog state (last GTID per domain and server) when this file was started."""

    gtids: tuple[MariaGtid, ...]
    flags: int

    def summary(self) -> str:
        return f"[{','.join(str(g) for g in self.gtids)}]"


def decode_gtid_list(header: EventHeader, body: bytes, ctx: DecodeContext) -> GtidListEvent:
    c = ctx.cursor(body)
    word = c.u32("count")
    count, flags = word & 0x0FFFFFFF, word >> 28
    if count * 16 > c.remaining:  # domain u32, server u32, seq_no u64 per entry
        raise TruncatedError(f"GTID list of {count} entries needs {count * 16} bytes, {c.remaining} left")
    gtids = tuple(MariaGtid(c.u32("domain_id"), c.u32("server_id"), c.u64("seq_no")) for _ in range(count))
    return GtidListEvent(header, gtids, flags)


@dataclass(frozen=True, slots=True)
class BinlogCheckpointEvent(Event):
    """The oldest binlog file still needed for crash recovery (``binlog_file``)."""

    binlog_file_raw: bytes

    @property
    def binlog_file(self) -> str:
        return self.binlog_file_raw.decode("utf-8", "surrogateescape")

    def summary(self) -> str:
        return self.binlog_file


def decode_binlog_checkpoint(header: EventHeader, body: bytes, ctx: DecodeContext) -> BinlogCheckpointEvent:
    c = ctx.cursor(body)
    return BinlogCheckpointEvent(header, c.take(c.u32("binlog_file_len"), "binlog_file"))
