"""A MySQL 8 server as far as a replica sees one, for what no private server here can run: caching_sha2_password
(PyMySQL's fast path, then the full authentication with the RSA key exchange of a connection without TLS),
COM_BINLOG_DUMP_GTID, and MySQL 8 binlogs (TRANSACTION_PAYLOAD, tagged GTIDs) sent over the wire.

Built from MySQL's Client/Server Protocol documentation: "Connection Phase" (Protocol::HandshakeV10,
Protocol::HandshakeResponse41), "Caching_sha2_password information" (fast auth 0x03, perform full authentication
0x04, the public key request 0x02, the password XOR-ed with the nonce and RSA-OAEP encrypted), "Text Resultset"
(column count, ColumnDefinition41, EOF, rows, EOF), OK_Packet/EOF_Packet, and the Replication Protocol; the binlog
dump behaves as ``Binlog_sender`` (``sql/rpl_binlog_sender.cc``): a fake ROTATE, the FORMAT_DESCRIPTION with
LOG_EVENT_BINLOG_IN_USE_F cleared, the file's events less the transactions in the replica's GTID set, a heartbeat
(v2), and an EOF packet for a non-blocking dump.
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from tests.replication import _dump as d
from tests.rows.test_rows_events import packed as lenenc  # the protocol's length-encoded integer

from binlake.events.base import EventHeader
from binlake.events.context import DecodeContext
from binlake.events.gtid import GtidEvent, GtidSet, decode_previous_gtids
from binlake.reader import read_events

VERSION = "8.0.36"
SERVER_ID = 8036
CAPABILITIES = (
    0x00000001  # CLIENT_LONG_PASSWORD
    | 0x00000200  # CLIENT_PROTOCOL_41
    | 0x00002000  # CLIENT_TRANSACTIONS
    | 0x00008000  # CLIENT_SECURE_CONNECTION
    | 0x00020000  # CLIENT_MULTI_RESULTS
    | 0x00080000  # CLIENT_PLUGIN_AUTH
    | 0x00200000  # CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
)
AUTOCOMMIT = 0x0002


def lenenc_str(s: bytes) -> bytes:
    return lenenc(len(s)) + s


def ok_packet() -> bytes:
    return b"\x00" + lenenc(0) + lenenc(0) + struct.pack("<HH", AUTOCOMMIT, 0)


def eof_packet() -> bytes:
    return b"\xfe" + struct.pack("<HH", 0, AUTOCOMMIT)


def heartbeat_v2(name: str, position: int, *, crc: bool) -> bytes:
    """Heartbeat_event_v2 (control_events.cpp): TLV fields 1 (file name), 2 (position, a packed integer), 0 ends."""
    packed = lenenc(position)
    body = b"\x01" + lenenc_str(name.encode()) + b"\x02" + lenenc_str(packed) + b"\x00"
    return d.make_event(41, body, log_pos=0, crc=crc)


@dataclass
class Dump:
    """What one COM_BINLOG_DUMP_GTID asked for."""

    flags: int
    server_id: int
    name: bytes
    position: int
    gtid_set: GtidSet


@dataclass
class FakeMySQL:
    """Serves ``binlog`` (a MySQL file) to replicas authenticating as ``user``/``password`` with
    caching_sha2_password; ``drops[n]`` ends the n-th dump's connection after that many of the file's events
    (inside a transaction); what the clients did is recorded."""

    binlog: Path
    user: bytes
    password: bytes
    drops: tuple[int, ...] = ()
    dumps: list[Dump] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    registered: list[bytes] = field(default_factory=list)
    fast_scrambles_ok: list[bool] = field(default_factory=list)
    rsa_passwords: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self.port: int = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._sock.close()

    # -- the connection ----------------------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        with conn:
            try:
                io = _Packets(conn)
                if self._authenticate(io):
                    self._commands(io)
            except (ConnectionError, OSError):
                pass

    def _authenticate(self, io: _Packets) -> bool:
        nonce = os.urandom(20)
        handshake = (
            b"\x0a" + VERSION.encode() + b"\0" + struct.pack("<I", 7) + nonce[:8] + b"\0"
            + struct.pack("<HBHHB", CAPABILITIES & 0xFFFF, 255, AUTOCOMMIT, CAPABILITIES >> 16, 21)
            + bytes(10) + nonce[8:] + b"\0" + b"caching_sha2_password\0"
        )  # fmt: skip
        io.send(handshake, seq=0)
        response = io.recv()
        _caps, _max, _charset = struct.unpack_from("<IIB", response)
        at = 32
        end = response.index(b"\0", at)
        user, at = response[at:end], end + 1
        n = response[at]  # CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: a short length
        scramble = response[at + 1 : at + 1 + n]
        p1 = hashlib.sha256(self.password).digest()
        expected = bytes(
            a ^ b for a, b in zip(p1, hashlib.sha256(hashlib.sha256(p1).digest() + nonce).digest(), strict=True)
        )
        self.fast_scrambles_ok.append(scramble == expected)
        # the fast path is known to work; take the full authentication, as a server with a cold cache does
        io.send(b"\x01\x04")
        if io.recv() != b"\x02":  # not on TLS: the client asks for the public key
            return False
        pem = self._key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        io.send(b"\x01" + pem)
        encrypted = io.recv()
        oaep = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
        xored = self._key.decrypt(encrypted, oaep)
        password = bytes(b ^ nonce[i % len(nonce)] for i, b in enumerate(xored))
        self.rsa_passwords.append(password)
        if user != self.user or password != self.password + b"\0":
            io.send(b"\xff" + struct.pack("<H", 1045) + b"#28000Access denied")
            return False
        io.send(ok_packet())
        return True

    def _commands(self, io: _Packets) -> None:
        while True:
            packet = io.recv(new_command=True)
            cmd, body = packet[0], packet[1:]
            if cmd == 0x03:  # COM_QUERY
                self._query(io, body.decode())
            elif cmd == 0x15:  # COM_REGISTER_SLAVE
                self.registered.append(bytes(body))
                io.send(ok_packet())
            elif cmd == 0x1E:  # COM_BINLOG_DUMP_GTID
                self._dump(io, body)
                return
            elif cmd == 0x01:  # COM_QUIT
                return
            else:
                io.send(b"\xff" + struct.pack("<H", 1047) + b"#08S01Unknown command")

    def _query(self, io: _Packets, sql: str) -> None:
        self.queries.append(sql)
        answers: dict[str, list[tuple[str, ...]]] = {
            "SELECT VERSION(), @@server_id": [(f"{VERSION}-fake", str(SERVER_ID))],
            "SELECT @@global.binlog_checksum": [("CRC32",)],
            "SHOW SESSION STATUS LIKE 'Ssl_cipher'": [("Ssl_cipher", "")],
            "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_master_enabled'": [],
            "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_source_enabled'": [],
        }
        if sql.upper().startswith("SET "):
            io.send(ok_packet())
            return
        rows = answers.get(sql)
        if rows is None:
            io.send(b"\xff" + struct.pack("<H", 1064) + b"#42000You have an error in your SQL syntax")
            return
        width = len(rows[0]) if rows else 2
        io.send(lenenc(width))
        for i in range(width):
            io.send(
                lenenc_str(b"def") + lenenc_str(b"") + lenenc_str(b"") + lenenc_str(b"")
                + lenenc_str(f"c{i}".encode()) + lenenc_str(b"") + b"\x0c"
                + struct.pack("<HIBHB", 255, 256, 0xFD, 0, 0) + b"\0\0"
            )  # fmt: skip
        io.send(eof_packet())
        for row in rows:
            io.send(b"".join(lenenc_str(v.encode()) for v in row))
        io.send(eof_packet())

    def _dump(self, io: _Packets, body: bytes) -> None:
        flags, server_id, name_len = struct.unpack_from("<HII", body)
        name = body[10 : 10 + name_len]
        position, data_len = struct.unpack_from("<QI", body, 10 + name_len)
        data = body[22 + name_len : 22 + name_len + data_len]
        gtids = decode_previous_gtids(EventHeader(0, 35, 1, 0, 0, 0, 0), data, DecodeContext()).gtid_set
        self.dumps.append(Dump(flags, server_id, bytes(name), position, gtids))
        drop_after = self.drops[len(self.dumps) - 1] if len(self.dumps) <= len(self.drops) else None
        raw = {pos: ev for pos, ev in d.file_events(self.binlog)}
        skipping, sent = False, 0
        io.send(d.event_packet(d.fake_rotate(self.binlog.name, 4, crc=True)))
        for ev in read_events(self.binlog):
            h = ev.header
            if h.in_payload is not None:
                continue
            if isinstance(ev, GtidEvent) and not ev.anonymous:
                skipping = (ev.uuid, ev.tag, ev.gno) in gtids
            event = raw[h.pos]
            if h.pos == 4:
                event = event[:17] + bytes([event[17] & ~d.IN_USE]) + event[18:]
            if not skipping:
                io.send(d.event_packet(event))
                sent += 1
                if sent == drop_after:
                    return  # the connection drops inside the transaction
            if h.type_code == 16:  # XID ends a skipped transaction
                skipping = False
            if sent == 2:
                io.send(d.event_packet(heartbeat_v2(self.binlog.name, h.end_pos, crc=True)))
        io.send(eof_packet())


class _Packets:
    """MySQL packets on a socket, with the sequence ids of one command's exchange."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.seq = 0

    def send(self, payload: bytes, *, seq: int | None = None) -> None:
        if seq is not None:
            self.seq = seq
        self.conn.sendall(d.frame(payload, self.seq))
        self.seq = (self.seq + 1) & 0xFF

    def recv(self, *, new_command: bool = False) -> bytes:
        header = self._exact(4)
        length, seq = int.from_bytes(header[:3], "little"), header[3]
        if new_command:
            assert seq == 0, seq
        self.seq = (seq + 1) & 0xFF
        return self._exact(length)

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.conn.recv(n - len(out))
            if not chunk:
                raise ConnectionError("client went away")
            out += chunk
        return out
