"""One rule for transaction boundaries (binlake.transactions), and every consumer of it: ``binlake stats``, the
damaged-log reader (binlake.recovery), the ingest's planner, driver scan and task decoder (binlake.spark), and the
schema tracker.

The rule is checked on hand-made event streams (MariaDB and MySQL GTID groups, logs without GTIDs, XA, payloads,
damage), on every corpus file (the header walk's boundaries are boundaries of the event-level rule), and on
binlogs built here from generated statements (tests/sqlgen.py): the same statement text gives the same answer in
every consumer.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.sqlgen import DB, Case, control_case, ddl_case, gap, kw, other_case

from binlake.binlogs import BinlogFile
from binlake.errors import BinlogError
from binlake.events.base import EventType
from binlake.events.query import QueryEvent
from binlake.ingest.extract import EventRecord, Truncate, decode_split
from binlake.ingest.statements import ReadSpec, scan_statements
from binlake.lake.records import Split
from binlake.reader import header_table, read_events
from binlake.recovery import Skipped, read_events_recovering
from binlake.render.stats import collect
from binlake.schema import SchemaTracker, TableSchema, TrackedColumn, server_collation
from binlake.sql.lexer import MODE_ANSI_QUOTES, MODE_NO_BACKSLASH_ESCAPES
from binlake.transactions import (
    BETWEEN_EVENTS,
    GTID_EVENTS,
    Transactions,
    last_boundary,
    next_boundary,
)
from binlake.wire import crc32

E = EventType
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "example-bin.000001"


# -- the rule on hand-made streams -------------------------------------------------------------------------------------


def run(events: list[tuple[int, dict[str, object]]], **kw: object) -> list[tuple[bool, bool, str | None, int | None]]:
    """(begins, ends, outcome, start) per event of ``events`` ((code, feed keywords)), positions 100, 200, ..."""
    trx = Transactions(**kw)  # type: ignore[arg-type]
    out = []
    for i, (code, args) in enumerate(events):
        pos = 100 * (i + 1)
        step = trx.feed(code, pos, pos + 100, **args)  # type: ignore[arg-type]
        out.append((step.begins, step.ends, step.outcome, trx.start))
    return out


def q(text: str) -> tuple[int, dict[str, object]]:
    return (E.QUERY_EVENT, {"query": text.encode()})


def test_mariadb_groups() -> None:
    gtid_trans = (E.GTID_EVENT, {"gtid": "0-1-1"})
    gtid_alone = (E.GTID_EVENT, {"gtid": "0-1-2", "standalone": True})
    steps = run(
        [
            gtid_trans,
            (E.TABLE_MAP_EVENT, {}),
            (E.WRITE_ROWS_EVENT_V1, {"statement_end": True}),  # rows inside a GTID group never end it
            (E.XID_EVENT, {}),
            gtid_alone,
            q("CREATE TABLE t (a INT)"),
            gtid_trans,
            q("INSERT INTO t VALUES (1)"),  # statement format inside a 'trans' group: it runs to its COMMIT
            q("COMMIT"),
            gtid_trans,
            q("ROLLBACK"),
            (E.GTID_EVENT, {"gtid": "0-1-5"}),
            (E.XA_PREPARE_LOG_EVENT, {}),
            gtid_alone,
            q("XA COMMIT X'01',X'',1"),  # MariaDB logs the outcome as a group of its own
        ]
    )
    assert steps == [
        (True, False, None, 100),
        (False, False, None, 100),
        (False, False, None, 100),
        (False, True, "commit", 100),
        (True, False, None, 500),
        (False, True, "commit", 500),
        (True, False, None, 700),
        (False, False, None, 700),
        (False, True, "commit", 700),
        (True, False, None, 1000),
        (False, True, "rollback", 1000),
        (True, False, None, 1200),
        (False, True, "prepare", 1200),
        (True, False, None, 1400),
        (False, True, "commit", 1400),
    ]


def test_mysql_groups_and_logs_without_gtids() -> None:
    steps = run(
        [
            (E.GTID_LOG_EVENT, {"gtid": "u:1"}),
            q("BEGIN"),  # belongs to the GTID's transaction
            (E.WRITE_ROWS_EVENT, {}),
            (E.XID_EVENT, {}),
            (E.ANONYMOUS_GTID_LOG_EVENT, {}),
            q("/* DDL */ DROP TABLE t"),  # DDL: a transaction of its own, after its GTID
            q("begin work"),  # no GTID (MySQL 5.x)
            q("INSERT INTO t VALUES (1)"),
            q("/* x */ commit"),
            (E.INTVAR_EVENT, {}),  # a statement logged alone opens at its context events
            q("INSERT INTO m VALUES (NULL)"),
            (E.XID_EVENT, {}),  # MySQL 5.0's autocommit XID after it: ends nothing binlake saw begin
            (E.TABLE_MAP_EVENT, {}),  # MySQL 5.1 before GA: non-transactional rows without BEGIN
            (E.WRITE_ROWS_EVENT_V1, {"statement_end": False}),
            (E.WRITE_ROWS_EVENT_V1, {"statement_end": True}),
        ]
    )
    assert steps == [
        (True, False, None, 100),
        (False, False, None, 100),
        (False, False, None, 100),
        (False, True, "commit", 100),
        (True, False, None, 500),
        (False, True, "commit", 500),
        (True, False, None, 700),
        (False, False, None, 700),
        (False, True, "commit", 700),
        (True, False, None, 1000),
        (False, True, "commit", 1000),
        (False, True, "commit", None),
        (True, False, None, 1300),
        (False, False, None, 1300),
        (False, True, "commit", 1300),
    ]


def test_cut_between_events_resume_and_lost() -> None:
    trx = Transactions()
    trx.feed(E.FORMAT_DESCRIPTION_EVENT, 4, 100)
    assert trx.resume == 100 and not trx.open
    trx.feed(E.GTID_EVENT, 100, 150, gtid="0-1-1")
    trx.feed(E.TABLE_MAP_EVENT, 150, 200)
    assert trx.open and trx.gtid == "0-1-1" and trx.resume == 100
    step = trx.feed(E.GTID_EVENT, 200, 250, gtid="0-1-2")  # the first never ended (a log cut short)
    assert step.begins and step.cut == 100 and trx.start == 200
    trx.feed(E.XID_EVENT, 250, 280)
    assert trx.resume == 280 and trx.gtid == "0-1-2"
    trx.feed(E.HEARTBEAT_LOG_EVENT, 0, None)
    assert trx.resume == 280
    trx.feed(E.GTID_EVENT, 280, 300, gtid="0-1-3")
    step = trx.feed(E.ROTATE_EVENT, 300, 350)
    assert not step.inside and step.cut == 280 and trx.resume == 350
    # damage: in a log with GTIDs a BEGIN after the gap belongs to the broken transaction; its end ends the gap
    trx.lost()
    assert not trx.feed(E.QUERY_EVENT, 400, 450, query=b"BEGIN").begins
    assert trx.feed(E.XID_EVENT, 450, 480).ends and trx.start is None
    assert trx.feed(E.GTID_EVENT, 480, 500).begins
    # without GTIDs, BEGIN after a gap opens a transaction
    plain = Transactions()
    plain.lost()
    assert plain.feed(E.QUERY_EVENT, 400, 450, query=b"BEGIN").begins
    # the end of the stream: the open transaction's start, and a fresh tracker
    assert plain.finish() == 400 and plain.finish() is None


def test_payload_events_resume_after_the_payload(corpus_dir: Path) -> None:
    events = list(read_events(corpus_dir / "mysql/rust_mysql_common/transaction_compression.000001"))
    trx = Transactions()
    ends = [(ev.header.pos, trx.resume) for ev in events if trx.event(ev).ends]
    assert ends == [(152, 431)]  # the XID inside the payload at 274; the payload ends at 431


def test_header_walk_boundaries() -> None:
    codes = bytes([E.FORMAT_DESCRIPTION_EVENT, E.GTID_EVENT, E.QUERY_EVENT, E.XID_EVENT, E.INTVAR_EVENT])
    assert next_boundary(codes) == 1 and next_boundary(codes, 2) == 4 and next_boundary(codes, 5) is None
    assert last_boundary(codes) == 4 and last_boundary(codes[:3]) == 1 and last_boundary(codes[:1]) is None
    assert next_boundary(codes[:4], 2) == 4  # after the last event


def test_every_header_walk_boundary_is_an_event_boundary(corpus_dir: Path) -> None:
    """On every corpus file the header walk decodes whole: each boundary the planner may cut at is where the event
    rule starts a transaction or has none open (so a task that starts there sees whole transactions)."""
    checked = 0
    for path in sorted((corpus_dir / "mysql").rglob("*")) + sorted(
        (corpus_dir / "mariadb" / "binlogs").glob("corpus-bin.*")
    ):
        if not path.is_file():
            continue
        try:
            table = header_table(str(path), 4)
            if table.error() is not None or E.START_ENCRYPTION_EVENT in table.codes:
                continue
            events = [ev for ev in read_events(path) if ev.header.in_payload is None]
        except BinlogError:
            continue
        if [ev.header.type_code for ev in events] != list(table.codes):
            continue  # a WL#2325 prototype log: its stored type codes are not the ones the decoder gives
        trx = Transactions()
        open_before: dict[int, bool] = {}
        for ev in events:
            open_before[ev.header.pos] = trx.open
            trx.event(ev)
        open_before[table.end] = trx.open
        k = next_boundary(table.codes)
        while k is not None:
            pos = table.positions[k] if k < len(table) else table.end
            code = table.codes[k] if k < len(table) else None
            assert not open_before[pos] or code in GTID_EVENTS, (path, pos)
            checked += 1
            k = next_boundary(table.codes, k + 1) if k < len(table) else None
    assert checked > 800


# -- every consumer on binlogs of generated statements -----------------------------------------------------------------


@dataclass
class Built:
    """A binlog built from planned transactions, and what each consumer must find in it."""

    data: bytes
    transactions: list[tuple[int, int]] = field(default_factory=list)  # (first event pos, end of last event)
    events: list[tuple[int, int, int | None]] = field(default_factory=list)  # (pos, end, its transaction's start)
    cases: list[tuple[int, Case]] = field(default_factory=list)  # (pos, case) of every generated statement


class _Writer:
    """Events of a MariaDB 10.11 binlog (the example's format description: CRC32 checksums)."""

    def __init__(self) -> None:
        with open(EXAMPLE, "rb") as f:
            head = f.read(4 + 252)
        self.data = bytearray(head)
        self.built = Built(b"")
        self._seq = 0

    def event(self, code: int, body: bytes, trx: int | None) -> int:
        pos = len(self.data)
        size = 19 + len(body) + 4
        raw = struct.pack("<IBIIIH", 1_800_000_000, code, 1, size, pos + size, 0) + body
        self.data += raw + struct.pack("<I", crc32(raw))
        self.built.events.append((pos, pos + size, trx if trx is not None else pos))
        return pos

    def gtid(self, standalone: bool, trx: int | None) -> int:
        self._seq += 1
        return self.event(E.GTID_EVENT, struct.pack("<QIB", self._seq, 0, 0x1 if standalone else 0x4) + bytes(6), trx)

    def query(self, text: str, mode: int, trx: int | None) -> int:
        status = struct.pack("<BQ", 1, mode) + struct.pack("<BHHH", 4, 45, 45, 45)  # SQL_MODE, CHARSET utf8mb4
        db = DB.encode()
        body = struct.pack("<IIBHH", 7, 0, len(db), 0, len(status)) + status + db + b"\0" + text.encode()
        return self.event(E.QUERY_EVENT, body, trx)

    def xid(self, trx: int | None) -> int:
        return self.event(E.XID_EVENT, struct.pack("<Q", 42), trx)


_MODES = st.sampled_from([0, MODE_ANSI_QUOTES, MODE_NO_BACKSLASH_ESCAPES])


@st.composite
def _begin(draw: st.DrawFn, mode: int) -> str:
    words = draw(
        st.sampled_from(
            [["BEGIN"], ["BEGIN", "WORK"], ["START", "TRANSACTION"], ["START", "TRANSACTION", "READ", "WRITE"]]
        )
    )
    return draw(gap(required=False)) + draw(gap(required=True)).join(draw(kw(w)) for w in words)


@st.composite
def _end(draw: st.DrawFn, mode: int) -> tuple[str, bool] | None:
    """A COMMIT/ROLLBACK statement (text, rolled back) or ``None`` for an XID event."""
    which = draw(st.sampled_from(["xid", "COMMIT", "ROLLBACK"]))
    if which == "xid":
        return None
    words = [which] + (["WORK"] if draw(st.booleans()) else [])
    return draw(gap(required=False)) + draw(gap(required=True)).join(draw(kw(w)) for w in words), which == "ROLLBACK"


@st.composite
def binlog(draw: st.DrawFn) -> Built:
    """Transactions of generated statements, with GTID events or without (MySQL 5.x style)."""
    w = _Writer()
    gtids = draw(st.booleans())
    for _ in range(draw(st.integers(1, 6))):
        mode = draw(_MODES)
        kind = draw(st.sampled_from(["explicit", "alone", "alone"]))
        start = len(w.data)
        if kind == "explicit":
            if gtids:
                w.gtid(False, start)
            else:
                w.query(draw(_begin(mode)), mode, start)
            for _ in range(draw(st.integers(0, 3))):
                c = draw(st.one_of(other_case(mode), control_case(mode)))
                if c.control is not None and c.control.kind not in ("savepoint", "rollback_to", "release", "xa_end"):
                    continue  # a statement that would end or open a transaction is a case of its own
                w.built.cases.append((w.query(c.text, mode, start), c))
            end = draw(_end(mode))
            if end is None:
                w.xid(start)
            else:
                w.query(end[0], mode, start)
        else:
            c = draw(st.one_of(ddl_case(mode), control_case(mode).filter(_alone)))
            if gtids:
                w.gtid(True, start)
            w.built.cases.append((w.query(c.text, mode, start), c))
        w.built.transactions.append((start, len(w.data)))
    w.built.data = bytes(w.data)
    return w.built


def _alone(c: Case) -> bool:
    """Control statements logged as a group of their own: the outcome of an XA transaction prepared earlier."""
    return c.control is not None and c.control.kind in ("xa_commit", "xa_rollback")


def _seeded(b: Built) -> SchemaTracker:
    names = {t for _, c in b.cases for t in (*c.drops, *c.creates, *(x for p in c.renames for x in p)) if t[1]}
    cols = tuple(TrackedColumn(n, "int") for n in ("id", "v w", "note"))
    return SchemaTracker({t: TableSchema(t[0], t[1], cols) for t in names})


def _split(path: Path) -> Split:
    return Split(BinlogFile(str(path), path.name, 1, path.stat().st_size), 4, None)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(b=binlog())
def test_every_consumer_reads_the_same_transactions_and_statements(b: Built, tmp_path: Path) -> None:
    path = tmp_path / "gen-bin.000001"
    path.write_bytes(b.data)
    sizes = [end - start for start, end in b.transactions]

    # stats: the transactions as built
    assert collect([str(path)]).transactions == sizes

    # the ingest's task decoder: each event's transaction, and the tables statements empty
    records = list(decode_split(_split(path)))
    trx_of = {r.pos: r.trx_pos for r in records if isinstance(r, EventRecord) and r.pos >= b.events[0][0]}
    assert trx_of == {pos: trx for pos, _, trx in b.events}
    truncates = [(t.pos, (t.database, t.table)) for t in records if isinstance(t, Truncate)]
    assert truncates == [(pos, t) for pos, c in b.cases for t in c.emptied]

    # the ingest's driver scan: renames and XA outcomes
    found = scan_statements([_split(path)], _seeded(b), ReadSpec())
    assert [(s.pos, s.pairs) for s in found if s.kind == "rename"] == [
        (pos, c.renames) for pos, c in b.cases if c.renames
    ]
    want_xa = [
        (pos, c.control.xid, c.control.kind == "xa_rollback")
        for pos, c in b.cases
        if c.control is not None and _alone(c) and not c.control.one_phase and c.control.xid is not None
    ]
    assert [(s.pos, s.xid, s.rolled_back) for s in found if s.kind == "xa"] == want_xa

    # the schema tracker, following the DDL of the QUERY events as the decoder reads them (prefilter, sql_mode from
    # the status variables), ends where the statements read one by one leave it
    # (and in the session's collation_server the event logs: a column's charset where no clause names one)
    tracker, expected = _seeded(b), _seeded(b)
    queries = {ev.header.pos: ev for ev in read_events(path, schema=tracker) if isinstance(ev, QueryEvent)}
    for pos, c in b.cases:
        expected.execute(c.text, DB, c.sql_mode, server=server_collation(queries[pos]) if pos in queries else None)
    assert tracker.tables == expected.tables

    # recovery: a damaged event inside a transaction drops the rest of that transaction, no more
    for start, end in b.transactions:
        inside = [pos for pos, e, trx in b.events if trx == start and pos != start and e != end]
        if not inside:
            continue  # (the damaged end of a transaction: what follows may belong to it, or not)
        pos = inside[0]
        data = bytearray(b.data)
        data[pos + 19] ^= 0x55  # the body: the checksum no longer matches
        damaged = tmp_path / "damaged-bin.000001"
        damaged.write_bytes(bytes(data))
        skips: list[Skipped] = []
        kept = [
            ev.header.pos for ev in read_events_recovering(damaged, on_error="skip-transaction", on_skip=skips.append)
        ]
        assert [(s.start, s.end, s.transaction_start) for s in skips] == [(pos, end, start)]
        assert kept == [p for p, _, _ in _all_events(b) if not pos <= p < end]
        break


def test_the_sql_mode_of_each_statement_reaches_every_reader(tmp_path: Path) -> None:
    """ANSI_QUOTES and NO_BACKSLASH_ESCAPES come from each QUERY event's status variables: a backslash is part of
    a double-quoted name under ANSI_QUOTES, and of a string under NO_BACKSLASH_ESCAPES."""
    w = _Writer()
    ansi, nobs = MODE_ANSI_QUOTES, MODE_NO_BACKSLASH_ESCAPES
    drop = w.query('DROP TABLE "a\\b", `c\\d`', ansi, None)
    rename = w.query('RENAME TABLE "x\\y" TO "z"', ansi, None)
    xa = w.query("XA ROLLBACK 'p\\', 'q\\''r'", nobs, None)
    create = w.query('CREATE TABLE "n\\m" (id INT PRIMARY KEY)', ansi, None)
    path = tmp_path / "modes-bin.000001"
    path.write_bytes(bytes(w.data))
    truncates = [(t.pos, t.database, t.table) for t in decode_split(_split(path)) if isinstance(t, Truncate)]
    assert truncates == [(drop, DB, "a\\b"), (drop, DB, "c\\d")]
    found = scan_statements([_split(path)], SchemaTracker(), ReadSpec())
    assert [(s.pos, s.kind, s.pairs) for s in found if s.kind == "rename"] == [
        (rename, "rename", (((DB, "x\\y"), (DB, "z")),))
    ]
    assert [(s.pos, s.xid, s.rolled_back) for s in found if s.kind == "xa"] == [(xa, "X'705c',X'715c2772',1", True)]
    tracker = SchemaTracker()
    list(read_events(path, schema=tracker))
    assert list(tracker.tables) == [(DB, "n\\m")]
    assert [s.pos for s in found if s.kind == "ddl"] == [create]


def _all_events(b: Built) -> Iterator[tuple[int, int, int | None]]:
    """Every event of the built file, header events included."""
    yield from ((p, p, None) for p in (4, 256) if p < b.events[0][0])
    yield from b.events


def test_between_events_are_between() -> None:
    assert not BETWEEN_EVENTS & GTID_EVENTS
