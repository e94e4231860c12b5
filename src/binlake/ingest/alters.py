"""What each ALTER TABLE of a batch does to a keyed table's current state (:func:`alterations`), and how the batch's
table maps name the current tables' columns (:func:`map_layouts`): the driver's part of
:mod:`binlake.lake.alter`.

The server rewrites every row for ``ADD``/``DROP``/``RENAME``/``MODIFY``/``CHANGE COLUMN`` without logging them.
The DDL tracker (:mod:`binlake.schema`) says each column's definition before and after the statement and which
column of before each column after holds (:class:`~binlake.schema.Altered`); from those this module decides, per
column, the conversion the server applied (:data:`~binlake.lake.alter.CONVERSIONS`):

* the same definition (a column kept or renamed; an ENUM or SET that keeps its members): its values as they are;
* a new column: its ``DEFAULT`` literal (a number, a string, NULL), else NULL, or for a ``NOT NULL`` column the
  type's implicit default as the server fills it (0, ``''``, the first ENUM member; a zero date is NULL in the
  lake); a default the lake cannot compute (an expression, ``CURRENT_TIMESTAMP``, ``AUTO_INCREMENT`` numbering) is
  NULL with a note;
* a new type: by the new type's kind (integers clipped to the type's range as a non-strict server clips, decimals
  rounded half away from zero, text cut to its length in characters, dates and datetimes cut); a conversion the
  lake has no exact rule for (FLOAT to text, DATETIME to TIMESTAMP, a type the tracker does not know) gives NULL
  with a note.

Example::

    for a in alterations(manifest.schema, manifest.statements, lambda key: key in keyed): ...
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pyarrow as pa

from binlake.ingest.arrow import lake_type
from binlake.ingest.statements import tracker_from_json
from binlake.lake.alter import Alteration, NewColumn, convert
from binlake.lake.names import table_dir
from binlake.lake.records import Statement
from binlake.lake.tables import lake_name
from binlake.schema import Altered, TableSchema, TrackedColumn, declared_column
from binlake.sql.statements import Scope

__all__ = ["alterations", "new_column"]

# the range of each integer type, signed (sql/field.h: Field_tiny ... Field_longlong)
_BITS = {"tinyint": 8, "bool": 8, "boolean": 8, "int1": 8, "smallint": 16, "int2": 16, "mediumint": 24, "int3": 24,
         "middleint": 24, "int": 32, "integer": 32, "int4": 32, "bigint": 64, "int8": 64}  # fmt: skip
_TEXT = frozenset({"char", "character", "nchar", "varchar", "nvarchar", "character varying", "char varying",
                   "national char", "national character", "national varchar"})  # fmt: skip
_DEFAULT = re.compile(r"\bDEFAULT\s*(?:\(\s*)?(NULL\b|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|'(?:[^'\\]|\\.|'')*')",
                      re.IGNORECASE)  # fmt: skip
_NOT_NULL = re.compile(r"\bNOT\s+NULL\b", re.IGNORECASE)
_AUTO = re.compile(r"\bAUTO_INCREMENT\b|\bGENERATED\b|\bAS\s*\(", re.IGNORECASE)


def alterations(
    state: dict[str, Any] | Sequence[Any], statements: Sequence[Statement], keyed: Callable[[str], bool]
) -> list[Alteration]:
    """The ALTER TABLE statements of a batch that changed the columns of a table ``keyed`` says has a current state
    (by its ``db/table`` key), from the schema the batch started with (``state``: :func:`tracker_to_json`'s)."""
    tracker = tracker_from_json(state)
    out: list[Alteration] = []
    for s in statements:
        if s.kind != "ddl":
            continue
        tracker.execute(s.query, s.db, s.sql_mode, Scope(frozenset(s.scope)), s.collation_server)
        altered = tracker.altered
        if altered is None or altered.before.columns == altered.after.columns:
            continue
        key = table_dir(altered.after.schema or "", altered.after.name)
        if not (keyed(key) or keyed(table_dir(altered.before.schema or "", altered.before.name))):
            continue
        if not altered.after.row_key or not altered.before.row_key:
            continue  # a key dropped (no current state from here) or added (none before): as without an ALTER
        columns = tuple(new_column(i, c, altered) for i, c in enumerate(altered.after.columns))
        pk = tuple(lake_name(n) for n in altered.after.row_key)
        before = tuple(lake_name(n) for n in altered.before.row_key)
        out.append(Alteration(key, s.seq, columns, pk, before, s.query))
    return out


def renamed_keys(
    state: dict[str, Any] | Sequence[Any],
    renames: Sequence[Statement],
    pk: dict[str, list[str]],
    has_current: Callable[[str], bool],
) -> None:
    """The keys of the tables the batch's RENAMEs move, added to ``pk`` (``db/table`` -> the key as the table names
    it) in place: a table with a current state whose name never had a row logged (it was renamed to it, and nothing
    written since: no table map to learn the key from) takes its key from the schema the batch started with
    (``state``), and each name a keyed table is renamed to takes its key, so that an ALTER of it before any row
    change follows too."""
    tracker = tracker_from_json(state)
    for s in sorted(renames, key=lambda s: s.seq):
        for src, dst in s.pairs:
            a, b = table_dir(*src), table_dir(*dst)
            if not pk.get(a) and has_current(a) and (ts := tracker.table(*src)) is not None and ts.row_key:
                pk[a] = [lake_name(n) for n in ts.row_key]
            if pk.get(a) and not pk.get(b):
                pk[b] = pk[a]


def new_column(index: int, col: TrackedColumn, altered: Altered) -> NewColumn:
    """Column ``index`` of the table after the ALTER: where its values come from and how (module docstring)."""
    out = _new_column(index, col, altered)
    return replace(out, name=lake_name(out.name), source=None if out.source is None else lake_name(out.source))


def _new_column(index: int, col: TrackedColumn, altered: Altered) -> NewColumn:
    declared = declared_column(col, index)
    t = lake_type(declared) if declared is not None else None
    source = altered.source(col.name)
    if source is None:
        return _added(col, t)
    if _same(source, col) or _members_kept(source, col):
        return NewColumn(col.name, t, source.name)
    if t is None:
        return NewColumn(col.name, None, source.name, "null", note=f"a type binlake does not know: {col.type_name}")
    kind = col.type_name
    if kind in _BITS:
        bits = _BITS[kind]
        lo, hi = (0, (1 << bits) - 1) if col.unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return NewColumn(col.name, t, source.name, "int", lo=lo, hi=hi)
    if pa.types.is_decimal(t):
        return NewColumn(col.name, t, source.name, "decimal")
    if pa.types.is_floating(t):
        return NewColumn(col.name, t, source.name, "real")
    if pa.types.is_string(t) and declared is not None and declared.enum_values is None and kind != "set":
        length = int(col.params[0]) if kind in _TEXT and col.params and col.params[0].isdigit() else None
        return NewColumn(col.name, t, source.name, "text", length, lo=source.fsp)
    if pa.types.is_date(t):
        return NewColumn(col.name, t, source.name, "date")
    if pa.types.is_timestamp(t):
        return NewColumn(col.name, t, source.name, "datetime", col.fsp)
    return NewColumn(col.name, t, source.name, "null", note=f"no exact conversion to {col.definition}")


def _members_kept(a: TrackedColumn, b: TrackedColumn) -> bool:
    """ENUM to ENUM (SET to SET) with every member kept: the lake holds members by name, as they are."""
    return a.type_name == b.type_name and a.type_name in ("enum", "set") and set(a.params) <= set(b.params)


def _same(a: TrackedColumn, b: TrackedColumn) -> bool:
    """Do two definitions store the same values (a rename, a changed default or comment)?"""
    return (a.type_name, a.params, a.unsigned, a.charset) == (b.type_name, b.params, b.unsigned, b.charset)


def _added(col: TrackedColumn, t: pa.DataType | None) -> NewColumn:
    """A column the ALTER added: filled with its default as the server fills the existing rows."""
    if t is None:
        return NewColumn(col.name, None, None, "fill", note=f"a type binlake does not know: {col.type_name}")
    definition = col.definition
    if _AUTO.search(definition):
        return NewColumn(col.name, t, None, "null", note="numbered or computed by the server")
    found = _DEFAULT.search(definition)
    literal: Any = None
    if found is not None:
        text = found.group(1)
        if text.upper() == "NULL":
            return NewColumn(col.name, t, None, "fill")
        if text.startswith("'"):
            literal = text[1:-1].replace("''", "'").replace("\\'", "'")
        else:
            literal = int(text) if re.fullmatch(r"[+-]?\d+", text) else Decimal(text)
    elif re.search(r"\bDEFAULT\b", definition, re.IGNORECASE):
        return NewColumn(col.name, t, None, "null", note="a default binlake cannot compute")
    elif _NOT_NULL.search(definition):
        literal = _implicit(col, t)
        if literal is None:
            return NewColumn(col.name, t, None, "fill")  # a zero date: NULL in the lake
    else:
        return NewColumn(col.name, t, None, "fill")
    if col.type_name == "enum":
        if literal in col.params:
            return NewColumn(col.name, t, None, "fill", fill=literal)
        return NewColumn(col.name, t, None, "null", note=f"a default binlake cannot convert: {literal!r}")
    value, failed = convert(pa.array([literal]), _conversion(col))
    if failed:
        return NewColumn(col.name, t, None, "null", note=f"a default binlake cannot convert: {literal!r}")
    return NewColumn(col.name, t, None, "fill", fill=_json(value[0].as_py()))


def _conversion(col: TrackedColumn) -> NewColumn:
    """The conversion into a column of ``col``'s definition from a value of any kind (a default's literal)."""
    placeholder = TrackedColumn("\x00", "\x00")  # a source unlike any definition: the conversion is by kind
    return new_column(0, col, Altered(TableSchema(None, "t", (placeholder,)), TableSchema(None, "t", (col,)),
                                      {"\x00": col.name}))  # fmt: skip


def _implicit(col: TrackedColumn, t: pa.DataType) -> Any:
    """The value the server gives a NOT NULL column without a default in existing rows (``Field::reset``)."""
    if col.type_name == "enum":
        return col.params[0] if col.params else None
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return 0
    if pa.types.is_floating(t):
        return 0
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return ""
    return None  # dates: a zero date, NULL in the lake; other types: NULL


def _json(v: Any) -> Any:
    if isinstance(v, Decimal):
        return str(v)
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v
