"""The differential oracle of ``test_oracle.py`` (Python API) and ``tests/spark/test_oracle_lake.py`` (the lake):
random tables and row changes written to a private MariaDB, decoded by binlake, compared with what ``SELECT``
returns.

Hypothesis draws a :class:`Table` (an ``id`` primary key somewhere among random columns of every type MariaDB
10.11 has: integers of every width, signed and unsigned, DECIMAL, FLOAT/DOUBLE, BIT, YEAR, the temporals with
fractional seconds and zero dates, strings and ENUM/SET in each of the 40 :data:`CHARSETS` (of each, the
characters of a pool and of binlake's table of it that the server stores), COMPRESSED strings and blobs,
JSON, the GEOMETRY family, INET4/INET6/UUID; some columns INVISIBLE, some generated VIRTUAL or STORED) and a list of
single-row INSERT/UPDATE/DELETE statements with edge values, plus a ``binlog_row_metadata`` (FULL, MINIMAL, NO_LOG:
a GLOBAL, set before the table's statements) and a ``binlog_row_image`` (FULL, MINIMAL, NOBLOB: per session).

:class:`Oracle` runs an example in its own binlog file (FLUSH BINARY LOGS before and after) and ``SELECT``s the
changed row after every statement through PyMySQL (typed results); :func:`api_differences` then walks binlake's
rows events of the file and compares every value an image carries with the server's row before or after that
statement, cell by cell.  :func:`lake_differences` compares a lake's current state with the table's final rows.

What a table map without FULL metadata cannot say is compared, for the Python API (which reads the map alone), as
what the image carries: without ENUM/SET names the member index or bit mask (MINIMAL, NO_LOG), without
signedness (NO_LOG) the integer read as signed, without a charset (NO_LOG) the string's bytes in the column's
charset.  The lake describes every column by :mod:`binlake.columns` (the table's CREATE TABLE is in the same
binlog): its values must be the server's whatever the metadata (``metadata="LAKE"``).  Zero and partial dates are
NULL in the lake by design (README, "The lake").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import ipaddress
import json
import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from binlake.events.rows import ABSENT, RowsEvent
from binlake.reader import read_events
from binlake.render.dump import DumpOptions, dump
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools
from binlake.values import charmap
from binlake.values.spatial import GEOMETRY_TYPES, Geometry

# The charsets of the string, ENUM and SET columns: every charset of MariaDB 10.11 (SHOW CHARACTER SET)
CHARSETS: tuple[str, ...] = (
    "utf8mb4", "utf8mb3", "latin1", "ucs2", "utf16", "utf16le", "utf32", "binary", "ascii", "latin2", "latin5",
    "latin7", "cp1250", "cp1251", "cp1256", "cp1257", "cp850", "cp852", "cp866", "koi8r", "koi8u", "greek", "hebrew",
    "tis620", "macce", "macroman", "dec8", "hp8", "swe7", "armscii8", "keybcs2", "geostd8", "big5", "gbk", "gb2312",
    "sjis", "cp932", "ujis", "eucjpms", "euckr",
)  # fmt: skip
METADATA: tuple[str, ...] = ("FULL", "MINIMAL", "NO_LOG")
ROW_IMAGES: tuple[str, ...] = ("FULL", "MINIMAL", "NOBLOB")
DATABASE = "oracle"

# Characters the generator tries in every charset; server_alphabets() keeps those a charset stores
_POOL = tuple(
    dict.fromkeys(
        [chr(c) for c in range(0x20, 0x7F)]
        + ["\t", "\n", "\r", "\0", "\\", "'", '"', "%", "_"]
        + [chr(c) for c in range(0xA0, 0x100)]
        + [chr(c) for c in range(0x400, 0x460)]
        + [chr(c) for c in range(0x391, 0x3CA)]
        + [chr(c) for c in range(0x4E00, 0x4E60)]
        + [chr(c) for c in range(0x3041, 0x3097)]
        + ["€", "™", "…", "–", "—", "‘", "’", "“", "”", "•", "¤", "\u00ad", "\ufffd", "\u0301", "ﬁ", "Ω", "＼", "～"]
        + [chr(c) for c in range(0xFF01, 0xFF20)]
        + [chr(c) for c in range(0x1F600, 0x1F610)]
        + ["\U00020000", "\U0002a6d6", "𝄞"]
    )
)
_UTF8MB4 = list(_POOL)  # JSON text (MariaDB's JSON is utf8mb4)
_ALPHABETS: dict[str, list[str]] = {}  # per charset, the characters its columns store (Oracle fills it)


def _candidates(charset: str) -> list[str]:
    """The pool, and for a charset binlake ships a server table for, some 400 of the characters in it."""
    out = list(_POOL)
    if charset in charmap.names():
        chars = sorted(set(charmap.load(charset).codes.values()))
        out += chars[:: max(1, len(chars) // 400)]
    return list(dict.fromkeys(out))


def server_alphabets(conn: Any) -> dict[str, list[str]]:
    """Per charset, the candidate characters the server stores in it (converted to the charset, a character it
    has no code for comes back as ``?``); what ``SELECT`` then returns for them is the oracle's business."""
    out = {}
    with conn.cursor() as cur:
        for cs in CHARSETS:
            if cs == "binary":
                continue
            text = "".join(_candidates(cs))
            cur.execute(f"SELECT CONVERT(CONVERT({_utf8_literal(text)} USING {cs}) USING utf8mb4)")
            (back,) = cur.fetchone()
            assert len(back) == len(text), cs
            out[cs] = [c for c, b in zip(text, back, strict=True) if b != "?" or c == "?"]
    return out


# Hypothesis settings of the oracle's tests: examples are slow (a server round trip per statement), shrink them
SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

# Issue 11's tables: GEOMETRY columns among strings in several charsets, a YEAR among integers of both signs
GEO = (
    "CREATE TABLE geo (id INT PRIMARY KEY, a VARCHAR(10) CHARACTER SET latin1, g GEOMETRY, "
    "b VARCHAR(10) CHARACTER SET utf8mb4, p POINT, c TEXT CHARACTER SET ucs2, e ENUM('x','y') CHARACTER SET latin1)"
)
GEO_ROW = (
    "INSERT INTO geo VALUES (1, 'é€', ST_GeomFromText('LINESTRING(1 2, 3 4)', 4326), 'ü😀', "
    "ST_GeomFromText('POINT(5 6)'), 'ñ中', 'y')"
)
# where the counts fit: DEFAULT_CHARSET overrides by index that GEOMETRY columns shift when they are not counted
GEO2 = (
    "CREATE TABLE geo2 (id INT PRIMARY KEY, g POINT, a VARCHAR(10) CHARACTER SET latin1, "
    "b VARCHAR(10) CHARACTER SET latin1, c VARCHAR(10) CHARACTER SET utf8mb4, d VARCHAR(10) CHARACTER SET latin1)"
)
GEO2_ROW = "INSERT INTO geo2 VALUES (1, ST_GeomFromText('POINT(1 1)'), 'à', 'ß', '😀€', 'ÿ')"
YR = "CREATE TABLE yr (id INT PRIMARY KEY, y YEAR, u INT UNSIGNED, s INT, ub BIGINT UNSIGNED, t TINYINT UNSIGNED)"
YR_ROW = "INSERT INTO yr VALUES (1, 2024, 4294967295, -1, 18446744073709551615, 255)"
YR_VALUES = {"id": 1, "y": 2024, "u": 4294967295, "s": -1, "ub": 18446744073709551615, "t": 255}
SETUP = f"{GEO}; {GEO_ROW}; {GEO2}; {GEO2_ROW}; {YR}; {YR_ROW}"

# ---------------------------------------------------------------------------------------------- columns


def _uniform(choices: Sequence[str]) -> st.SearchStrategy[str]:
    """One of ``choices``, each as likely (``sampled_from`` draws the first elements far more often, and the
    oracle needs every charset and type often)."""
    return st.randoms(use_true_random=False).map(lambda r: r.choice(list(choices)))


@dataclass(frozen=True)
class Column:
    """One column of a generated table: its DDL, how to draw values (SQL literals, ``None`` for NULL) and what the
    comparison needs to know."""

    name: str
    kind: str  # int year decimal float double bit text blob enum set json geometry inet6 inet4 uuid date ...
    ddl: str  # the type and attributes after the name
    values: st.SearchStrategy[str | None] | None  # None: a generated column
    unsigned: bool = False
    bits: int = 0  # integer width in bits
    fixed: bool = False  # CHAR/BINARY(n)

    def __repr__(self) -> str:
        return f"Column({self.name!r}, {self.ddl!r})"

    def select(self) -> list[str]:
        """The SELECT items of this column: its value as PyMySQL types it, then the bytes where binlake may give
        bytes (a string whose charset the table map does not log) or where the value is binary."""
        q = f"`{self.name}`"
        if self.kind == "float":
            return [f"CAST({q} AS DOUBLE)"]  # the stored single, widened exactly (the text rounds it)
        if self.kind in ("text", "json"):
            return [q, f"CAST({q} AS BINARY)"]
        if self.kind in ("enum", "set"):
            return [q, f"{q} + 0"]
        if self.kind in ("inet6", "uuid"):
            return [q, f"CAST({q} AS BINARY(16))"]
        if self.kind == "inet4":
            return [q, f"CAST({q} AS BINARY(4))"]
        return [q]


_INTS = {"TINYINT": 8, "SMALLINT": 16, "MEDIUMINT": 24, "INT": 32, "BIGINT": 64}


def _int_values(bits: int, unsigned: bool) -> st.SearchStrategy[str | None]:
    lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    edges = [lo, hi, 0, 1, -1 if not unsigned else 2, hi - 1, lo + 1, (1 << (bits - 1)) - 1, 1 << (bits - 2)]
    return st.one_of(st.none(), st.sampled_from([str(v) for v in edges if lo <= v <= hi]), st.integers(lo, hi).map(str))


@st.composite
def _int_column(draw: st.DrawFn, name: str) -> Column:
    type_name = draw(st.sampled_from(sorted(_INTS)))
    bits = _INTS[type_name]
    unsigned = draw(st.booleans())
    zerofill = unsigned and draw(st.integers(0, 9)) == 0
    ddl = type_name + (" UNSIGNED" if unsigned else "") + (" ZEROFILL" if zerofill else "")
    return Column(name, "int", ddl, _int_values(bits, unsigned), unsigned=unsigned, bits=bits)


@st.composite
def _decimal_column(draw: st.DrawFn, name: str) -> Column:
    precision = draw(st.sampled_from([1, 2, 9, 10, 18, 19, 20, 30, 38, 39, 50, 64, 65]) | st.integers(1, 65))
    scale = draw(st.sampled_from([0, min(precision, 38), min(precision, 30)]) | st.integers(0, min(precision, 38)))
    intg = precision - scale

    def literal(sign: str, whole: str, frac: str) -> str:
        return sign + (whole.lstrip("0") or "0") + ("." + frac if scale else "")

    digits = st.text("0123456789", min_size=0, max_size=intg).map(lambda s: s or "0")
    fracs = st.text("0123456789", min_size=scale, max_size=scale)
    drawn = st.builds(literal, st.sampled_from(["", "-"]), digits, fracs)
    edges = [literal(sign, "9" * intg, "9" * scale) for sign in ("", "-")] + [literal("-", "0", "0" * scale)]
    edges += [literal("", "0", "0" * (scale - 1) + "1")] if scale else []
    values = st.one_of(st.none(), st.sampled_from(edges), drawn)
    return Column(name, "decimal", f"DECIMAL({precision},{scale})", values)


def _float_literal(x: float) -> str:
    text = repr(x)
    return text if "e" in text or "inf" in text else text + "e0"


_FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45]
_FLOAT_EDGES += [1.1754943508222875e-38, 16777216.0, 0.1]
_DOUBLE_EDGES = [0.0, -0.0, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 2.2250738585072014e-308]
_DOUBLE_EDGES += [0.1, 1e15, 1e16, 123456789012345680.0, -1e-10, 9007199254740993.0]


def _float_column(name: str, double: bool) -> Column:
    floats = st.floats(allow_nan=False, allow_infinity=False, width=64 if double else 32)
    edges = _DOUBLE_EDGES if double else _FLOAT_EDGES
    values = st.one_of(st.none(), st.sampled_from(edges), floats).map(
        lambda x: None if x is None else _float_literal(x)
    )
    return Column(name, "double" if double else "float", "DOUBLE" if double else "FLOAT", values)


@st.composite
def _bit_column(draw: st.DrawFn, name: str) -> Column:
    n = draw(st.sampled_from([1, 7, 8, 9, 63, 64]) | st.integers(1, 64))
    edges = [0, 1, (1 << n) - 1, 1 << (n - 1)]
    values = st.one_of(st.none(), st.sampled_from(edges), st.integers(0, (1 << n) - 1)).map(
        lambda v: None if v is None else str(v)
    )
    return Column(name, "bit", f"BIT({n})", values, bits=n)


def _year_column(name: str) -> Column:
    values = st.one_of(st.none(), st.sampled_from([0, 1901, 2155, 1970, 2000]), st.integers(1901, 2155))
    return Column(name, "year", "YEAR", values.map(lambda v: None if v is None else str(v)))


def _utf8_literal(text: str) -> str:
    return "_utf8mb4 X'" + text.encode("utf-8").hex() + "'"


def _quoted(text: str) -> str:
    """A string literal in the connection's charset (utf8mb4), for where the grammar wants a plain literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _bytes_literal(data: bytes) -> str:
    return "X'" + data.hex() + "'"


def _text_values(charset: str, max_chars: int, fixed: bool, large: bool = False) -> st.SearchStrategy[str | None]:
    """SQL literals of strings of at most ``max_chars`` characters; ``large``: also one of 70,000 bytes (a length
    prefix of 3 bytes, and zlib at work in a COMPRESSED column)."""
    if charset == "binary":
        data = st.binary(max_size=max_chars)
        edges = [b"", b"\0", b"\xff" * max_chars, b" ", b"a\0b"] + ([bytes(range(256)) * 274] if large else [])
        return st.one_of(st.none(), st.sampled_from(edges), data).map(
            lambda b: None if b is None else _bytes_literal(b)
        )
    alphabet = _ALPHABETS[charset]
    # Hypothesis draws the first elements of a list most: the non-ASCII characters come first, and every one of them
    # is in some edge value (the alphabet cut into values of the column's size)
    other = [c for c in alphabet if not c.isascii()]
    text = st.text(st.sampled_from(other + [c for c in alphabet if c.isascii()]), max_size=max_chars)
    edges = [
        "",
        "a",
        " x"[: max(max_chars, 1)],
        *("".join(other[i : i + max_chars]) for i in range(0, len(other), max_chars)),
    ]
    edges += ["".join(alphabet[i % len(alphabet)] for i in range(17500))] if large else []
    values = st.one_of(st.sampled_from(edges), text)
    if fixed:  # the server strips the trailing spaces of CHAR values (no PAD_CHAR_TO_FULL_LENGTH)
        values = values.map(lambda s: s.rstrip(" "))
    return st.one_of(st.none(), values).map(lambda s: None if s is None else _utf8_literal(s))


_TEXT_TYPES = {"TINY": 60, "": 80, "MEDIUM": 80, "LONG": 80}


@st.composite
def _string_column(draw: st.DrawFn, name: str) -> Column:
    charset = draw(_uniform(CHARSETS))
    shape = draw(st.sampled_from(["CHAR", "VARCHAR", "TEXT"]))
    binary = charset == "binary"
    compressed = shape != "CHAR" and draw(st.integers(0, 5)) == 0
    if shape == "TEXT":
        size = draw(st.sampled_from(sorted(_TEXT_TYPES)))
        type_name = size + ("BLOB" if binary else "TEXT")
        n, fixed = _TEXT_TYPES[size], False
    else:
        n = draw(st.integers(1, 60))
        type_name = {"CHAR": "BINARY", "VARCHAR": "VARBINARY"}[shape] if binary else shape
        type_name += f"({n})"
        fixed = shape == "CHAR"
    ddl = type_name + ("" if binary else f" CHARACTER SET {charset}") + (" COMPRESSED" if compressed else "")
    kind = "blob" if binary else "text"
    large = type_name.startswith(("MEDIUM", "LONG"))
    return Column(name, kind, ddl, _text_values(charset, n, fixed, large), fixed=fixed)


@st.composite
def _enum_set_column(draw: st.DrawFn, name: str) -> Column:
    # not binary: binlake gives the member names of a binary ENUM/SET as str where SELECT gives bytes (the member
    # names' decoding belongs to binlake.values.enum_set; reported, not compared here)
    charset = draw(_uniform([c for c in CHARSETS if c != "binary"]))
    is_set = draw(st.booleans())
    alphabet = sorted((c for c in _ALPHABETS[charset] if c not in ",\0 "), key=str.isascii)  # non-ASCII first
    # up to 64 SET members (8 bytes), and ENUMs of more than 255 members (2-byte indexes)
    count = draw(st.integers(1, 12) | st.sampled_from([64, 9]) if is_set else st.integers(1, 12) | st.just(300))
    # distinct leading digits keep the members distinct under every collation; no trailing space, no comma
    names = tuple(f"{i:03d}" + draw(st.text(st.sampled_from(alphabet), max_size=4)) for i in range(count))
    quoted = ",".join(_quoted(m) for m in names)
    ddl = ("SET" if is_set else "ENUM") + f"({quoted})" + f" CHARACTER SET {charset}"
    if is_set:
        values = st.one_of(
            st.none(),
            st.just(""),
            st.lists(st.sampled_from(names), unique=True).map(lambda ms: ",".join(ms)),
        ).map(lambda s: None if s is None else _utf8_literal(s))
    else:
        values = st.one_of(st.none(), st.sampled_from(names).map(_utf8_literal))
    kind = "set" if is_set else "enum"
    return Column(name, kind, ddl, values)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(1 << 63), (1 << 64) - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.sampled_from(_UTF8MB4), max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(st.sampled_from(_UTF8MB4), max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


def _json_column(name: str) -> Column:
    values = st.one_of(st.none(), _JSON.map(lambda v: json.dumps(v, ensure_ascii=False)).map(_utf8_literal))
    return Column(name, "json", "JSON", values)


_GEOMETRY_TYPES = tuple(GEOMETRY_TYPES[code] for code in range(8))  # GEOMETRY, POINT, ..., GEOMETRYCOLLECTION
_COORD = st.one_of(st.integers(-1000, 1000).map(float), st.floats(-1e6, 1e6, allow_nan=False), st.just(-0.0))


@st.composite
def _wkt(draw: st.DrawFn, kind: str) -> str:
    def pt() -> str:
        return f"{draw(_COORD)!r} {draw(_COORD)!r}"

    def line() -> str:
        return "(" + ", ".join(pt() for _ in range(draw(st.integers(2, 4)))) + ")"

    def ring() -> str:
        x, y, d = draw(_COORD), draw(_COORD), draw(st.floats(0.5, 100))
        return f"({x!r} {y!r}, {x + d!r} {y!r}, {x + d!r} {y + d!r}, {x!r} {y!r})"

    if kind == "GEOMETRY":
        kind = draw(st.sampled_from(_GEOMETRY_TYPES[1:]))
    if kind == "POINT":
        return f"POINT({pt()})"
    if kind == "LINESTRING":
        return "LINESTRING" + line()
    if kind == "POLYGON":
        return f"POLYGON({ring()})"
    if kind == "MULTIPOINT":
        return "MULTIPOINT(" + ", ".join(f"({pt()})" for _ in range(draw(st.integers(1, 3)))) + ")"
    if kind == "MULTILINESTRING":
        return "MULTILINESTRING(" + ", ".join(line() for _ in range(draw(st.integers(1, 3)))) + ")"
    if kind == "MULTIPOLYGON":
        return "MULTIPOLYGON(" + ", ".join(f"({ring()})" for _ in range(draw(st.integers(1, 2)))) + ")"
    parts = [draw(_wkt(draw(st.sampled_from(_GEOMETRY_TYPES[1:7])))) for _ in range(draw(st.integers(0, 3)))]
    return "GEOMETRYCOLLECTION(" + ", ".join(parts) + ")" if parts else "GEOMETRYCOLLECTION EMPTY"


@st.composite
def _geometry_column(draw: st.DrawFn, name: str) -> Column:
    kind = draw(_uniform(_GEOMETRY_TYPES))
    srid = st.sampled_from([0, 4326, 3857, 1, 2147483647])
    literal = st.builds(lambda wkt, s: f"ST_GeomFromText('{wkt}', {s})", _wkt(kind), srid)
    return Column(name, "geometry", kind, st.one_of(st.none(), literal))


def _net_column(name: str, kind: str) -> Column:
    size = {"inet6": 16, "inet4": 4, "uuid": 16}[kind]
    edges = [b"\0" * size, b"\xff" * size, b"\0" * (size - 1) + b"\1"]

    def text(b: bytes) -> str:
        if kind == "inet6":
            return str(ipaddress.IPv6Address(b))
        if kind == "inet4":
            return str(ipaddress.IPv4Address(b))
        return str(uuid.UUID(bytes=b))

    if kind == "uuid":  # the server takes RFC 4122 UUIDs; time-based (version 1) ones are stored swapped
        raw = st.one_of(
            st.just(b"\0" * 16), st.uuids(version=4).map(lambda u: u.bytes), st.uuids(version=1).map(lambda u: u.bytes)
        )
    else:
        raw = st.one_of(st.sampled_from(edges), st.binary(min_size=size, max_size=size))
    values = st.one_of(st.none(), raw.map(lambda b: f"'{text(b)}'"))
    return Column(name, kind, kind.upper(), values)


@st.composite
def _date_text(draw: st.DrawFn, zero: bool = True) -> str:
    if zero and draw(st.integers(0, 7)) == 0:
        return draw(st.sampled_from(["0000-00-00", "2020-00-15", "2020-02-00", "0000-01-01", "9999-00-00"]))
    d = draw(st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)) | st.sampled_from([dt.date(1000, 1, 1)]))
    return d.isoformat()


def _fraction(fsp: int) -> st.SearchStrategy[str]:
    if not fsp:
        return st.just("")
    return st.one_of(
        st.just("." + "9" * fsp),
        st.just("." + "0" * fsp),
        st.text("0123456789", min_size=fsp, max_size=fsp).map(lambda s: "." + s),
    )


@st.composite
def _temporal_column(draw: st.DrawFn, name: str) -> Column:
    kind = draw(_uniform(["date", "datetime", "timestamp", "time"]))
    fsp = 0 if kind == "date" else draw(st.integers(0, 6))
    ddl = kind.upper() + (f"({fsp})" if fsp else "") + (" NULL" if kind == "timestamp" else "")
    clock = st.times().map(lambda t: t.strftime("%H:%M:%S"))
    if kind == "date":
        text = _date_text()
    elif kind == "datetime":
        text = st.builds(lambda d, c, f: f"{d} {c}{f}", _date_text(), clock, _fraction(fsp))
    elif kind == "timestamp":
        epoch = dt.datetime(1970, 1, 1, 0, 0, 1)
        stamps = st.datetimes(epoch, dt.datetime(2038, 1, 19, 3, 14, 7)).map(lambda t: t.strftime("%Y-%m-%d %H:%M:%S"))
        zero = st.just("0000-00-00 00:00:00")
        text = st.builds(lambda s, f: s if s.startswith("0000") else s + f, st.one_of(zero, stamps), _fraction(fsp))
    else:

        def time_text(sign: str, h: int, m: int, s: int, frac: str) -> str:
            if h == 838 and m == 59 and s == 59:
                frac = ""  # '838:59:59.5' is out of range
            return f"{sign}{h}:{m:02d}:{s:02d}{frac}"

        text = st.builds(
            time_text,
            st.sampled_from(["", "-"]),
            st.integers(0, 838) | st.sampled_from([0, 838]),
            st.integers(0, 59),
            st.integers(0, 59),
            _fraction(fsp),
        )
    values = st.one_of(st.none(), text.map(lambda t: f"'{t}'"))
    return Column(name, kind, ddl, values)


_MAKERS: dict[str, Callable[[str], st.SearchStrategy[Column]]] = {
    "int": _int_column,
    "decimal": _decimal_column,
    "float": lambda n: st.just(_float_column(n, False)),
    "double": lambda n: st.just(_float_column(n, True)),
    "bit": _bit_column,
    "year": lambda n: st.just(_year_column(n)),
    "string": _string_column,
    "enumset": _enum_set_column,
    "json": lambda n: st.just(_json_column(n)),
    "geometry": _geometry_column,
    "inet6": lambda n: st.just(_net_column(n, "inet6")),
    "inet4": lambda n: st.just(_net_column(n, "inet4")),
    "uuid": lambda n: st.just(_net_column(n, "uuid")),
    "temporal": _temporal_column,
}
# every kind, strings three times and ENUM/SET twice: forty charsets share them
_KINDS = [*sorted(_MAKERS), "string", "string", "enumset"]
_GENERATED = [  # (kind, type, expression of the id): VIRTUAL or STORED columns
    ("int", "BIGINT", "`id` * 7 - 3"),
    ("text", "VARCHAR(30) CHARACTER SET utf8mb4", "CONCAT('g', `id`, 'é')"),
    ("decimal", "DECIMAL(12,2)", "`id` / 4"),
]


# ---------------------------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class Op:
    """One statement: ``insert``/``update`` with values by column name (SQL literals), or ``delete``."""

    kind: str
    id: int
    values: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class Table:
    """A generated table (definition order, ``id`` included), its statements and the binlog settings."""

    name: str
    columns: tuple[Column, ...]
    invisible: frozenset[str]
    ops: tuple[Op, ...]
    metadata: str
    row_image: str

    def create_sql(self) -> str:
        parts = []
        for c in self.columns:
            extra = " NOT NULL PRIMARY KEY" if c.name == "id" else ""
            parts.append(f"`{c.name}` {c.ddl}{extra}" + (" INVISIBLE" if c.name in self.invisible else ""))
        return f"CREATE TABLE `{DATABASE}`.`{self.name}` ({', '.join(parts)}) ENGINE=InnoDB"

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


@st.composite
def tables(draw: st.DrawFn, name: str) -> Table:
    """A random table named ``name`` with its statements and binlog settings."""
    kinds = draw(st.lists(_uniform(_KINDS), min_size=3, max_size=16))
    columns = [draw(_MAKERS[k](f"c{i}_{k}")) for i, k in enumerate(kinds)]
    for i in range(draw(st.integers(0, 2))):
        kind, type_name, expr = draw(st.sampled_from(_GENERATED))
        how = draw(st.sampled_from(["VIRTUAL", "STORED"]))
        columns.append(Column(f"g{i}_{how.lower()}", kind, f"{type_name} AS ({expr}) {how}", None))
    columns = draw(st.permutations(columns))
    at = draw(st.integers(0, len(columns)))
    columns.insert(at, Column("id", "int", "INT", None, bits=32))
    plain = [c for c in columns if c.values is not None]
    invisible = frozenset(c.name for c in plain if draw(st.integers(0, 6)) == 0)
    ops: list[Op] = []
    live: list[int] = []
    next_id = draw(st.sampled_from([1, -2147483648, 2147483647 - 20, 0]))
    for _ in range(draw(st.integers(2, 12))):
        kind = draw(st.sampled_from(["insert", "insert", "insert", "update", "update", "delete"])) if live else "insert"
        if kind == "insert":
            chosen = [c for c in plain if draw(st.integers(0, 5)) > 0]
            ops.append(Op("insert", next_id, tuple((c.name, draw(c.values)) for c in chosen)))  # type: ignore[arg-type]
            live.append(next_id)
            next_id += 1
        elif kind == "update":
            target = draw(st.sampled_from(live))
            chosen = draw(st.lists(st.sampled_from(plain), min_size=1, max_size=len(plain), unique_by=lambda c: c.name))
            ops.append(Op("update", target, tuple((c.name, draw(c.values)) for c in chosen)))  # type: ignore[arg-type]
        else:
            target = draw(st.sampled_from(live))
            live.remove(target)
            ops.append(Op("delete", target))
    return Table(
        name,
        tuple(columns),
        invisible,
        tuple(ops),
        draw(_uniform(METADATA)),
        draw(_uniform(ROW_IMAGES)),
    )


# ---------------------------------------------------------------------------------------------- running


Snapshot = dict[str, tuple[Any, ...]]  # column name -> its SELECT items (Column.select) for one row


@dataclass
class Change:
    """A statement that changed a row, with the row before (``None`` for an insert) and after (``None``: delete)."""

    op: Op
    before: Snapshot | None
    after: Snapshot | None


@dataclass
class Run:
    """What running a :class:`Table` left: its binlog file, the row changes in order, the final rows by id."""

    table: Table
    binlog: Path
    changes: list[Change]
    final: dict[int, Snapshot]


@contextlib.contextmanager
def private_oracle() -> Iterator[Oracle]:
    """An :class:`Oracle` on a private server of its own (skips the test where MariaDB is not installed)."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    with MariaDBServer() as server:
        oracle = Oracle(server)
        try:
            yield oracle
        finally:
            oracle.close()


class Oracle:
    """Runs tables on one server through one PyMySQL connection (the server is the caller's)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", charset="utf8mb4", autocommit=True)
        self._sql(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
        if not _ALPHABETS:
            _ALPHABETS.update(server_alphabets(self.conn))
        self._sql("SET time_zone = '+00:00'")

    def close(self) -> None:
        self._sql("SET GLOBAL binlog_row_metadata = FULL")
        self.conn.close()

    def _sql(self, sql: str) -> tuple[int, list[tuple[Any, ...]]]:
        with self.conn.cursor() as cur:
            try:
                n = cur.execute(sql)
            except Exception as e:
                raise AssertionError(f"the server refused a generated statement: {e}\n{sql[:2000]}") from e
            return n, list(cur.fetchall())

    def _row(self, table: Table, row_id: int) -> Snapshot | None:
        items = [(c.name, c.select()) for c in table.columns]
        sel = ", ".join(", ".join(s) for _, s in items)
        _, rows = self._sql(f"SELECT {sel} FROM `{DATABASE}`.`{table.name}` WHERE `id` = {row_id}")
        if not rows:
            return None
        flat, snap, i = rows[0], {}, 0
        for name, s in items:
            snap[name] = tuple(flat[i : i + len(s)])
            i += len(s)
        return snap

    def run(self, table: Table) -> Run:
        self._sql(f"SET GLOBAL binlog_row_metadata = {table.metadata}")
        self._sql(f"SET SESSION binlog_row_image = {table.row_image}")
        self._sql("FLUSH BINARY LOGS")
        _, status = self._sql("SHOW MASTER STATUS")
        binlog = self.server.datadir / status[0][0]
        self._sql(table.create_sql())
        changes: list[Change] = []
        rows: dict[int, Snapshot] = {}
        for op in table.ops:
            t = f"`{DATABASE}`.`{table.name}`"
            if op.kind == "insert":
                names = ", ".join(["`id`", *(f"`{n}`" for n, _ in op.values)])
                vals = ", ".join([str(op.id), *("NULL" if v is None else v for _, v in op.values)])
                sql = f"INSERT INTO {t} ({names}) VALUES ({vals})"
            elif op.kind == "update":
                sets = ", ".join(f"`{n}` = {'NULL' if v is None else v}" for n, v in op.values)
                sql = f"UPDATE {t} SET {sets} WHERE `id` = {op.id}"
            else:
                sql = f"DELETE FROM {t} WHERE `id` = {op.id}"
            n, _ = self._sql(sql)
            if n:
                after = None if op.kind == "delete" else self._row(table, op.id)
                changes.append(Change(op, rows.get(op.id), after))
                if after is None:
                    rows.pop(op.id, None)
                else:
                    rows[op.id] = after
        self._sql("FLUSH BINARY LOGS")
        return Run(table, binlog, changes, rows)


# ---------------------------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class Difference:
    """One cell where binlake and the server disagree."""

    table: str
    column: str
    type: str
    sql_value: Any
    binlake_value: Any
    where: str

    def __str__(self) -> str:
        return (
            f"{self.table}.{self.column} {self.type} ({self.where}): SELECT gives {self.sql_value!r}, "
            f"binlake {self.binlake_value!r}"
        )


@dataclass
class Tally:
    """Figures of a run: tables, columns and values compared."""

    tables: int = 0
    columns: int = 0
    values: int = 0
    files: int = 0
    equal_dumps: int = 0  # files mariadb-binlog printed (and binlake dump printed the same)
    uncarried: int = 0  # lake cells no row image carried, not compared
    by_setting: dict[str, int] = field(default_factory=dict)

    def add_table(self, table: Table) -> None:
        self.tables += 1
        self.columns += len(table.columns)
        key = f"{table.metadata}/{table.row_image}"
        self.by_setting[key] = self.by_setting.get(key, 0) + 1


def _no_trailing_zeros(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _time_text(td: dt.timedelta) -> str:
    sign = "-" if td < dt.timedelta(0) else ""
    us = abs(td) // dt.timedelta(microseconds=1)
    secs, frac = divmod(us, 1_000_000)
    h, rest = divmod(secs, 3600)
    return _no_trailing_zeros(f"{sign}{h:02d}:{rest // 60:02d}:{rest % 60:02d}.{frac:06d}")


def _temporal_text(v: Any) -> str:
    if isinstance(v, dt.timedelta):
        return _time_text(v)
    if isinstance(v, dt.datetime):
        return _no_trailing_zeros(v.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds"))
    if isinstance(v, dt.date):
        return v.isoformat()
    # PyMySQL's text of a date Python cannot hold ('0000-00-00'), binlake's InvalidDate/InvalidDatetime
    return _no_trailing_zeros(str(v))


def _float_key(v: Any) -> Any:
    return v if not isinstance(v, float) else (v, math.copysign(1.0, v))


def expected_and_got(col: Column, snap: tuple[Any, ...], value: Any, metadata: str) -> tuple[Any, Any]:
    """The server's value and binlake's ``value`` of ``col``, both in one comparable form (``metadata`` ``LAKE``:
    nothing the table map leaves out is excused)."""
    server = snap[0]
    if value is None or server is None:
        return server, value
    kind = col.kind
    if kind in ("int", "year"):
        if metadata == "NO_LOG" and col.unsigned and isinstance(value, int) and value < 0:
            value += 1 << col.bits  # no signedness logged: the image's bits read as signed
        return server, value
    if kind == "decimal":  # every digit, the scale's trailing zeros included (str() gives 0E-27 for some zeros)
        return format(server, "f"), format(value if not isinstance(value, str) else Decimal(value), "f")
    if kind in ("float", "double"):
        return _float_key(float(server)), _float_key(value)
    if kind == "bit":
        return int.from_bytes(server, "big"), value
    if kind in ("text", "json"):
        if isinstance(value, bytes) and metadata != "LAKE":  # no charset logged: the bytes in the column's charset
            return snap[1], value
        return server, value
    if kind == "blob":
        if metadata == "NO_LOG" and col.fixed:  # BINARY(n): the image holds it without its trailing zero bytes,
            return server.rstrip(b"\0"), value  # and without the charset binlake cannot know to pad it back
        return server, value
    if kind in ("enum", "set"):
        index = snap[1]
        if isinstance(value, int) and metadata != "LAKE":  # no member names logged: the index or the bit mask
            return int(index) % (1 << 64), value
        if kind == "set":
            return frozenset(m for m in server.split(",") if m), frozenset(value)
        return server, value
    if kind == "geometry":
        if isinstance(value, Geometry):
            return server, value.srid.to_bytes(4, "little") + value.wkb
        return server, value
    if kind in ("inet6", "inet4", "uuid"):
        return (snap[1].rstrip(b"\0") if metadata == "NO_LOG" else snap[1]), value  # as BINARY(n), above
    if kind in ("date", "datetime", "timestamp", "time"):
        return _temporal_text(server), _temporal_text(value)
    return server, value


def _compare_image(
    table: Table, image: Sequence[Any], snap: Snapshot, where: str, out: list[Difference], tally: Tally
) -> None:
    for col, value in zip(table.columns, image, strict=True):
        if value is ABSENT:
            continue
        want, got = expected_and_got(col, snap[col.name], value, table.metadata)
        tally.values += 1
        if want != got:
            out.append(
                Difference(table.name, col.name, col.ddl, want, got, f"{where}, {table.metadata}/{table.row_image}")
            )


def rows_events(path: Path, table: str) -> list[RowsEvent]:
    return [
        ev
        for ev in read_events(path)
        if isinstance(ev, RowsEvent) and ev.table_map is not None and ev.table_map.table == table
    ]


def api_differences(run: Run, tally: Tally) -> list[Difference]:
    """Every value binlake's Python API gives for the run's row images against the server's rows."""
    out: list[Difference] = []
    table = run.table
    images = [(ev, before, after) for ev in rows_events(run.binlog, table.name) for before, after in ev.rows()]
    kinds = [ev.kind for ev, _, _ in images]
    want_kinds = [c.op.kind for c in run.changes]
    if len(kinds) != len(want_kinds) or any(not k.startswith(w[:6]) for k, w in zip(kinds, want_kinds, strict=False)):
        out.append(Difference(table.name, "*", "rows events", want_kinds, kinds, "events"))
        return out
    for i, ((_, before, after), change) in enumerate(zip(images, run.changes, strict=True)):
        if before is not None and change.before is not None:
            _compare_image(table, before, change.before, f"change {i + 1} ({change.op.kind}) before", out, tally)
        if after is not None and change.after is not None:
            _compare_image(table, after, change.after, f"change {i + 1} ({change.op.kind}) after", out, tally)
    return out


def _lake_value(col: Column, v: Any) -> Any:
    """A lake cell in the form binlake's Python API gives (so :func:`expected_and_got` compares it)."""
    if v is None:
        return None
    if col.kind == "geometry":
        return Geometry(int(v["srid"]), bytes(v["wkb"]))
    if col.kind in ("int", "year", "bit"):
        return int(v)
    if col.kind == "set" and isinstance(v, list):
        return frozenset(v)
    if col.kind == "set":
        return int(v)
    if col.kind == "time" and isinstance(v, str):
        return v
    if col.kind == "float":
        return float(v)
    return v


def _carried(run: Run) -> dict[int, set[str]]:
    """Per row left at the end, the columns some image since its insert carried (binlog_row_image MINIMAL and
    NOBLOB leave columns out; a VIRTUAL column a MINIMAL insert leaves out is in no image at all)."""
    table = run.table
    carried: dict[int, set[str]] = {}
    images = [after for ev in rows_events(run.binlog, table.name) for _, after in ev.rows(typed=False)]
    for change, after in zip(run.changes, images, strict=False):
        if change.op.kind == "delete" or after is None:
            carried.pop(change.op.id, None)
            continue
        present = {c.name for c, v in zip(table.columns, after, strict=True) if v is not ABSENT}
        carried[change.op.id] = present | (carried.get(change.op.id, set()) if change.op.kind == "update" else set())
    return carried


def lake_differences(run: Run, current: list[dict[str, Any]], tally: Tally) -> list[Difference]:
    """The lake's current state of the run's table (``current``: its rows) against the server's final rows; a
    column no image of the row carried is not compared (the binlog does not have its value)."""
    table = run.table
    where = f"{table.metadata}/{table.row_image}"
    out: list[Difference] = []
    got = {int(r["id"]): r for r in current}
    if sorted(got) != sorted(run.final):
        return [Difference(table.name, "id", "primary key", sorted(run.final), sorted(got), f"rows, {where}")]
    carried = _carried(run)
    for row_id, snap in run.final.items():
        for col in table.columns:
            if col.name not in got[row_id]:
                out.append(Difference(table.name, col.name, col.ddl, "a column", "missing", f"current, {where}"))
                continue
            if col.name not in carried[row_id]:
                tally.uncarried += 1
                continue
            value = _lake_value(col, got[row_id][col.name])
            want, have = expected_and_got(col, snap[col.name], value, "LAKE")
            if col.kind in ("date", "datetime", "timestamp") and want is not None and _zero_part(want):
                want = None  # zero and partial dates are NULL in the lake (README)
            tally.values += 1
            if want != have:
                out.append(Difference(table.name, col.name, col.ddl, want, have, f"current, id {row_id}, {where}"))
    return out


def _zero_part(text: Any) -> bool:
    s = str(text)
    return s.startswith("0000") or s[4:8] == "-00-" or s[7:10] == "-00"


FORWARD = ["--base64-output=DECODE-ROWS", "-vv", "--print-table-metadata"]


def check_dump(server: Any, path: Path, tally: Tally) -> None:
    """``binlake dump`` reads the file, and prints what ``mariadb-binlog`` prints where that succeeds."""
    out = io.BytesIO()
    assert dump([str(path)], DumpOptions(table_metadata=True), out) == 0, path
    rc, ref, err = server.mariadb_binlog(FORWARD, path)
    if rc == 0:
        assert out.getvalue() == ref, (path, err)
        tally.equal_dumps += 1
    tally.files += 1


def summary(tally: Tally, differences: Iterable[Difference]) -> str:
    diffs = list(differences)
    settings_ = ", ".join(f"{k} {v}" for k, v in sorted(tally.by_setting.items()))
    text = f"{tally.tables} tables, {tally.columns} columns, {tally.values} values compared, {len(diffs)} differences"
    text += f" (metadata/row image: {settings_}); {tally.files} binlog files dumped, {tally.equal_dumps} equal to"
    text += " mariadb-binlog's text (it printed the others only in part)"
    return text + (f"; {tally.uncarried} cells no row image carried" if tally.uncarried else "")
