"""The replication commands and packets against the layouts of MySQL's Client/Server Protocol documentation
("MySQL Packets", "ERR_Packet", "EOF_Packet"; Replication Protocol: COM_REGISTER_SLAVE, COM_BINLOG_DUMP,
COM_BINLOG_DUMP_GTID, "Semi-Sync Replication") and the servers' parsers (MySQL ``sql/rpl_source.cc``
``com_binlog_dump``/``com_binlog_dump_gtid``/``register_replica``; MariaDB ``Repl_semi_sync_master::
report_reply_packet``)."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.errors import (
    AccessDeniedError,
    BinlogPurgedError,
    ConnectionLostError,
    MalformedError,
    ReplicationError,
    UnsupportedError,
)
from binlake.replication import protocol as p


def test_command_packet_header_is_length_and_sequence_zero() -> None:
    # MySQL Packets: int<3> payload_length, int<1> sequence_id, string<var> payload
    assert p.command_packet(b"\x0e") == b"\x01\x00\x00\x00\x0e"
    assert p.command_packet(bytes(0x10203))[:4] == b"\x03\x02\x01\x00"
    with pytest.raises(ValueError):
        p.command_packet(bytes(p.MAX_PAYLOAD))


def test_register_slave_layout() -> None:
    # int<1> 0x15, int<4> server_id, int<1>+string hostname, int<1>+string user, int<1>+string password,
    # int<2> port, int<4> replication_rank, int<4> master_id
    payload = p.register_slave(0x01020304, hostname=b"replica-7", user=b"repl", port=3307)
    assert payload == (
        b"\x15" + b"\x04\x03\x02\x01" + b"\x09replica-7" + b"\x04repl" + b"\x00" + b"\xeb\x0c" + bytes(4) + bytes(4)
    )
    assert payload[1 + 4 + 10 + 5] == 0  # the password is never sent


def test_binlog_dump_layout() -> None:
    # int<1> 0x12, int<4> binlog_pos, int<2> flags, int<4> server_id, string<EOF> binlog_filename
    payload = p.binlog_dump("mysql-bin.000123", 0x12345678, 77, p.BINLOG_DUMP_NON_BLOCK)
    cmd, pos, flags, server_id = struct.unpack_from("<BIHI", payload)
    assert (cmd, pos, flags, server_id) == (0x12, 0x12345678, 1, 77)
    assert payload[11:] == b"mysql-bin.000123"
    with pytest.raises(UnsupportedError, match="4 GiB"):
        p.binlog_dump("x.000001", 1 << 32, 77, 0)


def test_binlog_dump_gtid_layout_is_what_com_binlog_dump_gtid_reads() -> None:
    # READ_INT(flags, 2); READ_INT(server_id, 4); READ_INT(name_size, 4); READ_STRING(name, name_size);
    # READ_INT(pos, 8); READ_INT(data_size, 4); then data_size bytes of Gtid_set::add_gtid_encoding
    data = bytes(range(40))
    payload = p.binlog_dump_gtid(4242, data, p.BINLOG_DUMP_NON_BLOCK)
    assert payload[0] == 0x1E
    flags, server_id, name_size = struct.unpack_from("<HII", payload, 1)
    assert (flags, server_id, name_size) == (p.BINLOG_DUMP_NON_BLOCK | p.BINLOG_THROUGH_GTID, 4242, 0)
    pos, size = struct.unpack_from("<QI", payload, 11)
    assert (pos, size) == (4, 40)
    assert payload[23:] == data
    named = p.binlog_dump_gtid(1, b"", 0, file="binlog.000002", position=120)
    assert struct.unpack_from("<I", named, 7) == (13,) and named[11:24] == b"binlog.000002"
    assert struct.unpack_from("<QI", named, 24) == (120, 0)


@pytest.mark.parametrize("server_id", [0, -1, 1 << 32])
def test_commands_refuse_server_id_zero_and_out_of_range(server_id: int) -> None:
    for make in (
        lambda: p.register_slave(server_id),
        lambda: p.binlog_dump("f.000001", 4, server_id, 0),
        lambda: p.binlog_dump_gtid(server_id, b"", 0),
    ):
        with pytest.raises(ValueError, match="server id"):
            make()


def test_semi_sync_ack_layout() -> None:
    # Semi-Sync: int<1> 0xef, int<8> log position, string<EOF> log file name (REPLY_BINLOG_POS_OFFSET 1,
    # REPLY_BINLOG_NAME_OFFSET 9)
    ack = p.semi_sync_ack("binlog.000009", 0x0102030405)
    assert ack == b"\xef" + (0x0102030405).to_bytes(8, "little") + b"binlog.000009"


def test_error_packet_parsing() -> None:
    # ERR_Packet: int<1> 0xFF, int<2> error_code, string[1] '#', string[5] sql_state, string<EOF> message
    err = p.parse_error_packet(b"\xff\xd4\x04#HY000Could not find first log file name in binary log index file")
    assert (err.code, err.sql_state) == (1236, "HY000")
    assert err.message.startswith("Could not find")
    bare = p.parse_error_packet(b"\xff\x15\x04no state")  # before CLIENT_PROTOCOL_41
    assert (bare.code, bare.sql_state, bare.message) == (1045, "", "no state")
    with pytest.raises(MalformedError):
        p.parse_error_packet(b"\x00\x01")


def test_server_error_classification() -> None:
    purged = p.server_error(
        1236, "Could not find first log file name in binary log index file", file="binlog.000001", pos=4
    )
    assert isinstance(purged, BinlogPurgedError) and purged.file == "binlog.000001"
    assert "binlog.000001" in str(purged)
    gtid = p.server_error(
        1236,
        "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old"
        " and required binlog files have been purged.",
        gtid="0-1-5",
    )
    assert isinstance(gtid, BinlogPurgedError) and gtid.gtid == "0-1-5" and "0-1-5" in str(gtid)
    mysql = p.server_error(
        1236, "Cannot replicate because the source purged required binary logs. Replicate the missing ..."
    )
    assert isinstance(mysql, BinlogPurgedError)
    assert isinstance(p.server_error(1053, "Server shutdown in progress"), ConnectionLostError)
    assert isinstance(p.server_error(1927, "Connection was killed"), ConnectionLostError)
    denied = p.server_error(1227, "Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s)")
    assert type(denied) is AccessDeniedError and "REPLICATION SLAVE" in str(denied)
    table = p.server_error(1142, "SELECT command denied to user 'u'@'h' for table `shop`.`a`")
    assert type(table) is AccessDeniedError and isinstance(table, ReplicationError)
    other = p.server_error(1236, "Client requested master to start replication from impossible position")
    assert type(other) is ReplicationError


def _frame(payload: bytes, seq: int) -> bytes:
    out = b""
    while True:
        part, payload = payload[: p.MAX_PAYLOAD], payload[p.MAX_PAYLOAD :]
        out += len(part).to_bytes(3, "little") + bytes([seq & 0xFF]) + part
        seq += 1
        if len(part) < p.MAX_PAYLOAD:
            return out


@settings(max_examples=150, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=20),
)
def test_packet_reader_yields_every_payload_whatever_the_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(_frame(x, i) for i, x in enumerate(payloads))
    reader = p.PacketReader()
    got: list[bytes] = []
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    for a, b in itertools.pairwise(points):
        reader.feed(stream[a:b])
        got.extend(bytes(x) for x in reader.payloads())
    assert got == payloads
    assert reader.buffered == 0


def test_packet_reader_joins_payloads_of_16_mib_and_more() -> None:
    # "Sending More Than 16Mb": packets of exactly 0xFFFFFF bytes continue; an empty packet ends an exact multiple
    exact = bytes([7]) * p.MAX_PAYLOAD
    longer = bytes([9]) * (p.MAX_PAYLOAD + 5)
    stream = _frame(exact, 0) + _frame(longer, 2) + _frame(b"tail", 4)
    assert len(_frame(exact, 0)) == 4 + p.MAX_PAYLOAD + 4  # the empty packet after it
    reader = p.PacketReader()
    got = []
    for i in range(0, len(stream), 5_000_000):
        reader.feed(stream[i : i + 5_000_000])
        got.extend(bytes(x) for x in reader.payloads())
    assert [len(x) for x in got] == [p.MAX_PAYLOAD, p.MAX_PAYLOAD + 5, 4]
    assert got[0] == exact and got[1] == longer and got[2] == b"tail"
