"""CHAR/VARCHAR/BLOB/compressed readers, converters and ``mariadb-binlog -vv`` rendering, on real binlogs."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import DecompressionError, MalformedError, TruncatedError
from binlake.values import enum_set, json_binary, spatial, strings, vector

from . import _binlog

T = ColumnType
MODULES = (strings, json_binary, enum_set, spatial, vector)
RENDER = {k: v for m in MODULES for k, v in m.RENDER.items()}
MARIADB = _binlog.CORPUS / "mariadb"


def corpus(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"corpus file {path.name} not present (expected under ../shared/corpus)")
    return path


def rows_of(path: Path, tables: set[str]) -> list[tuple[str, list[Column], list[object]]]:
    """(table, columns, image) of every row image of ``tables``, before images first, in file order."""
    out = []
    for ev in _binlog.events(corpus(path)):
        if ev.table.table in tables:
            for before, after in ev.rows:
                for image in (before, after):
                    if image is not None:
                        out.append((ev.table.table, ev.table.columns, image))
    return out


_ROW_START = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `[^`]*`\.`([^`]*)`$")
_VALUE = re.compile(rb"^###   @(\d+)=(.*) /\* [^\n]*\*/$")


def reference_rows(name: str, tables: set[str]) -> list[tuple[str, dict[int, str]]]:
    """Per row image of ``tables`` in mariadb-binlog's decoding: column number -> printed value."""
    path = corpus(MARIADB / "reference" / f"{name}.decode-rows-meta.txt.gz")
    out: list[tuple[str, dict[int, str]]] = []
    table = None
    for line in gzip.decompress(path.read_bytes()).split(b"\n"):
        m = _ROW_START.match(line)
        if m:
            table = m[2].decode()
            continue
        if line in (b"### SET", b"### WHERE") and table in tables:
            out.append((table, {}))
            continue
        v = _VALUE.match(line)
        if v and table in tables:
            out[-1][1][int(v[1])] = v[2].decode("utf-8", "surrogateescape")
    return out


@pytest.mark.parametrize(
    "tables", [{"t_char"}, {"t_varchar"}, {"t_blob"}, {"t_enum_set", "t_enum_big"}, {"t_geo"}, {"t_net"}]
)
def test_render_matches_mariadb_binlog(tables: set[str]) -> None:
    ours = rows_of(MARIADB / "binlogs" / "corpus-bin.000002", tables)
    ref = reference_rows("corpus-bin.000002", tables)
    assert len(ours) == len(ref) > 0
    checked = 0
    for (table, columns, image), (ref_table, printed) in zip(ours, ref, strict=True):
        assert table == ref_table
        for col, value in zip(columns, image, strict=True):
            render = RENDER.get(col.real_type_code)
            if render is None or col.index + 1 not in printed:
                continue
            expected = printed[col.index + 1]
            got = "NULL" if value is None else render(col, value)
            assert got == expected, (table, col.index + 1)
            checked += 1
    assert checked > 20


def typed_values(table: str) -> dict[int, list[object]]:
    """Converted values of ``table`` per row id (the first column), last image wins."""
    by_id: dict[int, list[object]] = {}
    for _, columns, image in rows_of(MARIADB / "binlogs" / "corpus-bin.000002", {table}):
        conv = []
        for col, value in zip(columns, image, strict=True):
            factory = {**strings.CONVERTERS, **enum_set.CONVERTERS}.get(col.real_type_code)
            c = factory(col) if factory else None
            conv.append(value if value is None or c is None else c(value))
        by_id.setdefault(image[0], conv)  # type: ignore[arg-type]
    return by_id


def test_char_values_decode_with_their_charsets() -> None:
    row = typed_values("t_char")[1]
    assert row[1:6] == ["", "a", "latin1 é", "utf8 ü€", "utf8mb4 😀"]
    assert row[7] == "😀" * 63 and row[8] == "ä" * 64 and row[12] == "😀" * 255
    assert row[13:16] == ["ucs2 ü€", "utf16 😀", "utf32 😀"]
    assert row[16] == "ß" * 100
    assert row[17:20] == ["ｶﾀｶﾅ日本", "中文汉字", "Привет"]
    assert row[20] == "nopad"  # CHAR drops trailing spaces in the row image, as SELECT does
    assert row[21:24] == ["čćđšž", "ÀÁÂ", "bin😀"]
    assert row[24] == b"\0"  # BINARY(1) 0x00 is stored empty and padded back
    assert row[25] == bytes(range(16)) and row[26] == b"\xff" * 255
    assert row[27] == b"cb" + bytes(8)  # CHAR(10) CHARACTER SET binary = BINARY(10)
    row4 = typed_values("t_char")[4]
    assert row4[3:5] == ["trail", " lead"] and row4[25] == b"A" + bytes(15)


def test_varchar_and_compressed_values() -> None:
    rows = typed_values("t_varchar")
    row = rows[1]
    assert row[3] == "a" * 255 and row[4] == "b" * 256 and row[9] == "日本語" * 666
    assert row[10] == "L" * 20000 and row[11] == "😀" * 100 and row[12] == "ü" * 50
    assert row[13:16] == [b"\xab" * 255, b"\xcd" * 256, bytes(3000)]
    assert row[16] == "compress me 😀 " * 60  # zlib-compressed VARCHAR COMPRESSED
    assert row[17] == b"\x01" * 1000  # VARBINARY COMPRESSED
    assert rows[4][16:18] == ["tiny", b"B"]  # stored uncompressed (header 0x00)


def test_blob_and_text_values() -> None:
    rows = typed_values("t_blob")
    row = rows[3]
    assert row[1] == b"\xff" * 255 and row[2] == b"B" * 65535 and row[3] == b"M" * 70000
    assert row[4] == b"L" * 100000 and row[6] == "t" * 255 and row[7] == "😀" * 16383
    assert row[8] == "€" * 30000 and row[9] == "😀" * 50000 and row[10] == "u" * 100
    assert row[11] == '{"a": 1, "b": [1, 2.5, "x", null, true, false], "c": {"d": "😀"}, "e": -1e-10}'
    assert row[12] == b"compressible " * 500 and row[13] == "текст " * 500
    assert rows[5][4] == bytes.fromhex("00FF7F80") * 1048576  # the ~4 MiB row


def col(code: int, meta: bytes, **kw: object) -> Column:
    return Column.build(0, code, meta).with_(**kw)


@given(st.binary(max_size=300), st.sampled_from([(T.VARCHAR, 255), (T.VARCHAR, 256), (T.VARCHAR, 65535)]))
def test_varchar_prefix_round_trip(value: bytes, spec: tuple[int, int]) -> None:
    code, length = spec
    c = col(code, length.to_bytes(2, "little"))
    n = 1 if length < 256 else 2
    if len(value) >= 1 << (8 * n):
        value = value[:255]
    buf = b"xx" + len(value).to_bytes(n, "little") + value + b"yy"
    assert strings.READERS[code](c)(buf, 2) == (value, 2 + n + len(value))


@given(st.binary(max_size=600), st.integers(1, 4))
def test_blob_prefix_round_trip(value: bytes, n: int) -> None:
    value = value[: (1 << (8 * n)) - 1]
    buf = len(value).to_bytes(n, "little") + value
    assert strings.READERS[T.BLOB](col(T.BLOB, bytes([n])))(buf, 0) == (value, len(buf))


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_truncated_values_raise(n: int) -> None:
    reader = strings.READERS[T.BLOB](col(T.BLOB, bytes([n])))
    with pytest.raises(TruncatedError):
        reader((10).to_bytes(n, "little") + b"abc", 0)
    with pytest.raises(TruncatedError):
        reader(b"\x05"[: n - 1], 0)


@given(st.binary(max_size=2000), st.booleans())
def test_uncompress_round_trip(value: bytes, raw_deflate: bool) -> None:
    if not value:
        assert strings.uncompress(b"", 10) == b""
        return
    nlen = max(1, (len(value).bit_length() + 7) // 8)
    c = zlib.compressobj(wbits=-15 if raw_deflate else 15)
    stored = bytes([0x80 + nlen + (8 if raw_deflate else 0)]) + len(value).to_bytes(nlen, "big")
    stored += c.compress(value) + c.flush()
    assert strings.uncompress(stored, len(value)) == value
    assert strings.uncompress(b"\x00" + value, len(value)) == value


def test_uncompress_refuses_bombs_and_garbage() -> None:
    bomb = b"\x8b" + (1 << 20).to_bytes(3, "big") + zlib.compress(bytes(1 << 20))[2:-4]
    with pytest.raises(DecompressionError):
        strings.uncompress(bomb, 1000)  # announces more than the column can hold
    deflate = zlib.compressobj(wbits=-15)
    lying = b"\x89\x10" + deflate.compress(bytes(1000)) + deflate.flush()  # announces 16 bytes, holds 1000
    with pytest.raises(DecompressionError):
        strings.uncompress(lying, 1 << 20)
    with pytest.raises(DecompressionError):
        strings.uncompress(b"\x89\x05garbage", 100)
    with pytest.raises(MalformedError):
        strings.uncompress(b"\x30abc", 100)


def test_invalid_bytes_stay_bytes() -> None:
    conv = strings.CONVERTERS[T.VARCHAR](col(T.VARCHAR, b"\x10\x00", charset=45))
    assert conv is not None
    assert conv(b"ok \xf0\x9f\x98\x80") == "ok 😀" and conv(b"\xff\xfe") == b"\xff\xfe"
    latin1 = strings.CONVERTERS[T.VARCHAR](col(T.VARCHAR, b"\x10\x00", charset=8))
    assert latin1 is not None and latin1(bytes(range(0x80, 0xA0)))[:3] == "€\x81‚"
    assert strings.CONVERTERS[T.VARCHAR](col(T.VARCHAR, b"\x10\x00")) is None  # charset unknown: bytes
    sjis = strings.CONVERTERS[T.VARCHAR](col(T.VARCHAR, b"\x10\x00", charset=13))
    assert sjis is not None and sjis(b"C:\x81\x5f") == "C:\\" and sjis(b"\x81") == b"\x81"  # a cut code: bytes
    # utf8mb3 shares utf8mb4's decoder (and the compiled UTF-8 path): a 4-byte code, which the server never stores
    # in utf8mb3, decodes too
    utf8mb3 = strings.CONVERTERS[T.VARCHAR](col(T.VARCHAR, b"\x10\x00", charset=33))
    assert utf8mb3 is not None and utf8mb3("😀".encode()) == "😀"
    # a surrogate code point (stored by utf8mb4, sent by SELECT as the invalid UTF-8 ED A0 80): bytes
    assert conv(b"\xed\xa0\x80") == b"\xed\xa0\x80"


def test_render_quoted_escapes_like_my_b_write_quoted() -> None:
    s = strings.render_quoted(b"a'\\\x00\x1f\x7f\xe9\xe2\x82\xac")
    assert s.encode("utf-8", "surrogateescape") == b"'a'\\\\x00\\x1f\x7f\xe9\xe2\x82\xac'"
