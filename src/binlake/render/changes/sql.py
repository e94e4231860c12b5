"""SQL that replays a binlog's changes on another server, or undoes them (``binlake changes --format sql
[--flashback]``), in binlog2sql's shape.

Replay (:class:`SqlWriter`):

* a row change is one statement, followed by binlog2sql's comment ``#start S end E time T`` (``S`` its
  transaction's first position, ``E`` the end of its rows event, ``T`` the rows event's local time)::

      INSERT INTO `db`.`t`(`id`, `a`) VALUES (1, 'x'); #start 4 end 388 time 2016-12-13 20:26:26
      UPDATE `db`.`t` SET `id`=1, `a`='y' WHERE `id`=1 LIMIT 1; #start ...
      DELETE FROM `db`.`t` WHERE `id`=1 LIMIT 1; #start ...

  ``INSERT`` lists the columns the image holds, ``UPDATE`` sets them, and ``WHERE`` names the row by its
  primary key when the image holds it, else by every column it holds (``IS NULL`` for NULLs).  Generated columns
  (known from the DDL the binlog logged) are left out: the target computes them.  A MINIMAL image's absent
  columns are simply not named; so an ``INSERT`` of a MINIMAL image lets the target fill them with defaults, as
  the source did.
* transactions are wrapped as they were logged: ``BEGIN`` ... ``COMMIT`` (or ``ROLLBACK``: rows logged in a
  rolled-back transaction are of non-transactional tables, which keep them), ``XA START`` ... ``XA PREPARE``, and
  ``SAVEPOINT``/``ROLLBACK TO`` inside; each transaction first sets ``TIMESTAMP`` to its time, so columns a
  MINIMAL insert leaves to ``DEFAULT CURRENT_TIMESTAMP`` get the source's time;
* DDL and statement-format DML are printed as logged, after ``USE db`` and the ``SET`` statements that give the
  session the state the statement ran in (sql_mode, character set, time zone, timestamp, foreign key and unique
  checks, auto increment, and the INSERT_ID / RAND / user variables logged for it: the same statements
  ``mariadb-binlog`` prints, :func:`binlake.render.dump.query.session_statements`); a statement holding ``;`` is
  wrapped in ``DELIMITER``.  The raw bytes of the statement are written, in the character set it was logged in.

Values are written exactly, for a session the output sets up first (``SET NAMES utf8mb4``, ``time_zone
'+00:00'``, ``sql_mode 'NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES'``, restored before each row statement after a
logged statement changed them): integers and DECIMAL as their digits, FLOAT/DOUBLE with every digit the double
needs (``-0e0`` for negative zero), BIT as ``b'101'``, dates and times quoted (zero and partial dates as logged,
TIME negative or past 24 h, TIMESTAMP in UTC), utf8mb3/utf8mb4 text quoted with ``\\``, ``'``, NUL, CR, LF and
Ctrl-Z escaped, latin1 and ascii text the same behind an introducer (``_latin1'caf\\xe9'``, the raw byte), text in
any other charset as ``_charset X'hex'``, binary strings and BLOBs as ``X'hex'`` (BINARY(n) padded to n bytes),
ENUM and SET by member name (by number where the table map logs no names and no DDL was read), MySQL JSON as
``CAST('...' AS JSON)``, spatial values as the server's own format ``X'<SRID><WKB>'``.

Undo (``flashback``): every kept transaction in reverse order, each change inverted (INSERT -> DELETE, DELETE ->
INSERT, UPDATE with its images swapped), in ``BEGIN``/``COMMIT``; a ``ROLLBACK TO SAVEPOINT`` range becomes a
savepoint range again around its undo (so rows that were rolled back stay untouched); an XA transaction is undone
when its ``XA COMMIT`` is in the range; DDL and statement-format changes are not undone (a comment says so), nor
are changes whose images lack columns (MINIMAL/NOBLOB: the image does not hold the old values).

Example::

    writer = SqlWriter(out.write, SqlOptions(flashback=False))
    writer.begin()
    for trx in ChangeStream(FileSource(paths)):
        writer.transaction(trx)
    writer.finish()
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from binlake.changes.records import RowsChange, Statement, TableInfo, Transaction
from binlake.coltypes import Column, ColumnType
from binlake.events.base import LOG_EVENT_SUPPRESS_USE_F
from binlake.events.load import ExecuteLoadQueryEvent, FileBlockEvent
from binlake.render.changes.plans import INT_SIZES, STRINGS, UTF8, PlanCache
from binlake.render.changes.plans import speedups as _speedups
from binlake.render.dump.printer import Session
from binlake.render.dump.query import (
    MARIADB_OPTIONS,
    context_statement,
    load_file_name,
    load_query,
    session_statements,
)
from binlake.rowdecoder import fixed_kinds
from binlake.values import collations, typed
from binlake.values.json_binary import JsonDiff, JsonDiffOperation, to_text
from binlake.values.numeric import bit_width
from binlake.values.row import ABSENT
from binlake.values.strings import length_bytes
from binlake.values.temporal import render_datetime, render_time

__all__ = ["ROW_SESSION", "SqlOptions", "SqlWriter", "sql_literal"]

T = ColumnType
ROW_SESSION = (
    "SET NAMES utf8mb4;\n"
    "SET @@session.time_zone='+00:00';\n"
    "SET @@session.sql_mode='NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES';\n"
)
"""The session row statements are written for (printed first, and again after a statement changed it)."""
_ROW_SQL_MODE = 0x40000000 | 0x8000000  # MODE_NO_AUTO_VALUE_ON_ZERO | MODE_ALLOW_INVALID_DATES (sql_class.h)
_NEEDS_ESCAPE = re.compile(rb"[\x00\n\r\x1a'\\]")
_ESCAPES = {0: b"\\0", 10: b"\\n", 13: b"\\r", 26: b"\\Z", 39: b"\\'", 92: b"\\\\"}
_SINGLE_BYTE_ASCII = frozenset({"latin1", "ascii"})
_NO_FOREIGN_KEY_CHECKS_F, _RELAXED_UNIQUE_CHECKS_F = 0x2, 0x4
_INTEGERS = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.YEAR})
_GENERATED = re.compile(r"\b(?:GENERATED\s+ALWAYS\s+)?AS\s*(?:\(|ROW\s+(?:START|END)\b)", re.IGNORECASE)
_ROW_END = re.compile(r"\bAS\s+ROW\s+END\b", re.IGNORECASE)
_ROW_START = re.compile(r"\bAS\s+ROW\s+START\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SqlOptions:
    """``flashback``: write the undo of the changes instead of their replay.  ``local_load``: a directory where
    the files of statement-format LOAD DATA are written, for ``LOAD DATA LOCAL INFILE`` to read them again (the
    client needs ``--local-infile``); without one such a statement is a comment (``mariadb-binlog --local-load``)."""

    flashback: bool = False
    local_load: Path | None = None


# -- values ---------------------------------------------------------------------------------------------------------


def _quote(raw: bytes, prefix: str = "") -> str:
    """``'...'`` of raw string bytes with MySQL's escapes; bytes that are not UTF-8 ride as surrogate escapes (the
    writer encodes with ``surrogateescape``, so they reach the output as they were)."""
    if _NEEDS_ESCAPE.search(raw) is not None:
        raw = b"".join(_ESCAPES.get(b, bytes((b,))) for b in raw)
    return prefix + "'" + raw.decode("utf-8", "surrogateescape") + "'"


def _quote_text(text: str) -> str:
    return _quote(text.encode("utf-8", "surrogateescape"))


def _real(v: float) -> str:
    """Every digit the double needs (the server reads the decimal back to the same double); ``-0e0`` keeps the
    sign of a negative zero, which a decimal literal would lose."""
    text = repr(v)
    return "-0e0" if text == "-0.0" else text


def _date(v: object) -> str:
    if isinstance(v, dt.date):
        return "'" + v.isoformat() + "'"
    return f"'{v.year:04d}-{v.month:02d}-{v.day:02d}'"  # type: ignore[attr-defined]


def _datetime(col: Column) -> Callable[[object], str]:
    """DATETIME and TIMESTAMP (in UTC) with the column's fraction digits; zero and invalid dates as logged."""
    fsp = col.fsp or 0
    width = 20 + fsp if fsp else 19  # 'YYYY-MM-DD HH:MM:SS.ffffff' cut to the column's digits

    def literal(v: object) -> str:
        if isinstance(v, dt.datetime):
            return "'" + v.isoformat(" ", "microseconds")[:width] + "'"
        return render_datetime(col, v)

    return literal


def _members(names: Sequence[str]) -> Callable[[object], str]:
    quoted = ("''", *(_quote_text(n) for n in names))

    def literal(v: object) -> str:
        index = int(v)  # type: ignore[call-overload]
        return quoted[index] if 0 <= index < len(quoted) else str(index)

    return literal


def _set_members(names: Sequence[str]) -> Callable[[object], str]:
    def literal(v: object) -> str:
        mask = int(v)  # type: ignore[call-overload]
        chosen = [n for i, n in enumerate(names) if mask >> i & 1]
        return _quote_text(",".join(chosen)) if mask < 1 << len(names) else str(mask)

    return literal


def _string(col: Column, type_name: str | None) -> Callable[[object], str]:
    """A string column's stored bytes as a literal in its charset (module docstring)."""
    cs = collations.charset_name(col.charset) if col.charset is not None else None
    pad = col.length if cs == "binary" and col.real_type_code == T.STRING and col.length else 0
    if cs in UTF8:
        return _quote  # type: ignore[return-value]
    if cs in _SINGLE_BYTE_ASCII:
        prefix = f"_{cs}"
        return lambda v: _quote(v, prefix)  # type: ignore[arg-type]
    if cs is None or cs == "binary":
        return lambda v: "X'" + v.ljust(pad, b"\0").hex() + "'"  # type: ignore[attr-defined]
    intro = f"_{cs} X'"
    return lambda v: intro + v.hex() + "'"  # type: ignore[attr-defined]


def sql_literal(col: Column, type_name: str | None = None) -> Callable[[object], str] | None:
    """The function writing a non-NULL *stored* value of ``col`` (``RowsEvent.rows(typed=False)``) as an exact SQL
    literal, or ``None`` where ``str(value)`` is one (integers).  ``type_name``: the DDL's type, lower case."""
    real = col.real_type_code
    if real in _INTEGERS:
        return None
    if real in (T.NEWDECIMAL, T.DECIMAL):
        return lambda v: format(v, "f")
    if real in (T.FLOAT, T.DOUBLE):
        return _real  # type: ignore[return-value]
    if real == T.BIT:
        bits = bit_width(col)
        return lambda v: f"b'{v:0{bits}b}'"
    if real in (T.DATE, T.NEWDATE):
        return _date
    if real in (T.TIME, T.TIME2):
        return lambda v: render_time(col, v)
    if real in (T.DATETIME, T.DATETIME2, T.TIMESTAMP, T.TIMESTAMP2):
        return _datetime(col)
    if real == T.ENUM:
        return _members(col.enum_values) if col.enum_values is not None else str
    if real == T.SET:
        return _set_members(col.set_values) if col.set_values is not None else str
    if real == T.JSON:  # MySQL's binary JSON
        return lambda v: f"CAST({_quote_text(to_text(v))} AS JSON)"  # type: ignore[arg-type]
    if real in (T.GEOMETRY, T.VECTOR):
        return lambda v: "X'" + v.hex() + "'"  # type: ignore[attr-defined]
    if real in (T.VARCHAR_COMPRESSED, T.BLOB_COMPRESSED):
        convert = typed(col)
        assert convert is not None
        plain = _string(col, type_name)

        def compressed(v: object) -> str:
            value = convert(v)
            if isinstance(value, str):
                return _quote_text(value)
            return plain(value)

        return compressed
    return _string(col, type_name)


# -- statements of one table layout ---------------------------------------------------------------------------------


class _Columns:
    """What the statements of one table need per column: its SQL name, its literal writer, whether the target
    computes it (generated), whether it can be NULL."""

    __slots__ = ("generated", "info", "literals", "names", "nullable", "sequence")

    def __init__(self, info: TableInfo) -> None:
        ddl = info.ddl.columns if info.ddl is not None else None
        self.info = info
        self.names = ["`" + n.replace("`", "``") + "`" for n in info.names]
        self.literals = [
            sql_literal(col, ddl[i].type_name if ddl is not None else None) for i, col in enumerate(info.columns)
        ]
        for i, col in enumerate(info.columns):
            if col.real_type_code == T.JSON:  # a partial update (MySQL) logs diffs: applied to the column itself
                self.literals[i] = _json_or_diffs(self.names[i], self.literals[i])
        self.generated = [
            ddl is not None and _GENERATED.search(ddl[i].definition) is not None for i in range(len(ddl or ()))
        ]
        if not self.generated:
            self.generated = [False] * len(info.columns)
        self.nullable = [col.nullable for col in info.columns]
        self.sequence = info.ddl is not None and info.ddl.sequence

    def writable(self, present: bytes) -> list[int]:
        return [i for i in range(len(self.names)) if present[i] and not self.generated[i]]

    def key(self, present: bytes) -> list[int]:
        """The columns a WHERE names a row by: its primary key when the image holds it (less the generated row end
        of a system-versioned table's key), else every column the image holds."""
        key = [i for i in self.info.key if not self.generated[i]]
        return key if key and all(present[i] for i in key) else self.writable(present)


def _json_or_diffs(name: str, document: Callable[[object], str] | None) -> Callable[[object], str]:
    """A JSON column's literal, or for the diffs of a MySQL partial update (PARTIAL_UPDATE_ROWS_EVENT) the calls
    that make them on the column's value: ``JSON_REPLACE(`j`, '$.a', CAST('1' AS JSON))``, one call per diff in
    order (an INSERT whose path ends in ``]`` is ``JSON_ARRAY_INSERT``, as ``Json_diff_vector`` applies it)."""
    assert document is not None

    def literal(v: object) -> str:
        if not isinstance(v, list):
            return document(v)
        expr = name
        for diff in v:
            assert isinstance(diff, JsonDiff)
            path = _quote_text(diff.path)
            if diff.operation == JsonDiffOperation.REMOVE:
                expr = f"JSON_REMOVE({expr}, {path})"
                continue
            value = f"CAST({_quote_text(to_text(diff.value or b''))} AS JSON)"
            if diff.operation == JsonDiffOperation.REPLACE:
                func = "JSON_REPLACE"
            else:
                func = "JSON_ARRAY_INSERT" if diff.path.endswith("]") else "JSON_INSERT"
            expr = f"{func}({expr}, {path}, {value})"
        return expr

    return literal


def _value(cols: _Columns, i: int, var: str, env: dict[str, object]) -> str:
    """The f-string expression of column ``i``'s literal from the image ``var`` (NULL included)."""
    lit = cols.literals[i]
    value = f"{var}{i}"
    if lit is not None:
        env[f"_l{i}"] = lit
        value = f"_l{i}({var}{i})"
    if not cols.nullable[i]:
        return f"{{{value} if ({var}{i} := {var}[{i}]) is not None else 'NULL'}}"
    return f"{{'NULL' if ({var}{i} := {var}[{i}]) is None else {value}}}"


def _where(cols: _Columns, indexes: list[int], var: str, env: dict[str, object]) -> str:
    parts = []
    for i in indexes:
        lit = cols.literals[i]
        value = f"{var}{i}"
        if lit is not None:
            env[f"_l{i}"] = lit
            value = f"_l{i}({var}{i})"
        env[f"_n{i}"] = cols.names[i]
        parts.append(f"{{_n{i}}}{{' IS NULL' if ({var}{i} := {var}[{i}]) is None else f'={{{value}}}'}}")
    return " AND ".join(parts)


_Statement = Callable[[object, object, str], str]


def _statement_function(cols: _Columns, kind: str, before: bytes, after: bytes) -> _Statement:
    """The generated writer of one change kind for images holding the ``before``/``after`` columns: one f-string
    per statement, ``stmt(before, after, comment)``, binlog2sql's shape (module docstring)."""
    env: dict[str, object] = {"_T": cols.info.qualified}
    if kind == "insert":
        writable = cols.writable(after)
        env["_C"] = ", ".join(cols.names[i] for i in writable)
        values = ", ".join(_value(cols, i, "a", env) for i in writable)
        if cols.sequence and len(writable) < len(cols.names):
            # a MariaDB sequence's row is written whole: the columns a MINIMAL image lacks keep the target's
            every = [i for i in range(len(cols.names)) if not cols.generated[i]]
            env["_C"] = ", ".join(cols.names[i] for i in every)
            values = ", ".join(_value(cols, i, "a", env) if after[i] else cols.names[i] for i in every)
            body = f"INSERT INTO {{_T}}({{_C}}) SELECT {values} FROM {{_T}};{{c}}"
        else:
            body = f"INSERT INTO {{_T}}({{_C}}) VALUES ({values});{{c}}"
    elif kind == "delete":
        body = f"DELETE FROM {{_T}} WHERE {_where(cols, cols.key(before), 'b', env)} LIMIT 1;{{c}}"
    else:
        assign = []
        for i in cols.writable(after):
            env[f"_n{i}"] = cols.names[i]
            assign.append(f"{{_n{i}}}={_value(cols, i, 'a', env)}")
        where = _where(cols, cols.key(before), "b", env)
        body = f"UPDATE {{_T}} SET {', '.join(assign)} WHERE {where} LIMIT 1;{{c}}"
    args = ", ".join(f"{k}={k}" for k in env)
    src = f'def stmt(b, a, c, {args}):\n    return f"{body}"\n'
    exec(compile(src, f"<{kind} of {cols.info.qualified}>", "exec"), env)
    fn: _Statement = env["stmt"]  # type: ignore[assignment]
    return fn


# -- the compiled writer (binlake._speedups.SqlPlan) ------------------------------------------------------------------

if TYPE_CHECKING:
    from binlake._speedups import SqlPlan
else:
    SqlPlan = getattr(_speedups, "SqlPlan", None)


def _c_column(col: Column) -> tuple[int, int, int, int, bytes] | None:
    """The compiled writer's plan of one column, as :func:`sql_literal` writes it; ``None`` for a type it does not
    write (ENUM, SET, JSON, GEOMETRY, compressed columns, the old temporal layouts: the Python writer does)."""
    assert _speedups is not None
    real = col.real_type_code
    size = INT_SIZES.get(real)
    if size is not None:
        return (_speedups.K_INT, size, int(bool(col.unsigned)), 0, b"")
    fixed = fixed_kinds(_speedups).get(real)
    if fixed is not None:
        p1, p2 = fixed[1](col)
        return (fixed[0], p1, p2, 0, b"")
    if real not in STRINGS:
        return None
    cs = collations.charset_name(col.charset) if col.charset is not None else None
    lb = length_bytes(col)
    if cs in UTF8:
        return (_speedups.K_STRING, lb, 0, 0, b"")
    if cs in _SINGLE_BYTE_ASCII:
        return (_speedups.K_STRING, lb, 0, 0, f"_{cs}".encode())
    if cs is None or cs == "binary":
        pad = col.length if cs == "binary" and real == T.STRING and col.length else 0
        return (_speedups.K_STRING, lb, 1, pad or 0, b"")
    return (_speedups.K_STRING, lb, 1, 0, f"_{cs} ".encode())


def _sql_plan(cols: _Columns, kind: str, before: bytes, after: bytes) -> SqlPlan | None:
    """The compiled twin of :func:`_statement_function` for rows events whose images hold ``before``/``after``
    (``None`` where it does not write every column, or the extension is not there)."""
    if SqlPlan is None or (cols.sequence and kind == "insert"):
        return None
    images: list[tuple[tuple[int, int, int, int, bytes], ...]] = []
    spans: dict[tuple[str, int], int] = {}
    order = (
        [("b", before), ("a", after)] if kind == "update" else [("a", after)] if kind == "insert" else [("b", before)]
    )
    for name, present in order:
        specs = []
        for i, here in enumerate(present):
            if here:
                spec = _c_column(cols.info.columns[i])
                if spec is None:
                    return None
                spans[(name, i)] = len(spans)
                specs.append(spec)
        images.append(tuple(specs))
    pieces: list[bytes | tuple[int, int]] = []

    def text(t: str) -> None:
        pieces.append(t.encode("utf-8", "surrogateescape"))

    def joined(items: list[int], head: Callable[[int], str], var: str, mode: int, sep: str) -> None:
        for n, i in enumerate(items):
            text((sep if n else "") + head(i))
            pieces.append((spans[(var, i)], mode))

    table = cols.info.qualified
    if kind == "insert":
        writable = cols.writable(after)
        text(f"INSERT INTO {table}({', '.join(cols.names[i] for i in writable)}) VALUES (")
        joined(writable, lambda i: "", "a", 0, ", ")
        text(");")
    elif kind == "delete":
        text(f"DELETE FROM {table} WHERE ")
        joined(cols.key(before), lambda i: cols.names[i], "b", 1, " AND ")
        text(" LIMIT 1;")
    else:
        text(f"UPDATE {table} SET ")
        joined(cols.writable(after), lambda i: f"{cols.names[i]}=", "a", 0, ", ")
        text(" WHERE ")
        joined(cols.key(before), lambda i: cols.names[i], "b", 1, " AND ")
        text(" LIMIT 1;")
    merged: list[bytes | tuple[int, int]] = []
    for piece in pieces:  # constants side by side become one
        if isinstance(piece, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += piece
        else:
            merged.append(piece)
    try:
        return SqlPlan(tuple(images), tuple(merged))
    except ValueError:  # a length or precision the compiled writer does not take
        return None


# -- the writer -----------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Where:
    """The session state the output has set last (what a logged statement set, or the row statements' own)."""

    session: Session = field(default_factory=Session)
    rows_ready: bool = False  # ROW_SESSION is in force
    db: str | None = None
    timestamp: int | None = None
    fk: bool = True
    unique: bool = True


class SqlWriter:
    """Writes replay or undo SQL (module docstring) as bytes through ``write``."""

    def __init__(self, write: Callable[[bytes], None], options: SqlOptions | None = None) -> None:
        self.write = write
        self.options = options or SqlOptions()
        self._state = _Where()
        self._columns: dict[int, tuple[TableInfo, _Columns]] = {}
        self._statements: dict[tuple[int, str, bytes, bytes], tuple[TableInfo, _Statement]] = {}
        self._held: list[Transaction] = []  # flashback: every transaction, undone at the end
        self._out: list[bytes] = []
        self.plans: PlanCache[SqlPlan] = PlanCache(
            lambda item, before, after: _sql_plan(self._columns_of(item.table), item.kind, before, after)
        )
        self._size = 0

    # -- output

    def _emit(self, text: str) -> None:
        self._emit_bytes(text.encode("utf-8", "surrogateescape"))

    def _emit_bytes(self, data: bytes) -> None:
        self._out.append(data)
        self._size += len(data)
        if self._size > 1 << 20:
            self.flush()

    def flush(self) -> None:
        if self._out:
            self.write(b"".join(self._out))
            self._out.clear()
            self._size = 0

    def begin(self) -> None:
        """The session every row statement is written for."""
        self._emit(ROW_SESSION)
        self._state.rows_ready = True

    def finish(self) -> None:
        """Flashback: write the undo of everything held; then flush."""
        if self.options.flashback:
            self._undo_all()
        self.flush()

    def transaction(self, trx: Transaction) -> None:
        """Replay one transaction (flashback: hold it for :meth:`finish`)."""
        if trx.empty:
            return
        if self.options.flashback:
            self._held.append(trx)
            return
        self._open(trx, trx.opening)
        for item in trx.items:
            if isinstance(item, RowsChange):
                self._replay_rows(trx, item)
            else:
                self._statement(item, trx)
        if trx.closing is not None:
            self._emit(f"{trx.closing};\n")

    # -- pieces

    def _replay_rows(self, trx: Transaction, item: RowsChange) -> None:
        comment = self._comment(trx, item)
        if item.by_trigger:  # the target's own triggers make this change when the statement before it replays
            self._emit(f"# made by a trigger, which the target runs:{comment}")
            return
        self._rows_session(item.flags)
        versioned = _versioning(item.table)
        if versioned is None and not item.event.partial:
            plan = self.plans.get(item)
            done = plan.text(item.event.rows_data, comment.encode("utf-8", "surrogateescape")) if plan else None
            if done is not None:
                self._emit_bytes(done[0])
                return
        rows = item.stored_rows()
        if not rows:
            return
        if versioned is None:
            stmt = self._statement_of(item.table, item.kind, *rows[0])
            self._emit("".join([stmt(b, a, comment) for b, a in rows]))
            return
        for before, after in rows:
            kind, when = _versioned_change(item.kind, before, after, versioned)
            if when is None:
                self._emit(f"# history of a system-versioned table, which the target keeps itself:{comment}")
                continue
            self._emit(f"SET TIMESTAMP={when};\n")  # the source's row_start/row_end: the target's too
            self._state.timestamp = None
            self._emit(self._statement_of(item.table, kind, before, after)(before, after, comment))

    def _columns_of(self, info: TableInfo) -> _Columns:
        cols = self._columns.get(id(info))
        if cols is None or cols[0] is not info:
            cols = self._columns[id(info)] = (info, _Columns(info))
        return cols[1]

    def _statement_of(self, info: TableInfo, kind: str, before: object, after: object) -> _Statement:
        """The statement writer of ``kind`` for images with the columns ``before`` and ``after`` hold."""
        b = bytes(v is not ABSENT for v in before) if isinstance(before, tuple) else b""
        a = bytes(v is not ABSENT for v in after) if isinstance(after, tuple) else b""
        key = (id(info), kind, b, a)
        hit = self._statements.get(key)
        if hit is None or hit[0] is not info:
            if len(self._statements) >= 4096:
                self._statements.clear()
                self._columns.clear()
            hit = self._statements[key] = (info, _statement_function(self._columns_of(info), kind, b, a))
        return hit[1]

    def _open(self, trx: Transaction, opening: str | None) -> None:
        st = self._state
        if st.timestamp != trx.timestamp and any(isinstance(i, RowsChange) for i in trx.items):
            self._emit(f"SET TIMESTAMP={trx.timestamp};\n")
            st.timestamp = trx.timestamp
        if opening is not None:
            self._emit(f"{opening};\n")

    def _comment(self, trx: Transaction, item: RowsChange) -> str:
        t = time.localtime(item.timestamp)
        return f" #start {trx.start} end {item.end} time {time.strftime('%Y-%m-%d %H:%M:%S', t)}\n"

    def _rows_session(self, flags: int) -> None:
        """Put the row statements' session back where a logged statement changed it; follow the rows event's
        foreign-key and unique-check flags."""
        st = self._state
        if not st.rows_ready:
            self._emit(ROW_SESSION)
            st.rows_ready = True
            s = st.session
            s.sql_mode, s.charset, s.time_zone = _ROW_SQL_MODE, None, "+00:00"
        fk = not flags & _NO_FOREIGN_KEY_CHECKS_F
        unique = not flags & _RELAXED_UNIQUE_CHECKS_F
        if fk != st.fk or unique != st.unique:
            self._emit(f"SET @@session.foreign_key_checks={int(fk)}, @@session.unique_checks={int(unique)};\n")
            st.fk, st.unique = fk, unique
            st.session.flags2 = None  # the next logged statement sets its own again

    def _statement(self, item: Statement, trx: Transaction) -> None:
        ev = item.event
        st = self._state
        if item.control is not None:
            self._emit(ev.query_raw.decode("utf-8", "surrogateescape") + ";\n")
            return
        out = []
        if isinstance(ev, ExecuteLoadQueryEvent):
            load = self._load_file(ev, item)
            if load is None:
                self._emit(f"# LOAD DATA not replayed (give --local-load DIR for its file): {_one_line(ev.query)}\n")
                return
        if ev.db and ev.db != st.db and not ev.header.flags & LOG_EVENT_SUPPRESS_USE_F:
            out.append(f"USE `{ev.db.replace('`', '``')}`;\n")
            st.db = ev.db
        mask = 0xFFFFFFFF if trx.flavor != "mysql" else ~sum(MARIADB_OPTIONS) & 0xFFFFFFFF
        if ev.status("TIME_ZONE") is None and st.session.time_zone:  # the source's default zone: the target's
            out.append("SET @@session.time_zone=@@global.time_zone;\n")
            st.session.time_zone = ""
        statements = session_statements(
            st.session, ev, mask, pseudo_thread=False, autocommit=trx.opening is None and trx.closing is None
        )
        out += (f"{s};\n" for s in statements)
        out += (f"{context_statement(c, exact=True)};\n" for c in item.context if not isinstance(c, FileBlockEvent))
        if isinstance(ev, ExecuteLoadQueryEvent):
            query = load_query(ev, str(load))
        else:
            query = ev.query_raw.decode("utf-8", "surrogateescape")
        if ";" in query:
            out.append(f"DELIMITER /*!*/;\n{query}\n/*!*/;\nDELIMITER ;\n")
        else:
            out.append(f"{query};\n")
        self._emit("".join(out))
        st.rows_ready = False
        st.timestamp = None
        sm = st.session
        st.fk = sm.flags2 is None or not sm.flags2 & (1 << 26)
        st.unique = sm.flags2 is None or not sm.flags2 & (1 << 27)

    def _load_file(self, ev: ExecuteLoadQueryEvent, item: Statement) -> Path | None:
        """Write the file of a LOAD DATA (its blocks are in the statement's context) under ``local_load``."""
        if self.options.local_load is None:
            return None
        path = self.options.local_load / load_file_name(ev)
        with path.open("wb") as f:
            for c in item.context:
                if isinstance(c, FileBlockEvent) and c.file_id == ev.file_id:
                    f.write(c.block)
        return path.resolve()

    # -- undo

    def _undo_all(self) -> None:
        committed = {t.xid for t in self._held if t.xid is not None and any(_is_xa(i, "xa_commit") for i in t.items)}
        for trx in reversed(self._held):
            if trx.outcome == "prepare" and trx.xid not in committed:
                self._emit(f"# XA transaction {trx.xid} is not undone: its XA COMMIT is not in the range\n")
                continue
            items = [i for i in trx.items if not (isinstance(i, Statement) and i.control is not None)]
            if not items:
                continue
            self._open(trx, "BEGIN")
            for kind, item in _reverse(trx.items):
                if kind == "savepoint":
                    self._emit(f"SAVEPOINT {item};\n")
                elif kind == "rollback_to":
                    self._emit(f"ROLLBACK TO SAVEPOINT {item};\n")
                elif isinstance(item, RowsChange):
                    self._undo_rows(trx, item)
                elif isinstance(item, Statement):
                    self._emit(f"# not undone: {_one_line(item.event.query)}\n")
            self._emit("COMMIT;\n")

    def _undo_rows(self, trx: Transaction, item: RowsChange) -> None:
        self._rows_session(item.flags)
        comment = self._comment(trx, item)
        kind = {"insert": "delete", "delete": "insert", "update": "update"}[item.kind]
        for before, after in reversed(item.stored_rows()):
            new_before: tuple[object, ...] | None
            new_after: tuple[object, ...] | None
            if item.kind == "update":
                assert before is not None and after is not None
                merged = tuple(a if a is not ABSENT else b for b, a in zip(before, after, strict=True))
                if any(a is not ABSENT and b is ABSENT for b, a in zip(before, after, strict=True)):
                    self._emit(f"# not undone: the before image lacks changed columns{comment}")
                    continue
                new_before, new_after = (
                    merged,
                    tuple(b if a is not ABSENT else ABSENT for b, a in zip(before, after, strict=True)),
                )
            else:
                new_before, new_after = after, before
                if kind == "insert" and any(v is ABSENT for v in new_after or ()):
                    self._emit(f"# not undone: the deleted row's image lacks columns{comment}")
                    continue
            stmt = self._statement_of(item.table, kind, new_before, new_after)
            self._emit(stmt(new_before, new_after, comment))


def _versioning(info: TableInfo) -> tuple[int, int] | None:
    """The row start and row end columns of a system-versioned table (from its DDL), ``None`` for another."""
    if info.ddl is None:
        return None
    start = end = None
    for i, c in enumerate(info.ddl.columns):
        if _ROW_END.search(c.definition):
            end = i
        elif _ROW_START.search(c.definition):
            start = i
    return (start, end) if start is not None and end is not None else None


def _is_current(row_end: object) -> bool:
    """Is a row end the maximal TIMESTAMP, that of a current row (2038-01-19 03:14:07.999999 UTC, or 2106-02-07
    06:28:15.999999 since MariaDB 11.5)?"""
    return getattr(row_end, "microsecond", 0) == 999999 and getattr(row_end, "year", 0) in (2038, 2106)


def _epoch_text(when: object) -> str:
    assert isinstance(when, dt.datetime)
    return f"{calendar.timegm(when.utctimetuple())}.{when.microsecond:06d}"


def _versioned_change(kind: str, before: object, after: object, cols: tuple[int, int]) -> tuple[str, str | None]:
    """A change of a system-versioned table as the target makes it: a history row (its row end in the past) is
    not replayed (``None``); an update that ends the current row is the DELETE that did it; the time to set is the
    row start (or, for a delete, row end) the source gave the row, which the target then gives it too."""
    start, end = cols
    if kind == "insert":
        assert isinstance(after, tuple)
        return kind, _epoch_text(after[start]) if _is_current(after[end]) else None
    if kind == "update":
        assert isinstance(before, tuple) and isinstance(after, tuple)
        if not _is_current(after[end]):
            return ("delete", _epoch_text(after[end])) if _is_current(before[end]) else (kind, None)
        return kind, _epoch_text(after[start])
    return kind, None  # a Delete_rows of a versioned table removes history (DELETE HISTORY): the target's own


def _is_xa(item: object, kind: str) -> bool:
    return isinstance(item, Statement) and item.control is not None and item.control.kind == kind


def _one_line(text: str, width: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _reverse(items: list[RowsChange | Statement]) -> list[tuple[str, object]]:
    """The items of a transaction in undo order, savepoint ranges mirrored: the changes between a ``SAVEPOINT x``
    and a ``ROLLBACK TO x`` were undone by the source (those of transactional tables), so their undo runs between
    a savepoint and a rollback to it as well; other transaction control is dropped."""
    seen: dict[str, int] = {}  # savepoint name -> index of its SAVEPOINT (or last ROLLBACK TO it)
    ranges: list[tuple[int, int]] = []  # (savepoint index, rollback index)
    for n, item in enumerate(items):
        ctl = item.control if isinstance(item, Statement) else None
        if ctl is None:
            continue
        if ctl.kind == "savepoint":
            seen[ctl.name] = n
        elif ctl.kind == "rollback_to" and ctl.name in seen:
            ranges.append((seen[ctl.name], n))
    opens: dict[int, list[str]] = {}  # original index of a ROLLBACK TO -> undo savepoints to open there
    closes: dict[int, list[str]] = {}  # original index of its SAVEPOINT -> rollbacks there, innermost first
    for k, (start, stop) in enumerate(sorted(ranges, key=lambda r: (r[0], -r[1]))):
        name = f"binlake_undo_{k}"
        opens.setdefault(stop, []).append(name)
        closes.setdefault(start, []).insert(0, name)
    out: list[tuple[str, object]] = []
    for n in range(len(items) - 1, -1, -1):
        out += (("savepoint", name) for name in opens.get(n, ()))
        item = items[n]
        if not (isinstance(item, Statement) and item.control is not None):
            out.append(("item", item))
        out += (("rollback_to", name) for name in closes.get(n, ()))
    return out
