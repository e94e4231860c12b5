"""The data files of a current-state table: sorted by the primary key, with Delta statistics, in row groups small
enough that finding a key reads little.

* :class:`CurrentSink` writes one file a row group of :data:`ROW_GROUP_ROWS` rows at a time (zstd, no dictionary
  encoding: as the change tables' files) and, closed, gives its :class:`~binlake.lake.records.DataFile` with the
  Delta statistics of the key columns and ``_seq`` (:func:`delta_stats`, made from the file's own Parquet footer);
  :func:`write_sorted` sorts rows by the key and writes them as files of at most :data:`FILE_ROWS` rows.
* :func:`key_bounds` reads the bounds of the first key column back from an ``add`` action's statistics (``None``
  where the file has none: a file written by an older binlake, which every lookup then opens).

Sorting is Arrow's order (integers and decimals by value, strings by code point, binary by byte), which may differ
from the server's collation; nothing depends on it but how few files and row groups a key's lookup opens.

Statistics follow PROTOCOL.md, "Per-file Statistics": ``numRecords``, and ``minValues``/``maxValues``/
``nullCount`` of the columns whose JSON form is exact: integers, decimals (JSON numbers written digit for digit;
delta-rs reads decimal(38, 0) ones exactly), strings of up to :data:`_MAX_STAT_CHARS` characters, dates, and
timestamps widened to whole milliseconds (the protocol's form): min rounded down, max up.  A file's bounds are
then true bounds for every reader that skips files by them (deltalake, polars, DuckDB).

Example::

    files = write_sorted(rows, lake.current("db/t"), "db/t", ["id"])
    lo, hi = key_bounds(files[0].stats, rows.schema.field("id"))
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.lake.records import DataFile
from binlake.storage import Location, writing

__all__ = [
    "FILE_ROWS",
    "ROW_GROUP_ROWS",
    "CurrentSink",
    "decode_values",
    "delta_stats",
    "encode_values",
    "is_sorted",
    "key_bounds",
    "sort_keys",
    "sorted_by",
    "sorted_tags",
    "stats_columns",
    "write_sorted",
]

#: Rows per file a merge writes (a batch's new rows of a table in one key range; a first load's files): about 15 MB
#: of the benchmark's five columns, a size every reader handles well, with a footer of a few KiB.
FILE_ROWS = 1 << 20
#: Rows per row group: a lookup of a key reads the key columns of the row groups whose statistics hold it, and
#: every lookup that opens a file parses its footer (a row group's statistics of every column).  Measured on 10 M
#: rows in files of 1 M (benchmarks/current.py, one batch of 10 and one of 10,000 random keys, medians of 5 runs):
#: 4 K rows 0.049 / 0.57 s (a footer of 177 KiB), 16 K 0.031 / 0.28 s (46 KiB), 64 K 0.021 / 0.15 s (7 KiB),
#: 128 K 0.034 / 0.16 s.
ROW_GROUP_ROWS = 1 << 16
_MAX_STAT_CHARS = 64  # longer strings get no bounds (other writers truncate theirs to 32 characters)


def stats_columns(schema: pa.Schema, pk: Sequence[str]) -> list[str]:
    """The columns a current-state file has statistics for: the key columns and ``_seq``."""
    return [n for n in (*pk, "_seq") if n in schema.names]


def sort_keys(pk: Sequence[str]) -> list[tuple[str, str]]:
    return [(c, "ascending") for c in pk]


SORTED_KEY = "binlake.sortedBy"
"""The tag of a current-state file's ``add`` action (Delta's ``tags``, metadata about a data file) present when
the file's rows are in ascending order of the key it names (its columns, a JSON list), each key once, none null
(:attr:`CurrentSink.in_order`): what Iceberg says with a data file's ``sort_order_id``.  A lookup trusts it
(:func:`sorted_by`): in such a file an integer key whose bounds hold as many integers as the file rows is found at
row ``key - least`` without opening the file.  Files without it (a lake of an older binlake, a file of another
writer) are searched as they are."""


def sorted_tags(pk: Sequence[str]) -> dict[str, str]:
    """The tags of a current-state file sorted by the key ``pk`` (:data:`SORTED_KEY`).

    >>> sorted_tags(["id", "a,b"])
    {'binlake.sortedBy': '["id", "a,b"]'}
    """
    return {SORTED_KEY: json.dumps(list(pk))}


def sorted_by(tags: Mapping[str, str | None] | None) -> list[str] | None:
    """The key a current-state file's ``add`` action ``tags`` say its rows are sorted by, each key once
    (:data:`SORTED_KEY`); ``None``: no such promise.

    >>> sorted_by(sorted_tags(["id"])), sorted_by(None), sorted_by({SORTED_KEY: "id"})
    (['id'], None, None)
    """
    value = (tags or {}).get(SORTED_KEY)
    try:
        key = json.loads(value) if value else None
    except ValueError:
        return None
    return [str(c) for c in key] if isinstance(key, list) and key else None


def key_encodings(schema: pa.Schema, pk: Sequence[str]) -> dict[str, str]:
    """The Parquet encodings of a current-state file's integer key columns: ``DELTA_BINARY_PACKED`` (the format's
    encoding for sorted integers, read by every reader of the lake: pyarrow, arrow-rs in deltalake, polars, DuckDB,
    Spark 3.3+).  Down a file sorted by the key, an AUTO_INCREMENT key packs into a few bits a row (a 1 M-row INT
    key: 6 KiB against 2.6 MiB plain and zstd), and a lookup decodes it in half the time; the other columns stay
    plain, zstd.

    >>> key_encodings(pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.int32())]), ["id", "k"])
    {'id': 'DELTA_BINARY_PACKED'}
    """
    return {c: "DELTA_BINARY_PACKED" for c in pk if c in schema.names and pa.types.is_integer(schema.field(c).type)}


def is_sorted(rows: pa.Table, pk: Sequence[str]) -> bool:
    """Are ``rows`` in ascending order of the key ``pk`` (each key once, none null)?

    >>> is_sorted(pa.table({"a": [1, 1, 2], "b": ["x", "y", "a"]}), ["a", "b"])
    True
    >>> [is_sorted(pa.table({"a": a}), ["a"]) for a in ([1, 1], [2, 1], [1, None])]
    [False, False, False]
    """
    n = rows.num_rows
    if any(rows[c].null_count for c in pk):
        return False
    if n < 2:
        return True
    later: pa.Array | None = None  # per adjacent pair: is the second row after the first, on the columns so far
    equal: pa.Array | None = None
    for c in pk:
        a, b = rows[c].slice(0, n - 1), rows[c].slice(1)
        gt, eq = pc.greater(b, a), pc.equal(b, a)
        later = gt if later is None else pc.or_(later, pc.and_(equal, gt))
        equal = eq if equal is None else pc.and_(equal, eq)
    return bool(pc.all(later).as_py()) if later is not None else True


# -- statistics ---------------------------------------------------------------------------------------------------


def _ms(value: dt.datetime, up: bool) -> str:
    """A timestamp as the protocol writes one (UTC, milliseconds), rounded down, or up (``up``)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    extra = value.microsecond % 1000
    value -= dt.timedelta(microseconds=extra)
    if up and extra:
        value += dt.timedelta(milliseconds=1)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _json_value(value: Any, t: pa.DataType, up: bool) -> str | None:
    """``value`` (a Parquet statistic of a column of type ``t``) as exact JSON, or ``None`` where it has none."""
    if pa.types.is_integer(t):
        return str(int(value))
    if pa.types.is_decimal(t) and isinstance(value, Decimal) and value.is_finite():
        return format(value, "f")
    if (pa.types.is_string(t) or pa.types.is_large_string(t)) and isinstance(value, str):
        return json.dumps(value) if len(value) <= _MAX_STAT_CHARS else None
    if pa.types.is_date32(t) and isinstance(value, dt.date):
        return json.dumps(value.isoformat())
    if pa.types.is_timestamp(t) and isinstance(value, dt.datetime):
        try:
            return json.dumps(_ms(value, up))
        except OverflowError:  # 9999-12-31 23:59:59.999xxx has no millisecond above it: no bound
            return None
    return None


def delta_stats(meta: pq.FileMetaData, schema: pa.Schema, columns: Sequence[str]) -> str:
    """The Delta statistics of a Parquet file (its footer ``meta``) for ``columns`` of ``schema``: exact bounds
    from its row groups' statistics where every row group has them (module docstring)."""
    where = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    lows: list[str] = []
    highs: list[str] = []
    nulls: list[str] = []
    for name in columns:
        i = where.get(name)
        if i is None:
            continue
        lo: Any = None
        hi: Any = None
        null_count = 0
        bounded = counted = True
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            s = group.column(i).statistics
            if s is None:
                bounded = counted = False
                break
            counted = counted and s.has_null_count
            null_count += s.null_count if s.has_null_count else 0
            if s.has_min_max:
                lo = s.min if lo is None or s.min < lo else lo
                hi = s.max if hi is None or s.max > hi else hi
            elif not (s.has_null_count and s.null_count == group.num_rows):
                bounded = False  # a row group with values but no bounds
        key = json.dumps(name)
        t = schema.field(name).type
        if bounded and lo is not None:
            low, high = _json_value(lo, t, False), _json_value(hi, t, True)
            if low is not None and high is not None:
                lows.append(f"{key}:{low}")
                highs.append(f"{key}:{high}")
        if counted:
            nulls.append(f"{key}:{null_count}")
    return (
        f'{{"numRecords":{meta.num_rows},"minValues":{{{",".join(lows)}}},"maxValues":{{{",".join(highs)}}},'
        f'"nullCount":{{{",".join(nulls)}}}}}'
    )


def _bound(value: Any, t: pa.DataType, up: bool) -> pa.Scalar | None:
    """A statistic read from the log as a scalar of type ``t`` (``up``: a max, widened where writers round)."""
    try:
        if pa.types.is_integer(t) and isinstance(value, int) and not isinstance(value, bool):
            return pa.scalar(value, t)
        if pa.types.is_decimal(t) and isinstance(value, int | Decimal) and not isinstance(value, bool):
            return pa.scalar(Decimal(value), t)
        if (pa.types.is_string(t) or pa.types.is_large_string(t)) and isinstance(value, str):
            if up and len(value) >= 32:  # maybe a prefix (other writers truncate): no upper bound known
                return None
            return pa.scalar(value, t)
        if pa.types.is_date32(t) and isinstance(value, str):
            return pa.scalar(dt.date.fromisoformat(value[:10]), t)
        if pa.types.is_timestamp(t) and isinstance(value, str):
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            when = when.astimezone(dt.UTC) if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
            if up:
                when += dt.timedelta(milliseconds=1)  # a max truncated to milliseconds
            if t.tz is None:
                when = when.replace(tzinfo=None)
            return pa.scalar(when, t)
    except (ValueError, TypeError, OverflowError, pa.ArrowException):
        return None
    return None


def key_bounds(stats: str | None, field: pa.Field) -> tuple[pa.Scalar, pa.Scalar] | None:
    """The (min, max) of ``field`` in a file's Delta statistics ``stats`` as scalars of its type, or ``None`` when
    they are not there (or not of a form binlake reads exactly): every key may then be in the file."""
    if not stats:
        return None
    try:
        v = json.loads(stats, parse_float=Decimal)
    except ValueError:
        return None
    lo = (v.get("minValues") or {}).get(field.name)
    hi = (v.get("maxValues") or {}).get(field.name)
    if lo is None or hi is None:
        return None
    low, high = _bound(lo, field.type, False), _bound(hi, field.type, True)
    return None if low is None or high is None else (low, high)


# -- typed values across a task boundary -------------------------------------------------------------------------


def encode_values(values: pa.Array) -> str:
    """Values of any Arrow type as text (the hex of an Arrow IPC stream): key bounds in task records."""
    batch = pa.record_batch([values], names=["v"])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as w:
        w.write_batch(batch)
    return bytes(sink.getvalue()).hex()


def decode_values(text: str) -> pa.Array:
    """What :func:`encode_values` wrote."""
    table = pa.ipc.open_stream(pa.py_buffer(bytes.fromhex(text))).read_all()
    return table.column(0).combine_chunks()


# -- writing ------------------------------------------------------------------------------------------------------


class CurrentSink:
    """A new current-state file ``part-<uuid>.parquet`` in the table folder ``table``: rows written in key order
    become row groups of ``row_group_rows`` rows; :attr:`in_order` says whether they came in key order (checked as
    they come: a snapshot's chunk arrives in the server's collation order)."""

    def __init__(
        self, table: Location, key: str, schema: pa.Schema, pk: Sequence[str], row_group_rows: int = ROW_GROUP_ROWS
    ) -> None:
        self.table, self.key, self.schema, self.pk = table, key, schema, list(pk)
        self.row_group_rows = row_group_rows
        self.name = f"part-{uuid.uuid4().hex}.parquet"
        self.rows = 0
        self.in_order = True
        self._last: list[Any] | None = None
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._stream: Any = None
        self._writer: pq.ParquetWriter | None = None

    def write(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        if self.in_order:
            first = [rows[c][0].as_py() for c in self.pk]
            self.in_order = is_sorted(rows, self.pk) and (self._last is None or self._last < first)
            self._last = [rows[c][-1].as_py() for c in self.pk]
        self._buffer.append(rows)
        self._buffered += rows.num_rows
        self.rows += rows.num_rows
        while self._buffered >= self.row_group_rows:
            self._flush(self.row_group_rows)

    def _flush(self, n: int) -> None:
        table = pa.concat_tables(self._buffer)
        with writing(self.table / self.name):
            if self._writer is None:
                self._stream = (self.table / self.name).open_output()
                encodings = key_encodings(self.schema, self.pk) or None
                self._writer = pq.ParquetWriter(
                    self._stream, self.schema, compression="zstd", use_dictionary=False, column_encoding=encodings
                )
            self._writer.write_table(table.slice(0, n), row_group_size=n)
        rest = table.slice(n)
        self._buffer, self._buffered = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> DataFile | None:
        """Finish the file; what to commit (``None`` when no row was written)."""
        if self._buffered:
            self._flush(self._buffered)
        if self._writer is None:
            return None
        with writing(self.table / self.name):
            self._writer.close()
            meta = self._writer.writer.metadata
            self._writer = None
            size = self._stream.tell()
            self._stream.close()
        stats = delta_stats(meta, self.schema, stats_columns(self.schema, self.pk))
        schema = self.schema.serialize().to_pybytes()
        tags = sorted_tags(self.pk) if self.in_order else None
        return DataFile(self.key, self.name, size, self.rows, int(time.time() * 1000), schema, stats, tags)


def write_sorted(
    rows: pa.Table,
    table: Location,
    key: str,
    pk: Sequence[str],
    *,
    file_rows: int = FILE_ROWS,
    row_group_rows: int = ROW_GROUP_ROWS,
    presorted: bool = False,
) -> list[DataFile]:
    """``rows`` sorted by ``pk`` (unless ``presorted``) as new files of at most ``file_rows`` rows each in the table
    folder ``table``: consecutive key ranges, so the files do not overlap."""
    if not presorted and rows.num_rows > 1:
        rows = rows.sort_by(sort_keys(pk))
    out: list[DataFile] = []
    for at in range(0, rows.num_rows, file_rows):
        sink = CurrentSink(table, key, rows.schema, pk, row_group_rows)
        sink.write(rows.slice(at, file_rows))
        done = sink.close()
        if done is not None:
            out.append(done)
    return out
