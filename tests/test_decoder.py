"""The sans-IO decoder and the file reader around it: framing, checksums, resuming, following a growing file."""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import binlake
import binlake.events
from binlake.coltypes import Column
from binlake.decoder import DECODERS, MAGIC, Decoder
from binlake.errors import BinlogError, ChecksumError, MalformedError, TruncatedError
from binlake.events.base import EventType
from binlake.events.context import DecodeOptions
from binlake.events.format import FormatDescriptionEvent, StartV3Event
from binlake.events.query import QueryEvent
from binlake.reader import read_events, walk_headers
from binlake.schema import SchemaTracker

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "example-bin.000001"


def _positions(events: list[object]) -> list[tuple[int, str]]:
    return [(e.header.pos, e.type) for e in events]  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def example() -> bytes:
    return EXAMPLE.read_bytes()


@pytest.fixture(scope="module")
def whole(example: bytes) -> list[tuple[int, str]]:
    d = Decoder()
    d.feed(example)
    evs = list(d.events())
    d.finish()
    return _positions(evs)


def test_example_starts_with_format_description_and_ends_with_stop(example: bytes) -> None:
    d = Decoder()
    d.feed(example)
    evs = list(d.events())
    fde = evs[0]
    assert isinstance(fde, FormatDescriptionEvent)
    assert (fde.header.pos, fde.binlog_version, fde.checksum_alg_name) == (4, 4, "CRC32")
    assert fde.server_version.startswith("10.11.")
    assert evs[-1].type == "STOP_EVENT" and evs[-1].header.end_pos == len(example)
    # every event starts where the previous one ended, and log_pos says so too
    for a, b in itertools.pairwise(evs):
        assert b.header.pos == a.header.end_pos == a.header.log_pos


@given(st.lists(st.integers(1, 5000), min_size=1, max_size=40))
@settings(max_examples=30, deadline=None)
def test_any_chunking_gives_the_same_events(example: bytes, whole: list[tuple[int, str]], cuts: list[int]) -> None:
    d = Decoder()
    out = []
    at = 0
    for n in cuts:
        d.feed(example[at : at + n])
        at += n
        out.extend(d.events())
    d.feed(example[at:])
    out.extend(d.events())
    d.finish()
    assert _positions(out) == whole


def test_partial_event_waits_then_finish_says_truncated(example: bytes, whole: list[tuple[int, str]]) -> None:
    cut = whole[5][0] + 7  # inside the sixth event
    d = Decoder()
    d.feed(example[:cut])
    assert _positions(list(d.events())) == whole[:5]
    assert d.position == whole[5][0] and d.buffered == 7
    with pytest.raises(TruncatedError) as e:
        d.finish()
    assert e.value.pos == whole[5][0]


def test_bad_magic_and_empty_input() -> None:
    d = Decoder()
    d.feed(b"GIF89a")
    with pytest.raises(MalformedError, match="not a binlog"):
        list(d.events())
    with pytest.raises(TruncatedError, match="empty input"):
        Decoder().finish()


def test_checksum_mismatch_names_the_event_and_can_be_ignored(example: bytes, whole: list[tuple[int, str]]) -> None:
    pos = whole[3][0]
    broken = bytearray(example)
    broken[pos + 20] ^= 0x01
    d = Decoder()
    d.feed(bytes(broken))
    with pytest.raises(ChecksumError) as e:
        list(d.events())
    assert e.value.pos == pos and "CRC32 mismatch" in str(e.value)
    lenient = Decoder(DecodeOptions(verify_checksum=False))
    lenient.feed(bytes(broken))
    assert len(list(lenient.events())) == len(whole)


def test_skip_event_steps_over_a_bad_event(example: bytes, whole: list[tuple[int, str]]) -> None:
    pos = whole[3][0]
    broken = bytearray(example)
    broken[pos + 20] ^= 0x01
    d = Decoder()
    d.feed(bytes(broken))
    got = []
    while True:
        try:
            got.extend(d.events())
            break
        except BinlogError:
            d.skip_event()
    assert _positions(got) == whole[:3] + whole[4:]


def test_reader_resumes_mid_file_and_stops(whole: list[tuple[int, str]]) -> None:
    start, stop = whole[10][0], whole[20][0]
    got = _positions(list(read_events(EXAMPLE, start=start, stop=stop)))
    assert got == whole[10:20]


def test_reader_names_the_file_in_errors(tmp_path: Path, example: bytes, whole: list[tuple[int, str]]) -> None:
    f = tmp_path / "cut-bin.000001"
    f.write_bytes(example[: whole[7][0] + 3])
    with pytest.raises(TruncatedError) as e:
        list(read_events(f))
    assert e.value.file == str(f) and e.value.pos == whole[7][0]
    assert str(e.value).startswith(f"{f}: at {whole[7][0]}: ")


def test_reader_follows_a_file_being_written(tmp_path: Path, example: bytes, whole: list[tuple[int, str]]) -> None:
    """A binlog in use ends in a partial event: the reader waits for the rest instead of misparsing it."""
    f = tmp_path / "live-bin.000001"
    half = whole[len(whole) // 2][0] + 11  # mid-event
    f.write_bytes(example[:half])

    def writer() -> None:
        time.sleep(0.3)
        with f.open("ab") as out:
            out.write(example[half:])

    t = threading.Thread(target=writer)
    t.start()
    got = _positions(list(read_events(f, follow=True, poll_interval=0.05, idle_timeout=1.0)))
    t.join()
    assert got == whole


def test_walk_headers_agrees_with_the_decoder(whole: list[tuple[int, str]]) -> None:
    walked = [(h.pos, EventType.name_of(h.type_code)) for h in walk_headers(EXAMPLE)]
    assert walked == whole


def test_magic_constant() -> None:
    assert MAGIC == b"\xfebin"


class _Recorder:
    """A DDL tracker (binlake.events.context.DdlTracker) that records what the decoder tells it."""

    def __init__(self) -> None:
        self.told: list[tuple[str, int]] = []

    def observe(self, ev: QueryEvent) -> bool:
        self.told.append(("observe", ev.header.pos))
        return False

    def started(self, ev: FormatDescriptionEvent | StartV3Event) -> None:
        self.told.append(("started", ev.header.pos))

    def complete(self, schema: str, name: str, columns: tuple[Column, ...]) -> tuple[Column, ...]:
        self.told.append(("complete", 0))
        return columns


def test_the_decoder_tells_the_tracker_it_is_given(example: bytes) -> None:
    """The core decoder follows the tracker passed in: every QUERY event and format description, and no other."""
    recorder = _Recorder()
    d = Decoder(schema=recorder)
    d.feed(example)
    evs = list(d.events())
    expected = [
        ("started" if isinstance(ev, FormatDescriptionEvent) else "observe", ev.header.pos)
        for ev in evs
        if isinstance(ev, FormatDescriptionEvent | QueryEvent)
    ]
    assert recorder.told == expected and len(expected) > 3
    assert d.ctx.schema is recorder


def test_the_core_decoder_follows_no_ddl_and_binlake_decoder_does() -> None:
    assert Decoder().ctx.schema is None
    assert isinstance(binlake.Decoder().ctx.schema, SchemaTracker)
    assert binlake.Decoder(DecodeOptions(track_schema=False)).ctx.schema is None
    seeded = binlake.Decoder(DecodeOptions(schema_sql="CREATE TABLE d.t (a TIME(3))")).ctx.schema
    assert isinstance(seeded, SchemaTracker) and seeded.column_names("d", "t") == ("a",)
    recorder = _Recorder()
    assert binlake.Decoder(schema=recorder).ctx.schema is recorder


def test_the_dispatch_table_holds_every_family_decoder() -> None:
    """Every ``decode_*(header, body, ctx)`` of the event families is in DECODERS (a new one cannot be forgotten),
    under type codes EventType names."""
    families = [
        importlib.import_module(m.name) for m in pkgutil.iter_modules(binlake.events.__path__, "binlake.events.")
    ]
    decoders = {
        fn
        for module in families
        for name, fn in vars(module).items()
        if name.startswith("decode_")
        and inspect.isfunction(fn)
        and fn.__module__ == module.__name__
        and list(inspect.signature(fn).parameters) == ["header", "body", "ctx"]
    }
    assert len(decoders) > 25 and decoders == set(DECODERS.values())
    assert all(code in EventType._value2member_map_ for code in DECODERS)
