"""The row printer of ``binlake dump`` (``render.dump.rowtext.RowsText``): its generated code against ``RENDER``.

The generated printer writes the common types (integers, DECIMAL, FLOAT/DOUBLE, strings, DATETIME) in line for
speed; this test prints random row changes three ways (the generated code, the printer's plain path, and this
module's own loop over ``RENDER`` as ``print_verbose_one_row`` does it) and wants the same text, for NULLs in NOT
NULL columns, negative and unsigned integers, strings with control bytes and invalid UTF-8, invalid dates, every
fsp, absent (MINIMAL) columns and updates that keep or change each column.  The corpus dumps (compared with
``mariadb-binlog`` in tests/corpus/test_corpus_dump.py) must not change when every layout is compiled at once.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.render.dump import DumpOptions, dump
from binlake.render.dump import rowtext as text_module
from binlake.render.dump.rowtext import RENDER, RowsText
from binlake.render.dump.tablemap import value_type_name
from binlake.render.flashback import Change
from binlake.values.row import ABSENT
from binlake.values.temporal import InvalidDatetime

T = ColumnType

# (type code, metadata bytes, values of that column as the raw decode returns them)
_INT_RANGES = {T.TINY: 8, T.SHORT: 16, T.INT24: 24, T.LONG: 32, T.LONGLONG: 64}


def _ints(bits: int) -> st.SearchStrategy[object]:
    return st.one_of(
        st.integers(-(1 << (bits - 1)), (1 << bits) - 1),
        st.sampled_from([0, -1, (1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << bits) - 1, -(1 << (bits - 1))]),
    )


def _decimals(scale: int) -> st.SearchStrategy[object]:
    return st.builds(
        lambda n, neg: Decimal(f"{'-' if neg else ''}{n}E-{scale}" if scale else f"{'-' if neg else ''}{n}"),
        st.integers(0, 10**12),
        st.booleans(),
    )


def _datetimes(fsp: int) -> st.SearchStrategy[object]:
    unit = 10 ** (6 - fsp)
    return st.one_of(
        st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)).map(
            lambda d: d.replace(microsecond=d.microsecond // unit * unit)
        ),
        st.datetimes().map(lambda d: d.replace(microsecond=0)),
        st.just(InvalidDatetime(2020, 0, 15, 10, 11, 12, 123456 // unit * unit, fsp=fsp)),
        st.just(InvalidDatetime(0, 0, 0, 0, 0, 0, 0, fsp=fsp)),
    )


_strings = st.one_of(st.binary(max_size=12), st.text(max_size=8).map(lambda s: s.encode("utf-8")))
COLUMNS: list[tuple[int, bytes, st.SearchStrategy[object]]] = [
    *((code, b"", _ints(bits)) for code, bits in _INT_RANGES.items()),
    (T.NEWDECIMAL, bytes([14, 4]), _decimals(4)),
    (T.NEWDECIMAL, bytes([30, 10]), _decimals(10)),  # scale above 6: format(d, "f"), not str(d)
    (T.NEWDECIMAL, bytes([10, 0]), _decimals(0)),
    (T.FLOAT, b"\x04", st.floats(width=32)),
    (T.DOUBLE, b"\x08", st.floats()),
    (T.VARCHAR, b"\xa0\x00", _strings),
    (T.BLOB, b"\x02", _strings),
    (T.STRING, bytes([0xFE, 10]), _strings),
    *((T.DATETIME2, bytes([fsp]), _datetimes(fsp)) for fsp in range(7)),
    (T.DATETIME, b"", _datetimes(0)),
    (T.TIMESTAMP2, b"\x03", st.just(dt.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=dt.UTC))),  # via RENDER
    (T.YEAR, b"", st.integers(0, 255)),
]


def _reference(columns: Sequence[Column], kind: str, changes: Sequence[Change], head: str) -> str:
    """``print_verbose``: the statement line, the clauses and one line per present column, straight from RENDER."""

    def image(values: tuple[object, ...] | None) -> str:
        assert values is not None
        lines = []
        for col, v in zip(columns, values, strict=True):
            comment = f"{value_type_name(col)} meta={col.meta} nullable={int(col.nullable)}"
            if v is None:
                lines.append(f"###   @{col.index + 1}=NULL /* {comment} is_null=1 */\n")
            elif v is not ABSENT:
                lines.append(f"###   @{col.index + 1}={RENDER[col.real_type_code](col, v)} /* {comment} is_null=0 */\n")
        return "".join(lines)

    out = []
    for before, after in changes:
        if kind == "insert":
            out.append(f"{head}### SET\n{image(after)}")
        elif kind == "delete":
            out.append(f"{head}### WHERE\n{image(before)}")
        else:
            assert after is not None
            set_ = "### SET /* no columns */\n" if all(v is ABSENT for v in after) else f"### SET\n{image(after)}"
            out.append(f"{head}### WHERE\n{image(before)}{set_}")
    return "".join(out)


@st.composite
def _layouts(
    draw: st.DrawFn,
) -> tuple[tuple[Column, ...], str, tuple[tuple[bool, ...], ...], list[Change]]:
    specs = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=6))
    columns = tuple(
        Column.build(i, code, meta, nullable=draw(st.booleans())) for i, (code, meta, _) in enumerate(specs)
    )
    kind = draw(st.sampled_from(["insert", "delete", "update"]))
    nimages = 2 if kind == "update" else 1
    present = tuple(
        tuple(draw(st.lists(st.booleans(), min_size=len(specs), max_size=len(specs)))) for _ in range(nimages)
    )
    present = (tuple(p or i == 0 for i, p in enumerate(present[0])), *present[1:])  # a first image holds a column

    def image(bits: tuple[bool, ...]) -> tuple[object, ...]:
        return tuple(
            (draw(st.one_of(st.none(), values) if draw(st.integers(0, 5)) == 0 else values) if here else ABSENT)
            for (_, _, values), here in zip(specs, bits, strict=True)
        )

    changes: list[Change] = []
    for _ in range(draw(st.integers(1, 4))):
        first = image(present[0])
        if kind == "update":
            # an unchanged column keeps the before image's value (the printer reuses its text)
            second = tuple(
                b if draw(st.booleans()) and here and b is not ABSENT else v
                for b, v, here in zip(first, image(present[1]), present[1], strict=True)
            )
            changes.append((first, second))
        else:
            changes.append((None, first) if kind == "insert" else (first, None))
    return columns, kind, present, changes


@settings(max_examples=400, deadline=None)
@given(_layouts())
def test_generated_text_is_the_render_tables_text(
    layout: tuple[tuple[Column, ...], str, tuple[tuple[bool, ...], ...], list[Change]],
) -> None:
    columns, kind, present, changes = layout
    head = '### UPDATE `d{`.`t"`\n'
    printer = RowsText(columns, kind, present)
    compiled: list[str] = []
    plain: list[str] = []
    printer.compiled()(changes, compiled.append, head)
    printer.plain(changes, plain.append, head)
    assert compiled == plain
    assert "".join(compiled) == _reference(columns, kind, changes, head)


def test_null_in_a_not_null_column_and_the_common_values() -> None:
    cols = (
        Column.build(0, T.LONG, b"", nullable=False),
        Column.build(1, T.VARCHAR, b"\x28\x00", nullable=False),
        Column.build(2, T.DATETIME2, b"\x03", nullable=True),
        Column.build(3, T.NEWDECIMAL, bytes([5, 2]), nullable=False),
    )
    when = dt.datetime(2024, 2, 29, 12, 34, 56, 789000)
    changes = [
        ((-1, b"a\x00'\xe9", when, Decimal("-3.99")), (7, b"ok", None, Decimal("0.00"))),
        ((None, b"x", when.replace(microsecond=0), None), (4294967295, b"x", when, Decimal("1.50"))),
    ]
    out: list[str] = []
    RowsText(cols, "update", ((True,) * 4, (True,) * 4)).compiled()(changes, out.append, "### UPDATE t\n")
    text = "".join(out)
    assert text == _reference(cols, "update", changes, "### UPDATE t\n")
    assert "###   @1=-1 (4294967295) /* INT meta=0 nullable=0 is_null=0 */\n" in text
    assert "###   @2='a\\x00'\udce9' /* VARSTRING(40) meta=40 nullable=0 is_null=0 */\n" in text
    assert "###   @3='2024-02-29 12:34:56.789' /* DATETIME(3) meta=3 nullable=1 is_null=0 */\n" in text
    assert "###   @3='2024-02-29 12:34:56.000' /* DATETIME(3) meta=3 nullable=1 is_null=0 */\n" in text
    assert "###   @3=NULL /* DATETIME(3) meta=3 nullable=1 is_null=1 */\n" in text
    assert "###   @1=NULL /* INT meta=0 nullable=0 is_null=1 */\n" in text  # the NULL-tolerant code ran
    assert "###   @4=-3.99 /* DECIMAL(5,2) meta=1282 nullable=0 is_null=0 */\n" in text


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["corpus-bin.000002", "corpus-bin.000008", "corpus-bin.000012"])
def test_corpus_dump_is_the_same_with_every_layout_compiled(
    corpus_dir: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """corpus-bin.000002 (every column type), 000008 (MINIMAL/NOBLOB images), 000012: small files print mostly
    through the plain path; compiled from the first row on, forward and as the undo, the text is the same."""
    path = str(corpus_dir / "mariadb" / "binlogs" / name)
    texts = []
    for compile_after in (1 << 30, 0):
        monkeypatch.setattr(text_module, "_COMPILE_AFTER", compile_after)
        for flashback in (False, True):
            out = io.BytesIO()
            assert dump([path], DumpOptions(flashback=flashback, table_metadata=not flashback), out) == 0
            texts.append(out.getvalue())
    assert texts[:2] == texts[2:]
    assert texts[0].count(b"\n###   @") > 100


# -- the compiled printer (binlake._speedups.TextPlan) against the Python path, on random row images -------------

# (type code, metadata bytes, strategy of one stored value's bytes): random bytes (valid or not: out-of-range date
# fields, digit groups, fractions, bits past a BIT's width, NaN) and, where random bytes are rarely valid, values
# encoded here (DECIMAL digit groups, strings with their length prefix)
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def _fixed(size: int) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=size, max_size=size)


@st.composite
def _decimal_bytes(draw: st.DrawFn, precision: int, scale: int) -> bytes:
    """decimal2bin of random digits: the groups big-endian, all bytes inverted when negative, then the sign bit."""
    intg = precision - scale
    groups = [(_DIG2BYTES[intg % 9], intg % 9)] if intg % 9 else []
    groups += [(4, 9)] * (intg // 9 + scale // 9)
    groups += [(_DIG2BYTES[scale % 9], scale % 9)] if scale % 9 else []
    raw = bytearray(b"".join(draw(st.integers(0, 10**n - 1)).to_bytes(size, "big") for size, n in groups))
    if draw(st.booleans()):
        raw = bytearray(b ^ 0xFF for b in raw)
    raw[0] ^= 0x80
    return bytes(raw)


def _string_bytes(nlen: int, max_size: int) -> st.SearchStrategy[bytes]:
    alphabet = st.sampled_from([b"a", b"'", b"\\", b"\x00", b"\n", b"\x1f", b"\x7f", b"\xc3\xa9", b"\xe9", b"\xff"])
    payload = st.lists(alphabet, max_size=max_size).map(b"".join)
    return payload.map(lambda p: len(p).to_bytes(nlen, "little") + p).filter(lambda b: len(b) - nlen < 1 << 8 * nlen)


def _text_column() -> st.SearchStrategy[tuple[int, bytes, st.SearchStrategy[bytes]]]:
    fsp = st.integers(0, 6)
    decimal = st.integers(1, 40).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, min(p, 30))))
    bit = st.integers(1, 64)
    return st.one_of(
        st.sampled_from([(code, b"", _fixed(bits // 8)) for code, bits in _INT_RANGES.items()]),
        st.just((T.FLOAT, b"\x04", _fixed(4))),
        st.just((T.DOUBLE, b"\x08", _fixed(8))),
        st.just((T.YEAR, b"", _fixed(1))),
        st.just((T.DATE, b"", _fixed(3))),
        bit.map(lambda n: (T.BIT, bytes([n % 8, n // 8]), _fixed((n + 7) // 8))),
        fsp.map(lambda f: (T.DATETIME2, bytes([f]), _fixed(5 + (f + 1) // 2))),
        fsp.map(lambda f: (T.TIMESTAMP2, bytes([f]), _fixed(4 + (f + 1) // 2))),
        fsp.map(lambda f: (T.TIME2, bytes([f]), _fixed(3 + (f + 1) // 2))),
        decimal.map(lambda ps: (T.NEWDECIMAL, bytes(ps), st.one_of(_decimal_bytes(*ps), _fixed(_dec_size(*ps))))),
        st.just((T.VARCHAR, (40).to_bytes(2, "little"), _string_bytes(1, 12))),
        st.just((T.VARCHAR, (300).to_bytes(2, "little"), _string_bytes(2, 12))),
        st.sampled_from([(T.BLOB, bytes([n]), _string_bytes(n, 12)) for n in (1, 2, 3, 4)]),
        st.just((T.STRING, bytes([0xFE, 20]), _string_bytes(1, 12))),
        st.sampled_from([(T.STRING, bytes([0xF7, n]), _fixed(n)) for n in (1, 2)]),
        st.sampled_from([(T.STRING, bytes([0xF8, n]), _fixed(n)) for n in (1, 2, 3, 4, 8)]),
    )


def _dec_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return intg // 9 * 4 + _DIG2BYTES[intg % 9] + scale // 9 * 4 + _DIG2BYTES[scale % 9]


@st.composite
def _event(draw: st.DrawFn) -> tuple[tuple[Column, ...], str, tuple[bytes, ...], bytes, list[bool]]:
    """Columns, kind, the columns-present bitmaps, rows data of 1-3 row changes, and which values are random bytes."""
    specs = draw(st.lists(_text_column(), min_size=1, max_size=6))
    columns = tuple(
        Column.build(i, code, meta, nullable=draw(st.booleans())).with_(unsigned=draw(st.booleans()))
        for i, (code, meta, _) in enumerate(specs)
    )
    kind = draw(st.sampled_from(["insert", "delete", "update"]))
    n = len(columns)
    present = []
    for _ in range(2 if kind == "update" else 1):
        bits = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
        present.append(bits)
    data = bytearray()
    for _ in range(draw(st.integers(1, 3))):
        for bits in present:
            here = [i for i in range(n) if bits[i]]
            nulls = [
                draw(st.booleans()) if columns[i].nullable or draw(st.integers(0, 9)) == 0 else False for i in here
            ]
            data += sum(1 << k for k, null in enumerate(nulls) if null).to_bytes((len(here) + 7) // 8, "little")
            for i, null in zip(here, nulls, strict=True):
                if not null:
                    data += draw(specs[i][2])
    if draw(st.integers(0, 19)) == 0:  # a damaged tail: the Python path raises, the compiled one must give up
        data = data[: draw(st.integers(0, len(data) - 1))] if draw(st.booleans()) else data + b"\x01"
    bitmaps = tuple(sum(1 << i for i, b in enumerate(bits) if b).to_bytes((n + 7) // 8, "little") for bits in present)
    return columns, kind, bitmaps, bytes(data), [c.real_type_code in (T.FLOAT, T.DOUBLE) for c in columns]


@pytest.mark.skipif(text_module.TextPlan is None, reason="binlake._speedups is not built (or BINLAKE_PURE_PYTHON)")
@settings(max_examples=400, deadline=None)
@given(_event())
def test_compiled_text_equals_the_python_text(
    drawn: tuple[tuple[Column, ...], str, tuple[bytes, ...], bytes, list[bool]],
) -> None:
    """Whatever the compiled printer prints is the Python path's text to the byte; where the Python decoder raises
    it gives up (``None``), and where the Python path prints it gives up only for a float (NaN and infinities) or
    empty rows data."""
    from binlake.errors import BinlogError
    from binlake.rowdecoder import row_decoder
    from binlake.wire import bits_lsb_first

    columns, kind, bitmaps, data, floats = drawn
    plan = text_module.text_plan(columns, kind, bitmaps)
    assert plan is not None
    head = "### UPDATE `d`.`t`\n"
    got = plan.text(data, head.encode())
    decoder = row_decoder(columns, kind, bitmaps[0], bitmaps[1] if kind == "update" else None, typed=False)
    try:
        changes = decoder.rows_python(data)
    except BinlogError:
        event("the Python decoder raises")
        assert got is None
        return
    presence = tuple(tuple(bits_lsb_first(b, len(columns))) for b in bitmaps)
    out: list[str] = []
    RowsText(columns, kind, presence).plain(changes, out.append, head)
    event("compared" if got is not None else "the compiled printer gave up")
    if got is None:
        assert any(floats) or not data  # no rows data: the printer's VALUES () line, not the C printer's business
    else:
        assert got == ("".join(out), len(changes))
