"""What an event decoder may know besides its own bytes: the format description in force, the table maps in
scope, the caller's options, and the tables as the DDL left them.  The sans-IO :class:`~binlake.decoder.Decoder`
owns one context and updates it as FORMAT_DESCRIPTION, TABLE_MAP and START_ENCRYPTION events go by; family decoders
only read it.

The DDL tracker is passed in (as rust_mysql_common passes its ``BinlogCtx``), behind the small :class:`DdlTracker`
protocol: :class:`binlake.schema.SchemaTracker` implements it, and the layers above the decoder make one
(:func:`binlake.schema.schema_tracker`); a context given none follows no DDL.

Example::

    >>> ctx = DecodeContext()
    >>> ctx.post_header_len(19)   # TABLE_MAP_EVENT under a MySQL 5.x/8.x format description
    8
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from binlake.wire import Cursor

if TYPE_CHECKING:
    from binlake.coltypes import Column
    from binlake.events.format import FormatDescriptionEvent, StartV3Event
    from binlake.events.query import QueryEvent
    from binlake.events.table_map import TableMapEvent

__all__ = ["DEFAULT_MAX_DECOMPRESSED", "DEFAULT_POST_HEADER_LENGTHS", "DdlTracker", "DecodeContext", "DecodeOptions"]

# A compressed payload or column that claims to grow past this is refused (a zstd/zlib bomb is an error, not an
# allocation).  MySQL caps a transaction payload at binlog_transaction_compression's 1 GiB max_allowed_packet.
DEFAULT_MAX_DECOMPRESSED = 1 << 30

# The post-header lengths a MySQL 8.0/9.x server writes (type code -> bytes); used before any FDE is seen, e.g. for
# `binlake explain --hex` on a lone event.
_MYSQL8 = [
    0,
    13,
    0,
    8,
    0,
    0,
    0,
    0,
    4,
    0,
    4,
    0,
    0,
    0,
    99,
    0,
    4,
    26,
    8,
    0,
    0,
    0,
    0,
    0,
    0,
    2,
    0,
    0,
    0,
    10,
    10,
    10,
    42,
    42,
    0,
    18,
    52,
    0,
    10,
    40,
    0,
    0,
]
DEFAULT_POST_HEADER_LENGTHS: dict[int, int] = {i + 1: n for i, n in enumerate(_MYSQL8)}


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """How strict the decoder is.

    ``verify_checksum``: a CRC32 mismatch raises :class:`~binlake.errors.ChecksumError` (default) or is ignored.
    ``unknown_events``: ``"raw"`` yields unknown types as :class:`~binlake.events.base.RawEvent`, ``"error"`` raises
    :class:`~binlake.errors.UnknownEventError` (events flagged LOG_EVENT_IGNORABLE_F are always raw).
    ``max_decompressed``: the bound on any decompressed size.
    ``track_schema``: follow the DDL of QUERY events (:mod:`binlake.schema`), which sizes MariaDB 5.3 fractional
    TIME/DATETIME/TIMESTAMP columns; ``schema_sql``: DDL to start from (``CREATE TABLE`` statements, ``USE db``),
    for tables created before the binlog being read, e.g. ``DecodeOptions(schema_sql=Path("schema.sql").read_text())``.
    Those two say which tracker :func:`binlake.schema.schema_tracker` makes for ``binlake.Decoder``,
    :func:`~binlake.reader.read_events` and the commands; the core :class:`binlake.decoder.Decoder` follows the
    tracker it is given.
    """

    verify_checksum: bool = True
    unknown_events: Literal["raw", "error"] = "raw"
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    track_schema: bool = True
    schema_sql: str | None = None


class DdlTracker(Protocol):
    """What the decoder asks of the tables as the DDL left them (:class:`binlake.schema.SchemaTracker`).

    The :class:`~binlake.decoder.Decoder` tells it every QUERY event (:meth:`observe`) and every format
    description (:meth:`started`: a server start ends the sessions' temporary tables); the TABLE_MAP decoder asks
    it for the fsp of MariaDB 5.3 TIME/DATETIME/TIMESTAMP columns, which no event logs (:meth:`complete`).
    """

    def observe(self, ev: QueryEvent) -> bool:
        """Follow the statement of ``ev``; True when the tables changed."""
        ...

    def started(self, ev: FormatDescriptionEvent | StartV3Event) -> None:
        """Follow a format description (or a 3.23 start event)."""
        ...

    def complete(self, schema: str, name: str, columns: tuple[Column, ...]) -> tuple[Column, ...]:
        """A table map's ``columns`` of ``schema.name`` with what only the DDL tells (the same tuple when nothing)."""
        ...


@dataclass(slots=True)
class DecodeContext:
    """Mutable decoding state; see the module docstring."""

    options: DecodeOptions = field(default_factory=DecodeOptions)
    fde: FormatDescriptionEvent | None = None
    table_maps: dict[int, TableMapEvent] = field(default_factory=dict)
    header_len: int = 19
    encrypted: bool = False
    # set by `binlake explain`: a list that records every field a decoder reads (see binlake.trace)
    trace: list[object] | None = None
    # the tables as the DDL seen so far left them, given by the caller (binlake.schema.schema_tracker makes the one
    # DecodeOptions.track_schema/schema_sql ask for); the Decoder feeds it
    schema: DdlTracker | None = None

    def cursor(self, body: bytes | memoryview) -> Cursor:
        """A cursor over an event body (after the common header), offsets reported from the event start.

        Decoders read through this rather than building a Cursor themselves, so that explain mode can record every
        field (name, offset, size, value) without a second copy of each layout.
        """
        if self.trace is None:
            return Cursor(body, base=-self.header_len)
        from binlake.trace import TracingCursor

        cursor: Cursor = TracingCursor(body, base=-self.header_len, trace=self.trace)
        return cursor

    @property
    def checksum_len(self) -> int:
        """4 when the format description in force says CRC32, else 0."""
        return 4 if self.fde is not None and self.fde.checksum_alg == 1 else 0

    @property
    def is_mariadb(self) -> bool:
        return self.fde is not None and "mariadb" in self.fde.server_version.lower()

    def post_header_len(self, type_code: int) -> int:
        """Post-header length of ``type_code`` per the format description (MySQL 8 defaults before one is seen)."""
        if self.fde is not None:
            return self.fde.post_header_len(type_code)
        return DEFAULT_POST_HEADER_LENGTHS.get(type_code, 0)
