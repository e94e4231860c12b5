"""A minimal binlog walker for the value-family tests: just enough event parsing to get row images.

The real event layer lives in ``binlake.events``; these tests must not depend on it, so this helper reads only
what they need (FORMAT_DESCRIPTION checksum, TABLE_MAP with optional metadata, v1/v2/partial rows events) from
the real corpus files, and uses the value readers under test for every column.  Layouts follow MySQL's
``libs/mysql/binlog/event/rows_event.cpp`` and ``sql/log_event.cc``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from binlake.coltypes import Column, ColumnType, parse_field_metadata
from binlake.wire import read_packed_int

T = ColumnType
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"

# fixed stored sizes of the column types these tests do not decode themselves (sql/field.cc pack_length)
_FIXED = {
    T.TINY: 1,
    T.SHORT: 2,
    T.INT24: 3,
    T.LONG: 4,
    T.LONGLONG: 8,
    T.FLOAT: 4,
    T.DOUBLE: 8,
    T.YEAR: 1,
    T.DATE: 3,
    T.NEWDATE: 3,
    T.TIMESTAMP: 4,
    T.TIME: 3,
    T.DATETIME: 8,
}
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def _other_size(col: Column) -> int:
    code = col.real_type_code
    if code in _FIXED:
        return _FIXED[code]
    if code in (T.TIMESTAMP2, T.DATETIME2, T.TIME2):
        base = {T.TIMESTAMP2: 4, T.DATETIME2: 5, T.TIME2: 3}[T(code)]
        return base + ((col.fsp or 0) + 1) // 2
    if code == T.NEWDECIMAL:
        p, s = col.precision or 0, col.scale or 0
        ip, fp = p - s, s
        return ip // 9 * 4 + _DIG2BYTES[ip % 9] + fp // 9 * 4 + _DIG2BYTES[fp % 9]
    if code == T.BIT:
        return ((col.bits or 0) + 7) // 8
    raise NotImplementedError(col.real_type)


@dataclass
class TableMap:
    table_id: int
    schema: str
    table: str
    columns: list[Column]


@dataclass
class RowsEvent:
    type_code: int
    table: TableMap
    rows: list[tuple[list[object] | None, list[object] | None]] = field(default_factory=list)


def _packed(buf: bytes, pos: int) -> tuple[int, int]:
    value, pos = read_packed_int(buf, pos)
    assert value is not None
    return value, pos


def _optional_metadata(columns: list[Column], block: bytes) -> list[Column]:
    charsets: dict[int, int] = {}
    default_cs: int | None = None
    enum_vals: list[tuple[str, ...]] = []
    set_vals: list[tuple[str, ...]] = []
    dims: list[int] = []
    pos = 0
    while pos < len(block):
        kind = block[pos]
        n, pos = _packed(block, pos + 1)
        data, pos = block[pos : pos + n], pos + n
        if kind == 2:  # DEFAULT_CHARSET
            default_cs, p = _packed(data, 0)
            while p < len(data):
                idx, p = _packed(data, p)
                cs, p = _packed(data, p)
                charsets[idx] = cs
        elif kind == 3:  # COLUMN_CHARSET
            p, i = 0, 0
            while p < len(data):
                charsets[i], p = _packed(data, p)
                i += 1
        elif kind in (5, 6):  # SET_STR_VALUE, ENUM_STR_VALUE
            p = 0
            while p < len(data):
                count, p = _packed(data, p)
                names = []
                for _ in range(count):
                    ln, p = _packed(data, p)
                    names.append(data[p : p + ln].decode("utf-8", "surrogateescape"))
                    p += ln
                (set_vals if kind == 5 else enum_vals).append(tuple(names))
        elif kind == 13:  # VECTOR_DIMENSIONALITY
            p = 0
            while p < len(data):
                d, p = _packed(data, p)
                dims.append(d)
    out = []
    ci = 0
    for col in columns:
        changes: dict[str, object] = {}
        if col.is_character:
            cs = charsets.get(ci, default_cs)
            if cs is not None:
                changes["charset"] = cs
            ci += 1
        if col.real_type_code == T.ENUM and enum_vals:
            changes["enum_values"] = enum_vals.pop(0)
        if col.real_type_code == T.SET and set_vals:
            changes["set_values"] = set_vals.pop(0)
        if col.real_type_code == T.VECTOR and dims:
            changes["vector_dimension"] = dims.pop(0)
        out.append(col.with_(**changes) if changes else col)
    return out


def _table_map(body: bytes, post_len: int) -> TableMap:
    table_id = int.from_bytes(body[0:6], "little")
    pos = post_len
    n = body[pos]
    schema = body[pos + 1 : pos + 1 + n].decode()
    pos += n + 2
    n = body[pos]
    table = body[pos + 1 : pos + 1 + n].decode()
    pos += n + 2
    ncols, pos = _packed(body, pos)
    types = list(body[pos : pos + ncols])
    pos += ncols
    mlen, pos = _packed(body, pos)
    metas = parse_field_metadata(types, body[pos : pos + mlen])
    pos += mlen
    nulls = body[pos : pos + (ncols + 7) // 8]
    pos += (ncols + 7) // 8
    cols = [
        Column.build(i, t, raw, nullable=bool(nulls[i >> 3] & (1 << (i & 7))))
        for i, (t, (_, raw)) in enumerate(zip(types, metas, strict=True))
    ]
    return TableMap(table_id, schema, table, _optional_metadata(cols, body[pos:]))


Reader = Callable[[bytes, int], tuple[object, int]]


def family_reader(col: Column) -> Reader | None:
    """The reader of the value families under test (strings, JSON, ENUM/SET, GEOMETRY, VECTOR), else ``None``."""
    from binlake.values import enum_set, json_binary, spatial, strings, vector

    for module in (strings, json_binary, enum_set, spatial, vector):
        factory = module.READERS.get(col.real_type_code)
        if factory is not None:
            return factory(col)
    return None


def _image(
    buf: bytes, pos: int, readers: list[Reader | None], present: list[bool], sizes: list[int]
) -> tuple[list[object], int]:
    idx = [i for i, p in enumerate(present) if p]
    nb = (len(idx) + 7) // 8
    nulls = buf[pos : pos + nb]
    pos += nb
    values: list[object] = [None] * len(present)
    for k, i in enumerate(idx):
        if nulls[k >> 3] & (1 << (k & 7)):
            continue
        reader = readers[i]
        if reader is None:
            values[i] = buf[pos : pos + sizes[i]]
            pos += sizes[i]
        else:
            values[i], pos = reader(buf, pos)
    return values, pos


def events(path: Path, reader_for: Callable[[Column], Reader | None]) -> Iterator[RowsEvent]:
    """Every rows event of a binlog file with its decoded row images (stored values)."""
    data = path.read_bytes()
    assert data[:4] == b"\xfebin"
    pos = 4
    checksum = 0
    post_rows = 10
    post_tm = 8
    tables: dict[int, TableMap] = {}
    while pos + 19 <= len(data):
        etype = data[pos + 4]
        size = struct.unpack_from("<I", data, pos + 9)[0]
        body = data[pos + 19 : pos + size - checksum]
        if etype == 15:  # FORMAT_DESCRIPTION
            # body: version 2, server 50, ts 4, header len 1, post-header lengths..., [alg 1, crc 4]
            checksum = 4 if size - 19 > 57 + 4 and data[pos + size - 5] == 1 else 0
            body = data[pos + 19 : pos + size - checksum]
            post = body[57:]
            post_tm = post[19 - 1] if len(post) > 18 else 8
            post_rows = post[30 - 1] if len(post) > 29 else 10
        elif etype == 19:
            tm = _table_map(body, post_tm)
            tables[tm.table_id] = tm
        elif etype in (23, 24, 25, 30, 31, 32, 39):
            v2 = etype >= 30
            table = tables[int.from_bytes(body[0:6], "little")]
            p = 8 if not v2 else 8 + struct.unpack_from("<H", body, 8)[0]
            if not v2 and post_rows == 10:
                p = 8
            ncols, p = _packed(body, p)
            nb = (ncols + 7) // 8
            before_cols = [bool(body[p + (i >> 3)] & (1 << (i & 7))) for i in range(ncols)]
            p += nb
            after_cols = before_cols
            is_update = etype in (24, 31, 39)
            if is_update:
                after_cols = [bool(body[p + (i >> 3)] & (1 << (i & 7))) for i in range(ncols)]
                p += nb
            readers = [reader_for(c) for c in table.columns]
            sizes = [
                0 if r is not None else _other_size(c) for r, c in zip(readers, table.columns, strict=True)
            ]
            ev = RowsEvent(etype, table)
            while p < len(body):
                first, p = _image(body, p, readers, before_cols, sizes)
                if not is_update:
                    ev.rows.append((None, first) if etype in (23, 30) else (first, None))
                    continue
                if etype == 39:
                    opts, p = _packed(body, p)
                    if opts & 1:
                        njson = sum(1 for c in table.columns if c.real_type_code == T.JSON)
                        bits = body[p : p + (njson + 7) // 8]
                        p += (njson + 7) // 8
                        partial = [bool(bits[i >> 3] & (1 << (i & 7))) for i in range(njson)]
                        readers2 = list(readers)
                        j = 0
                        for i, c in enumerate(table.columns):
                            if c.real_type_code == T.JSON:
                                if partial[j]:
                                    readers2[i] = _partial_json_reader
                                j += 1
                        second, p = _image(body, p, readers2, after_cols, sizes)
                        ev.rows.append((first, second))
                        continue
                second, p = _image(body, p, readers, after_cols, sizes)
                ev.rows.append((first, second))
            yield ev
        pos += size


def _partial_json_reader(buf: bytes, pos: int) -> tuple[object, int]:
    n = int.from_bytes(buf[pos : pos + 4], "little")
    return ("diff", buf[pos + 4 : pos + 4 + n]), pos + 4 + n
