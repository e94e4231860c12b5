"""Rows events and the row API on events built here byte by byte, and hypothesis round trips of whole rows.

The encoders below write what ``Rows_log_event::write_row`` / ``pack_row`` (``sql/rpl_record.cc``) and each
``Field::pack`` (``sql/field.cc``) write, independently of the decoders under test: a value encoded here must come
back from ``RowsEvent.rows()`` unchanged.
"""

from __future__ import annotations

import datetime as dt
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.coltypes import ColumnType as T
from binlake.decoder import decode_event
from binlake.errors import BinlogError, DecompressionError, MalformedError, TruncatedError, UnsupportedError
from binlake.events.base import EventType as E
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.format import FormatDescriptionEvent, synthetic_fde
from binlake.events.rows import RowsEvent, mariadb_uncompress
from binlake.events.table_map import TableMapEvent
from binlake.rowdecoder import row_decoder
from binlake.values import reader_for
from binlake.values.json_binary import encode as json_encode
from binlake.values.row import ABSENT

TABLE_ID = 77

# -- encoders ---------------------------------------------------------------------------------------------------


def packed(n: int) -> bytes:
    """``net_store_length``."""
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def bitmap(bits: Sequence[bool]) -> bytes:
    """LSB-first bitmap of ``(len + 7) // 8`` bytes."""
    value = sum(1 << i for i, b in enumerate(bits) if b)
    return value.to_bytes((len(bits) + 7) // 8, "little")


def event(code: int, body: bytes, pos: int = 4) -> bytes:
    """A whole event without checksum: v4 header + body."""
    return struct.pack("<IBIIIH", 0, code, 1, 19 + len(body), pos + 19 + len(body), 0) + body


def decimal_bytes(value: Decimal, precision: int, scale: int) -> bytes:
    """``decimal2bin``: digit groups big-endian, top bit flipped, all bytes inverted when negative."""
    dig2bytes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    negative = value < 0
    with localcontext(prec=100):  # format() rounds to the context's 28 digits otherwise
        text = format(abs(value), f".{scale}f")
    int_part, _, frac = text.partition(".")
    intg = precision - scale
    int_part = int_part.rjust(intg, "0")[-intg:] if intg else ""
    chunks = [(int_part[: intg % 9], intg % 9)] + [(int_part[intg % 9 + 9 * k :][:9], 9) for k in range(intg // 9)]
    chunks += [(frac[9 * k : 9 * k + 9], 9) for k in range(scale // 9)] + [(frac[scale - scale % 9 :], scale % 9)]
    out = b"".join(int(digits or "0").to_bytes(dig2bytes[n], "big") for digits, n in chunks if n)
    if negative:
        out = bytes(b ^ 0xFF for b in out)
    return bytes([out[0] ^ 0x80]) + out[1:]


def datetime2_bytes(v: dt.datetime, fsp: int) -> bytes:
    """``my_datetime_packed_to_binary``: 5 bytes of ymd/hms offset by 0x8000000000, then the fraction."""
    ymd = ((v.year * 13 + v.month) << 5) | v.day
    hms = (v.hour << 12) | (v.minute << 6) | v.second
    out = (((ymd << 17) | hms) + 0x8000000000).to_bytes(5, "big")
    nbytes = (fsp + 1) // 2
    unit = {0: 1, 1: 10_000, 2: 100, 3: 1}[nbytes]
    return out + (v.microsecond // unit).to_bytes(nbytes, "big") if nbytes else out


@dataclass(frozen=True)
class Col:
    """A column for the test encoders: its type code, metadata bytes, how to pack a value, what it decodes to."""

    code: int
    meta: bytes
    pack: Callable[[Any], bytes]
    values: st.SearchStrategy[object]
    unsigned: bool = False


def _int(code: int, fmt: str, unsigned: bool = False) -> Col:
    s = struct.Struct("<" + (fmt.upper() if unsigned else fmt))
    lo, hi = (0, 2 ** (8 * s.size) - 1) if unsigned else (-(2 ** (8 * s.size - 1)), 2 ** (8 * s.size - 1) - 1)
    return Col(code, b"", lambda v: s.pack(v), st.integers(lo, hi), unsigned)


INT24 = Col(
    T.INT24,
    b"",
    lambda v: int(v).to_bytes(3, "little", signed=True),
    st.integers(-(2**23), 2**23 - 1),
)
DOUBLE = Col(T.DOUBLE, b"\x08", lambda v: struct.pack("<d", v), st.floats(allow_nan=False))
FLOAT = Col(
    T.FLOAT,
    b"\x04",
    lambda v: struct.pack("<f", v),
    st.floats(width=32, allow_nan=False),
)
VARCHAR = Col(
    T.VARCHAR,
    (300).to_bytes(2, "little"),
    lambda v: len(v).to_bytes(2, "little") + v,
    st.binary(max_size=300),
)
SHORT_VARCHAR = Col(T.VARCHAR, b"\x14\x00", lambda v: bytes([len(v)]) + v, st.binary(max_size=20))
BLOB = Col(T.BLOB, b"\x02", lambda v: len(v).to_bytes(2, "little") + v, st.binary(max_size=2000))
DATETIME6 = Col(
    T.DATETIME2,
    b"\x06",
    lambda v: datetime2_bytes(v, 6),
    st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)),
)
DATETIME0 = Col(
    T.DATETIME2,
    b"\x00",
    lambda v: datetime2_bytes(v, 0),
    st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31)).map(lambda d: d.replace(microsecond=0)),
)
DECIMAL_12_2 = Col(
    T.NEWDECIMAL,
    bytes([12, 2]),
    lambda v: decimal_bytes(v, 12, 2),
    st.decimals(min_value=-(10**10) + 1, max_value=10**10 - 1, places=2),
)
DECIMAL_40_12 = Col(
    T.NEWDECIMAL,
    bytes([40, 12]),
    lambda v: decimal_bytes(v, 40, 12),
    st.decimals(min_value=-(10**28) + 1, max_value=10**28 - 1, places=12),
)
PALETTE = [
    _int(T.TINY, "b"),
    _int(T.TINY, "b", unsigned=True),
    _int(T.SHORT, "h"),
    _int(T.SHORT, "h", unsigned=True),
    _int(T.LONG, "i"),
    _int(T.LONG, "i", unsigned=True),
    _int(T.LONGLONG, "q"),
    _int(T.LONGLONG, "q", unsigned=True),
    INT24,
    DOUBLE,
    FLOAT,
    VARCHAR,
    SHORT_VARCHAR,
    BLOB,
    DATETIME6,
    DATETIME0,
    DECIMAL_12_2,
    DECIMAL_40_12,
]
LONG, ULONG = _int(T.LONG, "i"), _int(T.LONG, "i", unsigned=True)


def table_map(cols: Sequence[Col], names: Sequence[str] | None = None, table_id: int = TABLE_ID) -> bytes:
    """TABLE_MAP_EVENT body with SIGNEDNESS (and COLUMN_NAME) optional metadata."""
    meta = b"".join(c.meta for c in cols)
    numeric = [
        c.unsigned
        for c in cols
        if c.code in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.FLOAT, T.DOUBLE, T.NEWDECIMAL)
    ]
    nbytes = (len(numeric) + 7) // 8  # MSB first: column i is bit 7 - i % 8 of byte i // 8
    sign = sum(1 << (8 * nbytes - 1 - i) for i, u in enumerate(numeric) if u).to_bytes(nbytes, "big")
    opt = bytes([1]) + packed(len(sign)) + sign if numeric else b""
    if names is not None:
        blob = b"".join(packed(len(n)) + n.encode() for n in names)
        opt += bytes([4]) + packed(len(blob)) + blob
    return (
        table_id.to_bytes(6, "little")
        + b"\x01\x00"
        + b"\x02db\x00\x01t\x00"
        + packed(len(cols))
        + bytes(c.code for c in cols)
        + packed(len(meta))
        + meta
        + bitmap([True] * len(cols))
        + opt
    )


def image(cols: Sequence[Col], present: Sequence[bool], values: Sequence[object]) -> bytes:
    """One row image: null bitmap over present columns, then their non-NULL values."""
    here = [(c, v) for c, p, v in zip(cols, present, values, strict=True) if p]
    return bitmap([v is None for _, v in here]) + b"".join(c.pack(v) for c, v in here if v is not None)


def rows_body(
    width: int,
    before: Sequence[bool],
    rows: bytes,
    after: Sequence[bool] | None = None,
    v2: bool = True,
    extra: bytes = b"",
    flags: int = 1,
) -> bytes:
    out = TABLE_ID.to_bytes(6, "little") + flags.to_bytes(2, "little")
    if v2:
        out += (2 + len(extra)).to_bytes(2, "little") + extra
    out += packed(width) + bitmap(before)
    if after is not None:
        out += bitmap(after)
    return out + rows


def fde_with(**lengths: int) -> FormatDescriptionEvent:
    """MySQL 8's format description with some post-header lengths changed (``PRE_GA_WRITE_ROWS_EVENT=8``)."""
    fde = synthetic_fde(checksum=False)
    table = list(fde.post_header_lengths) + [0] * (E.DELETE_ROWS_COMPRESSED_EVENT - len(fde.post_header_lengths))
    for name, n in lengths.items():
        table[E[name] - 1] = n
    return replace(fde, post_header_lengths=tuple(table))


def context(cols: Sequence[Col], names: Sequence[str] | None = None) -> DecodeContext:
    # a 5.1-era server's lengths for the pre-GA and v1 types (ROWS_HEADER_LEN 8), MySQL 8's for the rest
    v1 = ("PRE_GA_WRITE", "PRE_GA_UPDATE", "PRE_GA_DELETE", "WRITE", "UPDATE", "DELETE")
    lengths = {f"{k}_ROWS_EVENT" + ("" if "PRE" in k else "_V1"): 8 for k in v1}
    # and MariaDB's for its compressed ones (Format_description_log_event's constructor in sql/log_event.cc)
    for k in ("WRITE", "UPDATE", "DELETE"):
        lengths[f"{k}_ROWS_COMPRESSED_EVENT_V1"] = 8
        lengths[f"{k}_ROWS_COMPRESSED_EVENT"] = 10
    ctx = DecodeContext(fde=fde_with(**lengths))
    tm = decode_event(event(E.TABLE_MAP_EVENT, table_map(cols, names)), 4, ctx)
    assert isinstance(tm, TableMapEvent)
    ctx.table_maps[TABLE_ID] = tm
    return ctx


def decode_rows(code: int, body: bytes, ctx: DecodeContext, pos: int = 100) -> RowsEvent:
    ev = decode_event(event(code, body, pos), pos, ctx)
    assert isinstance(ev, RowsEvent)
    return ev


# -- the post-header and bitmaps --------------------------------------------------------------------------------


def test_write_v2_fields_and_values() -> None:
    cols = [LONG, VARCHAR, DATETIME6, DECIMAL_12_2]
    ctx = context(cols, ["id", "name", "at", "price"])
    row = [7, b"hi", dt.datetime(2024, 2, 29, 23, 59, 58, 123456), Decimal("-3.50")]
    ev = decode_rows(E.WRITE_ROWS_EVENT, rows_body(4, [True] * 4, image(cols, [True] * 4, row), flags=0x9), ctx)
    assert (ev.kind, ev.version, ev.table_id, ev.column_count, ev.compressed) == ("insert", 2, TABLE_ID, 4, False)
    assert ev.flag_names == ["STMT_END_F", "COMPLETE_ROWS_F"] and ev.stmt_end
    assert ev.columns_after is None and ev.present_after == [True] * 4
    assert ev.table_map is ctx.table_maps[TABLE_ID]
    assert ev.extra is not None and ev.extra.raw == b""
    assert ev.rows() == [(None, tuple(row))]
    assert ev.row_dicts() == [(None, dict(zip(["id", "name", "at", "price"], row, strict=True)))]
    assert "insert v2" in ev.summary() and "`db`.`t`" in ev.summary()


@pytest.mark.parametrize(
    ("code", "kind", "version"),
    [
        (E.PRE_GA_DELETE_ROWS_EVENT, "delete", 0),
        (E.WRITE_ROWS_EVENT_V1, "insert", 1),
        (E.DELETE_ROWS_EVENT_V1, "delete", 1),
        (E.DELETE_ROWS_EVENT, "delete", 2),
    ],
)
def test_single_image_kinds(code: int, kind: str, version: int) -> None:
    cols = [LONG, SHORT_VARCHAR]
    ctx = context(cols)
    rows = image(cols, [True, True], [1, b"a"]) + image(cols, [True, True], [2, None])
    ev = decode_rows(code, rows_body(2, [True, True], rows, v2=version == 2), ctx)
    assert (ev.kind, ev.version) == (kind, version)
    images = [(1, b"a"), (2, None)]
    assert ev.rows() == [(None, i) if kind == "insert" else (i, None) for i in images]


@pytest.mark.parametrize("code", [E.UPDATE_ROWS_EVENT_V1, E.UPDATE_ROWS_EVENT, E.PRE_GA_UPDATE_ROWS_EVENT])
def test_update_minimal_images_mark_absent_columns(code: int) -> None:
    cols = [LONG, SHORT_VARCHAR, ULONG]
    ctx = context(cols, ["id", "s", "u"])
    before, after = [True, False, False], [False, True, True]
    rows = image(cols, before, [5, None, None]) + image(cols, after, [None, None, 4294967295])
    ev = decode_rows(code, rows_body(3, before, rows, after, v2=code == E.UPDATE_ROWS_EVENT), ctx)
    assert ev.present_before == before and ev.present_after == after
    assert ev.rows() == [((5, ABSENT, ABSENT), (ABSENT, None, 4294967295))]
    assert ev.row_dicts() == [({"id": 5}, {"s": None, "u": 4294967295})]
    assert repr(ABSENT) == "ABSENT"


def test_old_table_id_width_from_post_header_length() -> None:
    """Sources before 5.1.4 wrote 4-byte table ids: the FDE says so with a post-header length of 6."""
    ctx = context([LONG])
    ctx.fde = fde_with(WRITE_ROWS_EVENT_V1=6)
    body = TABLE_ID.to_bytes(4, "little") + b"\x01\x00" + packed(1) + b"\x01" + image([LONG], [True], [9])
    assert decode_rows(E.WRITE_ROWS_EVENT_V1, body, ctx).rows() == [(None, (9,))]


def test_extra_row_info_ndb_and_partitions() -> None:
    cols = [LONG]
    ctx = context(cols)
    extra = bytes([0, 4, 7, 0xAB, 0xCD]) + bytes([1]) + (3).to_bytes(2, "little") + (5).to_bytes(2, "little")
    rows = image(cols, [True], [1]) + image(cols, [True], [2])
    ev = decode_rows(E.UPDATE_ROWS_EVENT, rows_body(1, [True], rows, [True], extra=extra), ctx)
    assert ev.extra is not None
    assert (ev.extra.ndb_format, ev.extra.ndb_data, ev.extra.partition_id, ev.extra.source_partition_id) == (
        7,
        b"\xab\xcd",
        3,
        5,
    )
    assert ev.rows() == [((1,), (2,))]
    write = decode_rows(E.WRITE_ROWS_EVENT, rows_body(1, [True], rows[:5], extra=b"\x01\x09\x00"), ctx)
    assert write.extra is not None and (write.extra.partition_id, write.extra.source_partition_id) == (9, None)


def test_bad_extra_row_info_is_malformed() -> None:
    ctx = context([LONG])
    with pytest.raises(MalformedError, match="extra row info") as err:
        decode_rows(E.WRITE_ROWS_EVENT, rows_body(1, [True], b"", extra=b"\x00\x09\x00"), ctx)
    assert err.value.pos == 100


def test_prototype_type_numbering_is_unsupported() -> None:
    """WL#2325 prototype logs number events differently: a 0-byte post-header for type 20 is no rows event."""
    ctx = DecodeContext(fde=synthetic_fde(checksum=False))  # MySQL 8 lengths: type 20 has none
    with pytest.raises(UnsupportedError, match="not a rows event"):
        decode_event(event(E.PRE_GA_WRITE_ROWS_EVENT, b"\x10" + bytes(7)), 4, ctx)


# -- missing table maps and malformed rows ----------------------------------------------------------------------


def test_missing_table_map_is_an_error_naming_the_position() -> None:
    ctx = DecodeContext(fde=synthetic_fde(checksum=False))
    ev = decode_rows(E.WRITE_ROWS_EVENT, rows_body(1, [True], image([LONG], [True], [1])), ctx, pos=555)
    assert ev.table_map is None and "(no table map)" in ev.summary()
    with pytest.raises(BinlogError, match="without its TABLE_MAP_EVENT") as err:
        ev.rows()
    assert err.value.pos == 555
    empty = decode_rows(E.WRITE_ROWS_EVENT, rows_body(1, [True], b""), ctx)
    assert empty.rows() == []  # nothing to decode: no map needed


def test_width_mismatch_with_table_map() -> None:
    ctx = context([LONG, LONG])
    ev = decode_rows(E.WRITE_ROWS_EVENT, rows_body(1, [True], image([LONG], [True], [1])), ctx)
    with pytest.raises(MalformedError, match="has 2"):
        ev.rows()


def test_truncated_row_names_column_and_offset() -> None:
    cols = [LONG, SHORT_VARCHAR]
    ctx = context(cols, ["id", "name"])
    good = image(cols, [True, True], [1, b"abc"])
    ev = decode_rows(E.WRITE_ROWS_EVENT, rows_body(2, [True, True], good + good[:-2]), ctx, pos=900)
    with pytest.raises(TruncatedError) as err:
        ev.rows()
    e = err.value
    assert e.pos == 900 and "column 2 `name`" in e.message
    # the second row starts at byte len(good) of the rows and its VARCHAR 5 bytes later
    assert ev.rows_offset == 19 + 8 + 2 + 1 + 1
    assert e.offset == ev.rows_offset + len(good) + 5


def test_zero_column_image_with_data_is_malformed() -> None:
    ctx = context([LONG])
    ev = decode_rows(E.WRITE_ROWS_EVENT, rows_body(1, [False], b"\x00"), ctx)
    with pytest.raises(MalformedError, match="no columns"):
        ev.rows()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=st.binary(max_size=60), kind=st.sampled_from([E.WRITE_ROWS_EVENT, E.UPDATE_ROWS_EVENT]))
def test_garbage_rows_raise_only_binlog_errors(garbage: bytes, kind: int) -> None:
    cols = [LONG, VARCHAR, DATETIME6, DECIMAL_12_2, BLOB, DOUBLE]
    ctx = context(cols)
    after = [True] * 6 if kind == E.UPDATE_ROWS_EVENT else None
    ev = decode_rows(kind, rows_body(6, [True] * 6, garbage, after), ctx)
    for typed in (True, False):
        try:
            ev.rows(typed)
        except BinlogError as e:
            assert e.pos == 100


# -- MariaDB compressed rows events -----------------------------------------------------------------------------


def compressed(data: bytes, lenlen: int = 0) -> bytes:
    n = lenlen or max(1, (len(data).bit_length() + 7) // 8)
    return bytes([0x80 | n]) + len(data).to_bytes(n, "big") + zlib.compress(data)


@pytest.mark.parametrize(
    ("code", "v2"),
    [(E.WRITE_ROWS_COMPRESSED_EVENT_V1, False), (E.WRITE_ROWS_COMPRESSED_EVENT, True)],
)
def test_compressed_write(code: int, v2: bool) -> None:
    cols = [LONG, BLOB]
    ctx = context(cols)
    rows = b"".join(image(cols, [True, True], [i, b"x" * i]) for i in range(50))
    ev = decode_rows(code, rows_body(2, [True, True], compressed(rows), v2=v2), ctx)
    assert ev.compressed and ev.rows_offset is None and ev.rows_data == rows
    assert ev.rows()[49] == (None, (49, b"x" * 49))


def test_compressed_update_and_delete() -> None:
    cols = [LONG]
    ctx = context(cols)
    rows = image(cols, [True], [1]) + image(cols, [True], [2])
    upd = decode_rows(E.UPDATE_ROWS_COMPRESSED_EVENT_V1, rows_body(1, [True], compressed(rows), [True], False), ctx)
    assert upd.rows() == [((1,), (2,))]
    dele = decode_rows(E.DELETE_ROWS_COMPRESSED_EVENT, rows_body(1, [True], compressed(rows)), ctx)
    assert dele.rows() == [((1,), None), ((2,), None)]


def test_compressed_row_error_names_uncompressed_byte() -> None:
    cols = [LONG, SHORT_VARCHAR]
    ctx = context(cols)
    rows = image(cols, [True, True], [1, b"abc"])[:-1]
    ev = decode_rows(E.WRITE_ROWS_COMPRESSED_EVENT_V1, rows_body(2, [True, True], compressed(rows), v2=False), ctx)
    with pytest.raises(TruncatedError, match="uncompressed rows") as err:
        ev.rows()
    assert err.value.offset is None and err.value.pos == 100


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"", "no compression header"),
        (b"\x01\x03" + zlib.compress(b"abc"), "no compression header"),
        (b"\x91\x03" + zlib.compress(b"abc"), "algorithm 1"),
        (b"\x85\x03", "bad length"),
        (b"\x81\x04" + zlib.compress(b"abc"), "header says 4"),
        (b"\x81\x02" + zlib.compress(b"abc"), "header says 2"),
        (b"\x81\x03" + b"not zlib", "zlib"),
        (b"\x84" + (1 << 30).to_bytes(4, "big") + zlib.compress(b"abc"), "over the limit"),
    ],
)
def test_mariadb_uncompress_errors(payload: bytes, match: str) -> None:
    with pytest.raises(DecompressionError, match=match):
        mariadb_uncompress(payload, 1 << 20)


def test_decompression_bound_comes_from_options() -> None:
    cols = [BLOB]
    ctx = context(cols)
    ctx.options = DecodeOptions(max_decompressed=100)
    rows = image(cols, [True], [b"z" * 500])
    with pytest.raises(DecompressionError, match="over the limit of 100") as err:
        decode_rows(E.WRITE_ROWS_COMPRESSED_EVENT_V1, rows_body(1, [True], compressed(rows), v2=False), ctx)
    assert err.value.pos == 100


# -- PARTIAL_UPDATE_ROWS ----------------------------------------------------------------------------------------

JSON = Col(T.JSON, b"\x04", lambda v: len(v).to_bytes(4, "little") + v, st.nothing())


def json_diff(op: int, path: str, value: object = None) -> bytes:
    out = bytes([op]) + packed(len(path)) + path.encode()
    if op != 2:
        doc = json_encode(value)
        out += packed(len(doc)) + doc
    return out


def test_partial_json_update_applies_every_diff_in_order() -> None:
    cols = [LONG, JSON, JSON]
    ctx = context(cols, ["id", "j", "k"])
    doc = json_encode({"a": 1, "b": [1, 2], "c": "x"})
    other = json_encode([1])
    diffs = json_diff(0, "$.a", 2) + json_diff(1, "$.b[1]", 9) + json_diff(2, "$.c")
    before = image(cols, [True] * 3, [1, doc, other])
    # value_options = PARTIAL_JSON_UPDATES, partial bits: column j (bit 0) only, then the image
    after = packed(1) + bitmap([True, False]) + image(cols, [True] * 3, [1, diffs, json_encode([2])])
    ev = decode_rows(E.PARTIAL_UPDATE_ROWS_EVENT, rows_body(3, [True] * 3, before + after, [True] * 3), ctx)
    assert ev.partial and ev.kind == "update"
    [(b, a)] = ev.rows()
    assert b == (1, '{"a": 1, "b": [1, 2], "c": "x"}', "[1]")
    assert a == (1, '{"a": 2, "b": [1, 9, 2]}', "[2]")
    [(_, raw_after)] = ev.rows(typed=False)
    assert raw_after is not None and isinstance(raw_after[1], list)
    assert [(d.operation.name, d.path) for d in raw_after[1]] == [
        ("REPLACE", "$.a"),
        ("INSERT", "$.b[1]"),
        ("REMOVE", "$.c"),
    ]


def test_partial_update_without_partial_values_and_minimal_before_image() -> None:
    cols = [LONG, JSON]
    ctx = context(cols)
    doc = json_encode({"a": 1})
    rows = image(cols, [True, False], [1, None]) + packed(0) + image(cols, [False, True], [None, doc])
    rows += (
        image(cols, [True, False], [2, None])
        + packed(1)
        + b"\x01"
        + image(cols, [False, True], [None, json_diff(0, "$.a", 5)])
    )
    ev = decode_rows(E.PARTIAL_UPDATE_ROWS_EVENT, rows_body(2, [True, False], rows, [False, True]), ctx)
    first, second = ev.rows()
    assert first == ((1, ABSENT), (ABSENT, '{"a": 1}'))
    # no before document to apply to (MINIMAL before image): the diffs themselves
    assert second[0] == (2, ABSENT) and second[1] is not None and isinstance(second[1][1], list)
    assert [d.path for d in second[1][1]] == ["$.a"]


def test_partial_update_diff_that_does_not_fit_is_malformed() -> None:
    cols = [JSON]
    ctx = context(cols)
    rows = image(cols, [True], [json_encode([1])]) + packed(1) + b"\x01" + image(cols, [True], [json_diff(0, "$.x", 1)])
    ev = decode_rows(E.PARTIAL_UPDATE_ROWS_EVENT, rows_body(1, [True], rows, [True]), ctx)
    with pytest.raises(MalformedError, match="column 1"):
        ev.rows()


# -- hypothesis round trips of whole rows -----------------------------------------------------------------------


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Col], list[bool], list[bool], list[list[object]], list[list[object]]]:
    cols = draw(st.lists(st.sampled_from(PALETTE), min_size=1, max_size=12))
    before = draw(st.lists(st.booleans(), min_size=len(cols), max_size=len(cols)).filter(any))
    after = draw(st.lists(st.booleans(), min_size=len(cols), max_size=len(cols)).filter(any))

    def row(present: list[bool]) -> list[object]:
        return [draw(st.none() | c.values) if p else None for c, p in zip(cols, present, strict=True)]

    n = draw(st.integers(1, 5))
    return cols, before, after, [row(before) for _ in range(n)], [row(after) for _ in range(n)]


def expected(values: list[object], present: list[bool]) -> tuple[object, ...]:
    return tuple(v if p else ABSENT for v, p in zip(values, present, strict=True))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=tables(), kind=st.sampled_from(["insert", "update", "delete"]))
def test_round_trip_whole_rows(
    layout: tuple[list[Col], list[bool], list[bool], list[list[object]], list[list[object]]], kind: str
) -> None:
    cols, before, after, rows_b, rows_a = layout
    ctx = context(cols)
    if kind == "update":
        data = b"".join(image(cols, before, b) + image(cols, after, a) for b, a in zip(rows_b, rows_a, strict=True))
        ev = decode_rows(E.UPDATE_ROWS_EVENT, rows_body(len(cols), before, data, after), ctx)
        want: list[tuple[object, object]] = [
            (expected(b, before), expected(a, after)) for b, a in zip(rows_b, rows_a, strict=True)
        ]
    else:
        code = E.WRITE_ROWS_EVENT if kind == "insert" else E.DELETE_ROWS_EVENT
        ev = decode_rows(code, rows_body(len(cols), before, b"".join(image(cols, before, r) for r in rows_b)), ctx)
        images = [expected(r, before) for r in rows_b]
        want = [(None, i) if kind == "insert" else (i, None) for i in images]
    got = ev.rows()
    assert got == want  # no NaN is generated
    assert ev.rows(typed=False) == got  # none of these types has a converter without a charset


@settings(max_examples=80, deadline=None)
@given(
    cols=st.lists(st.sampled_from(PALETTE[:10]), min_size=1, max_size=8),
    data=st.data(),
)
def test_inline_struct_reads_agree_with_the_value_readers(cols: list[Col], data: st.DataObject) -> None:
    """The decoder reads integer/float columns with struct in line; binlake.values.numeric must agree."""
    ctx = context(cols)
    tm = ctx.table_maps[TABLE_ID]
    nulls = data.draw(st.lists(st.booleans(), min_size=len(cols), max_size=len(cols)))
    raw = [data.draw(st.binary(min_size=len(c.pack(0)), max_size=len(c.pack(0)))) for c in cols]
    buf = bitmap(nulls) + b"".join(r for r, n in zip(raw, nulls, strict=True) if not n)
    [(_, got)] = row_decoder(tm.columns, "insert", bitmap([True] * len(cols)), typed=True).rows(buf)
    want = tuple(None if n else reader_for(c)(r, 0)[0] for c, r, n in zip(tm.columns, raw, nulls, strict=True))
    assert repr(got) == repr(want)


def test_decoders_are_built_once_per_layout() -> None:
    cols = [LONG, VARCHAR]
    ctx = context(cols)
    columns = ctx.table_maps[TABLE_ID].columns
    first = row_decoder(columns, "insert", b"\x03")
    assert row_decoder(columns, "insert", b"\x03") is first
    assert row_decoder(tuple(columns), "insert", b"\x03") is first  # equal layout, another tuple: same decoder
    assert row_decoder(columns, "insert", b"\x01") is not first
    assert row_decoder(columns, "insert", b"\x03", typed=False) is not first
