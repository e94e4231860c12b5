"""The statement shapes binlake reads, each answered by one function.

* :func:`control`: transaction control (``BEGIN``, ``START TRANSACTION ...``, ``COMMIT``, ``ROLLBACK``,
  ``SAVEPOINT``, ``ROLLBACK TO``, ``RELEASE SAVEPOINT`` and the ``XA`` statements), the input of
  :mod:`binlake.transactions`;
* :func:`xa_outcome`: what an ``XA COMMIT`` / ``XA ROLLBACK`` decides for an XA transaction prepared earlier;
* :func:`emptied`: the base tables a statement empties without row events (``TRUNCATE``, ``DROP TABLE``, ``CREATE
  OR REPLACE TABLE``, the statements that set a sequence's row: ``CREATE``/``ALTER``/``DROP SEQUENCE``, and ``DROP
  DATABASE``); ``TEMPORARY`` tables never count;
* :func:`moves` and :func:`renames`: the tables ``RENAME TABLE`` or ``ALTER TABLE ... RENAME`` moves;
* the DDL that changes a table's columns is followed by :class:`binlake.schema.SchemaTracker`, which reads it with
  the same lexer and heads (:mod:`binlake.sql.cursor`).

A statement may name a table its session created as ``TEMPORARY`` without saying so (``TRUNCATE t``, ``ALTER TABLE
t``, ``RENAME TABLE t TO u``, ``DROP TABLE t``): the name then stands for the temporary table, which shadows the
base table of that name.  :class:`Scope` holds the temporary tables of the statement's session where it starts
(:class:`binlake.sql.temporary.TemporaryTables` follows them per session) and :meth:`Scope.temporary` is the one
answer to "does this statement act on base table t?" for every reader here and for the schema tracker.

Each starts from the statement's first keyword, and each keyword set has its byte prefilter
(:func:`~binlake.sql.lexer.leading_keyword` of the same set), for callers that look at the raw bytes of many QUERY
events before decoding the few that matter.

Example::

    >>> control("xa commit 'xa-1'")
    Control(kind='xa_commit', name='', xid="X'78612d31',X'',1", one_phase=False)
    >>> emptied("DROP TEMPORARY TABLE t", "shop"), emptied("drop table if exists t, `o`.`u`", "shop")
    ((), (('shop', 't'), ('o', 'u')))
    >>> renames("ALTER TABLE t ADD COLUMN x INT, RENAME TO other.t2", "shop")
    ((('shop', 't'), ('other', 't2')),)
    >>> session = Scope.of([("shop", "t")])  # the session created a TEMPORARY TABLE t
    >>> emptied("TRUNCATE t", "shop", scope=session), emptied("TRUNCATE other.t", "shop", scope=session)
    ((), (('other', 't'),))
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from binlake.sql.cursor import (
    Cursor,
    QName,
    Unread,
    alter_head,
    create_head,
    drop_database,
    drop_tables,
    rename_clause,
    rename_pairs,
)
from binlake.sql.lexer import STRING_KINDS, Token, leading_keyword, split_commas, tokens, unquote

__all__ = [
    "CONTROL_KEYWORDS",
    "EMPTYING_KEYWORDS",
    "NO_TEMPORARY",
    "RENAMING_KEYWORDS",
    "SCHEMA_KEYWORDS",
    "Control",
    "Move",
    "Scope",
    "TableRef",
    "control",
    "emptied",
    "folded",
    "is_ddl",
    "may_control",
    "may_empty",
    "moves",
    "renames",
    "xa_outcome",
]

# First keywords of the statements each reader looks at
SCHEMA_KEYWORDS = frozenset({"CREATE", "ALTER", "RENAME", "DROP"})  # may change a table's columns
EMPTYING_KEYWORDS = frozenset({"TRUNCATE", "DROP", "CREATE", "ALTER"})
RENAMING_KEYWORDS = frozenset({"RENAME", "ALTER"})
CONTROL_KEYWORDS = frozenset({"BEGIN", "START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "XA"})

_IS_DDL = leading_keyword(SCHEMA_KEYWORDS)
_MAY_CONTROL = leading_keyword(CONTROL_KEYWORDS)
_MAY_EMPTY = leading_keyword(EMPTYING_KEYWORDS)


def is_ddl(query: bytes) -> bool:
    """Might the raw statement ``query`` change a table's columns (CREATE, ALTER, RENAME, DROP)?  A cheap test on
    its first keyword; :class:`binlake.schema.SchemaTracker` reads the statements that pass.

    >>> is_ddl(b"/* x */ create table t (a int)"), is_ddl(b"BEGIN"), is_ddl(b"INSERT INTO t VALUES (1)")
    (True, False, False)
    """
    return _IS_DDL.match(query) is not None


def may_control(query: bytes) -> bool:
    """Might the raw statement ``query`` be transaction control?  (A cheap test: :func:`control` decides.)"""
    return _MAY_CONTROL.match(query) is not None


def may_empty(query: bytes) -> bool:
    """Might the raw statement ``query`` empty a table?  (A cheap test: :func:`emptied` decides.)"""
    return _MAY_EMPTY.match(query) is not None


TableRef = tuple[str, str]
"""``(database, table)``; a table ``""`` stands for every table of the database."""


def folded(db: str | None, name: str) -> TableRef:
    """How a session's temporary tables are looked up: ``(database, table)`` case-folded (as the schema tracker
    looks tables up: lower_case_table_names differs between servers), no database as ``""``."""
    return ((db or "").casefold(), name.casefold())


@dataclass(frozen=True, slots=True)
class Scope:
    """The temporary tables of a statement's session where the statement starts, as :func:`folded` names.

    A name among them stands for the session's temporary table, not for the base table of the same name, which it
    shadows (the server looks a name up among the session's temporary tables first: MariaDB
    ``sql/temporary_tables.cc`` ``THD::open_temporary_table``).  :data:`NO_TEMPORARY` is a session without any.
    """

    tables: frozenset[TableRef] = frozenset()

    @classmethod
    def of(cls, tables: Iterable[tuple[str | None, str]]) -> Scope:
        return cls(frozenset(folded(db, name) for db, name in tables))

    def temporary(self, db: str | None, name: str) -> bool:
        """Does the name ``db.name`` (``db``: the statement's default database where the name has none) stand for
        a temporary table of the session?  The one answer to "does this statement act on the base table
        ``db.name``": it does unless this is true."""
        return bool(self.tables) and folded(db, name) in self.tables

    def steps(self, pairs: Iterable[tuple[QName, QName]], db: str | None) -> Iterator[tuple[QName, QName, bool]]:
        """The ``(from, to)`` pairs of a ``RENAME TABLE`` (names without a database are in ``db``), each with
        whether it moves a temporary table: the server runs the pairs in order (``sql/sql_rename.cc``
        ``rename_tables``), so a temporary table one pair moves is known by its new name to the pairs after it."""
        scope = self
        for src, dst in pairs:
            temp = scope.temporary(src[0] or db, src[1])
            if temp:
                moved = folded(src[0] or db, src[1]), folded(dst[0] or db, dst[1])
                scope = Scope(scope.tables - {moved[0]} | {moved[1]})
            yield src, dst, temp


NO_TEMPORARY = Scope()


@dataclass(frozen=True, slots=True)
class Control:
    """A transaction-control statement.

    ``kind``: ``begin`` (``BEGIN [WORK]``, ``START TRANSACTION [...]``), ``commit`` (``COMMIT [WORK] [AND [NO]
    CHAIN] [[NO] RELEASE]``), ``rollback`` (the same with ROLLBACK), ``savepoint``, ``rollback_to`` (``ROLLBACK
    [WORK] TO [SAVEPOINT] name``), ``release`` (``RELEASE SAVEPOINT name``), ``xa_start`` (``XA {START | BEGIN}
    xid``), ``xa_end``, ``xa_prepare``, ``xa_commit`` (``one_phase`` for ``XA COMMIT xid ONE PHASE``) or
    ``xa_rollback``.  ``name``: the savepoint's, case-folded (savepoint names are case-insensitive).  ``xid``: an
    XA statement's XID as :attr:`binlake.events.control.XaPrepareEvent.xid_text` prints it (``None`` when it is
    not a literal binlake reads).
    """

    kind: str
    name: str = ""
    xid: str | None = None
    one_phase: bool = False


_SIMPLE = {"COMMIT": "commit", "ROLLBACK": "rollback"}
_XA = {
    "START": "xa_start",
    "BEGIN": "xa_start",
    "END": "xa_end",
    "PREPARE": "xa_prepare",
    "COMMIT": "xa_commit",
    "ROLLBACK": "xa_rollback",
}
_CHAIN_WORDS = frozenset({"AND", "NO", "CHAIN", "RELEASE"})


def control(query: str, sql_mode: int = 0) -> Control | None:
    """The transaction control ``query`` is (see :class:`Control`), else ``None``.

    >>> control("BEGIN"), control("rollback work to savepoint `S1`"), control("BEGIN NOT ATOMIC SELECT 1")
    (Control(kind='begin', name='', xid=None, one_phase=False), Control(kind='rollback_to', name='s1', \
xid=None, one_phase=False), None)
    """
    return _control(query, sql_mode) if len(query) <= 512 else _read_control(query, sql_mode)


@lru_cache(maxsize=1024)
def _control(query: str, sql_mode: int) -> Control | None:
    """:func:`control` of short statements, cached: the same few (``BEGIN``, ``COMMIT``) come in every
    transaction."""
    return _read_control(query, sql_mode)


def _opened(query: str, sql_mode: int) -> tuple[str, Cursor]:
    """The statement's first keyword, and a cursor after it."""
    c = Cursor(tokens(query, sql_mode))
    first = c.kw()
    c.i += 1
    return first, c


def _read_control(query: str, sql_mode: int) -> Control | None:
    first, c = _opened(query, sql_mode)
    try:
        if first == "BEGIN":
            c.accept("WORK")
            return Control("begin") if c.at_end() else None  # BEGIN NOT ATOMIC ... END is a compound statement
        if first == "START":
            return Control("begin") if c.accept("TRANSACTION") else None
        if first == "SAVEPOINT":
            return _ended(c, Control("savepoint", c.name().casefold()))
        if first == "RELEASE":
            c.expect("SAVEPOINT")
            return _ended(c, Control("release", c.name().casefold()))
        if first in _SIMPLE:
            c.accept("WORK")
            if first == "ROLLBACK" and c.accept("TO"):
                c.accept("SAVEPOINT")
                return _ended(c, Control("rollback_to", c.name().casefold()))
            if all(c.kw(k) in _CHAIN_WORDS for k in range(len(c.rest()))):
                return Control(_SIMPLE[first])
            return None
        if first == "XA":
            kind = _XA.get(c.kw())
            if kind is None:
                return None  # XA RECOVER
            c.i += 1
            xid = _xid(c)
            one_phase = kind == "xa_commit" and c.accept("ONE", "PHASE")
            return Control(kind, xid=xid, one_phase=one_phase)
    except Unread:
        pass
    return None


def _ended(c: Cursor, result: Control) -> Control | None:
    return result if c.at_end() else None


def _xid(c: Cursor) -> str | None:
    """``gtrid [, bqual [, formatID]]`` (sql/sql_yacc.yy ``xid``; formatID 1 by default) as ``XID::serialize``
    prints it: ``X'<gtrid hex>',X'<bqual hex>',<formatID>``; ``None`` when the cursor is not at such a literal."""
    parts: list[bytes | int] = []
    while True:
        value = _literal(c.peek())
        if value is None:
            return None
        c.i += 1
        parts.append(value)
        if len(parts) == 3 or not c.accept_p(","):
            break
    gtrid, bqual, fmt = parts[0], parts[1] if len(parts) > 1 else b"", parts[2] if len(parts) > 2 else 1
    if not isinstance(gtrid, bytes) or not isinstance(bqual, bytes) or not isinstance(fmt, int):
        return None
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{fmt}"


def _literal(tok: Token) -> bytes | int | None:
    """A string (UTF-8: the text as logged), ``X'hex'``, ``0xhex`` or a number, else ``None``."""
    text = tok.text
    if tok.kind in STRING_KINDS:
        return unquote(tok).encode("utf-8", "surrogateescape")
    if tok.kind == "hex":
        body = text[2:-1]
        return bytes.fromhex(body) if len(body) % 2 == 0 else None
    if tok.kind == "word":
        if text.isdigit():
            return int(text)
        if text[:2] == "0x" and len(text) > 2:
            try:
                return bytes.fromhex(text[2:] if len(text) % 2 == 0 else "0" + text[2:])
            except ValueError:
                return None
    return None


def xa_outcome(query: str, sql_mode: int = 0) -> tuple[str, bool] | None:
    """``XA COMMIT xid`` / ``XA ROLLBACK xid`` -> (the XID as :class:`~binlake.events.control.XaPrepareEvent`
    prints it, rolled back?); anything else (``XA COMMIT ... ONE PHASE`` included: it resolves no earlier
    prepare) -> ``None``.

    >>> xa_outcome("XA ROLLBACK X'0102ff',X'627175616c2d78',42")
    ("X'0102ff',X'627175616c2d78',42", True)
    """
    ctl = control(query, sql_mode)
    if ctl is None or ctl.xid is None or ctl.one_phase or ctl.kind not in ("xa_commit", "xa_rollback"):
        return None
    return ctl.xid, ctl.kind == "xa_rollback"


def _in(db: str, name: QName) -> TableRef:
    return (name[0] if name[0] is not None else db, name[1])


def emptied(query: str, db: str, sql_mode: int = 0, scope: Scope = NO_TEMPORARY) -> tuple[TableRef, ...]:
    """The base tables ``query`` (run in default database ``db``, its session's temporary tables ``scope``)
    empties without row events, in order.

    ``TRUNCATE [TABLE] t``, ``DROP TABLE [IF EXISTS] a, b``, ``CREATE OR REPLACE TABLE t`` (its rows start again
    from nothing, or from the row events of its SELECT), a sequence's ``CREATE``/``ALTER``/``DROP SEQUENCE`` (the
    server writes the sequence's one row without a row event: no row is better than a stale one), and ``DROP
    {DATABASE | SCHEMA} d`` (``(d, "")``: every table of ``d``).  A ``TEMPORARY`` table is not the base table
    of the same name, which it only shadows: it empties nothing, whether the statement says ``TEMPORARY`` or names
    a temporary table of ``scope``.  ``CREATE [OR REPLACE] TABLE`` without ``TEMPORARY`` creates the base table
    even where a temporary table of its name exists (MariaDB 10.11 replaces the base table and leaves the
    temporary one).
    """
    first, c = _opened(query, sql_mode)
    try:
        if first == "TRUNCATE":
            c.accept("TABLE")
            return _base(db, [c.qualified()], scope)
        if first == "DROP":
            if c.kw() in ("DATABASE", "SCHEMA"):
                return ((drop_database(c), ""),)
            temporary, names = drop_tables(c)
            return () if temporary else _base(db, names, scope)
        if first == "CREATE":
            head = create_head(c)
            if head.temporary or not (head.or_replace or head.sequence):
                return ()
            return (_in(db, head.name),)
        if first == "ALTER" and c.accept("SEQUENCE"):
            c.accept("IF", "EXISTS")
            return _base(db, [c.qualified()], scope)
    except Unread:
        pass
    return ()


def _base(db: str, names: Iterable[QName], scope: Scope) -> tuple[TableRef, ...]:
    """The tables of ``names`` that are base tables in ``scope``."""
    return tuple(_in(db, n) for n in names if not scope.temporary(n[0] or db, n[1]))


class Move(NamedTuple):
    """A table ``RENAME TABLE`` or ``ALTER TABLE ... RENAME`` moves; ``temporary``: a temporary table of the
    statement's session (the base table of its name stays where it is)."""

    src: TableRef
    dst: TableRef
    temporary: bool


def moves(query: str, db: str, sql_mode: int = 0, scope: Scope = NO_TEMPORARY) -> tuple[Move, ...]:
    """The tables that ``RENAME TABLE`` or an ``ALTER TABLE ... RENAME [TO | AS | =]`` moves, in order; names
    without a database are in ``db`` (the statement's default), ``scope`` the session's temporary tables where
    the statement starts.  Other statements -> ``()``.

    >>> moves("RENAME TABLE t TO t2, t2 TO t3", "shop", scope=Scope.of([("shop", "t")]))
    (Move(src=('shop', 't'), dst=('shop', 't2'), temporary=True), Move(src=('shop', 't2'), dst=('shop', 't3'), \
temporary=True))
    """
    first, c = _opened(query, sql_mode)
    try:
        if first == "RENAME":
            return tuple(Move(_in(db, a), _in(db, b), temp) for a, b, temp in scope.steps(rename_pairs(c), db))
        if first == "ALTER":
            name = alter_head(c)
            src = _in(db, name)
            dst = None
            for spec in split_commas(c.rest()):
                target = rename_clause(spec)
                if target is not None:
                    dst = _in(db, target)
            return (Move(src, dst, scope.temporary(*src)),) if dst is not None and dst != src else ()
    except Unread:
        pass
    return ()


def renames(
    query: str, db: str, sql_mode: int = 0, scope: Scope = NO_TEMPORARY
) -> tuple[tuple[TableRef, TableRef], ...]:
    """The ``(from, to)`` base tables of :func:`moves`: what carries a table's current state to another name.

    >>> renames("RENAME TABLE t TO t_old, `s`.`new` TO t", "shop")
    ((('shop', 't'), ('shop', 't_old')), (('s', 'new'), ('shop', 't')))
    """
    return tuple((m.src, m.dst) for m in moves(query, db, sql_mode, scope) if not m.temporary)
