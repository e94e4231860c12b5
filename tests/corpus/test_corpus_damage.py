"""Recovery modes over the corpus's damaged files and over systematic damage to valid ones.

The damaged files are those ``mysql-INDEX.md`` marks "CORRUPT ON PURPOSE" or "DAMAGED"; their broken places are
documented there (e.g. corrupt-relay-bin.000624: "QUERY event @91204 (size 171) is broken").  The systematic damage
is made here in memory-sized temporary copies: truncations at every event boundary ± 3 bytes, a flipped byte in every
event's body and in every event's size field.  In every case only BinlogError escapes, and the skips name the
expected positions.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from pathlib import Path

import pytest

from binlake.decoder import Decoder
from binlake.errors import BinlogError, TruncatedError
from binlake.recovery import Skipped, read_events_recovering

pytestmark = pytest.mark.corpus

MODES = ("skip-event", "skip-transaction")
# what the index says about each damaged file: (start, end) of the one gap a skip mode must report
EXPECTED_GAPS = {
    "mysql/rust_mysql_common/corrupt-relay-bin.000624": (91204, 91375),
    "mysql/rust_mysql_common/binlog_truncated_event.000001": (4, 14),
    "mysql/rust_mysql_common/binlog_truncated_prev_gtid_event.000001": (120, 129),
}
VALID = ("mysql/rust_mysql_common/json.binlog.000001", "mariadb/binlogs/corpus-bin.000010")


def damaged_files(corpus_dir: Path) -> list[str]:
    index = (corpus_dir / "mysql-INDEX.md").read_text()
    return sorted(
        m.group(1)
        for line in index.splitlines()
        if "CORRUPT ON PURPOSE" in line or "DAMAGED" in line
        for m in [re.search(r"`(mysql/[^`]+)`", line)]
        if m and (corpus_dir / m.group(1)).is_file()
    )


def run(path: Path, mode: str) -> tuple[list[tuple[int, int]], list[Skipped]]:
    skips: list[Skipped] = []
    reader = read_events_recovering(path, on_error=mode, on_skip=skips.append)  # type: ignore[arg-type]
    spans = [(e.header.pos, e.header.end_pos) for e in reader if e.header.in_payload is None]
    assert reader.summary.complete and reader.summary.skipped == skips
    size = path.stat().st_size
    covered = sorted([*spans, *((s.start, s.end) for s in skips)])
    for (_, a_end), (b_start, _) in itertools.pairwise(covered):
        assert a_end <= b_start, covered  # events and gaps never overlap
    for s in skips:
        assert 0 <= s.start <= s.end <= size and s.file == str(path) and s.reason
    return spans, skips


def boundaries(data: bytes) -> list[tuple[int, int]]:
    dec = Decoder()
    dec.feed(data)
    return [(e.header.pos, e.header.end_pos) for e in dec.events() if e.header.in_payload is None]


def test_the_index_lists_the_damaged_files(corpus_dir: Path) -> None:
    files = damaged_files(corpus_dir)
    assert set(EXPECTED_GAPS) <= set(files) and "mysql/canal/tsdb_mysql-bin.000001" in files


def test_damaged_corpus_files(corpus_dir: Path) -> None:
    for name in damaged_files(corpus_dir):
        path = corpus_dir / name
        with pytest.raises(BinlogError) as exc:
            list(read_events_recovering(path))
        assert exc.value.file == str(path)
        for mode in MODES:
            spans, skips = run(path, mode)
            assert skips, (name, mode)
            if name in EXPECTED_GAPS:
                assert [(s.start, s.end) for s in skips] == [EXPECTED_GAPS[name]], (name, mode)
                assert exc.value.pos == EXPECTED_GAPS[name][0]
            if name.endswith("corrupt-relay-bin.000624"):
                # every event but the broken QUERY: 874 in the index, two of them inner FDEs of the relay log
                assert len(spans) == 873 and all(p != 91204 for p, _ in spans)
            if name.endswith("tsdb_mysql-bin.000001"):  # not a binlog at all: the gap starts at byte 0
                assert skips[0].start == 0


@pytest.mark.parametrize("name", VALID)
def test_truncation_at_every_boundary(corpus_dir: Path, tmp_path: Path, name: str) -> None:
    data = (corpus_dir / name).read_bytes()
    events = boundaries(data)
    ends = {end for _, end in events}
    path = tmp_path / "cut.bin"
    cuts = sorted({end + d for _, end in events for d in range(-3, 4) if 4 < end + d <= len(data)})
    for cut in cuts:
        path.write_bytes(data[:cut])
        whole = [span for span in events if span[1] <= cut]
        if cut in ends:
            assert [(e.header.pos, e.header.end_pos) for e in read_events_recovering(path)] == whole
            continue
        with pytest.raises(TruncatedError) as exc:
            list(read_events_recovering(path))
        partial = max(end for _, end in [(0, 4), *whole])
        assert exc.value.pos == partial
        spans, skips = run(path, "skip-event")
        assert spans == whole
        assert [(s.start, s.end) for s in skips] == [(partial, cut)]


@pytest.mark.parametrize("name", VALID)
def test_a_flipped_byte_in_every_event(corpus_dir: Path, tmp_path: Path, name: str) -> None:
    data = (corpus_dir / name).read_bytes()
    events = boundaries(data)
    checksummed = name.endswith("json.binlog.000001")
    path = tmp_path / "flipped.bin"
    for start, end in events[1:]:  # the FDE decides how to read the rest
        # the size field: the reader resynchronises on the next event
        broken = bytearray(data)
        broken[start + 12] ^= 0x40
        path.write_bytes(bytes(broken))
        spans, skips = run(path, "skip-event")
        assert spans == [s for s in events if s[0] != start]
        assert [(s.start, s.end) for s in skips] == [(start, end)]
        if checksummed:  # a body byte: the CRC32 catches it, the size steps over exactly this event
            broken = bytearray(data)
            broken[(start + end) // 2] ^= 0x01
            path.write_bytes(bytes(broken))
            spans, skips = run(path, "skip-event")
            assert spans == [s for s in events if s[0] != start]
            assert [(s.start, s.end, s.resynced) for s in skips] == [(start, end, False)]
            spans, skips = run(path, "skip-transaction")
            (skip,) = skips
            assert skip.start == start and set(spans) <= set(events) and (start, end) not in spans


@pytest.mark.parametrize("name", VALID)
def test_bit_flips_everywhere_only_raise_binlog_errors(corpus_dir: Path, tmp_path: Path, name: str) -> None:
    data = (corpus_dir / name).read_bytes()
    path = tmp_path / "flipped.bin"
    for at in range(4, len(data), 37):
        broken = bytearray(data)
        broken[at] ^= 1 << (at % 8)
        path.write_bytes(bytes(broken))
        for mode in MODES:
            run(path, mode)  # completes; its own checks hold
        with contextlib.suppress(BinlogError):
            list(read_events_recovering(path))
