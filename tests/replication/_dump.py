"""Replication streams made from binlog files, as the servers' dump threads send them (MariaDB
``mysql_binlog_send`` and ``fake_rotate_event``/``send_format_descriptor_event``/``send_heartbeat_event`` in
``sql/sql_repl.cc``; MySQL ``Binlog_sender`` in ``sql/rpl_binlog_sender.cc``): for the sans-IO stream tests and the
fake MySQL server."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

from binlake.reader import walk_headers
from binlake.wire import crc32

HEADER = struct.Struct("<IBIIIH")
MAX_PAYLOAD = 0xFFFFFF
ROTATE, FDE, HEARTBEAT = 4, 15, 27
ARTIFICIAL, IN_USE = 0x20, 0x01


def frame(payload: bytes, seq: int = 1) -> bytes:
    """``payload`` as MySQL packets (split at 16 MiB)."""
    out = []
    while True:
        part, payload = payload[:MAX_PAYLOAD], payload[MAX_PAYLOAD:]
        out.append(len(part).to_bytes(3, "little") + bytes([seq & 0xFF]) + part)
        seq += 1
        if len(part) < MAX_PAYLOAD:
            return b"".join(out)


def event_packet(raw: bytes, *, semi_sync: int | None = None) -> bytes:
    """An event packet's payload: ``0x00``, the semi-sync header if asked (its flag byte), the event."""
    return b"\x00" + (bytes([0xEF, semi_sync]) if semi_sync is not None else b"") + raw


def with_crc(ev: bytes, crc: bool) -> bytes:
    return ev + crc32(ev).to_bytes(4, "little") if crc else ev


def make_event(code: int, body: bytes, *, log_pos: int, flags: int = 0, crc: bool, server_id: int = 1) -> bytes:
    size = 19 + len(body) + (4 if crc else 0)
    return with_crc(HEADER.pack(0, code, server_id, size, log_pos, flags) + body, crc)


def fake_rotate(name: str, position: int, *, crc: bool) -> bytes:
    """fake_rotate_event: timestamp 0, next position 0, LOG_EVENT_ARTIFICIAL_F; a CRC32 when negotiated."""
    return make_event(ROTATE, struct.pack("<Q", position) + name.encode(), log_pos=0, flags=ARTIFICIAL, crc=crc)


def heartbeat(name: str, position: int, *, crc: bool) -> bytes:
    """send_heartbeat_event: timestamp 0, the current position as next position, the file name as body."""
    return make_event(HEARTBEAT, name.encode(), log_pos=position, crc=crc)


def set_header(raw: bytes, *, log_pos: int | None = None, flags: int | None = None) -> bytes:
    """``raw`` with its next position or flags replaced, its CRC32 recomputed if it has one (fix_checksum)."""
    ts, code, server_id, size, old_pos, old_flags = HEADER.unpack_from(raw)
    has_crc = raw_has_crc(raw)
    body = raw[19 : len(raw) - (4 if has_crc else 0)]
    new = HEADER.pack(ts, code, server_id, size, old_pos if log_pos is None else log_pos,
                      old_flags if flags is None else flags) + body  # fmt: skip
    return with_crc(new, has_crc)


def raw_has_crc(raw: bytes) -> bool:
    """Whether an event ends in a CRC32 of the rest (the FDE's own test is its algorithm byte; this one suffices
    for the files used here)."""
    stored = int.from_bytes(raw[-4:], "little")
    if crc32(raw[:-4]) == stored:
        return True
    if raw[4] == FDE and raw[17] & IN_USE:  # computed before the in-use flag was set
        return crc32(raw[:17] + bytes([raw[17] & ~IN_USE]) + raw[18:-4]) == stored
    return False


def file_events(path: Path) -> list[tuple[int, bytes]]:
    """``(position, bytes)`` of every event of a binlog file."""
    data = path.read_bytes()
    return [(h.pos, data[h.pos : h.pos + h.size]) for h in walk_headers(path)]


def dump_events(path: Path, start: int = 4, *, name: str | None = None, connect_crc: bool = True) -> Iterator[bytes]:
    """The events a dump of ``path`` from ``start`` sends, in order (what a server sends for one file)."""
    name = name or path.name
    events = file_events(path)
    yield fake_rotate(name, start, crc=connect_crc)
    fde = events[0][1]
    fde = set_header(fde, flags=HEADER.unpack_from(fde)[5] & ~IN_USE) if fde[17] & IN_USE else fde
    if start > 4:
        yield set_header(fde, log_pos=0)
    for pos, raw in events:
        if pos >= start and (pos != 4 or start == 4):
            yield fde if pos == 4 else raw


def stream_bytes(
    events: Iterable[bytes], *, semi_sync: bool = False, end: bytes | None = b"\xfe\x00\x00\x02\x00"
) -> bytes:
    """Packets of ``events`` (sequence ids from 1, as after a command), then ``end`` (an EOF packet by default)."""
    out, seq = [], 1
    for raw in events:
        payload = event_packet(raw, semi_sync=0 if semi_sync else None)
        out.append(frame(payload, seq))
        seq += 1
    if end is not None:
        out.append(frame(end, seq))
    return b"".join(out)
