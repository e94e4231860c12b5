"""GTID events and GTID sets (MySQL untagged, anonymous, tagged; MariaDB GTID, GTID_LIST, BINLOG_CHECKPOINT)."""

from __future__ import annotations

import struct
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.events._corpus import events_at

from binlake.errors import MalformedError, UnsupportedError
from binlake.events.base import EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.gtid import (
    BinlogCheckpointEvent,
    GtidEvent,
    GtidInterval,
    GtidListEvent,
    GtidSet,
    MariaGtidEvent,
    PreviousGtidsEvent,
    decode_gtid,
    decode_gtid_tagged,
    decode_maria_gtid,
    decode_previous_gtids,
    read_varlen,
    read_varlen_signed,
)
from binlake.wire import Cursor

RUST = "mysql/rust_mysql_common/"
UUID_TAG = "55778904-0299-11f1-b1b8-4ef0c4956feb"  # src/binlog/mod.rs gtid_tagged_log_event_from_binlog()


def _h(code: int) -> EventHeader:
    return EventHeader(0, code, 1, 0, 0, 0, 4)


def test_tagged_gtid_and_tagged_previous_gtids(corpus_dir: Path) -> None:
    evs = events_at(corpus_dir, RUST + "binlog_transaction_with_GTID_TAG.000001")
    prev, gtid = evs[127], evs[245]
    assert isinstance(prev, PreviousGtidsEvent) and prev.tagged
    assert prev.gtid_set.entries == (
        GtidInterval(UUID_TAG, None, ((1, 14),)),
        GtidInterval(UUID_TAG, "mytag", ((1, 3),)),
    )
    assert str(prev.gtid_set) == f"{UUID_TAG}:1-13:mytag:1-2"
    assert isinstance(gtid, GtidEvent) and gtid.type == "GTID_TAGGED_LOG_EVENT"
    assert (gtid.uuid, gtid.tag, gtid.gno, gtid.gtid) == (UUID_TAG, "mytag", 3, f"{UUID_TAG}:mytag:3")
    assert (gtid.last_committed, gtid.sequence_number) == (0, 1)
    assert gtid.immediate_server_version == gtid.original_server_version == 90600  # server 9.6.0
    assert gtid.immediate_commit_timestamp == gtid.original_commit_timestamp
    assert gtid.immediate_commit_timestamp is not None
    assert gtid.immediate_commit_timestamp // 1_000_000 == gtid.header.timestamp  # µs of the event's second
    assert gtid.transaction_length == sum(ev.header.event_size for pos, ev in evs.items() if pos >= 245) - 44
    assert (UUID_TAG, "mytag", 2) in prev.gtid_set and (UUID_TAG, "mytag", 3) not in prev.gtid_set


def test_untagged_previous_gtids(corpus_dir: Path) -> None:
    prev = events_at(corpus_dir, RUST + "binlog_transaction_previous_GTID_no_tag.000001")[126]
    assert isinstance(prev, PreviousGtidsEvent) and not prev.tagged
    assert str(prev.gtid_set) == "b9b88c66-0755-11f1-9899-4a9da94c4d71:1-2"


def test_mysql57_gtids_as_mysqlbinlog_prints_them(corpus_dir: Path) -> None:
    # mysql-reference/binlog-parser/gtid-fixtures/plaintext-mysql-bin.01 (MySQL's own mysqlbinlog):
    # "# 10440e47-3885-11eb-ac5b-0242ac110002:1-5", "GTID last_committed=0 sequence_number=1", "...:6"
    evs = events_at(corpus_dir, "mysql/binlog-parser/gtid-fixtures_mysql-bin.01")
    assert str(evs[123].gtid_set) == "10440e47-3885-11eb-ac5b-0242ac110002:1-5"  # type: ignore[attr-defined]
    gtids = [ev for ev in evs.values() if isinstance(ev, GtidEvent)]
    assert [g.gtid for g in gtids[:3]] == [f"10440e47-3885-11eb-ac5b-0242ac110002:{n}" for n in (6, 7, 8)]
    assert [(g.last_committed, g.sequence_number) for g in gtids[:3]] == [(0, 1), (1, 2), (2, 3)]
    assert all(g.immediate_commit_timestamp is None for g in gtids)  # 5.7 writes no commit timestamps
    assert gtids[0].may_have_sbr  # rbr_only=no


def test_mysql8_transaction_length_spans_the_transaction(corpus_dir: Path) -> None:
    evs = events_at(corpus_dir, "mysql/maxwell/binlog.000004")
    gtids = [ev for ev in evs.values() if isinstance(ev, GtidEvent)]
    assert len(gtids) == 21
    for g, nxt in pairwise(gtids):
        assert g.header.pos + g.transaction_length == nxt.header.pos  # type: ignore[operator]
    assert gtids[0].immediate_server_version == gtids[0].original_server_version == 80029


def test_anonymous_gtid_56_and_57(corpus_dir: Path) -> None:
    g = events_at(corpus_dir, RUST + "transaction_compression.000001")[197]
    assert isinstance(g, GtidEvent) and g.anonymous and g.gtid == "ANONYMOUS"
    assert (g.last_committed, g.sequence_number, g.transaction_length) == (0, 1, 234)
    assert g.immediate_server_version == 80032 and g.commit_group_ticket is None
    old = events_at(corpus_dir, RUST + "binlog_transaction_with_GTID.000001")  # 5.6.24: flags, sid, gno only
    g56 = [ev for ev in old.values() if isinstance(ev, GtidEvent)]
    assert len(g56) == 3 and all(g.last_committed is None for g in g56)
    assert [g.gno for g in g56] == sorted(g.gno for g in g56)


def test_original_and_immediate_differ() -> None:
    body = bytes([1]) + bytes(range(16)) + struct.pack("<q", 9) + b"\x02" + struct.pack("<qq", 4, 5)
    body += ((1 << 55) | 1000).to_bytes(7, "little") + (900).to_bytes(7, "little") + b"\xfc\x00\x01"
    body += struct.pack("<II", (1 << 31) | 80040, 50730) + struct.pack("<Q", 77)
    g = decode_gtid(_h(EventType.GTID_LOG_EVENT), body, DecodeContext())
    assert g.may_have_sbr and g.gno == 9 and g.uuid == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert (g.immediate_commit_timestamp, g.original_commit_timestamp, g.transaction_length) == (1000, 900, 256)
    assert (g.immediate_server_version, g.original_server_version, g.commit_group_ticket) == (80040, 50730, 77)


def _varlen(value: int) -> bytes:
    """The serialization library's encoding (variable_length_integers.h), written independently of the reader."""
    for size in range(1, 9):
        if value < 1 << (7 * size):
            return ((value << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")
    return b"\xff" + value.to_bytes(8, "little")


def _zigzag(value: int) -> int:
    return value << 1 if value >= 0 else ((-value - 1) << 1) | 1


@given(st.integers(0, 2**64 - 1))
def test_varlen_roundtrip(value: int) -> None:
    raw = _varlen(value)
    c = Cursor(raw + b"tail")
    assert read_varlen(c) == value and c.pos == len(raw)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlen_signed_roundtrip(value: int) -> None:
    assert read_varlen_signed(Cursor(_varlen(_zigzag(value)))) == value


def _tagged(fields: list[tuple[int, bytes]], last_non_ignorable: int = 11) -> bytes:
    payload = b"".join(_varlen(fid) + value for fid, value in fields)
    head = _varlen(last_non_ignorable)
    size = 1 + len(head) + len(payload)
    size += len(_varlen(size + 1))  # payload_size counts its own bytes
    return _varlen(1) + _varlen(size) + head + payload


def test_tagged_defaults_and_ignorable_fields() -> None:
    uuid = b"".join(_varlen(b) for b in range(16))
    body = _tagged([(1, uuid), (2, _varlen(_zigzag(12))), (3, _varlen(3) + b"abc"), (9, _varlen(80400)), (40, b"\x02")])
    g = decode_gtid_tagged(_h(EventType.GTID_TAGGED_LOG_EVENT), body, DecodeContext())
    assert g.gtid == "00010203-0405-0607-0809-0a0b0c0d0e0f:abc:12"
    assert g.original_server_version == 80400 and g.original_commit_timestamp is None
    assert g.unparsed == _varlen(40) + b"\x02"
    with pytest.raises(UnsupportedError):
        decode_gtid_tagged(_h(42), _tagged([(40, b"\x02")], last_non_ignorable=40), DecodeContext())
    with pytest.raises(MalformedError):
        decode_gtid_tagged(_h(42), _varlen(1) + _varlen(500) + _varlen(0), DecodeContext())


@given(
    st.lists(
        st.tuples(
            st.uuids(),
            st.one_of(st.none(), st.from_regex(r"[a-z_][a-z0-9_]{0,31}", fullmatch=True)),
            st.lists(st.integers(1, 2**40), min_size=1, max_size=5, unique=True),
        ),
        max_size=4,
    )
)
def test_previous_gtids_roundtrip(entries: list[tuple[object, str | None, list[int]]]) -> None:
    tagged = any(tag is not None for _, tag, _ in entries)
    body = struct.pack("<Q", (1 << 56) | (len(entries) << 8) | 1 if tagged else len(entries))
    expect = []
    for u, tag, starts in entries:
        pairs = tuple((s, s + 1 + i) for i, s in enumerate(sorted(starts)))
        body += u.bytes + ((_varlen(len(tag)) + tag.encode()) if tagged and tag else (_varlen(0) if tagged else b""))  # type: ignore[attr-defined]
        body += struct.pack("<Q", len(pairs)) + b"".join(struct.pack("<qq", *p) for p in pairs)
        expect.append(GtidInterval(str(u), tag if tagged else None, pairs))
    ev = decode_previous_gtids(_h(EventType.PREVIOUS_GTIDS_LOG_EVENT), body, DecodeContext())
    assert ev.gtid_set.entries == tuple(expect) and ev.tagged == tagged


def test_gtid_set_text() -> None:
    u1, u2 = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "0b6e4a8c-0d5b-11e1-a6e7-4bb5f9e1c8f3"
    s = GtidSet((GtidInterval(u1, None, ((1, 6), (7, 8))), GtidInterval(u2, "tag", ((1, 4),))))
    assert str(s) == f"{u1}:1-5:7,{u2}:tag:1-3"
    assert str(GtidSet(())) == ""


def test_mariadb_gtids(corpus_dir: Path) -> None:
    # corpus-bin.000007: "Gtid list [0-1-246]", "Binlog checkpoint corpus-bin.000006", "GTID 0-1-247 ddl",
    # "GTID 0-1-250 trans"
    evs = events_at(corpus_dir, "mariadb/binlogs/corpus-bin.000007")
    glist, checkpoint, ddl, trans = evs[256], evs[299], evs[343], evs[1024]
    assert isinstance(glist, GtidListEvent) and [str(g) for g in glist.gtids] == ["0-1-246"] and glist.flags == 0
    assert isinstance(checkpoint, BinlogCheckpointEvent) and checkpoint.binlog_file == "corpus-bin.000006"
    assert isinstance(ddl, MariaGtidEvent) and str(ddl.gtid) == "0-1-247" and ddl.summary() == "GTID 0-1-247 ddl"
    assert ddl.standalone and "FL_DDL" in ddl.flag_names
    assert isinstance(trans, MariaGtidEvent) and trans.summary() == "GTID 0-1-250 trans" and not trans.standalone


def test_mariadb_xa_gtids(corpus_dir: Path) -> None:
    # corpus-bin.000004: XA START X'78612d636f6d6d69742d31',X'',1 ... GTID 0-1-158 prepares, 0-1-159 commits it
    evs = events_at(corpus_dir, "mariadb/binlogs/corpus-bin.000004")
    prepare, complete = evs[10596], evs[11348]
    assert isinstance(prepare, MariaGtidEvent) and isinstance(complete, MariaGtidEvent)
    assert prepare.xid == complete.xid == (1, b"xa-commit-1", b"")
    assert "FL_PREPARED_XA" in prepare.flag_names and "FL_COMPLETED_XA" in complete.flag_names
    assert evs[11515].xid == (42, b"\x01\x02\xff", b"bqual-x")  # type: ignore[attr-defined]


def test_mariadb_gtid_extra_fields() -> None:
    body = struct.pack("<QIB", 5, 2, 0x02 | 0x40) + struct.pack("<Q", 99) + struct.pack("<IBB", 1, 2, 1) + b"abc"
    body += bytes([0x01 | 0x04 | 0x10, 3]) + struct.pack("<Q", 4) + struct.pack("<I", 12)
    g = decode_maria_gtid(EventHeader(0, 162, 7, 0, 0, 0, 4), body, DecodeContext())
    assert (str(g.gtid), g.commit_id, g.xid) == ("2-7-5", 99, (1, b"ab", b"c"))
    assert (g.extra_engines, g.sa_seq_no, g.thread_id) == (3, 4, 12)
    assert g.flags_extra_names == ["FL_EXTRA_MULTI_ENGINE_E1", "FL_COMMIT_ALTER_E1", "FL_EXTRA_THREAD_ID"]
