"""How table maps land in the lake: the lake column names and types of every table-map layout (``resolve_layout``),
the maps of a batch as the driver's scan meets them (:class:`MapLog`, which also names maps that log no names),
and the ``_schema_history`` table that keeps them across runs.

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
from binlake.events.table_map import TableMapEvent
from binlake.lake.lake import Lake
from binlake.lake.names import table_dir
from binlake.lake.records import Split
from binlake.lake.tables import HISTORY_DIR, META_NAMES
from binlake.schema import SchemaTracker
from binlake.spark.arrow import COLUMN, lake_type, tablemap_rows
from binlake.spark.enrich import Namer, borrow, named
from binlake.spark.extract import TableMapRecord, map_id

__all__ = [
    "HISTORY",
    "Known",
    "Layout",
    "MapLog",
    "history_row",
    "known_layouts",
    "resolve_layout",
]

Layout = list[tuple[str, pa.DataType]]  # per column of a table map: lake column name and type


HISTORY = pa.schema(
    [
        ("database", pa.string()),
        ("table", pa.string()),
        ("map_id", pa.string()),
        ("table_id", pa.int64()),
        ("first_file", pa.string()),
        ("first_pos", pa.int64()),
        ("primary_key", pa.list_(pa.string())),
        ("columns", pa.list_(COLUMN)),
        ("lake_columns", pa.list_(pa.string())),
        ("lake_types", pa.list_(pa.string())),
        ("batch", pa.int64()),
    ]
)


def _type_tag(t: pa.DataType) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in str(t)).strip("_")


def resolve_layout(cols: Layout, schema: list[pa.Field]) -> Layout:
    """Lake names of a table map's columns against the table's columns so far (``schema`` grows in place): same
    name and type -> that column; a new name -> a new column; a known name with another type -> ``name__type``."""
    have = {f.name: f.type for f in schema}
    out: Layout = []
    for n, t in cols:
        name = f"{n}__col" if n in META_NAMES else n
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
    table, and the column facts (``tablemaps`` view dicts) of every map id and of each table's last named map."""

    layouts: dict[str, Layout] = field(default_factory=dict)
    pk: dict[str, list[str]] = field(default_factory=dict)
    maps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


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
        known.maps[row["map_id"]] = row["columns"]
        if any(c["name"] != f"col_{c['index'] + 1}" for c in row["columns"]):
            known.tables[key] = row["columns"]
    return known


class MapLog:
    """The table maps of a batch as the driver's scan meets them (:func:`.statements.scan_statements`), in binlog
    order: one row (the ``tablemaps`` view's, with the lake layout and key) each time a table's layout differs from
    the one before, so the first occurrence of every layout and the last layout of every table are there.

    Maps that log no column names (MINIMAL/NO_LOG metadata) are named by :class:`~binlake.spark.enrich.Namer`
    (from an earlier named map of the table, in this batch or in the lake's history, or from the DDL that
    ``tracker``, the scan's own, follows); ``enriched`` holds their columns by map id, for the tasks to decode
    their rows with."""

    def __init__(self, tracker: SchemaTracker | None = None, known: Known | None = None) -> None:
        self.rows: list[dict[str, Any]] = []
        self.known = known or Known()
        self.enriched: dict[str, tuple[Column, ...]] = {}
        self._namer = Namer(tracker, self.known.tables)
        self._last: dict[str, str] = {}  # table -> the map id of its last table map
        self._seen: dict[int, tuple[TableMapEvent, str, str]] = {}  # id -> (table map, table, map id)
        self._unnamed: dict[str, tuple[Column, ...] | None] = {}  # map id -> its named columns (None: none known)

    def __call__(self, split: Split, pos: int, tm: TableMapEvent) -> None:
        seen = self._seen.get(id(tm))  # the scan gives identical maps as one object
        if seen is None or seen[0] is not tm:
            if len(self._seen) >= 1024:
                self._seen.clear()
            seen = self._seen[id(tm)] = (tm, table_dir(tm.schema, tm.table), map_id(tm))
        _, key, mid = seen
        if self._last.get(key) == mid:
            return
        self._last[key] = mid
        if named(tm):
            tm = self._namer.keyed(tm)
            self._namer.learn(key, tm)
        else:
            tm = self._name(key, mid, tm)
        row = tablemap_rows(split.file, [TableMapRecord(tm, mid, pos, pos, 1)])[0]
        row["lake"] = [(n, lake_type(c)) for n, c in zip(tm.column_names, tm.columns, strict=True)]
        row["primary_key_index"] = list(tm.primary_key)
        self.rows.append(row)

    def _name(self, key: str, mid: str, tm: TableMapEvent) -> TableMapEvent:
        """``tm`` with its columns named as known (the first answer for a map id holds for the whole batch)."""
        if mid not in self._unnamed:
            facts = self.known.maps.get(mid)
            cols = borrow(tm.columns, facts) if facts is not None else self._namer.columns(key, tm)
            self._unnamed[mid] = cols
            if cols is not None:
                self.enriched[mid] = cols
        cols = self._unnamed[mid]
        return tm if cols is None else replace(tm, columns=cols)


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
