"""GTID positions: MariaDB's text, MySQL's text and binary forms.  The binary encoder is checked against the servers'
own encoding: every PREVIOUS_GTIDS event of the corpus (MySQL 5.6 to 9.6, tagged and untagged) holds a GTID set
written by ``Gtid_set::encode``, the function whose inverse reads COM_BINLOG_DUMP_GTID's data."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.errors import BinlogError, ReplicationError
from binlake.events.base import EventHeader
from binlake.events.context import DecodeContext
from binlake.events.gtid import GtidInterval, GtidSet, MariaGtid, PreviousGtidsEvent, decode_previous_gtids, read_varlen
from binlake.reader import read_events
from binlake.replication.gtid import (
    GtidTracker,
    MariaGtidPosition,
    add_gtid,
    encode_gtid_set,
    parse_gtid_set,
    write_varlen,
)
from binlake.wire import Cursor

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "00000000-0000-0000-0000-000000000001"


def test_maria_position_parse_and_print() -> None:
    pos = MariaGtidPosition.parse(" 1-7-30 ,0-1-5")
    assert str(pos) == "0-1-5,1-7-30"
    assert str(pos.with_gtid(MariaGtid(0, 2, 6)).with_gtid(MariaGtid(5, 1, 1))) == "0-2-6,1-7-30,5-1-1"
    assert str(MariaGtidPosition.parse("")) == ""
    big = f"{2**32 - 1}-{2**32 - 1}-{2**64 - 1}"
    assert str(MariaGtidPosition.parse(big)) == big


@pytest.mark.parametrize("text", ["0-1", "0-1-2-3", "a-1-2", "0-1-5,0-2-6", f"{2**32}-1-1", f"0-1-{2**64}", "0-1-5,"])
def test_maria_position_refuses_what_servers_refuse(text: str) -> None:
    with pytest.raises(ReplicationError):
        MariaGtidPosition.parse(text)


def test_mysql_gtid_set_text() -> None:
    s = parse_gtid_set(f"{U1.upper()}:7:1-5, {U2}:3-4:1 ,{U1}:Blue:1-3:blue:9")
    assert str(s) == f"{U2}:1:3-4,{U1}:1-5:7:blue:1-3:9"
    assert (U1, "blue", 9) in s and (U1, None, 6) not in s
    assert str(add_gtid(s, U1, None, 6)) == f"{U2}:1:3-4,{U1}:1-7:blue:1-3:9"
    assert str(parse_gtid_set("")) == ""
    assert str(parse_gtid_set(U1.replace("-", "") + ":1")) == f"{U1}:1"


@pytest.mark.parametrize(
    "text", [U1, f"{U1}:0", f"{U1}:5-3", f"{U1}:x-y", "nonsense:1", f"{U1}:1bad", f"{U1}:{'t' * 33}:1", f"{U1}:9tag:1"]
)
def test_mysql_gtid_set_refuses_malformed_text(text: str) -> None:
    with pytest.raises(ReplicationError):
        parse_gtid_set(text)


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_varlen_round_trip(value: int) -> None:
    encoded = write_varlen(value)
    c = Cursor(encoded)
    assert read_varlen(c) == value and c.remaining == 0


_intervals = st.lists(st.tuples(st.integers(1, 2**40), st.integers(0, 1000)), min_size=1, max_size=4)
_entries = st.lists(
    st.tuples(st.sampled_from([U1, U2, "ffffffff-ffff-ffff-ffff-ffffffffffff"]), st.sampled_from([None, "a", "tag_9"])),
    min_size=0,
    max_size=5,
    unique=True,
)


@settings(max_examples=150)
@given(_entries, st.data())
def test_encoded_sets_decode_to_themselves(entries: list[tuple[str, str | None]], data: st.DataObject) -> None:
    gs = GtidSet(())
    for uuid, tag in entries:
        for start, length in data.draw(_intervals):
            for gno in range(start, start + min(length, 3) + 1):
                gs = add_gtid(gs, uuid, tag, gno)
    encoded = encode_gtid_set(gs)
    decoded = decode_previous_gtids(EventHeader(0, 35, 1, 0, 0, 0, 0), encoded, DecodeContext())
    assert decoded.gtid_set == gs
    assert decoded.tagged == any(tag for _, tag in entries)
    assert parse_gtid_set(str(gs)) == gs


def test_encoding_equals_the_servers_previous_gtids_events(corpus_dir: Path) -> None:
    compared = tagged = 0
    for path in sorted((corpus_dir / "mysql").rglob("*")):
        if not path.is_file():
            continue
        try:
            events = [ev for ev in read_events(path) if isinstance(ev, PreviousGtidsEvent)]
        except BinlogError:
            continue
        data = path.read_bytes()
        for ev in events:
            h = ev.header
            body = data[h.pos + 19 : h.end_pos - (4 if h.checksum is not None else 0)]
            assert encode_gtid_set(ev.gtid_set) == body, (path.name, h.pos, str(ev.gtid_set))
            compared += 1
            tagged += ev.tagged
    assert compared >= 20 and tagged >= 1


def test_tracker_keeps_the_state_before_the_group_in_flight() -> None:
    t = GtidTracker("mariadb")
    assert t.state is None and t.resume_state is None
    t.add(MariaGtid(0, 1, 9))  # no baseline yet: a partial state would replay whole domains
    assert t.state is None
    t.set_file_state((MariaGtid(0, 1, 3), MariaGtid(0, 2, 8), MariaGtid(1, 1, 4)))  # a GTID_LIST
    assert t.state == t.resume_state == "0-2-8,1-1-4"
    t.add(MariaGtid(1, 1, 5))
    assert (t.state, t.resume_state) == ("0-2-8,1-1-5", "0-2-8,1-1-4")
    m = GtidTracker("mysql")
    m.set_baseline(f"{U1}:1-5")
    m.add((U1, None, 6))
    assert (m.state, m.resume_state) == (f"{U1}:1-6", f"{U1}:1-5")
    m.set_file_state(GtidSet((GtidInterval(U2, None, ((1, 3),)),)))  # behind what is known: ignored
    assert (m.state, m.resume_state) == (f"{U1}:1-6", f"{U1}:1-5")
    fresh = GtidTracker("mysql")
    fresh.set_file_state(GtidSet((GtidInterval(U2, None, ((1, 3),)),)))
    assert fresh.state == fresh.resume_state == f"{U2}:1-2"
