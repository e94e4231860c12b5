"""An ALTER TABLE applied to a current-state table as the server applied it to its rows (:class:`Alteration`).

The server rewrites every row of a table for ``ADD``/``DROP``/``RENAME``/``MODIFY``/``CHANGE COLUMN`` and logs no
row event for it.  The driver follows the DDL (:mod:`binlake.schema`) and hands the lake, per statement and keyed
table, the columns of the table after it (:class:`NewColumn`): each one's name and lake type, the column of the
current table it takes its values from (``None``: a new column, filled with its default) and how they are
converted (:data:`CONVERSIONS`).  The lake rewrites the table's live files once, a task per file on the batch's
:class:`~binlake.lake.runner.Runner` (:func:`alter_file`), and commits the new files with the new schema (a Delta
``metaData`` action) in the table's one commit of the batch: a kill at any moment leaves the table as it was, and
the next run does the batch again.  An ``ADD`` of columns filled with NULL, with every other column kept as it is,
changes only the schema (a file without the column reads it as null).

A value is converted exactly as the server converts it, or not at all: a value the rules here cannot convert
exactly (a FLOAT to text, a string the server would read by its lenient number rules, a TIMESTAMP whose text
depends on a time zone) becomes NULL and is counted, and the batch reports it (:attr:`AlterResult.unconverted`,
the commit's ``operationParameters`` and the ingest's summary): the lake never holds a value the server does not.

Example::

    cols = (NewColumn("id", pa.int64(), "id"), NewColumn("aa", pa.int64(), "a"), NewColumn("c", pa.string(), "c",
            "text", 20))
    alter_file(AlterTask("db/t", loc.uri, cols, ("id",), live_file))
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from binlake.lake import deltalog
from binlake.lake.files import ROW_GROUP_ROWS, CurrentSink, write_sorted
from binlake.lake.fileset import LiveFile
from binlake.lake.records import DataFile, check_version
from binlake.storage import Location

__all__ = ["CONVERSIONS", "AlterResult", "AlterTask", "Alteration", "NewColumn", "alter_file", "convert"]

CONVERSIONS = ("copy", "fill", "int", "decimal", "real", "text", "date", "datetime", "null")
"""How a column's values become the new column's: ``copy`` (the same lake type: as they are), ``fill`` (a new
column: :attr:`NewColumn.fill` in every row), ``int`` (an integer type: rounded as the server rounds, clipped to
``[lo, hi]``), ``decimal`` (rounded half away from zero to the scale, clipped to the precision), ``real``
(FLOAT/DOUBLE), ``text`` (CHAR/VARCHAR/TEXT: the server's text of the value, cut to ``arg`` characters), ``date``,
``datetime`` (fractional digits cut to ``arg``), ``null`` (no exact conversion: every value NULL, ``note`` says
why)."""

_INT = re.compile(r"\s*[+-]?\d+\s*")
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)\s*")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?")


@dataclass(frozen=True, slots=True)
class NewColumn:
    """A column of the table after the ALTER: ``name``, lake ``type`` (as declared; ``copy`` keeps the source's;
    ``None``: a type binlake does not know), the
    current column ``source`` its values come from (``None``: new), the ``conversion`` (:data:`CONVERSIONS`) with
    its parameters (``arg``: a text's length in characters or a DATETIME's fsp; ``lo``/``hi``: an integer's range,
    ``lo`` a DATETIME source's fsp for ``text``; ``fill``: a new column's value, JSON: text for a DECIMAL or a
    date), and ``note``: why its values are NULL where no exact conversion exists."""

    name: str
    type: pa.DataType | None
    source: str | None = None
    conversion: str = "copy"
    arg: int | None = None
    lo: int | None = None
    hi: int | None = None
    fill: Any = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        t = None if self.type is None else pa.schema([pa.field("t", self.type)]).serialize().to_pybytes().hex()
        return {"name": self.name, "type": t, "source": self.source, "conversion": self.conversion, "arg": self.arg,
                "lo": self.lo, "hi": self.hi, "fill": self.fill, "note": self.note}  # fmt: skip

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> NewColumn:
        t = None if v["type"] is None else pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(v["type"]))).field(0).type
        return cls(v["name"], t, v["source"], v["conversion"], v["arg"], v["lo"], v["hi"], v["fill"], v["note"])


@dataclass(frozen=True, slots=True)
class Alteration:
    """An ALTER TABLE of the keyed table ``key`` logged at ``seq``: its ``columns`` after it, in the server's
    order, its primary key ``pk`` after it and ``pk_before`` it (``query``: the statement, for the reports)."""

    key: str
    seq: int
    columns: tuple[NewColumn, ...]
    pk: tuple[str, ...]
    pk_before: tuple[str, ...]
    query: str = ""

    def resolved(self, before: pa.Schema) -> Alteration:
        """The statement against the current table's columns ``before``: a kept column takes the type it has there
        (a column the current table lacks: NULL, of its declared type), a column of no known type is text (its
        values NULL)."""
        out = []
        for c in self.columns:
            if c.conversion == "copy" and c.source is not None and c.source in before.names:
                c = replace(c, type=before.field(c.source).type)
            elif c.conversion == "copy" or c.type is None:
                c = replace(c, type=c.type or pa.string(), source=None, conversion="fill", fill=None)
            out.append(c)
        return replace(self, columns=tuple(out))

    @property
    def schema(self) -> pa.Schema:
        """The current table's columns after it (``_seq`` and ``_ts`` not included): of a :meth:`resolved` one."""
        return pa.schema([pa.field(c.name, c.type) for c in self.columns])

    def rewrites(self, before: pa.Schema) -> bool:
        """Must the table's files be written again (a column dropped, renamed or converted, or a new column filled
        with a value), or does a new schema do (columns only added, filled with NULL)?"""
        kept = [c.source for c in self.columns if c.source is not None]
        if len(kept) != len([f for f in before if f.name not in ("_seq", "_ts")]):
            return True
        for c in self.columns:
            if c.source is None:
                if c.fill is not None or c.conversion != "fill":
                    return True
            elif c.source != c.name or c.conversion != "copy" or before.field(c.source).type != c.type:
                return True
        return False


@dataclass(frozen=True, slots=True)
class AlterTask:
    """Write the live rows of ``input`` (a file of table ``key`` at ``location``, whose columns are ``before``) as a
    file with the columns ``columns`` (then ``_seq``, ``_ts``), sorted by ``pk`` as the input is.  A record of the
    tasks."""

    VERSION: ClassVar[int] = 1

    key: str
    location: str
    before: pa.Schema
    columns: tuple[NewColumn, ...]
    pk: tuple[str, ...]
    input: LiveFile
    row_group_rows: int = ROW_GROUP_ROWS

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "key": self.key, "location": self.location,
                           "before": self.before.serialize().to_pybytes().hex(),
                           "columns": [c.to_json() for c in self.columns], "pk": list(self.pk),
                           "input": self.input.to_json(), "row_group_rows": self.row_group_rows})  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> AlterTask:
        v = json.loads(text)
        check_version("an alter task", v.get("version"), cls.VERSION)
        before = pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(v["before"])))
        return cls(str(v["key"]), str(v["location"]), before, tuple(NewColumn.from_json(c) for c in v["columns"]),
                   tuple(v["pk"]), LiveFile.from_json(v["input"]), int(v["row_group_rows"]))  # fmt: skip


@dataclass(frozen=True, slots=True)
class AlterResult:
    """The file an :class:`AlterTask` wrote (none: no live row), and per column the values that could not be
    converted exactly (set NULL)."""

    VERSION: ClassVar[int] = 1

    files: tuple[DataFile, ...] = ()
    unconverted: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "files": [f.to_json() for f in self.files],
                           "unconverted": self.unconverted})  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> AlterResult:
        v = json.loads(text)
        check_version("an alter result", v.get("version"), cls.VERSION)
        return cls(
            tuple(DataFile.from_json(f) for f in v["files"]), {str(k): int(n) for k, n in v["unconverted"].items()}
        )


def alter_file(task: AlterTask) -> AlterResult:
    """Run an :class:`AlterTask`: the input a row group at a time, each converted (:func:`convert`) and written in
    its order (sorted again, whole, where a key column is converted: its order may change)."""
    schema = pa.schema([*(pa.field(c.name, c.type) for c in task.columns), task.before.field("_seq"),
                        task.before.field("_ts")])  # fmt: skip
    table = Location(task.location)
    sink = CurrentSink(table, task.key, schema, task.pk, task.row_group_rows)
    lost = task.input.deleted_rows()
    unconverted: dict[str, int] = {}
    parts: list[pa.Table] = []
    resort = any(c.name in task.pk and c.conversion != "copy" for c in task.columns)  # the key's order may change
    for part in deltalog.scan_rows(task.input.location, task.before, lost if lost.size else None):
        arrays = []
        for c in task.columns:
            values = part.column(c.source) if c.source is not None else pa.nulls(part.num_rows, c.type)
            out, failed = convert(values, c)
            arrays.append(out)
            if failed:
                unconverted[c.name] = unconverted.get(c.name, 0) + failed
        arrays += [part.column("_seq"), part.column("_ts")]
        rows = pa.Table.from_arrays(arrays, schema=schema)
        if resort:
            parts.append(rows)
        else:
            sink.write(rows)
    if resort:
        rows = pa.concat_tables(parts) if parts else schema.empty_table()
        return AlterResult(tuple(write_sorted(rows, table, task.key, task.pk, row_group_rows=task.row_group_rows)),
                           unconverted)  # fmt: skip
    done = sink.close()
    return AlterResult(() if done is None else (done,), unconverted)


def convert(values: pa.Array, col: NewColumn) -> tuple[pa.Array, int]:
    """``values`` (of the column ``col.source``) as ``col`` holds them, and how many non-null values could not be
    converted exactly (they are NULL)."""
    n = len(values)
    if col.conversion == "fill":
        return pa.array([_fill(col)] * n, col.type), 0
    if col.conversion == "null":
        return pa.nulls(n, col.type), n - values.null_count
    if col.conversion == "copy" and values.type == col.type:
        return values, 0
    fast = _vectorized(values, col)
    if fast is not None:
        return fast, 0
    one = _converter(values.type, col)
    out: list[Any] = []
    failed = 0
    for v in values.to_pylist():
        if v is None:
            out.append(None)
            continue
        got = one(v)
        failed += got is None
        out.append(got)
    return pa.array(out, col.type), failed


def _vectorized(values: pa.Array, col: NewColumn) -> pa.Array | None:
    """The common conversions a column at a time, where Arrow computes exactly what the value-by-value rules below
    do (``None``: not one of them, or a value Arrow refuses: the rules below decide)."""
    src, t, kind = values.type, col.type, col.conversion
    try:
        if kind == "text" and (pa.types.is_integer(src) or pa.types.is_string(src) or pa.types.is_decimal(src)):
            text = values.cast(pa.string())
            if pa.types.is_decimal(src) and pc.any(pc.match_substring(text, "E")).as_py():
                return None  # Arrow writes a tiny decimal with an exponent; the server never does
            return text if col.arg is None else pc.utf8_slice_codeunits(text, 0, col.arg)  # characters, as s[:n]
        if kind == "int" and pa.types.is_integer(src) and t == pa.int64():
            assert col.lo is not None and col.hi is not None
            bounded = pc.max_element_wise(values, col.lo, skip_nulls=False)  # a NULL stays NULL
            return pc.min_element_wise(bounded, col.hi, skip_nulls=False)
        if kind == "decimal" and isinstance(t, pa.Decimal128Type):
            exact = pa.types.is_integer(src) or (isinstance(src, pa.Decimal128Type) and src.scale <= t.scale)
            wide = pa.decimal128(38, t.scale)  # Arrow sizes a cast by the type, not the values: widest first
            return values.cast(wide).cast(t, safe=True) if exact else None  # too wide: ArrowInvalid, clipped below
        if kind == "real" and t == pa.float64() and (pa.types.is_floating(src) or pa.types.is_integer(src)):
            return values.cast(t, safe=True)  # an integer no double holds exactly: ArrowInvalid, rounded below
        if kind == "date" and src == pa.timestamp("us"):
            return values.cast(pa.date32())
        if kind == "datetime" and isinstance(t, pa.TimestampType) and isinstance(src, pa.TimestampType):
            same = (src.tz is None) == (t.tz is None)
            cut = 10 ** (6 - (6 if col.arg is None else col.arg))
            return pc.floor_temporal(values, multiple=cut, unit="microsecond") if same else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return None


def _fill(col: NewColumn) -> Any:
    """A new column's value (:attr:`NewColumn.fill`, JSON) as a Python value of its type."""
    v = col.fill
    if v is None:
        return None
    if pa.types.is_decimal(col.type):
        return Decimal(str(v))
    if pa.types.is_date(col.type):
        return dt.date.fromisoformat(str(v))
    if pa.types.is_timestamp(col.type):
        return dt.datetime.fromisoformat(str(v))
    return v


def _converter(source: pa.DataType, col: NewColumn) -> Callable[[Any], Any]:
    """Per value of type ``source``: its value in ``col`` (``None``: no exact conversion)."""
    kind = col.conversion
    if kind == "int":
        lo, hi = col.lo, col.hi
        assert lo is not None and hi is not None
        if pa.types.is_decimal(col.type):  # BIGINT UNSIGNED
            return lambda v: _decimal(_clip(_integer(v), lo, hi), 20, 0)
        return lambda v: _clip(_integer(v), lo, hi)
    if kind == "decimal":
        t = col.type
        assert isinstance(t, pa.Decimal128Type)
        return lambda v: _decimal(v, t.precision, t.scale)
    if kind == "real":
        single = col.type == pa.float32()
        return lambda v: _real(v, single)
    if kind == "text":
        fsp = col.lo  # a DATETIME source's fractional digits
        return lambda v: _text(v, col.arg, fsp, source)
    if kind == "date":
        return _date
    if kind == "datetime":
        fsp = col.arg if col.arg is not None else 6
        aware = isinstance(col.type, pa.TimestampType) and col.type.tz is not None
        return lambda v: _datetime(v, fsp, aware)
    return lambda v: v  # copy between types Arrow casts exactly (checked by pa.array)


def _integer(v: Any) -> int | None:
    """A number as the server stores it in an integer column (sql/field.cc ``Field_long::store``): a DECIMAL rounded
    half away from zero, a DOUBLE by ``rint`` (half to even), a string only when it is an integer's text."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, Decimal):
        return int(v.quantize(Decimal(1), ROUND_HALF_UP))
    if isinstance(v, float):
        return int(np.rint(v))
    if isinstance(v, str) and _INT.fullmatch(v):
        return int(v)
    return None


def _clip(v: int | None, lo: int, hi: int) -> int | None:
    return None if v is None else min(max(v, lo), hi)


def _decimal(v: Any, precision: int, scale: int) -> Decimal | None:
    """A number as a DECIMAL(precision, scale) holds it: rounded half away from zero to the scale, clipped to the
    largest value of the precision (what a non-strict ALTER stores; a strict one fails instead)."""
    if v is None or isinstance(v, bool) or not isinstance(v, int | Decimal | str):
        return None  # a FLOAT or DOUBLE goes through the server's own double-to-decimal: not mirrored
    if isinstance(v, str):
        if not _NUMBER.fullmatch(v):
            return None
        try:
            v = Decimal(v.strip())
        except InvalidOperation:
            return None
    d = Decimal(v).quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP)
    top = Decimal(10) ** (precision - scale) - Decimal(1).scaleb(-scale)
    return max(min(d, top), -top)


def _real(v: Any, single: bool) -> float | None:
    if isinstance(v, str):
        if not _NUMBER.fullmatch(v):
            return None
        v = v.strip()
    if isinstance(v, bool) or not isinstance(v, int | float | Decimal | str):
        return None
    f = float(v)  # correctly rounded, as strtod
    return float(np.float32(f)) if single else f


def _text(v: Any, length: int | None, fsp: int | None, source: pa.DataType) -> str | None:
    """A value as the server's text of it (``Field::val_str``), cut to ``length`` characters."""
    if isinstance(v, str):
        s = v
    elif isinstance(v, bool):
        return None
    elif isinstance(v, int):
        s = str(v)
    elif isinstance(v, Decimal):
        s = format(v, "f")  # a DECIMAL(p, s)'s text has its scale's digits: 1.50
    elif isinstance(v, dt.datetime) and source == pa.timestamp("us") and fsp is not None:
        s = v.strftime("%Y-%m-%d %H:%M:%S") + (f".{v.microsecond:06d}"[: fsp + 1] if fsp else "")
    elif isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        s = v.isoformat()
    else:
        return None  # FLOAT/DOUBLE (the server's %g-like text), bytes, TIMESTAMP (a time zone's text), sets...
    return s if length is None else s[:length]


def _date(v: Any) -> dt.date | None:
    if isinstance(v, dt.datetime):
        return None if v.tzinfo is not None else v.date()  # a TIMESTAMP's date depends on the time zone
    if isinstance(v, dt.date):
        return v
    if isinstance(v, str) and _DATE.fullmatch(v.strip()):
        try:
            return dt.date.fromisoformat(v.strip())
        except ValueError:
            return None
    return None


def _datetime(v: Any, fsp: int, aware: bool) -> dt.datetime | None:
    """A value as DATETIME(fsp) (``aware``: TIMESTAMP(fsp), UTC) holds it: MariaDB cuts fractional digits (no
    ``TIME_ROUND_FRACTIONAL``); between DATETIME and TIMESTAMP the server converts in the session's time zone,
    which is not mirrored."""
    if isinstance(v, dt.datetime):
        if (v.tzinfo is not None) != aware:
            return None
        out = v
    elif aware:
        return None
    elif isinstance(v, dt.date):
        out = dt.datetime(v.year, v.month, v.day)
    elif isinstance(v, str) and _DATETIME.fullmatch(v.strip()):
        try:
            out = dt.datetime.fromisoformat(v.strip())
        except ValueError:
            return None
    else:
        return None
    cut = 10 ** (6 - fsp)
    return out.replace(microsecond=out.microsecond // cut * cut)
