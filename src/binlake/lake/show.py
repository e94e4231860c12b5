"""``binlake tables LAKE [TABLE] [--limit N] [--batch N]`` (:mod:`binlake.cli.tables`): what a lake written by
``binlake ingest`` holds, without Spark (``LAKE``: a folder or an object-store URI, :mod:`binlake.storage`).

Reads through each Delta table's log with the ``deltalake`` package (never the folder's Parquet files, which may
include files an overwrite replaced): row counts come from the log's statistics, so listing a large lake reads no
data.  Source tables are listed as the binlog named them (``db.table``, decoded from the lake's escaped folder
names), each with its ``changes`` and ``current`` table, then the lake's own ``_events``, ``_schema_history`` and
``_skips``.

With ``TABLE`` (``db.table`` for its current state, or its change table when it has none; ``db.table/changes``,
``db.table/current``, ``_events``, ...) the first ``--limit`` rows are printed as a text table.

Every table is read as of one batch (:meth:`binlake.lake.lake.Lake.snapshot`): the last complete one, or the one
``--batch N`` names (time travel, within the retention of the tables' logs), never one table at one batch and
another at the next while an ingest commits.

Example::

    $ binlake tables lake
    lake: batch 3, 1 source tables, 3 Delta tables
    TABLE                  KIND       ROWS  COLUMNS  VERSION
    corpus_dml.accounts    changes      41       16        2
    corpus_dml.accounts    current      12        8        2
    _events                events     1402       14        2
    $ binlake tables lake corpus_dml.accounts --limit 5
"""

from __future__ import annotations

from typing import Any, TextIO

from binlake.lake.lake import KINDS, Lake, LakeSnapshot, LakeTable

__all__ = ["format_rows", "list_tables", "show_table"]


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


def show_table(lake: Lake, table: LakeTable, limit: int, out: TextIO) -> None:
    """Print the first ``limit`` rows of ``table`` (of its :attr:`~binlake.lake.lake.LakeTable.version`; in ``_seq``
    order when it has one)."""
    data = lake.read(table.location, table.version)
    assert data is not None
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


def list_tables(lake: Lake, at: LakeSnapshot, out: TextIO) -> None:
    """Print the tables of ``lake`` as of ``at``: a line of counts, then each table's kind, rows, columns and the
    Delta version they are of (what another Delta reader reads the table as of that batch at)."""
    tables = lake.tables(at)
    sources = len({t.name for t in tables if t.kind in KINDS})
    batch = "" if at.batch is None else f"batch {at.batch}, "
    out.write(f"{lake.root}: {batch}{sources} source tables, {len(tables)} Delta tables\n")
    rows: list[list[Any]] = [[t.name, t.kind, t.rows, t.columns, t.version] for t in tables]
    for text in format_rows(["TABLE", "KIND", "ROWS", "COLUMNS", "VERSION"], rows, {2, 3, 4}):
        out.write(text + "\n")
