"""The replication commands and packets, as bytes: sans-IO (no sockets, no clocks), unit-tested against the protocol
documentation.

Packet framing (MySQL Client/Server Protocol, "MySQL Packets"): every packet is a 3-byte little-endian payload
length, a 1-byte sequence id, then the payload; a payload of 2^24 - 1 bytes or more is split into packets of
exactly 0xFFFFFF bytes followed by a shorter one (possibly empty), which :class:`PacketReader` joins again.

The commands (Replication Protocol, sections COM_REGISTER_SLAVE, COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID;
MySQL ``sql/rpl_source.cc`` ``register_replica``, ``com_binlog_dump``, ``com_binlog_dump_gtid``; MariaDB
``sql/sql_repl.cc``)::

    COM_REGISTER_SLAVE    0x15, server_id u32, hostname (u8 length + bytes), user (u8 + bytes), password
                          (u8 + bytes), port u16, replication_rank u32 (ignored), master_id u32
    COM_BINLOG_DUMP       0x12, position u32, flags u16, server_id u32, file name to the end
    COM_BINLOG_DUMP_GTID  0x1e, flags u16, server_id u32, name_len u32, name, position u64,
                          data_len u32, data (the encoded GTID set; MySQL reads it whatever the flags say)

After a dump command every packet the server sends is one of (Replication Protocol, "Binlog Network Stream";
MariaDB ``mysql_binlog_send``): an event (``0x00``, then with semi-sync the 2 bytes ``0xEF`` and a flag whose bit
0x01 asks for an acknowledgement, then the event), an ERR packet (``0xFF``, code u16, ``#`` and a 5-byte SQL state,
message) when the dump fails, or an EOF packet (``0xFE``) when a non-blocking dump reached the end of the last
binlog.  A semi-sync acknowledgement (Replication Protocol, "Semi-Sync Replication"; MariaDB
``Repl_semi_sync_slave::slave_reply``) is a new command packet (sequence id 0): ``0xEF``, position u64, file name.

Example::

    >>> binlog_dump("binlog.000002", 4, 77, BINLOG_DUMP_NON_BLOCK).hex()
    '120400000001004d00000062696e6c6f672e303030303032'
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator

from binlake.errors import (
    AccessDeniedError,
    BinlogPurgedError,
    ConnectionLostError,
    MalformedError,
    ReplicationError,
    TableChangedError,
    UnsupportedError,
)

__all__ = [
    "BINLOG_DUMP_NON_BLOCK",
    "BINLOG_SEND_ANNOTATE_ROWS_EVENT",
    "BINLOG_THROUGH_GTID",
    "COM_BINLOG_DUMP",
    "COM_BINLOG_DUMP_GTID",
    "COM_QUERY",
    "COM_REGISTER_SLAVE",
    "EOF_PACKET",
    "ERR_PACKET",
    "MARIA_SLAVE_CAPABILITY_GTID",
    "MAX_PAYLOAD",
    "OK_PACKET",
    "SEMI_SYNC_ACK_REQUESTED",
    "SEMI_SYNC_MAGIC",
    "PacketReader",
    "ServerErrorPacket",
    "binlog_dump",
    "binlog_dump_gtid",
    "command_packet",
    "parse_error_packet",
    "register_slave",
    "semi_sync_ack",
    "server_error",
]

COM_QUERY = 0x03
COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
COM_BINLOG_DUMP_GTID = 0x1E

# COM_BINLOG_DUMP(_GTID) flags (Replication Protocol, COM_BINLOG_DUMP_GTID; MariaDB include/mysql_com.h)
BINLOG_DUMP_NON_BLOCK = 0x01  # send an EOF packet at the end of the last binlog instead of waiting for more
BINLOG_THROUGH_GTID = 0x04  # MySQL COM_BINLOG_DUMP_GTID: the data field holds the replica's executed GTID set
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02  # MariaDB: send ANNOTATE_ROWS events (a GTID-capable replica gets holes else)

# MariaDB sql/log_event.h: the replica understands GTID events (else MariaDB 10.6+ refuses with error 1236)
MARIA_SLAVE_CAPABILITY_GTID = 4

SEMI_SYNC_MAGIC = 0xEF  # Repl_semi_sync_base::k_packet_magic_num
SEMI_SYNC_ACK_REQUESTED = 0x01  # k_packet_flag_sync

MAX_PAYLOAD = 0xFFFFFF  # a packet of this payload length is continued by the next one
_HEADER = struct.Struct("<HBB")  # payload length (low 16 bits, high 8 bits), sequence id
_U32 = struct.Struct("<I")

# the first byte of a server's answer packet (MariaDB sql/protocol.cc, net_send_ok/net_send_eof/net_send_error): OK (and
# before each binlog event of a dump), EOF (end of a result set's rows; a non-blocking dump's end), ERR
OK_PACKET, EOF_PACKET, ERR_PACKET = 0x00, 0xFE, 0xFF


def command_packet(payload: bytes) -> bytes:
    """``payload`` framed as the first packet of a command (sequence id 0); commands here are far below 16 MiB."""
    if len(payload) >= MAX_PAYLOAD:
        raise ValueError(f"command of {len(payload)} bytes does not fit one packet")
    n = len(payload)
    return _HEADER.pack(n & 0xFFFF, n >> 16, 0) + payload


def _short_string(value: bytes, what: str) -> bytes:
    if len(value) > 255:
        raise ValueError(f"{what} longer than 255 bytes")
    return bytes([len(value)]) + value


def register_slave(server_id: int, *, hostname: bytes = b"", user: bytes = b"", port: int = 0) -> bytes:
    """The COM_REGISTER_SLAVE payload for replica ``server_id`` (``SHOW SLAVE HOSTS`` lists it).

    The password field is always empty: a server started with ``--show-slave-auth-info`` would print it."""
    _check_server_id(server_id)
    return (
        bytes([COM_REGISTER_SLAVE])
        + _U32.pack(server_id)
        + _short_string(hostname, "hostname")
        + _short_string(user, "user")
        + _short_string(b"", "password")
        + struct.pack("<HII", port, 0, 0)
    )


def binlog_dump(file: str, position: int, server_id: int, flags: int) -> bytes:
    """The COM_BINLOG_DUMP payload: stream from ``file`` at ``position`` (an empty name: the oldest binlog)."""
    _check_server_id(server_id)
    if not 0 <= position <= 0xFFFFFFFF:
        raise UnsupportedError(
            f"position {position} does not fit COM_BINLOG_DUMP's 4 bytes (binlogs over 4 GiB need a GTID start)"
        )
    return struct.pack("<BIHI", COM_BINLOG_DUMP, position, flags, server_id) + file.encode("utf-8")


def binlog_dump_gtid(server_id: int, gtid_data: bytes, flags: int, *, file: str = "", position: int = 4) -> bytes:
    """The COM_BINLOG_DUMP_GTID payload (MySQL): stream every transaction not in the encoded GTID set ``gtid_data``
    (:func:`binlake.replication.gtid.encode_gtid_set`); :data:`BINLOG_THROUGH_GTID` is always set."""
    _check_server_id(server_id)
    name = file.encode("utf-8")
    return (
        struct.pack("<BHII", COM_BINLOG_DUMP_GTID, flags | BINLOG_THROUGH_GTID, server_id, len(name))
        + name
        + struct.pack("<QI", position, len(gtid_data))
        + gtid_data
    )


def semi_sync_ack(file: str, position: int) -> bytes:
    """The payload acknowledging (semi-sync) that every event up to ``position`` of ``file`` was received."""
    return bytes([SEMI_SYNC_MAGIC]) + struct.pack("<Q", position) + file.encode("utf-8")


def _check_server_id(server_id: int) -> None:
    # A dump with server id 0 is treated by the servers as mysqlbinlog's: it never blocks, and it is not a replica
    # that another connection with the same id would cut off (MariaDB get_binlog_end_pos, kill_zombie_dump_threads).
    if not 1 <= server_id <= 0xFFFFFFFF:
        raise ValueError(f"server id {server_id} is not in 1..4294967295")


class PacketReader:
    """Bytes from the socket in, whole packet payloads out (sans-IO).

    :meth:`feed` takes each chunk as read; :meth:`payloads` yields the payload of every whole packet fed so far, as
    ``memoryview``s of immutable ``bytes`` (nothing is copied for packets inside one chunk; a packet split across
    chunks, or continued past 16 MiB, is joined into one ``bytes``).  Sequence ids are not checked: a semi-sync
    acknowledgement resets them on the server side (MariaDB ``net->pkt_nr_can_be_reset``).

    Example::

        >>> r = PacketReader()
        >>> r.feed(b"\\x03\\x00\\x00\\x01abc\\x02\\x00")
        >>> [bytes(p) for p in r.payloads()], r.buffered
        ([b'abc'], 2)
    """

    __slots__ = ("_chunks", "_continued", "_partial")

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._partial = bytearray()  # the start of a packet (header included) whose end is in a later chunk
        self._continued: bytearray | None = None  # payloads of 0xFFFFFF bytes waiting for the packet that ends them

    def feed(self, data: bytes) -> None:
        if data:
            self._chunks.append(bytes(data))

    @property
    def buffered(self) -> int:
        """Bytes fed that are not yet part of a yielded payload."""
        continued = len(self._continued) if self._continued is not None else 0
        return sum(map(len, self._chunks)) + len(self._partial) + continued

    def payloads(self) -> Iterator[memoryview]:
        while self._chunks:
            data = self._chunks.popleft()
            view = memoryview(data)
            off, end = 0, len(data)
            if self._partial:
                off, whole_packet = self._complete_partial(view)
                if not whole_packet:
                    continue  # the chunk ended inside the packet
                whole = bytes(self._partial)
                self._partial.clear()
                payload = self._join(memoryview(whole)[4:], len(whole) - 4)
                if payload is not None:
                    yield payload
            while end - off >= 4:
                length = view[off] | view[off + 1] << 8 | view[off + 2] << 16
                stop = off + 4 + length
                if stop > end:
                    break
                payload = self._join(view[off + 4 : stop], length)
                off = stop
                if payload is not None:
                    yield payload
            if off < end:
                self._partial += view[off:]

    def _complete_partial(self, view: memoryview) -> tuple[int, bool]:
        """Move bytes of ``view`` into the partial packet until it is whole; return how many were taken and
        whether it is whole now."""
        partial = self._partial
        taken = 0
        if len(partial) < 4:
            taken = min(4 - len(partial), len(view))
            partial += view[:taken]
            if len(partial) < 4:
                return taken, False
        need = 4 + (partial[0] | partial[1] << 8 | partial[2] << 16) - len(partial)
        more = min(need, len(view) - taken)
        partial += view[taken : taken + more]
        return taken + more, more == need

    def _join(self, payload: memoryview, length: int) -> memoryview | None:
        """The payload to yield for one packet, joining 16 MiB continuations; ``None`` while more are to come."""
        if length == MAX_PAYLOAD:
            if self._continued is None:
                self._continued = bytearray()
            self._continued += payload
            return None
        if self._continued is not None:
            self._continued += payload
            joined, self._continued = bytes(self._continued), None
            return memoryview(joined)
        return payload


# -- server errors ----------------------------------------------------------------------------------------------


class ServerErrorPacket:
    """An ERR packet's fields: ``code``, ``sql_state`` (``""`` when absent), ``message``."""

    __slots__ = ("code", "message", "sql_state")

    def __init__(self, code: int, sql_state: str, message: str) -> None:
        self.code = code
        self.sql_state = sql_state
        self.message = message

    def __repr__(self) -> str:
        return f"ServerErrorPacket({self.code}, {self.sql_state!r}, {self.message!r})"


def parse_error_packet(payload: bytes | memoryview) -> ServerErrorPacket:
    """Read an ERR packet (``0xFF``, code u16, then ``#`` and a 5-character SQL state with CLIENT_PROTOCOL_41)."""
    if len(payload) < 3 or payload[0] != ERR_PACKET:
        raise MalformedError(f"not an ERR packet: {bytes(payload[:16])!r}")
    code = payload[1] | payload[2] << 8
    rest = bytes(payload[3:])
    state = ""
    if rest[:1] == b"#" and len(rest) >= 6:
        state, rest = rest[1:6].decode("ascii", "replace"), rest[6:]
    return ServerErrorPacket(code, state, rest.decode("utf-8", "replace"))


ER_DBACCESS_DENIED = 1044
ER_ACCESS_DENIED = 1045
ER_TABLEACCESS_DENIED = 1142
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
ER_TABLE_DEF_CHANGED = 1412  # a consistent read of a table altered after the read view began
# errors after which the same request can succeed later: the server is going down, the connection was killed,
# too many connections; the client-side codes (CR_*) PyMySQL raises for a dropped or refused connection
RETRYABLE_CODES = frozenset(
    {
        1040,  # ER_CON_COUNT_ERROR
        1053,  # ER_SERVER_SHUTDOWN
        1152,  # ER_ABORTING_CONNECTION
        1159,  # ER_NET_READ_INTERRUPTED
        1161,  # ER_NET_WRITE_INTERRUPTED
        1317,  # ER_QUERY_INTERRUPTED
        1927,  # ER_CONNECTION_KILLED (MariaDB)
        2003,  # CR_CONN_HOST_ERROR
        2006,  # CR_SERVER_GONE_ERROR
        2013,  # CR_SERVER_LOST
        2055,  # CR_SERVER_LOST_EXTENDED
        4031,  # ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
    }
)
# the messages of error 1236 that mean "the binlog (or GTID) you asked for is gone": MariaDB sql_repl.cc
# init_binlog_sender and gtid_find_binlog_file, MySQL rpl_binlog_sender.cc Binlog_sender::init /
# check_start_file
_PURGED_MESSAGES = (
    "could not find first log file name in binary log index file",
    "could not find gtid state requested by slave in any binlog files",
    "purged binary logs containing gtids",
    "purged required binary logs",
    "could not open log file",
)


def server_error(
    code: int, message: str, *, file: str | None = None, pos: int | None = None, gtid: str | None = None
) -> ReplicationError:
    """The binlake error for a server's error ``code`` and ``message`` met at ``file``/``pos`` (or GTID ``gtid``):
    :class:`~binlake.errors.BinlogPurgedError` when the start point is gone, :class:`ConnectionLostError` when a
    retry can succeed, else :class:`ReplicationError` (refused: retrying would only repeat it)."""
    text = f"server error {code}: {message}"
    lower = message.lower()
    if code == ER_MASTER_FATAL_ERROR_READING_BINLOG and any(m in lower for m in _PURGED_MESSAGES):
        what = f"GTID position {gtid}" if gtid is not None and file is None else f"binlog {file}"
        return BinlogPurgedError(f"the server no longer has {what} (purged?): {text}", file=file, pos=pos, gtid=gtid)
    if code in RETRYABLE_CODES:
        return ConnectionLostError(text, file=file, pos=pos)
    if code == ER_TABLE_DEF_CHANGED:
        return TableChangedError(text, file=file, pos=pos)
    if "same server_uuid/server_id" in lower:  # MariaDB ER_SLAVE_SAME_ID 4052; MySQL says it in error 1236
        return ReplicationError(
            f"{text} (another replica connected with this server id: two replicas with one id cut each other off,"
            " give each its own --server-id)",
            file=file,
            pos=pos,
        )
    if code in (ER_ACCESS_DENIED, ER_SPECIFIC_ACCESS_DENIED):
        return AccessDeniedError(
            f"{text} (a replication user needs REPLICATION SLAVE; listing binlogs needs REPLICATION CLIENT, called"
            " BINLOG MONITOR in MariaDB 10.5+)",
            file=file,
            pos=pos,
        )
    if code in (ER_DBACCESS_DENIED, ER_TABLEACCESS_DENIED):
        return AccessDeniedError(text, file=file, pos=pos)
    return ReplicationError(text, file=file, pos=pos)
