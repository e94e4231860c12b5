"""Fuzz targets shared by the hypothesis tests (``test_fuzz.py``) and the optional atheris driver (``atheris_main.py``).

Every target takes one ``bytes`` input (what a coverage-guided fuzzer hands over) and must either return or raise a
:class:`~binlake.errors.BinlogError`; anything else escaping is a finding.  :func:`guarded` runs a target and checks
the other two guarantees: a bounded time per input and a bounded memory peak (tracemalloc), so that a length field
claiming gigabytes, or a zstd/zlib bomb, shows up as a failure instead of an allocation.

Structured targets are seeded with real events read from the corpus at run time (:func:`load_seeds`): the first two
input bytes pick a seed, the rest is a list of 4-byte mutation operations applied to it (:func:`mutate`).

Example::

    seeds = load_seeds(corpus_dir)
    guarded(TARGETS["event"], seeds, b"\\x00\\x07\\x01\\x00\\x20\\xff")
"""

from __future__ import annotations

import dataclasses
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from binlake.coltypes import Column, ColumnType, metadata_size
from binlake.decoder import Decoder, decode_event
from binlake.errors import BinlogError
from binlake.events.base import Event, EventType
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.rows import RowsEvent, mariadb_uncompress
from binlake.events.table_map import TableMapEvent
from binlake.rowdecoder import row_decoder
from binlake.values import json_binary, strings

# a 1-64 KiB input may take this long and allocate this much at most
DEADLINE_S = 5.0
MEMORY_PEAK = 64 << 20
# the decompression bound the fuzzed decoders run under (a bomb must stop here)
MAX_DECOMPRESSED = 1 << 20
OPTIONS = DecodeOptions(verify_checksum=False, max_decompressed=MAX_DECOMPRESSED)

# corpus files the seeds come from: every event family, old and new formats, compressed, no checksum
SEED_FILES = (
    "mariadb/binlogs/corpus-bin.000002",
    "mariadb/binlogs/corpus-bin.000003",
    "mariadb/binlogs/corpus-bin.000007",
    "mariadb/binlogs/corpus-bin.000009",
    "mariadb/binlogs/corpus-bin.000010",
    "mariadb/reference/remote-raw-corpus-bin.000022",
    "mysql/rust_mysql_common/json.binlog.000001",
    "mysql/rust_mysql_common/json-opaque.binlog",
    "mysql/rust_mysql_common/mysql-enum-string-set.000001",
    "mysql/rust_mysql_common/binlog_transaction_with_GTID_TAG.000001",
    "mysql/rust_mysql_common/bug33029-slave-relay-bin.000001",
    "mysql/mysql-binlog-connector-rust/mysql-bin.000057",
    "mysql/canal/mysql-bin.000001",
)
PREFIX = 2 << 20  # of a big seed file, only the events in its first bytes
PER_TYPE = 25  # seeds kept per file and type code
STREAM_MAX = 64 << 10  # files up to this size are stream seeds


@dataclass(frozen=True, slots=True)
class Seed:
    """One real event: its bytes as stored, its position, and the context it was decoded under."""

    raw: bytes
    pos: int
    ctx: DecodeContext


@dataclass(slots=True)
class Seeds:
    events: list[Seed] = field(default_factory=list)
    streams: list[bytes] = field(default_factory=list)

    def of(self, *codes: int) -> list[Seed]:
        return [s for s in self.events if s.raw[4] in codes]


def load_seeds(corpus_dir: Path) -> Seeds:
    """Real events and small whole files from the corpus (see :data:`SEED_FILES`)."""
    seeds = Seeds()
    for name in SEED_FILES:
        path = corpus_dir / name
        if not path.is_file():
            continue
        with open(path, "rb") as f:
            data = f.read(PREFIX)
        if len(data) <= STREAM_MAX:
            seeds.streams.append(data)
        dec = Decoder()
        dec.feed(data)
        kept: dict[int, int] = {}
        for ev in dec.events():
            h = ev.header
            if h.in_payload is not None or kept.get(h.type_code, 0) >= PER_TYPE:
                continue
            kept[h.type_code] = kept.get(h.type_code, 0) + 1
            ctx = dec.ctx
            snapshot = DecodeContext(OPTIONS, ctx.fde, dict(ctx.table_maps), ctx.header_len)
            if isinstance(ev, TableMapEvent):  # the context a rows event after it has
                snapshot.table_maps[ev.table_id] = ev
            seeds.events.append(Seed(data[h.pos : h.end_pos], h.pos, snapshot))
    return seeds


def mutate(seed: bytes, ops: bytes) -> bytes:
    """Apply 4-byte operations ``(kind, offset_hi, offset_lo, value)`` to ``seed``.

    Kinds (mod 8): set a byte, flip bits, truncate, insert a byte, delete a byte, write a 32-bit length
    (``value`` selects 0, small, just past the end, or huge), duplicate a slice, zero a byte.
    """
    buf = bytearray(seed)
    for i in range(0, len(ops) - 3, 4):
        kind, hi, lo, value = ops[i], ops[i + 1], ops[i + 2], ops[i + 3]
        if not buf:
            buf.append(value)
            continue
        at = ((hi << 8) | lo) % len(buf)
        k = kind % 8
        if k == 0:
            buf[at] = value
        elif k == 1:
            buf[at] ^= value or 1
        elif k == 2:
            del buf[at:]
        elif k == 3:
            buf.insert(at, value)
        elif k == 4:
            del buf[at]
        elif k == 5:
            n = (0, value, len(buf) - at + value, 0xFFFFFFF0 - value)[value % 4]
            buf[at : at + 4] = (n & 0xFFFFFFFF).to_bytes(4, "little")
        elif k == 6:
            buf[at:at] = buf[at : at + value]
        else:
            buf[at] = 0
    return bytes(buf)


def _pick(items: list[Seed] | list[bytes], data: bytes) -> int:
    return int.from_bytes(data[:2], "big") % len(items)


def _touch(ev: Event) -> None:
    """Everything a consumer would call on an event."""
    ev.summary()
    if isinstance(ev, RowsEvent) and ev.table_map is not None:
        ev.rows(typed=True)
        ev.rows(typed=False)
    elif isinstance(ev, TableMapEvent):
        for col in ev.columns:
            col.real_type  # noqa: B018  (property access is the point)
    uncompressed = getattr(ev, "uncompressed", None)
    if uncompressed is not None:
        uncompressed(MAX_DECOMPRESSED)


def stream(seeds: Seeds, data: bytes) -> None:
    """Decoder.feed of a mutated corpus file (cut in two feeds), every event touched."""
    if not seeds.streams:
        return
    buf = mutate(seeds.streams[_pick(seeds.streams, data)], data[2:])
    dec = Decoder(OPTIONS)
    cut = len(buf) // 3
    for part in (buf[:cut], buf[cut:]):
        dec.feed(part)
        for ev in dec.events():
            _touch(ev)
    dec.finish()


def raw_stream(seeds: Seeds, data: bytes) -> None:
    """Decoder.feed of random bytes after the magic, with and without checksum verification."""
    for options in (OPTIONS, DecodeOptions(max_decompressed=MAX_DECOMPRESSED)):
        dec = Decoder(options)
        dec.feed(b"\xfebin" + data)
        for ev in dec.events():
            _touch(ev)
        dec.finish()


def _event_target(*codes: int) -> Callable[[Seeds, bytes], None]:
    def target(seeds: Seeds, data: bytes) -> None:
        pool = seeds.of(*codes) if codes else seeds.events
        if not pool:
            return
        seed = pool[_pick(pool, data)]
        raw = mutate(seed.raw, data[2:])
        ctx = dataclasses.replace(seed.ctx, table_maps=dict(seed.ctx.table_maps))
        _touch(decode_event(raw, seed.pos, ctx))

    return target


_E = EventType
ROWS_CODES = (
    _E.WRITE_ROWS_EVENT_V1,
    _E.UPDATE_ROWS_EVENT_V1,
    _E.DELETE_ROWS_EVENT_V1,
    _E.WRITE_ROWS_EVENT,
    _E.UPDATE_ROWS_EVENT,
    _E.DELETE_ROWS_EVENT,
    _E.PARTIAL_UPDATE_ROWS_EVENT,
    *range(_E.WRITE_ROWS_COMPRESSED_EVENT_V1, _E.DELETE_ROWS_COMPRESSED_EVENT + 1),
)
event = _event_target()
table_map = _event_target(_E.TABLE_MAP_EVENT)
rows = _event_target(*ROWS_CODES)
compressed_events = _event_target(_E.TRANSACTION_PAYLOAD_EVENT, _E.QUERY_COMPRESSED_EVENT, *ROWS_CODES[7:])


def json(seeds: Seeds, data: bytes) -> None:
    """MySQL binary JSON: decode and print a document."""
    json_binary.to_text(data)


_VALUE_TYPES = (
    ColumnType.NEWDECIMAL,
    ColumnType.DECIMAL,
    ColumnType.DATE,
    ColumnType.TIME,
    ColumnType.TIME2,
    ColumnType.DATETIME,
    ColumnType.DATETIME2,
    ColumnType.TIMESTAMP,
    ColumnType.TIMESTAMP2,
    ColumnType.NEWDATE,
)


def values(seeds: Seeds, data: bytes) -> None:
    """DECIMAL and temporal values through the row decoder (one column, one row): type from byte 0, metadata from
    the next bytes (as long as the table map gives it), the row image from the rest."""
    if not data:
        return
    code = _VALUE_TYPES[data[0] % len(_VALUE_TYPES)]
    n = metadata_size(code)
    col = Column.build(0, code, data[1 : 1 + n].ljust(n, b"\0"))
    for typed in (True, False):
        row_decoder((col,), "insert", b"\x01", typed=typed).rows(b"\x00" + data[1 + n :])


def mariadb_compressed(seeds: Seeds, data: bytes) -> None:
    """MariaDB's zlib compressed values and events (binlog_buf_uncompress)."""
    mariadb_uncompress(data, MAX_DECOMPRESSED)
    strings.uncompress(data, MAX_DECOMPRESSED)


TARGETS: dict[str, Callable[[Seeds, bytes], None]] = {
    "stream": stream,
    "raw_stream": raw_stream,
    "event": event,
    "table_map": table_map,
    "rows": rows,
    "compressed_events": compressed_events,
    "json": json,
    "values": values,
    "mariadb_compressed": mariadb_compressed,
}


class Finding(AssertionError):
    """A target broke a guarantee on one input (kept in the message, ready for ``test_regressions.py``)."""


def guarded(target: Callable[[Seeds, bytes], None], seeds: Seeds, data: bytes) -> None:
    """Run ``target`` on ``data``: only BinlogError may escape, within :data:`DEADLINE_S` and :data:`MEMORY_PEAK`.

    The memory peak is measured when tracemalloc is tracing (the callers start it).
    """
    tracing = tracemalloc.is_tracing()
    if tracing:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    try:
        target(seeds, data)
    except BinlogError:
        pass
    except Exception as e:
        raise Finding(f"{type(e).__name__}: {e} on input {data!r}") from e
    elapsed = time.perf_counter() - start
    if elapsed > DEADLINE_S:
        raise Finding(f"took {elapsed:.1f} s (limit {DEADLINE_S}) on input {data!r}")
    if tracing:
        peak = tracemalloc.get_traced_memory()[1] - base
        if peak > MEMORY_PEAK:
            raise Finding(f"allocated {peak >> 20} MiB (limit {MEMORY_PEAK >> 20}) on input {data!r}")
