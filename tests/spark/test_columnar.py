"""The compiled columnar builder (``binlake.ingest.columnar`` over ``_columnar.c``) against the tuple path of
``binlake ingest``: row images decoded to tuples, transposed, converted by ``to_lake`` a column at a time.

* Real binlogs: every rows event of the MariaDB corpus and of the test workloads whose layout the builder takes
  gives the same Arrow arrays as the tuple path, appended event after event into one table per lake table (as
  ingest does), with the lake's own column types and with reordered, dropped and extra (NULL) targets.
* Values encoded here (``Field_*::pack`` of ``sql/field.cc``, ``decimal2bin`` of ``strings/decimal.cc``,
  ``my_*_packed_to_binary`` of ``mysys/my_time.c``) into random layouts and row images: the builder gives the
  values encoded, and what the tuple path gives.
* Bytes cut short, lengthened or with random stored values: either both paths fail (the builder returns ``None``
  and its table keeps exactly what was appended before) or both give the same arrays.

No SparkSession needed: only pyarrow.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from binlake.coltypes import Column  # noqa: E402
from binlake.coltypes import ColumnType as T  # noqa: E402
from binlake.errors import BinlogError  # noqa: E402
from binlake.events.rows import RowsEvent  # noqa: E402
from binlake.ingest import columnar  # noqa: E402
from binlake.ingest.arrow import lake_type, to_lake, transpose  # noqa: E402
from binlake.reader import read_events  # noqa: E402
from binlake.rowdecoder import row_decoder  # noqa: E402
from binlake.testing.mariadb import WorkloadBinlogs  # noqa: E402

pytestmark = pytest.mark.skipif(
    not columnar.AVAILABLE, reason="binlake._columnar not built (no C compiler) or BINLAKE_PURE_PYTHON set"
)

UTC = dt.UTC
ENCRYPTED = {"corpus-bin.000022"}  # read through its decrypted copy by the corpus tests; its events need a key

Change = tuple[tuple[object, ...] | None, tuple[object, ...] | None]


# -- the tuple path and comparisons -------------------------------------------------------------------------------


def images_of(kind: str, changes: Iterable[Change]) -> list[tuple[object, ...]]:
    """One output row per image, as ingest's ``_TableWriter._columns`` takes them."""
    out: list[tuple[object, ...]] = []
    for before, after in changes:
        out.extend([before, after] if kind == "update" else [after if kind == "insert" else before])  # type: ignore[list-item]
    return out


def tuple_arrays(
    images: list[tuple[object, ...]], width: int, index: Sequence[int | None], targets: Sequence[Any]
) -> list[Any]:
    cols = transpose(images, width)
    return [
        to_lake(cols[j], t) if j is not None else pa.nulls(len(images), t) for j, t in zip(index, targets, strict=True)
    ]


def plain(array: Any) -> list[object]:
    """``to_pylist`` with NaN made comparable."""
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in array.to_pylist()]


def assert_same(got: Sequence[Any], want: Sequence[Any], what: str) -> None:
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g.validate(full=True)
        assert g.type == w.type, f"{what}: target {k}"
        assert plain(g) == plain(w), f"{what}: target {k} ({g.type})"


# -- real binlogs ---------------------------------------------------------------------------------------------------


@dataclass
class Lake:
    """One lake table's columnar table and the tuple path's arrays of every event appended to it."""

    table: columnar.ColumnTable
    want: list[list[Any]]
    index: list[int | None]
    targets: list[Any]


def variants(columns: tuple[Column, ...]) -> list[tuple[list[int | None], list[Any]]]:
    """Targets as ingest makes them (``lake_type`` of every column, in order), and reordered: reversed, every third
    column left out (read and dropped), plus a target no column feeds (all NULL)."""
    n = len(columns)
    mixed: list[int | None] = [j for j in reversed(range(n)) if j % 3 != 1] + [None]
    return [
        (list(range(n)), [lake_type(c) for c in columns]),
        (mixed, [lake_type(columns[j]) if j is not None else pa.int64() for j in mixed]),
    ]


def differential(paths: Iterable[Path], stats: Counter[str]) -> None:
    """Every rows event of ``paths`` through both paths; counts in ``stats``."""
    for path in paths:
        try:
            events = list(read_events(path))
        except BinlogError:
            assert path.name in ENCRYPTED, path
            continue
        lakes: dict[tuple[object, ...], Lake] = {}
        for ev in events:
            tm = ev.table_map if isinstance(ev, RowsEvent) else None
            if not isinstance(ev, RowsEvent) or tm is None or ev.partial:
                continue
            stats["events"] += 1
            for v, (index, targets) in enumerate(variants(tm.columns)):
                plan = columnar.plan_for(tm.columns, ev.kind, ev.columns_before, ev.columns_after, index, targets)
                if plan is None:
                    stats[f"rejected {v}"] += 1
                    continue
                key = (v, tm.schema, tm.table, *map(str, targets))
                lake = lakes.get(key)
                if lake is None:
                    table = columnar.table_for(targets)
                    assert table is not None
                    lake = lakes[key] = Lake(table, [], index, targets)
                n = lake.table.append(plan, ev.rows_data)
                want = tuple_arrays(images_of(ev.kind, ev.rows(True)), ev.column_count, index, targets)
                assert n is not None, f"{path.name} at {ev.header.pos}: the C builder refused a good event"
                assert n == len(want[0])
                lake.want.append(want)
                stats[f"accepted {v}"] += 1
                stats[f"rows {v}"] += n
                if v == 0:
                    stats.update(f"type {c.real_type}" for c in tm.columns)
        for key, lake in lakes.items():
            concat = [pa.concat_arrays([w[k] for w in lake.want]) for k in range(len(lake.targets))]
            assert_same(lake.table.finish(), concat, f"{path.name} {key[1]}.{key[2]}")
            assert len(lake.table) == 0


@pytest.mark.corpus
def test_corpus_binlogs(corpus_dir: Path) -> None:
    """The MariaDB corpus: ~240 of ~300 rows events are taken (the rest have latin1 text, TIME, GEOMETRY,
    DECIMAL(65), compressed columns or ENUM/SET names), ~12,800 rows, every type the builder reads."""
    stats: Counter[str] = Counter()
    differential(sorted((corpus_dir / "mariadb" / "binlogs").glob("corpus-bin.*")), stats)
    assert stats["accepted 0"] >= 200 and stats["rows 0"] >= 10_000, stats
    assert stats["accepted 1"] == stats["accepted 0"], "dropping and reordering targets changed what is taken"
    read = {k.removeprefix("type ") for k in stats if k.startswith("type ")}
    assert read >= {"LONG", "LONGLONG", "NEWDECIMAL", "DATETIME2", "TIMESTAMP2", "DATE", "VARCHAR", "BLOB"}, read


def test_workload_binlogs(workload_binlogs: WorkloadBinlogs) -> None:
    """The test workloads' binlogs (a live MariaDB: every column type, DML and row-image variants)."""
    stats: Counter[str] = Counter()
    differential(workload_binlogs.files, stats)
    assert stats["accepted 0"] >= 100 and stats["rows 0"] >= 1_000, stats
    assert stats["accepted 1"] == stats["accepted 0"]


# -- encoders of stored values ---------------------------------------------------------------------------------------

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
FRAC_UNIT = (1, 10_000, 100, 1)  # microseconds per stored fraction unit, by fraction bytes
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def le(value: int, size: int) -> bytes:
    return (value % (1 << (8 * size))).to_bytes(size, "little")


def decimal2bin(unscaled: int, precision: int, scale: int) -> bytes:
    """``decimal2bin``: leading digits, 9-digit groups of the integer part and of the fraction, trailing digits,
    big-endian; a negative value has every byte inverted; then the sign bit flipped."""
    digits = str(abs(unscaled)).zfill(precision)
    intg = precision - scale
    widths = [intg % 9] + [9] * (intg // 9) + [9] * (scale // 9) + [scale % 9]
    raw, at = b"", 0
    for w in widths:
        if w:
            raw += int(digits[at : at + w]).to_bytes(DIG2BYTES[w], "big")
            at += w
    if unscaled < 0:
        raw = bytes(b ^ 0xFF for b in raw)
    return bytes([raw[0] ^ 0x80]) + raw[1:]


def datetime2(y: int, mo: int, d: int, h: int, mi: int, s: int, frac: int, fsp: int) -> bytes:
    """``my_datetime_packed_to_binary``: 5 bytes of ``ymd << 17 | hms`` offset by 0x8000000000, the fraction."""
    fb = (fsp + 1) // 2
    packed = (((y * 13 + mo) << 5 | d) << 17 | h << 12 | mi << 6 | s) + 0x8000000000
    return packed.to_bytes(5, "big") + frac.to_bytes(fb, "big")


def valid_date(y: int, mo: int, d: int) -> dt.date | None:
    try:
        return dt.date(y, mo, d)
    except ValueError:  # zero or partial dates, Feb 30, the year 0: InvalidDate, NULL in the lake
        return None


Value = tuple[bytes, object]  # stored bytes, the lake value


@dataclass(frozen=True)
class Spec:
    """A column kind: its table-map column, its stored values with their lake values, and random stored bytes."""

    name: str
    column: Callable[[int], Column]
    values: st.SearchStrategy[Value]
    size: int | None = None  # fixed stored size (for random bytes), None for length-prefixed strings


def col(code: int, meta: bytes, **attrs: object) -> Callable[[int], Column]:
    return lambda i: Column.build(i, code, meta).with_(**attrs) if attrs else Column.build(i, code, meta)


def int_spec(code: int, size: int, unsigned: bool | None) -> Spec:
    signed = unsigned is not True  # a column of unlogged signedness reads as signed
    lo, hi = (-(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1) if signed else (0, (1 << (8 * size)) - 1)
    edges = st.sampled_from([lo, hi, 0, -1 if signed else 1])
    values = st.one_of(edges, st.integers(lo, hi)).map(lambda v: (le(v, size), v))
    return Spec(
        f"int{size}{'u' if unsigned else 's' if unsigned is False else '?'}",
        col(code, b"", unsigned=unsigned),
        values,
        size,
    )


def bit_spec(bits: int) -> Spec:
    size = (bits + 7) // 8
    values = st.integers(0, (1 << bits) - 1).map(lambda v: (v.to_bytes(size, "big"), v))
    return Spec(f"bit{bits}", col(T.BIT, bytes([bits % 8, bits // 8])), values, size)


def _date(v: tuple[int, int, int]) -> Value:
    y, mo, d = v
    return le(d | mo << 5 | y << 9, 3), valid_date(y, mo, d)


def datetime2_spec(fsp: int) -> Spec:
    fb = (fsp + 1) // 2
    bound = 1_000_000 // FRAC_UNIT[fb] if fb else 1

    def value(v: tuple[int, int, int, int, int, int, int]) -> Value:
        y, mo, d, h, mi, s, frac = v
        day = valid_date(y, mo, d)
        want = None if day is None else dt.datetime(y, mo, d, h, mi, s, frac * FRAC_UNIT[fb])
        return datetime2(y, mo, d, h, mi, s, frac, fsp), want

    parts = st.tuples(
        st.integers(0, 9999),
        st.integers(0, 12),
        st.integers(0, 31),
        st.integers(0, 23),
        st.integers(0, 59),
        st.integers(0, 59),
        st.integers(0, bound - 1),
    )
    zero = st.just((0, 0, 0, 0, 0, 0, 0))
    return Spec(f"datetime2({fsp})", col(T.DATETIME2, bytes([fsp])), st.one_of(zero, parts).map(value), 5 + fb)


def timestamp2_spec(fsp: int) -> Spec:
    fb = (fsp + 1) // 2
    bound = 1_000_000 // FRAC_UNIT[fb] if fb else 1

    def value(v: tuple[int, int]) -> Value:
        secs, frac = v
        us = frac * FRAC_UNIT[fb]
        want = None if not secs and not us else EPOCH + dt.timedelta(seconds=secs, microseconds=us)
        return secs.to_bytes(4, "big") + frac.to_bytes(fb, "big"), want  # the zero TIMESTAMP: NULL

    parts = st.tuples(st.one_of(st.just(0), st.integers(0, 2**32 - 1)), st.integers(0, bound - 1))
    return Spec(f"timestamp2({fsp})", col(T.TIMESTAMP2, bytes([fsp])), parts.map(value), 4 + fb)


def decimal_spec(precision: int, scale: int) -> Spec:
    top = 10**precision - 1
    unscaled = st.one_of(st.sampled_from([0, top, -top, 1, -1]), st.integers(-top, top))
    values = unscaled.map(lambda v: (decimal2bin(v, precision, scale), Decimal(f"{v}E-{scale}")))
    size = len(decimal2bin(0, precision, scale))
    return Spec(f"decimal({precision},{scale})", col(T.NEWDECIMAL, bytes([precision, scale])), values, size)


def prefixed(nlen: int, data: bytes) -> bytes:
    return len(data).to_bytes(nlen, "little") + data


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
UTF8MB4, UTF8MB3 = 45, 33


def text_spec(name: str, column: Callable[[int], Column], nlen: int) -> Spec:
    return Spec(name, column, TEXT.map(lambda s: (prefixed(nlen, s.encode()), s)))


def bytes_spec(name: str, column: Callable[[int], Column], nlen: int, pad: int = 0) -> Spec:
    return Spec(name, column, st.binary(max_size=pad or 40).map(lambda b: (prefixed(nlen, b), b.ljust(pad, b"\0"))))


def uint_spec(name: str, column: Callable[[int], Column], size: int) -> Spec:
    """ENUM index / SET mask without member names: ``size`` bytes little-endian, the lake value the integer."""
    return Spec(name, column, st.integers(0, (1 << (8 * size)) - 1).map(lambda v: (le(v, size), v)), size)


SPECS = [
    *(
        int_spec(code, size, u)
        for code, size in ((T.TINY, 1), (T.SHORT, 2), (T.INT24, 3), (T.LONG, 4), (T.LONGLONG, 8))
        for u in (False, True)
    ),
    int_spec(T.LONGLONG, 8, None),  # unknown signedness: decimal128(20, 0) of the signed reading
    int_spec(T.INT24, 3, None),
    Spec("year", col(T.YEAR, b""), st.integers(0, 255).map(lambda b: (bytes([b]), 1900 + b if b else 0)), 1),
    *(bit_spec(bits) for bits in (1, 7, 8, 13, 63, 64)),
    Spec("float", col(T.FLOAT, b"\x04"), st.floats(width=32).map(lambda f: (struct.pack("<f", f), f)), 4),
    Spec("double", col(T.DOUBLE, b"\x08"), st.floats().map(lambda f: (struct.pack("<d", f), f)), 8),
    Spec(
        "date", col(T.DATE, b""), st.tuples(st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31)).map(_date), 3
    ),
    *(datetime2_spec(fsp) for fsp in range(7)),
    *(timestamp2_spec(fsp) for fsp in (0, 1, 3, 6)),
    *(
        decimal_spec(p, s)
        for p, s in ((14, 4), (1, 0), (5, 0), (9, 9), (10, 1), (18, 9), (20, 0), (27, 8), (38, 0), (38, 38), (38, 10))
    ),
    text_spec("varchar(40) utf8mb4", col(T.VARCHAR, b"\xa0\x00", charset=UTF8MB4), 1),
    text_spec("varchar(300) utf8mb3", col(T.VARCHAR, b"\x84\x03", charset=UTF8MB3), 2),
    text_spec("char(10) utf8mb4", col(T.STRING, bytes([0xFE, 40]), charset=UTF8MB4), 1),
    *(text_spec(f"text{n} utf8mb4", col(T.BLOB, bytes([n]), charset=UTF8MB4), n) for n in (1, 2, 3, 4)),
    bytes_spec("varbinary(40)", col(T.VARCHAR, b"\x28\x00", charset=63), 1),
    bytes_spec("blob", col(T.BLOB, b"\x02", charset=63), 2),
    bytes_spec("blob, charset unknown", col(T.BLOB, b"\x03"), 3),
    bytes_spec("binary(6)", col(T.STRING, bytes([0xFE, 6]), charset=63), 1, pad=6),
    uint_spec("enum", col(T.STRING, bytes([T.ENUM, 1])), 1),
    uint_spec("enum2", col(T.STRING, bytes([T.ENUM, 2])), 2),
    *(uint_spec(f"set{n}", col(T.STRING, bytes([T.SET, n])), n) for n in (1, 3, 8)),
]


# -- random layouts and rows ----------------------------------------------------------------------------------------


@dataclass
class Case:
    columns: tuple[Column, ...]
    kind: str
    bitmaps: list[bytes]  # columns-present bitmap of each image slot
    rows_data: bytes
    images: list[tuple[object, ...]]  # the lake values of every output row, None for NULL and absent columns

    @property
    def targets(self) -> list[Any]:
        return [lake_type(c) for c in self.columns]

    def plan(self) -> Any:
        after = self.bitmaps[1] if self.kind == "update" else None
        n = len(self.columns)
        return columnar.plan_for(self.columns, self.kind, self.bitmaps[0], after, list(range(n)), self.targets)

    def tuple_path(self, rows_data: bytes) -> list[Any]:
        after = self.bitmaps[1] if self.kind == "update" else None
        changes = row_decoder(self.columns, self.kind, self.bitmaps[0], after).rows(rows_data) if rows_data else []
        n = len(self.columns)
        return tuple_arrays(images_of(self.kind, changes), n, list(range(n)), self.targets)


def bitmap(bits: Sequence[bool]) -> bytes:
    return sum(1 << i for i, b in enumerate(bits) if b).to_bytes((len(bits) + 7) // 8, "little")


@st.composite
def cases(draw: st.DrawFn, raw: bool = False) -> Case:
    """A layout of 1..20 columns, a change kind, present columns per image slot, 0..6 rows of values; with ``raw``
    fixed-size values are random bytes a quarter of the time (out-of-range fields, digit groups, bits)."""
    specs = draw(st.lists(st.sampled_from(SPECS), min_size=1, max_size=20))
    columns = tuple(s.column(i) for i, s in enumerate(specs))
    kind = draw(st.sampled_from(["insert", "delete", "update"]))
    slots = 2 if kind == "update" else 1
    presents = []
    for _ in range(slots):
        present = draw(st.lists(st.booleans(), min_size=len(specs), max_size=len(specs)))
        if not any(present):
            present[draw(st.integers(0, len(specs) - 1))] = True
        presents.append(present)
    data = b""
    images: list[tuple[object, ...]] = []
    for _ in range(draw(st.integers(0, 6))):
        for present in presents:
            here = [i for i, p in enumerate(present) if p]
            nulls = draw(st.lists(st.booleans(), min_size=len(here), max_size=len(here)))
            image: list[object] = [None] * len(specs)
            body = b""
            for i, null in zip(here, nulls, strict=True):
                if null:
                    continue
                spec = specs[i]
                if raw and spec.size is not None and draw(st.integers(0, 3)) == 0:
                    body += draw(st.binary(min_size=spec.size, max_size=spec.size))
                    image[i] = "?"
                    continue
                stored, image[i] = draw(spec.values)
                body += stored
            data += bitmap(nulls) + body
            images.append(tuple(image))
    return Case(columns, kind, [bitmap(p) for p in presents], data, images)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_values_encoded_here(case: Case) -> None:
    """Encoded values come back as encoded, and as the tuple path gives them."""
    plan = case.plan()
    assert plan is not None, [c.real_type for c in case.columns]
    table = columnar.table_for(case.targets)
    assert table is not None
    assert table.append(plan, case.rows_data) == len(case.images)
    got = table.finish()
    cols = transpose(case.images, len(case.columns)) if case.images else [[] for _ in case.columns]
    assert_same(got, [pa.array(c, t) for c, t in zip(cols, case.targets, strict=True)], "encoded values")
    assert_same(got, case.tuple_path(case.rows_data), "tuple path")


@st.composite
def damaged(draw: st.DrawFn) -> tuple[Case, Case, bytes]:
    """A good event, then another of the same layout with random stored values, cut short or lengthened."""
    case = draw(cases(raw=True))
    first = draw(cases())
    data = case.rows_data
    how = draw(st.sampled_from(["keep", "cut", "grow", "flip"]))
    if how == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif how == "grow":
        data += draw(st.binary(min_size=1, max_size=8))
    elif how == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    return first, case, data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged())
def test_damaged_bytes(damage: tuple[Case, Case, bytes]) -> None:
    """Either both paths fail, the builder's table then keeping exactly the rows appended before; or both give the
    same arrays.  The builder also refuses text that is not UTF-8, which the tuple path escapes."""
    first, case, data = damage
    targets = case.targets
    table = columnar.table_for(targets)
    assert table is not None
    # a first event of another layout into the same table: the rows that must survive a refused append
    if [str(t) for t in first.targets] == [str(t) for t in targets]:
        before = first.tuple_path(first.rows_data)
        assert table.append(first.plan(), first.rows_data) == len(before[0])
    else:
        before = [pa.array([], t) for t in targets]
    got = table.append(case.plan(), data)
    try:
        want = case.tuple_path(data)
    except BinlogError:
        assert got is None
        assert_same(table.finish(), before, "after a refused event")
        return
    if got is None:  # only for text the tuple path turns into something else than its UTF-8 decoding
        assert any(pa.types.is_string(t) for t in targets)
        assert_same(table.finish(), before, "after a refused event")
        return
    assert_same(table.finish(), [pa.concat_arrays([b, w]) for b, w in zip(before, want, strict=True)], "damaged")


# -- values at the edges, by hand ---------------------------------------------------------------------------------


def one_column(column: Column, images: Sequence[bytes | None], target: Any = None) -> list[object]:
    """The lake values of one column's insert images (``None``: a NULL) through the builder."""
    target = target or lake_type(column)
    plan = columnar.plan_for((column,), "insert", b"\x01", None, [0], [target])
    table = columnar.table_for([target])
    assert plan is not None and table is not None
    data = b"".join(b"\x01" if v is None else b"\x00" + v for v in images)
    assert table.append(plan, data) == len(images)
    (array,) = table.finish()
    array.validate(full=True)
    return array.to_pylist()  # type: ignore[no-any-return]


def test_edge_values() -> None:
    assert one_column(Column.build(0, T.LONGLONG, b"").with_(unsigned=True), [b"\xff" * 8, b"\0" * 8, None]) == [
        Decimal(2**64 - 1),
        Decimal(0),
        None,
    ]
    assert one_column(Column.build(0, T.LONGLONG, b"").with_(unsigned=False), [b"\0" * 7 + b"\x80", b"\xff" * 8]) == [
        -(2**63),
        -1,
    ]
    assert one_column(Column.build(0, T.INT24, b"").with_(unsigned=False), [b"\xff\xff\xff", b"\x00\x00\x80"]) == [
        -1,
        -(2**23),
    ]
    dates = [
        le(d | m << 5 | y << 9, 3)
        for y, m, d in ((0, 0, 0), (2024, 0, 5), (2024, 5, 0), (0, 1, 1), (2023, 2, 29), (2024, 2, 29))
    ]
    assert one_column(Column.build(0, T.DATE, b""), dates) == [None] * 5 + [dt.date(2024, 2, 29)]
    dts = [
        datetime2(0, 0, 0, 0, 0, 0, 0, 6),
        datetime2(2024, 2, 30, 1, 2, 3, 4, 6),
        datetime2(1, 1, 1, 0, 0, 0, 999_999, 6),
    ]
    assert one_column(Column.build(0, T.DATETIME2, b"\x06"), dts) == [
        None,
        None,
        dt.datetime(1, 1, 1, 0, 0, 0, 999_999),
    ]
    ts = [bytes(5), b"\0\0\0\0\x01", b"\x65\xdf\x1a\x00\x00"]
    assert one_column(Column.build(0, T.TIMESTAMP2, b"\x02"), ts) == [
        None,  # the zero TIMESTAMP
        EPOCH + dt.timedelta(microseconds=10_000),
        EPOCH + dt.timedelta(seconds=0x65DF1A00),
    ]
    dec = Column.build(0, T.NEWDECIMAL, bytes([14, 4]))
    assert one_column(dec, [decimal2bin(v, 14, 4) for v in (-12345678901234, -1, 0, 5)]) == [
        Decimal("-1234567890.1234"),
        Decimal("-0.0001"),
        Decimal("0.0000"),
        Decimal("0.0005"),
    ]
    assert one_column(Column.build(0, T.NEWDECIMAL, bytes([5, 0])), [decimal2bin(-99999, 5, 0)]) == [Decimal(-99999)]
    text = Column.build(0, T.VARCHAR, b"\x28\x00").with_(charset=UTF8MB4)
    assert one_column(text, [b"\x00", None, b"\x04\xf0\x9f\x98\x80"]) == ["", None, "😀"]
    binary = Column.build(0, T.STRING, bytes([0xFE, 4])).with_(charset=63)
    assert one_column(binary, [b"\x01a", b"\x00", None]) == [b"a\0\0\0", b"\0\0\0\0", None]
    bit64 = Column.build(0, T.BIT, bytes([0, 8]))
    assert one_column(bit64, [b"\xff" * 8, b"\0" * 7 + b"\x05"]) == [Decimal(2**64 - 1), Decimal(5)]
    assert one_column(Column.build(0, T.BIT, bytes([1, 0])), [b"\x01", b"\x00"]) == [1, 0]  # BIT(1)
    assert one_column(Column.build(0, T.YEAR, b""), [b"\x00", b"\x7c"]) == [0, 2024]
    assert one_column(Column.build(0, T.FLOAT, b"\x04"), [struct.pack("<f", 0.1)]) == [
        struct.unpack("<f", struct.pack("<f", 0.1))[0]
    ]


def test_null_bitmap_of_many_columns() -> None:
    """Nine present columns (a two-byte null bitmap) of which four are NULL; a tenth column not in the image and a
    target fed by no column: NULL in every row."""
    columns = tuple(Column.build(i, T.LONG, b"").with_(unsigned=False) for i in range(10))
    targets = [pa.int64()] * 11
    index: list[int | None] = [*range(10), None]
    plan = columnar.plan_for(columns, "delete", b"\xff\x01", None, index, targets)
    table = columnar.table_for(targets)
    assert plan is not None and table is not None
    nulls = [0, 2, 7, 8]
    image = bitmap([i in nulls for i in range(9)]) + b"".join(le(i * 10, 4) for i in range(9) if i not in nulls)
    assert table.append(plan, image * 2) == 2
    got = [a.to_pylist() for a in table.finish()]
    assert got == [[None if i in nulls or i > 8 else i * 10] * 2 for i in range(11)]


def test_refusals() -> None:
    """Layouts and targets the builder does not convert as ``to_lake`` does: no plan; bytes it refuses: ``None``
    and the table as it was."""
    latin1 = Column.build(0, T.VARCHAR, b"\x0a\x00").with_(charset=8)
    time2 = Column.build(0, T.TIME2, b"\x00")
    named = Column.build(0, T.STRING, bytes([T.ENUM, 1])).with_(enum_values=("a",))
    wide = Column.build(0, T.NEWDECIMAL, bytes([40, 2]))
    unsigned = Column.build(0, T.LONGLONG, b"").with_(unsigned=True)
    for column, target in ((latin1, None), (time2, None), (named, None), (wide, None), (unsigned, pa.int64())):
        t = target or lake_type(column)
        assert columnar.plan_for((column,), "insert", b"\x01", None, [0], [t]) is None, column
    assert columnar.table_for([pa.list_(pa.string())]) is None
    text = Column.build(0, T.VARCHAR, b"\x0a\x00").with_(charset=UTF8MB4)
    plan = columnar.plan_for((text,), "insert", b"\x01", None, [0], [pa.string()])
    table = columnar.table_for([pa.string()])
    assert plan is not None and table is not None
    assert table.append(plan, b"\x00\x02ok") == 1
    assert table.append(plan, b"\x00\x02ok\x00\x02\xc3\x28") is None  # not UTF-8
    assert table.append(plan, b"\x00\x05ok") is None  # past the end
    assert table.append(plan, b"\x00\x02ok\x00") is None  # a second image cut short
    assert [a.to_pylist() for a in table.finish()] == [["ok"]]


FIXED = [s for s in SPECS if s.size is not None]


@pytest.mark.parametrize("spec", FIXED, ids=[s.name for s in FIXED])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_stored_bytes(spec: Spec, data: st.DataObject) -> None:
    """Random bytes as the values of one fixed-size column (months past 12, hours past 23, fractions past their
    bound, digit groups past 9 digits, bits past the width): both paths fail alike or give the same arrays."""
    size = spec.size
    assert size is not None
    values = data.draw(st.lists(st.binary(min_size=size, max_size=size), min_size=1, max_size=8))
    column = spec.column(0)
    target = lake_type(column)
    plan = columnar.plan_for((column,), "insert", b"\x01", None, [0], [target])
    table = columnar.table_for([target])
    assert plan is not None and table is not None
    rows_data = b"".join(b"\x00" + v for v in values)
    got = table.append(plan, rows_data)
    try:
        changes = row_decoder((column,), "insert", b"\x01").rows(rows_data)
    except BinlogError:
        assert got is None
        assert table.finish()[0].to_pylist() == []
        return
    assert got == len(values)
    assert_same(table.finish(), tuple_arrays(images_of("insert", changes), 1, [0], [target]), spec.name)
