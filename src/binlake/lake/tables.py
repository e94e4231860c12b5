"""The lake's own tables and the columns every change table has, defined once for the lake, the ingest and readers.

Example::

    changes_schema = pa.schema([*data_fields, *(pa.field(n, t) for n, t in META)])
"""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = [
    "COLUMN",
    "EVENTS",
    "EVENTS_DIR",
    "HISTORY",
    "HISTORY_DIR",
    "META",
    "META_DICTIONARY",
    "META_NAMES",
    "OWN_TABLES",
    "SEQ",
    "SKIPS",
    "SKIPS_DIR",
    "UTC_TS",
    "lake_name",
    "meta_columns",
    "seq_array",
]

UTC_TS = pa.timestamp("us", tz="UTC")
SEQ = pa.decimal128(38, 0)  # binlake.ingest.extract: file_seq * 10**20 + event_pos * 10**10 + row

_LOW64 = (1 << 64) - 1


def seq_array(seq0: np.ndarray[Any, Any], ci: np.ndarray[Any, Any], row: np.ndarray[Any, Any]) -> pa.Array:
    """``_seq`` values ``seq0[ci] + row`` as a :data:`SEQ` array (``seq0``: Python ints of up to 127 bits, one per
    rows event or snapshot chunk; ``ci``: each row's; ``row``: its index there), built as two 64-bit words per
    value (a ``Decimal`` per value costs ~2 µs).

    >>> seq_array(np.array([10**30], dtype=object), np.zeros(2, np.int64), np.arange(2)).to_pylist()
    [Decimal('1000000000000000000000000000000'), Decimal('1000000000000000000000000000001')]
    """
    lo0 = np.array([v & _LOW64 for v in seq0], np.uint64)[ci]
    hi0 = np.array([v >> 64 for v in seq0], np.uint64)[ci]
    words = np.empty((len(ci), 2), np.uint64)
    words[:, 0] = lo0 + row.astype(np.uint64)
    words[:, 1] = hi0 + (words[:, 0] < lo0)  # the carry
    if sys.byteorder != "little":  # Arrow's decimal128 is two little-endian words, low first
        return pa.array([Decimal(int(seq0[c]) + int(r)) for c, r in zip(ci, row, strict=True)], SEQ)
    return pa.Array.from_buffers(SEQ, len(ci), [None, pa.py_buffer(words)])


META = [
    ("_op", pa.string()),
    ("_file", pa.string()),
    ("_pos", pa.int64()),
    ("_row", pa.int32()),
    ("_gtid", pa.string()),
    ("_ts", UTC_TS),
    ("_seq", SEQ),
    ("_rolled_back", pa.bool_()),
    ("_xid", pa.string()),
    ("_absent", pa.list_(pa.string())),
]
"""The columns every change table has after the table's own, in this order: ``_op`` (``insert``, ``update_preimage``,
``update_postimage``, ``delete``; ``read`` for a snapshot's row), ``_file``, ``_pos`` (the rows event's, or its
TRANSACTION_PAYLOAD's), ``_row`` (the row's index in its event), ``_gtid``, ``_ts`` (the transaction's commit time),
``_seq`` (orders every change in binlog order across files: binlake.ingest.extract), ``_rolled_back`` (true: its
transaction ended in ROLLBACK or XA ROLLBACK; null: XA PREPAREd, its outcome not seen yet; current state applies
neither), ``_xid`` (the XID of an XA PREPAREd transaction), ``_absent`` (the columns the row image does not hold,
``binlog_row_image=MINIMAL/NOBLOB``; null when it holds all: a column in ``_absent`` is unknown, a null column not in
it is SQL NULL)."""
META_NAMES = {n for n, _ in META}


def lake_name(name: str) -> str:
    """A table's column as the lake names it: as the table does, but ``NAME__col`` for one of :data:`META`'s names
    (which a change table and a current table hold beside the table's own)."""
    return f"{name}__col" if name in META_NAMES else name


# the META columns with few distinct values, written with Parquet dictionaries (not _gtid: one per transaction, ~50
# rows each in the benchmark, and a dictionary of them cost 30 % of the Parquet writing for no smaller file once
# zstd has run)
META_DICTIONARY = ["_op", "_file", "_xid"]


def meta_columns(
    n: int,
    *,
    op: object,
    file: object,
    pos: object,
    row: object,
    gtid: object,
    ts: object,
    seq: object,
    rolled_back: object,
    xid: object,
    absent: object = None,
) -> list[pa.Array]:
    """The :data:`META` columns of ``n`` change rows, in their order and types: the one place change rows get them
    (the ingest's tasks, vectorised per rows event, and the snapshot's chunks).  Each is an array of ``n`` values
    (cast to the column's type where it has another) or one value for every row (``None``: null; ``absent``
    ``None``: every image holds every column).

    >>> cols = meta_columns(2, op="read", file="b.000001", pos=4, row=pa.array([0, 1]), gtid=None, ts=0, seq=7,
    ...                     rolled_back=False, xid=None)
    >>> [c.type for c in cols][:4], cols[3].to_pylist(), cols[6].to_pylist(), cols[9].null_count
    ([DataType(string), DataType(string), DataType(int64), DataType(int32)], [0, 1], [Decimal('7'), Decimal('7')], 2)
    """
    out: list[pa.Array] = []
    for (name, t), value in zip(META, (op, file, pos, row, gtid, ts, seq, rolled_back, xid, absent), strict=True):
        if isinstance(value, pa.Array):
            if len(value) != n:
                raise ValueError(f"{name}: {len(value)} values for {n} rows")
            out.append(value if value.type == t else value.cast(t))
        elif value is None:
            out.append(pa.nulls(n, t))
        else:
            out.append(pa.repeat(pa.scalar(value, t), n))
    return out


EVENTS_DIR = "_events"
HISTORY_DIR = "_schema_history"
SKIPS_DIR = "_skips"
OWN_TABLES = {EVENTS_DIR: "events", HISTORY_DIR: "schema_history", SKIPS_DIR: "skips"}  # folder -> kind

EVENTS = pa.schema(
    [
        ("file", pa.string()),
        ("file_seq", pa.int64()),
        ("pos", pa.int64()),
        ("payload_offset", pa.int64()),
        ("end_pos", pa.int64()),
        ("type", pa.string()),
        ("type_code", pa.int32()),
        ("server_id", pa.int64()),
        ("timestamp", UTC_TS),
        ("flags", pa.int32()),
        ("gtid", pa.string()),
        ("trx_pos", pa.int64()),
        ("trx_seq", pa.int32()),
        ("summary", pa.string()),
    ]
)
"""The ``_events`` table (and the data source's ``events`` view): one row per event."""

COLUMN = pa.struct(
    [
        ("index", pa.int32()),
        ("name", pa.string()),
        ("type", pa.string()),
        ("type_code", pa.int32()),
        ("nullable", pa.bool_()),
        ("unsigned", pa.bool_()),
        ("charset", pa.int32()),
        ("length", pa.int64()),
        ("precision", pa.int32()),
        ("scale", pa.int32()),
        ("fsp", pa.int32()),
        ("bits", pa.int32()),
        ("enum_values", pa.list_(pa.string())),
        ("set_values", pa.list_(pa.string())),
        ("geometry_type", pa.int32()),
        ("vector_dimension", pa.int32()),
        ("pk_position", pa.int32()),
        ("visible", pa.bool_()),
    ]
)
"""One column of a table map, as ``_schema_history`` and the ``tablemaps`` view describe it."""

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
"""The ``_schema_history`` table: every distinct table map, with the lake columns it lands in."""

SKIPS = pa.schema(
    [
        ("file", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("reason", pa.string()),
        ("events_lost", pa.int64()),
        ("resynced", pa.bool_()),
        ("transaction_start", pa.int64()),
        ("batch", pa.int64()),
    ]
)
"""The ``_skips`` table: what ``--on-error skip-event|skip-transaction`` skipped."""
