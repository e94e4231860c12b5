"""The event framing in C (``binlake._framing.frame``, used by :class:`binlake.decoder.Decoder`) against the
decoder's Python framing.

The decoder must yield equal events and stop with the same error (class, position, text) whichever frames them: on
every corpus binlog, on damaged copies (a flipped byte: a CRC mismatch, a bad size, a malformed body), on truncated
copies, and when a reader restarts the decoder in the middle of a framed run.  ``frame`` itself is checked on
hypothesis-made event sequences: every whole, intact event of a type in the mask, in order, and nothing past the
first one that is not.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake import decoder as decoder_module
from binlake.decoder import Decoder
from binlake.errors import BinlogError
from binlake.events.base import Event
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.reader import read_events

try:
    from binlake._framing import frame
except ImportError:  # not built
    frame = None  # type: ignore[assignment]

needs_c = pytest.mark.skipif(frame is None, reason="binlake._framing was not built (no C compiler or zlib.h)")

Outcome = tuple[list[Event], tuple[type[BinlogError], int | None, int | None, str] | None]


def corpus_files(corpus: Path) -> list[Path]:
    mariadb = sorted((corpus / "mariadb" / "binlogs").glob("*-bin.*"))
    return mariadb + sorted(p for p in (corpus / "mysql").rglob("*") if p.is_file())


def outcome(events: Iterator[Event]) -> Outcome:
    """The events a reader yields and the error it raises after them (class, position, offset, text)."""
    out = []
    try:
        for ev in events:
            out.append(ev)
    except BinlogError as e:
        return out, (type(e), e.pos, e.offset, str(e))
    return out, None


def both(fn: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Outcome, Outcome]:
    """``fn()``'s outcome with the C framing and with the Python one."""
    framed = outcome(fn())
    with monkeypatch.context() as m:
        m.setattr(decoder_module, "_framing", None)
        python = outcome(fn())
    return framed, python


def assert_same(framed: Outcome, python: Outcome) -> None:
    assert len(framed[0]) == len(python[0])
    for a, b in zip(framed[0], python[0], strict=True):
        assert a == b, (a.header, b.header)
    assert framed[1] == python[1]


@needs_c
def test_the_decoder_frames_in_c() -> None:
    assert decoder_module.FRAMING


@needs_c
def test_corpus_events_are_the_same(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = corpus_files(corpus_dir)
    assert len(files) > 60
    events = 0
    for path in files:
        framed, python = both(lambda p=path: read_events(p), monkeypatch)
        assert_same(framed, python)
        events += len(framed[0])
    assert events > 5_000


def _decode_bytes(data: bytes, *, chunk: int | None = None) -> Iterator[Event]:
    """A decoder fed ``data`` (in chunks of ``chunk`` bytes), then finished: as a file reader does."""
    d = Decoder()
    step = chunk or len(data) or 1
    for at in range(0, len(data), step):
        d.feed(data[at : at + step])
        yield from d.events()
    d.finish()


@needs_c
def test_damaged_and_truncated_copies(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A byte flipped in the header, body or checksum of events across the file, and cuts at several places: the
    same events, then the same error, whichever frames them (checksums verified or not)."""
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000002"
    data = path.read_bytes()
    assert len(data) > 10_000
    errors = 0
    for at in [*range(300, len(data), len(data) // 37), len(data) - 2]:
        for flip in (0x01, 0x80):
            damaged = data[:at] + bytes([data[at] ^ flip]) + data[at + 1 :]
            for verify in (True, False):
                ctx_options = DecodeOptions(verify_checksum=verify)

                def run(d: bytes = damaged, o: DecodeOptions = ctx_options) -> Iterator[Event]:
                    dec = Decoder(o)
                    dec.feed(d)
                    yield from dec.events()
                    dec.finish()

                framed, python = both(run, monkeypatch)
                assert_same(framed, python)
                errors += framed[1] is not None
    assert errors > 20  # most flips are caught (CRC), the rest decode to other values: the same either way
    for cut in range(100, len(data), len(data) // 11):
        for chunk in (None, 4096):
            framed, python = both(lambda c=cut, k=chunk: _decode_bytes(data[:c], chunk=k), monkeypatch)
            assert_same(framed, python)
            assert framed[1] is not None and "ends inside" in framed[1][3]


@needs_c
def test_restart_inside_a_framed_run(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that restarts the decoder (a new byte range) between two events of one framed run goes on from
    the new position, not with the rest of the run."""
    data = (corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000002").read_bytes()

    def run() -> Iterator[Event]:
        d = Decoder()
        d.feed(data)
        for seen, ev in enumerate(d.events(), 1):
            yield ev
            if seen == 5:
                again = ev.header.pos  # decode the fifth event a second time, then everything after it
                d.restart(again)
                d.feed(data[again:])
                break
        yield from d.events()

    framed, python = both(run, monkeypatch)
    assert_same(framed, python)
    assert framed[0][4] == framed[0][5]
    assert len(framed[0]) > 50


def _event(code: int, body: bytes, checksum: bool, pos: int = 0) -> bytes:
    size = 19 + len(body) + (4 if checksum else 0)
    head = struct.pack("<IBIIIH", 1_700_000_000 + code, code, 7, size, pos + size, code & 3)
    raw = head + body
    return raw + struct.pack("<I", zlib.crc32(raw)) if checksum else raw


events = st.lists(st.tuples(st.integers(0, 255), st.binary(max_size=80)), max_size=12)


@needs_c
@settings(max_examples=300, deadline=None)
@given(events, st.booleans(), st.binary(min_size=256, max_size=256), st.integers(0, 20), st.integers(0, 40))
def test_frame_gives_the_whole_intact_events_of_the_mask(
    evs: list[tuple[int, bytes]], checksum: bool, mask: bytes, limit: int, cut: int
) -> None:
    raws = [_event(code, body, checksum) for code, body in evs]
    buf = bytearray(b"xyz" + b"".join(raws))
    buf = buf[: len(buf) - cut] if cut else buf
    got = frame(buf, 3, 4 if checksum else 0, True, mask, limit)
    expected = []
    at = 3
    for raw, (code, body) in zip(raws, evs, strict=True):
        if len(expected) == limit or at + len(raw) > len(buf) or not mask[code]:
            break
        ts, _, server_id, size, log_pos, flags = struct.unpack_from("<IBIIIH", raw)
        stored = struct.unpack_from("<I", raw, len(raw) - 4)[0] if checksum else None
        expected.append((size, ts, code, server_id, log_pos, flags, stored, body))
        at += len(raw)
    assert got == expected


@needs_c
def test_frame_stops_before_a_bad_checksum_or_size() -> None:
    mask = b"\x01" * 256
    good, bad = _event(16, b"12345678", True), bytearray(_event(16, b"12345678", True))
    bad[25] ^= 1
    assert [r[7] for r in frame(bytearray(good + bad + good), 0, 4, True, mask, 9)] == [b"12345678"]
    assert len(frame(bytearray(good + bad + good), 0, 4, False, mask, 9)) == 3  # not verified: all three
    tiny = struct.pack("<IBIIIH", 0, 16, 0, 20, 0, 0) + b"\0"  # 20 bytes: no room for a 4-byte checksum
    assert frame(bytearray(good + tiny), 0, 4, True, mask, 9) == frame(bytearray(good), 0, 4, True, mask, 9)
    assert frame(bytearray(tiny), 0, 0, True, mask, 9)[0][7] == b"\0"
    for args in ((-1, 4), (0, 3)):
        with pytest.raises(ValueError):
            frame(bytearray(good), args[0], args[1], True, mask, 9)
    with pytest.raises(ValueError):
        frame(bytearray(good), 0, 4, True, mask[:5], 9)


def test_pure_python_decoder_without_framing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the extension the decoder frames in Python (what BINLAKE_PURE_PYTHON runs)."""
    monkeypatch.setattr(decoder_module, "_framing", None)
    d = Decoder(context=DecodeContext(DecodeOptions()))
    assert not d._can_frame()
    assert list(itertools.islice(_decode_bytes(b"\xfebin"), 1)) == []
