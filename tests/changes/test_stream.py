"""The change stream on the MariaDB corpus: whole transactions, resume points that resume exactly, filters, names
from the DDL for MINIMAL table maps, trigger-made rows and two-phase ALTERs."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from binlake.changes import ChangeFilter, ChangeStream, FileSource, RowsChange, Statement, Transaction
from binlake.changes.filters import parse_gtids
from binlake.reader import read_events

pytestmark = pytest.mark.corpus


def _binlogs(corpus: Path) -> list[Path]:
    return sorted((corpus / "mariadb" / "binlogs").glob("corpus-bin.0000*"))[:-1]  # .000022 is encrypted


def _read(paths: list[Path], f: ChangeFilter | None = None, **kw: int) -> tuple[list[Transaction], ChangeStream]:
    stream = ChangeStream(FileSource([str(p) for p in paths], **kw), f)  # type: ignore[arg-type]
    return list(stream), stream


def test_every_transaction_is_whole_and_resumes_where_it_ends(corpus_dir: Path) -> None:
    """Each transaction's resume point is its end (the next one starts there), with the GTID state that includes it;
    the row changes are those of the file's rows events, every one."""
    total = 0
    for path in _binlogs(corpus_dir):
        trxs, stream = _read([path])
        assert stream.dropped == 0, path.name
        for a, b in itertools.pairwise(trxs):
            assert a.resume is not None and a.resume.position == a.end <= b.start, path.name
        for t in trxs:
            assert t.resume is not None and t.resume.file == path.name
            if t.gtid is not None:
                assert t.resume.gtid is not None and t.gtid in t.resume.gtid.split(",")
        rows = sum(len(i.rows()) for t in trxs for i in t.items if isinstance(i, RowsChange))
        expected = sum(len(ev.rows()) for ev in read_events(path) if hasattr(ev, "rows_data"))
        assert rows == expected, path.name
        total += rows
    assert total > 10_000


def test_reading_from_a_resume_point_goes_on_with_the_next_transaction(corpus_dir: Path) -> None:
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"
    trxs, _ = _read([path])
    assert len(trxs) > 20
    for k in range(0, len(trxs) - 1, 7):
        point = trxs[k].resume
        assert point is not None
        rest, stream = _read([path], start=point.position)
        assert [(t.gtid, t.start) for t in rest] == [(t.gtid, t.start) for t in trxs[k + 1 :]]
        assert stream.dropped == 0


def test_positions_inside_a_transaction_leave_it_out(corpus_dir: Path) -> None:
    """A start or stop position inside a transaction: that transaction is not delivered (it is not whole)."""
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"
    trxs, _ = _read([path])
    with_rows = [k for k, t in enumerate(trxs) if any(isinstance(i, RowsChange) for i in t.items)]
    first, last = with_rows[2], with_rows[8]

    def rows_pos(k: int) -> int:
        return next(i.pos for i in trxs[k].items if isinstance(i, RowsChange))

    inside, stream = _read([path], start=rows_pos(first), stop=rows_pos(last))
    assert [t.gtid for t in inside] == [t.gtid for t in trxs[first + 1 : last]]
    assert stream.dropped == 1  # the one the stop cuts; the one the start is inside never began
    exact, stream = _read([path], start=trxs[first].start, stop=trxs[last].end)
    assert [t.gtid for t in exact] == [t.gtid for t in trxs[first : last + 1]] and stream.dropped == 0


def test_gtid_datetime_database_and_operation_filters(corpus_dir: Path) -> None:
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"
    trxs, _ = _read([path])
    gtids = [t.gtid for t in trxs]
    lo, hi = gtids[10], gtids[20]
    assert lo is not None and hi is not None
    f = ChangeFilter(include_gtids=parse_gtids(hi), exclude_gtids=parse_gtids(lo))
    assert [t.gtid for t in _read([path], f)[0]] == gtids[11:21]
    # delivered transactions are the same; only the changes in them are filtered
    only = _read([path], ChangeFilter(databases=("nope",)))[0]
    assert [t.gtid for t in only] == gtids
    assert all(isinstance(i, Statement) and i.control is not None for t in only for i in t.items)
    inserts = _read([path], ChangeFilter(ops=frozenset({"insert"}), tables=("acc*",)))[0]
    kinds = {(i.kind, i.table.name) for t in inserts for i in t.items if isinstance(i, RowsChange)}
    assert kinds == {("insert", "accounts"), ("insert", "accounts_copy"), ("insert", "accounts_ctas")}
    assert not any(isinstance(i, Statement) and i.control is None for t in inserts for i in t.items)
    after = trxs[30].timestamp
    late = _read([path], ChangeFilter(start_datetime=after))[0]
    assert late and all(t.timestamp >= after for t in late) and len(late) < len(trxs)
    early = _read([path], ChangeFilter(stop_datetime=after))[0]
    assert early == [] or all(t.timestamp < after for t in early)


def test_rows_a_trigger_made_are_marked(corpus_dir: Path) -> None:
    """MariaDB marks the table maps of tables with triggers: in those statements the other tables' rows are the
    triggers'."""
    trxs, _ = _read([corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"])
    made = {(i.table.name, i.by_trigger) for t in trxs for i in t.items if isinstance(i, RowsChange)}
    assert ("trig_audit", True) in made and ("parent", False) in made
    assert ("trig_audit", False) not in made and ("child", True) not in made


def test_a_two_phase_alter_is_one_statement(corpus_dir: Path) -> None:
    trxs, _ = _read([corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000006"])
    alters = [i for t in trxs for i in t.items if isinstance(i, Statement) and "two_phase" in i.event.query]
    assert len(alters) == 1  # the COMMIT ALTER; the START ALTER changed nothing yet


def test_minimal_table_maps_are_named_from_the_ddl_read_before(corpus_dir: Path) -> None:
    paths = _binlogs(corpus_dir)
    alone, _ = _read([p for p in paths if p.name.endswith("12")])
    together, _ = _read(paths)
    t_int_alone = next(i for t in alone for i in t.items if isinstance(i, RowsChange) and i.table.name == "t_int")
    assert t_int_alone.table.names[:2] == ("col_1", "col_2")
    minimal = [
        i
        for t in together
        if t.file.endswith("12")
        for i in t.items
        if isinstance(i, RowsChange) and i.table.name == "t_int"
    ]
    assert minimal and minimal[0].table.names[:3] == ("id", "ti", "tiu") and minimal[0].table.key == (0,)
    # the names come with the signedness the DDL declares (the map logs none): BIGINT UNSIGNED reads unsigned
    assert all(v is None or v >= 0 for i in minimal for _, a in i.rows() if a is not None for v in a[10:11])
