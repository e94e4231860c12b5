"""Hypothesis fuzzing of every decoder surface (targets in ``targets.py``), on a bounded time budget.

The guarantee under test: any input yields events and/or a :class:`~binlake.errors.BinlogError`, nothing else, in
bounded time and memory.  ``BINLAKE_FUZZ_SECONDS`` (default 20) is the total budget of this module, shared by the
targets; raise it for a long run (``BINLAKE_FUZZ_SECONDS=600 pytest -m fuzz tests/fuzz``).  Seeds are real corpus
events, read at run time.  Bombs and huge length fields are also tested directly, with exact memory bounds.
"""

from __future__ import annotations

import io
import os
import struct
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz.targets import MAX_DECOMPRESSED, TARGETS, Seeds, guarded, load_seeds

from binlake.decoder import Decoder
from binlake.errors import BinlogError, DecompressionError
from binlake.events.context import DecodeOptions
from binlake.events.rows import mariadb_uncompress

pytestmark = pytest.mark.fuzz

BUDGET_S = float(os.environ.get("BINLAKE_FUZZ_SECONDS", "20"))
_SHARE = BUDGET_S / len(TARGETS)
BATCH = 40  # examples per hypothesis run; runs repeat until the target's share of the budget is spent
executions: dict[str, int] = {}


@pytest.fixture(scope="module")
def seeds(corpus_dir: Path) -> Seeds:
    s = load_seeds(corpus_dir)
    assert len(s.events) > 300 and s.streams, "the corpus seeds are missing"
    return s


@pytest.fixture(scope="module", autouse=True)
def _tracemalloc() -> Iterator[None]:
    tracemalloc.start()
    yield
    tracemalloc.stop()


_INPUT = st.one_of(
    st.binary(max_size=64),
    st.binary(min_size=64, max_size=1024),
    # a seed pick then few, then many mutation ops
    st.tuples(st.binary(min_size=2, max_size=2), st.binary(max_size=16)).map(b"".join),
)


@pytest.mark.parametrize("name", list(TARGETS))
def test_only_binlog_errors_escape(name: str, seeds: Seeds) -> None:
    target = TARGETS[name]
    count = 0

    @settings(
        max_examples=BATCH,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=_INPUT)
    def run(data: bytes) -> None:
        nonlocal count
        count += 1
        guarded(target, seeds, data)

    end = time.monotonic() + _SHARE
    while True:
        run()
        if time.monotonic() >= end:
            break
    executions[name] = count
    print(f"fuzz {name}: {count} inputs in {_SHARE:.1f} s")  # shown with -s
    assert count >= BATCH


def test_zlib_bomb_is_a_decompression_error() -> None:
    bomb = zlib.compress(bytes(64 << 20), 9)  # 64 MiB of zeros in ~64 KiB
    header = bytes([0x84]) + (64 << 20).to_bytes(4, "big")
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    with pytest.raises(DecompressionError, match="limit"):
        mariadb_uncompress(header + bomb, MAX_DECOMPRESSED)
    lying = bytes([0x83]) + (1000).to_bytes(3, "big")  # claims 1000 bytes, inflates to 64 MiB
    with pytest.raises(DecompressionError):
        mariadb_uncompress(lying + bomb, MAX_DECOMPRESSED)
    assert tracemalloc.get_traced_memory()[1] - base < 8 << 20


def _payload_event(payload: bytes, size: int) -> bytes:
    """A TRANSACTION_PAYLOAD_EVENT: (type, length, packed value) fields, the end mark, the zstd data
    (``Transaction_payload_event``, libs/mysql/binlog/event/control_events.cpp)."""

    def field(kind: int, value: int) -> bytes:
        return bytes([kind, 9, 0xFE]) + value.to_bytes(8, "little")

    body = field(1, len(payload)) + bytes([2, 1, 0]) + field(3, size) + b"\0" + payload  # 0 = zstd
    return struct.pack("<IBIIIH", 0, 40, 1, 19 + len(body), 0, 0) + body


def test_zstd_bomb_is_a_decompression_error() -> None:
    bomb = zstandard.ZstdCompressor(level=3).compress(bytes(64 << 20))
    for claimed in (64 << 20, 1000):  # over the limit; a lie under it
        dec = Decoder(DecodeOptions(max_decompressed=MAX_DECOMPRESSED), magic=False, start_pos=4)
        dec.feed(_payload_event(bomb, claimed))
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        with pytest.raises(DecompressionError):
            list(dec.events())
        assert tracemalloc.get_traced_memory()[1] - base < 8 << 20
    assert len(io.BytesIO(bomb).getvalue()) < 1 << 20


@pytest.mark.parametrize("offset", [9, 19, 23, 27])
def test_gigabyte_length_fields_allocate_nothing(seeds: Seeds, offset: int) -> None:
    """A size field (event size, or the first length fields of each body) set to ~4 GiB: an error, no allocation."""
    for seed in seeds.events[:200]:
        raw = bytearray(seed.raw)
        raw[offset : offset + 4] = b"\xf0\xff\xff\xff"
        dec = Decoder(DecodeOptions(verify_checksum=False), magic=False, start_pos=seed.pos, context=seed.ctx)
        dec.feed(bytes(raw))
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            list(dec.events())
            dec.finish()
        except BinlogError:
            pass
        assert tracemalloc.get_traced_memory()[1] - base < 16 << 20, seed.raw[4]
