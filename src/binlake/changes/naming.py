"""The :class:`~binlake.changes.records.TableInfo` of each table map: its columns named and keyed from what is known.

A FULL-metadata map names its columns and its primary key.  A MINIMAL or NO_LOG map does not (NO_LOG: not even
signedness, charsets or ENUM/SET members); the facts come, as for the lake, from the last FULL map of the same
table with the same layout, else from the DDL the binlog logged (:class:`binlake.spark.enrich.Namer`, which the
ingest uses too: one rule for both).  Where the DDL tracker knows the table and agrees with the map, its
:class:`~binlake.schema.TableSchema` rides along: it tells what no table map does (generated columns, BOOLEAN,
POINT, UUID).  A primary key the map does not log comes from the DDL.

ENUM and SET members a NO_LOG map does not log come from the DDL too.

Example::

    catalog = TableCatalog(tracker)
    info = catalog.info(table_map)       # TableInfo: names, key, columns, ddl
"""

from __future__ import annotations

from dataclasses import replace

from binlake.changes.records import TableInfo
from binlake.coltypes import Column, ColumnType
from binlake.events.table_map import TableMapEvent
from binlake.schema import SchemaTracker, TableSchema

__all__ = ["TableCatalog"]

_KEPT = 1024  # table infos cached (one per table map layout and DDL version)


class TableCatalog:
    """Makes (and caches) the :class:`TableInfo` of table maps; ``tracker`` is the decoder's DDL tracker, current
    at each table map as the events are read."""

    def __init__(self, tracker: SchemaTracker | None) -> None:
        from binlake.spark.enrich import Namer

        self.tracker = tracker
        self._namer = Namer(tracker)
        self._learned: dict[str, tuple[Column, ...]] = {}  # table -> the layout of its last named map, learned
        self._cache: dict[tuple[int, str, str, int], tuple[tuple[Column, ...], TableSchema | None, TableInfo]] = {}

    def info(self, tm: TableMapEvent) -> TableInfo:
        """The :class:`TableInfo` of ``tm`` (the same object for the same layout while the DDL is unchanged)."""
        ts = self.tracker.table(tm.schema, tm.table) if self.tracker is not None else None
        key = (id(tm.columns), tm.schema, tm.table, id(ts))
        hit = self._cache.get(key)
        if hit is not None and hit[0] is tm.columns and hit[1] is ts:
            self._learn(tm)
            return hit[2]
        info = self._make(tm, ts)
        if len(self._cache) >= _KEPT:
            self._cache.clear()
        self._cache[key] = (tm.columns, ts, info)
        return info

    def _learn(self, tm: TableMapEvent) -> None:
        """A named map's facts are the table's latest (kept once per layout: every transaction logs its maps)."""
        name = f"{tm.schema}\0{tm.table}"
        if self._learned.get(name) is not tm.columns and any(c.name is not None for c in tm.columns):
            self._namer.learn(name, tm)
            self._learned[name] = tm.columns

    def _make(self, tm: TableMapEvent, ts: TableSchema | None) -> TableInfo:
        from binlake.spark.enrich import named

        columns = tm.columns
        if named(tm):
            self._learn(tm)
        else:
            filled = self._namer.columns(f"{tm.schema}\0{tm.table}", tm)
            if filled is not None:
                columns = filled
        ddl = ts if ts is not None and ts.agrees_with(columns) else None
        if ddl is not None and all(c.pk_position is None for c in columns) and ddl.primary_key:
            key = [k.casefold() for k in ddl.primary_key]
            columns = tuple(
                c.with_(pk_position=key.index(n.casefold())) if n.casefold() in key else c
                for c, n in zip(columns, ddl.column_names, strict=True)
            )
        if ddl is not None:
            members = tuple(_members(c, t.type_name, t.params) for c, t in zip(columns, ddl.columns, strict=True))
            if any(a is not b for a, b in zip(members, columns, strict=True)):
                columns = members
        names = tuple(c.name if c.name is not None else f"col_{c.index + 1}" for c in columns)
        pk = sorted((c.pk_position, c.index) for c in columns if c.pk_position is not None)
        mapped = tm if columns is tm.columns else replace(tm, columns=columns)
        return TableInfo(tm.schema, tm.table, columns, names, tuple(i for _, i in pk), ddl, mapped)


def _members(col: Column, type_name: str, params: tuple[str, ...]) -> Column:
    """``col`` with the ENUM or SET members its DDL declares, where the map does not log them (NO_LOG)."""
    if col.real_type_code == ColumnType.ENUM and col.enum_values is None and type_name == "enum":
        return col.with_(enum_values=params)
    if col.real_type_code == ColumnType.SET and col.set_values is None and type_name == "set":
        return col.with_(set_values=params)
    return col
