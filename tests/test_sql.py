"""The one statement reader (binlake.sql): its lexer, its byte prefilters and the statement shapes, on hand-picked
statements and on generated ones (tests/sqlgen.py) whose answers are known by construction."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.sqlgen import DB, Case, case

from binlake.schema import SchemaTracker, TableSchema, TrackedColumn
from binlake.sql.lexer import (
    MODE_ANSI_QUOTES,
    MODE_NO_BACKSLASH_ESCAPES,
    first_keyword,
    leading_keyword,
    split_statements,
    tokens,
    unquote,
)
from binlake.sql.statements import (
    CONTROL_KEYWORDS,
    EMPTYING_KEYWORDS,
    SCHEMA_KEYWORDS,
    Control,
    control,
    emptied,
    is_ddl,
    may_control,
    may_empty,
    renames,
    xa_outcome,
)

ANSI, NOBS = MODE_ANSI_QUOTES, MODE_NO_BACKSLASH_ESCAPES


# -- the lexer -------------------------------------------------------------------------------------------------------


def kinds(sql: str, mode: int = 0) -> list[tuple[str, str]]:
    return [(t.kind, unquote(t)) for t in tokens(sql, mode)]


def test_comments_are_skipped_and_executable_comments_are_code() -> None:
    sql = "/* c1 */ DROP # c2\n/*!40005 TEMPORARY */ -- c3\nTABLE /*M!100100 IF EXISTS */ `t`--x"
    assert kinds(sql) == [
        ("word", "DROP"),
        ("word", "TEMPORARY"),
        ("word", "TABLE"),
        ("word", "IF"),
        ("word", "EXISTS"),
        ("bq", "t"),
        ("p", "-"),
        ("p", "-"),
        ("word", "x"),
    ]  # "--x" is not a comment: two dashes must be followed by a blank or a control character


def test_quotes_under_each_sql_mode() -> None:
    sql = r"""'a\'b' "c\"d" `e``f`"""
    assert kinds(sql) == [("sq", "a'b"), ("sq", 'c"d'), ("bq", "e`f")]
    # ANSI_QUOTES: a double-quoted text is a name, and a backslash in it is itself
    assert kinds('"x\\" y', ANSI) == [("dq", "x\\"), ("word", "y")]
    assert kinds('"a""b"', ANSI) == [("dq", 'a"b')]
    # NO_BACKSLASH_ESCAPES: 'a\' is a whole string
    assert kinds(r"'a\' b", NOBS) == [("rs", "a\\"), ("word", "b")]
    assert kinds(r"""'a\' "b\" c""", NOBS) == [("rs", "a\\"), ("rs", "b\\"), ("word", "c")]
    assert kinds("X'0aFF' x 'y'") == [("hex", "X'0aFF'"), ("word", "x"), ("sq", "y")]


def test_keywords_are_ascii() -> None:
    assert first_keyword("commıt") == ""  # str.upper() would make it COMMIT; the servers do not
    assert first_keyword("  \n/* x */ Commit") == "COMMIT"
    assert first_keyword("`commit`") == ""


def test_split_statements_follows_delimiter_and_quotes() -> None:
    script = "USE a; CREATE TABLE `x;y` (c INT -- t;\n); # c\nDELIMITER //\nDROP TABLE z//"
    assert list(split_statements(script)) == ["USE a", "CREATE TABLE `x;y` (c INT -- t;\n)", "DROP TABLE z"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.sampled_from([0, ANSI, NOBS, ANSI | NOBS]))
def test_any_text_lexes_and_the_prefilter_passes_what_the_lexer_reads(text: str, mode: int) -> None:
    """Every statement whose first keyword is in a set passes that set's byte prefilter."""
    first = first_keyword(text, mode)
    raw = text.encode("utf-8", "surrogatepass")
    for words in (CONTROL_KEYWORDS, SCHEMA_KEYWORDS, EMPTYING_KEYWORDS):
        if first in words:
            assert leading_keyword(words).match(raw), (text, first)


# -- the statement shapes ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("BEGIN", Control("begin")),
        ("begin work", Control("begin")),
        ("BEGIN NOT ATOMIC SELECT 1; END", None),
        ("START TRANSACTION WITH CONSISTENT SNAPSHOT", Control("begin")),
        ("start transaction read only", Control("begin")),
        ("START SLAVE", None),
        ("COMMIT", Control("commit")),
        ("/* x */ commit work and no chain", Control("commit")),
        ("ROLLBACK", Control("rollback")),
        ("ROLLBACK TO sp1", Control("rollback_to", "sp1")),
        ("rollback work to savepoint `SP 2`", Control("rollback_to", "sp 2")),
        ("SAVEPOINT `Sp1`", Control("savepoint", "sp1")),
        ("RELEASE SAVEPOINT sp1", Control("release", "sp1")),
        ("XA START 'x'", Control("xa_start", xid="X'78',X'',1")),
        ("XA BEGIN X'01', 'b', 7 JOIN", Control("xa_start", xid="X'01',X'62',7")),
        ("XA END 0x0102", Control("xa_end", xid="X'0102',X'',1")),
        ("XA PREPARE 'x'", Control("xa_prepare", xid="X'78',X'',1")),
        ("XA COMMIT 'x' ONE PHASE", Control("xa_commit", xid="X'78',X'',1", one_phase=True)),
        ("xa rollback X'0102ff',X'627175616c2d78',42", Control("xa_rollback", xid="X'0102ff',X'627175616c2d78',42")),
        ("XA RECOVER", None),
        ("INSERT INTO t VALUES ('COMMIT')", None),
    ],
)
def test_control(sql: str, want: Control | None) -> None:
    assert control(sql) == want
    assert may_control(sql.encode()) == (first_keyword(sql) in CONTROL_KEYWORDS)


def test_xa_outcomes() -> None:
    assert xa_outcome("XA COMMIT X'78612d31',X'',1") == ("X'78612d31',X'',1", False)
    assert xa_outcome("xa commit 'xa-1'") == ("X'78612d31',X'',1", False)
    assert xa_outcome('XA ROLLBACK "xa-1"') == ("X'78612d31',X'',1", True)
    assert xa_outcome('XA ROLLBACK "xa-1"', ANSI) is None  # a name, not a string: the server refuses it
    assert xa_outcome("XA COMMIT 'xa-1' ONE PHASE") is None  # resolves no earlier prepare
    assert xa_outcome("XA PREPARE 'xa-1'") is None


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("TRUNCATE TABLE t", [("d", "t")]),
        ("TRUNCATE `x`.`y`", [("x", "y")]),
        ("DROP TABLE IF EXISTS a, `b`.c", [("d", "a"), ("b", "c")]),
        ("DROP TEMPORARY TABLE t", []),
        ("DROP TEMPORARY TABLE `t` /* generated by server */", []),
        ("DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `t`", []),
        ("DROP TABLE `a.b`, `c d`.`e``f`", [("d", "a.b"), ("c d", "e`f")]),
        ("CREATE OR REPLACE TABLE n (id INT)", [("d", "n")]),
        ("CREATE OR REPLACE TEMPORARY TABLE n (id INT)", []),
        ("CREATE TABLE n (id INT)", []),
        ("CREATE SEQUENCE s", [("d", "s")]),
        ("ALTER SEQUENCE s RESTART 5", [("d", "s")]),
        ("DROP SEQUENCE IF EXISTS x.s", [("x", "s")]),
        ("DROP DATABASE gone", [("gone", "")]),
        ("drop schema if exists `we``ird`", [("we`ird", "")]),
        ("DROP DATABASE", []),
        ("DROP INDEX i ON t", []),
        ("ALTER TABLE t ADD COLUMN x INT", []),
    ],
)
def test_emptied(sql: str, want: list[tuple[str, str]]) -> None:
    assert list(emptied(sql, "d")) == want
    assert may_empty(sql.encode()) or not want


def test_emptied_names_under_ansi_quotes() -> None:
    assert emptied('DROP TABLE "a b"."c"', "d", ANSI) == (("a b", "c"),)


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        ("RENAME TABLE t TO t_old, `s`.`new` TO t", [(("d", "t"), ("d", "t_old")), (("s", "new"), ("d", "t"))]),
        ("RENAME TABLES IF EXISTS a WAIT 3 TO b", [(("d", "a"), ("d", "b"))]),
        ("ALTER TABLE t ADD COLUMN x INT, RENAME TO other.t2", [(("d", "t"), ("other", "t2"))]),
        ("ALTER ONLINE IGNORE TABLE IF EXISTS t NOWAIT RENAME AS t2", [(("d", "t"), ("d", "t2"))]),
        ("ALTER TABLE t RENAME = t2", [(("d", "t"), ("d", "t2"))]),
        ("ALTER TABLE t COMMENT 'x, RENAME TO y'", []),
        ("ALTER TABLE t RENAME COLUMN a TO b", []),
        ("ALTER TABLE t RENAME INDEX a TO b", []),
        ("ALTER TABLE t RENAME TO t", []),
        ("RENAME USER a TO b", []),
    ],
)
def test_renames(sql: str, want: list[tuple[tuple[str, str], tuple[str, str]]]) -> None:
    assert list(renames(sql, "d")) == want


# -- generated statements: every reader gives the answer the statement was built with ----------------------------------

_SEEDED = ("id", "v w", "note")


def _seeded(case: Case) -> SchemaTracker:
    """A tracker that knows the tables the case drops, creates and renames from (so they have something to act
    on)."""
    tables = {src for src, _ in case.renames} | set(case.drops) | set(case.creates)
    columns = tuple(TrackedColumn(n, "int") for n in _SEEDED)
    return SchemaTracker({t: TableSchema(t[0], t[1], columns) for t in tables if t[1]})


@settings(max_examples=1500, deadline=None)
@given(case())
def test_generated_statements_read_as_built(c: Case) -> None:
    raw = c.text.encode("utf-8")
    assert first_keyword(c.text, c.sql_mode) == c.first
    assert control(c.text, c.sql_mode) == c.control
    assert emptied(c.text, DB, c.sql_mode) == c.emptied
    assert renames(c.text, DB, c.sql_mode) == c.renames
    want_xa = None
    if c.control is not None and c.control.kind in ("xa_commit", "xa_rollback") and not c.control.one_phase:
        want_xa = (c.control.xid, c.control.kind == "xa_rollback")
    assert xa_outcome(c.text, c.sql_mode) == want_xa
    # the byte prefilters pass exactly the statements whose first keyword is theirs
    assert may_control(raw) == (c.first in CONTROL_KEYWORDS)
    assert may_empty(raw) == (c.first in EMPTYING_KEYWORDS)
    assert is_ddl(raw) == (c.first in SCHEMA_KEYWORDS)
    assert is_ddl(raw) or not c.ddl
    # the schema tracker reads the same statement the same way
    tracker = _seeded(c)
    tracker.execute(c.text, DB, c.sql_mode)
    for db, t in c.creates:
        ts = tracker.table(db, t)
        assert ts is not None and ts.column_names == _SEEDED and ts.primary_key == ("id",), c.text
    for db, t in c.drops:
        assert tracker.table(db, t) is None, c.text
    # renames one after the other, as the server applies them (a pair whose table is gone by then moves nothing)
    present = {(d.casefold(), t.casefold()) for (d, t), _ in c.renames}
    touched = set(present)
    for (sd, st_), (dd, dt) in c.renames:
        src, dst = (sd.casefold(), st_.casefold()), (dd.casefold(), dt.casefold())
        touched.add(dst)
        if src in present:
            present.discard(src)
            present.add(dst)
    for d, t in touched:
        assert (tracker.table(d, t) is not None) == ((d, t) in present), c.text
