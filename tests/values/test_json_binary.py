"""MySQL binary JSON: real documents from MySQL 8.0/9.0 binlogs, partial-update diffs, round trips."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError, MalformedError
from binlake.values import json_binary as jb

from . import _binlog

T = ColumnType
RUST = _binlog.CORPUS / "mysql" / "rust_mysql_common"


def events(name: str) -> list[_binlog.RowsEvent]:
    path = RUST / name
    if not path.exists():
        pytest.skip(f"corpus file {name} not present (expected under ../shared/corpus)")
    return list(_binlog.events(path))


def test_opaque_values_print_like_mysql() -> None:
    # MySQL 9.0.1; values inserted by rust_mysql_common's json-opaque test (src/binlog/mod.rs)
    texts = [jb.to_text(after[0]) for ev in events("json-opaque.binlog") for _, after in ev.rows]  # type: ignore[index,arg-type]
    assert texts == [
        '{"a": "base64:type15:VQ=="}',
        '{"b": "2012-03-18"}',
        '{"c": "2012-03-18 11:30:45.000000"}',
        '{"c": "87:31:46.654321"}',
        '{"d": 123.456}',
        '{"e": 9.00}',
        '{"e": [0, 1, true, false]}',
        '{"e": null}',
    ]


def test_partial_update_diffs_rebuild_the_document() -> None:
    # MySQL 8.0.22, binlog_row_value_options=PARTIAL_JSON: an UPDATE with full images, then a
    # PARTIAL_UPDATE_ROWS event whose JSON column holds diffs; the generated column `age` is json_col->'$.age'
    evs = events("json.binlog.000001")
    full = next(ev for ev in evs if ev.type_code == 31)
    partial = next(ev for ev in evs if ev.type_code == 39)
    previous = {after[0]: after[1] for _, after in full.rows}  # type: ignore[index]
    assert jb.to_text(previous[1]) == '{"age": 25, "data": "xxxxxxxxxx", "name": "Joe"}'  # type: ignore[arg-type]
    assert len(partial.rows) == 6
    for before, after in partial.rows:
        row_id = before[0]  # type: ignore[index]
        diffs = after[1]  # type: ignore[index]
        assert [(d.operation, d.path) for d in diffs] == [(jb.JsonDiffOperation.REPLACE, "$.age")]
        doc = jb.apply_json_diffs(previous[row_id], diffs)  # type: ignore[arg-type]
        age = after[3]  # type: ignore[index]
        assert json.loads(doc)["age"] == age == {1: 26, 2: 34, 3: 42}[row_id % 3 or 3]
        assert json.loads(doc)["name"] == after[2].decode()  # type: ignore[index,union-attr]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(1 << 63), (1 << 64) - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6),
    max_leaves=30,
)


@given(json_values)
def test_round_trip_against_json_loads(value: object) -> None:
    text = jb.to_text(jb.encode(value))
    assert json.loads(text) == value
    assert jb.to_text(jb.encode(json.loads(text))) == text  # printing is a fixed point


@given(st.lists(st.integers(0, 1 << 20), min_size=1, max_size=3), st.text(min_size=1, max_size=5))
def test_large_containers(sizes: list[int], unit: str) -> None:
    value = {"big": unit * 70000, "n": sizes, "nested": [{"k": i} for i in sizes]}
    doc = jb.encode(value)
    assert doc[0] == jb.LARGE_OBJECT
    assert json.loads(jb.to_text(doc)) == value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.5, "1.5"),
        (100.0, "100.0"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (1e100, "1e100"),
        (1e15, "1e15"),
        (1e14, "100000000000000.0"),
        (0.1, "0.1"),
        (1e-10, "0.0000000001"),
        (1e-15, "0.000000000000001"),
        (1e-16, "1e-16"),
        (1.5e-300, "1.5e-300"),
        (1234567890123456.7, "1234567890123456.8"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
    ],
)
def test_double_formatting(value: float, text: str) -> None:
    assert jb.format_double(value) == text
    assert float(text) == value


def test_string_escapes_follow_mysql() -> None:
    doc = jb.encode({'q"\\': "a\nb\tc\x01\x7f/é😀"})
    assert jb.to_text(doc) == '{"q\\"\\\\": "a\\nb\\tc\\u0001\\u007F/é😀"}'


def test_empty_value_is_null_and_column_converter() -> None:
    col = Column.build(0, T.JSON, b"\x04")
    assert jb.CONVERTERS[T.JSON](col)(b"") == "null"  # type: ignore[misc]
    read = jb.READERS[T.JSON](col)
    doc = jb.encode([1, "x"])
    stored, end = read(len(doc).to_bytes(4, "little") + doc, 0)
    assert stored == doc and end == 4 + len(doc)
    assert jb.RENDER[T.JSON](col, doc) == "'[1, \"x\"]'"


@given(st.binary(max_size=200))
def test_garbage_raises_only_binlog_errors(data: bytes) -> None:
    with contextlib.suppress(BinlogError):
        jb.to_text(data)


@pytest.mark.parametrize("cut", [1, 3, 5, 9, 12])
def test_truncated_document_is_malformed(cut: int) -> None:
    doc = jb.encode({"key": [1, 2, "three", 4.5, {"x": None}]})
    with pytest.raises(MalformedError):
        jb.to_text(doc[:cut])


def diff(op: jb.JsonDiffOperation, path: str, value: object = None) -> jb.JsonDiff:
    return jb.JsonDiff(op, path, None if op == jb.JsonDiffOperation.REMOVE else jb.encode(value))


REP, INS, REM = jb.JsonDiffOperation.REPLACE, jb.JsonDiffOperation.INSERT, jb.JsonDiffOperation.REMOVE


def test_apply_diffs_in_order() -> None:
    doc = jb.encode({"a": [1, 2, 3], "b": {"c": "x"}, "d e": 1})
    diffs = [
        diff(REP, "$.a[0]", 10),
        diff(INS, "$.a[1]", 15),
        diff(INS, "$.a[99]", 99),
        diff(REM, "$.a[last]"),
        diff(INS, "$.b.new", [True]),
        diff(REM, '$."d e"'),
        diff(REP, "$.b.c", 2.5),
    ]
    assert jb.apply_json_diffs(doc, diffs) == '{"a": [10, 15, 2, 3], "b": {"c": 2.5, "new": [true]}}'
    assert jb.apply_json_diffs('{"n": 9.00}', [diff(INS, "$.m", 1)]) == '{"m": 1, "n": 9.00}'


@pytest.mark.parametrize(
    "bad",
    [
        diff(REP, "$.missing", 1),
        diff(INS, "$.a", 1),
        diff(REM, "$.a[5]"),
        diff(REP, "a", 1),
        diff(REP, "$.a.b.c", 1),
    ],
)
def test_apply_diff_that_does_not_fit(bad: jb.JsonDiff) -> None:
    with pytest.raises(MalformedError):
        jb.apply_json_diffs('{"a": [1]}', [bad])


def test_parse_diffs_binary_layout() -> None:
    value = jb.encode({"x": 1})
    raw = bytes([0, 3]) + b"$.a" + bytes([len(value)]) + value + bytes([2, 5]) + b"$.b[0]"[:5]
    assert jb.parse_json_diffs(raw, 0, len(raw)) == [
        jb.JsonDiff(REP, "$.a", value),
        jb.JsonDiff(REM, "$.b[0", None),
    ]
    with pytest.raises(MalformedError):
        jb.parse_json_diffs(raw, 0, len(raw) - 1)
    with pytest.raises(MalformedError):
        jb.parse_json_diffs(b"\x07\x00", 0, 2)
