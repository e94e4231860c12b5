"""A small schema tracker: the columns of each table, from the DDL the servers log in QUERY events.

Why: a table map says little about some columns.  MariaDB 5.3's fractional TIME(n)/DATETIME(n)/TIMESTAMP(n)
(tables created with ``mysql56_temporal_format=OFF``, types 11/12/7) log **no metadata**, so the byte size of their
values, set by the fsp, is in no event but the table's ``CREATE TABLE`` (``Field_time_hires`` and friends in
MariaDB's ``sql/field.cc``; ``mariadb-binlog`` cannot decode them and stops).  And a table map logged with
``binlog_row_metadata=MINIMAL`` names no column.  The tracker follows the DDL of a binlog (and of a schema the user
gives, for tables created in an earlier file) so the row decoder can size those columns
(:meth:`SchemaTracker.complete`) and callers can name columns (:meth:`SchemaTracker.column_names`).

What it understands (MySQL/MariaDB syntax read by :mod:`binlake.sql`, binlake's one statement reader: keywords in
any case, names plain, in backticks or in double quotes, ``db.table`` or relative to the QUERY event's default
database, comments skipped and executable comments read as code, the QUERY event's sql_mode for quoting):

* ``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] t (columns, keys...) [options]``, ``CREATE TABLE t [(] LIKE s [)]``,
  ``WITH SYSTEM VERSIONING`` (MariaDB adds the invisible ``row_start``/``row_end`` TIMESTAMP(6) columns at the
  end, ``sql/handler.cc`` ``vers_create_fields``); a ``CREATE TABLE ... SELECT`` whose columns come from the
  query forgets the table (its columns are not in the statement);
* ``ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] t`` with ``ADD [COLUMN] [IF NOT EXISTS] c ... [FIRST | AFTER x]``,
  ``ADD (c ..., d ...)``, ``MODIFY``, ``CHANGE old new ...``, ``DROP [COLUMN] [IF EXISTS] c``, ``RENAME COLUMN a
  TO b``, ``RENAME [TO|AS] t2``, ``ADD``/``DROP SYSTEM VERSIONING``; other clauses (keys, partitions, options) are
  skipped;
* ``RENAME TABLE a TO b[, ...]``, ``DROP TABLE [IF EXISTS] a[, b]``, ``DROP DATABASE``;
* ``TEMPORARY`` tables are left alone (their rows are never logged as row events), whether a statement says
  ``TEMPORARY`` or names a temporary table its session created (``TRUNCATE t``, ``ALTER TABLE t``, ``RENAME TABLE
  t TO u``, ``DROP TABLE t``, ``DROP INDEX i ON t`` after ``CREATE TEMPORARY TABLE t``, logged in STATEMENT or
  MIXED format): :attr:`SchemaTracker.temporary` follows each session's temporary tables
  (:mod:`binlake.sql.temporary`) and a statement's names are read in its session's
  :class:`~binlake.sql.statements.Scope`; ``CREATE TABLE x LIKE t`` of a temporary ``t`` forgets ``x`` (the
  tracker does not know a temporary table's columns);
* ``CREATE SEQUENCE s`` (MariaDB): the fixed columns of every sequence (:data:`SEQUENCE_COLUMNS`), no key, one row
  (:attr:`TableSchema.row_key` keys that row for a current state).

It also follows each string column's charset (:attr:`TrackedColumn.charset`: stated by the column, else its
table's default, else its database's, ``CREATE``/``ALTER DATABASE`` followed for that, else the server's as the
QUERY event logs it; ``ALTER TABLE ... [DEFAULT] CHARACTER SET``, ``CONVERT TO CHARACTER SET``; the rule:
:meth:`SchemaTracker.execute`), which a table map logged with ``binlog_row_metadata=NO_LOG`` does not say.

It also follows each table's PRIMARY KEY (:meth:`SchemaTracker.primary_key`, for a lake that keys tables whose
table maps do not log their key): inline ``PRIMARY KEY`` / ``KEY``, the ``[CONSTRAINT [c]] PRIMARY KEY [USING
type] (a(10) DESC, b)`` element, ``LIKE``, and in ``ALTER`` ``ADD [CONSTRAINT c] PRIMARY KEY [IF NOT EXISTS]``,
``DROP PRIMARY KEY`` / ``DROP INDEX|KEY|CONSTRAINT `PRIMARY```, inline keys of ``ADD``/``MODIFY``/``CHANGE``,
renamed and dropped key columns as MariaDB's ``mysql_prepare_alter_table`` treats them, ``DROP INDEX `PRIMARY`
ON t`` and the row-end column MariaDB adds to a system-versioned table's key.  Where the server would refuse the
statement or the tracker cannot read the key, the key is empty: no key rather than a wrong one.

Anything else is ignored, never an error: a statement the tracker does not understand changes nothing, and an
``ALTER`` it cannot follow (a column it does not know) forgets the table rather than keep a wrong layout.  What
it knows is used only where it agrees with the table map (same column count, names where the map logs them, each
column's type family): a wrong guess never resizes a column.  Known gaps, refused by that check or simply
unknown: MySQL's functional key parts (``INDEX ((a + 1))``) add hidden columns the statement does not list; a
MariaDB 11.5+ ``CREATE SEQUENCE s AS <type>`` (other value types) is forgotten; a temporary table created in a
binlog before the ones read is unknown, so a statement on it that does not say ``TEMPORARY`` is read as one on the
base table (the ``LOG_EVENT_THREAD_SPECIFIC_F`` such a statement carries cannot tell: statements on base tables
carry it too, ``CREATE OR REPLACE TABLE t`` beside a temporary ``t`` for one).  A two-phase ALTER (MariaDB
``binlog_alter_two_phase``) counts at its COMMIT ALTER.

Example::

    >>> s = SchemaTracker()
    >>> s.execute("CREATE TABLE `t` (id INT PRIMARY KEY, d DATETIME(3), /* note */ t TIME(6))", db="shop")
    True
    >>> s.execute("ALTER TABLE shop.t ADD COLUMN ts TIMESTAMP(2) NULL AFTER id", db="other")
    True
    >>> [(c.name, c.type_name, c.fsp) for c in s.table("shop", "t").columns]
    [('id', 'int', None), ('ts', 'timestamp', 2), ('d', 'datetime', 3), ('t', 'time', 6)]
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from binlake.coltypes import OLD_TEMPORAL, Column, ColumnType
from binlake.events.gtid import FL_ROLLBACK_ALTER_E1, FL_START_ALTER_E1
from binlake.sql.cursor import (
    Cursor,
    Unread,
    alter_head,
    create_head,
    drop_database,
    drop_tables,
    rename_clause,
    rename_pairs,
)
from binlake.sql.lexer import (
    MODE_NO_BACKSLASH_ESCAPES,
    Token,
    is_name,
    keyword,
    matching,
    split_commas,
    split_statements,
    tokens,
    top_level_words,
    unquote,
)
from binlake.sql.statements import NO_TEMPORARY, Scope, is_ddl
from binlake.sql.temporary import TemporaryState, TemporaryTables
from binlake.values.collations import BINARY, collation_id

if TYPE_CHECKING:
    from binlake.events.context import DecodeOptions
    from binlake.events.format import FormatDescriptionEvent, StartV3Event
    from binlake.events.query import QueryEvent

__all__ = [
    "MODE_NO_BACKSLASH_ESCAPES",
    "Altered",
    "SchemaTracker",
    "TableSchema",
    "TrackedColumn",
    "column_from_sql",
    "declared_column",
    "is_ddl",
    "schema_tracker",
    "split_statements",
]

T = ColumnType


# ---- the tracked schema ----------------------------------------------------------------------------------------

_TEMPORAL = frozenset({"time", "datetime", "timestamp"})
_VERSIONING_COLUMN = re.compile(r"\bAS\s+ROW\s+(?:START|END)\b", re.IGNORECASE)
_WITH_VERSIONING = ("WITH", "SYSTEM", "VERSIONING")


@dataclass(frozen=True, slots=True)
class TrackedColumn:
    """One column as its DDL declares it.

    ``type_name`` is the declared type in lower case (``"datetime"``, ``"int"``, ``"double precision"``),
    ``params`` what its parentheses hold (``("10", "2")`` for DECIMAL(10,2), the member names of an ENUM),
    ``definition`` the text after the name as logged, ``charset`` the collation id of a string column's charset
    (:data:`~binlake.values.collations.BINARY` for the binary types; ``None`` where not known or not a string: see
    :meth:`SchemaTracker.execute` for where it comes from).
    """

    name: str
    type_name: str
    params: tuple[str, ...] = ()
    unsigned: bool = False
    definition: str = ""
    charset: int | None = None

    @property
    def fsp(self) -> int | None:
        """Fractional-second digits of a TIME/DATETIME/TIMESTAMP column (0 without parentheses), else ``None``."""
        if self.type_name not in _TEMPORAL:
            return None
        if not self.params:
            return 0
        p = self.params[0]
        return int(p) if p.isdigit() and int(p) <= 6 else None


@dataclass(frozen=True, slots=True)
class TableSchema:
    """A table's columns in table (and table-map) order; ``schema`` is ``None`` for a table given without one.

    ``primary_key`` names the columns of its PRIMARY KEY in key order, spelt as the columns are; empty when the
    table has none or the tracker could not follow it (see :meth:`SchemaTracker.primary_key`).  ``sequence``: a
    MariaDB SEQUENCE (``CREATE SEQUENCE``, ``CREATE TABLE ... SEQUENCE=1`` or ``LIKE`` one).  ``collation``: the
    table's default collation id (what a column added without a charset takes), ``None`` when not known.
    """

    schema: str | None
    name: str
    columns: tuple[TrackedColumn, ...]
    primary_key: tuple[str, ...] = ()
    sequence: bool = False
    collation: int | None = None

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def row_key(self) -> tuple[str, ...]:
        """The columns that tell the table's rows apart for its current state: the primary key, or for a sequence
        (no key, one row) the columns its row keeps from one CREATE/ALTER SEQUENCE to the next: NEXTVAL and SETVAL
        write only ``next_not_cached_value`` and ``cycle_count`` (sql/sql_sequence.cc ``SEQUENCE::next_value``,
        ``set_value``), so every write of its row has the same key."""
        if self.sequence and not self.primary_key and self.column_names == SEQUENCE_COLUMN_NAMES:
            return _SEQUENCE_ROW_KEY
        return self.primary_key

    def agrees_with(self, columns: Sequence[Column]) -> bool:
        """Do these columns describe a table map's ``columns``: as many, the names the map logs (if it does), each
        declared type one the map's type code can stand for (types the tracker does not know are not checked)?"""
        if len(self.columns) != len(columns):
            return False
        for col, tracked in zip(columns, self.columns, strict=True):
            if col.name is not None and col.name.casefold() != tracked.name.casefold():
                return False
            codes = _CODES.get(tracked.type_name)
            if codes is not None and col.type_code not in codes:
                return False
            if col.type_code in OLD_TEMPORAL and tracked.fsp is None:
                return False  # declared as something that is not a temporal type (or with a bad fsp)
        return True

    def index(self, name: str) -> int | None:
        """Position of the column ``name`` (column names are case-insensitive in both servers)."""
        return _find(self.columns, name)


@dataclass(frozen=True, slots=True)
class Altered:
    """What an ALTER TABLE did to a table's columns (:attr:`SchemaTracker.altered`): the table ``before`` and
    ``after`` it, and ``was``: per column of ``before`` that is still there (its name folded), its name ``after``
    (a RENAME COLUMN or CHANGE renames it; a dropped column is not in it).  A column of ``after`` no column of
    ``before`` leads to is new: the server fills it with its default."""

    before: TableSchema
    after: TableSchema
    was: Mapping[str, str]

    def source(self, name: str) -> TrackedColumn | None:
        """The column of :attr:`before` that column ``name`` of :attr:`after` holds the values of (``None``: a new
        column)."""
        folded = name.casefold()
        for old, new in self.was.items():
            if new.casefold() == folded:
                i = self.before.index(old)
                return None if i is None else self.before.columns[i]
        return None


# Type-map codes each declared type may be logged as (Field::binlog_type() of each Field in sql/field.cc): what a
# tracked table must agree with before its fsp is used.  Types not listed (user types, INET6, UUID...) are not
# checked.
_FAMILIES: tuple[tuple[str, frozenset[int]], ...] = (
    ("tinyint, bool, boolean, int1", frozenset({T.TINY})),
    ("smallint, int2", frozenset({T.SHORT})),
    ("mediumint, int3, middleint", frozenset({T.INT24})),
    ("int, integer, int4", frozenset({T.LONG})),
    ("bigint, int8, serial", frozenset({T.LONGLONG})),
    ("float, real", frozenset({T.FLOAT, T.DOUBLE})),  # FLOAT(p > 24) is DOUBLE; REAL is FLOAT in REAL_AS_FLOAT
    ("double, double precision, float8", frozenset({T.DOUBLE})),
    ("float4", frozenset({T.FLOAT})),
    ("decimal, dec, numeric, fixed", frozenset({T.NEWDECIMAL, T.DECIMAL})),
    ("bit", frozenset({T.BIT})),
    ("date", frozenset({T.DATE, T.NEWDATE})),
    ("time", frozenset({T.TIME, T.TIME2})),
    ("datetime", frozenset({T.DATETIME, T.DATETIME2})),
    ("timestamp", frozenset({T.TIMESTAMP, T.TIMESTAMP2})),
    ("year", frozenset({T.YEAR})),
    ("char, character, nchar, binary, national char, national character", frozenset({T.STRING})),
    (
        "varchar, varbinary, nvarchar, character varying, char varying, national varchar",
        frozenset({T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED}),
    ),
    (
        "tinyblob, blob, mediumblob, longblob, tinytext, text, mediumtext, longtext, long, long varchar, "
        "long varbinary",
        frozenset({T.BLOB, T.BLOB_COMPRESSED}),
    ),
    ("json", frozenset({T.JSON, T.BLOB})),  # MariaDB's JSON is LONGTEXT
    ("enum", frozenset({T.STRING, T.ENUM})),
    ("set", frozenset({T.STRING, T.SET})),
    (
        "geometry, point, linestring, polygon, multipoint, multilinestring, multipolygon, geometrycollection",
        frozenset({T.GEOMETRY}),
    ),
)
_CODES: dict[str, frozenset[int]] = {name: codes for names, codes in _FAMILIES for name in names.split(", ")}
# The code a table map of today's servers logs for each family (the newer of the codes a family may be logged as)
_LOGGED = (T.NEWDECIMAL, T.DATETIME2, T.TIMESTAMP2, T.TIME2, T.VARCHAR, T.BLOB, T.ENUM, T.SET, T.DATE)


def declared_column(col: TrackedColumn, index: int) -> Column | None:
    """The column a FULL table map of a table declared with ``col`` (at ``index``) would carry, as far as its DDL
    tells it (type, precision and scale, fsp, signedness, charset, members; not its byte length): what a column
    gets in the lake before any row of it was logged (an ALTER's new type).  ``None`` for a type the tracker does
    not know."""
    codes = _CODES.get(col.type_name)
    if codes is None:
        return None
    code = next((c for c in _LOGGED if c in codes), min(codes))
    params = [int(p) for p in col.params if p.isdigit()] if col.type_name not in ("enum", "set") else []
    precision = scale = None
    if code == T.FLOAT and params and params[0] > 24:
        code = T.DOUBLE  # FLOAT(p) with p > 24 is a DOUBLE (Field_double)
    if code == T.NEWDECIMAL:
        precision = params[0] if params else 10  # DECIMAL means DECIMAL(10,0)
        scale = params[1] if len(params) > 1 else 0
    return Column(
        index=index,
        type_code=T.STRING if code in (T.ENUM, T.SET) else code,
        meta=0,
        real_type_code=code,
        precision=precision,
        scale=scale,
        fsp=col.fsp if code in (T.DATETIME2, T.TIMESTAMP2, T.TIME2) else None,
        bits=(params[0] if params else 1) if code == T.BIT else None,
        name=col.name,
        unsigned=col.unsigned,
        charset=col.charset,
        enum_values=col.params if col.type_name == "enum" else None,
        set_values=col.params if col.type_name == "set" else None,
    )


# Two-word type names: their first word -> the second words that make a type with it ("double" -> "precision")
_TWO_WORDS: dict[str, frozenset[str]] = {
    first: frozenset(n.split(" ")[1] for n in _CODES if n.startswith(first + " "))
    for first in {n.split(" ")[0] for n in _CODES if " " in n}
}

# First words of CREATE TABLE elements and ALTER clauses that are not columns (all reserved words, so a column
# of that name is quoted and its first token is not a plain word)
_NOT_COLUMN = frozenset({"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK"})
_NOT_ALTERED_COLUMN = _NOT_COLUMN | {"PARTITION", "PERIOD", "DEFAULT"}
# MariaDB's system-versioning columns, added at the end of a table WITH SYSTEM VERSIONING that declares none
# (vers_create_fields in sql/handler.cc: TIMESTAMP(6), INVISIBLE_SYSTEM)
_ROW_START = TrackedColumn("row_start", "timestamp", ("6",), False, "TIMESTAMP(6) GENERATED ALWAYS AS ROW START")
_ROW_END = TrackedColumn("row_end", "timestamp", ("6",), False, "TIMESTAMP(6) GENERATED ALWAYS AS ROW END")
# The columns of every MariaDB sequence (sql/sql_sequence.cc ``sequence_structure``, as SHOW CREATE TABLE prints
# them); a sequence table has no key (check_sequence_fields: "Sequence tables cannot have any keys") and one row.
SEQUENCE_COLUMNS = tuple(
    TrackedColumn(name, type_name, ("1" if type_name == "tinyint" else "21",), unsigned, definition)
    for name, type_name, unsigned, definition in (
        ("next_not_cached_value", "bigint", False, "bigint(21) NOT NULL"),
        ("minimum_value", "bigint", False, "bigint(21) NOT NULL"),
        ("maximum_value", "bigint", False, "bigint(21) NOT NULL"),
        ("start_value", "bigint", False, "bigint(21) NOT NULL"),
        ("increment", "bigint", False, "bigint(21) NOT NULL"),
        ("cache_size", "bigint", True, "bigint(21) unsigned NOT NULL"),
        ("cycle_option", "tinyint", True, "tinyint(1) unsigned NOT NULL"),
        ("cycle_count", "bigint", False, "bigint(21) NOT NULL"),
    )
)
SEQUENCE_COLUMN_NAMES = tuple(c.name for c in SEQUENCE_COLUMNS)
_SEQUENCE_ROW_KEY = ("minimum_value", "maximum_value", "start_value", "increment", "cache_size", "cycle_option")

_Key = tuple[str | None, str]
_Position = tuple[str, str]  # ("first", "") or ("after", column name)


class _Forget(Exception):
    """An ALTER the tracker cannot follow on a table it knows: the table is forgotten."""


def _key(schema: str | None, name: str) -> _Key:
    """Tables are looked up case-insensitively (lower_case_table_names differs between servers)."""
    return (schema.casefold() if schema is not None else None, name.casefold())


def _is_p(tok: Token, char: str) -> bool:
    return tok.kind == "p" and tok.text == char


def _matching(toks: Sequence[Token], i: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``i``."""
    k = matching(toks, i)
    if k is None:
        raise Unread("unbalanced parentheses")
    return k


def _toks(sql: str, sql_mode: int = 0) -> list[Token]:
    return list(tokens(sql, sql_mode))


# Declared types whose values are bytes whatever the table's charset (charset ``binary``; MariaDB's INET4, INET6
# and UUID are BINARY(n) in the record), and the string types that take a charset (the table's unless they say)
_BINARY_TYPES = frozenset(
    {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "long varbinary", "inet4", "inet6", "uuid"}
)
_NATIONAL_TYPES = frozenset({"nchar", "national char", "national character", "nvarchar", "national varchar"})
_TEXT_TYPES = _NATIONAL_TYPES | {"char", "character", "varchar", "character varying", "char varying", "long"}
_TEXT_TYPES |= {"tinytext", "text", "mediumtext", "longtext", "long varchar", "enum", "set", "json"}
_CHARSET_WORDS = (("CHARACTER", "SET"), ("CHAR", "SET"), ("CHARSET",))
# column attributes that name a charset alone (sql/sql_yacc.yy opt_charset_with_opt_binary: ASCII is latin1,
# UNICODE ucs2, BYTE binary); NATIONAL types are utf8mb3 (my_charset_utf8mb3_general_ci in both servers)
_CHARSET_ATTRIBUTES = {"ASCII": "latin1", "UNICODE": "ucs2", "BYTE": "binary"}
_UTF8MB3 = 33  # utf8mb3_general_ci
_UTF8MB4_BIN = 46  # MariaDB's JSON: LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin


def _named_charset(toks: Sequence[Token]) -> tuple[bool, int | None]:
    """``(stated, collation id)`` of the charset and collation ``toks`` state at their top level (``CHARACTER SET
    x``, ``CHARSET [=] x``, ``COLLATE [=] y``, the attributes ASCII, UNICODE, BYTE); ``stated`` False when they
    state none, the id ``None`` when the names are not known (``DEFAULT`` names the database's: not known here)."""
    charset: str | None = None
    collation: str | None = None
    stated = False
    level = 0
    i, n = 0, len(toks)
    while i < n:
        tok = toks[i]
        if tok.kind == "p" and tok.text in "()":
            level += 1 if tok.text == "(" else -1
        if level or tok.kind != "word":
            i += 1
            continue
        word = tok.text.upper()
        hit = next(
            (w for w in _CHARSET_WORDS if all(i + k < n and keyword(toks[i + k]) == x for k, x in enumerate(w))), None
        )
        if hit is not None:
            i += len(hit)
        elif word == "COLLATE":
            i += 1
        elif word in _CHARSET_ATTRIBUTES:
            stated, charset, i = True, _CHARSET_ATTRIBUTES[word], i + 1
            continue
        else:
            i += 1
            continue
        if i < n and _is_p(toks[i], "="):
            i += 1
        if i < n and toks[i].kind in ("word", "bq", "sq", "rs"):
            value = unquote(toks[i])
            stated = True
            if hit is not None:
                charset = value
            else:
                collation = value
        i += 1
    if not stated:
        return False, None
    if collation is not None and collation.upper() != "DEFAULT":
        found = collation_id(collation)
        if found is not None:
            return True, found
    if charset is None or charset.upper() == "DEFAULT":
        return True, None
    return True, collation_id(charset)


def _column_charset(type_name: str, attributes: Sequence[Token], default: int | None) -> int | None:
    """The collation id of a column of ``type_name`` whose definition goes on with ``attributes``: ``binary`` for
    the binary types, the charset or collation it states, else its type's (NATIONAL, MariaDB's JSON), else the
    table's ``default``; ``None`` for the types that have none."""
    if type_name in _BINARY_TYPES:
        return BINARY
    if type_name not in _TEXT_TYPES:
        return None
    stated, found = _named_charset(attributes)
    if stated:
        return found
    if type_name in _NATIONAL_TYPES:
        return _UTF8MB3
    return _UTF8MB4_BIN if type_name == "json" else default


def _column(name: str, toks: Sequence[Token], sql: str, default: int | None = None) -> TrackedColumn:
    """A column from its name and the tokens of its definition (type, then attributes); ``default``: the table's
    default collation (:func:`_column_charset`)."""
    j = 2 if len(toks) > 2 and _is_p(toks[1], ".") else 0  # a qualified type: mariadb_schema.date
    if len(toks) <= j or toks[j].kind not in ("word", "bq"):
        raise Unread("column without a type")
    type_name = unquote(toks[j]).lower()
    j += 1
    second = toks[j].text.lower() if j < len(toks) and toks[j].kind == "word" else ""
    if second in _TWO_WORDS.get(type_name, ()):
        type_name += " " + second
        j += 1
    params: tuple[str, ...] = ()
    if j < len(toks) and _is_p(toks[j], "("):
        k = _matching(toks, j)
        params = tuple(
            unquote(part[0]) if len(part) == 1 else " ".join(t.text for t in part)
            for part in split_commas(toks[j + 1 : k])
        )
        j = k + 1
    words = top_level_words(toks[j:])
    unsigned = "UNSIGNED" in words or "ZEROFILL" in words
    charset = _column_charset(type_name, toks[j:], default)
    return TrackedColumn(name, type_name, params, unsigned, sql[toks[0].start : toks[-1].end], charset)


def column_from_sql(name: str, definition: str) -> TrackedColumn | None:
    """The column ``name`` of a definition as SQL writes it after the name (``"int(10) unsigned"``,
    ``"varchar(40) CHARACTER SET utf8mb4"``: ``information_schema.COLUMNS.COLUMN_TYPE`` too), read as a ``CREATE
    TABLE``'s; ``None`` when it is not one.

    >>> c = column_from_sql("e", "enum('a','b') CHARACTER SET latin1")
    >>> c.type_name, c.params, c.charset
    ('enum', ('a', 'b'), 8)
    """
    try:
        return _column(name, _toks(definition), definition)
    except Unread:
        return None


def _element(part: Sequence[Token], sql: str, default: int | None = None) -> TrackedColumn | None:
    """One element of a CREATE TABLE list (or of ``ALTER ... ADD (...)``): a column, or ``None`` for a key etc."""
    first = part[0]
    word = keyword(first)
    second = keyword(part[1]) if len(part) > 1 else ""
    if word in _NOT_COLUMN or (word, second) in (("PERIOD", "FOR"), ("VECTOR", "INDEX"), ("VECTOR", "KEY")):
        return None
    if not is_name(first):
        raise Unread("element without a name")
    return _column(unquote(first), part[1:], sql, default)


def _position(toks: list[Token]) -> tuple[list[Token], _Position | None]:
    """A column definition of ALTER without its trailing ``FIRST`` / ``AFTER col``, and that position."""
    if toks and keyword(toks[-1]) == "FIRST":
        return toks[:-1], ("first", "")
    if len(toks) >= 2 and keyword(toks[-2]) == "AFTER" and is_name(toks[-1]):
        return toks[:-2], ("after", unquote(toks[-1]))
    return toks, None


def _find(cols: Sequence[TrackedColumn], name: str) -> int | None:
    folded = name.casefold()
    return next((i for i, c in enumerate(cols) if c.name.casefold() == folded), None)


def _place(cols: list[TrackedColumn], col: TrackedColumn, where: _Position | None) -> None:
    if where is None:
        cols.append(col)
    elif where[0] == "first":
        cols.insert(0, col)
    else:
        i = _find(cols, where[1])
        if i is None:
            raise _Forget(f"AFTER an unknown column {where[1]!r}")
        cols.insert(i + 1, col)


def _add_versioning(cols: list[TrackedColumn]) -> None:
    if not any(_VERSIONING_COLUMN.search(c.definition) for c in cols):
        cols += [_ROW_START, _ROW_END]


# ---- primary keys ---------------------------------------------------------------------------------------------

_ROW_END_COLUMN = re.compile(r"\bAS\s+ROW\s+END\b", re.IGNORECASE)


def _inline_primary(toks: Sequence[Token]) -> bool:
    """Does a column definition (the tokens after the column's name) make that column the primary key?

    The column attribute ``opt_primary KEY_SYM`` of sql/sql_yacc.yy (both servers): ``PRIMARY KEY`` or a bare
    ``KEY`` is the primary key; ``UNIQUE [KEY]`` is a unique key (``UNIQUE KEY KEY`` is both).

    >>> [_inline_primary(_toks(d)) for d in ("INT KEY", "INT UNIQUE KEY COMMENT 'primary key'", "INT PRIMARY KEY")]
    [True, False, True]
    """
    words = top_level_words(toks)
    return any(w == "KEY" and words[i - 1] != "UNIQUE" for i, w in enumerate(words) if i)


def _primary_element(part: Sequence[Token]) -> tuple[list[str], bool] | None:
    """The key parts of a ``[CONSTRAINT [c]] PRIMARY KEY [IF NOT EXISTS] [name] [USING type] (parts) [options]``
    element (``key_def`` in sql/sql_yacc.yy; the names are ignored, the key is always ``PRIMARY``) and whether it
    says ``IF NOT EXISTS``; ``None`` when ``part`` is another element.

    A key part is ``col [(prefix length)] [ASC | DESC]``; a part of any other form (MySQL's functional
    ``((expr))``, which the server refuses for a primary key) gives no names: a key the caller cannot know.

    >>> _primary_element(_toks("CONSTRAINT pk PRIMARY KEY USING BTREE (`b`(10) DESC, a)"))
    (['b', 'a'], False)
    """
    s = Cursor(part)
    if s.accept("CONSTRAINT") and s.kw() != "PRIMARY":
        s.i += 1  # the constraint's name
    if not s.accept("PRIMARY", "KEY"):
        return None
    if_not_exists = s.accept("IF", "NOT", "EXISTS")
    while s.peek().kind != "eof" and not _is_p(s.peek(), "("):
        s.i += 1  # the index name, USING BTREE | HASH
    if s.peek().kind == "eof":
        return [], if_not_exists
    names = []
    for key_part in split_commas(part[s.i + 1 : _matching(part, s.i)]):
        rest = key_part[1:]
        if rest and _is_p(rest[0], "("):
            rest = rest[_matching(rest, 0) + 1 :]  # a prefix length
        if rest and keyword(rest[0]) in ("ASC", "DESC"):
            rest = rest[1:]
        if not is_name(key_part[0]) or rest:
            return [], if_not_exists
        names.append(unquote(key_part[0]))
    return names, if_not_exists


def _resolve_key(keys: Sequence[Sequence[str]], cols: Sequence[TrackedColumn]) -> tuple[str, ...]:
    """The one primary key ``keys`` declare, its columns spelt as ``cols`` spell them; ``()`` for none, and for
    what the server refuses (two primary keys: ER_MULTIPLE_PRI_KEY; a key column the table lacks or repeats) or
    the tracker could not read (an empty key)."""
    if len(keys) != 1 or not keys[0]:
        return ()
    names: list[str] = []
    for part in keys[0]:
        i = _find(cols, part)
        if i is None or cols[i].name in names:
            return ()
        names.append(cols[i].name)
    return _versioned_key(tuple(names), cols)


def _versioned_key(key: tuple[str, ...], cols: Sequence[TrackedColumn]) -> tuple[str, ...]:
    """``key`` as MariaDB keeps it in a system-versioned table: with the ``AS ROW END`` column last, unless the key
    has it (sql/sql_table.cc ``vers_prepare_keys``: every unique key of a versioned table gets the row end).

    >>> _versioned_key(("id",), [_ROW_END])
    ('id', 'row_end')
    """
    end = next((c.name for c in cols if _ROW_END_COLUMN.search(c.definition)), None)
    if not key or end is None or end.casefold() in (k.casefold() for k in key):
        return key
    return (*key, end)


class _KeyEdit:
    """What one ``ALTER TABLE`` does to the primary key, gathered clause by clause and applied at its end the way
    sql/sql_table.cc ``mysql_prepare_alter_table`` rebuilds the keys: the old key's parts are looked up by name in
    the new column list (a CHANGE/RENAME carries the part to the new name; a part whose column is dropped binds to a
    column added under that name, else it goes: the key with it when no part is left, and a unique key left with a
    part fewer is an error, ER_KEY_COLUMN_DOES_NOT_EXIST); a dropped key goes; then the added keys come, named as
    in the new table.  ``ADD PRIMARY KEY IF NOT EXISTS`` is ignored when the old table has a primary key, even one
    the same statement drops (``handle_if_exists_options`` looks at the old table).
    """

    __slots__ = ("added", "dropped", "quiet", "was")

    def __init__(self, cols: Sequence[TrackedColumn]) -> None:
        self.was: dict[str, str | None] = {c.name.casefold(): c.name for c in cols}  # old name -> new, None: gone
        self.quiet: set[str] = set()  # old columns whose parts go without an error (DROP SYSTEM VERSIONING)
        self.dropped = False
        self.added: list[tuple[list[str], bool]] = []  # (parts, IF NOT EXISTS)

    def rename(self, old: str, new: str | None, quiet: bool = False) -> None:
        """The column now called ``old`` is called ``new`` (``None``: dropped, ``quiet``: its key part just goes)."""
        folded = old.casefold()
        for k, v in self.was.items():
            if v is not None and v.casefold() == folded:
                self.was[k] = new
                if quiet:
                    self.quiet.add(k)

    def key(self, old_key: tuple[str, ...], cols: Sequence[TrackedColumn]) -> tuple[str, ...]:
        """The primary key after the ALTER, for the old key ``old_key`` and the new columns ``cols``."""
        kept: list[str] = []
        if not self.dropped:
            current = {v.casefold() for v in self.was.values() if v is not None}
            lost = 0
            for part in old_key:
                new = self.was.get(part.casefold())
                if new is None and _find(cols, part) is not None and part.casefold() not in current:
                    new = part  # a column added under a dropped column's name takes its place in the key
                if new is not None:
                    kept.append(new)
                elif part.casefold() not in self.quiet:
                    lost += 1
            if lost and kept:
                return ()  # the server refuses (ER_KEY_COLUMN_DOES_NOT_EXIST): not a statement it logs
        added = [parts for parts, if_not_exists in self.added if not (if_not_exists and old_key)]
        if not added:
            return _resolve_key([kept], cols) if kept else ()
        return () if kept else _resolve_key(added, cols)


def _check_rename(cols: Sequence[TrackedColumn], i: int, new: str) -> None:
    """Column ``i`` takes the name ``new``: an error unless that name is free.  The server resolves every clause
    against the old table, so ``RENAME COLUMN a TO b, RENAME COLUMN b TO a`` swaps two columns; applied one clause
    after the other here, it would not: such an ALTER is not followed."""
    j = _find(cols, new)
    if j is not None and j != i:
        raise _Forget(f"a second column named {new!r}")


def _alter_clause(
    spec: list[Token], cols: list[TrackedColumn], sql: str, keys: _KeyEdit, default: int | None = None
) -> None:
    """Apply one ALTER TABLE clause to ``cols`` (the table's own ``RENAME [TO]`` and its charset options are read by
    the caller; ``default``: the table's default collation after the statement, which new columns take)."""
    s = Cursor(spec)
    if s.accept("ADD"):
        column = s.accept("COLUMN")
        if_not_exists = s.accept("IF", "NOT", "EXISTS")
        if not column and s.accept("SYSTEM", "VERSIONING"):
            _add_versioning(cols)
            return None
        if not column and s.kw() in _NOT_ALTERED_COLUMN:
            primary = _primary_element(spec[s.i :])
            if primary is not None:
                keys.added.append((primary[0], primary[1] or if_not_exists))
            return None
        if _is_p(s.peek(), "("):
            parts = split_commas(spec[s.i + 1 : _matching(spec, s.i)])
            for part, added in list(zip(parts, [_element(part, sql, default) for part in parts], strict=True)):
                primary = _primary_element(part) if added is None else None
                if primary is not None:
                    keys.added.append(primary)
                elif added is not None and not (if_not_exists and _find(cols, added.name) is not None):
                    cols.append(added)
                    if _inline_primary(part[1:]):
                        keys.added.append(([added.name], False))
            return None
        body, where = _position(s.rest())
        col = _column(unquote(body[0]), body[1:], sql, default) if body and is_name(body[0]) else None
        if col is None:
            raise Unread("ADD without a column")
        if not (if_not_exists and _find(cols, col.name) is not None):
            _place(cols, col, where)
        if _inline_primary(body[1:]):  # even on a column IF NOT EXISTS skips: the server adds the key (10.11)
            keys.added.append(([col.name], if_not_exists))
    elif s.kw() in ("MODIFY", "CHANGE"):
        change = s.kw() == "CHANGE"
        s.i += 1
        s.accept("COLUMN")
        if_exists = s.accept("IF", "EXISTS")
        old = s.name()
        body, where = _position(s.rest())
        if change:
            if not body or not is_name(body[0]):
                raise _Forget("CHANGE without a new name")
            new, body = unquote(body[0]), body[1:]
        else:
            new = old
        i = _find(cols, old)
        if i is None:
            if if_exists:
                return None
            raise _Forget(f"{'CHANGE' if change else 'MODIFY'} of an unknown column {old!r}")
        _check_rename(cols, i, new)
        col = _column(new, body, sql, default)
        keys.rename(old, new)
        if _inline_primary(body):
            keys.added.append(([new], False))
        if where is None:
            cols[i] = col
        else:
            del cols[i]
            _place(cols, col, where)
    elif s.accept("DROP"):
        column = s.accept("COLUMN")
        if_exists = s.accept("IF", "EXISTS")
        if not column and s.accept("SYSTEM", "VERSIONING"):
            for c in cols:
                if _VERSIONING_COLUMN.search(c.definition):
                    keys.rename(c.name, None, quiet=True)
            cols[:] = [c for c in cols if not _VERSIONING_COLUMN.search(c.definition)]
            return None
        if not column and s.accept("PRIMARY", "KEY"):
            keys.dropped = True
            return None
        if not column and s.kw() in ("INDEX", "KEY", "CONSTRAINT"):
            s.i += 1
            s.accept("IF", "EXISTS")
            # the primary key's index (and constraint) name is PRIMARY: a reserved word, so quoted
            keys.dropped = keys.dropped or s.name().casefold() == "primary"
            return None
        if not column and s.kw() in _NOT_ALTERED_COLUMN:
            return None
        name = s.name()
        i = _find(cols, name)
        if i is None:
            if if_exists:
                return None
            raise _Forget(f"DROP of an unknown column {name!r}")
        keys.rename(name, None)
        del cols[i]
    elif s.accept("RENAME", "COLUMN"):
        old = s.name()
        s.expect("TO")
        i = _find(cols, old)
        if i is None:
            raise _Forget(f"RENAME of an unknown column {old!r}")
        new = s.name()
        _check_rename(cols, i, new)
        keys.rename(old, new)
        cols[i] = replace(cols[i], name=new)


class SchemaTracker:
    """The tables of a binlog as its DDL left them; see the module docstring.

    ``tables`` seeds it (``{(db, table): TableSchema}`` as :attr:`tables` returns them, keys in any case),
    ``temporary`` the sessions' temporary tables, ``databases`` the databases' default collations (as
    :attr:`databases` returns them).  :attr:`temporary` (a :class:`~binlake.sql.temporary.TemporaryTables`)
    follows them with :meth:`observe`: which of a statement's names are not base tables.  :attr:`generation`
    changes whenever the tables do (a cache key).
    """

    __slots__ = ("_completed", "_databases", "_tables", "altered", "generation", "temporary")

    def __init__(
        self,
        tables: Mapping[_Key, TableSchema] | None = None,
        temporary: TemporaryState | None = None,
        databases: Mapping[str, int] | None = None,
    ) -> None:
        self._tables: dict[_Key, TableSchema] = {}
        for ts in (tables or {}).values():
            self._tables[_key(ts.schema, ts.name)] = ts
        self._databases = {db.casefold(): c for db, c in (databases or {}).items()}
        self._completed: dict[tuple[int, int], tuple[tuple[Column, ...], TableSchema, tuple[Column, ...]]] = {}
        self.temporary = TemporaryTables(temporary)
        self.generation = 0  # bumped whenever the tables change: what was read from them holds while it stays
        self.altered: Altered | None = None  # the last statement's, when it was an ALTER TABLE the tracker followed

    def copy(self) -> SchemaTracker:
        """A tracker that knows what this one knows and follows statements on its own."""
        return SchemaTracker(self._tables, self.temporary.state, self._databases)

    @classmethod
    def from_sql(cls, script: str, db: str | None = None) -> SchemaTracker:
        """A tracker that has seen the statements of ``script`` (``USE db`` and ``DELIMITER`` understood)."""
        tables, databases = _seed(script, db)
        return cls(tables, None, databases)

    # -- what it knows

    @property
    def tables(self) -> dict[_Key, TableSchema]:
        """Every known table by ``(database, table)`` as the DDL spelt them (a copy)."""
        return {(ts.schema, ts.name): ts for ts in self._tables.values()}

    @property
    def databases(self) -> dict[str, int]:
        """The default collation id of every database whose default the DDL told (names case-folded; a copy)."""
        return dict(self._databases)

    def table(self, schema: str | None, name: str) -> TableSchema | None:
        """The table ``schema.name``; a table tracked without a database (a seed without ``USE``) matches any."""
        ts = self._tables.get(_key(schema, name))
        if ts is None and schema is not None:
            ts = self._tables.get(_key(None, name))
        return ts

    def column_names(self, schema: str | None, name: str, count: int | None = None) -> tuple[str, ...] | None:
        """The column names of ``schema.name`` in table order, ``None`` when unknown or not ``count`` of them.

        For table maps that log no names (``binlog_row_metadata=MINIMAL``)::

            names = tracker.column_names(tm.schema, tm.table, tm.column_count) or tm.column_names
        """
        ts = self.table(schema, name)
        if ts is None or (count is not None and count != len(ts.columns)):
            return None
        return ts.column_names

    def primary_key(self, schema: str | None, name: str) -> tuple[str, ...] | None:
        """The columns of the PRIMARY KEY of ``schema.name`` in key order (spelt as the columns are), ``()`` when
        it has none, ``None`` when the table is unknown.

        ``()`` also stands for a key the tracker could not follow: it prefers no key to a wrong one.  Only a
        declared PRIMARY KEY counts, not the first UNIQUE NOT NULL key InnoDB clusters a table without one by.
        MariaDB adds the row-end column to the key of a system-versioned table, and so does the tracker::

            >>> s = SchemaTracker.from_sql(
            ...     "CREATE TABLE t (a INT, b INT KEY); CREATE TABLE v (a INT, PRIMARY KEY (a)) WITH SYSTEM VERSIONING;"
            ...     "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (`B`, a)"
            ... )
            >>> s.primary_key("d", "t"), s.primary_key("d", "v"), s.primary_key("d", "nope")
            (('b', 'a'), ('a', 'row_end'), None)
        """
        ts = self.table(schema, name)
        return None if ts is None else ts.primary_key

    def complete(self, schema: str, name: str, columns: tuple[Column, ...]) -> tuple[Column, ...]:
        """``columns`` of a table map, with the fsp of its old-type TIME/DATETIME/TIMESTAMP columns from the DDL.

        Unchanged when the table is unknown or its tracked columns disagree with the map (count, names the map
        logs, type families).  The same ``columns`` give the same tuple back, so the row decoders built for it
        are reused.
        """
        ts = self.table(schema, name)
        if ts is None:
            return columns
        hit = self._completed.get((id(columns), id(ts)))
        if hit is not None and hit[0] is columns and hit[1] is ts:
            return hit[2]
        out = _with_fsp(ts, columns)
        if len(self._completed) >= 256:
            self._completed.clear()
        self._completed[(id(columns), id(ts))] = (columns, ts, out)
        return out

    # -- what it is told

    def observe(self, ev: QueryEvent) -> bool:
        """Follow a QUERY event's statement if it is DDL (cheap for any other), and the sessions' temporary tables
        it changes; True when the schema changed."""
        scope = self.temporary.statement(ev)
        if not is_ddl(ev.query_raw):
            return False
        flags3 = ev.status("GTID_FLAGS3")
        if isinstance(flags3, tuple) and flags3[0] & (FL_START_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            return False  # a two-phase ALTER counts when its COMMIT ALTER (the same text) is logged
        mode = ev.status("SQL_MODE")
        return self.execute(ev.query, ev.db or None, mode if isinstance(mode, int) else 0, scope, server_collation(ev))

    def started(self, ev: FormatDescriptionEvent | StartV3Event) -> None:
        """Follow a format description: one that says the server started forgets the sessions' temporary tables
        (:meth:`TemporaryTables.started <binlake.sql.temporary.TemporaryTables.started>`)."""
        self.temporary.started(ev)

    def execute(
        self,
        sql: str,
        db: str | None = None,
        sql_mode: int = 0,
        scope: Scope = NO_TEMPORARY,
        server: int | None = None,
    ) -> bool:
        """Apply one statement run with default database ``db`` in a session whose temporary tables are ``scope``
        (:meth:`TemporaryTables.scope <binlake.sql.temporary.TemporaryTables.scope>`: the statement's names that
        stand for them are not base tables) and whose ``collation_server`` is ``server`` (:func:`server_collation`;
        ``None``: not known); True when the schema changed.

        A string column's charset (:attr:`TrackedColumn.charset`) is, as the server decides it: the charset or
        collation its definition states (``binary`` for the binary types, utf8mb3 for NATIONAL ones), else its
        table's default: the one ``CREATE TABLE`` (or a later ``ALTER TABLE``) states, else its database's default
        as ``CREATE``/``ALTER DATABASE`` stated it, else the ``collation_server`` of the ``CREATE DATABASE`` (a
        database created without a charset takes it), else (a database the statements never created) the
        ``collation_server`` of the ``CREATE TABLE`` itself: the server's default, which a database created on it
        without a charset has.  ``ALTER TABLE ... CONVERT TO CHARACTER SET`` changes every string column.

        Statements it does not understand change nothing (see the module docstring).
        """
        s = Cursor(_toks(sql, sql_mode))
        self.altered = None
        try:
            if s.accept("CREATE"):
                if _database_statement(s):
                    return self._database(s, db, server, create=True)
                return self._create(s, db, sql, scope, server)
            if s.accept("ALTER"):
                if _database_statement(s):
                    return self._database(s, db, server, create=False)
                return self._alter(s, db, sql, scope)
            if s.accept("RENAME"):
                return self._rename(s, db, scope)
            if s.accept("DROP"):
                return self._drop(s, db, scope)
        except Unread:
            pass
        return False

    def feed_script(self, script: str, db: str | None = None) -> int:
        """Apply every statement of ``script`` (``USE db`` switches the default database); returns how many
        changed the schema."""
        changed = 0
        for stmt in split_statements(script):
            s = Cursor(_toks(stmt))
            if s.accept("USE"):
                with contextlib.suppress(Unread):
                    db = s.name()
            elif is_ddl(stmt.encode("utf-8", "surrogateescape")):
                changed += self.execute(stmt, db)
        return changed

    # -- statements

    def _put(self, ts: TableSchema) -> bool:
        self._tables[_key(ts.schema, ts.name)] = ts
        self.generation += 1
        return True

    def _forget(self, schema: str | None, name: str) -> bool:
        if self._tables.pop(_key(schema, name), None) is None:
            return False
        self.generation += 1
        return True

    def _default_collation(self, schema: str | None, server: int | None) -> int | None:
        """The default collation of a table created in ``schema`` without one (:meth:`execute`)."""
        known = self._databases.get(schema.casefold()) if schema is not None else None
        return known if known is not None else server

    def _database(self, s: Cursor, db: str | None, server: int | None, *, create: bool) -> bool:
        """``CREATE [OR REPLACE] {DATABASE | SCHEMA} [IF NOT EXISTS] d [options]`` and ``ALTER {DATABASE | SCHEMA}
        [d] [options]`` (the cursor after CREATE/ALTER): the database's default collation."""
        replaced = s.accept("OR", "REPLACE")
        s.i += 1  # DATABASE | SCHEMA
        exists = s.accept("IF", "NOT", "EXISTS")
        name = s.name() if create or (is_name(s.peek()) and keyword(s.peek()) not in _DATABASE_OPTIONS) else db
        if name is None:
            return False
        key = name.casefold()
        if create and exists and not replaced and key in self._databases:
            return False
        stated, found = _named_charset(s.rest())
        collation = found if stated else server if create else self._databases.get(key)
        if collation is None:
            return self._databases.pop(key, None) is not None
        changed = self._databases.get(key) != collation
        self._databases[key] = collation
        return changed

    def _create(self, s: Cursor, db: str | None, sql: str, scope: Scope, server: int | None = None) -> bool:
        head = create_head(s)
        if head.temporary:
            return False  # a temporary table shadows the base table of its name, whose rows are the ones logged
        schema, name = head.name[0] or db, head.name[1]
        if head.if_not_exists and self._tables.get(_key(schema, name)) is not None:
            return False  # the statement left the existing table alone
        if head.sequence:
            if s.kw() == "AS":
                return self._forget(schema, name)  # MariaDB 11.5+ value types: not the columns below
            return self._put(TableSchema(schema, name, SEQUENCE_COLUMNS, (), sequence=True))
        like = s.accept("LIKE") or (_is_p(s.peek(), "(") and s.kw(1) == "LIKE" and s.accept_p("(") and s.accept("LIKE"))
        if like:
            src_schema, src = s.qualified()
            source = None if scope.temporary(src_schema or db, src) else self.table(src_schema or db, src)
            if source is None:
                return self._forget(schema, name)
            return self._put(replace(source, schema=schema, name=name))
        if not _is_p(s.peek(), "("):
            return self._forget(schema, name)  # CREATE TABLE ... SELECT: the columns are the query's
        toks = s.rest()
        k = _matching(toks, 0)
        stated, collation = _named_charset(toks[k + 1 :])
        if not stated:
            collation = self._default_collation(schema, server)
        cols, keys, versioned = [], [], False
        for part in split_commas(toks[1:k]):
            col = _element(part, sql, collation)
            if col is None:
                primary = _primary_element(part)
                keys += [primary[0]] if primary is not None else []
                continue
            cols.append(col)
            if _inline_primary(part[1:]):
                keys.append([col.name])
            # a column WITH SYSTEM VERSIONING makes the table versioned (MariaDB: Vers_parse_info in sql/handler.cc)
            versioned = versioned or _has_words(top_level_words(part[1:]), _WITH_VERSIONING)
        tail = top_level_words(toks[k + 1 :])
        if "SELECT" in tail:
            return self._forget(schema, name)  # more columns come from the query
        if versioned or _has_words(tail, _WITH_VERSIONING):
            _add_versioning(cols)
        sequence = _has_words(tail, ("SEQUENCE", "1"))  # the table option SEQUENCE=1 (its "=" is not a word)
        return self._put(TableSchema(schema, name, tuple(cols), _resolve_key(keys, cols), sequence, collation))

    def _alter(self, s: Cursor, db: str | None, sql: str, scope: Scope) -> bool:
        schema, name = alter_head(s)
        ts = None if scope.temporary(schema or db, name) else self.table(schema or db, name)
        if ts is None:
            return False
        cols = list(ts.columns)
        keys = _KeyEdit(cols)
        target: tuple[str | None, str] = (ts.schema, ts.name)
        specs = split_commas(s.rest())
        collation = ts.collation
        for spec in specs:  # the table's new default charset, which the columns this ALTER adds take
            first = keyword(spec[0]) if spec else ""
            if first == "CONVERT":
                collation = _converted(spec, collation, self._databases.get((ts.schema or "").casefold()))
                cols[:] = [replace(c, charset=collation) if _converts(c) else c for c in cols]
            elif first not in _CLAUSE_WORDS:
                stated, found = _named_charset(spec)
                collation = found if stated else collation
        try:
            for spec in specs:
                renamed = rename_clause(spec)
                if renamed is not None:
                    target = (renamed[0] or db, renamed[1])
                    continue
                with contextlib.suppress(Unread):  # a clause it does not know (options, partitions): no change
                    _alter_clause(spec, cols, sql, keys, collation)
        except _Forget:
            return self._forget(ts.schema, ts.name)
        self._forget(ts.schema, ts.name)
        key = keys.key(ts.primary_key, cols)
        after = TableSchema(target[0], target[1], tuple(cols), key, ts.sequence, collation)
        self.altered = Altered(ts, after, {old: new for old, new in keys.was.items() if new is not None})
        return self._put(after)

    def _rename(self, s: Cursor, db: str | None, scope: Scope) -> bool:
        changed = False
        for (schema, name), (new_schema, new), temporary in scope.steps(rename_pairs(s), db):
            ts = None if temporary else self.table(schema or db, name)
            if ts is not None:
                self._forget(ts.schema, ts.name)
                changed = self._put(replace(ts, schema=new_schema or db, name=new))
        return changed

    def _drop_index(self, s: Cursor, db: str | None, scope: Scope) -> bool:
        """``DROP INDEX [IF EXISTS] name ON t``: the primary key goes when ``name`` is (the quoted) ``PRIMARY``."""
        s.accept("IF", "EXISTS")
        index = s.name()
        s.expect("ON")
        schema, name = s.qualified()
        ts = None if scope.temporary(schema or db, name) else self.table(schema or db, name)
        if ts is None or index.casefold() != "primary" or not ts.primary_key:
            return False
        return self._put(replace(ts, primary_key=()))

    def _drop(self, s: Cursor, db: str | None, scope: Scope) -> bool:
        if s.kw() in ("DATABASE", "SCHEMA"):
            gone = drop_database(s).casefold()
            keys = [k for k in self._tables if k[0] == gone]
            for k in keys:
                del self._tables[k]
            self.generation += bool(keys)
            return self._databases.pop(gone, None) is not None or bool(keys)
        if s.accept("INDEX"):
            return self._drop_index(s, db, scope)
        temporary, names = drop_tables(s)
        if temporary:
            return False
        changed = False
        for schema, name in names:
            ts = None if scope.temporary(schema or db, name) else self.table(schema or db, name)
            if ts is not None:
                changed = self._forget(ts.schema, ts.name) or changed
        return changed


def schema_tracker(options: DecodeOptions) -> SchemaTracker | None:
    """The tracker ``options`` ask for: none without ``track_schema``, else one that has seen ``schema_sql``.

    What ``binlake.Decoder``, :func:`~binlake.reader.read_events` and the commands give the decoder when the caller
    gives no tracker of its own.

    >>> from binlake.events.context import DecodeOptions
    >>> schema_tracker(DecodeOptions(track_schema=False)) is None
    True
    >>> schema_tracker(DecodeOptions(schema_sql="CREATE TABLE d.t (a TIME(3))")).table("d", "t").column_names
    ('a',)
    """
    if not options.track_schema:
        return None
    return SchemaTracker.from_sql(options.schema_sql) if options.schema_sql else SchemaTracker()


def _has_words(words: list[str], seq: tuple[str, ...]) -> bool:
    """Do the keywords ``seq`` come one after the other in ``words``?"""
    n = len(seq)
    return any(tuple(words[i : i + n]) == seq for i in range(len(words) - n + 1))


def _with_fsp(ts: TableSchema, columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """``columns`` with the tracked fsp of old-type temporal columns, if ``ts`` agrees with them."""
    if not ts.agrees_with(columns):
        return columns
    return tuple(
        col.with_(fsp=tracked.fsp) if col.type_code in OLD_TEMPORAL and tracked.fsp and col.fsp is None else col
        for col, tracked in zip(columns, ts.columns, strict=True)
    )


@lru_cache(maxsize=16)
def _seed(script: str, db: str | None) -> tuple[dict[_Key, TableSchema], dict[str, int]]:
    """The tables and database defaults a seed script defines (cached: every decoding context of a run starts from
    the same seed)."""
    tracker = SchemaTracker()
    tracker.feed_script(script, db)
    return tracker._tables, tracker._databases


def server_collation(ev: QueryEvent) -> int | None:
    """The ``collation_server`` of the session that ran ``ev`` (its Q_CHARSET_CODE status variable: the client's
    charset, the connection's and the server's collation), ``None`` where not logged."""
    charset = ev.status("CHARSET")
    return charset[2] if isinstance(charset, tuple) and len(charset) == 3 else None


# the first words of ALTER TABLE clauses that are not table options (a clause of options may state a charset)
_CLAUSE_WORDS = frozenset(
    {"ADD", "MODIFY", "CHANGE", "DROP", "ALTER", "RENAME", "CONVERT", "ORDER", "PARTITION", "FORCE", "ALGORITHM"}
)
_DATABASE_OPTIONS = frozenset({"DEFAULT", "CHARACTER", "CHARSET", "CHAR", "COLLATE", "COMMENT", "READ", "ENCRYPTION"})


def _database_statement(s: Cursor) -> bool:
    """Does the statement go on (after CREATE/ALTER) with ``[OR REPLACE] {DATABASE | SCHEMA}``?"""
    k = 2 if s.kw() == "OR" and s.kw(1) == "REPLACE" else 0
    return s.kw(k) in ("DATABASE", "SCHEMA")


def _converted(spec: Sequence[Token], old: int | None, database: int | None) -> int | None:
    """The collation ``CONVERT TO {CHARACTER SET | CHARSET} x [COLLATE y]`` converts to (``DEFAULT``: the
    database's); ``old`` where the clause is not read."""
    s = Cursor(list(spec))
    if not s.accept("CONVERT", "TO"):
        return old
    rest = s.rest()
    if any(keyword(t) == "DEFAULT" for t in rest[:3]):
        return database
    stated, found = _named_charset(rest)
    return found if stated else old


def _converts(col: TrackedColumn) -> bool:
    """Does ``CONVERT TO CHARACTER SET`` change ``col``: a string column, not of a binary type or charset."""
    return col.type_name in _TEXT_TYPES and col.charset != BINARY
