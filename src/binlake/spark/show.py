"""``binlake tables LAKE [TABLE] [--limit N]``: what a lake written by ``binlake ingest`` holds, without Spark.

Reads through each Delta table's log with the ``deltalake`` package (never the folder's Parquet files, which may
include files an overwrite replaced): row counts come from the log's statistics, so listing a large lake reads no
data.  Source tables are listed as the binlog named them (``db.table``, decoded from the lake's escaped folder
names), each with its ``changes`` and ``current`` table, then the lake's own ``_events``, ``_schema_history`` and
``_skips``.

With ``TABLE`` (``db.table`` for its current state, or its change table when it has none; ``db.table/changes``,
``db.table/current``, ``_events``, ...) the first ``--limit`` rows are printed as a text table.

Example::

    $ binlake tables lake
    TABLE                  KIND       ROWS  COLUMNS
    corpus_dml.accounts    changes      41       16
    corpus_dml.accounts    current      12        8
    _events                events     1402       14
    $ binlake tables lake corpus_dml.accounts --limit 5
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from binlake.spark.names import decode_name

__all__ = ["LakeTable", "add_tables_arguments", "format_rows", "lake_tables", "tables_main"]

_OWN = {"_events": "events", "_schema_history": "schema_history", "_skips": "skips"}
_KINDS = ("changes", "current")


@dataclass(frozen=True, slots=True)
class LakeTable:
    """One Delta table of a lake: ``name`` as the source named it (``db.table``, or the lake's ``_events`` ...),
    ``kind`` (``changes``, ``current``, ``events``, ``schema_history``, ``skips``), its folder, rows and columns."""

    name: str
    kind: str
    uri: str
    rows: int
    columns: int


def _is_delta(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "_delta_log"))


def _describe(name: str, kind: str, uri: str) -> LakeTable:
    import pyarrow as pa
    from deltalake import DeltaTable

    dt = DeltaTable(uri)
    adds = pa.table(dt.get_add_actions(flatten=True))
    rows = sum(n for n in adds["num_records"].to_pylist() if n is not None) if adds.num_rows else 0
    return LakeTable(name, kind, uri, rows, len(dt.schema().fields))


def _source_name(db_dir: str, table_dir: str) -> str:
    try:
        return f"{decode_name(db_dir)}.{decode_name(table_dir)}"
    except ValueError:
        return f"{db_dir}/{table_dir}"  # a shortened (hashed) name: the folder is all there is


def lake_tables(lake: str) -> list[LakeTable]:
    """Every Delta table of ``lake``: source tables by name (changes before current), then the lake's own."""
    if not os.path.isdir(lake):
        raise FileNotFoundError(f"no lake at {lake}")
    out: list[LakeTable] = []
    for db in sorted(os.listdir(lake)):
        db_path = os.path.join(lake, db)
        if db.startswith("_") or not os.path.isdir(db_path):
            continue
        for table in sorted(os.listdir(db_path)):
            for kind in _KINDS:
                uri = os.path.join(db_path, table, kind)
                if _is_delta(uri):
                    out.append(_describe(_source_name(db, table), kind, uri))
    out.sort(key=lambda t: (t.name, t.kind))
    for own, kind in _OWN.items():
        uri = os.path.join(lake, own)
        if _is_delta(uri):
            out.append(_describe(own, kind, uri))
    return out


def _find(tables: list[LakeTable], wanted: str) -> LakeTable | None:
    name, _, kind = wanted.partition("/")
    hits = [t for t in tables if t.name == name and (not kind or t.kind == kind)]
    hits.sort(key=lambda t: t.kind != "current")  # the current state first, when there is one
    return hits[0] if hits else None


def _cell(value: object, width: int = 32) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, bytes):
        text = "0x" + value.hex()
    elif isinstance(value, list):
        text = "[" + ", ".join(_cell(v, width) for v in value) + "]"
    else:
        text = str(value)
    text = text.replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= width else text[: width - 1] + "…"


def format_rows(header: list[str], rows: list[list[object]], right: set[int] | None = None) -> list[str]:
    """A small text table: a header, two spaces between columns, numbers right-aligned (``right``: column indexes).

    >>> print("\\n".join(format_rows(["A", "BB"], [["x", 1], ["yyy", 22]], right={1})))
    A    BB
    x     1
    yyy  22
    """
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    right = right or set()

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))]
        return "  ".join(parts).rstrip()

    return [line(header), *(line(r) for r in cells)]


def _numeric(value: object) -> bool:
    import datetime as dt
    from decimal import Decimal

    return isinstance(value, int | float | Decimal) and not isinstance(value, bool | dt.datetime)


def show_table(table: LakeTable, limit: int, out: TextIO) -> None:
    """Print the first ``limit`` rows of ``table`` (in ``_seq`` order when it has one)."""
    from deltalake import DeltaTable

    data = DeltaTable(table.uri).to_pyarrow_table()
    if "_seq" in data.column_names:
        data = data.sort_by([("_seq", "ascending")])
    shown = data.slice(0, limit)
    names = shown.column_names
    rows = [[r[n] for n in names] for r in shown.to_pylist()]
    right = {i for i, n in enumerate(names) if rows and any(_numeric(r[i]) for r in rows)}
    out.write(f"{table.name} ({table.kind}): {data.num_rows} rows, {len(names)} columns\n")
    for text in format_rows(names, rows, right):
        out.write(text + "\n")
    if data.num_rows > limit:
        out.write(f"... {data.num_rows - limit} more rows (--limit N)\n")


_LIMIT = 20  # rows shown of a table unless --limit says otherwise


def add_tables_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``tables`` command's arguments to ``parser``."""
    parser.add_argument("lake", metavar="LAKE", help="a lake folder written by binlake ingest")
    parser.add_argument(
        "table",
        nargs="?",
        metavar="TABLE",
        help="show the first rows of this table: db.table (its current state), db.table/changes, _events, ...",
    )
    parser.add_argument("--limit", type=int, metavar="N", help=f"rows to show with TABLE (default {_LIMIT})")


def tables_main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """List the tables of ``args.lake``, or show ``args.table``; 0 on success, 2 when there is nothing to show."""
    out = out or sys.stdout
    lake = os.path.abspath(args.lake)
    if args.limit is not None and not args.table:
        print("binlake tables: --limit N is the rows shown of a TABLE: give TABLE too", file=sys.stderr)
        return 2
    try:
        tables = lake_tables(lake)
    except FileNotFoundError as e:
        print(f"binlake tables: {e}", file=sys.stderr)
        return 2
    if args.table:
        found = _find(tables, args.table)
        if found is None:
            print(f"binlake tables: no table {args.table!r} in {lake} (run `binlake tables LAKE` to list them)",
                  file=sys.stderr)  # fmt: skip
            return 2
        show_table(found, max(0, _LIMIT if args.limit is None else args.limit), out)
        return 0
    sources = len({t.name for t in tables if t.kind in _KINDS})
    out.write(f"{lake}: {sources} source tables, {len(tables)} Delta tables\n")
    rows: list[list[Any]] = [[t.name, t.kind, t.rows, t.columns] for t in tables]
    for text in format_rows(["TABLE", "KIND", "ROWS", "COLUMNS"], rows, {2, 3}):
        out.write(text + "\n")
    return 0
