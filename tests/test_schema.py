"""The schema tracker (binlake.schema): its DDL parser, and the fsp it gives MariaDB 5.3 temporal columns.

Unit tests of each statement form, hypothesis round trips (random tables written in random quoting/comment/case
styles parse back to themselves; random ALTER sequences follow a list model; any text is ignored without an
error), and the corpus: every table map of the MariaDB corpus whose table the DDL created agrees with the tracked
columns, and corpus-bin.000003 read from the middle decodes with the DDL given as a seed.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError
from binlake.events.context import DecodeOptions
from binlake.events.query import QueryEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import TableMapEvent
from binlake.reader import read_events
from binlake.schema import (
    MODE_NO_BACKSLASH_ESCAPES,
    SchemaTracker,
    TableSchema,
    TrackedColumn,
    is_ddl,
    split_statements,
)
from binlake.testing.mariadb import MariaDBServer
from binlake.values import collations

T = ColumnType


def cols(tracker: SchemaTracker, db: str | None, table: str) -> list[tuple[str, str, tuple[str, ...]]]:
    ts = tracker.table(db, table)
    assert ts is not None, f"{db}.{table} unknown"
    return [(c.name, c.type_name, c.params) for c in ts.columns]


def tracker_with(sql: str, db: str | None = "d") -> SchemaTracker:
    s = SchemaTracker()
    assert s.execute(sql, db)
    return s


# -- CREATE TABLE --------------------------------------------------------------------------------------------------


def test_create_with_quoting_comments_keys_and_odd_names() -> None:
    s = tracker_with(
        """/* leading */ create table if not exists `my db`.`t``1` (
          -- a comment, with a comma
          `id` int(10) unsigned NOT NULL AUTO_INCREMENT,
          "dq col" DECIMAL(10,2) DEFAULT '1,2',  # another, comment
          ünï TIME(3) COMMENT 'it''s (odd), isn\\'t it',
          e ENUM('a,b', 'c''d') CHARACTER SET latin1,
          `select` double precision,
          d mariadb_schema.datetime(6) /*!100301 INVISIBLE */,
          PRIMARY KEY (`id`), UNIQUE KEY u (e), KEY k (ünï), INDEX (d), CONSTRAINT c CHECK (id > 0),
          FOREIGN KEY (id) REFERENCES x (y), FULLTEXT f (e), SPATIAL INDEX s (d), CHECK (ünï <> 0),
          PERIOD FOR p (d, d)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='x, y (z)'""",
    )
    assert cols(s, "my db", "t`1") == [
        ("id", "int", ("10",)),
        ("dq col", "decimal", ("10", "2")),
        ("ünï", "time", ("3",)),
        ("e", "enum", ("a,b", "c'd")),
        ("select", "double precision", ()),
        ("d", "datetime", ("6",)),
    ]
    ts = s.table("My DB", "T`1")  # names are looked up case-insensitively
    assert ts is not None
    assert [c.fsp for c in ts.columns] == [None, None, 3, None, None, 6]
    assert [c.unsigned for c in ts.columns] == [True, False, False, False, False, False]
    assert ts.columns[0].definition == "int(10) unsigned NOT NULL AUTO_INCREMENT"
    assert ts.index("ÜNÏ") == 2 and ts.index("nope") is None


def test_create_forms() -> None:
    s = tracker_with("CREATE TABLE a (x TIMESTAMP(2))")
    assert s.execute("CREATE TABLE IF NOT EXISTS a (y INT)", "d") is False  # the existing table stays
    assert cols(s, "d", "a") == [("x", "timestamp", ("2",))]
    assert s.execute("CREATE OR REPLACE TABLE a (y INT)", "d")
    assert cols(s, "d", "a") == [("y", "int", ())]
    assert s.execute("CREATE TABLE other.b LIKE a", "d") and cols(s, "other", "b") == [("y", "int", ())]
    assert s.execute("CREATE TABLE c (LIKE other.b)", "d") and cols(s, "d", "c") == [("y", "int", ())]
    assert s.execute("CREATE TABLE c SELECT 1 AS one", "d")  # columns from a query: forgotten
    assert s.table("d", "c") is None
    assert s.execute("CREATE TABLE a (z INT) AS SELECT 1 AS one", "d") and s.table("d", "a") is None
    assert s.execute("CREATE TEMPORARY TABLE b (q INT)", "other") is False
    assert cols(s, "other", "b") == [("y", "int", ())]
    assert s.execute("CREATE TABLE e LIKE unknown", "d") is False and s.table("d", "e") is None


def test_system_versioning_adds_mariadbs_row_start_and_end() -> None:
    s = tracker_with("CREATE TABLE v (a INT) WITH SYSTEM VERSIONING")
    assert cols(s, "d", "v") == [("a", "int", ()), ("row_start", "timestamp", ("6",)), ("row_end", "timestamp", ("6",))]
    s.execute("ALTER TABLE v DROP SYSTEM VERSIONING", "d")
    assert cols(s, "d", "v") == [("a", "int", ())]
    s.execute("ALTER TABLE v ADD SYSTEM VERSIONING", "d")
    assert [c[0] for c in cols(s, "d", "v")] == ["a", "row_start", "row_end"]
    explicit = tracker_with(
        "CREATE TABLE w (a INT, s TIMESTAMP(6) AS ROW START, e TIMESTAMP(6) AS ROW END, PERIOD FOR SYSTEM_TIME(s, e))"
        " WITH SYSTEM VERSIONING"
    )
    assert [c[0] for c in cols(explicit, "d", "w")] == ["a", "s", "e"]


def test_sql_mode_no_backslash_escapes() -> None:
    sql = "CREATE TABLE t (a TIME(4) COMMENT 'C:\\', b TIME(2) COMMENT 'x')"
    plain, literal = SchemaTracker(), SchemaTracker()
    plain.execute(sql, "d")  # read with backslash escapes, the first string runs to the second one's quote
    assert cols(plain, "d", "t") == [("a", "time", ("4",))]
    assert literal.execute(sql, "d", MODE_NO_BACKSLASH_ESCAPES)
    assert cols(literal, "d", "t") == [("a", "time", ("4",)), ("b", "time", ("2",))]


# -- ALTER, RENAME, DROP ------------------------------------------------------------------------------------------


def test_alter_clauses() -> None:
    s = tracker_with("CREATE TABLE t (a INT, b INT, c INT)")
    assert s.execute(
        "ALTER ONLINE IGNORE TABLE IF EXISTS d.t WAIT 5 ADD COLUMN x TIME(1) FIRST, ADD y DATETIME(2) AFTER `b`, "
        "ADD COLUMN IF NOT EXISTS a BIGINT, ADD (p INT, q INT, INDEX (p)), ADD INDEX i (a), ADD PRIMARY KEY (a), "
        "ALGORITHM=INPLACE, LOCK=NONE, ADD CONSTRAINT c CHECK (a > 0), DROP INDEX i, DROP FOREIGN KEY f, "
        "ALTER COLUMN a SET DEFAULT 1, ENGINE=InnoDB",
        "d",
    )
    assert [n for n, _, _ in cols(s, "d", "t")] == ["x", "a", "b", "y", "c", "p", "q"]
    s.execute("ALTER TABLE t MODIFY y DATETIME(5) FIRST, CHANGE COLUMN c c2 TIMESTAMP(3), DROP COLUMN p, DROP q", "d")
    assert cols(s, "d", "t") == [
        ("y", "datetime", ("5",)),
        ("x", "time", ("1",)),
        ("a", "int", ()),
        ("b", "int", ()),
        ("c2", "timestamp", ("3",)),
    ]
    s.execute("ALTER TABLE t RENAME COLUMN c2 TO c3, DROP COLUMN IF EXISTS nope, MODIFY IF EXISTS nope INT", "d")
    assert [n for n, _, _ in cols(s, "d", "t")] == ["y", "x", "a", "b", "c3"]
    s.execute("ALTER TABLE t RENAME TO e.t2", "d")
    assert s.table("d", "t") is None and [n for n, _, _ in cols(s, "e", "t2")] == ["y", "x", "a", "b", "c3"]
    assert s.execute("ALTER TABLE unknown ADD z INT", "d") is False


def test_an_alter_it_cannot_follow_forgets_the_table() -> None:
    for clause in ("DROP COLUMN nope", "MODIFY nope INT", "CHANGE nope n INT", "ADD z INT AFTER nope"):
        s = tracker_with("CREATE TABLE t (a INT)")
        assert s.execute(f"ALTER TABLE t {clause}", "d")
        assert s.table("d", "t") is None, clause


def test_rename_and_drop() -> None:
    s = tracker_with("CREATE TABLE a (x INT)")
    s.execute("CREATE TABLE b (y INT)", "d")
    assert s.execute("RENAME TABLE a TO tmp, b TO a, tmp TO b", "d")  # the swap idiom
    assert cols(s, "d", "a") == [("y", "int", ())] and cols(s, "d", "b") == [("x", "int", ())]
    assert s.execute("RENAME TABLE d.a TO e.a", None) and cols(s, "e", "a") == [("y", "int", ())]
    assert s.execute("DROP TEMPORARY TABLE IF EXISTS b", "d") is False
    assert s.execute("DROP TABLE IF EXISTS `b`, nope /* generated by server */", "d")
    assert s.table("d", "b") is None
    s.execute("CREATE TABLE e.c (z INT)", None)
    assert s.execute("DROP DATABASE IF EXISTS e", "d") and s.tables == {}


def test_statements_it_does_not_understand_change_nothing() -> None:
    s = tracker_with("CREATE TABLE t (a INT)")
    for sql in (
        "CREATE TABLE u (a INT",  # unbalanced
        "CREATE TABLE (a INT)",
        "CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN CREATE TABLE t (b INT); END",
        "CREATE VIEW v AS SELECT 1",
        "ALTER TABLE t ADD COLUMN",
        "ALTER TABLE t RENAME COLUMN a",
        "DROP VIEW t",
        "RENAME USER a TO b",
        "INSERT INTO t VALUES (1)",
        "",
        "'",
    ):
        s.execute(sql, "d")
    assert cols(s, "d", "t") == [("a", "int", ())] and len(s.tables) == 1


# -- the cheap filter, scripts, seeds -------------------------------------------------------------------------------


def test_is_ddl() -> None:
    yes = [b"CREATE TABLE t (a INT)", b"  \n/* c */ -- x\n# y\nalter table t", b"/*!40101 DROP TABLE t*/", b"Rename"]
    no = [b"BEGIN", b"COMMIT", b"INSERT INTO t VALUES (1)", b"/* CREATE */ SELECT 1", b"CREATED", b"--CREATE", b""]
    assert [is_ddl(q) for q in yes] == [True] * len(yes)
    assert [is_ddl(q) for q in no] == [False] * len(no)


def test_is_ddl_is_linear_on_long_comment_runs() -> None:
    assert not is_ddl(b"#" * 200_000 + b"x")
    assert not is_ddl(b"/**/" * 50_000 + b"x")


def test_scripts_seeds_and_names() -> None:
    script = """-- mysqldump
/*!40101 SET NAMES utf8mb4 */;
USE `shop`;
DROP TABLE IF EXISTS `t`;
CREATE TABLE `t` (`id` int, `d` datetime(3)) ENGINE=InnoDB;
DELIMITER ;;
CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.id = 1; END ;;
DELIMITER ;
CREATE TABLE loose (x INT);
"""
    assert list(split_statements("a; ;b;")) == ["a", "b"]
    tracker = SchemaTracker.from_sql(script)
    assert cols(tracker, "shop", "t") == [("id", "int", ()), ("d", "datetime", ("3",))]
    assert tracker.column_names("shop", "t") == ("id", "d")
    assert tracker.column_names("shop", "t", 3) is None and tracker.column_names("shop", "nope") is None
    unqualified = SchemaTracker.from_sql("CREATE TABLE u (x TIME(2))")
    assert unqualified.column_names("any_db", "u") == ("x",)  # a seed without USE matches any database
    copy = SchemaTracker(tracker.tables)
    copy.execute("DROP TABLE t", "shop")
    assert copy.table("shop", "t") is None and tracker.table("shop", "t") is not None


# -- completing table-map columns -----------------------------------------------------------------------------------


def old_columns(*codes: int, names: tuple[str, ...] | None = None) -> tuple[Column, ...]:
    return tuple(
        Column.build(i, c, b"\x00\x00" if c == T.VARCHAR else b"").with_(name=names[i] if names else None)
        for i, c in enumerate(codes)
    )


def test_complete_sets_the_fsp_of_old_temporal_columns_only_where_the_ddl_agrees() -> None:
    s = tracker_with("CREATE TABLE t (id INT, a TIME(3), b DATETIME, c TIMESTAMP(6), v VARCHAR(5))")
    columns = old_columns(T.LONG, T.TIME, T.DATETIME, T.TIMESTAMP, T.VARCHAR)
    done = s.complete("d", "t", columns)
    assert [c.fsp for c in done] == [None, 3, None, 6, None]
    assert s.complete("d", "t", columns) is done  # the same tuple again: row decoders built for it are reused
    named = old_columns(T.LONG, T.TIME, T.DATETIME, T.TIMESTAMP, T.VARCHAR, names=("ID", "a", "b", "c", "v"))
    assert [c.fsp for c in s.complete("d", "t", named)] == [None, 3, None, 6, None]
    refused = [
        old_columns(T.LONG, T.TIME, T.DATETIME, T.TIMESTAMP),  # a column fewer
        old_columns(T.LONG, T.TIME, T.DATETIME, T.TIMESTAMP, T.VARCHAR, names=("id", "x", "b", "c", "v")),
        old_columns(T.LONG, T.DATETIME, T.DATETIME, T.TIMESTAMP, T.VARCHAR),  # a TIME(3) is no DATETIME
        old_columns(T.LONGLONG, T.TIME, T.DATETIME, T.TIMESTAMP, T.VARCHAR),
    ]
    for other in refused:
        assert s.complete("d", "t", other) is other
    assert s.complete("d", "unknown", columns) is columns
    odd = tracker_with("CREATE TABLE t (id INT, a mytype, b DATETIME, c TIMESTAMP(6), v VARCHAR(5))")
    assert odd.complete("d", "t", columns) is columns  # an old TIME column must be declared TIME


# -- hypothesis: random tables and ALTER sequences --------------------------------------------------------------

KEYWORDS = {"KEY", "INDEX", "PRIMARY", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK", "PERIOD"}
TYPES = ["INT", "BIGINT UNSIGNED", "VARCHAR(20)", "DECIMAL(8,3)", "TEXT", "ENUM('x','y')", "DOUBLE PRECISION"]
names = st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1, max_size=8).filter(
    lambda n: n == n.strip() and n.strip() != ""  # the servers strip trailing blanks of names
)


def quote(name: str, style: int) -> str:
    if style == 0 and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name.upper() not in KEYWORDS:
        return name
    if style == 1 and '"' not in name and "\\" not in name:
        return '"' + name + '"'
    return "`" + name.replace("`", "``") + "`"


@st.composite
def column_defs(draw: st.DrawFn) -> tuple[str, str, int | None]:
    """(name, SQL type, fsp or None)"""
    name = draw(names)
    kind = draw(st.sampled_from(["TIME", "DATETIME", "TIMESTAMP", *TYPES]))
    if kind in ("TIME", "DATETIME", "TIMESTAMP"):
        fsp = draw(st.one_of(st.none(), st.integers(0, 6)))
        return name, kind if fsp is None else f"{kind}({fsp})", fsp or 0
    return name, kind, None


filler = st.sampled_from([" ", "\n", "\t", " /* c, (x) ; */ ", " -- c, )\n", " # c (\n", "  "])


@settings(max_examples=150, deadline=None)
@given(st.lists(column_defs(), min_size=1, max_size=6, unique_by=lambda c: c[0].casefold()), st.data())
def test_random_create_tables_parse_back(columns: list[tuple[str, str, int | None]], data: st.DataObject) -> None:
    table = data.draw(names)
    parts = []
    for name, sql_type, _ in columns:
        case = data.draw(st.sampled_from([str.upper, str.lower, str.title]))
        extra = data.draw(st.sampled_from(["", " NOT NULL", " DEFAULT NULL", " COMMENT 'a, (b)'", " NULL /*!1 */"]))
        parts.append(quote(name, data.draw(st.integers(0, 2))) + data.draw(filler) + case(sql_type) + extra)
    if data.draw(st.booleans()):
        parts.append(f"PRIMARY KEY ({quote(columns[0][0], 2)})")
    sql = f"CREATE TABLE {quote(table, data.draw(st.integers(0, 2)))} ({','.join(parts)}) ENGINE=InnoDB"
    s = SchemaTracker()
    assert s.execute(sql, "db"), sql
    ts = s.table("db", table)
    assert ts is not None
    assert [(c.name, c.fsp) for c in ts.columns] == [(n, f) for n, _, f in columns]


@st.composite
def alter_ops(draw: st.DrawFn) -> list[tuple[str, ...]]:
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(["add", "add_first", "add_after", "drop", "modify", "change", "rename"]),
                st.integers(0, 50),
                st.sampled_from(["c", "dd", "e e", "F`", "ü"]),
                st.integers(0, 6),
            ).map(lambda t: (t[0], str(t[1]), t[2], str(t[3]))),
            max_size=12,
        )
    )


@settings(max_examples=150, deadline=None)
@given(alter_ops())
def test_alter_sequences_follow_a_list_model(ops: list[tuple[str, ...]]) -> None:
    """Each op is applied to the tracker as an ALTER and to a list of (name, fsp); they must stay equal, and a
    table whose ALTER cannot be followed (an unknown column) is forgotten."""
    s = tracker_with("CREATE TABLE t (id INT)", "db")
    model: list[tuple[str, int | None]] | None = [("id", None)]
    for op, pick, base, fsp in ops:
        if model is None:
            break
        names_now = [n for n, _ in model]
        new = f"{base}{pick}"
        if new.casefold() in (n.casefold() for n in names_now):
            continue
        target = names_now[int(pick) % len(names_now)] if names_now else "nope"
        q, col = quote(target, 2), (new, int(fsp))
        if op == "add":
            sql, model = f"ADD COLUMN {quote(new, 2)} TIME({fsp})", [*model, col]
        elif op == "add_first":
            sql, model = f"ADD {quote(new, 1)} TIME({fsp}) FIRST", [col, *model]
        elif op == "add_after":
            i = names_now.index(target) + 1 if names_now else 0
            sql, model = (
                f"ADD {quote(new, 2)} TIME({fsp}) AFTER {q}",
                [*model[:i], col, *model[i:]] if names_now else None,
            )
        elif op == "drop":
            sql, model = f"DROP COLUMN {q}", [m for m in model if m[0] != target] if names_now else None
        elif op == "modify":
            sql, model = f"MODIFY {q} DATETIME({fsp})", [(n, int(fsp)) if n == target else (n, f) for n, f in model]
        elif op == "change":
            sql, model = (
                f"CHANGE {q} {quote(new, 0)} TIMESTAMP({fsp})",
                [col if n == target else (n, f) for n, f in model],
            )
        else:
            sql, model = (
                f"RENAME COLUMN {q} TO {quote(new, 1)}",
                [(new, f) if n == target else (n, f) for n, f in model],
            )
        if not names_now and op not in ("add", "add_first"):
            model = None  # the other ops name a column: with none left, the table is forgotten
        s.execute(f"ALTER TABLE t {sql}", "db")
        ts = s.table("db", "t")
        if model is None:
            assert ts is None
        else:
            assert ts is not None and [(c.name, c.fsp) for c in ts.columns] == model, sql


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.sampled_from(["CREATE TABLE t (", "ALTER TABLE t ", "DROP TABLE ", "RENAME TABLE "]))
def test_any_text_is_ignored_or_applied_never_an_error(tail: str, head: str) -> None:
    s = tracker_with("CREATE TABLE t (a INT)")
    s.execute(head + tail, "d")
    s.execute(tail, "d", MODE_NO_BACKSLASH_ESCAPES)
    list(split_statements(tail))
    SchemaTracker().feed_script(tail)


# -- the decoder: DDL from QUERY events, seeds for logs that start later ---------------------------------------------


def test_tracker_follows_the_mariadb_corpus(corpus_dir: Path) -> None:
    """Every table map of the MariaDB corpus (files in order, one tracker) whose table the DDL before it created
    agrees with the tracked columns: names, count and type families (ALTERs, CONVERT, two-phase ALTER, RENAME,
    system versioning, odd and unicode names of corpus-bin.000002/5/6 included)."""
    tracker = SchemaTracker()
    agreed, unknown = 0, set()
    for path in sorted((corpus_dir / "mariadb" / "binlogs").glob("corpus-bin.0000[01]?")):
        for ev in read_events(path):
            if isinstance(ev, QueryEvent):
                tracker.observe(ev)
            elif isinstance(ev, TableMapEvent):
                ts = tracker.table(ev.schema, ev.table)
                if ts is None:
                    unknown.add(f"{ev.schema}.{ev.table}")
                    continue
                assert ts.agrees_with(ev.columns), (path.name, ev.header.pos, ts, ev.columns)
                if all(c.name is not None for c in ev.columns):
                    assert tracker.column_names(ev.schema, ev.table, ev.column_count) == tuple(ev.column_names)
                agreed += 1
    assert agreed >= 223
    assert unknown == set()  # corpus_dml.seq1 (a SEQUENCE) too: the fixed columns of every sequence


def test_mysql_functional_index_hidden_columns_are_refused(corpus_dir: Path) -> None:
    """MySQL's functional key parts add hidden generated columns the DDL does not list: the tracked table does not
    agree with such a map, so nothing is taken from it."""
    [path] = (corpus_dir / "mysql").glob("*/rpl_unfiltered_hidden_gcol.000001")
    tracker = SchemaTracker()
    maps = []
    for ev in read_events(path):
        if isinstance(ev, QueryEvent):
            tracker.observe(ev)
        elif isinstance(ev, TableMapEvent):
            maps.append(ev)
    ts = tracker.table(maps[0].schema, maps[0].table)
    assert ts is not None and ts.column_names == ("a", "b") and maps[0].column_count == 3
    assert not ts.agrees_with(maps[0].columns)


def test_a_read_from_inside_a_file_keeps_the_trackers_schema(corpus_dir: Path) -> None:
    """The MySQL 5.5 sakila binlog starts with ``DROP SCHEMA IF EXISTS sakila``, right after its format
    description.  A read that starts later (a Spark split, a table map decoded alone by the driver's scan) decodes
    the header events first: that event must not reach the tracker, which holds the schema at the start already
    (it forgot every sakila table, and the lake landed them as ``col_1``.. with no current state)."""
    [path] = (corpus_dir / "mysql").glob("*/mysql-bin.sakila")
    tracker = SchemaTracker()
    tm = None
    for ev in read_events(path, schema=tracker):
        if isinstance(ev, TableMapEvent):
            tm = ev
            break
    assert tm is not None and tm.table == "actor" and len(tracker.tables) == 16
    read_events_at = list(read_events(path, start=tm.header.pos, stop=tm.header.pos + 1, schema=tracker))
    assert [type(ev) for ev in read_events_at] == [TableMapEvent]
    assert len(tracker.tables) == 16
    assert tracker.column_names("sakila", "actor") == ("actor_id", "first_name", "last_name", "last_update")
    assert tracker.primary_key("sakila", "actor") == ("actor_id",)


CREATE_OLD = """CREATE TABLE t_temporal_old (
  id INT PRIMARY KEY,
  t0 TIME, t3 TIME(3), t6 TIME(6),
  dtm0 DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
  ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts6 TIMESTAMP(6) NULL
) ENGINE=InnoDB"""


def test_a_seed_sizes_columns_whose_create_table_is_not_read(corpus_dir: Path) -> None:
    """corpus-bin.000003 read from byte 2084 (after its CREATE TABLE): only a seed can give the fsp."""
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000003"

    def first_rows(options: DecodeOptions) -> object:
        ev = next(ev for ev in read_events(path, options=options, start=2084) if isinstance(ev, RowsEvent))
        return ev.rows()[0][1]

    with pytest.raises(BinlogError, match="DATETIME value of column 5"):
        first_rows(DecodeOptions())
    row = first_rows(DecodeOptions(schema_sql=f"USE corpus_types;\n{CREATE_OLD};"))
    assert isinstance(row, tuple) and row[:4] == (
        1,
        -dt.timedelta(hours=838, minutes=59, seconds=59),
        -dt.timedelta(hours=838, minutes=59, seconds=59, milliseconds=999),
        -dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999999),
    )
    with pytest.raises(BinlogError, match="DATETIME value of column 5"):  # the whole file, tracking off
        [ev.rows() for ev in read_events(path, options=DecodeOptions(track_schema=False)) if isinstance(ev, RowsEvent)]


def test_tracked_names_for_minimal_metadata_maps(corpus_dir: Path) -> None:
    """corpus-bin.000012 logs table maps without names (binlog_row_metadata=MINIMAL); the DDL of the files before
    it names their columns as the FULL maps of the same tables did."""
    tracker = SchemaTracker()
    logged: dict[tuple[str, str], list[str]] = {}
    named = 0
    for n in range(1, 13):
        for ev in read_events(corpus_dir / "mariadb" / "binlogs" / f"corpus-bin.{n:06d}"):
            if isinstance(ev, QueryEvent):
                tracker.observe(ev)
            elif isinstance(ev, TableMapEvent) and ev.columns[0].name is not None:
                logged[(ev.schema, ev.table)] = ev.column_names
            elif isinstance(ev, TableMapEvent) and (ev.schema, ev.table) in logged:
                assert n == 12
                found = tracker.column_names(ev.schema, ev.table, ev.column_count)
                assert found == tuple(logged[(ev.schema, ev.table)])
                named += 1
    assert named >= 5


def test_tracked_column_fsp_property() -> None:
    assert TrackedColumn("a", "time", ("7",)).fsp is None  # no server writes more than 6 digits
    assert TrackedColumn("a", "int").fsp is None and TrackedColumn("a", "datetime").fsp == 0
    assert TableSchema("d", "t", ()).column_names == ()


def test_cli_schema_option_and_one_tracker_across_files(corpus_dir: Path, tmp_path: Path) -> None:
    """``binlake stats --schema`` seeds the tracker; DDL read in one file of a run applies to the files after it."""
    from binlake.cli import main

    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000003"
    rest = tmp_path / "rest-bin.000003"  # the file from byte 2084 on: its CREATE TABLE is gone
    data = path.read_bytes()
    fde_end = 4 + int.from_bytes(data[4 + 9 : 4 + 13], "little")
    rest.write_bytes(data[:fde_end] + data[2084:])
    assert main(["stats", str(rest)]) == 2  # cannot size DATETIME(3) without the DDL
    schema = tmp_path / "schema.sql"
    schema.write_text(f"USE corpus_types;\n{CREATE_OLD};\n")
    assert main(["stats", "--schema", str(schema), str(rest)]) == 0
    assert main(["stats", str(path), str(rest)]) == 0  # the DDL of the first file sizes the second


# -- primary keys ---------------------------------------------------------------------------------------------------


def pk(sql: str, table: str = "t") -> tuple[str, ...] | None:
    """The primary key of ``d.<table>`` after the statements of ``sql`` (``;``-separated, run with database d)."""
    s = SchemaTracker()
    s.feed_script(sql, "d")
    return s.primary_key("d", table)


@pytest.mark.parametrize(
    ("sql", "key"),
    [
        ("CREATE TABLE t (id INT PRIMARY KEY, b INT)", ("id",)),
        ("CREATE TABLE t (a INT, id INT NOT NULL KEY)", ("id",)),  # a bare inline KEY is the primary key
        ("CREATE TABLE t (id INT UNIQUE, b INT NOT NULL UNIQUE KEY)", ()),  # unique keys only
        ("CREATE TABLE t (a INT, b INT UNIQUE KEY KEY)", ("b",)),  # both
        ("CREATE TABLE t (a INT COMMENT 'primary key', KEY k (a), UNIQUE u (a))", ()),
        ("CREATE TABLE t (a INT, b INT, c INT, PRIMARY KEY (c, a))", ("c", "a")),
        ("CREATE TABLE t (a INT, b INT, CONSTRAINT pk PRIMARY KEY (b,a))", ("b", "a")),
        ("CREATE TABLE t (a INT, b INT, CONSTRAINT PRIMARY KEY (b))", ("b",)),
        ("CREATE TABLE t (a INT, b INT, PRIMARY KEY USING BTREE (a))", ("a",)),
        ("CREATE TABLE t (a INT, b INT, PRIMARY KEY k (a) COMMENT 'x' USING HASH)", ("a",)),
        ("CREATE TABLE t (a VARCHAR(20), b INT, PRIMARY KEY (a(10) DESC, b ASC))", ("a", "b")),
        ("CREATE TABLE t (`A b` INT, `x``y` INT, PRIMARY KEY (`a B`, `X``Y`))", ("A b", "x`y")),  # spelt as declared
        ('CREATE TABLE t (Id INT, "v" INT, PRIMARY KEY (ID, V))', ("Id", "v")),
        ("CREATE TABLE t (a INT, b INT, /*!80013 PRIMARY KEY (b) */)", ("b",)),
        # what the server refuses, and what the tracker cannot read: no key rather than a wrong one
        ("CREATE TABLE t (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))", ()),
        ("CREATE TABLE t (a INT, PRIMARY KEY (nope))", ()),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a, A))", ()),
        ("CREATE TABLE t (a INT, PRIMARY KEY ((a + 1)))", ()),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a) , PRIMARY KEY USING BTREE)", ()),
        # MariaDB's system versioning puts the row end in the key (vers_prepare_keys)
        ("CREATE TABLE t (a INT PRIMARY KEY) WITH SYSTEM VERSIONING", ("a", "row_end")),
        ("CREATE TABLE t (a INT PRIMARY KEY, b INT WITH SYSTEM VERSIONING)", ("a", "row_end")),
        (
            "CREATE TABLE t (a INT PRIMARY KEY, b INT WITHOUT SYSTEM VERSIONING) WITH SYSTEM VERSIONING",
            ("a", "row_end"),
        ),
        ("CREATE TABLE t (a INT) WITH SYSTEM VERSIONING", ()),
        (
            "CREATE TABLE t (a INT, s TIMESTAMP(6) AS ROW START, e TIMESTAMP(6) AS ROW END, "
            "PERIOD FOR SYSTEM_TIME(s, e), PRIMARY KEY (a)) WITH SYSTEM VERSIONING",
            ("a", "e"),
        ),
        # LIKE copies the key; a table whose columns come from a query is unknown (so is its key)
        ("CREATE TABLE s (a INT, b INT, PRIMARY KEY (b)); CREATE TABLE t LIKE s", ("b",)),
        ("CREATE TABLE s (a INT, b INT, PRIMARY KEY (b)); CREATE TABLE t (LIKE d.s)", ("b",)),
        ("CREATE TABLE t (a INT PRIMARY KEY) SELECT 1 AS a", None),
        ("CREATE TABLE t AS SELECT 1 AS a", None),
        ("CREATE TABLE t (a INT PRIMARY KEY); CREATE TABLE IF NOT EXISTS t (b INT PRIMARY KEY)", ("a",)),
    ],
)
def test_primary_key_of_create_table(sql: str, key: tuple[str, ...] | None) -> None:
    assert pk(sql) == key


@pytest.mark.parametrize(
    ("alter", "key"),
    [
        # t is (a INT, b INT, c INT) without a key, u is (a, b, c) with PRIMARY KEY (b, a)
        ("ALTER TABLE t ADD PRIMARY KEY (c, a)", ("c", "a")),
        ("ALTER TABLE t ADD CONSTRAINT x PRIMARY KEY USING BTREE (`B`)", ("b",)),
        ("ALTER TABLE t ADD PRIMARY KEY IF NOT EXISTS (c)", ("c",)),
        ("ALTER TABLE t ADD COLUMN id INT PRIMARY KEY FIRST", ("id",)),
        ("ALTER TABLE t ADD id INT KEY AFTER a", ("id",)),
        ("ALTER TABLE t ADD (id INT, x INT, PRIMARY KEY (x, id))", ("x", "id")),
        ("ALTER TABLE t ADD (id INT PRIMARY KEY, x INT)", ("id",)),
        ("ALTER TABLE t ADD COLUMN IF NOT EXISTS a INT PRIMARY KEY", ("a",)),  # the column exists, the key comes
        ("ALTER TABLE t MODIFY COLUMN c BIGINT NOT NULL PRIMARY KEY", ("c",)),
        ("ALTER TABLE t CHANGE COLUMN c id BIGINT PRIMARY KEY FIRST", ("id",)),
        ("ALTER TABLE t ADD UNIQUE KEY (a), ADD INDEX (b), ADD c2 INT UNIQUE", ()),
        ("ALTER TABLE u DROP PRIMARY KEY", ()),
        ("ALTER TABLE u DROP INDEX `PRIMARY`", ()),
        ("ALTER TABLE u DROP KEY IF EXISTS `primary`", ()),
        ("ALTER TABLE u DROP CONSTRAINT `PRIMARY`", ()),
        ("ALTER TABLE u DROP INDEX b, DROP FOREIGN KEY f, DROP CONSTRAINT c", ("b", "a")),
        ("ALTER TABLE u ADD PRIMARY KEY (c), DROP PRIMARY KEY", ("c",)),  # drops apply to the old key, in any order
        ("ALTER TABLE u DROP PRIMARY KEY, MODIFY c INT PRIMARY KEY", ("c",)),
        ("ALTER TABLE u DROP PRIMARY KEY, CHANGE c z INT KEY", ("z",)),
        ("ALTER TABLE u ADD PRIMARY KEY IF NOT EXISTS (c)", ("b", "a")),  # a note: the key exists
        ("ALTER TABLE u DROP PRIMARY KEY, ADD PRIMARY KEY IF NOT EXISTS (c)", ()),  # ... in the old table
        ("ALTER TABLE u CHANGE a x INT, ADD COLUMN a INT", ("b", "x")),
        ("ALTER TABLE u RENAME COLUMN b TO `B2`, MODIFY a BIGINT FIRST", ("B2", "a")),
        ("ALTER TABLE u CHANGE B b BIGINT", ("b", "a")),
        ("ALTER TABLE u DROP COLUMN a, ADD COLUMN a INT", ("b", "a")),  # the new a takes the old a's place
        ("ALTER TABLE u DROP COLUMN a, DROP COLUMN b", ()),  # no part left: the key goes
        ("ALTER TABLE u DROP COLUMN a, DROP COLUMN b, ADD id INT PRIMARY KEY", ("id",)),
        ("ALTER TABLE u DROP COLUMN c", ("b", "a")),
        ("ALTER TABLE u RENAME TO e.u2, ENGINE=InnoDB", None),
        # refused by the server (ER_MULTIPLE_PRI_KEY, ER_KEY_COLUMN_DOES_NOT_EXIST), never logged: no key
        ("ALTER TABLE u ADD PRIMARY KEY (c)", ()),
        ("ALTER TABLE u MODIFY c INT PRIMARY KEY", ()),
        ("ALTER TABLE u DROP COLUMN a", ()),
        ("ALTER TABLE t ADD PRIMARY KEY (nope)", ()),
    ],
)
def test_primary_key_after_alter_table(alter: str, key: tuple[str, ...] | None) -> None:
    sql = f"CREATE TABLE t (a INT, b INT, c INT); CREATE TABLE u (a INT, b INT, c INT, PRIMARY KEY (b, a)); {alter}"
    assert pk(sql, "u" if "TABLE u" in alter else "t") == key


def test_primary_key_follows_renames_drops_and_versioning() -> None:
    s = tracker_with("CREATE TABLE t (a INT, b INT, PRIMARY KEY (b))")
    assert s.execute("RENAME TABLE t TO e.t2", "d") and s.primary_key("e", "t2") == ("b",)
    assert s.execute("DROP INDEX IF EXISTS `PRIMARY` ON e.t2", "d") and s.primary_key("e", "t2") == ()
    assert s.execute("DROP INDEX `PRIMARY` ON e.t2", "d") is False  # nothing left to drop
    assert s.execute("DROP INDEX `PRIMARY` ON unknown", "d") is False and s.primary_key("d", "unknown") is None
    s.execute("CREATE TABLE v (a INT PRIMARY KEY, b INT)", "d")
    s.execute("ALTER TABLE v ADD SYSTEM VERSIONING", "d")
    assert s.primary_key("d", "v") == ("a", "row_end")
    s.execute("ALTER TABLE v DROP SYSTEM VERSIONING", "d")  # the row end leaves the key with its column
    assert s.primary_key("d", "v") == ("a",)
    assert s.tables[("d", "v")].primary_key == ("a",)
    # a swap of names cannot be followed clause by clause: the table is forgotten, not given a wrong key
    s.execute("ALTER TABLE v RENAME COLUMN a TO b, RENAME COLUMN b TO a", "d")
    assert s.primary_key("d", "v") is None


def test_primary_key_survives_the_lakes_json_and_old_json_loads() -> None:
    from binlake.ingest.statements import tracker_from_json, tracker_to_json

    s = tracker_with("CREATE TABLE t (a INT, b INT, PRIMARY KEY (b, a))")
    s.execute("CREATE TABLE n (x INT)", "d")
    state = tracker_to_json(s)
    back = tracker_from_json(state)
    assert back.tables == s.tables and back.primary_key("d", "t") == ("b", "a") and back.primary_key("d", "n") == ()
    old = tracker_from_json([row[:3] for row in state["tables"]])  # version 1, written before keys were tracked
    assert old.column_names("d", "t") == ("a", "b") and old.primary_key("d", "t") == ()
    s.execute("CREATE SEQUENCE q", "d")
    back = tracker_from_json(tracker_to_json(s))
    assert back.tables == s.tables and back.tables[("d", "q")].sequence
    assert not tracker_from_json([row[:4] for row in tracker_to_json(s)["tables"]]).tables[("d", "q")].sequence


def test_sequences() -> None:
    """CREATE SEQUENCE gives the server's fixed columns (SHOW CREATE TABLE of a MariaDB 10.11 sequence), no key,
    and the row key of its one row; CREATE TABLE ... SEQUENCE=1 and LIKE a sequence make sequences too."""
    s = tracker_with("/*M!100300 CREATE SEQUENCE IF NOT EXISTS */ `s q` START WITH 5 INCREMENT BY 2 CACHE 3")
    ts = s.table("d", "s q")
    assert ts is not None and ts.sequence and ts.primary_key == ()
    assert [(c.name, c.type_name, c.unsigned) for c in ts.columns] == [
        ("next_not_cached_value", "bigint", False),
        ("minimum_value", "bigint", False),
        ("maximum_value", "bigint", False),
        ("start_value", "bigint", False),
        ("increment", "bigint", False),
        ("cache_size", "bigint", True),
        ("cycle_option", "tinyint", True),
        ("cycle_count", "bigint", False),
    ]
    assert ts.row_key == ("minimum_value", "maximum_value", "start_value", "increment", "cache_size", "cycle_option")
    s.execute("CREATE TABLE c LIKE `s q`", "d")
    s.execute("CREATE TABLE t (next_not_cached_value bigint(21) NOT NULL, minimum_value bigint(21) NOT NULL)", "d")
    assert s.tables[("d", "c")].sequence and not s.tables[("d", "t")].sequence and s.tables[("d", "t")].row_key == ()
    s.execute("CREATE SEQUENCE n AS INT UNSIGNED", "d")  # MariaDB 11.5 value types: not these columns
    assert s.table("d", "n") is None
    s.execute("DROP SEQUENCE IF EXISTS `s q`", "d")
    assert s.table("d", "s q") is None


@st.composite
def keyed_tables(draw: st.DrawFn) -> tuple[str, tuple[str, ...]]:
    """CREATE TABLE text for random columns and a random key over some of them (in a random order), declared
    inline (one column) or as an element anywhere in the list, in random quoting, case and key-part forms."""
    columns = draw(st.lists(names, min_size=1, max_size=6, unique_by=str.casefold))
    key = draw(st.permutations(columns).flatmap(lambda p: st.integers(0, len(p)).map(lambda n: tuple(p[:n]))))
    parts = [quote(c, draw(st.integers(0, 2))) + " " + draw(st.sampled_from(TYPES)) for c in columns]
    if len(key) == 1 and draw(st.booleans()):
        i = columns.index(key[0])
        parts[i] += draw(st.sampled_from([" PRIMARY KEY", " NOT NULL KEY", " key COMMENT 'unique'", " Primary Key"]))
    elif key:
        key_parts = []
        for c in key:
            case = draw(st.sampled_from([str.upper, str.lower, str.title]))
            suffix = draw(st.sampled_from(["", " DESC", " asc", "(4)", "(4) DESC"]))
            key_parts.append(quote(case(c), 2) + suffix)
        head = draw(st.sampled_from(["PRIMARY KEY", "CONSTRAINT PRIMARY KEY", "CONSTRAINT `pk` primary key"]))
        using = draw(st.sampled_from(["", " USING BTREE", " pk_name"]))
        parts.insert(draw(st.integers(0, len(parts))), f"{head}{using} ({', '.join(key_parts)})")
    if draw(st.booleans()):
        parts.insert(
            draw(st.integers(0, len(parts))), f"UNIQUE KEY u ({quote(columns[-1], 2)}), KEY ({quote(columns[0], 2)})"
        )
    return f"CREATE TABLE t ({', '.join(parts)})", key


@settings(max_examples=200, deadline=None)
@given(keyed_tables())
def test_random_keyed_tables_give_their_key(table: tuple[str, tuple[str, ...]]) -> None:
    sql, key = table
    s = SchemaTracker()
    assert s.execute(sql, "d"), sql
    assert s.primary_key("d", "t") == key, sql


SERVER_KEY_CASES = [
    "CREATE TABLE t (a INT KEY, b INT UNIQUE, c INT NOT NULL UNIQUE KEY)",
    "CREATE TABLE t (a INT, b INT NOT NULL UNIQUE)",  # InnoDB clusters by b, but it is no PRIMARY KEY
    "CREATE TABLE t (a VARCHAR(20), `B b` INT, CONSTRAINT pk PRIMARY KEY USING BTREE (`b B` DESC, A(5)))",
    "CREATE TABLE t (a INT, b INT, c INT, PRIMARY KEY (b, a)); ALTER TABLE t DROP COLUMN a",
    "CREATE TABLE t (a INT, b INT, c INT, PRIMARY KEY (b, a)); ALTER TABLE t DROP COLUMN a, DROP b, ADD d INT KEY",
    "CREATE TABLE t (a INT, b INT, c INT, PRIMARY KEY (b, a)); ALTER TABLE t DROP COLUMN a, ADD COLUMN a INT FIRST",
    "CREATE TABLE t (a INT, b INT, c INT, PRIMARY KEY (b, a)); ALTER TABLE t CHANGE a x INT, ADD COLUMN a INT",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)); ALTER TABLE t RENAME COLUMN a TO z,"
    " ADD PRIMARY KEY IF NOT EXISTS (b), ALGORITHM=COPY",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)); ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY IF NOT EXISTS (b)",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)); ALTER TABLE t ADD PRIMARY KEY (b), DROP PRIMARY KEY",
    "CREATE TABLE t (a INT, b INT PRIMARY KEY); ALTER TABLE t MODIFY a BIGINT PRIMARY KEY",
    "CREATE TABLE t (a INT, b INT PRIMARY KEY); ALTER TABLE t DROP INDEX `PRIMARY`, CHANGE a c INT PRIMARY KEY FIRST",
    "CREATE TABLE t (a INT, b INT KEY); DROP INDEX `PRIMARY` ON t; ALTER TABLE t ADD COLUMN IF NOT EXISTS a INT KEY",
    "CREATE TABLE t (a INT, b INT PRIMARY KEY); ALTER TABLE t DROP CONSTRAINT `PRIMARY`",
    "CREATE TABLE u (a INT, b INT, PRIMARY KEY (b)); CREATE TABLE t LIKE u; DROP TABLE u",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a), PRIMARY KEY (b))",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)) WITH SYSTEM VERSIONING",
    "CREATE TABLE t (a INT PRIMARY KEY, b INT WITH SYSTEM VERSIONING)",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)); ALTER TABLE t ADD SYSTEM VERSIONING",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a)) WITH SYSTEM VERSIONING; SET SESSION system_versioning_alter_history"
    " = KEEP; ALTER TABLE t DROP SYSTEM VERSIONING",
    "CREATE TABLE t (a INT, b INT); ALTER TABLE t ADD (c INT, PRIMARY KEY (c, b)), ADD d INT UNIQUE",
]


@pytest.mark.server
def test_primary_keys_agree_with_mariadb(mariadb_server: MariaDBServer) -> None:
    """Each script's statements run on a private MariaDB; those it accepts (the ones a binlog would hold) go to a
    tracker, whose key must be the server's (information_schema.key_column_usage of the PRIMARY constraint)."""
    from binlake.testing.mariadb import MariaDBError

    db = "binlake_schema_pk"
    mariadb_server.execute(f"DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}")
    try:
        for script in SERVER_KEY_CASES:
            tracker, refused = SchemaTracker(), []
            setup = ""
            for stmt in split_statements(script):
                if stmt.upper().startswith("SET "):
                    setup = stmt + ";"  # a session variable: kept for the statements after it
                    continue
                try:
                    mariadb_server.execute(f"USE {db}; {setup} {stmt}")
                except MariaDBError:
                    refused.append(stmt)
                    continue
                tracker.execute(stmt, db)
            where = f"table_schema = '{db}' AND table_name = 't'"
            rows = mariadb_server.query(
                f"SELECT column_name FROM information_schema.key_column_usage WHERE {where} "
                "AND constraint_name = 'PRIMARY' ORDER BY ordinal_position"
            )
            exists = mariadb_server.query(f"SELECT COUNT(*) FROM information_schema.tables WHERE {where}")
            expected = tuple(r[0] for r in rows) if exists == [("1",)] else None
            assert tracker.primary_key(db, "t") == expected, (script, refused)
            mariadb_server.execute(f"DROP TABLE IF EXISTS {db}.t")
    finally:
        mariadb_server.execute(f"DROP DATABASE IF EXISTS {db}")


# -- charsets: each string column's, as the server decides it ------------------------------------------------------


def _charsets(tracker: SchemaTracker, db: str, table: str) -> dict[str, str | None]:
    ts = tracker.table(db, table)
    assert ts is not None
    return {c.name: None if c.charset is None else collations.charset_name(c.charset) for c in ts.columns}


def test_column_charsets_from_the_column_the_table_the_database_and_the_server() -> None:
    s = SchemaTracker()
    assert s.execute("CREATE DATABASE shop CHARACTER SET utf8mb4", server=8)
    s.execute(
        "CREATE TABLE t (a INT, n VARCHAR(40), b VARBINARY(3), c CHAR(2) CHARACTER SET latin1, d TEXT COLLATE "
        "utf8mb3_bin, e ENUM('x') ASCII, f CHAR(1) BYTE, g NCHAR(3), h NATIONAL VARCHAR(2), j JSON, k BLOB, "
        "l CHAR(3) BINARY CHARSET 'cp1251', m CHAR(1) CHARACTER SET binary, u UUID, z VARCHAR(3) CHARSET nosuch)",
        "shop",
    )
    assert _charsets(s, "shop", "t") == {
        "a": None,
        "n": "utf8mb4",  # the database's
        "b": "binary",
        "c": "latin1",
        "d": "utf8mb3",
        "e": "latin1",
        "f": "binary",
        "g": "utf8mb3",
        "h": "utf8mb3",
        "j": "utf8mb4",
        "k": "binary",
        "l": "cp1251",
        "m": "binary",
        "u": "binary",
        "z": None,  # a charset binlake does not know: not the table's
    }
    # a table's own default; a database never created in the statements: the server's default of the statement
    s.execute("CREATE TABLE u (n VARCHAR(4)) ENGINE=InnoDB DEFAULT CHARSET=utf8 COLLATE=utf8_bin", "x", server=8)
    s.execute("CREATE TABLE v (n VARCHAR(4))", "x", server=8)
    s.execute("CREATE TABLE w (n VARCHAR(4))", "x")
    assert (_charsets(s, "x", "u"), _charsets(s, "x", "v"), _charsets(s, "x", "w")) == (
        {"n": "utf8mb3"},
        {"n": "latin1"},
        {"n": None},
    )
    # CREATE DATABASE without a charset: the server's default then, not the one of a later statement
    s.execute("CREATE DATABASE plain", server=33)
    s.execute("CREATE TABLE plain.t (n TEXT)", "x", server=8)
    assert _charsets(s, "plain", "t") == {"n": "utf8mb3"}


def test_alter_table_charsets_and_convert() -> None:
    s = SchemaTracker.from_sql("CREATE TABLE t (a VARCHAR(3), b BLOB) DEFAULT CHARSET latin1", "d")
    s.execute("ALTER TABLE d.t ADD c VARCHAR(3), DEFAULT CHARACTER SET = utf8mb4, MODIFY a VARCHAR(4)")
    assert _charsets(s, "d", "t") == {"a": "utf8mb4", "b": "binary", "c": "utf8mb4"}
    s.execute("ALTER TABLE d.t ENGINE=InnoDB COLLATE ucs2_bin, ADD e TEXT, CHANGE c c2 VARCHAR(3) CHARSET ascii")
    assert _charsets(s, "d", "t") == {"a": "utf8mb4", "b": "binary", "c2": "ascii", "e": "ucs2"}
    s.execute("ALTER TABLE d.t CONVERT TO CHARACTER SET utf16")
    assert _charsets(s, "d", "t") == {"a": "utf16", "b": "binary", "c2": "utf16", "e": "utf16"}
    s.execute("CREATE DATABASE d2 CHARSET sjis")
    s.execute("CREATE TABLE d2.t LIKE d.t")
    s.execute("ALTER TABLE d2.t CONVERT TO CHARACTER SET DEFAULT, ADD f CHAR(1)")
    assert _charsets(s, "d2", "t") == {"a": "sjis", "b": "binary", "c2": "sjis", "e": "sjis", "f": "sjis"}
    s.execute("ALTER DATABASE d2 DEFAULT CHARACTER SET latin2")
    s.execute("CREATE TABLE d2.u (a CHAR(1))")
    assert _charsets(s, "d2", "u") == {"a": "latin2"} and s.databases == {"d2": collations.collation_id("latin2")}
    s.execute("DROP DATABASE d2")
    assert s.databases == {}


def test_charsets_survive_the_lakes_json_and_version_2_loads() -> None:
    from binlake.ingest.statements import tracker_from_json, tracker_to_json

    s = SchemaTracker()
    s.execute("CREATE DATABASE d CHARACTER SET utf8mb4")
    s.execute("CREATE TABLE t (a VARCHAR(3), b CHAR(2) CHARACTER SET latin1) DEFAULT CHARSET=ucs2", "d")
    state = tracker_to_json(s)
    back = tracker_from_json(state)
    assert back.tables == s.tables and back.databases == {"d": 45}
    old = {**state, "version": 2, "tables": [[*t[:5]] for t in state["tables"]]}
    old["tables"][0][2] = [c[:5] for c in old["tables"][0][2]]
    del old["databases"]
    assert _charsets(tracker_from_json(old), "d", "t") == {"a": None, "b": None}


CHARSET_CASES = [
    "CREATE TABLE t (a VARCHAR(3), b CHAR(2) CHARACTER SET latin1, c TEXT COLLATE utf8mb3_bin, d ENUM('x') ASCII,"
    " e NCHAR(2), f JSON, g VARBINARY(2), h SET('a') CHARSET cp1251, i CHAR(1) BYTE, j LONG, k UUID)",
    "CREATE TABLE t (a VARCHAR(3)) DEFAULT CHARSET=sjis; ALTER TABLE t ADD b TEXT, DEFAULT COLLATE = ucs2_bin",
    "CREATE TABLE t (a VARCHAR(3), b TINYTEXT CHARACTER SET latin1); ALTER TABLE t CONVERT TO CHARACTER SET utf16",
    "CREATE TABLE t (a VARCHAR(3)) CHARSET latin1; ALTER TABLE t MODIFY a VARCHAR(4), CHARACTER SET utf8mb4",
    "CREATE TABLE u (a CHAR(1)) CHARSET gbk; CREATE TABLE t LIKE u; ALTER TABLE t CONVERT TO CHARACTER SET DEFAULT",
]


@pytest.mark.server
def test_column_charsets_agree_with_mariadb(mariadb_server: MariaDBServer) -> None:
    """Each script on a private MariaDB, in a database created with a charset of its own: the tracker, fed the
    statements as the binlog logs them (with their session's collation_server), gives every column the charset
    information_schema.COLUMNS says; a second database created without one takes the server's."""
    from binlake.testing.mariadb import MariaDBError

    server = int(mariadb_server.query("SELECT id FROM information_schema.collations WHERE collation_name = "
                                      "@@collation_server")[0][0] or 0)  # fmt: skip
    for db, create in (("binlake_cs_a", "CHARACTER SET latin2"), ("binlake_cs_b", "")):
        mariadb_server.execute(f"DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db} {create}")
        try:
            for script in CHARSET_CASES:
                tracker = SchemaTracker()
                tracker.execute(f"CREATE DATABASE {db} {create}", server=server)
                for stmt in split_statements(script):
                    try:
                        mariadb_server.execute(f"USE {db}; {stmt}")
                    except MariaDBError:
                        continue
                    tracker.execute(stmt, db, server=server)
                rows = mariadb_server.query(
                    f"SELECT column_name, character_set_name FROM information_schema.columns WHERE table_schema = "
                    f"'{db}' AND table_name = 't' ORDER BY ordinal_position"
                )
                expected = {name: cs for name, cs in rows}
                got = _charsets(tracker, db, "t")
                # MariaDB lists no charset for the binary strings (their collation is binary, not a charset's)
                assert {k: (None if v == "binary" else v) for k, v in got.items()} == expected, (db, script)
                mariadb_server.execute(f"DROP TABLE IF EXISTS {db}.t, {db}.u")
        finally:
            mariadb_server.execute(f"DROP DATABASE IF EXISTS {db}")
