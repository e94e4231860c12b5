"""binlake: decode MySQL and MariaDB binary logs exactly, explain them, land them in a lake.

The names exported here are the stable surface (``docs/python.md`` documents them); the modules behind
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

from binlake.version import __version__ as __version__

if TYPE_CHECKING:  # the public names, one import each: the only list of them (see __getattr__)
    from binlake.coltypes import Column as Column
    from binlake.coltypes import ColumnType as ColumnType
    from binlake.crypto import load_key_file as load_key_file
    from binlake.crypto import mariadb_decryptor as mariadb_decryptor
    from binlake.decoder import Decryptor as Decryptor
    from binlake.errors import AccessDeniedError as AccessDeniedError
    from binlake.errors import BinlogError as BinlogError
    from binlake.errors import BinlogHistoryError as BinlogHistoryError
    from binlake.errors import BinlogPurgedError as BinlogPurgedError
    from binlake.errors import ChecksumError as ChecksumError
    from binlake.errors import ConnectionLostError as ConnectionLostError
    from binlake.errors import DecompressionError as DecompressionError
    from binlake.errors import EncryptedError as EncryptedError
    from binlake.errors import MalformedError as MalformedError
    from binlake.errors import ReplicationError as ReplicationError
    from binlake.errors import ReplicationTimeoutError as ReplicationTimeoutError
    from binlake.errors import TableChangedError as TableChangedError
    from binlake.errors import TruncatedError as TruncatedError
    from binlake.errors import UnknownEventError as UnknownEventError
    from binlake.errors import UnsupportedError as UnsupportedError
    from binlake.events.base import Event as Event
    from binlake.events.base import EventHeader as EventHeader
    from binlake.events.base import EventType as EventType
    from binlake.events.base import RawEvent as RawEvent
    from binlake.events.context import DecodeOptions as DecodeOptions
    from binlake.events.control import HeartbeatEvent as HeartbeatEvent
    from binlake.events.control import IgnorableEvent as IgnorableEvent
    from binlake.events.control import IncidentEvent as IncidentEvent
    from binlake.events.control import IntvarEvent as IntvarEvent
    from binlake.events.control import RandEvent as RandEvent
    from binlake.events.control import RotateEvent as RotateEvent
    from binlake.events.control import RowsQueryEvent as RowsQueryEvent
    from binlake.events.control import StopEvent as StopEvent
    from binlake.events.control import TransactionContextEvent as TransactionContextEvent
    from binlake.events.control import UserVarEvent as UserVarEvent
    from binlake.events.control import ViewChangeEvent as ViewChangeEvent
    from binlake.events.control import XaPrepareEvent as XaPrepareEvent
    from binlake.events.control import XidEvent as XidEvent
    from binlake.events.format import FormatDescriptionEvent as FormatDescriptionEvent
    from binlake.events.format import PrototypeEvent as PrototypeEvent
    from binlake.events.format import StartV3Event as StartV3Event
    from binlake.events.gtid import BinlogCheckpointEvent as BinlogCheckpointEvent
    from binlake.events.gtid import GtidEvent as GtidEvent
    from binlake.events.gtid import GtidListEvent as GtidListEvent
    from binlake.events.gtid import GtidSet as GtidSet
    from binlake.events.gtid import MariaGtid as MariaGtid
    from binlake.events.gtid import MariaGtidEvent as MariaGtidEvent
    from binlake.events.gtid import PreviousGtidsEvent as PreviousGtidsEvent
    from binlake.events.load import ExecuteLoadQueryEvent as ExecuteLoadQueryEvent
    from binlake.events.load import FileBlockEvent as FileBlockEvent
    from binlake.events.load import FileIdEvent as FileIdEvent
    from binlake.events.load import LoadEvent as LoadEvent
    from binlake.events.mariadb import AnnotateRowsEvent as AnnotateRowsEvent
    from binlake.events.mariadb import StartEncryptionEvent as StartEncryptionEvent
    from binlake.events.payload import TransactionPayloadEvent as TransactionPayloadEvent
    from binlake.events.query import QueryEvent as QueryEvent
    from binlake.events.rows import RowsEvent as RowsEvent
    from binlake.events.table_map import TableMapEvent as TableMapEvent
    from binlake.reader import Decoder as Decoder
    from binlake.reader import read_events as read_events
    from binlake.values.row import ABSENT as ABSENT
    from binlake.values.row import Row as Row


_PUBLIC: dict[str, str] = {}


def _public() -> dict[str, str]:
    """Each public name and the module it loads from: read on first use from the ``TYPE_CHECKING`` imports above,
    which type checkers read too, so the names are listed once (lazy_loader's ``attach_stub`` reads a stub so)."""
    if not _PUBLIC:
        import ast

        with open(__file__, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        checking = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
        _PUBLIC.update(
            (a.name, n.module) for n in checking.body if isinstance(n, ast.ImportFrom) and n.module for a in n.names
        )
    return _PUBLIC


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use and kept here; ``__all__`` (every public name)."""
    if name == "__all__":
        return sorted(_public())
    module = _public().get(name)
    if module is None:
        raise AttributeError(f"module 'binlake' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_public()})
