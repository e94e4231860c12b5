"""The filters ``dump``, ``changes`` and ``tail`` share: globs, operations, GTID sets in both servers' forms, and
their command line."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.changes.filters import OPS, ChangeFilter, parse_gtids
from binlake.cli.filters import add_filter_arguments, filter_from_args
from binlake.errors import ReplicationError
from binlake.events.gtid import MariaGtid

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def _parse(*argv: str) -> ChangeFilter:
    parser = argparse.ArgumentParser()
    add_filter_arguments(parser)
    return filter_from_args(parser.parse_args(list(argv)))


def test_globs_select_databases_and_tables() -> None:
    f = ChangeFilter(databases=("shop*", "crm"), tables=("order?", "crm.contacts"))
    assert f.wants_table("shop_eu", "orders")
    assert f.wants_table("crm", "contacts")
    assert not f.wants_table("shop", "contacts")  # a dotted glob matches db.table only
    assert not f.wants_table("billing", "orders")
    assert f.wants_database("shop") and not f.wants_database("Shop")  # names are case-sensitive
    everything = ChangeFilter()
    assert everything.wants_table("any", "thing") and everything.wants_database("")


def test_ops() -> None:
    f = _parse("--ops", "insert, delete")
    assert f.wants_op("insert") and f.wants_op("delete")
    assert not f.wants_op("update") and not f.wants_op("statement")
    assert _parse().ops == frozenset(OPS)
    with pytest.raises(SystemExit):
        _parse("--ops", "insert,truncate")
    with pytest.raises(ValueError, match="unknown operations"):
        ChangeFilter(ops=frozenset({"merge"}))


def test_mariadb_gtid_sets_are_positions_per_domain() -> None:
    f = ChangeFilter(include_gtids=parse_gtids("0-1-50,2-9-7"), exclude_gtids=parse_gtids("0-1-19"))
    assert [f.wants_gtid(MariaGtid(0, 5, n)) for n in (1, 19, 20, 50, 51)] == [False, False, True, True, False]
    assert f.wants_gtid(MariaGtid(2, 1, 7)) and not f.wants_gtid(MariaGtid(2, 1, 8))
    assert not f.wants_gtid(MariaGtid(1, 1, 1))  # a domain the include set does not name
    assert not f.wants_gtid(None)  # with --include-gtids, a transaction without GTID is left out
    assert ChangeFilter(exclude_gtids=parse_gtids("0-1-3")).wants_gtid(None)


def test_mysql_gtid_sets() -> None:
    f = ChangeFilter(include_gtids=parse_gtids(f"{UUID.upper()}:1-10:20"), exclude_gtids=parse_gtids(f"{UUID}:5"))
    assert [f.wants_gtid((UUID, None, n)) for n in (1, 5, 10, 11, 20)] == [True, False, True, False, True]
    assert not f.wants_gtid((UUID, "tag", 1))  # a tagged GTID is another source
    assert not f.wants_gtid(MariaGtid(0, 1, 1))  # the other server's form is never in a MySQL set


@given(st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 2**32 - 1), st.integers(1, 2**63)), max_size=5))
def test_mariadb_positions_parse_back(gtids: list[tuple[int, int, int]]) -> None:
    by_domain = {d: (d, s, n) for d, s, n in gtids}
    text = ",".join(f"{d}-{s}-{n}" for d, s, n in by_domain.values())
    if not text:
        return
    sel = parse_gtids(text)
    for d, s, n in by_domain.values():
        assert MariaGtid(d, s + 1, n) in sel and MariaGtid(d, s, n + 1) not in sel


def test_bad_gtid_sets_are_clear_errors() -> None:
    with pytest.raises(ReplicationError):
        parse_gtids("0-1-5,0-2-9")  # two positions for one domain
    with pytest.raises(ReplicationError):
        parse_gtids("not-a-gtid")
    with pytest.raises(SystemExit):
        _parse("--include-gtids", "xyz")


def test_command_line() -> None:
    f = _parse(
        "-d", "shop", "--database", "crm*", "--table", "orders", "--start-position", "4", "--stop-position", "99",
        "--include-gtids", "0-1-9", "--start-datetime", "2024-01-02 03:04:05",
    )  # fmt: skip
    assert f.databases == ("shop", "crm*") and f.tables == ("orders",)
    assert (f.start_position, f.stop_position) == (4, 99)
    assert f.include_gtids is not None and f.include_gtids.text == "0-1-9" and f.selects_gtids
    assert f.start_datetime is not None and f.stop_datetime is None
    with pytest.raises(SystemExit):
        _parse("--start-datetime", "yesterday")
