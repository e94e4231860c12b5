"""Debezium JSON: Java's number text, every value encoding, and every row change of the MariaDB corpus against
the reference ``mariadb-binlog -vv`` text (records per table and operation, the columns each image holds, NULLs)
and against binlake's own decoding of the same rows (each JSON value read back is the typed value)."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import struct
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.changes._debezium import DEFAULTS, MODES, carried, conforms, decode, same, schema, type_name
from tests.corpus.test_corpus_rows import reference_images

from binlake.changes import ChangeStream, FileSource, RowsChange
from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError
from binlake.events.rows import RowsEvent
from binlake.reader import read_events
from binlake.render.changes.debezium import (
    LEGACY_MODES,
    SETTINGS,
    DebeziumEncoder,
    DebeziumOptions,
    ValueModes,
    java_double,
    java_float,
    value_encoder,
)
from binlake.values.row import ABSENT
from binlake.values.spatial import Geometry
from binlake.values.temporal import InvalidDate, InvalidDatetime

T = ColumnType
JAVA = re.compile(r"-?(0|[1-9]\d*)\.\d+(E-?[1-9]\d*)?")


# -- Java's Double.toString / Float.toString ------------------------------------------------------------------------


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_reads_back_and_has_java_s_shape(x: float) -> None:
    text = java_double(x)
    assert JAVA.fullmatch(text), text
    assert float(text) == x and math.copysign(1, float(text)) == math.copysign(1, x)
    digits = len(text.split("E")[0].lstrip("-").replace(".", "").strip("0"))
    if digits > 2:  # the shortest: no decimal of fewer digits reads back as x
        assert float(f"{x:.{digits - 1}g}") != x
    plain = "E" not in text
    assert plain == (x == 0 or 1e-3 <= abs(x) < 1e7)


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_java_float_is_the_shortest_that_reads_back_as_the_same_float(x: float) -> None:
    text = java_float(x)
    assert JAVA.fullmatch(text), text
    assert struct.pack("<f", float(text)) == struct.pack("<f", x)
    digits = len(text.split("E")[0].lstrip("-").replace(".", "").strip("0"))
    if digits > 2:  # Java prints two digits at least; past two, no shorter decimal reads back as x
        assert struct.pack("<f", float(f"{x:.{digits - 1}g}")) != struct.pack("<f", x)


def test_java_number_texts_the_jdk_prints() -> None:
    """Values whose ``Double.toString``/``Float.toString`` the JDK documents or prints (JDK 19+)."""
    assert [java_double(v) for v in (1.0, 100.0, 1e7, 9999999.0, 0.001, 0.0001, 1e23, -2.5e-5, 123456789.0)] == [
        "1.0", "100.0", "1.0E7", "9999999.0", "0.001", "1.0E-4", "1.0E23", "-2.5E-5", "1.23456789E8",
    ]  # fmt: skip
    assert java_float(struct.unpack("<f", struct.pack("<f", 0.1))[0]) == "0.1"
    assert java_float(3.4028234663852886e38) == "3.4028235E38"
    assert java_float(1.401298464324817e-45) == "1.4E-45"


# -- value encodings ------------------------------------------------------------------------------------------------


def _enc(col: Column, value: object, name: str | None = None, modes: ValueModes = DEFAULTS) -> str:
    fn = value_encoder(col, name, modes)
    return str(value) if fn is None else fn(value)


def _col(code: int, meta: bytes = b"", **kw: Any) -> Column:
    return Column.build(0, code, meta).with_(**kw)


BIGINT_U = _col(T.LONGLONG, unsigned=True)
DEC_5_2 = _col(T.NEWDECIMAL, b"\x05\x02")
DEC_65_30 = _col(T.NEWDECIMAL, b"\x41\x1e")
BINARY_4 = _col(T.STRING, b"\xfe\x04", charset=63, length=4)
UTC = dt.UTC


# (column, value, DDL type name) -> {setting value: JSON}, from the connector's documentation ("Data type
# mappings", the properties decimal.handling.mode, bigint.unsigned.handling.mode, time.precision.mode,
# binary.handling.mode) and the JSON converter (Connect BYTES and Decimal as base64: Decimal.fromLogical's
# unscaled BigInteger.toByteArray(); Date, Time and Timestamp as their integers).
GOLDEN: dict[str, list[tuple[Column, object, str | None, dict[str, str]]]] = {
    "bigint.unsigned.handling.mode": [
        (BIGINT_U, 0, None, {"long": "0", "precise": '"AA=="'}),
        (BIGINT_U, 82, None, {"long": "82", "precise": '"Ug=="'}),
        (BIGINT_U, 2**63 - 1, None, {"long": "9223372036854775807", "precise": '"f/////////8="'}),
        (BIGINT_U, 2**63, None, {"long": "-9223372036854775808", "precise": '"AIAAAAAAAAAA"'}),
        (BIGINT_U, 2**64 - 1, None, {"long": "-1", "precise": '"AP//////////"'}),
        (_col(T.LONGLONG, unsigned=False), -1, None, {"long": "-1", "precise": "-1"}),  # signed: INT64 either way
    ],
    "decimal.handling.mode": [
        (_col(T.NEWDECIMAL, b"\x0a\x02"), Decimal("1.23"), None,
         {"precise": '"ew=="', "double": "1.23", "string": '"1.23"'}),
        (_col(T.NEWDECIMAL, b"\x0a\x02"), Decimal("-1.23"), None,
         {"precise": '"hQ=="', "double": "-1.23", "string": '"-1.23"'}),
        (DEC_5_2, Decimal("-0.00"), None, {"precise": '"AA=="', "double": "0.0", "string": '"0.00"'}),
        (DEC_5_2, Decimal("-1.28"), None, {"precise": '"gA=="', "double": "-1.28", "string": '"-1.28"'}),
        (DEC_5_2, Decimal("1.28"), None, {"precise": '"AIA="', "double": "1.28", "string": '"1.28"'}),
        (DEC_65_30, Decimal("1E-30"), None,
         {"precise": '"AQ=="', "double": "1.0E-30", "string": '"0.000000000000000000000000000001"'}),
        (DEC_65_30, Decimal("-" + "9" * 35 + "." + "9" * 30), None, {
            "precise": '"/wzp2OOAPG91dBC5sca6EIXayfYAAAAAAAAAAQ=="', "double": "-1.0E35",
            "string": '"-' + "9" * 35 + "." + "9" * 30 + '"',
        }),
    ],
    "time.precision.mode": [  # the documentation's examples: DATETIME 2018-06-20 06:37:03 is 1529476623000 ...
        (_col(T.DATETIME2, b"\x00"), dt.datetime(2018, 6, 20, 6, 37, 3), None,
         {"adaptive_time_microseconds": "1529476623000", "connect": "1529476623000"}),
        (_col(T.DATETIME2, b"\x06"), dt.datetime(2018, 6, 20, 6, 37, 3, 123456), None,
         {"adaptive_time_microseconds": "1529476623123456", "connect": "1529476623123"}),
        (_col(T.DATETIME2, b"\x06"), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), None,
         {"adaptive_time_microseconds": "-1", "connect": "-1"}),
        (_col(T.DATETIME2, b"\x03"), dt.datetime(1970, 1, 1, 0, 0, 0, 5000), None,
         {"adaptive_time_microseconds": "5", "connect": "5"}),
        # ... and the same TIMESTAMP written in a zone 7 hours behind UTC is "2018-06-20T13:37:03Z"
        (_col(T.TIMESTAMP2, b"\x00"), dt.datetime(2018, 6, 20, 13, 37, 3, tzinfo=UTC), None,
         {"adaptive_time_microseconds": '"2018-06-20T13:37:03Z"', "connect": '"2018-06-20T13:37:03Z"'}),
        (_col(T.TIMESTAMP2, b"\x03"), dt.datetime(2018, 6, 20, 13, 37, 3, 120000, tzinfo=UTC), None,
         {"adaptive_time_microseconds": '"2018-06-20T13:37:03.120Z"', "connect": '"2018-06-20T13:37:03.120Z"'}),
        (_col(T.DATE), dt.date(2018, 6, 20), None, {"adaptive_time_microseconds": "17702", "connect": "17702"}),
        (_col(T.TIME2, b"\x03"), dt.timedelta(hours=12, minutes=34, seconds=56, microseconds=789000), None,
         {"adaptive_time_microseconds": "45296789000", "connect": "45296789"}),
        (_col(T.TIME2, b"\x06"), dt.timedelta(hours=24), None,
         {"adaptive_time_microseconds": "86400000000", "connect": "86400000"}),
        (_col(T.TIME2, b"\x06"), dt.timedelta(hours=24, microseconds=1), None,
         {"adaptive_time_microseconds": "86400000001", "connect": "null"}),
        (_col(T.TIME2, b"\x00"), dt.timedelta(hours=-838, minutes=-59, seconds=-59), None,
         {"adaptive_time_microseconds": "-3020399000000", "connect": "null"}),
        (_col(T.DATE, nullable=False), InvalidDate(0, 0, 0), None, {"adaptive_time_microseconds": "0", "connect": "0"}),
        (_col(T.DATETIME2, b"\x06"), InvalidDatetime(0, 0, 0, 0, 0, 0, 0), None,
         {"adaptive_time_microseconds": "null", "connect": "null"}),
    ],
    "binary.handling.mode": [  # a BINARY(4) value as the reader gives it: padded to its length
        (BINARY_4, b"\xfb\xff\x00\x00", None,
         {"bytes": '"+/8AAA=="', "base64": '"+/8AAA=="', "base64-url-safe": '"-_8AAA=="', "hex": '"fbff0000"'}),
        (_col(T.BLOB, b"\x02", charset=63), b"\x00\xff", None,
         {"bytes": '"AP8="', "base64": '"AP8="', "base64-url-safe": '"AP8="', "hex": '"00ff"'}),
        # not binary columns: BIT(n) is Bits and a geometry's wkb BYTES whatever the mode
        (_col(T.BIT, b"\x02\x01"), 0b1000000001, None,
         {"bytes": '"AQI="', "base64": '"AQI="', "base64-url-safe": '"AQI="', "hex": '"AQI="'}),
        (_col(T.GEOMETRY, b"\x04"), Geometry(0, bytes.fromhex("0101000000000000000000f83f00000000000002c0")), None,
         dict.fromkeys(SETTINGS["binary.handling.mode"], '{"wkb":"AQEAAAAAAAAAAAD4PwAAAAAAAALA","srid":null}')),
    ],
}  # fmt: skip


@pytest.mark.parametrize("setting", list(GOLDEN))
def test_value_encodings_per_mode(setting: str) -> None:
    """Each value as the connector writes it under each value of its setting (the others at their defaults)."""
    for col, value, name, by_mode in GOLDEN[setting]:
        assert set(by_mode) == set(SETTINGS[setting])
        for mode, want in by_mode.items():
            assert _enc(col, value, name, ValueModes.parse([(setting, mode)])) == want, (setting, mode, value)


def test_defaults_are_the_connector_s_and_the_old_output_is_one_option_away() -> None:
    assert ValueModes().text() == (
        "decimal.handling.mode=precise,bigint.unsigned.handling.mode=long,"
        "time.precision.mode=adaptive_time_microseconds,binary.handling.mode=bytes"
    )
    assert ValueModes.parse_text(["decimal.handling.mode=string,bigint.unsigned.handling.mode=precise"]) == LEGACY_MODES
    assert ValueModes.parse_text(["Decimal.Handling.Mode=STRING", "decimal.handling.mode=double"]).decimal == "double"
    for bad in ("decimal.handling.mode", "decimal.handling.mode=exact", "time.precision.mode=isostring", "x=1"):
        with pytest.raises(BinlogError):
            ValueModes.parse_text([bad])


def test_value_encodings() -> None:
    """Each MySQL type as the README's table says, in the modes of binlake's output from before the settings
    (decimal.handling.mode=string, bigint.unsigned.handling.mode=precise; the other two at the defaults)."""

    def enc(col: Column, value: object, name: str | None = None) -> str:
        return _enc(col, value, name, LEGACY_MODES)

    assert enc(_col(T.LONG), -5) == "-5"
    assert enc(BIGINT_U, 18446744073709551615) == '"AP//////////"'
    assert enc(BIGINT_U, 0) == '"AA=="'
    assert enc(_col(T.LONGLONG, unsigned=False), -1) == "-1"
    assert enc(_col(T.TINY), 1, "boolean") == "true" and enc(_col(T.TINY), 1) == "1"
    assert enc(DEC_5_2, Decimal("-0.00")) == '"0.00"'
    assert enc(DEC_65_30, Decimal("1E-30")) == '"0.000000000000000000000000000001"'
    assert enc(_col(T.BIT, b"\x01\x00"), 1) == "true"
    assert enc(_col(T.BIT, b"\x02\x01"), 0b1000000001) == '"AQI="'  # BIT(10): 2 bytes, little-endian
    assert enc(_col(T.YEAR), 2024) == "2024" and enc(_col(T.YEAR), 0) == "1900"
    assert enc(_col(T.DATE), dt.date(2018, 6, 20)) == "17702"
    assert enc(_col(T.DATE, nullable=False), InvalidDate(0, 0, 0)) == "0"
    assert enc(_col(T.DATE), InvalidDate(2020, 0, 15)) == "null"
    assert enc(_col(T.TIME2, b"\x06"), dt.timedelta(hours=-838, minutes=-59, seconds=-59)) == "-3020399000000"
    assert enc(_col(T.DATETIME2, b"\x00"), dt.datetime(2018, 6, 20, 6, 37, 3)) == "1529476623000"
    assert enc(_col(T.DATETIME2, b"\x06"), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)) == "-1"
    assert enc(_col(T.DATETIME2, b"\x03"), dt.datetime(1970, 1, 1, 0, 0, 0, 5000)) == "5"
    utc = dt.datetime(2018, 6, 20, 13, 37, 3, 120000, tzinfo=dt.UTC)
    assert enc(_col(T.TIMESTAMP2, b"\x00"), utc.replace(microsecond=0)) == '"2018-06-20T13:37:03Z"'
    assert enc(_col(T.TIMESTAMP2, b"\x03"), utc) == '"2018-06-20T13:37:03.120Z"'
    assert enc(_col(T.TIMESTAMP2, b"\x00", nullable=False), InvalidDatetime(0, 0, 0, 0, 0, 0, 0)) == (
        '"1970-01-01T00:00:00Z"'
    )
    assert enc(_col(T.STRING, b"\xfe\x0a", charset=45), 'a"\\\n\x01é') == '"a\\"\\\\\\n\\u0001é"'
    assert enc(_col(T.STRING, b"\xfe\x04", charset=63), b"\x00\xff") == '"AP8="'
    assert enc(_col(T.SET, b"\xf8\x01", set_values=("a", "b", "c")), frozenset({"c", "a"})) == '"a,c"'
    point = Geometry(4326, bytes.fromhex("0101000000000000000000f83f00000000000002c0"))
    assert json.loads(enc(_col(T.GEOMETRY, b"\x04"), point, "point")) == {
        "x": 1.5, "y": -2.25, "wkb": "AQEAAAAAAAAAAAD4PwAAAAAAAALA", "srid": 4326,
    }  # fmt: skip
    assert json.loads(enc(_col(T.GEOMETRY, b"\x04"), Geometry(0, point.wkb))) == {
        "wkb": "AQEAAAAAAAAAAAD4PwAAAAAAAALA", "srid": None,
    }  # fmt: skip
    assert enc(_col(T.STRING, b"\xfe\x10"), bytes(range(16)), "uuid") == '"00010203-0405-0607-0809-0a0b0c0d0e0f"'


def test_control_characters_are_escaped_as_jackson_does() -> None:
    enc = DebeziumEncoder()
    line = enc._head + '"\\u001f\\\\u001f"'  # one control character, one backslash followed by text
    from binlake.render.changes.debezium import _upper_escapes

    assert _upper_escapes(line).endswith('"\\u001F\\\\u001f"')


# -- the corpus -----------------------------------------------------------------------------------------------------


def _statement_ends(path: Path) -> dict[int, int]:
    """Each rows event's position -> the position of its statement's last event (where the tool prints it)."""
    out: dict[int, int] = {}
    pending: list[int] = []
    for ev in read_events(path):
        if isinstance(ev, RowsEvent):
            pending.append(ev.header.pos)
            if ev.stmt_end:
                out.update((p, ev.header.pos) for p in pending)
                pending = []
    return out


def _reference_ops(reference: Path) -> Counter[tuple[str, str, str]]:
    import gzip

    ops: Counter[tuple[str, str, str]] = Counter()
    head = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `((?:[^`]|``)*)`\.`((?:[^`]|``)*)`$")
    with gzip.open(reference, "rt", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            m = head.match(line.rstrip("\n"))
            if m:
                op = {"INSERT INTO": "c", "UPDATE": "u", "DELETE FROM": "d"}[m[1]]
                ops[(m[2].replace("``", "`"), m[3].replace("``", "`"), op)] += 1
    return ops


@pytest.mark.corpus
@pytest.mark.parametrize("modes", MODES, ids=lambda m: m.text())
def test_every_corpus_row_change_matches_the_reference_and_reads_back(corpus_dir: Path, modes: ValueModes) -> None:
    """In each mode set: every value has the JSON type of its documented Connect type, and reads back (as a
    consumer of stock Debezium reads it) as binlake's typed value, or as much of it as the mode keeps."""
    checked = values = 0
    for reference in sorted((corpus_dir / "mariadb" / "reference").glob("corpus-bin.*.decode-rows-meta.txt.gz")):
        path = corpus_dir / "mariadb" / "binlogs" / reference.name.split(".decode")[0]
        expected, last = reference_images(reference)  # the tool stops at what it cannot decode (MariaDB 5.3 temporals)
        ends = _statement_ends(path)
        encoder = DebeziumEncoder(DebeziumOptions(modes=modes))
        got: dict[int, list[dict[int, str]]] = defaultdict(list)
        ops: Counter[tuple[str, str, str]] = Counter()
        for trx in ChangeStream(FileSource([str(path)])):
            lines = iter(encoder.transaction(trx))
            for item in trx.items:
                if not isinstance(item, RowsChange):
                    continue
                info = item.table
                records = [(change, json.loads(next(lines))) for change in item.rows()]
                if item.pos >= last:
                    continue
                for (before, after), rec in records:
                    src = rec["source"]
                    assert (src["db"], src["table"], src["pos"], src["file"]) == (
                        info.schema, info.name, item.pos, path.name,
                    )  # fmt: skip
                    ops[(info.schema, info.name, rec["op"])] += 1
                    for image, obj in ((before, rec["before"]), (after, rec["after"])):
                        if image is None:
                            assert obj is None
                            continue
                        assert list(obj) == [n for n, v in zip(info.names, image, strict=True) if v is not ABSENT]
                        shown = {}
                        for i, (name, value) in enumerate(zip(info.names, image, strict=True)):
                            if name not in obj:
                                continue
                            col = info.columns[i]
                            literal, _ = schema(col, type_name(info, i), modes)
                            unnamed = col.real_type_code in (T.ENUM, T.SET) and type(obj[name]) is int
                            assert obj[name] is None or unnamed or conforms(literal, obj[name]), (name, obj[name])
                            decoded = decode(col, type_name(info, i), obj[name], modes)
                            assert same(col, value, decoded, modes), (path.name, info.name, name, value, obj[name])
                            assert (
                                (obj[name] is None) == (value is None)
                                or isinstance(value, InvalidDate | InvalidDatetime)
                                or carried(col, value, modes) is None
                            )
                            shown[i + 1] = "NULL" if value is None else "value"
                            values += 1
                        got[ends[item.pos]].append(shown)
                    checked += 1
        assert ops == _reference_ops(reference), path.name
        for pos, images in expected.items():  # each statement's images: the columns each holds, and its NULLs
            marks = [{k: "NULL" if v == "NULL" else "value" for k, v in im.items()} for im in images]
            assert _same_marks(got[pos], marks), (path.name, pos)
    assert checked > 10_000 and values > 50_000


def _same_marks(got: list[dict[int, str]], want: list[dict[int, str]]) -> bool:
    return sorted(tuple(sorted(d.items())) for d in got) == sorted(tuple(sorted(d.items())) for d in want)


@pytest.mark.corpus
@pytest.mark.parametrize("modes", MODES, ids=lambda m: m.text())
def test_the_compiled_writer_writes_what_the_python_writer_writes(corpus_dir: Path, modes: ValueModes) -> None:
    """binlake._speedups.JsonPlan (``DebeziumEncoder.encode``) against the Python writer, byte for byte, on every
    corpus binlog of both servers, in each mode set (the workloads' every type: test_debezium_server)."""
    from binlake.errors import BinlogError
    from binlake.render.changes import debezium

    if debezium.JsonPlan is None:
        pytest.skip("binlake._speedups is not built (or BINLAKE_PURE_PYTHON is set)")
    paths = [
        *sorted((corpus_dir / "mariadb" / "binlogs").glob("corpus-bin.*")),
        *sorted((corpus_dir / "mysql").glob("*/*")),
    ]
    rows = compiled = 0
    for path in paths:
        encoder = DebeziumEncoder(DebeziumOptions(modes=modes))
        try:
            for trx in ChangeStream(FileSource([str(path)])):
                python = "".join(encoder.transaction(trx)).encode("utf-8", "surrogateescape")
                assert encoder.encode(trx) == python, (path.name, trx.file, trx.begin_pos)
        except BinlogError:
            pass  # damaged and encrypted files end where they end, both ways alike
        rows += encoder.written
        compiled += encoder.plans.compiled()
    assert rows > 50_000 and compiled > 150
