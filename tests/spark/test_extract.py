"""What the task decoder (binlake.spark.extract) reads from statements: which tables a statement empties without
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
    from binlake.spark.extract import _truncates

    got = _truncates(_Query(query), 7, 4, None)
    assert [(t.database, t.table) for t in got] == want
    assert all(t.seq == 7 and t.pos == 4 for t in got)
