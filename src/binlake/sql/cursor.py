"""A cursor over a statement's tokens, and the statement heads more than one reader needs.

:class:`Cursor` reads tokens as it needs them (a long ``INSERT`` costs its first tokens only) and never runs off
the end: past it, every token is :data:`~binlake.sql.lexer.EOF`.  A statement that is not of the expected form
raises :class:`Unread`; the readers turn that into "nothing to say about it", never into an error.

The heads (MariaDB ``sql/sql_yacc.yy``, MySQL ``sql/sql_yacc.yy``):

* :func:`create_head`: ``CREATE [OR REPLACE] [TEMPORARY] {TABLE | SEQUENCE} [IF NOT EXISTS] name``;
* :func:`drop_tables`: ``DROP [TEMPORARY] {TABLE | TABLES | SEQUENCE} [IF EXISTS] [/*COMMENT*/] a, b ...``;
* :func:`drop_database`: ``DROP {DATABASE | SCHEMA} [IF EXISTS] name``;
* :func:`alter_head`: ``ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] name [WAIT n | NOWAIT]``, then its clauses
  (:func:`~binlake.sql.lexer.split_commas` of :meth:`Cursor.rest`), of which :func:`rename_clause` finds
  ``RENAME [TO | AS | =] name``;
* :func:`rename_pairs`: ``RENAME {TABLE | TABLES} [IF EXISTS] a [WAIT n | NOWAIT] TO b [, c TO d ...]``.

A name is ``(database or None, name)``: ``None`` where the statement leaves it to its default database.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice

from binlake.sql.lexer import EOF, Token, is_name, keyword, unquote

__all__ = [
    "CreateHead",
    "Cursor",
    "QName",
    "Unread",
    "alter_head",
    "create_head",
    "drop_database",
    "drop_tables",
    "rename_clause",
    "rename_pairs",
]

QName = tuple[str | None, str]


class Unread(Exception):
    """The statement (or clause) is not of the form a reader looked for."""


class Cursor:
    """The tokens of one statement (or of a part of one), read lazily from ``toks``."""

    __slots__ = ("_more", "i", "toks")

    def __init__(self, toks: Iterable[Token], i: int = 0) -> None:
        self.toks: list[Token]
        self._more: Iterator[Token] | None
        if isinstance(toks, list):
            self.toks, self._more = toks, None
        else:
            self.toks, self._more = [], iter(toks)
        self.i = i

    def _fill(self, n: int) -> None:
        """Read tokens until ``n`` are buffered (or the statement ends)."""
        more = self._more
        if more is not None:
            need = n - len(self.toks)
            if need > 0:
                got = list(islice(more, need))
                self.toks.extend(got)
                if len(got) < need:
                    self._more = None

    def peek(self, k: int = 0) -> Token:
        j = self.i + k
        if j >= len(self.toks):
            self._fill(j + 1)
            if j >= len(self.toks):
                return EOF
        return self.toks[j]

    def kw(self, k: int = 0) -> str:
        return keyword(self.peek(k))

    def at_end(self) -> bool:
        return self.peek().kind == "eof"

    def accept(self, *words: str) -> bool:
        """Step over the keywords ``words`` if they come next."""
        if all(self.kw(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise Unread(f"expected {' '.join(words)}")

    def accept_p(self, char: str) -> bool:
        tok = self.peek()
        if tok.kind == "p" and tok.text == char:
            self.i += 1
            return True
        return False

    def name(self) -> str:
        tok = self.peek()
        if not is_name(tok):
            raise Unread("expected a name")
        self.i += 1
        return unquote(tok)

    def qualified(self) -> QName:
        """``db.name`` or ``name`` (``None`` for the database)."""
        first = self.name()
        if self.accept_p("."):
            return first, self.name()
        return None, first

    def skip_wait(self) -> None:
        """MariaDB's ``WAIT n`` / ``NOWAIT`` lock-timeout clause."""
        if self.accept("WAIT"):
            self.i += 1
        else:
            self.accept("NOWAIT")

    def rest(self) -> list[Token]:
        """Every token from here to the end."""
        if self._more is not None:
            self.toks.extend(self._more)
            self._more = None
        return self.toks[self.i :]

    def __iter__(self) -> Iterator[Token]:
        return iter(self.rest())


@dataclass(frozen=True, slots=True)
class CreateHead:
    """What ``CREATE [OR REPLACE] [TEMPORARY] {TABLE | SEQUENCE} [IF NOT EXISTS] name`` says."""

    name: QName
    or_replace: bool
    temporary: bool
    if_not_exists: bool
    sequence: bool


def create_head(c: Cursor) -> CreateHead:
    """The head of a CREATE TABLE or CREATE SEQUENCE, the cursor after ``CREATE``; it stops after the name."""
    or_replace = c.accept("OR", "REPLACE")
    temporary = c.accept("TEMPORARY")
    sequence = c.accept("SEQUENCE")
    if not sequence:
        c.expect("TABLE")
    if_not_exists = c.accept("IF", "NOT", "EXISTS")
    return CreateHead(c.qualified(), or_replace, temporary, if_not_exists, sequence)


def drop_tables(c: Cursor) -> tuple[bool, list[QName]]:
    """``(temporary, names)`` of ``DROP [TEMPORARY] {TABLE | TABLES | SEQUENCE} [IF EXISTS] a, b``, the cursor
    after ``DROP``."""
    temporary = c.accept("TEMPORARY")
    if not (c.accept("TABLE") or c.accept("TABLES") or c.accept("SEQUENCE")):
        raise Unread("not DROP TABLE")
    c.accept("IF", "EXISTS")
    names = [c.qualified()]
    while c.accept_p(","):
        names.append(c.qualified())
    return temporary, names


def drop_database(c: Cursor) -> str:
    """The database of ``DROP {DATABASE | SCHEMA} [IF EXISTS] name``, the cursor after ``DROP``."""
    if not (c.accept("DATABASE") or c.accept("SCHEMA")):
        raise Unread("not DROP DATABASE")
    c.accept("IF", "EXISTS")
    return c.name()


def alter_head(c: Cursor) -> QName:
    """The table of ``ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] name [WAIT n | NOWAIT]``, the cursor after
    ``ALTER``; the clauses follow."""
    c.accept("ONLINE")
    c.accept("IGNORE")
    c.expect("TABLE")
    c.accept("IF", "EXISTS")
    name = c.qualified()
    c.skip_wait()
    return name


def rename_clause(spec: list[Token]) -> QName | None:
    """The new name of an ALTER TABLE clause ``RENAME [TO | AS | =] name`` (``None`` for any other clause,
    ``RENAME COLUMN`` and ``RENAME INDEX | KEY`` among them)."""
    c = Cursor(spec)
    if not c.accept("RENAME") or c.kw() in ("COLUMN", "INDEX", "KEY"):
        return None
    if not (c.accept("TO") or c.accept("AS")):
        c.accept_p("=")
    try:
        return c.qualified()
    except Unread:
        return None


def rename_pairs(c: Cursor) -> list[tuple[QName, QName]]:
    """The ``(from, to)`` pairs of ``RENAME {TABLE | TABLES} [IF EXISTS] a [WAIT n | NOWAIT] TO b, ...`` in
    order, the cursor after ``RENAME``."""
    if not (c.accept("TABLE") or c.accept("TABLES")):
        raise Unread("not RENAME TABLE")
    c.accept("IF", "EXISTS")
    pairs = []
    while True:
        src = c.qualified()
        c.skip_wait()
        c.expect("TO")
        pairs.append((src, c.qualified()))
        if not c.accept_p(","):
            return pairs
