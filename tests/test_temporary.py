"""The sessions' temporary tables (binlake.sql.temporary) and what reads them: the statement readers' scope and the
schema tracker.

A property test runs generated sessions (statements as clients write them: comments, executable comments, any
letter case, quoting) against a model of the server's rules, with the state sent through its JSON record at
random points as it is between batches; hand-written cases pin the statements MariaDB 10.11 logs (see
tests/spark/test_temporary_tables.py for them on a live server).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.sqlgen import joined, kw

from binlake.errors import UnsupportedError
from binlake.events.base import EventHeader, EventType
from binlake.events.format import FormatDescriptionEvent
from binlake.events.query import QueryEvent
from binlake.schema import SchemaTracker
from binlake.sql.statements import NO_TEMPORARY, Scope, TableRef, emptied, folded, moves, renames
from binlake.sql.temporary import Session, TemporaryState, TemporaryTables

THREAD_SPECIFIC = 0x4  # LOG_EVENT_THREAD_SPECIFIC_F


def query(sql: str, session: Session = (1, 7), db: str = "d", *, thread_specific: bool = True) -> QueryEvent:
    """A QUERY event as the server logs ``sql`` for ``session`` (server id, thread id)."""
    header = EventHeader(0, EventType.QUERY_EVENT, session[0], 0, 0, THREAD_SPECIFIC if thread_specific else 0, 400)
    return QueryEvent(header, session[1], 0, 0, (), b"", db, sql.encode())


def start(created: int, server_id: int = 1, flags: int = 0) -> FormatDescriptionEvent:
    """The format description at the start of a binlog; ``created`` set: the first after the server started."""
    header = EventHeader(created, EventType.FORMAT_DESCRIPTION_EVENT, server_id, 0, 0, flags, 4)
    return FormatDescriptionEvent(header, 4, "10.11.19-MariaDB-log", created, 19, (), 1)


# -- the model ------------------------------------------------------------------------------------------------------


@dataclass
class Model:
    """The server's rules, written out: a session's temporary tables by (server id, thread id)."""

    sessions: dict[Session, set[TableRef]] = field(default_factory=dict)
    starts: dict[int, int] = field(default_factory=dict)

    def sees(self, session: Session, thread_specific: bool, rename: bool) -> set[TableRef]:
        """The temporary tables a statement finds: none when the server says it used none (RENAME TABLE aside)."""
        return set(self.sessions.get(session, ())) if thread_specific or rename else set()

    def state(self) -> TemporaryState:
        tables = sorted((*s, db, name) for s, held in self.sessions.items() for db, name in held)
        return TemporaryState(tuple(tables), tuple(sorted(self.starts.items())))


@dataclass(frozen=True)
class Op:
    """One event: ``sql`` run by ``session`` in ``db`` (or a server start when ``created``), what it does to the
    model (``apply``), and the tables it names whose answer is known (``named``: the name as resolved)."""

    kind: str
    session: Session = (1, 7)
    db: str = "d"
    sql: str = ""
    thread_specific: bool = True
    names: tuple[TableRef, ...] = ()  # resolved (database, table) the statement names, in order
    created: int = 0


SESSIONS = [(1, 7), (1, 8), (2, 7)]  # two sessions of server 1, and thread 7 of another server (a replica's log)
TABLES = ["t", "u", "v"]


@st.composite
def ref(draw: st.DrawFn, db: str) -> tuple[str, TableRef]:
    """A table name as written (plain, any case, backquoted, qualified) and as resolved."""
    name = draw(st.sampled_from(TABLES))
    written = "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in name)
    if draw(st.booleans()):
        written = f"`{written}`"
    if draw(st.integers(0, 3)) == 0:
        other = draw(st.sampled_from(["d", "e"]))
        return f"{other}.{written}", (other, name)
    return written, (db, name)


@st.composite
def op(draw: st.DrawFn) -> Op:
    kind = draw(st.sampled_from(["create", "create", "drop_temporary", "drop", "rename", "alter", "truncate", "start"]))
    if kind == "start":
        return Op("start", session=(draw(st.sampled_from([1, 2])), 0), created=draw(st.integers(0, 3)))
    session, db = draw(st.sampled_from(SESSIONS)), draw(st.sampled_from(["d", "e"]))
    flag = draw(st.integers(0, 4)) > 0
    if kind == "create":
        text, name = draw(ref(db))
        words = [draw(kw("CREATE"))]
        words += [draw(kw("OR")), draw(kw("REPLACE"))] if draw(st.booleans()) else []
        words += [draw(kw("TEMPORARY")), draw(kw("TABLE"))]
        words += [draw(kw("IF")), draw(kw("NOT")), draw(kw("EXISTS"))] if draw(st.booleans()) else []
        tail = draw(st.sampled_from(["(id INT)", "LIKE d.base", "SELECT 1 AS id"])).split()
        return Op(kind, session, db, joined(draw, *words, text, *tail), flag, (name,))
    if kind in ("drop_temporary", "drop"):
        refs = draw(st.lists(ref(db), min_size=1, max_size=3, unique_by=lambda r: r[1]))
        words = [draw(kw("DROP"))]
        if kind == "drop_temporary":  # as a client writes it, or as the server logs a session's end
            words += [draw(kw("TEMPORARY")) if draw(st.booleans()) else "/*!40005 TEMPORARY */"]
        words += [draw(kw("TABLE"))] + ([draw(kw("IF")), draw(kw("EXISTS"))] if draw(st.booleans()) else [])
        listed = ",".join(text for text, _ in refs).split(",")
        parts = [p for i, text in enumerate(listed) for p in ([","] if i else []) + [text]]
        return Op(kind, session, db, joined(draw, *words, *parts), flag, tuple(name for _, name in refs))
    if kind == "rename":
        pairs = draw(st.lists(st.tuples(ref(db), ref(db)), min_size=1, max_size=3))
        parts = [draw(kw("RENAME")), draw(kw("TABLE"))]
        for i, ((a, _), (b, _)) in enumerate(pairs):
            parts += ([","] if i else []) + [a, draw(kw("TO")), b]
        names = tuple(n for (_, a), (_, b) in pairs for n in (a, b))
        return Op(kind, session, db, joined(draw, *parts), flag, names)
    text, name = draw(ref(db))
    if kind == "alter":
        if draw(st.booleans()):
            to_text, to = draw(ref(db))
            sql = joined(draw, draw(kw("ALTER")), draw(kw("TABLE")), text, draw(kw("RENAME")), draw(kw("TO")), to_text)
            return Op("alter_rename", session, db, sql, flag, (name, to))
        sql = joined(draw, draw(kw("ALTER")), draw(kw("TABLE")), text, "ADD", "c", "INT")
        return Op(kind, session, db, sql, flag, (name,))
    return Op(kind, session, db, joined(draw, draw(kw("TRUNCATE")), text), flag, (name,))


def run_model(model: Model, o: Op) -> set[TableRef]:
    """Apply ``o`` to the model; the temporary tables the statement found (folded names)."""
    if o.kind == "start":
        server_id = o.session[0]
        if o.created and model.starts.get(server_id) != o.created:
            model.starts[server_id] = o.created
            model.sessions.clear()
        return set()
    seen = model.sees(o.session, o.thread_specific, o.kind == "rename")
    held = set(seen if o.thread_specific or o.kind == "rename" else model.sessions.get(o.session, ()))
    names = [folded(*n) for n in o.names]
    if o.kind == "create":
        held |= {names[0]}
    elif o.kind == "drop_temporary":
        held -= set(names)
    elif o.kind == "drop":
        held -= {n for n in names if n in seen}
    elif o.kind in ("rename", "alter_rename"):
        current = set(seen)
        for a, b in zip(names[::2], names[1::2], strict=True):
            if a in current:  # pairs run in order: a moved table answers to its new name
                current, held = current - {a} | {b}, held - {a} | {b}
            if o.kind == "alter_rename":
                break
    if held:
        model.sessions[o.session] = held
    else:
        model.sessions.pop(o.session, None)
    return seen


def event(o: Op) -> QueryEvent | FormatDescriptionEvent:
    if o.kind == "start":
        return start(o.created, o.session[0])
    return query(o.sql, o.session, o.db, thread_specific=o.thread_specific)


@settings(max_examples=300, deadline=None)
@given(st.lists(op(), max_size=30), st.data())
def test_sessions_follow_the_servers_rules(ops: list[Op], data: st.DataObject) -> None:
    model, tracker = Model(), TemporaryTables()
    for o in ops:
        ev = event(o)
        seen = run_model(model, o)
        if isinstance(ev, QueryEvent):
            scope = tracker.statement(ev)
            assert scope.tables == seen, o
            if o.kind == "truncate":  # the one answer the readers give: TRUNCATE of a temporary table empties none
                name = folded(*o.names[0])
                assert [folded(*t) for t in emptied(o.sql, o.db, scope=scope)] == ([] if name in seen else [name])
        else:
            tracker.started(ev)
        assert tracker.state == model.state(), o
        if data.draw(st.integers(0, 4)) == 0:  # a batch ends here: the state goes through its JSON record
            tracker = TemporaryTables(TemporaryState.from_json(json.loads(json.dumps(tracker.state.to_json()))))


# -- hand-written cases ---------------------------------------------------------------------------------------------


def test_a_session_ends_and_the_server_starts() -> None:
    tracker = TemporaryTables()
    tracker.statement(query("CREATE TEMPORARY TABLE t (id INT)"))
    tracker.statement(query("CREATE TEMPORARY TABLE e.t2 (id INT)", (1, 8)))
    assert tracker.scope(query("TRUNCATE t")).temporary("d", "t")
    assert not tracker.scope(query("TRUNCATE t", (1, 8))).temporary("d", "t")  # another session's
    assert not tracker.scope(query("TRUNCATE t", (2, 7))).temporary("d", "t")  # another server's thread 7
    # KILL or disconnect: one DROP per database, under the session's thread id
    tracker.statement(query("DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `t2`", (1, 8), "e"))
    assert tracker.state.tables == ((1, 7, "d", "t"),)
    tracker.started(start(1_795_565_258))  # the first binlog after a server start
    assert tracker.state == TemporaryState((), ((1, 1_795_565_258),))
    tracker.statement(query("CREATE TEMPORARY TABLE t (id INT)"))
    tracker.started(start(1_795_565_258))  # the same start read again (a reader resuming mid-file): nothing
    tracker.started(start(0))  # a binlog after a rotation
    tracker.started(start(1_795_565_999, flags=0x20))  # artificial: not the server's own
    assert tracker.state.tables == ((1, 7, "d", "t"),)


def test_the_thread_specific_flag() -> None:
    """MariaDB sets LOG_EVENT_THREAD_SPECIFIC_F on a statement that opened a temporary table; a statement without
    it used none, so its names are base tables even where the state has a temporary table (gone stale) - except
    RENAME TABLE, which MariaDB 10.11 logs without the flag for a temporary table."""
    tracker = TemporaryTables()
    tracker.statement(query("CREATE TEMPORARY TABLE t (id INT)"))
    assert tracker.scope(query("TRUNCATE t")) == Scope.of([("d", "t")])
    assert tracker.scope(query("TRUNCATE t", thread_specific=False)) == NO_TEMPORARY
    assert tracker.scope(query("/* x */ RENAME TABLE t TO u", thread_specific=False)) == Scope.of([("d", "t")])
    tracker.statement(query("RENAME TABLE t TO u", thread_specific=False))
    assert tracker.state.tables == ((1, 7, "d", "u"),)


@pytest.mark.parametrize(
    ("sql", "base"),
    [
        ("TRUNCATE t", []),
        ("TRUNCATE TABLE d.T", []),
        ("TRUNCATE e.t", [("e", "t")]),
        ("DROP TABLE t, u", [("d", "u")]),
        ("DROP TEMPORARY TABLE t", []),
        ("CREATE OR REPLACE TABLE t (id INT)", [("d", "t")]),  # the base table: MariaDB 10.11 replaces it
        ("CREATE OR REPLACE TEMPORARY TABLE t (id INT)", []),
    ],
)
def test_emptied_in_a_session(sql: str, base: list[TableRef]) -> None:
    assert list(emptied(sql, "d", scope=Scope.of([("d", "t")]))) == base


def test_moves_run_in_order() -> None:
    scope = Scope.of([("d", "t")])
    assert renames("RENAME TABLE t TO x, u TO t, t TO y", "d", scope=scope) == (
        (("d", "u"), ("d", "t")),  # the base u moves to t, which the temporary t (now x) no longer shadows
        (("d", "t"), ("d", "y")),
    )
    assert [m.temporary for m in moves("RENAME TABLE u TO v, t TO u, u TO w", "d", scope=scope)] == [False, True, True]
    assert renames("ALTER TABLE t ADD c INT, RENAME TO x", "d", scope=scope) == ()
    assert renames("ALTER TABLE e.t RENAME TO x", "d", scope=scope) == ((("e", "t"), ("d", "x")),)


# -- the schema tracker -----------------------------------------------------------------------------------------


def tracker_with(*statements: tuple[str, Session]) -> SchemaTracker:
    s = SchemaTracker.from_sql("CREATE TABLE t (id INT PRIMARY KEY, v INT); CREATE TABLE u (id INT PRIMARY KEY)", "d")
    for sql, session in statements:
        s.observe(query(sql, session))
    return s


def test_the_schema_tracker_leaves_base_tables_alone() -> None:
    a, b = (1, 7), (1, 8)
    s = tracker_with(
        ("CREATE TEMPORARY TABLE t (id INT, x INT, y INT)", a),
        ("ALTER TABLE t ADD COLUMN w INT", a),  # a's temporary t
        ("ALTER TABLE t ADD COLUMN z INT", b),  # the base t: b has no temporary table
        ("DROP INDEX `PRIMARY` ON t", a),
        ("CREATE TABLE x LIKE t", a),  # the temporary t's columns, which the tracker does not know
        ("CREATE TABLE y LIKE u", a),
        ("RENAME TABLE t TO t2, u TO t, t2 TO u", a),  # the temporary t ends up as u; the base u as t
        ("DROP TABLE u", a),  # the temporary u (once t)
    )
    assert s.column_names("d", "t") == ("id",) and s.primary_key("d", "t") == ("id",)  # the base u, renamed
    assert s.table("d", "u") is None
    assert s.table("d", "x") is None and s.column_names("d", "y") == ("id",)
    s.observe(query("ALTER TABLE t ADD COLUMN q INT", a))  # a's temporary tables are gone: the base t
    assert s.column_names("d", "t") == ("id", "q")
    assert SchemaTracker.from_sql("CREATE TABLE t (id INT); ALTER TABLE t ADD c INT").column_names("d", "t") == (
        "id",
        "c",
    )  # a script has no sessions: every name is a base table


def test_the_decoder_tells_the_tracker_of_server_starts(corpus_dir: Path) -> None:
    """A stale temporary t (its session died with the server) must not hide the base t from a new session that
    got the same thread id: reading a binlog, the decoder passes its format description to the tracker, and the
    first binlog after a server start has its created timestamp set.  Reading it again, from its start or from the
    middle (the reader decodes the format description first), forgets nothing more."""
    from binlake.reader import read_events

    binlogs = corpus_dir / "mariadb" / "binlogs"
    s = tracker_with(("CREATE TEMPORARY TABLE t (id INT)", (1, 7)))
    for _ in read_events(binlogs / "corpus-bin.000002", stop=300, schema=s):  # after a rotation: created is 0
        pass
    assert s.temporary.state.tables == ((1, 7, "d", "t"),)
    for _ in read_events(binlogs / "corpus-bin.000001", stop=300, schema=s):  # the server started
        pass
    assert s.temporary.state.tables == ()
    s.observe(query("CREATE TEMPORARY TABLE t (id INT)", (1, 7)))
    for ev in read_events(binlogs / "corpus-bin.000001", start=600, stop=1200, schema=s):
        assert ev.header.pos >= 600
    assert s.temporary.state.tables == ((1, 7, "d", "t"),)
    s.observe(query("RENAME TABLE t TO t_old", (1, 7), thread_specific=False))  # the temporary t
    assert s.column_names("d", "t") == ("id", "v")


# -- across batches and splits (the ingest's driver) --------------------------------------------------------------


def test_the_state_crosses_batches_and_splits_as_records() -> None:
    """The batch manifest keeps the schema state (tables and temporary tables), the DDL with the temporary tables of
    its session, and the temporary tables where each split starts; a task's tracker_at rebuilds them exactly.
    Records of version 1 (before temporary tables were tracked) still load."""
    from binlake.ingest.statements import Statement, tracker_at, tracker_from_json, tracker_to_json

    s = tracker_with(("CREATE TEMPORARY TABLE t (id INT)", (1, 7)))
    state = json.loads(json.dumps(tracker_to_json(s)))
    back = tracker_from_json(state)
    assert back.tables == s.tables and back.temporary.state == s.temporary.state
    assert tracker_from_json(state["tables"]).temporary.state == TemporaryState()  # version 1: a list of tables
    with pytest.raises(UnsupportedError, match="version 99"):
        tracker_from_json({**state, "version": 99})
    with pytest.raises(UnsupportedError, match="version 7"):
        Statement.from_json({"version": 7, "kind": "ddl"})

    ddl = Statement("ddl", 10, "f.000001", 400, "d", 0, "DROP TABLE t, u", scope=(("d", "t"),))  # t: temporary
    later = TemporaryState(((1, 7, "d", "x"),))
    snapshot = Statement("temporary", 19, "f.000001", 2, temporary=later)
    statements = [Statement.from_json(json.loads(json.dumps(x.to_json()))) for x in (ddl, snapshot)]
    assert statements == [ddl, snapshot]
    at = tracker_at(state, statements, 15)
    assert at.column_names("d", "t") == ("id", "v") and at.table("d", "u") is None
    assert at.temporary.state == s.temporary.state
    assert tracker_at(state, statements, 20).temporary.state == later
    v1 = ["rename", 5, "f.000001", 300, "d", 0, "RENAME TABLE a TO b", [[["d", "a"], ["d", "b"]]], "", False]
    pairs = ((("d", "a"), ("d", "b")),)
    assert Statement.from_json(v1) == Statement("rename", 5, "f.000001", 300, "d", 0, "RENAME TABLE a TO b", pairs)
