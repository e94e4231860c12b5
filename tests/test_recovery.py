"""Recovery modes on real binlogs damaged in known places: each skip is reported with the exact byte positions.

The files are corpus binlogs (MySQL 8.0.22 ``json.binlog.000001`` with ANONYMOUS_GTID transactions and CRC32,
MariaDB ``corpus-bin.000010`` without checksums); the damage is made here, in a temporary copy, so the expected
positions are the undamaged file's event boundaries.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from binlake.decoder import Decoder
from binlake.errors import BinlogError, ChecksumError
from binlake.recovery import Skipped, read_events_recovering
from binlake.wire import crc32

pytestmark = pytest.mark.corpus

MYSQL = "mysql/rust_mysql_common/json.binlog.000001"  # 4011 bytes, CRC32
MARIADB_NO_CRC = "mariadb/binlogs/corpus-bin.000010"  # binlog_checksum=NONE


def boundaries(data: bytes) -> list[tuple[int, int, str]]:
    dec = Decoder()
    dec.feed(data)
    return [(e.header.pos, e.header.end_pos, e.type) for e in dec.events()]


def damaged(tmp_path: Path, data: bytes | bytearray) -> Path:
    path = tmp_path / "damaged.bin"
    path.write_bytes(bytes(data))
    return path


def read(path: Path, mode: str) -> tuple[list[int], list[Skipped]]:
    seen: list[Skipped] = []
    reader = read_events_recovering(path, on_error=mode, on_skip=seen.append)  # type: ignore[arg-type]
    positions = [e.header.pos for e in reader]
    assert reader.summary.skipped == seen and reader.summary.complete
    assert reader.summary.events == len(positions)
    return positions, seen


@pytest.fixture(scope="module")
def mysql(corpus_dir: Path) -> bytes:
    return (corpus_dir / MYSQL).read_bytes()


def test_stop_raises_at_the_first_bad_event(mysql: bytes, tmp_path: Path) -> None:
    data = bytearray(mysql)
    data[1000 + 30] ^= 0xFF  # inside the TABLE_MAP at 1000
    path = damaged(tmp_path, data)
    reader = read_events_recovering(path)
    with pytest.raises(ChecksumError) as exc:
        list(reader)
    assert exc.value.pos == 1000 and exc.value.file == str(path)
    assert not reader.summary.complete


def test_skip_event_steps_over_one_event(mysql: bytes, tmp_path: Path) -> None:
    events = boundaries(mysql)
    data = bytearray(mysql)
    data[1000 + 30] ^= 0xFF
    positions, skips = read(damaged(tmp_path, data), "skip-event")
    assert positions == [p for p, _, _ in events if p != 1000]
    (s,) = skips
    assert (s.start, s.end, s.events_lost, s.resynced, s.transaction_start) == (1000, 1059, 1, False, None)
    assert "CRC32 mismatch in TABLE_MAP_EVENT" in s.reason and isinstance(s.error, ChecksumError)


def test_skip_transaction_drops_the_rest_of_it(mysql: bytes, tmp_path: Path) -> None:
    events = boundaries(mysql)
    data = bytearray(mysql)
    data[1000 + 30] ^= 0xFF  # TABLE_MAP of the transaction 845 (GTID) .. 1195 (XID end)
    positions, skips = read(damaged(tmp_path, data), "skip-transaction")
    assert positions == [p for p, _, _ in events if not 1000 <= p < 1195]
    (s,) = skips
    # the TABLE_MAP, then WRITE_ROWS and XID dropped; GTID at 845 and BEGIN were yielded before the damage
    assert (s.start, s.end, s.events_lost, s.transaction_start) == (1000, 1195, 3, 845)


def test_skip_transaction_from_a_damaged_gtid(mysql: bytes, tmp_path: Path) -> None:
    events = boundaries(mysql)
    data = bytearray(mysql)
    data[1195 + 25] ^= 0x01  # ANONYMOUS_GTID 1195..1274 of the transaction ending at 1545
    positions, skips = read(damaged(tmp_path, data), "skip-transaction")
    assert positions == [p for p, _, _ in events if not 1195 <= p < 1545]
    assert [(s.start, s.end, s.events_lost, s.transaction_start) for s in skips] == [(1195, 1545, 5, None)]


@pytest.mark.parametrize("size", [0, 5, 0xFFFFFFF0, 40])
def test_garbage_size_resynchronises_on_the_next_header(mysql: bytes, tmp_path: Path, size: int) -> None:
    # 40: a size inside the event that leads to no plausible header
    events = boundaries(mysql)
    data = bytearray(mysql)
    data[1059 + 9 : 1059 + 13] = size.to_bytes(4, "little")  # WRITE_ROWS 1059..1164
    positions, skips = read(damaged(tmp_path, data), "skip-event")
    assert positions == [p for p, _, _ in events if p != 1059]
    (s,) = skips
    assert (s.start, s.end, s.events_lost, s.resynced) == (1059, 1164, 1, True)


def test_two_adjacent_damaged_events_are_one_gap(mysql: bytes, tmp_path: Path) -> None:
    events = boundaries(mysql)
    data = bytearray(mysql)
    data[1059 + 9 : 1059 + 13] = b"\xff\xff\xff\x7f"
    data[1164 + 4] = 0xEE  # XID's type code: not a plausible header any more
    positions, skips = read(damaged(tmp_path, data), "skip-event")
    assert positions == [p for p, _, _ in events if p not in (1059, 1164)]
    assert [(s.start, s.end, s.resynced) for s in skips] == [(1059, 1195, True)]


def test_truncated_file_reports_the_partial_last_event(mysql: bytes, tmp_path: Path) -> None:
    events = boundaries(mysql)
    cut = 3750 + 100  # inside PARTIAL_UPDATE_ROWS 3750..3980
    for mode in ("skip-event", "skip-transaction"):
        positions, skips = read(damaged(tmp_path, mysql[:cut]), mode)
        assert positions == [p for p, _, _ in events if p < 3750]
        (s,) = skips
        assert (s.start, s.end) == (3750, cut)
        assert s.transaction_start == (3527 if mode == "skip-transaction" else None)


def test_bad_magic_is_a_gap_of_four_bytes(mysql: bytes, tmp_path: Path) -> None:
    events = boundaries(mysql)
    positions, skips = read(damaged(tmp_path, b"XXXX" + mysql[4:]), "skip-event")
    assert positions == [p for p, _, _ in events]
    assert [(s.start, s.end, s.events_lost) for s in skips] == [(0, 4, 0)]


def test_without_checksums_log_pos_finds_the_next_event(corpus_dir: Path, tmp_path: Path) -> None:
    original = (corpus_dir / MARIADB_NO_CRC).read_bytes()
    events = boundaries(original)
    victim = next((p, end) for p, end, t in events if t == "TABLE_MAP_EVENT")
    data = bytearray(original)
    data[victim[0] + 9 : victim[0] + 13] = b"\x00\x00\x00\x10"
    positions, skips = read(damaged(tmp_path, data), "skip-event")
    assert positions == [p for p, _, _ in events if p != victim[0]]
    assert [(s.start, s.end, s.resynced) for s in skips] == [(victim[0], victim[1], True)]


def test_damage_inside_a_transaction_payload(corpus_dir: Path, tmp_path: Path) -> None:
    original = (corpus_dir / "mysql/mysql-binlog-connector-rust/mysql-bin.000057").read_bytes()
    dec = Decoder()
    dec.feed(original)
    all_events = list(dec.events())
    payload = next(e for e in all_events if e.type == "TRANSACTION_PAYLOAD_EVENT")
    start, end = payload.header.pos, payload.header.end_pos
    data = bytearray(original)
    data[end - 10] ^= 0xFF  # the zstd frame's tail, then a valid CRC: the payload itself does not decode
    data[end - 4 : end] = crc32(bytes(data[start : end - 4])).to_bytes(4, "little")
    positions, skips = read(damaged(tmp_path, data), "skip-event")
    (s,) = skips
    assert (s.start, s.end) == (start, end)
    file_level = [e.header.pos for e in all_events if e.header.in_payload != start and e.header.pos != start]
    assert [p for p in positions if p >= end or p < start] == [p for p in file_level if p >= end or p < start]


def test_skips_are_logged_when_nobody_listens(mysql: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = bytearray(mysql)
    data[1000 + 30] ^= 0xFF
    with caplog.at_level(logging.WARNING, logger="binlake.recovery"):
        reader = read_events_recovering(damaged(tmp_path, data), on_error="skip-event")
        list(reader)
    assert "skipped 59 bytes at 1000-1059, 1 event lost" in caplog.text
    assert str(reader.summary) == "35 events, 1 skip (59 bytes, 1 event lost)"


def test_clean_file_has_no_skips(mysql: bytes, tmp_path: Path) -> None:
    positions, skips = read(damaged(tmp_path, mysql), "skip-transaction")
    assert positions == [p for p, _, _ in boundaries(mysql)] and skips == []


def test_bad_mode_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="on_error"):
        read_events_recovering(tmp_path / "x", on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(BinlogError, match="cannot read"):
        list(read_events_recovering(tmp_path / "absent", on_error="skip-event"))


@pytest.mark.parametrize("mode", ["skip-event", "skip-transaction"])
def test_a_start_position_reads_from_there_with_the_same_skips(mysql: bytes, tmp_path: Path, mode: str) -> None:
    """``start`` (a Spark split's first event) decodes the header events, then from ``start`` only: the events and
    skips are those of the whole read from there on, and nothing before ``start`` is decoded again."""
    data = bytearray(mysql)
    data[1000 + 30] ^= 0xFF  # the TABLE_MAP at 1000 of the transaction 845..1195
    data[1195 + 25] ^= 0x01  # the ANONYMOUS_GTID at 1195 of the next one, ..1545
    path = damaged(tmp_path, data)
    whole, whole_skips = read(path, mode)
    starts = [p for p, _, _ in boundaries(mysql) if p > 200]
    for start in (starts[0], 845, 1195, 1545, starts[-1]):
        seen: list[Skipped] = []
        reader = read_events_recovering(path, on_error=mode, on_skip=seen.append, start=start)  # type: ignore[arg-type]
        positions = [e.header.pos for e in reader]
        assert positions == [p for p in whole if p >= start], start
        assert [(s.start, s.end) for s in seen] == [(s.start, s.end) for s in whole_skips if s.start >= start]
        assert reader.summary.events == len(positions) and reader.summary.complete


def test_a_start_position_after_damaged_header_events_reads_the_whole_file(mysql: bytes, tmp_path: Path) -> None:
    data = bytearray(mysql)
    data[4 + 30] ^= 0xFF  # the FORMAT_DESCRIPTION_EVENT itself
    path = damaged(tmp_path, data)
    whole, whole_skips = read(path, "skip-event")
    assert whole_skips and whole_skips[0].start == 4
    seen: list[Skipped] = []
    reader = read_events_recovering(path, on_error="skip-event", on_skip=seen.append, start=1195)
    assert [e.header.pos for e in reader] == [p for p in whole if p >= 1195]
    assert [(s.start, s.end) for s in seen] == [(s.start, s.end) for s in whole_skips]  # all of them, as documented
