"""A binlog in which a private server wrote every character code of every charset it has, and what SELECT returns.

:func:`charset_binlog_server` starts a server of its own (the binlog is some 18 MB: other tests that ingest every
file of the session's server stay as they are) and :func:`write_charset_binlog` creates the database
``charset_codes`` with

* ``codes``: ``id`` and one ``LONGTEXT`` column ``c_<charset>`` per charset of ``SHOW CHARACTER SET`` but
  ``binary``; row *i* holds the *i*-th batch of the charset's codes (:func:`every_code`) one after another, NULL
  once they are all placed.  Codes start with a byte that says their length, so the batch splits back into them;
* ``names``: ``id``, an ENUM ``e_<charset>`` and a SET ``s_<charset>`` per charset, whose members are runs of
  codes sampled over the whole charset (the definition of one table holds some 32 KB of names, not every code);
  row *k* picks member *k* and a mix of SET members;
* ``surrogates``: the code points U+D800..U+DFFF, which utf8mb3, utf8mb4, ucs2 and utf32 store but ``SELECT``
  sends as the invalid UTF-8 ``ED A0 80``...: text columns holding all of them (row 1) or one high-low pair
  (row 2), and an ENUM member of each.

The rows are INSERTed under strict SQL mode, so the server accepts every code or the setup fails.  The expected
values are read back with PyMySQL over a utf8mb4 connection (text as a client gets it); ``surrogates`` with
``HEX()`` since those bytes are no UTF-8.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from binlake.events.rows import RowsEvent
from binlake.reader import read_events
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools
from binlake.values import charmap

DB = "charset_codes"
EXCLUDED = {"binary": "its values are bytes, not text (the BINARY/VARBINARY/BLOB tests cover them)"}
# the Unicode charsets: every code point (BMP only where the charset has no more), as Python encodes it
UNICODE = {
    "utf8mb3": ("utf-8", 0x10000),
    "utf8mb4": ("utf-8", 0x110000),
    "ucs2": ("utf-16-be", 0x10000),
    "utf16": ("utf-16-be", 0x110000),
    "utf16le": ("utf-16-le", 0x110000),
    "utf32": ("utf-32-be", 0x110000),
}
SURROGATES = {"utf8mb3": "utf-8", "utf8mb4": "utf-8", "ucs2": "utf-16-be", "utf32": "utf-32-be"}
SURROGATE_MEMBER = "x\ud800"
SURROGATE_PAIR = "\ud83d\ude00"  # two codes in these charsets, one character to UTF-16 (which ucs2 is not)
BATCH = {1: 4096, 2: 4096, 3: 4096, 4: 16384}  # codes per row by the charset's longest code (rows of at most 64 KB)
ENUM_CODES = 256  # codes sampled per ENUM column (all of a one-byte charset)
RUN = 16  # codes per ENUM/SET member name
SET_MEMBERS = 8


@cache
def every_code(charset: str) -> list[bytes]:
    """Every code of ``charset`` in ascending order: the shipped table's (test_charsets proves it is the server's),
    latin1's 256 bytes, or every code point of a Unicode charset but the surrogates."""
    if charset in UNICODE:
        encoding, end = UNICODE[charset]
        return [chr(cp).encode(encoding) for cp in range(end) if not 0xD800 <= cp < 0xE000]
    if charset == "latin1":
        return [bytes([b]) for b in range(256)]
    return sorted(charmap.load(charset).codes, key=lambda code: int.from_bytes(code, "big"))


def _sample(codes: list[bytes], n: int) -> list[bytes]:
    step = max(1, len(codes) // n)
    return codes[::step][:n]


def _hex(raw: bytes) -> str:
    return f"x'{raw.hex()}'"


def _members(column: str, value: Any) -> Any:
    """A SET column's value as a set of member names (PyMySQL gives ``'a,b'`` or a set, the lake a list)."""
    if not column.startswith("s_") or value is None:
        return value
    if isinstance(value, str):
        return frozenset(value.split(",")) if value else frozenset()
    return frozenset(value)


def differences(want: dict[int, dict[str, Any]], got: dict[int, dict[str, Any]]) -> list[str]:
    """Every cell where ``got`` (binlake's rows by id) is not ``want`` (the server's), the first differing
    character of a text named."""
    if set(got) != set(want):
        return [f"ids: binlake {sorted(got)}, server {sorted(want)}"]
    wrong = []
    for row_id, row in want.items():
        for column, expected in row.items():
            value = _members(column, got[row_id][column])
            if value == expected:
                continue
            where = ""
            if isinstance(value, str) and isinstance(expected, str):
                i = next((i for i, (g, w) in enumerate(zip(value, expected, strict=False)) if g != w), None)
                where = f" at character {i}" if i is not None else f" ({len(value)} against {len(expected)} characters)"
            shown = f"{type(value).__name__} of {len(value)}" if len(repr(value)) > 200 else repr(value)
            wrong.append(f"{column} row {row_id}{where}: binlake {shown}, server {expected!r:.200}")
    return wrong


@dataclass(frozen=True)
class CharsetBinlog:
    """The binlog files and, per table, ``{id: {column: value}}`` as SELECT returned it."""

    files: list[Path]
    charsets: dict[str, int]  # every charset of the server but the excluded ones -> its longest code
    codes: dict[int, dict[str, Any]]
    names: dict[int, dict[str, Any]]
    surrogates: dict[int, dict[str, bytes]]  # ``surrogates`` rows, the stored bytes of its text and ENUM columns
    code_count: int  # codes placed in ``codes``


def decoded_rows(files: list[Path], table: str) -> dict[int, dict[str, Any]]:
    """``{id: row}`` of ``charset_codes.<table>`` as binlake's Python API decodes the files (after images)."""
    rows: dict[int, dict[str, Any]] = {}
    for path in files:
        for ev in read_events(path):
            if (
                isinstance(ev, RowsEvent)
                and ev.table_map is not None
                and (ev.table_map.schema, ev.table_map.table) == (DB, table)
            ):
                for _before, after in ev.row_dicts():
                    assert after is not None
                    rows[after["id"]] = after
    return rows


@contextmanager
def charset_binlog_server() -> Iterator[tuple[MariaDBServer, CharsetBinlog]]:
    """A private server (skips where MariaDB is not installed) and the binlog it wrote; for a module fixture."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    with MariaDBServer() as server:
        yield server, write_charset_binlog(server)


def write_charset_binlog(server: MariaDBServer) -> CharsetBinlog:
    """Create and fill ``charset_codes`` on ``server`` (see the module doc), in binlog files of their own."""
    import pymysql

    charsets = {str(cs): int(str(n)) for cs, _, _, n in server.query("SHOW CHARACTER SET") if str(cs) not in EXCLUDED}
    server.flush_logs()
    first = server.current_binlog()
    stmts = [
        "SET sql_mode = 'STRICT_ALL_TABLES'; SET binlog_annotate_row_events = OFF;",  # no copy of the SQL in the log
        f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}; USE {DB};",
    ]
    # codes: every code of every charset
    cols = ", ".join(f"c_{cs} LONGTEXT CHARACTER SET {cs}" for cs in charsets)
    stmts.append(f"CREATE TABLE codes (id INT PRIMARY KEY, {cols});")
    batches = {}
    for cs, maxlen in charsets.items():
        codes = every_code(cs)
        size = BATCH[maxlen]
        batches[cs] = [b"".join(codes[i : i + size]) for i in range(0, len(codes), size)]
    code_count = sum(len(every_code(cs)) for cs in charsets)
    for row in range(max(map(len, batches.values()))):
        values = ", ".join(_hex(b[row]) if row < len(b) else "NULL" for b in batches.values())
        stmts.append(f"INSERT INTO codes VALUES ({row}, {values});")
    # names: ENUM and SET members in every charset
    enum_members, set_members = {}, {}
    for cs in charsets:
        sample = _sample(every_code(cs), ENUM_CODES)
        enum_members[cs] = [b"".join(sample[i : i + RUN]) for i in range(0, len(sample), RUN)]
        comma = ",".encode(UNICODE[cs][0]) if cs in UNICODE else b","
        no_comma = [c for c in sample if c != comma]
        set_members[cs] = [b"".join(no_comma[i : i + RUN]) for i in range(0, RUN * SET_MEMBERS, RUN)]
    cols = ", ".join(
        f"e_{cs} ENUM({', '.join(map(_hex, enum_members[cs]))}) CHARACTER SET {cs} COLLATE {cs}_bin, "
        f"s_{cs} SET({', '.join(map(_hex, set_members[cs]))}) CHARACTER SET {cs} COLLATE {cs}_bin"
        for cs in charsets
    )
    stmts.append(f"CREATE TABLE names (id INT PRIMARY KEY, {cols});")
    for k in range(1, max(map(len, enum_members.values())) + 1):
        values = ", ".join(f"{k if k <= len(enum_members[cs]) else 'NULL'}, {k * 37 % 256}" for cs in charsets)
        stmts.append(f"INSERT INTO names VALUES ({k}, {values});")
    # surrogates: code points the server stores that are no characters
    surrogate_text = "".join(map(chr, range(0xD800, 0xE000)))
    cols = ", ".join(
        f"c_{cs} TEXT CHARACTER SET {cs}, e_{cs} ENUM({_hex(SURROGATE_MEMBER.encode(enc, 'surrogatepass'))}) "
        f"CHARACTER SET {cs}"
        for cs, enc in SURROGATES.items()
    )
    stmts.append(f"CREATE TABLE surrogates (id INT PRIMARY KEY, {cols});")
    for row, text in enumerate((surrogate_text, SURROGATE_PAIR), 1):
        values = ", ".join(f"{_hex(text.encode(enc, 'surrogatepass'))}, 1" for enc in SURROGATES.values())
        stmts.append(f"INSERT INTO surrogates VALUES ({row}, {values});")
    server.execute("\n".join(stmts))
    server.flush_logs()
    files = [f for f in server.binlog_files() if f.name >= first.name and f != server.current_binlog()]

    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", charset="utf8mb4", database=DB)
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SELECT * FROM codes")
            codes_rows = {r["id"]: r for r in cur.fetchall()}
            cur.execute("SELECT * FROM names")
            names_rows = {r["id"]: {k: _members(k, v) for k, v in r.items()} for r in cur.fetchall()}
            cur.execute(
                "SELECT id, "
                + ", ".join(f"HEX(c_{cs}) AS c_{cs}, HEX(e_{cs}) AS e_{cs}" for cs in SURROGATES)
                + " FROM surrogates"
            )
            surrogates = {r.pop("id"): {col: bytes.fromhex(value) for col, value in r.items()} for r in cur.fetchall()}
    finally:
        conn.close()
    return CharsetBinlog(files, charsets, codes_rows, names_rows, surrogates, code_count)
