"""The sans-IO replication stream on dumps made from binlog files as the servers' dump threads send them
(tests/replication/_dump.py): every event of the file comes out once, equal to what the file reader decodes, at the
file's positions, whatever the chunking; what the server adds (artificial ROTATE, heartbeats, a resent format
description) comes out marked ``in_file=False``."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.replication import _dump as d

from binlake.errors import BinlogPurgedError, ChecksumError, MalformedError
from binlake.events.base import Event, EventType
from binlake.events.control import HeartbeatEvent, RotateEvent
from binlake.events.format import FormatDescriptionEvent
from binlake.reader import read_events
from binlake.replication.stream import ReplicationStream, StreamEvent

MARIADB = "mariadb/binlogs"
FILES = [
    f"{MARIADB}/corpus-bin.000002",  # every column type
    f"{MARIADB}/corpus-bin.000004",  # XA, savepoints, rollbacks
    f"{MARIADB}/corpus-bin.000007",  # statement events, LOAD DATA
    f"{MARIADB}/corpus-bin.000009",  # compressed events
    f"{MARIADB}/corpus-bin.000010",  # no checksums
    f"{MARIADB}/corpus-bin.000015",  # STOP
    "mysql/rust_mysql_common/transaction_compression.000001",  # MySQL 8.0.32 TRANSACTION_PAYLOAD (zstd)
    "mysql/rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",  # MySQL 9.6 tagged GTIDs
    "mysql/rust_mysql_common/json.binlog.000001",  # MySQL 8.0.22 partial JSON, FDE flagged in use
]


def reference(path: Path, start: int = 4) -> list[tuple[int, int, Event]]:
    """``(start, end, event)`` of the file reader; events inside a payload have the payload's positions."""
    out: list[tuple[int, int, Event]] = []
    end = 0
    for ev in read_events(path):
        h = ev.header
        if h.in_payload is None:
            end = h.end_pos
            if h.pos >= start:
                out.append((h.pos, end, ev))
        elif h.in_payload >= start:
            out.append((h.in_payload, end, ev))
    return out


def run(stream: ReplicationStream, data: bytes, cuts: list[int] | None = None) -> list[StreamEvent]:
    got: list[StreamEvent] = []
    points = sorted({c % (len(data) + 1) for c in (cuts or [])} | {0, len(data)})
    for a, b in itertools.pairwise(points):
        stream.feed(data[a:b])
        got.extend(stream.events())
    return got


def same(got: list[StreamEvent], ref: list[tuple[int, int, Event]], name: str) -> None:
    files = [se for se in got if se.in_file]
    assert [(se.start, se.end, se.event.type) for se in files] == [(a, b, e.type) for a, b, e in ref]
    for se, (_, _, ev) in zip(files, ref, strict=True):
        assert se.file == name
        if isinstance(ev, FormatDescriptionEvent):  # the dump thread clears LOG_EVENT_BINLOG_IN_USE_F
            assert se.event.header.flags == ev.header.flags & ~1
        else:
            assert se.event == ev


@pytest.mark.parametrize("rel", FILES)
def test_a_dump_from_the_start_yields_the_files_events(corpus_dir: Path, rel: str) -> None:
    path = corpus_dir / rel
    stream = ReplicationStream(keep_raw=True)
    got = run(stream, d.stream_bytes(d.dump_events(path)), cuts=list(range(0, 10**8, 977)))
    assert stream.ended
    same(got, reference(path), path.name)
    head = got[0]
    assert not head.in_file and isinstance(head.event, RotateEvent) and head.event.artificial
    assert [se.event.type for se in got if not se.in_file] == ["ROTATE_EVENT"]
    data = path.read_bytes()
    for se in got:
        if se.in_file and se.raw is not None and se.start > 4:
            assert se.raw == data[se.start : se.end]


@pytest.mark.parametrize("rel", FILES)
def test_a_dump_from_the_middle_skips_the_resent_format_description(corpus_dir: Path, rel: str) -> None:
    path = corpus_dir / rel
    events = d.file_events(path)
    groups = [p for p, raw in events if raw[4] in (EventType.GTID_EVENT, EventType.GTID_LOG_EVENT, 34)]
    middle = events[len(events) // 2][0]
    start = next((p for p in groups if p >= middle), events[-1][0])  # an event group's start: its table maps follow
    got = run(ReplicationStream(), d.stream_bytes(d.dump_events(path, start)), cuts=[5, 100, 2000])
    same(got, reference(path, start), path.name)
    oob = [se for se in got if not se.in_file]
    assert [se.event.type for se in oob] == ["ROTATE_EVENT", "FORMAT_DESCRIPTION_EVENT"]
    assert all(se.start == se.end == start for se in oob)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=12000), max_size=30), seed=st.integers(0, 2**32))
def test_any_chunking_heartbeats_and_semi_sync_headers(corpus_dir: Path, cuts: list[int], seed: int) -> None:
    """Heartbeats between events; every event packet with the semi-sync header, some asking for an ack (never an
    artificial event or a heartbeat: update_sync_header runs for the files' events only)."""
    path = corpus_dir / f"{MARIADB}/corpus-bin.000009"
    rng = random.Random(seed)
    packets: list[bytes] = []
    acks: list[int] = []
    pos = 4
    for raw in d.dump_events(path):
        if rng.random() < 0.2:
            packets.append(d.event_packet(d.heartbeat(path.name, pos, crc=True), semi_sync=0))
        artificial = bool(raw[17] & d.ARTIFICIAL)
        flag = 0 if artificial else int(rng.random() < 0.3)
        packets.append(d.event_packet(raw, semi_sync=flag))
        if not artificial:
            acks.append(flag)
            pos = int.from_bytes(raw[13:17], "little")
    data = b"".join(d.frame(x, i + 1) for i, x in enumerate(packets)) + d.frame(b"\xfe\x00\x00\x02\x00", 0)
    got = run(ReplicationStream(semi_sync=True), data, cuts)
    same(got, reference(path), path.name)
    for se in got:
        if isinstance(se.event, HeartbeatEvent):
            assert not se.in_file and se.start == se.event.position and not se.ack
    assert [int(se.ack) for se in got if se.in_file and se.event.header.in_payload is None] == acks
    assert sum(acks) > 0 or len(acks) < 5


def test_holes_and_zero_next_positions(corpus_dir: Path) -> None:
    """Event groups a GTID start skips leave holes; MariaDB 11.4+ writes next position 0 in events copied from a
    transaction cache: both still give every event its file position."""
    path = corpus_dir / f"{MARIADB}/corpus-bin.000004"
    events = list(d.dump_events(path))
    ref = reference(path)
    kept: list[bytes] = []
    keep_positions = set()
    group = 0
    for raw in events:
        code = raw[4]
        if code == EventType.GTID_EVENT:
            group += 1
        skip = code not in (EventType.FORMAT_DESCRIPTION_EVENT, EventType.ROTATE_EVENT) and group % 3 == 1
        if skip:
            continue
        log_pos = int.from_bytes(raw[13:17], "little")
        if raw[17] & d.ARTIFICIAL == 0:
            keep_positions.add(log_pos - len(raw))
        if code in (EventType.TABLE_MAP_EVENT, EventType.WRITE_ROWS_EVENT_V1, EventType.QUERY_EVENT) and group % 3 == 2:
            raw = d.set_header(raw, log_pos=0)  # not the first event of its group: its position follows
        kept.append(raw)
    got = run(ReplicationStream(), d.stream_bytes(kept), [333, 4444])
    files = [se for se in got if se.in_file and se.event.header.in_payload is None]
    assert [(se.start, se.end, se.event.type) for se in files] == [
        (a, b, e.type) for a, b, e in ref if e.header.in_payload is None and a in keep_positions
    ]
    assert len(files) < len(ref) - 10


def test_rotations_move_to_the_next_file(corpus_dir: Path) -> None:
    first, second = corpus_dir / f"{MARIADB}/corpus-bin.000005", corpus_dir / f"{MARIADB}/corpus-bin.000006"
    got = run(ReplicationStream(), d.stream_bytes([*d.dump_events(first), *d.dump_events(second)]), [1000])
    files = [se for se in got if se.in_file]
    n = len(reference(first))
    same(files[:n], reference(first), first.name)
    same(files[n:], reference(second), second.name)
    assert isinstance(files[n - 1].event, RotateEvent) and not files[n - 1].event.artificial


@pytest.mark.parametrize("connect_crc", [True, False])
def test_the_artificial_rotate_is_read_whatever_the_files_checksum(corpus_dir: Path, connect_crc: bool) -> None:
    """The fake ROTATE carries the connection's CRC32, the next file's events their own: a file without checksums
    after one with, and the reverse, both resume."""
    crc_file, plain_file = corpus_dir / f"{MARIADB}/corpus-bin.000009", corpus_dir / f"{MARIADB}/corpus-bin.000010"
    for path in (plain_file, crc_file):
        stream = ReplicationStream()
        run(stream, d.stream_bytes(d.dump_events(crc_file if path is plain_file else plain_file), end=None))
        got = run(stream, d.stream_bytes(d.dump_events(path, connect_crc=connect_crc)))
        rotate = got[0].event
        assert isinstance(rotate, RotateEvent) and rotate.name == path.name and rotate.position == 4
        same(got, reference(path), path.name)


def test_an_error_packet_raises_after_the_events_before_it(corpus_dir: Path) -> None:
    path = corpus_dir / f"{MARIADB}/corpus-bin.000005"
    err = b"\xff\xd4\x04#HY000Could not find first log file name in binary log index file"
    stream = ReplicationStream()
    stream.feed(d.stream_bytes(list(d.dump_events(path))[:5], end=err))
    got = []
    with pytest.raises(BinlogPurgedError) as info:
        for se in stream.events():
            got.append(se)
    assert len(got) == 5 and info.value.file == path.name


def test_malformed_streams_raise_malformed_errors(corpus_dir: Path) -> None:
    path = corpus_dir / f"{MARIADB}/corpus-bin.000005"
    events = list(d.dump_events(path))
    bad_size = events[2][:9] + (len(events[2]) + 1).to_bytes(4, "little") + events[2][13:]
    for data in (
        d.stream_bytes([*events[:2], bad_size]),  # the size field disagrees with the packet
        d.stream_bytes(events[:2]).replace(b"\xfe\x00\x00\x02\x00", b"\x07\x00\x00\x02\x00"),
        d.stream_bytes(events[1:3]),  # an event before any ROTATE
        d.stream_bytes([events[0], events[1][:10]]),  # a 10-byte event
    ):
        stream = ReplicationStream()
        stream.feed(data)
        with pytest.raises(MalformedError):
            list(stream.events())
    wrong = bytearray(events[2])
    wrong[-1] ^= 0xFF
    stream = ReplicationStream()
    stream.feed(d.stream_bytes([*events[:2], bytes(wrong)]))
    with pytest.raises(ChecksumError):
        list(stream.events())
    stream = ReplicationStream(semi_sync=True)
    stream.feed(d.stream_bytes(events[:2]))  # no semi-sync header although one was asked for
    with pytest.raises(MalformedError, match="semi-sync"):
        list(stream.events())


def test_memory_stays_flat_however_long_the_stream(corpus_dir: Path) -> None:
    """Six files (42 MiB of events) take no more memory than one: the stream keeps one run of events."""
    import tracemalloc

    path = corpus_dir / f"{MARIADB}/corpus-bin.000002"
    one = d.stream_bytes(d.dump_events(path), end=None)
    peaks = []
    for files in (1, 6):
        stream = ReplicationStream()
        tracemalloc.start()
        for _ in range(files):
            for i in range(0, len(one), 1 << 18):
                stream.feed(one[i : i + (1 << 18)])
                for _se in stream.events():
                    pass
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < peaks[0] * 1.3 + (1 << 20), peaks
