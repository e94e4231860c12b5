"""ROTATE, XID, INTVAR, RAND, USER_VAR, STOP, INCIDENT, HEARTBEAT, ROWS_QUERY, XA_PREPARE and the Group
Replication events, against mariadb-binlog's output and hand-built bytes."""

from __future__ import annotations

import struct
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.events._corpus import events_at, events_of

from binlake.errors import MalformedError, TruncatedError
from binlake.events.base import HEADER, EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.control import (
    HeartbeatEvent,
    IncidentEvent,
    IntvarEvent,
    RandEvent,
    RotateEvent,
    RowsQueryEvent,
    StopEvent,
    UserVarEvent,
    XaPrepareEvent,
    XidEvent,
    decode_heartbeat,
    decode_heartbeat_v2,
    decode_incident,
    decode_rotate,
    decode_transaction_context,
    decode_user_var,
    decode_view_change,
)
from binlake.events.format import synthetic_fde
from binlake.wire import crc32

MARIA = "mariadb/binlogs/corpus-bin.0000"


def _h(code: int, size: int = 0, flags: int = 0) -> EventHeader:
    return EventHeader(0, code, 1, size, 0, flags, 4)


def test_user_vars_as_mariadb_binlog_prints_them(corpus_dir: Path) -> None:
    evs = events_at(corpus_dir, MARIA + "07")
    expected = {
        1835: ("sv_str", "user var é", 45),  # SET @`sv_str`:=_utf8mb4 X'757365722076617220C3A9' COLLATE utf8mb4_...
        1889: ("sv_int", -42, None),
        1941: ("sv_dec", Decimal("3.14159"), None),
        1990: ("sv_real", 10000000000.0, None),
        2042: ("sv_null", None, None),
        2341: ("sv_bin", b"\x00\xff", 63),  # _binary X'00FF' COLLATE `binary`
        2386: ("sv_uint", 18446744073709551615, None),
        2439: ("sv_u4", "\U0001f600", 45),  # X'F09F9880'
        2485: ("sv_l1", "latin1 é", 8),  # _latin1 X'6C6174696E3120E9' COLLATE `latin1_swedish_ci`
    }
    for pos, (name, value, charset) in expected.items():
        ev = evs[pos]
        assert isinstance(ev, UserVarEvent)
        assert (ev.name, ev.value) == (name, value)
        if charset is not None:
            assert ev.charset == charset and ev.value_type_name == "STRING_RESULT"
    assert evs[2386].unsigned and not evs[1889].unsigned  # type: ignore[attr-defined]
    assert evs[2042].is_null and evs[1941].value_type_name == "DECIMAL_RESULT"  # type: ignore[attr-defined]
    assert evs[1889].summary() == "SET @`sv_int`:=-42"


def test_intvar_rand_xid_gtid_context(corpus_dir: Path) -> None:
    evs = events_at(corpus_dir, MARIA + "07")
    # "SET INSERT_ID=1" at 1066, "SET LAST_INSERT_ID=2" at 1516, "Xid = 367" at 1220,
    # "SET @@RAND_SEED1=754826051, @@RAND_SEED2=341038132" at 2792
    assert isinstance(evs[1066], IntvarEvent) and (evs[1066].kind_name, evs[1066].value) == ("INSERT_ID", 1)
    assert isinstance(evs[1516], IntvarEvent) and (evs[1516].kind_name, evs[1516].value) == ("LAST_INSERT_ID", 2)
    assert isinstance(evs[1220], XidEvent) and evs[1220].xid == 367
    assert isinstance(evs[2792], RandEvent) and (evs[2792].seed1, evs[2792].seed2) == (754826051, 341038132)


def test_rotate_stop_and_xa_prepare(corpus_dir: Path) -> None:
    rot = events_at(corpus_dir, MARIA + "01")[329]  # "Rotate to corpus-bin.000002  pos: 4"
    assert isinstance(rot, RotateEvent) and (rot.name, rot.position) == ("corpus-bin.000002", 4)
    assert rot.trailing_checksum is None and not rot.artificial
    stop = events_of(corpus_dir, MARIA + "15")[-1]
    assert isinstance(stop, StopEvent)
    evs = events_at(corpus_dir, MARIA + "04")
    xa = evs[11301]  # "XID = X'78612d636f6d6d69742d31',X'',1" / "XA PREPARE X'78612d636f6d6d69742d31',X'',1"
    assert isinstance(xa, XaPrepareEvent) and not xa.one_phase
    assert xa.xid_text == "X'78612d636f6d6d69742d31',X'',1" and xa.summary() == f"XA PREPARE {xa.xid_text}"
    assert evs[11992].xid_text == "X'0102ff',X'627175616c2d78',42"  # type: ignore[attr-defined]


def test_relay_log_artificial_rotate(corpus_dir: Path) -> None:
    evs = events_of(corpus_dir, "mysql/rust_mysql_common/rpl_unfiltered_hidden_gcol.000001")
    rotates = [ev for ev in evs if isinstance(ev, RotateEvent)]
    assert len(rotates) == 2 and any(r.artificial for r in rotates)
    assert all(r.name.startswith(("master-bin.", "slave-relay-bin.", "mysqld-relay-bin.", "binlog.")) for r in rotates)


def test_incident(corpus_dir: Path) -> None:
    # bug40482-bin.000001 (5.1.30 debug build): incident number 66, no message; MySQL's own reader refuses a number
    # it does not know, binlake names it and goes on
    ev = events_at(corpus_dir, "mysql/rust_mysql_common/bug40482-bin.000001")[106]
    assert isinstance(ev, IncidentEvent) and (ev.incident, ev.message, ev.incident_name) == (66, "", "UNKNOWN_66")
    msg = decode_incident(_h(26), struct.pack("<HB", 1, 5) + b"oops!", DecodeContext())
    assert msg.summary() == "INCIDENT_LOST_EVENTS: oops!"


def test_rotate_name_with_a_stream_checksum() -> None:
    """An artificial ROTATE sent before the FDE carries its CRC32 at the end (mysql_async issue 189)."""
    body = struct.pack("<Q", 4) + b"mariadb-bin.000001"
    size = 19 + len(body) + 4
    header = _h(EventType.ROTATE_EVENT, size, 0x20)
    raw_header = HEADER.pack(0, EventType.ROTATE_EVENT, 1, size, 0, 0x20)
    crc = crc32(raw_header + body)
    ev = decode_rotate(header, body + crc.to_bytes(4, "little"), DecodeContext())
    assert (ev.name, ev.trailing_checksum) == ("mariadb-bin.000001", crc)
    known = decode_rotate(header, body + crc.to_bytes(4, "little"), DecodeContext(fde=synthetic_fde()))
    assert known.name_raw.endswith(crc.to_bytes(4, "little"))  # with an FDE the decoder strips the CRC itself


def test_heartbeat_v2_fields() -> None:
    body = bytes([1, 11]) + b"binlog.0042" + bytes([2, 3, 0xFC, 0x10, 0x27]) + bytes([7, 1, 0]) + b"\x00"
    ev = decode_heartbeat_v2(_h(EventType.HEARTBEAT_LOG_EVENT_V2), body, DecodeContext())
    assert isinstance(ev, HeartbeatEvent) and (ev.log_file, ev.position) == ("binlog.0042", 10000)


def _mariadb_heartbeat(name: bytes, position: int) -> bytes:
    """The event MariaDB's ``send_heartbeat_event`` (sql/sql_repl.cc) sends, CRC32 included: timestamp 0, the position
    in the header's log_pos while it fits 32 bits, else 0 there and the position (``int8store``) before the name."""
    sub = b"" if position <= 0xFFFFFFFF else position.to_bytes(8, "little")
    size = 19 + len(sub) + len(name) + 4
    header = HEADER.pack(0, EventType.HEARTBEAT_LOG_EVENT, 1, size, position if not sub else 0, 0)
    return header + sub + name + crc32(header + sub + name).to_bytes(4, "little")


@pytest.mark.parametrize("position", [4, 0xFFFFFFFF, 0x1_0000_0000, 0x1_2345_6789_ABCD, (1 << 64) - 1])
def test_mariadb_heartbeat_past_4_gib_carries_its_position_before_the_name(position: int) -> None:
    """Past 4 GiB the position does not fit the header's log_pos: MariaDB writes 0 there and 8 bytes before the name
    (HB_SUB_HEADER_LEN), the CRC32 covering them."""
    from binlake.decoder import decode_event

    mariadb = DecodeContext(fde=synthetic_fde("10.11.6-MariaDB-log"))
    heartbeat = decode_event(_mariadb_heartbeat(b"mariadb-bin.000007", position), 4, mariadb)  # its CRC32 checked
    assert isinstance(heartbeat, HeartbeatEvent)
    assert (heartbeat.log_file, heartbeat.position) == ("mariadb-bin.000007", position)
    assert heartbeat.summary() == f"heartbeat at mariadb-bin.000007:{position}"


def test_heartbeat_log_pos_zero_is_no_position_field_from_mysql() -> None:
    """MySQL's HEARTBEAT_LOG_EVENT carries no such field: a zero log_pos under a MySQL format description leaves the
    body the file name."""
    body = b"binlog.000001"
    mysql = DecodeContext(fde=synthetic_fde())
    ev = decode_heartbeat(_h(EventType.HEARTBEAT_LOG_EVENT), body, mysql)
    assert (ev.log_file, ev.position) == ("binlog.000001", 0)
    short = decode_heartbeat(_h(EventType.HEARTBEAT_LOG_EVENT), b"bin.1", DecodeContext())
    assert (short.log_file, short.position) == ("bin.1", 0)  # fewer than 8 bytes: no position field


def test_rows_query_from_a_payload(corpus_dir: Path) -> None:
    inner = [
        ev
        for ev in events_of(corpus_dir, "mysql/mysql-binlog-connector-rust/mysql-bin.000057")
        if isinstance(ev, RowsQueryEvent)
    ]
    assert len(inner) == 3 and all(ev.header.in_payload is not None for ev in inner)
    assert all(ev.query.lower().startswith(("insert", "update")) for ev in inner)


def _user_var(name: bytes, kind: int, value: bytes, charset: int = 33, flags: bytes = b"") -> bytes:
    return struct.pack("<I", len(name)) + name + b"\0" + struct.pack("<BII", kind, charset, len(value)) + value + flags


@given(st.integers(-(2**63), 2**63 - 1))
def test_int_user_var_roundtrip(value: int) -> None:
    ev = decode_user_var(_h(14), _user_var(b"v", 2, struct.pack("<q", value), flags=b"\0"), DecodeContext())
    assert ev.value == value and ev.flags == 0


@given(st.floats(allow_nan=False))
def test_real_user_var_roundtrip(value: float) -> None:
    ev = decode_user_var(_h(14), _user_var(b"r", 1, struct.pack("<d", value)), DecodeContext())
    assert ev.value == value and ev.flags is None  # an old server writes no flags byte


@pytest.mark.parametrize(
    "body",
    [
        _user_var(b"v", 3, b"x"),  # ROW_RESULT
        _user_var(b"v", 9, b"x"),  # no such type
        _user_var(b"v", 2, b"1234"),  # an INT of 4 bytes
    ],
)
def test_invalid_user_var(body: bytes) -> None:
    with pytest.raises(MalformedError):
        decode_user_var(_h(14), body, DecodeContext())


def test_truncated_user_var() -> None:
    with pytest.raises(TruncatedError):
        decode_user_var(_h(14), struct.pack("<I", 50) + b"short", DecodeContext())


def test_group_replication_events() -> None:
    view = b"1234567890:1".ljust(40, b"\0") + struct.pack("<QI", 7, 2)
    view += struct.pack("<H", 3) + b"k1a" + struct.pack("<I", 2) + b"v1" + struct.pack("<H", 1) + b"k" + bytes(4)
    ev = decode_view_change(_h(37), view, DecodeContext())
    assert (ev.view_id, ev.seq_number, ev.certification_info) == ("1234567890:1", 7, ((b"k1a", b"v1"), (b"k", b"")))
    uuid = b"3e11fa47-71ca-11e1-9e33-c80aa9429562"
    ctx_body = struct.pack("<BIBIII", len(uuid), 9, 1, 2, 0, 3) + uuid + b"abc"
    ctx_body += struct.pack("<H", 2) + b"w1" + struct.pack("<H", 3) + b"w22"
    tc = decode_transaction_context(_h(36), ctx_body, DecodeContext())
    assert (tc.server_uuid, tc.thread_id, tc.gtid_specified) == (uuid.decode(), 9, True)
    assert (tc.snapshot_version, tc.write_set, tc.read_set) == (b"abc", (b"w1", b"w22"), ())
