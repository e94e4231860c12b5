"""The SQL writer's literals and statements without a server (the replay and rollback tests run them on one), and
the ``binlake changes`` command line."""

from __future__ import annotations

import datetime as dt
import io
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.render.changes.sql import _quote, sql_literal
from binlake.values.temporal import InvalidDate, InvalidDatetime

T = ColumnType
_UNESCAPE = {"0": "\0", "n": "\n", "r": "\r", "Z": "\x1a", "'": "'", "\\": "\\"}


def _read_literal(text: str) -> bytes:
    """MySQL's reading of a quoted string literal (the escapes the writer uses)."""
    assert text[0] == "'" and text[-1] == "'"
    out, chars = [], iter(text[1:-1])
    for c in chars:
        assert c != "'", text  # a quote inside is always escaped
        out.append(_UNESCAPE[next(chars)] if c == "\\" else c)
    return "".join(out).encode("utf-8", "surrogateescape")


@given(st.binary(max_size=60))
@example(b"it's")
@example(b"\\")
def test_quoted_strings_read_back_as_the_same_bytes(raw: bytes) -> None:
    text = _quote(raw)
    assert "\n" not in text and "\r" not in text  # one statement per line
    assert _read_literal(text) == raw


def _lit(code: int, meta: bytes, value: object, **kw: object) -> str:
    col = Column.build(0, code, meta).with_(**kw)
    fn = sql_literal(col)
    return str(value) if fn is None else fn(value)


def test_literals_of_every_kind() -> None:
    assert _lit(T.LONGLONG, b"", -9223372036854775808) == "-9223372036854775808"
    assert _lit(T.DOUBLE, b"\x08", -0.0) == "-0e0" and _lit(T.DOUBLE, b"\x08", 0.1) == "0.1"
    assert _lit(T.FLOAT, b"\x04", 0.10000000149011612) == "0.10000000149011612"  # the float's exact double
    assert _lit(T.NEWDECIMAL, b"\x41\x1e", Decimal("-1E-30")) == "-0.000000000000000000000000000001"
    assert _lit(T.BIT, b"\x02\x01", 0b1000000001) == "b'1000000001'"
    assert _lit(T.DATE, b"", dt.date(999, 1, 2)) == "'0999-01-02'" and _lit(T.DATE, b"", InvalidDate(0, 0, 0)) == (
        "'0000-00-00'"
    )
    assert _lit(T.DATETIME2, b"\x03", dt.datetime(2024, 2, 29, 1, 2, 3, 456789)) == "'2024-02-29 01:02:03.456'"
    assert _lit(T.TIMESTAMP2, b"\x00", dt.datetime(2024, 1, 1, tzinfo=dt.UTC)) == "'2024-01-01 00:00:00'"
    assert _lit(T.DATETIME2, b"\x06", InvalidDatetime(2020, 0, 15, 1, 2, 3, 4, fsp=6)) == "'2020-00-15 01:02:03.000004'"
    assert _lit(T.TIME2, b"\x06", dt.timedelta(hours=-838, minutes=-59, seconds=-59)) == "'-838:59:59.000000'"
    assert _lit(T.STRING, b"\xfe\x0a", b"it's\\\n", charset=45) == "'it\\'s\\\\\\n'"
    assert _lit(T.STRING, b"\xfe\x0a", b"caf\xe9", charset=8) == "_latin1'caf\udce9'"  # the raw byte
    assert _lit(T.STRING, b"\xfe\x0a", b"\x81\x5c", charset=13) == "_sjis X'815c'"
    assert _lit(T.STRING, b"\xfe\x04", b"\x01", charset=63) == "X'01000000'"  # BINARY(4) padded
    assert _lit(T.BLOB, b"\x02", b"\x00\xff", charset=63) == "X'00ff'"
    assert _lit(T.STRING, b"\xf7\x01", 2, enum_values=("a", "b")) == "'b'"
    assert _lit(T.STRING, b"\xf7\x01", 2) == "2"  # no member names logged, none known: the index
    assert _lit(T.STRING, b"\xf8\x01", 0b101, set_values=("x", "y", "z")) == "'x,z'"
    assert _lit(T.GEOMETRY, b"\x04", b"\xe6\x10\x00\x00\x01") == "X'e610000001'"
    assert _lit(T.JSON, b"\x04", bytes.fromhex("0401")) == "CAST('true' AS JSON)"


def _changes(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "binlake", "changes", *args], capture_output=True, check=False)


def test_command_line_errors_are_clear(tmp_path: Path) -> None:
    assert b"--format sql" in _changes("--flashback", str(tmp_path)).stderr
    assert b"no binlog file" in _changes(str(tmp_path)).stderr
    assert b"give binlog files" in _changes().stderr
    proc = _changes("--host", "127.0.0.1", "--user", "u", "--server-id", "1", str(tmp_path))
    assert proc.returncode == 2 and b"not both" in proc.stderr
    assert b"--host" in _changes("--follow", str(tmp_path)).stderr
    assert b"--server-id" in _changes("--host", "127.0.0.1", "--user", "u").stderr


@pytest.mark.corpus
def test_a_partial_transaction_is_left_out_and_said(corpus_dir: Path) -> None:
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"
    whole = _changes("--format", "sql", str(path))
    cut = _changes("--format", "sql", "--stop-position", "10700", str(path))
    assert whole.returncode == cut.returncode == 0
    assert b"1 transaction(s) left out" in cut.stderr and not whole.stderr
    assert whole.stdout.startswith(cut.stdout.rsplit(b"\n", 1)[0])


def _sql_of(paths: list[Path], compiled: bool, monkeypatch: pytest.MonkeyPatch) -> bytes:
    from binlake.changes import ChangeStream, FileSource
    from binlake.errors import BinlogError
    from binlake.render.changes import sql

    out = io.BytesIO()
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(sql, "SqlPlan", None)
        writer = sql.SqlWriter(out.write)
        writer.begin()
        for path in paths:
            try:
                for trx in ChangeStream(FileSource([str(path)])):
                    writer.transaction(trx)
            except BinlogError:
                pass  # damaged and encrypted files end where they end, both ways alike
        writer.finish()
    return out.getvalue()


@pytest.mark.corpus
def test_the_compiled_writer_writes_what_the_python_writer_writes(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """binlake._speedups.SqlPlan against the Python writer, byte for byte, on every corpus binlog of both servers."""
    from binlake.render.changes import sql

    if sql.SqlPlan is None:
        pytest.skip("binlake._speedups is not built (or BINLAKE_PURE_PYTHON is set)")
    paths = [
        *sorted((corpus_dir / "mariadb" / "binlogs").glob("corpus-bin.*")),
        *sorted((corpus_dir / "mysql").glob("*/*")),
    ]
    compiled, python = _sql_of(paths, True, monkeypatch), _sql_of(paths, False, monkeypatch)
    assert compiled.count(b"\n") > 50_000
    assert compiled == python
