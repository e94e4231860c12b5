"""The :class:`~binlake.changes.records.TableInfo` of each table map: its columns as :mod:`binlake.columns` describes
them (names, signedness, charsets, ENUM/SET members and the key a MINIMAL or NO_LOG map does not log, from an
earlier FULL map of the table, its DDL, or the server's definition), the one rule the lake's ingest asks too.

Example::

    catalog = TableCatalog(tracker)
    info = catalog.info(table_map)       # TableInfo: names, key, columns, ddl
"""

from __future__ import annotations

from dataclasses import replace

from binlake.changes.records import TableInfo
from binlake.columns import ColumnCatalog, SchemaSource
from binlake.events.table_map import TableMapEvent
from binlake.schema import SchemaTracker

__all__ = ["TableCatalog"]

_KEPT = 1024  # table infos cached (one per described layout)


class TableCatalog:
    """Makes (and caches) the :class:`TableInfo` of table maps; ``tracker`` is the decoder's DDL tracker, current
    at each table map as the events are read; ``server`` the server's definitions, for a stream from a server."""

    def __init__(self, tracker: SchemaTracker | None, server: SchemaSource | None = None) -> None:
        self.tracker = tracker
        self.columns = ColumnCatalog(tracker, server)
        self._cache: dict[int, tuple[object, TableInfo]] = {}

    def info(self, tm: TableMapEvent) -> TableInfo:
        """The :class:`TableInfo` of ``tm`` (the same object for the same layout while what is known is the same:
        every transaction logs its maps again)."""
        described = self.columns.describe(tm)
        hit = self._cache.get(id(described))
        if hit is not None and hit[0] is described and hit[1].schema == tm.schema and hit[1].name == tm.table:
            return hit[1]
        columns = described.columns
        mapped = tm if columns is tm.columns else replace(tm, columns=columns)
        info = TableInfo(tm.schema, tm.table, columns, described.names, described.key, described.ddl, mapped)
        if len(self._cache) >= _KEPT:
            self._cache.clear()
        self._cache[id(described)] = (described, info)
        return info
