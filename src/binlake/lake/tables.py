"""The lake's own tables and the columns every change table has, defined once for the lake, the ingest and readers.

Example::

    changes_schema = pa.schema([*data_fields, *(pa.field(n, t) for n, t in META)])
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["EVENTS_DIR", "HISTORY_DIR", "META", "META_NAMES", "OWN_TABLES", "SEQ", "SKIPS", "SKIPS_DIR", "UTC_TS"]

UTC_TS = pa.timestamp("us", tz="UTC")
SEQ = pa.decimal128(38, 0)  # binlake.spark.extract: file_seq * 10**20 + event_pos * 10**10 + row

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
