"""``binlake stats`` on the bundled example binlog, whose contents ``examples/README.md`` documents."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from binlake.cli import main
from binlake.cli.stats import add_arguments as add_stats_arguments
from binlake.cli.stats import run as stats_main
from binlake.coltypes import Column, ColumnType
from binlake.events.table_map import TableMapEvent
from binlake.reader import read_events, walk_headers
from binlake.render.stats import BinlogStats, collect

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "example-bin.000001"


def test_rows_per_table_and_operation() -> None:
    report = collect([str(EXAMPLE)]).as_dict()
    tables = report["tables"]
    assert isinstance(tables, dict)
    rows = {t: {op: c["rows"] for op, c in ops.items()} for t, ops in tables.items()}
    assert rows == {
        "shop.customers": {"insert": 121, "update": 122, "delete": 2},
        "shop.orders": {"insert": 302, "update": 309, "delete": 10},
    }


def test_events_and_transactions_add_up() -> None:
    stats = collect([str(EXAMPLE)])
    headers = list(walk_headers(EXAMPLE))
    report = stats.as_dict()
    events = report["events"]
    assert isinstance(events, dict)
    assert sum(e["count"] for e in events.values()) == len(headers)
    assert sum(e["bytes"] for e in events.values()) == EXAMPLE.stat().st_size - 4
    gtids = sum(1 for h in headers if h.type_code == 162)
    trx = report["transactions"]
    assert isinstance(trx, dict)
    assert trx["count"] == gtids == len(stats.transactions)
    assert trx["min_bytes"] <= trx["median_bytes"] <= trx["max_bytes"]
    # every transaction is a run of whole events: its size is a sum of consecutive event sizes
    sizes = [h.size for h in headers]
    assert all(
        any(sum(sizes[i:j]) == t for i in range(len(sizes)) for j in range(i + 1, min(i + 80, len(sizes)) + 1))
        for t in set(stats.transactions)
    )
    times = report["time"]
    assert isinstance(times, dict)
    assert times["seconds"] == max(h.timestamp for h in headers) - min(h.timestamp for h in headers)


def test_cli_json_and_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_stats_arguments(parser)
    assert stats_main(parser.parse_args([str(EXAMPLE), "--json"])) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tables"]["shop.orders"]["insert"]["rows"] == 302
    assert stats_main(parser.parse_args([str(EXAMPLE)])) == 0
    assert "shop.customers" in capsys.readouterr().out
    # a file cut in the middle of an event does not decode whole: exit 2, the error names the position
    cut = tmp_path / "cut.000001"
    cut.write_bytes(EXAMPLE.read_bytes()[:5000])
    assert main(["stats", str(cut)]) == 2
    assert capsys.readouterr().err == (
        f"binlake stats: {cut}: at 1894: the input ends inside a 5558-byte event (3106 bytes present) (--on-error "
        "skip-event or skip-transaction reads on past it)\n"
    )


def test_rows_are_decoded_typed_only_where_the_conversion_checks_something() -> None:
    """customers (numbers, strings, a date) decode raw; orders has an ENUM whose member names the typed
    conversion checks the stored index against, so it decodes typed (and a JSON, GEOMETRY, ... column would too)."""
    stats = BinlogStats()
    layouts = {ev.table: ev.columns for ev in read_events(EXAMPLE) if isinstance(ev, TableMapEvent)}
    assert stats._needs_typed(layouts["customers"]) is False
    assert stats._needs_typed(layouts["orders"]) is True
    json_col = Column.build(0, ColumnType.JSON, b"\x04")
    assert stats._needs_typed((*layouts["customers"], json_col)) is True
    unnamed_enum = Column.build(0, ColumnType.STRING, bytes([ColumnType.ENUM, 1]))  # no names logged: no check
    assert stats._needs_typed((unnamed_enum,)) is False
