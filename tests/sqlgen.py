"""Hypothesis strategies for statements as clients write them, each with the answer binlake must read from it.

A :class:`Case` is statement text decorated the ways the servers' lexers accept (comments of the three kinds
between tokens, executable comments ``/*! */``, ``/*!50100 */`` and ``/*M!100100 */`` around keywords, any letter
case, names plain, backquoted or (ANSI_QUOTES) double-quoted with backquotes, quotes, dots, spaces and non-ASCII
letters in them) and what it is, known by construction: its transaction control, the tables it empties, the
renames it makes, and what it does to a table's columns.  ``tests/test_sql.py`` checks the readers of
:mod:`binlake.sql` against it; ``tests/test_transactions.py`` builds binlogs of such statements and checks every
consumer (schema tracking, stats, recovery, the ingest's scan and task decoder) against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from binlake.sql.lexer import MODE_ANSI_QUOTES, MODE_NO_BACKSLASH_ESCAPES
from binlake.sql.statements import Control, TableRef

DB = "d"


@dataclass(frozen=True)
class Case:
    """A statement, the sql_mode it is logged under, and what binlake must read from it."""

    text: str
    sql_mode: int
    control: Control | None = None
    emptied: tuple[TableRef, ...] = ()
    renames: tuple[tuple[TableRef, TableRef], ...] = ()
    creates: tuple[TableRef, ...] = ()  # tables it creates with known columns (the schema tracker follows them)
    drops: tuple[TableRef, ...] = ()  # tables the schema tracker forgets
    ddl: bool = False  # the schema tracker's prefilter must pass it
    first: str = ""  # its first keyword
    notes: tuple[str, ...] = field(default=())


_COMMENT_TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00\r", exclude_categories=("Cs",)), max_size=12
)


@st.composite
def gap(draw: st.DrawFn, required: bool = True) -> str:
    """Blanks and comments between two tokens (at least one blank or comment when ``required``)."""
    parts = []
    for _ in range(draw(st.integers(1 if required else 0, 3))):
        kind = draw(st.sampled_from(["space", "space", "block", "hash", "dash"]))
        if kind == "space":
            parts.append(draw(st.sampled_from([" ", "  ", "\t", "\n", "\r\n", " \n\t", "\x0b", "\x0c"])))
        elif kind == "block":
            body = draw(_COMMENT_TEXT).replace("*/", "* /")
            parts.append(f"/*{'' if body.startswith(('!', 'M!')) else body}*/")
        elif kind == "hash":
            parts.append("#" + draw(_COMMENT_TEXT).replace("\n", " ") + "\n")
        else:
            parts.append("-- " + draw(_COMMENT_TEXT).replace("\n", " ") + "\n")
    return "".join(parts)


@st.composite
def kw(draw: st.DrawFn, word: str, executable: bool = True) -> str:
    """A keyword in any letter case, sometimes inside an executable comment."""
    text = "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in word)
    if executable and draw(st.integers(0, 5)) == 0:
        opener = draw(st.sampled_from(["/*!", "/*!50100", "/*M!", "/*M!100100", "/*!40005"]))
        return f"{opener} {text} */"
    return text


_PLAIN_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_PLAIN = _PLAIN_START + "0123456789$"
_ODD = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00", exclude_categories=("Cs", "Cc"))
    | st.sampled_from("`.\"' \\"),
    min_size=1,
    max_size=10,
).filter(lambda s: s.strip() != "" and not s.endswith(" "))


@st.composite
def name(draw: st.DrawFn, mode: int) -> tuple[str, str]:
    """(the name as written, the name) in one of the quotings ``mode`` allows."""
    style = draw(st.sampled_from(["plain", "unicode", "bq", "bq", "dq"]))
    if style == "plain":
        value = "n_" + draw(st.text(st.sampled_from(_PLAIN), max_size=8))
        return value, value
    if style == "unicode":
        value = "é" + draw(st.text(st.sampled_from(_PLAIN + "äöü数据"), max_size=6))
        return value, value
    value = draw(_ODD)
    if style == "dq" and mode & MODE_ANSI_QUOTES:
        return '"' + value.replace('"', '""') + '"', value
    return "`" + value.replace("`", "``") + "`", value


@st.composite
def table(draw: st.DrawFn, mode: int) -> tuple[str, TableRef]:
    """A table name, ``db.name`` or relative to the default database :data:`DB`."""
    text, value = draw(name(mode))
    if draw(st.booleans()):
        db_text, db_value = draw(name(mode))
        return f"{db_text}.{text}", (db_value, value)
    return text, (DB, value)


@st.composite
def xid(draw: st.DrawFn, mode: int) -> tuple[str, str]:
    """An XA xid as written and as XaPrepareEvent.xid_text prints it."""
    parts_text, parts = [], []
    for i in range(draw(st.integers(1, 3))):
        if i == 2:
            fmt = draw(st.integers(0, 2**31 - 1))
            parts_text.append(str(fmt))
            parts.append(fmt)
            break
        raw = draw(st.binary(max_size=8))
        style = draw(st.sampled_from(["X", "x", "0x", "sq", "dq", "esc"]))
        if style == "esc":  # a string with quotes and backslashes, written as the sql_mode reads them
            text = draw(st.text(st.sampled_from("ab'\\"), max_size=6))
            raw = text.encode()
            body = text.replace("'", "''")
            parts_text.append("'" + (body if mode & MODE_NO_BACKSLASH_ESCAPES else body.replace("\\", "\\\\")) + "'")
        elif style in ("sq", "dq") or (style == "0x" and not raw):
            text = raw.hex()  # a text whose UTF-8 bytes are the part
            raw = text.encode()
            q = '"' if style == "dq" and not mode & MODE_ANSI_QUOTES else "'"
            parts_text.append(q + text + q)
        elif style == "0x":
            parts_text.append("0x" + raw.hex())
        else:
            parts_text.append(f"{style}'{raw.hex()}'")
        parts.append(raw)
    gtrid = parts[0]
    bqual = parts[1] if len(parts) > 1 else b""
    fmt = parts[2] if len(parts) > 2 else 1
    assert isinstance(gtrid, bytes) and isinstance(bqual, bytes) and isinstance(fmt, int)
    sep = draw(st.sampled_from([",", " , ", ","]))
    return sep.join(parts_text), f"X'{gtrid.hex()}',X'{bqual.hex()}',{fmt}"


def joined(draw: st.DrawFn, *parts: str) -> str:
    """Tokens joined by gaps (punctuation needs none, words do)."""
    out = draw(gap(required=False))
    for i, p in enumerate(parts):
        if i:
            needed = not (out[-1:] in "(),." or p[:1] in "(),.")
            out += draw(gap(required=needed)) if needed or draw(st.booleans()) else ""
        out += p
    return out + draw(gap(required=False))


@st.composite
def control_case(draw: st.DrawFn, mode: int) -> Case:
    k = draw(st.sampled_from(["begin", "start", "commit", "rollback", "savepoint", "rollback_to", "release", "xa"]))
    if k == "begin":
        words = [draw(kw("BEGIN"))] + ([draw(kw("WORK"))] if draw(st.booleans()) else [])
        return Case(joined(draw, *words), mode, Control("begin"), first="BEGIN")
    if k == "start":
        extra = draw(st.sampled_from([[], ["READ", "ONLY"], ["READ", "WRITE"], ["WITH", "CONSISTENT", "SNAPSHOT"]]))
        words = [draw(kw("START")), draw(kw("TRANSACTION")), *(draw(kw(w)) for w in extra)]
        return Case(joined(draw, *words), mode, Control("begin"), first="START")
    if k in ("commit", "rollback"):
        tail = draw(st.sampled_from([[], ["WORK"], ["AND", "NO", "CHAIN"], ["WORK", "NO", "RELEASE"]]))
        words = [draw(kw(k.upper())), *(draw(kw(w)) for w in tail)]
        return Case(joined(draw, *words), mode, Control(k), first=k.upper())
    written, value = draw(name(mode))
    if k == "savepoint":
        text = joined(draw, draw(kw("SAVEPOINT")), written)
        return Case(text, mode, Control("savepoint", value.casefold()), first="SAVEPOINT")
    if k == "release":
        words = [draw(kw("RELEASE")), draw(kw("SAVEPOINT")), written]
        return Case(joined(draw, *words), mode, Control("release", value.casefold()), first="RELEASE")
    if k == "rollback_to":
        words = [draw(kw("ROLLBACK")), *([draw(kw("WORK"))] if draw(st.booleans()) else []), draw(kw("TO"))]
        words += [draw(kw("SAVEPOINT"))] if draw(st.booleans()) else []
        return Case(joined(draw, *words, written), mode, Control("rollback_to", value.casefold()), first="ROLLBACK")
    verb = draw(st.sampled_from(["START", "BEGIN", "END", "PREPARE", "COMMIT", "ROLLBACK"]))
    kind = {"START": "xa_start", "BEGIN": "xa_start"}.get(verb, "xa_" + verb.lower())
    xid_text, xid_value = draw(xid(mode))
    one_phase = verb == "COMMIT" and draw(st.booleans())
    words = [draw(kw("XA")), draw(kw(verb)), xid_text] + ([draw(kw("ONE")), draw(kw("PHASE"))] if one_phase else [])
    return Case(joined(draw, *words), mode, Control(kind, xid=xid_value, one_phase=one_phase), first="XA")


_COLUMNS = "(id INT PRIMARY KEY, `v w` VARCHAR(10) DEFAULT 'x, COMMIT', note TEXT COMMENT 'it''s -- not a comment')"


@st.composite
def ddl_case(draw: st.DrawFn, mode: int) -> Case:
    k = draw(st.sampled_from(["truncate", "drop", "create", "drop_db", "rename", "alter", "alter_rename"]))
    if k == "truncate":
        text, t = draw(table(mode))
        words = [draw(kw("TRUNCATE"))] + ([draw(kw("TABLE"))] if draw(st.booleans()) else [])
        return Case(joined(draw, *words, text), mode, emptied=(t,), first="TRUNCATE")
    if k == "drop":
        temporary = draw(st.booleans())
        names = draw(st.lists(table(mode), min_size=1, max_size=3))
        words = [draw(kw("DROP"))] + ([draw(kw("TEMPORARY"))] if temporary else []) + [draw(kw("TABLE"))]
        words += [draw(kw("IF")), draw(kw("EXISTS"))] if draw(st.booleans()) else []
        listed = []
        for i, (text, _) in enumerate(names):
            listed += [",", text] if i else [text]
        tables = tuple(t for _, t in names)
        return Case(
            joined(draw, *words, *listed),
            mode,
            emptied=() if temporary else tables,
            drops=() if temporary else tables,
            ddl=True,
            first="DROP",
        )
    if k == "create":
        or_replace, temporary = draw(st.booleans()), draw(st.booleans())
        text, t = draw(table(mode))
        words = [draw(kw("CREATE"))] + ([draw(kw("OR")), draw(kw("REPLACE"))] if or_replace else [])
        words += ([draw(kw("TEMPORARY"))] if temporary else []) + [draw(kw("TABLE"))]
        return Case(
            joined(draw, *words, text, _COLUMNS),
            mode,
            emptied=(t,) if or_replace and not temporary else (),
            creates=() if temporary else (t,),
            ddl=True,
            first="CREATE",
        )
    if k == "drop_db":
        written, value = draw(name(mode))
        words = [draw(kw("DROP")), draw(kw(draw(st.sampled_from(["DATABASE", "SCHEMA"]))))]
        words += [draw(kw("IF")), draw(kw("EXISTS"))] if draw(st.booleans()) else []
        return Case(joined(draw, *words, written), mode, emptied=((value, ""),), ddl=True, first="DROP")
    if k == "rename":
        pairs = draw(st.lists(st.tuples(table(mode), table(mode)), min_size=1, max_size=2))
        listed: list[str] = []
        for i, ((a_text, _), (b_text, _)) in enumerate(pairs):
            listed += ([","] if i else []) + [a_text, draw(kw("TO")), b_text]
        return Case(
            joined(draw, draw(kw("RENAME")), draw(kw("TABLE")), *listed),
            mode,
            renames=tuple((a, b) for (_, a), (_, b) in pairs),
            ddl=True,
            first="RENAME",
        )
    text, t = draw(table(mode))
    words = [draw(kw("ALTER")), draw(kw("TABLE")), text, draw(kw("ADD")), draw(kw("COLUMN")), "c2", "INT"]
    if k == "alter":
        return Case(joined(draw, *words), mode, ddl=True, first="ALTER")
    new_text, new = draw(table(mode))
    words += [",", draw(kw("RENAME")), draw(kw(draw(st.sampled_from(["TO", "AS"]))))]
    return Case(joined(draw, *words, new_text), mode, renames=((t, new),) if new != t else (), ddl=True, first="ALTER")


@st.composite
def other_case(draw: st.DrawFn, mode: int) -> Case:
    """Statements that are none of the above, some with the keywords in strings, names and comments."""
    text, _ = draw(table(mode))
    k = draw(st.sampled_from(["insert", "commented", "begin_block", "select"]))
    if k == "insert":
        return Case(
            joined(draw, draw(kw("INSERT")), "INTO", text, "VALUES", "(1, 'COMMIT', 'DROP TABLE x')"),
            mode,
            first="INSERT",
        )
    if k == "commented":
        return Case(
            "/* COMMIT */ # ROLLBACK\n-- BEGIN\n" + joined(draw, "UPDATE", text, "SET", "a", "=", "'XA COMMIT 1'"),
            mode,
            first="UPDATE",
        )
    if k == "begin_block":  # MariaDB's compound statement, not a transaction start
        return Case(
            joined(draw, draw(kw("BEGIN")), draw(kw("NOT")), draw(kw("ATOMIC")), "SELECT", "1", ";", "END"),
            mode,
            first="BEGIN",
        )
    return Case(joined(draw, "SELECT", "1", "FROM", text), mode, first="SELECT")


@st.composite
def case(draw: st.DrawFn) -> Case:
    """Any statement under any of the four sql_modes that change how text is read."""
    mode = draw(
        st.sampled_from([0, MODE_ANSI_QUOTES, MODE_NO_BACKSLASH_ESCAPES, MODE_ANSI_QUOTES | MODE_NO_BACKSLASH_ESCAPES])
    )
    return draw(st.one_of(control_case(mode), ddl_case(mode), other_case(mode)))
