"""The compiled writers' plans (``binlake._speedups.SqlPlan``, ``JsonPlan``), one per table layout, change kind and
columns present, made on first use and kept.

Example::

    plans = PlanCache(lambda item, before, after: build(item.table, item.kind, before, after))
    plan = plans.get(item)  # None: the Python writer writes this event
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from binlake._compiled import compiled
from binlake.changes.records import RowsChange, TableInfo
from binlake.coltypes import ColumnType
from binlake.values.strings import BLOB_TYPES, VARLEN_TYPES
from binlake.wire import bits_lsb_first

__all__ = ["INT_SIZES", "STRINGS", "UTF8", "PlanCache", "speedups"]

if TYPE_CHECKING:
    from binlake import _speedups as speedups
else:  # the compiled writers (src/binlake/_speedups.c), when they were built and are not turned off: else None
    speedups = compiled("_speedups")

T = ColumnType
INT_SIZES: dict[int, int] = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}
"""Bytes of each integer type's stored value (the plans' ``K_INT``)."""
STRINGS = (VARLEN_TYPES | BLOB_TYPES) - {T.VARCHAR_COMPRESSED, T.BLOB_COMPRESSED}
"""The string types the plans read (``K_STRING``: a length, then the bytes); compressed ones are not."""
UTF8 = frozenset({"utf8mb4", "utf8mb3", "utf8"})
"""The charsets whose values are UTF-8."""

P = TypeVar("P")


class PlanCache(Generic[P]):
    """``build(item, before, after)`` once per layout: ``before``/``after`` flag (one byte a column) the columns the
    rows event's images hold (an INSERT's or DELETE's one image is both); ``None`` where no compiled plan writes
    the layout.  At most ``size`` plans are kept (a table map's id may be reused only by the same table info)."""

    def __init__(self, build: Callable[[RowsChange, bytes, bytes], P | None], size: int = 4096) -> None:
        self._build = build
        self._size = size
        self._plans: dict[tuple[int, str, bytes, bytes | None], tuple[TableInfo, P | None]] = {}

    def get(self, item: RowsChange) -> P | None:
        ev = item.event
        key = (id(item.table), item.kind, ev.columns_before, ev.columns_after)
        hit = self._plans.get(key)
        if hit is None or hit[0] is not item.table:
            if len(self._plans) >= self._size:
                self._plans.clear()
            n = ev.column_count
            first = bytes(bits_lsb_first(ev.columns_before, n))
            second = bytes(bits_lsb_first(ev.columns_after, n)) if ev.columns_after is not None else first
            hit = self._plans[key] = (item.table, self._build(item, first, second if item.kind == "update" else first))
        return hit[1]

    def compiled(self) -> int:
        """How many of the layouts seen a compiled plan writes."""
        return sum(plan is not None for _, plan in self._plans.values())
