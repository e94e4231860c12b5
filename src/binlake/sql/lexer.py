"""The one tokenizer of SQL text in binlake: statements logged in QUERY events, and schema scripts.

It reads what the servers' lexers read (``sql/sql_lex.cc`` ``MYSQLlex`` / ``lex_one_token`` in both servers) as far
as binlake needs it:

* blanks (ASCII whitespace only: the servers' ctype tables), ``/* */`` comments (not nested), ``#`` comments and
  ``-- `` comments (two dashes followed by a blank or a control character), to the end of the line;
* executable comments ``/*! ... */``, ``/*!50100 ... */`` (MySQL and MariaDB) and ``/*M! ... */``,
  ``/*M!100100 ... */`` (MariaDB): their content is code, read as if the comment markers were not there (the
  version is not compared with the server's: every server that logs a statement ran it at a version above the
  ones clients write in such comments);
* names plain (letters, digits, ``_``, ``$`` and any non-ASCII character), in backquotes (a doubled backquote
  stands for one), and in double quotes when ``sql_mode`` has ANSI_QUOTES (else a double-quoted text is a string);
* strings in single (or, without ANSI_QUOTES, double) quotes: a doubled quote stands for one, and a backslash
  escapes the next character unless ``sql_mode`` has NO_BACKSLASH_ESCAPES; ``X'hex'`` literals;
* anything else one character at a time (``p`` tokens: ``(``, ``,``, ``.``, ``=``, ...).

The ``sql_mode`` of a logged statement is the QUERY event's SQL_MODE status variable
(``QueryEvent.status("SQL_MODE")``).

Keywords are plain words compared in ASCII upper case (:func:`keyword`): a word with a non-ASCII letter is never
a keyword (``str.upper`` would turn ``commıt`` into ``COMMIT``; the servers would not).

The byte-level prefilter (:func:`leading_keyword`) recognises the first keyword of raw statement bytes with the
same blank and comment grammar, so a cheap test on the bytes of every QUERY event and the full reading of the
few that pass cannot disagree: every statement whose first keyword (:func:`first_keyword`) is in the set passes.

Example::

    >>> [t.text for t in tokens("/*!40101 CREATE */ TABLE `a``b` -- note\\n(x INT)")]
    ['CREATE', 'TABLE', '`a``b`', '(', 'x', 'INT', ')']
    >>> first_keyword('/* c */ /*M!100500 xa */ commit "x"')
    'XA'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

__all__ = [
    "MODE_ANSI_QUOTES",
    "MODE_NO_BACKSLASH_ESCAPES",
    "Token",
    "first_keyword",
    "keyword",
    "leading_keyword",
    "split_statements",
    "tokens",
    "unquote",
]

# sql_mode bits (MariaDB sql/sql_class.h, MySQL sql/system_variables.h): ANSI_QUOTES, NO_BACKSLASH_ESCAPES.  The
# combination modes (ANSI, ORACLE, ...) are logged expanded, with these bits set.
MODE_ANSI_QUOTES = 0x4
MODE_NO_BACKSLASH_ESCAPES = 0x100000

# The pieces both the text lexer and the byte prefilter are built from (one grammar of blanks and comments).
_BLANK = r"[ \t\n\r\f\v]"
_EXEC_OPEN = r"/\*M?!\d*"  # an executable comment's opener: what follows is code
_COMMENT = r"/\*(?!M?!).*?\*/|\#[^\n]*|--(?=[\x00-\x20]|$)[^\n]*"
_CLOSE = r"\*/"  # the end of an executable comment
_WORD_CHARS = r"0-9A-Za-z_$"


class Token(NamedTuple):
    """One token: ``kind`` is ``word`` (a plain name or keyword), ``bq`` (`` `name` ``), ``dq`` (``"name"`` under
    ANSI_QUOTES), ``sq`` (a string, in single quotes or, without ANSI_QUOTES, double quotes, whose backslashes
    escape), ``rs`` (such a string under NO_BACKSLASH_ESCAPES: backslashes are themselves), ``hex`` (``X'0aff'``),
    ``p`` (one punctuation character) or ``eof``; ``text`` is the token as written, ``start``/``end`` its span."""

    kind: str
    text: str
    start: int
    end: int


EOF = Token("eof", "", -1, -1)
STRING_KINDS = frozenset({"sq", "rs"})
NAME_KINDS = frozenset({"word", "bq", "dq"})
_QUOTED = STRING_KINDS | {"dq"}

# double quotes: a string (with or without backslash escapes) or, under ANSI_QUOTES, a name (never escapes)
_DQ_STRING = r"\"(?:[^\"{bs}]|{esc}\"\")*\""
_DQ_NAME = r'"(?:[^"]|"")*"'
_LEX_PARTS = (
    rf"(?P<ws>{_BLANK}+)"
    rf"|(?P<exec>{_EXEC_OPEN})"
    rf"|(?P<comment>{_COMMENT})"
    rf"|(?P<close>{_CLOSE})"
    r"|(?P<bq>`(?:[^`]|``)*`)"
    r"|(?P<hex>[xX]'[0-9a-fA-F]*')"
    r"|(?P<{dq}>{dq_re})"
    r"|(?P<{sq}>'(?:[^'{bs}]|{esc}'')*')"
    rf"|(?P<word>[{_WORD_CHARS}\u0080-\U0010ffff]+)"
    r"|(?P<p>.)"
)


def _lexer(ansi: bool, backslash: bool) -> re.Pattern[str]:
    bs, esc = ("\\\\", "\\\\.|") if backslash else ("", "")
    sq = "sq" if backslash else "rs"
    dq, dq_re = ("dq", _DQ_NAME) if ansi else ("d" + sq, _DQ_STRING.format(bs=bs, esc=esc))
    return re.compile(_LEX_PARTS.format(bs=bs, esc=esc, sq=sq, dq=dq, dq_re=dq_re), re.DOTALL)


# by sql_mode & (ANSI_QUOTES | NO_BACKSLASH_ESCAPES)
_LEXERS = {
    mode: _lexer(bool(mode & MODE_ANSI_QUOTES), not mode & MODE_NO_BACKSLASH_ESCAPES)
    for mode in (0, MODE_ANSI_QUOTES, MODE_NO_BACKSLASH_ESCAPES, MODE_ANSI_QUOTES | MODE_NO_BACKSLASH_ESCAPES)
}
_MODE_BITS = MODE_ANSI_QUOTES | MODE_NO_BACKSLASH_ESCAPES
_LEX = _LEXERS[0]
_SKIP = frozenset({"ws", "exec", "comment", "close"})
_KIND = {"dsq": "sq", "drs": "rs"}  # a string in double quotes is a string
_BACKSLASH = re.compile(r"\\(.)", re.DOTALL)


def tokens(sql: str, sql_mode: int = 0) -> Iterator[Token]:
    """The tokens of ``sql`` (blanks and comments left out), lazily: reading the first keyword of a long
    statement costs its first tokens only."""
    for m in _LEXERS[sql_mode & _MODE_BITS].finditer(sql):
        kind = m.lastgroup or "p"
        if kind in _SKIP:
            continue
        yield Token(_KIND.get(kind, kind), m.group(), m.start(), m.end())


def is_name(tok: Token) -> bool:
    """Can ``tok`` be a name: a plain word, a backquoted or (ANSI_QUOTES) double-quoted name?  A string in double
    quotes counts too, where a name is expected: the server logs such a statement only under ANSI_QUOTES, and a
    schema script (``--schema``) does not say its sql_mode."""
    kind = tok.kind
    return kind in NAME_KINDS or (kind in STRING_KINDS and tok.text[0] == '"')


def keyword(tok: Token) -> str:
    """The keyword a token may be: its ASCII upper case if it is a plain ASCII word, else ``""``."""
    text = tok.text
    return text.upper() if tok.kind == "word" and text.isascii() else ""


def first_keyword(sql: str, sql_mode: int = 0) -> str:
    """The statement's first keyword (``""`` when it starts with anything else)."""
    return keyword(next(tokens(sql, sql_mode), EOF))


def unquote(tok: Token) -> str:
    """A name or string token's value: quotes removed, doubled quotes (and a string's backslash escapes) undone.  Any
    other token is its text.

    >>> [unquote(t) for t in tokens("`a``b` 'it''s' 'x\\\\y' \\"q\\"")]
    ['a`b', "it's", 'xy', 'q']
    """
    kind, text = tok.kind, tok.text
    if kind == "bq":
        return text[1:-1].replace("``", "`")
    if kind not in _QUOTED:
        return text
    q = text[0]
    body = text[1:-1].replace(q + q, q)
    return _BACKSLASH.sub(r"\1", body) if kind == "sq" and "\\" in body else body


def leading_keyword(keywords: Iterable[str], *, after: bytes = b"") -> re.Pattern[bytes]:
    """A pattern that matches raw statement bytes whose first keyword is one of ``keywords`` (ASCII, any case),
    read with the lexer's blanks and comments.  ``after``: a byte to find just before the statement (the NUL that
    ends a QUERY event's database name), for a search in a whole event.

    It accepts every statement :func:`first_keyword` gives one of ``keywords`` for (and some more: a keyword in
    an unterminated comment, say), so it serves as a prefilter before decoding and reading a statement.

    >>> ddl = leading_keyword(["CREATE", "DROP"])
    >>> [bool(ddl.match(q)) for q in (b"/* x */ drop table t", b"-- c\\n/*!40101 CREATE */", b"DROPS", b"BEGIN")]
    [True, True, False, False]
    """
    words = "|".join(sorted(re.escape(w.upper()) for w in keywords))
    skip = rf"(?:{_BLANK}+|{_EXEC_OPEN}|{_COMMENT}|{_CLOSE})*+"
    pattern = rf"{re.escape(after.decode('latin-1'))}{skip}(?:{words})(?![{_WORD_CHARS}\x80-\xff])"
    return re.compile(pattern.encode("latin-1"), re.IGNORECASE | re.DOTALL)


def split_statements(script: str) -> Iterator[str]:
    """The statements of an SQL script (``mysqldump --no-data`` output, a schema file), without their delimiters.

    Splits at ``;`` outside quotes and comments and follows the client's ``DELIMITER`` command.

    >>> list(split_statements("USE a; CREATE TABLE `x;y` (c INT -- t;\\n); # c\\nDELIMITER //\\nDROP TABLE z//"))
    ['USE a', 'CREATE TABLE `x;y` (c INT -- t;\\n)', 'DROP TABLE z']
    """
    delimiter, pos, start, n = ";", 0, 0, len(script)
    blank = True  # only blanks and comments since the statement's start: a DELIMITER line may come
    directive = re.compile(r"[ \t]*delimiter[ \t]+(\S+)[^\n]*", re.IGNORECASE)
    while pos < n:
        if blank and (pos == 0 or script[pos - 1] == "\n"):
            d = directive.match(script, pos)
            if d is not None:
                delimiter, pos = d[1], d.end()
                start = pos
                continue
        if script.startswith(delimiter, pos):
            if script[start:pos].strip():
                yield script[start:pos].strip()
            pos += len(delimiter)
            start, blank = pos, True
            continue
        m = _LEX.match(script, pos)
        if m is None:  # pragma: no cover - the last alternative matches any character
            break
        if m.lastgroup not in ("ws", "comment"):
            blank = False
        pos = m.end() if m.lastgroup != "p" else pos + 1
    if script[start:].strip():
        yield script[start:].strip()


def matching(toks: Sequence[Token], i: int) -> int | None:
    """Index of the ``)`` closing the ``(`` at ``i`` (``None``: unbalanced)."""
    depth = 0
    for j in range(i, len(toks)):
        tok = toks[j]
        if tok.kind == "p":
            if tok.text == "(":
                depth += 1
            elif tok.text == ")":
                depth -= 1
                if depth == 0:
                    return j
    return None


def _nested(toks: Iterable[Token]) -> Iterator[tuple[Token, int]]:
    """Each token with the depth of parentheses around it (a parenthesis counts as inside the pair it opens or
    closes)."""
    depth = 0
    for tok in toks:
        if tok.kind == "p" and tok.text == "(":
            depth += 1
            yield tok, depth
        elif tok.kind == "p" and tok.text == ")":
            yield tok, depth
            depth -= 1
        else:
            yield tok, depth


def split_commas(toks: Sequence[Token]) -> list[list[Token]]:
    """``toks`` split at commas outside parentheses (empty parts dropped)."""
    parts: list[list[Token]] = [[]]
    for tok, depth in _nested(toks):
        if depth == 0 and tok.kind == "p" and tok.text == ",":
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def top_level_words(toks: Iterable[Token]) -> list[str]:
    """The keywords of ``toks`` outside parentheses, in order."""
    return [tok.text.upper() for tok, depth in _nested(toks) if depth == 0 and tok.kind == "word"]
