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
    "EVENTS_DIR",
    "HISTORY_DIR",
    "META",
    "META_NAMES",
    "OWN_TABLES",
    "SEQ",
    "SKIPS",
    "SKIPS_DIR",
    "UTC_TS",
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
META_NAMES = {n for n, _ in META}

EVENTS_DIR = "_events"
HISTORY_DIR = "_schema_history"
SKIPS_DIR = "_skips"
OWN_TABLES = {EVENTS_DIR: "events", HISTORY_DIR: "schema_history", SKIPS_DIR: "skips"}  # folder -> kind

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
