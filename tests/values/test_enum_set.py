"""ENUM/SET stored values, names and rendering, on MariaDB 10.11 and MySQL 8.0 binlogs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError, TruncatedError
from binlake.values import enum_set

from . import _binlog

T = ColumnType


def converted(path_parts: tuple[str, ...], table: str) -> list[list[object]]:
    path = _binlog.CORPUS.joinpath(*path_parts)
    if not path.exists():
        pytest.skip(f"corpus file {path.name} not present (expected under ../shared/corpus)")
    rows = []
    for ev in _binlog.events(path):
        if ev.table.table != table:
            continue
        for before, after in ev.rows:
            for image in (before, after):
                if image is None:
                    continue
                out = []
                for col, value in zip(ev.table.columns, image, strict=True):
                    factory = enum_set.CONVERTERS.get(col.real_type_code)
                    conv = factory(col) if factory else None
                    out.append(value if value is None or conv is None else conv(value))
                rows.append(out)
    return rows


def test_mysql_enum_set_with_names() -> None:
    # MySQL 8.0.28 FULL metadata; rust_mysql_common asserts ENUM index 1, SET bits 0b101 then 2 / 0b1010
    rows = converted(("mysql", "rust_mysql_common", "mysql-enum-string-set.000001"), "t")
    assert [r[2:4] for r in rows[:3]] == [
        ["var1", frozenset({"one", "three"})],
        ["var1", frozenset({"one", "three"})],
        ["variant2", frozenset({"two", "four"})],
    ]


def test_mariadb_enum_set_values() -> None:
    # workload.sql: INSERT INTO t_enum_set VALUES (1, 'a', 'x', 'ä', 'é', 'only', 's1', 's1', '😀'), ...
    rows = {r[0]: r for r in converted(("mariadb", "binlogs", "corpus-bin.000002"), "t_enum_set")}
    assert rows[2][1:4] == ["c", "z", "😀"]
    assert rows[2][5:9] == [
        frozenset(),
        frozenset(f"s{i}" for i in range(1, 9)),
        frozenset(f"s{i}" for i in range(1, 10)),
        frozenset({"😀", "€", "ü"}),
    ]
    assert rows[5][3] == ""  # the member '' (index 6), not the error value


def test_big_enum_and_set() -> None:
    rows = converted(("mariadb", "binlogs", "corpus-bin.000002"), "t_enum_big")
    first = rows[0]
    assert first[1:3] == ["m1", "m300"] and first[3] == frozenset({"f1"}) and first[4] == frozenset({"g1"})
    assert rows[1][3] == frozenset(f"f{i}" for i in range(1, 65))


def column(code: int, size: int, **kw: object) -> Column:
    return Column.build(0, T.STRING, bytes([code, size])).with_(**kw)


@given(st.integers(0, 0xFFFF), st.sampled_from([1, 2]))
def test_enum_reader_round_trip(index: int, size: int) -> None:
    index &= (1 << (8 * size)) - 1
    read = enum_set.READERS[T.ENUM](column(T.ENUM, size))
    assert read(b"\xaa" + index.to_bytes(size, "little"), 1) == (index, 1 + size)


@given(st.integers(0, (1 << 64) - 1), st.sampled_from([1, 2, 3, 4, 8]))
def test_set_reader_and_render(mask: int, size: int) -> None:
    mask &= (1 << (8 * size)) - 1
    col = column(T.SET, size)
    raw = mask.to_bytes(size, "little")
    assert enum_set.READERS[T.SET](col)(raw, 0) == (mask, size)
    rendered = enum_set.RENDER[T.SET](col, mask)
    assert rendered == "b'" + "".join(format(b, "08b") for b in raw) + "'"


def test_names_and_errors() -> None:
    e = column(T.ENUM, 1, enum_values=("a", "b"))
    conv = enum_set.CONVERTERS[T.ENUM](e)
    assert conv is not None and [conv(i) for i in (0, 1, 2)] == ["", "a", "b"]
    with pytest.raises(MalformedError):
        conv(3)
    s = column(T.SET, 1, set_values=("a", "b"))
    sconv = enum_set.CONVERTERS[T.SET](s)
    assert sconv is not None and sconv(3) == frozenset({"a", "b"})
    with pytest.raises(MalformedError):
        sconv(4)
    assert enum_set.CONVERTERS[T.ENUM](column(T.ENUM, 1)) is None  # no names: the index stays
    assert enum_set.RENDER[T.ENUM](e, 2) == "2"
    with pytest.raises(TruncatedError):
        enum_set.READERS[T.SET](column(T.SET, 8))(b"\x01\x02", 0)
    with pytest.raises(MalformedError):
        enum_set.READERS[T.SET](column(T.SET, 5))


def _logged(*names: bytes) -> tuple[str, ...]:
    """Names as the table map parser reads them: UTF-8 with surrogate escapes."""
    return tuple(n.decode("utf-8", "surrogateescape") for n in names)


def test_member_names_decode_in_the_column_charset() -> None:
    names = enum_set.member_names
    assert names(None, 13) is None
    assert names(_logged(b"C:\x81\x5f", b"\x82\xa0"), 13) == ("C:\\", "あ")  # sjis
    assert names(_logged(b"\x00a\x20\xac"), 35) == ("a€",)  # ucs2: the names are in the column charset too
    assert names(_logged("é".encode()), 45) == ("é",)  # utf8mb4
    assert names(_logged("é".encode()), None) == ("é",)  # charset unknown: UTF-8
    # a name not valid in its charset (no server logs one): ASCII kept, other bytes as \xNN, never a lone surrogate
    bad = names(_logged(b"a\xff", b"\xed\xa0\x80", b"ok\x81"), 45) + names(_logged(b"ok\x81"), 13)
    assert bad == ("a\\xff", "\\xed\\xa0\\x80", "ok\\x81", "ok\\x81")
    "".join(bad).encode("utf-8")  # raises on a lone surrogate


@given(st.binary(max_size=20), st.sampled_from([8, 13, 19, 33, 35, 45, 54, 60, 63, 97]))
def test_member_names_are_always_text_that_encodes(raw: bytes, collation: int) -> None:
    (name,) = enum_set.member_names(_logged(raw), collation) or ("",)
    assert isinstance(name, str)
    name.encode("utf-8")  # raises on a lone surrogate
