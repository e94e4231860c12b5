"""The compiled row decoder (``binlake._speedups``) against the Python one and the value readers.

Layouts and rows are drawn at random and encoded here (``Field_*::pack`` of ``sql/field.cc``; ``decimal2bin`` of
``strings/decimal.cc``; ``my_*_packed_to_binary`` of ``mysys/my_time.c``), with stored bytes that are valid most of
the time and random (zero dates, digit groups out of range, bytes that are not UTF-8, ENUM indexes past the
members) or cut short some of the time.  Three decoders must agree on every row change: the value readers column
by column (``reader_for``/``typed``, written here as the plain definition of a row image), the Python
decoder (``RowDecoder.rows_python``) and the compiled ``Plan.rows``; where the Python decoder raises a
:class:`BinlogError`, the compiled one must hand back ``None`` (so ``RowDecoder.rows`` re-runs Python, which raises).
The differential tests import the extension directly, so they run with ``BINLAKE_PURE_PYTHON=1`` too; they skip only
where it was not built.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake import rowdecoder
from binlake.coltypes import Column
from binlake.coltypes import ColumnType as T
from binlake.errors import BinlogError
from binlake.rowdecoder import RowDecoder, plan_mode, row_decoder
from binlake.values import reader_for, typed
from binlake.values.row import ABSENT
from binlake.values.temporal import InvalidDatetime

BUILT = importlib.util.find_spec("binlake._speedups") is not None
if BUILT:
    from binlake import _speedups
needs_speedups = pytest.mark.skipif(not BUILT, reason="binlake._speedups was not built (no C compiler at install)")

Gen = Callable[[random.Random], bytes]


@dataclass(frozen=True)
class Spec:
    """A column kind for the random layouts: type code, metadata bytes, extra column facts, a stored-bytes maker."""

    code: int
    meta: bytes
    gen: Gen
    attrs: Mapping[str, object] = field(default_factory=dict)

    def column(self, index: int) -> Column:
        col = Column.build(index, self.code, self.meta)
        return col.with_(**self.attrs) if self.attrs else col


def fixed(size: int) -> Gen:
    return lambda r: r.randbytes(size)


def int_spec(code: int, size: int, unsigned: bool) -> Spec:
    return Spec(code, b"", fixed(size), {"unsigned": unsigned})


def datetime2(fsp: int) -> Gen:
    frac_bytes = (fsp + 1) // 2
    unit = (1, 10_000, 100, 1)[frac_bytes]

    def gen(r: random.Random) -> bytes:
        roll = r.random()
        if roll < 0.1:
            return r.randbytes(5 + frac_bytes)
        if roll < 0.2:  # zero or partial dates: InvalidDatetime from the reader
            y, mo, d = r.choice([(0, 0, 0), (2024, 0, 10), (2024, 2, 30), (0, 1, 1)])
        else:
            y, mo, d = r.randint(1, 9999), r.randint(1, 12), r.randint(1, 28)
        hms = r.randint(0, 23) << 12 | r.randint(0, 59) << 6 | r.randint(0, 59)
        head = ((((y * 13 + mo) << 5 | d) << 17 | hms) + 0x8000000000).to_bytes(5, "big")
        return head + (r.randint(0, 999_999) // unit if frac_bytes else 0).to_bytes(frac_bytes, "big")

    return gen


def timestamp2(fsp: int) -> Gen:
    frac_bytes = (fsp + 1) // 2
    unit = (1, 10_000, 100, 1)[frac_bytes]

    def gen(r: random.Random) -> bytes:
        if r.random() < 0.15:
            return bytes(4 + frac_bytes) if r.random() < 0.5 else r.randbytes(4 + frac_bytes)
        frac = r.randint(0, 999_999) // unit if frac_bytes else 0
        return r.getrandbits(32).to_bytes(4, "big") + frac.to_bytes(frac_bytes, "big")

    return gen


def time2(fsp: int) -> Gen:
    frac_bytes = (fsp + 1) // 2

    def gen(r: random.Random) -> bytes:
        if r.random() < 0.1:
            return r.randbytes(3 + frac_bytes)
        hms = r.randint(0, 838) << 12 | r.randint(0, 59) << 6 | r.randint(0, 59)
        if fsp >= 5:  # one 48-bit value: (int part << 24 | microseconds), signed, offset by 0x800000000000
            packed = hms << 24 | r.randint(0, 999_999)
            return ((-packed if r.random() < 0.3 else packed) + 0x800000000000).to_bytes(6, "big")
        intpart = -hms if r.random() < 0.3 else hms
        frac = r.randint(0, (100, 10_000)[frac_bytes - 1] - 1) if frac_bytes else 0
        return ((intpart + 0x800000) << (8 * frac_bytes) | frac).to_bytes(3 + frac_bytes, "big")

    return gen


def decimal(precision: int, scale: int) -> Gen:
    dig2bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    intg = precision - scale
    groups = [intg % 9] + [9] * (intg // 9) + [9] * (scale // 9) + [scale % 9]
    layout = [(dig2bytes[d], d) for d in groups if d]

    def gen(r: random.Random) -> bytes:
        bad = r.random() < 0.05  # a group past its digits: MalformedError
        raw = b"".join(
            r.randint(0, 256**n - 1 if bad else 10**d - 1).to_bytes(n, "big") if d else b"" for n, d in layout
        )
        if r.random() < 0.5:
            raw = bytes(b ^ 0xFF for b in raw)  # negative: every byte inverted, then the sign bit flipped
        return bytes([raw[0] ^ 0x80]) + raw[1:]

    return gen


def string(length_bytes: int, max_len: int, utf8: bool) -> Gen:
    def gen(r: random.Random) -> bytes:
        if utf8 and r.random() < 0.8:
            data = "".join(r.choice("aé€😀\x00'") for _ in range(r.randint(0, max_len // 4))).encode()
        else:
            data = r.randbytes(r.randint(0, max_len))
        return len(data).to_bytes(length_bytes, "little") + data

    return gen


def old_datetime(r: random.Random) -> bytes:
    """Type 12 (``Field_datetime``): 8 bytes little-endian YYYYMMDDhhmmss, read by its Python reader."""
    ymd = r.randint(1000, 9999) * 10000 + r.randint(0, 12) * 100 + r.randint(0, 31)
    return (ymd * 1_000_000 + r.randint(0, 235959)).to_bytes(8, "little")


UTF8MB4 = {"charset": 45}
PALETTE = [
    *(int_spec(code, size, u) for code, size in ((1, 1), (2, 2), (9, 3), (3, 4), (8, 8)) for u in (False, True)),
    Spec(T.FLOAT, b"\x04", fixed(4)),
    Spec(T.DOUBLE, b"\x08", fixed(8)),
    Spec(T.YEAR, b"", fixed(1)),
    Spec(T.BIT, bytes([3, 1]), fixed(2)),  # BIT(11): bits past 11 set some of the time
    Spec(T.BIT, bytes([0, 8]), fixed(8)),  # BIT(64)
    Spec(T.DATE, b"", lambda r: r.randbytes(3) if r.random() < 0.3 else r.choice([b"\x00\x00\x00", b"\x21\x0f\x0f"])),
    *(Spec(T.DATETIME2, bytes([f]), datetime2(f)) for f in (0, 2, 3, 6)),
    *(Spec(T.TIMESTAMP2, bytes([f]), timestamp2(f)) for f in (0, 1, 4, 6)),
    *(Spec(T.TIME2, bytes([f]), time2(f)) for f in (0, 2, 3, 5, 6)),
    *(Spec(T.NEWDECIMAL, bytes([p, s]), decimal(p, s)) for p, s in ((14, 4), (5, 0), (9, 9), (40, 12), (65, 30))),
    Spec(T.VARCHAR, b"\xa0\x00", string(1, 160, True), UTF8MB4),  # VARCHAR(40) utf8mb4
    Spec(T.VARCHAR, b"\x2c\x01", string(2, 300, True), UTF8MB4),
    Spec(T.VARCHAR, b"\x14\x00", string(1, 20, False), {"charset": 63}),  # VARBINARY(20)
    Spec(T.VARCHAR, b"\x14\x00", string(1, 20, False), {"charset": 8}),  # latin1: its converter
    Spec(T.STRING, bytes([0xFE, 8]), string(1, 8, False), {"charset": 63}),  # BINARY(8): padded by its converter
    Spec(T.STRING, bytes([0xFE, 12]), string(1, 12, True), UTF8MB4),
    *(Spec(T.BLOB, bytes([n]), string(n, 40, True), UTF8MB4) for n in (1, 2, 3, 4)),
    Spec(T.BLOB, b"\x02", string(2, 40, False)),  # no charset logged: bytes
    Spec(T.STRING, bytes([T.ENUM, 1]), fixed(1), {"enum_values": ("a", "b", "c")}),
    Spec(T.STRING, bytes([T.SET, 2]), fixed(2), {"set_values": tuple("abcdefghij")}),
    Spec(T.STRING, bytes([T.SET, 8]), fixed(8)),
    Spec(T.DATETIME, b"", old_datetime),  # no kind of its own: the Python reader
]


def by_readers(
    columns: tuple[Column, ...], present: list[bool], buf: bytes, pos: int, typed_: bool
) -> tuple[tuple[object, ...], int]:
    """One image the plain way: null bitmap over the present columns, then each value's reader and converter."""
    cols = [c for c, p in zip(columns, present, strict=True) if p]
    nbytes = (len(cols) + 7) // 8
    nulls = int.from_bytes(buf[pos : pos + nbytes], "little")
    pos += nbytes
    values: dict[int, object] = {}
    for bit, col in enumerate(cols):
        if nulls >> bit & 1:
            values[col.index] = None
            continue
        value, pos = reader_for(col)(buf, pos)
        conv = typed(col) if typed_ else None
        values[col.index] = conv(value) if conv is not None else value
    return tuple(values.get(c.index, ABSENT) for c in columns), pos


@st.composite
def cases(draw: st.DrawFn) -> tuple[RowDecoder, bytes, list[list[bool]], bool]:
    specs = draw(st.lists(st.sampled_from(PALETTE), min_size=1, max_size=14))
    columns = tuple(s.column(i) for i, s in enumerate(specs))
    kind = draw(st.sampled_from(["insert", "delete", "update"]))
    is_typed = draw(st.booleans())
    images = 2 if kind == "update" else 1
    present = [draw(st.lists(st.booleans(), min_size=len(specs), max_size=len(specs))) for _ in range(images)]
    r = random.Random(draw(st.integers(0, 2**32)))
    data = b""
    for _ in range(draw(st.integers(1, 4))):
        for here in present:
            ids = [i for i, p in enumerate(here) if p]
            nulls = [r.random() < 0.2 for _ in ids]
            data += sum(1 << k for k, n in enumerate(nulls) if n).to_bytes((len(ids) + 7) // 8, "little")
            data += b"".join(specs[i].gen(r) for i, n in zip(ids, nulls, strict=True) if not n)
    damage = draw(st.sampled_from(["none"] * 6 + ["cut", "extra"]))
    if damage == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "extra":
        data += draw(st.binary(min_size=1, max_size=3))
    bitmaps = [
        sum(1 << i for i, p in enumerate(here) if p).to_bytes((len(specs) + 7) // 8, "little") for here in present
    ]
    dec = row_decoder(columns, kind, bitmaps[0], bitmaps[1] if images == 2 else None, is_typed)
    return dec, data, present, is_typed


def plan_of(dec: RowDecoder) -> _speedups.Plan:
    """The compiled plan of ``dec``'s layout, built here whatever BINLAKE_PURE_PYTHON says."""

    mode = plan_mode(dec.kind, _speedups)
    return _speedups.Plan(mode, len(dec.columns), ABSENT, tuple(img.plan(dec.typed, _speedups) for img in dec._images))


@needs_speedups
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_compiled_python_and_readers_agree(case: tuple[RowDecoder, bytes, list[list[bool]], bool]) -> None:
    dec, data, present, is_typed = case
    try:
        want = dec.rows_python(data)
    except BinlogError as e:
        assert plan_of(dec).rows(data) is None, "the compiled decoder took bytes the Python one rejects"
        with pytest.raises(type(e)) as again:
            dec.rows(data)
        assert again.value.message == e.message and again.value.offset == e.offset
        return
    got = plan_of(dec).rows(data)
    assert got is not None, "the compiled decoder gave up on bytes the Python one takes"
    assert repr(got) == repr(want)  # repr: tells 1 from 1.0 and Decimal('1.0') from Decimal('1.00'), and NaN
    assert [tuple(map(type, i)) for change in got for i in change if i] == [
        tuple(map(type, i)) for change in want for i in change if i
    ]
    # and the Python decoder is the plain reading of each image by the value readers
    pos = 0
    plain: list[tuple[object, object]] = []
    while pos < len(data):
        first, pos = by_readers(dec.columns, present[0], data, pos, is_typed)
        if dec.kind == "update":
            second, pos = by_readers(dec.columns, present[1], data, pos, is_typed)
            plain.append((first, second))
        else:
            plain.append((None, first) if dec.kind == "insert" else (first, None))
    assert repr(plain) == repr(want)


@needs_speedups
def test_known_values_and_the_fallbacks() -> None:
    """Concrete values through the compiled decoder: a zero DATETIME2 (from the Python reader), a utf8 string
    that is not UTF-8 (kept as bytes by the converter), a negative DECIMAL, a negative TIME2 with a fraction."""
    specs = [
        Spec(T.DATETIME2, b"\x06", fixed(8)),
        Spec(T.VARCHAR, b"\xa0\x00", fixed(0), UTF8MB4),
        Spec(T.NEWDECIMAL, bytes([5, 2]), fixed(3)),
        Spec(T.TIME2, b"\x02", fixed(4)),
        int_spec(T.INT24, 3, False),
    ]
    columns = tuple(s.column(i) for i, s in enumerate(specs))
    row = b"\x00" + (0x8000000000 << 24).to_bytes(8, "big") + b"\x02\xff\xfe" + bytes.fromhex("7ffc9c")
    row += bytes.fromhex("7fffffff") + b"\xff\xff\xff"
    dec = row_decoder(columns, "insert", b"\x1f")
    want = [
        (
            None,
            (
                InvalidDatetime(0, 0, 0, 0, 0, 0, 0),
                b"\xff\xfe",
                Decimal("-3.99"),
                -dt.timedelta(microseconds=10_000),
                -1,
            ),
        )
    ]
    assert plan_of(dec).rows(row) == want
    assert dec.rows_python(row) == want


def test_the_compiled_decoder_is_used_when_built() -> None:
    """Unless BINLAKE_PURE_PYTHON is set, an installed extension decodes the rows (tests/test_compiled.py fails CI
    where it was not built)."""
    columns = (Column.build(0, T.LONG, b""),)
    dec = row_decoder(columns, "insert", b"\x01")
    if os.environ.get("BINLAKE_PURE_PYTHON"):
        assert not rowdecoder.ACCELERATED and not dec.accelerated
        return
    assert rowdecoder.ACCELERATED == BUILT and dec.accelerated == BUILT
    assert dec.rows(b"\x00\x07\x00\x00\x00") == [(None, (7,))]
