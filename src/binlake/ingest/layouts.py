"""How table maps land in the lake: the lake column names and types of every table-map layout (``resolve_layout``),
the maps of a batch as the driver's scan meets them (:class:`MapLog`, which describes their columns by
:mod:`binlake.columns`' rule), and the ``_schema_history`` table that keeps them across runs.

Example::

    maps = MapLog(tracker, known_layouts(lake))
    scan_statements(splits, tracker, read, maps)
    for row in maps.rows: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from binlake.coltypes import Column
from binlake.columns import ColumnCatalog, SchemaSource, borrowed, fits, named
from binlake.events.table_map import TableMapEvent
from binlake.ingest.arrow import lake_type, tablemap_rows
from binlake.ingest.extract import TableMapRecord, map_id
from binlake.lake.lake import Lake
from binlake.lake.names import table_dir
from binlake.lake.records import Split
from binlake.lake.tables import HISTORY_DIR, lake_name
from binlake.schema import SchemaTracker, TableSchema

__all__ = [
    "Known",
    "Layout",
    "MapLog",
    "history_row",
    "known_layouts",
    "resolve_layout",
]

Layout = list[tuple[str, pa.DataType]]  # per column of a table map: lake column name and type


def _type_tag(t: pa.DataType) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in str(t)).strip("_")


def resolve_layout(cols: Layout, schema: list[pa.Field]) -> Layout:
    """Lake names of a table map's columns against the table's columns so far (``schema`` grows in place): same
    name and type -> that column; a new name -> a new column; a known name with another type -> ``name__type``."""
    have = {f.name: f.type for f in schema}
    out: Layout = []
    for n, t in cols:
        name = lake_name(n)
        if name in have and have[name] != t:
            name = f"{name}__{_type_tag(t)}"
        if name not in have:
            schema.append(pa.field(name, t))
            have[name] = t
        out.append((name, t))
    return out


@dataclass
class Known:
    """What the lake's ``_schema_history`` says: the layout of every map id, the latest primary key of every
    table, and the columns of every map id and of each table's last named map (by ``(database, table)``), as
    they landed."""

    layouts: dict[str, Layout] = field(default_factory=dict)
    pk: dict[str, list[str]] = field(default_factory=dict)
    maps: dict[str, tuple[Column, ...]] = field(default_factory=dict)
    tables: dict[tuple[str, str], tuple[Column, ...]] = field(default_factory=dict)


def _column(info: dict[str, Any]) -> Column:
    """A column as the history keeps it (:func:`~binlake.ingest.extract.column_info`), back as a :class:`Column`
    (its facts and the sizes :func:`binlake.columns.fits` compares; no metadata bytes)."""
    enum_values, set_values = (tuple(info[k]) if info[k] is not None else None for k in ("enum_values", "set_values"))
    return Column(
        index=info["index"],
        type_code=info["type_code"],
        meta=0,
        nullable=info["nullable"],
        real_type_code=info["type_code"],
        length=info["length"],
        precision=info["precision"],
        scale=info["scale"],
        fsp=info["fsp"],
        bits=info["bits"],
        name=info["name"],
        unsigned=info["unsigned"],
        charset=info["charset"],
        geometry_type=info["geometry_type"],
        pk_position=info["pk_position"],
        visible=info["visible"],
        vector_dimension=info["vector_dimension"],
        enum_values=enum_values,
        set_values=set_values,
    )


def known_layouts(lake: Lake) -> Known:
    """What the lake's ``_schema_history`` knows (:class:`Known`), read once per batch."""
    history = lake.read(lake.own(HISTORY_DIR))
    known = Known()
    if history is None:
        return known
    for row in history.sort_by([("batch", "ascending"), ("first_pos", "ascending")]).to_pylist():
        known.layouts[row["map_id"]] = [
            (n, pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(t))).field(0).type)
            for n, t in zip(row["lake_columns"], row["lake_types"], strict=True)
        ]
        index = {c["name"]: i for i, c in enumerate(row["columns"])}
        key = table_dir(row["database"], row["table"])
        known.pk[key] = [row["lake_columns"][index[c]] for c in row["primary_key"] if c in index]
        columns = tuple(_column(c) for c in row["columns"])
        known.maps[row["map_id"]] = columns
        if any(c["name"] != f"col_{c['index'] + 1}" for c in row["columns"]):
            known.tables[(row["database"], row["table"])] = columns
    return known


class MapLog:
    """The table maps of a batch as the driver's scan meets them (:func:`.statements.scan_statements`), in binlog
    order: one row (the ``tablemaps`` view's, with the lake layout, the columns' names in the table (``names``: a
    NO_LOG map of a layout landed before, with a column renamed since, keeps its landed names in ``lake`` but has
    the DDL's here) and key) each time a table's layout or names differ from the one before, or a statement gave
    the table a new definition since (a RENAME to its name, an ALTER, even one that left the same layout: the
    current state reads the table's rows after such a statement by the maps logged after it,
    :class:`~binlake.lake.current.MapLayout`), so the first occurrence of every layout and the last layout of
    every table are there.

    Each map's columns are described by :class:`~binlake.columns.ColumnCatalog` (the map's own facts, an earlier
    FULL map of the table in this batch or in the lake's history, the DDL that ``tracker``, the scan's own,
    follows, the server's definitions ``server``); a layout the lake landed before keeps the columns it landed
    with (its lake columns are fixed), and the first answer for a map id holds for the whole batch.
    ``enriched`` holds the columns that differ from what the map logs by map id, for the tasks to decode their
    rows with."""

    def __init__(
        self, tracker: SchemaTracker | None = None, known: Known | None = None, server: SchemaSource | None = None
    ) -> None:
        self.rows: list[dict[str, Any]] = []
        self.known = known or Known()
        self.enriched: dict[str, tuple[Column, ...]] = {}
        self._catalog = ColumnCatalog(tracker, server, self.known.tables)
        self._tracker = tracker
        # table -> its last map's id, names and the table's definition then (:meth:`_definition`)
        self._last: dict[str, tuple[str, tuple[str, ...] | None, TableSchema | int]] = {}
        # id -> (table map, table, map id, the tracker's generation, names by the DDL, the table's definition)
        self._seen: dict[int, tuple[TableMapEvent, str, str, int, tuple[str, ...] | None, TableSchema | int]] = {}
        self._columns: dict[str, tuple[Column, ...]] = {}  # map id -> its columns as described

    def __call__(self, split: Split, pos: int, tm: TableMapEvent) -> None:
        generation = self._tracker.generation if self._tracker is not None else 0
        seen = self._seen.get(id(tm))  # the scan gives identical maps as one object
        if seen is None or seen[0] is not tm or seen[3] != generation:
            if len(self._seen) >= 1024:
                self._seen.clear()
            key = table_dir(tm.schema, tm.table)
            seen = self._seen[id(tm)] = (tm, key, map_id(tm), generation, self._names(tm), self._definition(tm))
        _, key, mid, _, names, definition = seen
        last = self._last.get(key)
        if last is not None and last[:2] == (mid, names) and _same_definition(last[2], definition):
            return
        self._last[key] = (mid, names, definition)
        cols = self._described(mid, tm)
        tm = tm if cols is tm.columns else replace(tm, columns=cols)
        row = tablemap_rows(split.file, [TableMapRecord(tm, mid, pos, pos, 1)])[0]
        row["lake"] = [(n, lake_type(c)) for n, c in zip(tm.column_names, tm.columns, strict=True)]
        row["names"] = [lake_name(n) for n in (names or tm.column_names)]
        row["primary_key_index"] = list(tm.primary_key)
        self.rows.append(row)

    def _names(self, tm: TableMapEvent) -> tuple[str, ...] | None:
        """The map's column names as the DDL followed up to it says them, where the map logs none and the DDL
        agrees with it (``None``: the described names hold).  A layout the lake landed keeps the names it landed
        with in the change table, but a column renamed since has its new name in the current table."""
        if self._tracker is None or named(tm):
            return None
        ts = self._tracker.table(tm.schema, tm.table)
        return ts.column_names if ts is not None and ts.agrees_with(tm.columns) else None

    def _definition(self, tm: TableMapEvent) -> TableSchema | int:
        """The table's definition as the tracker holds it where the scan meets ``tm`` (a RENAME or an ALTER puts a
        new one); of a table the tracker does not know, the tracker's generation (any statement may have moved it)."""
        if self._tracker is None:
            return 0
        ts = self._tracker.table(tm.schema, tm.table)
        return ts if ts is not None else self._tracker.generation

    def _described(self, mid: str, tm: TableMapEvent) -> tuple[Column, ...]:
        """``tm``'s columns, described once per map id (a layout the lake has landed: as it landed)."""
        cols = self._columns.get(mid)
        if cols is None:
            landed = self.known.maps.get(mid)
            if landed is not None and fits(tm.columns, landed):
                cols = borrowed(tm.columns, landed)
            else:
                cols = self._catalog.columns(tm)
            self._columns[mid] = cols
            if cols != tm.columns:
                self.enriched[mid] = cols
        return cols


def _same_definition(a: TableSchema | int, b: TableSchema | int) -> bool:
    """The same definition of a table (:meth:`MapLog._definition`): the very object, as a table renamed away and back
    has a definition equal to the one before but is a new table to the rows after it."""
    return a is b if isinstance(a, TableSchema) else a == b


def history_row(row: dict[str, Any], layout: Layout, batch: int) -> dict[str, Any]:
    return {
        "database": row["database"],
        "table": row["table"],
        "map_id": row["map_id"],
        "table_id": row["table_id"],
        "first_file": row["file"],
        "first_pos": row["first_pos"],
        "primary_key": row["primary_key"],
        "columns": row["columns"],
        "lake_columns": [n for n, _ in layout],
        "lake_types": [pa.schema([pa.field("t", t)]).serialize().to_pybytes().hex() for _, t in layout],
        "batch": batch,
    }
