"""What the task decoder (binlake.ingest.extract) reads from statements: which tables a statement empties without
row events.  No Spark needed."""

from __future__ import annotations

import pytest

# -- statements that empty tables without row events (extract._truncates) ----------------------------------------


class _Query:
    def __init__(self, query: str, db: str = "d") -> None:
        self.query, self.db = query, db


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("TRUNCATE TABLE t", [("d", "t")]),
        ("TRUNCATE `x`.`y`", [("x", "y")]),
        ("DROP TABLE IF EXISTS a, `b`.c", [("d", "a"), ("b", "c")]),
        ("CREATE OR REPLACE TABLE n (id INT)", [("d", "n")]),
        ("DROP DATABASE gone", [("gone", "")]),  # every table of it
        ("drop schema if exists `we``ird`", [("we`ird", "")]),
        ("DROP DATABASE", []),
        ("DROP INDEX i ON t", []),
    ],
)
def test_statements_that_empty_tables(query: str, want: list[tuple[str, str]]) -> None:
    from binlake.ingest.extract import _truncates
    from binlake.sql.statements import NO_TEMPORARY

    got = _truncates(_Query(query), 7, 4, None, NO_TEMPORARY)
    assert [(t.database, t.table) for t in got] == want
    assert all(t.seq == 7 and t.pos == 4 for t in got)


@pytest.mark.parametrize(
    ("query", "want"),
    [
        ("TRUNCATE TABLE t", []),  # the session's temporary t
        ("TRUNCATE TABLE other.t", [("other", "t")]),
        ("TRUNCATE TABLE `T`", []),  # names are looked up case-insensitively, as the schema tracker does
        ("DROP TABLE IF EXISTS a, t", [("d", "a")]),  # as written (MariaDB 10.11 logs the temporary part apart)
        ("CREATE OR REPLACE TABLE t (id INT)", [("d", "t")]),  # replaces the base table (MariaDB 10.11)
        ("ALTER SEQUENCE t RESTART", []),
        ("DROP SEQUENCE t", []),
    ],
)
def test_statements_on_a_temporary_table_empty_no_base_table(query: str, want: list[tuple[str, str]]) -> None:
    """In a session whose temporary table d.t shadows the base table d.t."""
    from binlake.ingest.extract import _truncates
    from binlake.sql.statements import Scope

    got = _truncates(_Query(query), 7, 4, None, Scope.of([("d", "t")]))
    assert [(t.database, t.table) for t in got] == want
