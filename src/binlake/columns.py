"""What a column is: its name, its values' type, charset, signedness and key membership, by one rule that the lake,
the change outputs and every other reader of row events ask (:class:`ColumnCatalog`).

A table map always gives each column's type and size; the rest depends on the server's ``binlog_row_metadata``:
FULL logs names, signedness, charsets, ENUM/SET members, geometry types and the primary key; MINIMAL (MySQL 8's
default) signedness, charsets and geometry types; NO_LOG (MariaDB's default) none of them.  What a map does not
say comes from, in this order (a fact the map logs is never replaced, and each source only fills what the ones
before it left unknown):

1. **an earlier FULL map of the same table** with the same layout (per column the same type, length, precision,
   scale, fsp and bits): the server's own facts, from this run or from the lake's ``_schema_history``; unless the
   DDL below names the columns otherwise (a column renamed since: the DDL is the later word);
2. **the table's DDL** as :class:`~binlake.schema.SchemaTracker` followed it up to the map: the ``CREATE``/``ALTER``
   statements the binlogs logged, over ``--schema SQL_FILE``'s (and, for a live ingest, over the ``SHOW CREATE
   TABLE`` its snapshot read, in the snapshot's own transaction); used where it agrees with the map
   (:meth:`~binlake.schema.TableSchema.agrees_with`: as many columns, the names the map logs, each declared type
   one the map's type code can stand for);
3. **the server's current definition** (``ingest --host``, ``changes --host``, ``tail``: a :class:`SchemaSource`
   the replication side injects, reading ``information_schema``), asked once per table and catalog, only when the two
   sources above leave a fact unknown.  It is the definition *now*, which may be newer than the position being
   decoded: it is used only where it agrees with the map as the DDL must, and where it names the columns as the
   sources before it do; a table whose DDL the binlogs logged keeps that DDL's facts, the server filling only
   what the DDL could not say.  A definition that changed without changing the map's layout (a column renamed,
   a charset changed in place) before the DDL reaches the stream is what this source cannot see.

Per column (:func:`filled`): the name; the signedness of a number; the charset of a string, ENUM or SET (a DDL's
charset of a CHAR(n)/VARCHAR(n) column only where the map's byte length is ``n`` times the charset's longest
character, so a wrong charset never turns bytes into wrong text); ENUM/SET members; the geometry type; and, where
the map marks no primary key, the DDL's (a sequence's row key: :attr:`~binlake.schema.TableSchema.row_key`).

What a value is follows from those facts alone: a string column is text in its charset when the charset is known
and not ``binary``, else bytes (:attr:`Column.is_text <binlake.coltypes.Column.is_text>`).  The lake's column
types (``binlake.ingest.arrow.lake_type``), the row decoder (:mod:`binlake.values.strings`) and the Debezium and
SQL outputs all read it so, so a column lands with the same type and values wherever it is read.

Example::

    catalog = ColumnCatalog(tracker)           # the decoder's tracker, current at each table map
    columns = catalog.columns(table_map)       # the map's columns with every fact known
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from binlake.coltypes import Column, ColumnType
from binlake.events.table_map import TableMapEvent
from binlake.schema import SchemaTracker, TableSchema, TrackedColumn
from binlake.values.collations import max_bytes

__all__ = ["ColumnCatalog", "Described", "SchemaSource", "borrowed", "filled", "fits", "named"]

T = ColumnType
_KEPT = 1024  # described layouts cached (one per table-map layout and source state)
# per column what decides whether two maps store the same layout
_SHAPE = ("real_type_code", "length", "precision", "scale", "fsp", "bits")
# the optional facts a map may lack (Table_map_event::Optional_metadata_field_type, rows_event.h)
_FACTS = (
    "name",
    "unsigned",
    "charset",
    "enum_values",
    "set_values",
    "geometry_type",
    "pk_position",
    "visible",
    "vector_dimension",
)
# the declared geometry types -> GEOMETRY_TYPE's number (Field::geometry_type in sql/field.h)
_GEOMETRY_TYPES = {"geometry": 0, "point": 1, "linestring": 2, "polygon": 3, "multipoint": 4}
_GEOMETRY_TYPES |= {"multilinestring": 5, "multipolygon": 6, "geometrycollection": 7, "geomcollection": 7}
_SIZED_STRINGS = frozenset({T.STRING, T.VARCHAR, T.VAR_STRING})


class SchemaSource(Protocol):
    """A table's definition from outside the binlogs (the server's ``information_schema``), as the DDL tracker
    would hold it; ``None`` when it cannot be read.  :class:`ColumnCatalog` asks each table once."""

    def table(self, schema: str, name: str) -> TableSchema | None: ...


def named(tm: TableMapEvent) -> bool:
    """Does the map log its column names (COLUMN_NAME metadata: ``binlog_row_metadata=FULL``)?"""
    return any(c.name is not None for c in tm.columns)


def fits(columns: Sequence[Column], learned: Sequence[Column]) -> bool:
    """Do the ``learned`` columns (of an earlier map) store the same layout as ``columns``: as many, and per column
    the same real type, length, precision, scale, fsp and bits?"""
    return len(columns) == len(learned) and all(
        getattr(c, k) == getattr(f, k) for c, f in zip(columns, learned, strict=True) for k in _SHAPE
    )


def borrowed(columns: Sequence[Column], learned: Sequence[Column]) -> tuple[Column, ...]:
    """``columns`` with every fact they lack taken from ``learned`` (which :func:`fits` them)."""
    out = []
    for c, f in zip(columns, learned, strict=True):
        changes = {k: getattr(f, k) for k in _FACTS if getattr(c, k) is None and getattr(f, k) is not None}
        out.append(c.with_(**changes) if changes else c)
    return _same_or(columns, out)


def _same_or(columns: Sequence[Column], out: list[Column]) -> tuple[Column, ...]:
    """``columns`` itself (a tuple) where ``out`` changed none of them: row decoders are kept per columns tuple."""
    if isinstance(columns, tuple) and all(a is b for a, b in zip(columns, out, strict=True)):
        return columns
    return tuple(out)


def _charset_fits(col: Column, tracked: TrackedColumn, charset: int) -> bool:
    """Can ``charset`` be a CHAR(n)/VARCHAR(n) column's: its map length is ``n`` times the longest character?"""
    if col.real_type_code not in _SIZED_STRINGS or not tracked.params or not tracked.params[0].isdigit():
        return True
    longest = max_bytes(charset)
    return longest is None or col.length == int(tracked.params[0]) * longest


def filled(columns: Sequence[Column], ts: TableSchema, *, keyed: bool = True) -> tuple[Column, ...]:
    """``columns`` (of a map ``ts`` agrees with) with every fact they lack that the definition ``ts`` gives (module
    docstring); the same objects where it gives none.  ``keyed``: the key too, where no column is marked (False
    for a map that logs its key, FULL, unless ``ts`` is a sequence, whose one row has no key but its row key)."""
    keyed = (keyed or ts.sequence) and all(c.pk_position is None for c in columns)
    key = [k.casefold() for k in ts.row_key] if keyed else []
    out = []
    for c, t in zip(columns, ts.columns, strict=True):
        changes: dict[str, object] = {}
        if c.name is None:
            changes["name"] = t.name
        if c.unsigned is None and c.is_numeric:
            changes["unsigned"] = t.unsigned
        string = c.is_character or c.is_enum_or_set
        if c.charset is None and t.charset is not None and string and _charset_fits(c, t, t.charset):
            changes["charset"] = t.charset
        real = c.real_type_code
        if real == T.ENUM and c.enum_values is None and t.type_name == "enum":
            changes["enum_values"] = t.params
        if real == T.SET and c.set_values is None and t.type_name == "set":
            changes["set_values"] = t.params
        if real == T.GEOMETRY and c.geometry_type is None and t.type_name in _GEOMETRY_TYPES:
            changes["geometry_type"] = _GEOMETRY_TYPES[t.type_name]
        if t.name.casefold() in key:
            changes["pk_position"] = key.index(t.name.casefold())
        out.append(c.with_(**changes) if changes else c)
    return _same_or(columns, out)


def _names(columns: Sequence[Column]) -> list[str] | None:
    return [str(c.name).casefold() for c in columns] if all(c.name is not None for c in columns) else None


def _lacking(columns: Sequence[Column]) -> bool:
    """Does any column still lack a fact the server's definition gives?"""
    return any(
        c.name is None
        or (c.unsigned is None and c.is_numeric)
        or (c.charset is None and (c.is_character or c.is_enum_or_set))
        for c in columns
    )


@dataclass(frozen=True, slots=True)
class Described:
    """A table map's columns with every fact known (:attr:`columns`), and the definition that agreed with the map
    (:attr:`ddl`: the tracker's, else the server's; it tells what no table map does: generated columns, BOOLEAN,
    POINT, UUID), ``None`` when none did."""

    columns: tuple[Column, ...]
    ddl: TableSchema | None

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, ``col_N`` (1-based) where none is known."""
        return tuple(c.name if c.name is not None else f"col_{c.index + 1}" for c in self.columns)

    @property
    def key(self) -> tuple[int, ...]:
        """Indexes of the primary-key columns in key order (empty: none known)."""
        return tuple(i for _, i in sorted((c.pk_position, c.index) for c in self.columns if c.pk_position is not None))


class ColumnCatalog:
    """The one answer to "what is this column" for the table maps of one stream (module docstring).

    ``tracker``: the DDL tracker the caller keeps current (the decoder's, or the driver's scan), so each map is
    read under the schema in force where it was logged.  ``server``: the server's definitions, for a stream from
    a server.  ``learned``: the columns of earlier FULL maps by ``(database, table)`` (the lake's history); maps
    that log names passed to :meth:`describe` are learned as they come.
    """

    def __init__(
        self,
        tracker: SchemaTracker | None = None,
        server: SchemaSource | None = None,
        learned: Mapping[tuple[str, str], Sequence[Column]] | None = None,
    ) -> None:
        self.tracker = tracker
        self.server = server
        self._learned: dict[tuple[str, str], tuple[Column, ...]] = {k: tuple(v) for k, v in (learned or {}).items()}
        self._asked: dict[tuple[str, str], TableSchema | None] = {}  # the server's answers, one per table
        # (columns, table, definition, learned) -> the answer: maps of two tables may share one columns tuple
        self._cache: dict[tuple[int, str, str, int, int], tuple[tuple[Column, ...], object, object, Described]] = {}

    def columns(self, tm: TableMapEvent) -> tuple[Column, ...]:
        """``tm``'s columns with every fact known (the same tuple while nothing changes)."""
        return self.describe(tm).columns

    def describe(self, tm: TableMapEvent) -> Described:
        """``tm``'s columns with every fact known and the definition that agreed with them (:class:`Described`);
        a map that logs names is remembered as its table's latest (source 1)."""
        table = (tm.schema, tm.table)
        if named(tm):
            self._learn(table, tm.columns)
        ts = self.tracker.table(tm.schema, tm.table) if self.tracker is not None else None
        learned = self._learned.get(table)
        key = (id(tm.columns), tm.schema, tm.table, id(ts), id(learned))
        hit = self._cache.get(key)
        if hit is not None and hit[0] is tm.columns and hit[1] is ts and hit[2] is learned:
            return hit[3]
        out = self._describe(tm, ts, learned)
        if len(self._cache) >= _KEPT:
            self._cache.clear()
        self._cache[key] = (tm.columns, ts, learned, out)
        return out

    def _learn(self, table: tuple[str, str], columns: tuple[Column, ...]) -> None:
        if self._learned.get(table) is not columns:
            self._learned[table] = columns

    def _describe(self, tm: TableMapEvent, ts: TableSchema | None, learned: tuple[Column, ...] | None) -> Described:
        columns = tm.columns
        ddl = ts if ts is not None and ts.agrees_with(columns) else None
        current = ddl is None or _names(learned or ()) == [n.casefold() for n in ddl.column_names]
        if learned is not None and learned is not columns and fits(columns, learned) and current:
            columns = borrowed(columns, learned)
        keyed = not named(tm)  # a FULL map logs the key: a table without one has none
        if ddl is not None:
            columns = filled(columns, ddl, keyed=keyed)
        if self.server is not None and _lacking(columns):
            srv = self._server_table(tm.schema, tm.table)
            known = _names(columns)
            if (
                srv is not None
                and srv.agrees_with(columns)
                and known in (None, [n.casefold() for n in srv.column_names])
            ):
                columns = filled(columns, srv, keyed=keyed)
                ddl = ddl or srv
        return Described(columns, ddl)

    def _server_table(self, schema: str, name: str) -> TableSchema | None:
        table = (schema, name)
        if table not in self._asked:
            self._asked[table] = self.server.table(schema, name) if self.server is not None else None
        return self._asked[table]
