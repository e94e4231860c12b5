"""binlake: decode MySQL and MariaDB binary logs exactly, explain them, land them in a lake.

The names exported here are the stable surface (the README's "From Python" documents them); the modules behind
them (``binlake.reader``, ``binlake.events.rows``, ...) may change between versions.

- reading: :func:`read_events` (files, and files still being written), :class:`Decoder` (sans-IO: bytes from
  anywhere in, events out), :class:`DecodeOptions`, and for MariaDB encrypted binlogs :func:`load_key_file` and
  :func:`mariadb_decryptor` (a :data:`Decryptor`);
- events: :class:`Event` with its :class:`EventHeader` and :class:`EventType`, one frozen dataclass per event type
  (:class:`RowsEvent`, :class:`TableMapEvent`, :class:`QueryEvent`, :class:`GtidEvent`, :class:`MariaGtidEvent`,
  ...; :class:`RawEvent` for a type binlake does not know);
- rows: :data:`Row` (one image, a value per column), :data:`ABSENT` (a column the image does not carry, which is
  not NULL), :class:`Column` and :class:`ColumnType` (a table map's columns);
- errors: :class:`BinlogError`, the root of every error binlake raises about its input, and its children
  (:class:`ReplicationError` and its children for a server read over a replication connection).

``import binlake`` is cheap: each name loads its module on first use.

Example::

    import binlake

    for ev in binlake.read_events("binlog.000042"):
        if isinstance(ev, binlake.RowsEvent):
            for before, after in ev.rows():
                print(ev.table_map.table, before, after)
"""

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # the names of _PUBLIC and __all__ (tests/test_public_api.py checks), for type checkers and IDEs
    from binlake.coltypes import Column, ColumnType
    from binlake.crypto import load_key_file, mariadb_decryptor
    from binlake.decoder import Decoder, Decryptor
    from binlake.errors import (
        AccessDeniedError,
        BinlogError,
        BinlogHistoryError,
        BinlogPurgedError,
        ChecksumError,
        ConnectionLostError,
        DecompressionError,
        EncryptedError,
        MalformedError,
        ReplicationError,
        ReplicationTimeoutError,
        TableChangedError,
        TruncatedError,
        UnknownEventError,
        UnsupportedError,
    )
    from binlake.events.base import Event, EventHeader, EventType, RawEvent
    from binlake.events.context import DecodeOptions
    from binlake.events.control import (
        HeartbeatEvent,
        IgnorableEvent,
        IncidentEvent,
        IntvarEvent,
        RandEvent,
        RotateEvent,
        RowsQueryEvent,
        StopEvent,
        TransactionContextEvent,
        UserVarEvent,
        ViewChangeEvent,
        XaPrepareEvent,
        XidEvent,
    )
    from binlake.events.format import FormatDescriptionEvent, PrototypeEvent, StartV3Event
    from binlake.events.gtid import (
        BinlogCheckpointEvent,
        GtidEvent,
        GtidListEvent,
        GtidSet,
        MariaGtid,
        MariaGtidEvent,
        PreviousGtidsEvent,
    )
    from binlake.events.load import ExecuteLoadQueryEvent, FileBlockEvent, FileIdEvent, LoadEvent
    from binlake.events.mariadb import AnnotateRowsEvent, StartEncryptionEvent
    from binlake.events.payload import TransactionPayloadEvent
    from binlake.events.query import QueryEvent
    from binlake.events.rows import RowsEvent
    from binlake.events.table_map import TableMapEvent
    from binlake.reader import read_events
    from binlake.values.row import ABSENT, Row

# Each public name and the module that defines it, imported on first use (module __getattr__, PEP 562).
_PUBLIC: dict[str, str] = {
    **dict.fromkeys(["read_events"], "binlake.reader"),
    **dict.fromkeys(["Decoder", "Decryptor"], "binlake.decoder"),
    **dict.fromkeys(["DecodeOptions"], "binlake.events.context"),
    **dict.fromkeys(["load_key_file", "mariadb_decryptor"], "binlake.crypto"),
    **dict.fromkeys(["ABSENT", "Row"], "binlake.values.row"),
    **dict.fromkeys(["Column", "ColumnType"], "binlake.coltypes"),
    **dict.fromkeys(
        [
            "AccessDeniedError",
            "BinlogError",
            "BinlogHistoryError",
            "BinlogPurgedError",
            "ChecksumError",
            "ConnectionLostError",
            "DecompressionError",
            "EncryptedError",
            "MalformedError",
            "ReplicationError",
            "ReplicationTimeoutError",
            "TableChangedError",
            "TruncatedError",
            "UnknownEventError",
            "UnsupportedError",
        ],
        "binlake.errors",
    ),
    **dict.fromkeys(["Event", "EventHeader", "EventType", "RawEvent"], "binlake.events.base"),
    **dict.fromkeys(
        [
            "HeartbeatEvent",
            "IgnorableEvent",
            "IncidentEvent",
            "IntvarEvent",
            "RandEvent",
            "RotateEvent",
            "RowsQueryEvent",
            "StopEvent",
            "TransactionContextEvent",
            "UserVarEvent",
            "ViewChangeEvent",
            "XaPrepareEvent",
            "XidEvent",
        ],
        "binlake.events.control",
    ),
    **dict.fromkeys(["FormatDescriptionEvent", "PrototypeEvent", "StartV3Event"], "binlake.events.format"),
    **dict.fromkeys(
        [
            "BinlogCheckpointEvent",
            "GtidEvent",
            "GtidListEvent",
            "GtidSet",
            "MariaGtid",
            "MariaGtidEvent",
            "PreviousGtidsEvent",
        ],
        "binlake.events.gtid",
    ),
    **dict.fromkeys(["ExecuteLoadQueryEvent", "FileBlockEvent", "FileIdEvent", "LoadEvent"], "binlake.events.load"),
    **dict.fromkeys(["AnnotateRowsEvent", "StartEncryptionEvent"], "binlake.events.mariadb"),
    **dict.fromkeys(["TransactionPayloadEvent"], "binlake.events.payload"),
    **dict.fromkeys(["QueryEvent"], "binlake.events.query"),
    **dict.fromkeys(["RowsEvent"], "binlake.events.rows"),
    **dict.fromkeys(["TableMapEvent"], "binlake.events.table_map"),
}

__all__ = [
    "ABSENT",
    "AccessDeniedError",
    "AnnotateRowsEvent",
    "BinlogCheckpointEvent",
    "BinlogError",
    "BinlogHistoryError",
    "BinlogPurgedError",
    "ChecksumError",
    "Column",
    "ColumnType",
    "ConnectionLostError",
    "DecodeOptions",
    "Decoder",
    "DecompressionError",
    "Decryptor",
    "EncryptedError",
    "Event",
    "EventHeader",
    "EventType",
    "ExecuteLoadQueryEvent",
    "FileBlockEvent",
    "FileIdEvent",
    "FormatDescriptionEvent",
    "GtidEvent",
    "GtidListEvent",
    "GtidSet",
    "HeartbeatEvent",
    "IgnorableEvent",
    "IncidentEvent",
    "IntvarEvent",
    "LoadEvent",
    "MalformedError",
    "MariaGtid",
    "MariaGtidEvent",
    "PreviousGtidsEvent",
    "PrototypeEvent",
    "QueryEvent",
    "RandEvent",
    "RawEvent",
    "ReplicationError",
    "ReplicationTimeoutError",
    "RotateEvent",
    "Row",
    "RowsEvent",
    "RowsQueryEvent",
    "StartEncryptionEvent",
    "StartV3Event",
    "StopEvent",
    "TableChangedError",
    "TableMapEvent",
    "TransactionContextEvent",
    "TransactionPayloadEvent",
    "TruncatedError",
    "UnknownEventError",
    "UnsupportedError",
    "UserVarEvent",
    "ViewChangeEvent",
    "XaPrepareEvent",
    "XidEvent",
    "load_key_file",
    "mariadb_decryptor",
    "read_events",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use and kept here."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'binlake' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
