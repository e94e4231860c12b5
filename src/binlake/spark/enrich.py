"""Table maps that log no column names (``binlog_row_metadata=MINIMAL`` or ``NO_LOG``) named from what is known.

A server switched from FULL to MINIMAL or NO_LOG metadata keeps writing the same tables, but their table maps stop
carrying column names and the primary key (NO_LOG: also signedness, charsets and ENUM/SET members).  The lake
would name such columns ``col_N``, decode a ``BIGINT UNSIGNED`` as signed and lose the key.  The facts are not
lost, though: an earlier FULL map of the same table told them, and the DDL (``binlake.schema``) tells the names.

Facts are kept per column as the ``tablemaps`` view's dicts (:func:`binlake.spark.extract.column_info`), which is
also what the lake's ``_schema_history`` stores, so facts from an earlier ingest run serve like facts from this one.

Rules, in order (:class:`Namer`):

1. The last named map of the table *fits* (same column count, and per column the same real type, length,
   precision, scale, fsp and bits) and the DDL tracker, where it knows the table, gives the same names: every fact
   the map lacks is borrowed from it (names, signedness, charsets, ENUM/SET members, geometry type, key, visibility).
2. Else the tracker knows the table and agrees with the map (``TableSchema.agrees_with``): names, signedness and
   the primary key come from the DDL (for a sequence, which has no key and one row, its row key:
   ``TableSchema.row_key``; :meth:`Namer.keyed` gives a named map of a sequence that key too), and the ``binary``
   charset of the binary types (BINARY, VARBINARY, the BLOBs, INET4, INET6, UUID, ``CHARACTER SET binary``), so
   BINARY(n) values get their trailing zero bytes back as ``SELECT`` shows them (other charsets need the table's
   and database's defaults, which the DDL tracker does not follow: such strings stay bytes).
3. Else the map stays as logged (``col_N`` names, no key).

Example::

    namer = Namer(tracker)
    namer.learn(key, full_map)            # a map with names: remembered
    columns = namer.columns(key, minimal_map)  # the minimal map's columns with the names of the full one
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from binlake.coltypes import Column
from binlake.events.table_map import TableMapEvent
from binlake.schema import SchemaTracker, TrackedColumn
from binlake.spark.extract import column_info
from binlake.values.collations import BINARY

__all__ = ["Facts", "Namer", "borrow", "fits", "named"]

Facts = Sequence[Mapping[str, Any]]  # per column: a column_info dict

# what decides whether two maps describe the same stored layout (column_info keys of Column.build's fields)
_SHAPE = ("type_code", "length", "precision", "scale", "fsp", "bits")
# optional-metadata facts a map may lack (Table_map_event::Optional_metadata_field_type, rows_event.h)
_TUPLES = ("enum_values", "set_values")
_FACTS = ("name", "unsigned", "charset", "geometry_type", "pk_position", "visible", "vector_dimension", *_TUPLES)


def named(tm: TableMapEvent) -> bool:
    """Does the map log its column names (COLUMN_NAME metadata: ``binlog_row_metadata=FULL``)?"""
    return any(c.name is not None for c in tm.columns)


def fits(columns: Sequence[Column], facts: Facts) -> bool:
    """Do ``facts`` describe these columns (count, and per column the real type and metadata-derived sizes)?

    >>> from binlake.coltypes import Column
    >>> cols = (Column.build(0, 3, b""), Column.build(1, 15, b"\\x28\\x00"))
    >>> fits(cols, [column_info(c, "x") for c in cols]), fits(cols[:1], [column_info(c, "x") for c in cols])
    (True, False)
    """
    if len(columns) != len(facts):
        return False
    return all(column_info(c, "")[k] == f.get(k) for c, f in zip(columns, facts, strict=True) for k in _SHAPE)


def borrow(columns: Sequence[Column], facts: Facts) -> tuple[Column, ...]:
    """``columns`` with every optional fact they lack (``None``) taken from ``facts`` (which must :func:`fit`)."""
    out = []
    for c, f in zip(columns, facts, strict=True):
        changes: dict[str, object] = {}
        for k in _FACTS:
            v = f.get(k)
            if getattr(c, k) is None and v is not None:
                changes[k] = tuple(v) if k in _TUPLES else v
        out.append(c.with_(**changes) if changes else c)
    return tuple(out)


class Namer:
    """Names the columns of unnamed table maps from the last named map of each table and from the DDL.

    ``tracker`` is the DDL tracker the caller keeps current (the driver's scan updates it in place as it reads),
    so each map is judged by the schema in force where it was logged.  Tables are keyed by the caller (the lake's
    table directory).
    """

    def __init__(self, tracker: SchemaTracker | None = None, known: Mapping[str, Facts] | None = None) -> None:
        self.tracker = tracker
        self._facts: dict[str, Facts] = dict(known or {})

    def learn(self, key: str, tm: TableMapEvent) -> None:
        """Remember a named map's facts as the table's latest."""
        self._facts[key] = [column_info(c, n) for c, n in zip(tm.columns, tm.column_names, strict=True)]

    def columns(self, key: str, tm: TableMapEvent) -> tuple[Column, ...] | None:
        """The columns of an unnamed ``tm`` with what is known about them, ``None`` when nothing is."""
        ddl = self._ddl(tm)
        facts = self._facts.get(key)
        same_names = ddl is None or [str(f["name"]).casefold() for f in facts or ()] == [n.casefold() for n, *_ in ddl]
        if facts is not None and fits(tm.columns, facts) and same_names:
            return borrow(tm.columns, facts)
        if ddl is None:
            return None
        return tuple(
            c.with_(
                name=name,
                unsigned=c.unsigned if c.unsigned is not None or not c.is_numeric else unsigned,
                charset=c.charset if c.charset is not None or not c.is_character or not binary else BINARY,
                pk_position=c.pk_position if c.pk_position is not None else pk,
            )
            for c, (name, unsigned, binary, pk) in zip(tm.columns, ddl, strict=True)
        )

    def keyed(self, tm: TableMapEvent) -> TableMapEvent:
        """``tm``, or for a named map without a key of a table the DDL says is a sequence (and agrees with), the
        map with the sequence's row key (:attr:`binlake.schema.TableSchema.row_key`): its one row gets a current
        state like a keyed table's."""
        if self.tracker is None or tm.primary_key:
            return tm
        ts = self.tracker.table(tm.schema, tm.table)
        if ts is None or not ts.sequence or not ts.agrees_with(tm.columns):
            return tm
        key = [k.casefold() for k in ts.row_key]
        return replace(
            tm,
            columns=tuple(
                c.with_(pk_position=key.index(n.casefold())) if n.casefold() in key else c
                for c, n in zip(tm.columns, ts.column_names, strict=True)
            ),
        )

    def _ddl(self, tm: TableMapEvent) -> list[tuple[str, bool, bool, int | None]] | None:
        """Per column (name, unsigned, of a binary type, position in the primary key) from the DDL, when the
        tracker knows the table and agrees with the map."""
        if self.tracker is None:
            return None
        ts = self.tracker.table(tm.schema, tm.table)
        if ts is None or not ts.agrees_with(tm.columns):
            return None
        key = [k.casefold() for k in ts.row_key]
        return [
            (c.name, c.unsigned, _binary(c), key.index(c.name.casefold()) if c.name.casefold() in key else None)
            for c in ts.columns
        ]


# the declared types whose values are bytes whatever the table's charset (their charset is ``binary``)
_BINARY_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "long varbinary"})
_BINARY_TYPES |= {"inet4", "inet6", "uuid"}
_CHARSET_BINARY = re.compile(r"\b(?:character\s+set|charset)\s+[`'\"]?binary\b", re.IGNORECASE)


def _binary(col: TrackedColumn) -> bool:
    """Is a column declared with a binary type or ``CHARACTER SET binary`` (not the ``BINARY`` attribute of a
    string type, which picks the ``_bin`` collation of the string's own charset)?"""
    return col.type_name in _BINARY_TYPES or bool(_CHARSET_BINARY.search(col.definition))
