"""The sans-IO decoder: feed it bytes, take typed events out.  No files, sockets or clocks in here (like ``h11``).

It checks the magic ``\\xfebin`` (unless told the stream has none, as a replication stream), splits the bytes into
events by their size field, verifies CRC32 checksums, dispatches each event to its family's decoder through one
explicit table (:data:`DECODERS`, as go-mysql's ``replication/parser.go`` switch and rust_mysql_common's
``binlog/events/mod.rs`` match), and keeps the state later events need: the format description in force
(post-header lengths, checksum algorithm, several of them in relay logs), the table maps in scope, and whether the
log is encrypted from here on.  The tables' columns as DDL in QUERY events declares them are the business of the
DDL tracker the caller passes in (a :class:`~binlake.events.context.DdlTracker`, such as
:class:`binlake.schema.SchemaTracker`; ``binlake.Decoder`` makes one by default, :class:`Decoder` here follows
none unless given one).  A TRANSACTION_PAYLOAD is followed by the events it carries, each marked with the payload's
position.

Example::

    >>> d = Decoder()
    >>> d.feed(b"\\xfebin")
    >>> list(d.events()), d.position
    ([], 4)

Where the optional extension ``binlake._framing`` is built (:data:`FRAMING`), runs of ordinary events are cut,
CRC-checked and their headers read in C, one call per run; the events that change the context (format description,
encryption, transaction payloads) and anything irregular go through the Python framing, which raises the errors, so
events and errors are the same either way (tests/test_framing.py).

A binlog still being written ends in a partial event: :meth:`Decoder.events` simply stops there and waits for more
bytes; :meth:`Decoder.finish` says whether anything incomplete is left.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Iterator
from typing import Final

from binlake._compiled import compiled
from binlake.errors import (
    BinlogError,
    ChecksumError,
    EncryptedError,
    MalformedError,
    TruncatedError,
    UnknownEventError,
)
from binlake.events import base, control, format, gtid, load, mariadb, payload, query, rows, table_map
from binlake.events.base import (
    HEADER,
    HEADER_V1,
    LOG_EVENT_BINLOG_IN_USE_F,
    LOG_EVENT_IGNORABLE_F,
    Event,
    EventHeader,
    EventType,
    RawEvent,
    quicken,
)
from binlake.events.context import DdlTracker, DecodeContext, DecodeOptions
from binlake.events.format import (
    PROTOTYPE_UNDECODED,
    FormatDescriptionEvent,
    PrototypeEvent,
    StartV3Event,
    checksum_aware,
)
from binlake.events.mariadb import StartEncryptionEvent
from binlake.events.query import QueryEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import TableMapEvent
from binlake.wire import crc32

__all__ = ["DECODERS", "FRAMING", "MAGIC", "Decoder", "Decryptor", "EventDecoder", "computed_checksum", "decode_event"]

MAGIC = b"\xfebin"
_FOREIGN = (IndexError, KeyError, ValueError, OverflowError, UnicodeDecodeError, TypeError, ArithmeticError)

# (header, the event's bytes after the common header and before the checksum, the context) -> the typed event
EventDecoder = Callable[[EventHeader, bytes, DecodeContext], Event]

E = EventType
# The one dispatch table: type code -> its family's decoder.  A new event type is a decoder in its family module and
# a line here; a type code not listed decodes to RawEvent (or UnknownEventError, as DecodeOptions say).  Not to be
# changed by callers.
DECODERS: Final[dict[int, EventDecoder]] = {
    E.START_EVENT_V3: format.decode_start_v3,
    E.QUERY_EVENT: query.decode_query,
    E.STOP_EVENT: control.decode_stop,
    E.ROTATE_EVENT: control.decode_rotate,
    E.INTVAR_EVENT: control.decode_intvar,
    E.LOAD_EVENT: load.decode_load,
    E.CREATE_FILE_EVENT: load.decode_load,
    E.APPEND_BLOCK_EVENT: load.decode_file_block,
    E.EXEC_LOAD_EVENT: load.decode_file_id,
    E.DELETE_FILE_EVENT: load.decode_file_id,
    E.NEW_LOAD_EVENT: load.decode_load,
    E.RAND_EVENT: control.decode_rand,
    E.USER_VAR_EVENT: control.decode_user_var,
    E.FORMAT_DESCRIPTION_EVENT: format.decode_fde,
    E.XID_EVENT: control.decode_xid,
    E.BEGIN_LOAD_QUERY_EVENT: load.decode_file_block,
    E.EXECUTE_LOAD_QUERY_EVENT: load.decode_execute_load_query,
    E.TABLE_MAP_EVENT: table_map.decode_table_map,
    **dict.fromkeys(RowsEvent.type_codes, rows.decode_rows),  # the three versions, MariaDB's compressed, partial
    E.INCIDENT_EVENT: control.decode_incident,
    E.HEARTBEAT_LOG_EVENT: control.decode_heartbeat,
    E.IGNORABLE_LOG_EVENT: control.decode_ignorable,
    E.ROWS_QUERY_LOG_EVENT: control.decode_rows_query,
    E.GTID_LOG_EVENT: gtid.decode_gtid,
    E.ANONYMOUS_GTID_LOG_EVENT: gtid.decode_gtid,
    E.PREVIOUS_GTIDS_LOG_EVENT: gtid.decode_previous_gtids,
    E.TRANSACTION_CONTEXT_EVENT: control.decode_transaction_context,
    E.VIEW_CHANGE_EVENT: control.decode_view_change,
    E.XA_PREPARE_LOG_EVENT: control.decode_xa_prepare,
    E.TRANSACTION_PAYLOAD_EVENT: payload.decode_transaction_payload,
    E.HEARTBEAT_LOG_EVENT_V2: control.decode_heartbeat_v2,
    E.GTID_TAGGED_LOG_EVENT: gtid.decode_gtid_tagged,
    # MariaDB
    E.ANNOTATE_ROWS_EVENT: mariadb.decode_annotate_rows,
    E.BINLOG_CHECKPOINT_EVENT: gtid.decode_binlog_checkpoint,
    E.GTID_EVENT: gtid.decode_maria_gtid,
    E.GTID_LIST_EVENT: gtid.decode_gtid_list,
    E.START_ENCRYPTION_EVENT: mariadb.decode_start_encryption,
    E.QUERY_COMPRESSED_EVENT: query.decode_query,
}

# every event class (and the header) built faster: see binlake.events.base.quicken
quicken(
    [
        EventHeader,
        *(
            v
            for m in (base, control, format, gtid, load, mariadb, payload, query, rows, table_map)
            for v in vars(m).values()
            if isinstance(v, type) and issubclass(v, Event) and v.__module__ == m.__name__
        ),
    ]
)

_framing = compiled("_framing")
FRAMING = _framing is not None  # events are cut, CRC-checked and their headers read in C (binlake._framing)
_FRAME_RUN = 256  # events framed per call: bounds the list, and the work done past a reader's stop position
# the events whose reading changes how later ones are read: always framed by the Python path (Decoder._apply)
_CONTEXT_EVENTS = frozenset(
    {
        EventType.FORMAT_DESCRIPTION_EVENT,
        EventType.START_EVENT_V3,
        EventType.START_ENCRYPTION_EVENT,
        EventType.TRANSACTION_PAYLOAD_EVENT,
    }
)

# (event bytes as stored, event position, the START_ENCRYPTION event in force) -> event bytes before encryption;
# binlake.crypto.mariadb_decryptor makes one from a key file
Decryptor = Callable[[bytes, int, StartEncryptionEvent], bytes]
# The type codes binlake._framing frames (a 256-byte mask): every type of the table but the _CONTEXT_EVENTS (unknown
# types take the Python path, which knows what to do with them).
_MASK = bytes(int(code in DECODERS and code not in _CONTEXT_EVENTS) for code in range(256))


def _learn(ctx: DecodeContext, ev: Event) -> None:
    """What any event may teach the context: a table map is in scope for the rows events after it, DDL gives
    later MariaDB 5.3 TIME/DATETIME/TIMESTAMP columns their fsp and statements change the sessions' temporary
    tables (:mod:`binlake.sql.temporary`; :meth:`Decoder._apply` tells the schema tracker of server starts)."""
    if isinstance(ev, TableMapEvent):
        ctx.table_maps[ev.table_id] = ev
    elif ctx.schema is not None and isinstance(ev, QueryEvent):
        ctx.schema.observe(ev)


def decode_event(
    raw: bytes, pos: int, ctx: DecodeContext, *, checksummed: bool = True, in_payload: int | None = None
) -> Event:
    """Decode one whole event ``raw`` found at ``pos`` under ``ctx``, without changing ``ctx``.

    ``checksummed=False`` for events that carry no checksum whatever the FDE says (inside a TRANSACTION_PAYLOAD).
    Every failure is a :class:`~binlake.errors.BinlogError` naming ``pos``.
    """
    try:
        return _decode(raw, pos, ctx, checksummed, in_payload)
    except BinlogError as e:
        raise e.at_pos(pos) from None
    except _FOREIGN as e:
        raise _malformed(e, raw[4] if len(raw) > 4 else None, pos) from e


def _malformed(e: Exception, code: int | None, pos: int) -> MalformedError:
    """A decoder met bytes it did not expect: malformed input, never a foreign crash."""
    return MalformedError(f"malformed {EventType.name_of(code) if code is not None else 'event'}: {e!r}", pos=pos)


def computed_checksum(raw: bytes, stored: int) -> int:
    """The CRC32 of a whole event ``raw`` (its last 4 bytes excluded) as the server computed it: ``stored`` when intact.

    The server computes an FDE's CRC before setting LOG_EVENT_BINLOG_IN_USE_F (MYSQL_BIN_LOG::open /
    Binlog_event_writer) and clears the flag again on close, so an FDE of an open log also matches without the flag.
    """
    actual = crc32(raw[:-4])
    if actual != stored and raw[4] == EventType.FORMAT_DESCRIPTION_EVENT and raw[17] & LOG_EVENT_BINLOG_IN_USE_F:
        actual = crc32(raw[:17] + bytes([raw[17] & ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF]) + raw[18:-4])
    return actual


def _decode(raw: bytes, pos: int, ctx: DecodeContext, checksummed: bool, in_payload: int | None) -> Event:
    hlen = ctx.header_len
    if len(raw) < hlen:
        raise TruncatedError(f"event of {len(raw)} bytes is shorter than the {hlen}-byte header")
    if hlen == 13:
        ts, code, server_id, size = HEADER_V1.unpack_from(raw)
        log_pos, flags = 0, 0
    else:
        ts, code, server_id, size, log_pos, flags = HEADER.unpack_from(raw)
    stored_code = code
    perm = ctx.fde.type_permutation if ctx.fde is not None else None
    if perm is not None and code < len(perm):  # a WL#2325 prototype log (binlake.events.format)
        code = perm[code]
    if code == EventType.FORMAT_DESCRIPTION_EVENT:
        version = raw[hlen + 2 : hlen + 52].split(b"\0", 1)[0].decode("ascii", "replace")
        # A checksum-aware server's FDE always carries a CRC, unless its algorithm byte is UNDEF (255).
        csum_len = 4 if checksum_aware(version) and len(raw) >= hlen + 57 + 5 and raw[-5] != 255 else 0
    else:
        csum_len = ctx.checksum_len if checksummed else 0
    checksum = None
    if csum_len:
        if len(raw) < hlen + csum_len:
            raise TruncatedError("event too short for its checksum")
        checksum = int.from_bytes(raw[-4:], "little")
        if ctx.options.verify_checksum:
            actual = computed_checksum(raw, checksum)
            if actual != checksum:
                raise ChecksumError(
                    f"CRC32 mismatch in {EventType.name_of(code)}: stored 0x{checksum:08x}, computed 0x{actual:08x}"
                )
    header = EventHeader(ts, code, server_id, size, log_pos, flags, pos, checksum, in_payload)
    body = raw[hlen : len(raw) - csum_len]
    if perm is not None and code in PROTOTYPE_UNDECODED:
        return PrototypeEvent(header, bytes(body), stored_code)
    fn = DECODERS.get(code)
    if fn is None:
        if ctx.options.unknown_events == "error" and not flags & LOG_EVENT_IGNORABLE_F:
            raise UnknownEventError(f"unknown event type {code}")
        return RawEvent(header, bytes(body))
    return fn(header, body, ctx)


class Decoder:
    """Incremental binlog decoder; see the module docstring.

    ``start_pos``: the absolute position of the first byte fed (4 or more when resuming mid-file; the magic is then
    not expected).  ``magic=False`` for a replication stream.  ``schema``: the DDL tracker to tell the QUERY events
    and to ask for what table maps do not log (none: :meth:`default_schema`'s, here no DDL followed).  ``context``
    lets a reader resume with the format description of the file's start (see :meth:`restart`); it brings its own
    options and tracker.  ``decryptor`` decrypts events after a MariaDB START_ENCRYPTION_EVENT; without one such
    events raise :class:`~binlake.errors.EncryptedError`.
    """

    def __init__(
        self,
        options: DecodeOptions | None = None,
        *,
        schema: DdlTracker | None = None,
        start_pos: int = 0,
        magic: bool = True,
        context: DecodeContext | None = None,
        decryptor: Decryptor | None = None,
    ) -> None:
        if context is None:
            opts = options or DecodeOptions()
            context = DecodeContext(opts, schema=schema if schema is not None else self.default_schema(opts))
        self.ctx = context
        self._buf = bytearray()
        self._off = 0  # consumed bytes of _buf
        self._pos = start_pos  # absolute position of _buf[_off]
        self._need_magic = magic and start_pos == 0
        self._first = start_pos <= 4
        self._inner: deque[Event] = deque()
        self._payload: Event | None = None  # a TRANSACTION_PAYLOAD whose inner events are still to come
        self.decryptor = decryptor
        self._encryption: StartEncryptionEvent | None = None  # its nonce and key version decrypt later events

    @staticmethod
    def default_schema(options: DecodeOptions) -> DdlTracker | None:
        """The DDL tracker of a decoder given none: none here (the core knows only the tracker's protocol);
        ``binlake.Decoder`` (:class:`binlake.reader.Decoder`) makes the one ``options`` ask for."""
        return None

    @property
    def position(self) -> int:
        """Absolute position of the next event (all events before it were yielded)."""
        return self._pos

    @property
    def buffered(self) -> int:
        """Bytes fed but not yet decoded (a partial event)."""
        return len(self._buf) - self._off

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._off and self._off > len(self._buf) // 2:
            del self._buf[: self._off]
            self._off = 0
        self._buf += data

    def restart(self, pos: int) -> None:
        """Drop buffered bytes and continue at ``pos`` (same file, same context), e.g. to decode a byte range."""
        self._buf.clear()
        self._off = 0
        self._pos = pos
        self._need_magic = pos == 0
        self._inner.clear()
        self._payload = None

    def skip_event(self) -> int:
        """Step over the event at the current position without decoding it (recovery after an error).

        Returns its size; raises :class:`TruncatedError` if its bytes are not all buffered yet.
        """
        size = self.next_size()
        if size is None or size < self.ctx.header_len or self.buffered < size:
            raise TruncatedError("cannot skip: the event is not complete or its size is invalid", pos=self._pos)
        self._off += size
        self._pos += size
        self._inner.clear()
        self._payload = None
        return size

    def next_size(self) -> int | None:
        """Size of the event at the current position, if its header is buffered (readers use it to skip ahead)."""
        avail = len(self._buf) - self._off
        if self._need_magic or avail < 13:
            return None
        # Encrypted MariaDB events keep the size in clear at the same offset: Log_event_writer::write_header moves
        # the timestamp there before encrypting, maybe_write_event_len moves those 4 encrypted bytes to the front.
        return int.from_bytes(self._buf[self._off + 9 : self._off + 13], "little")

    def events(self) -> Iterator[Event]:
        """Yield every event complete in the buffer; stop (without error) at a partial one."""
        while True:
            if self._payload is not None:
                payload, self._payload = self._payload, None
                self._inner.extend(self._payload_events(payload))
            while self._inner:
                yield self._inner.popleft()
            if self._need_magic:
                if len(self._buf) - self._off < 4:
                    return
                if bytes(self._buf[self._off : self._off + 4]) != MAGIC:
                    raise MalformedError(
                        f"not a binlog: starts with {bytes(self._buf[self._off : self._off + 4])!r}, not {MAGIC!r}",
                        pos=self._pos,
                    )
                self._off += 4
                self._pos += 4
                self._need_magic = False
            if self._can_frame():
                ctx = self.ctx
                run = _framing.frame(  # type: ignore[union-attr]
                    self._buf, self._off, ctx.checksum_len, ctx.options.verify_checksum, _MASK, _FRAME_RUN
                )
                if run:
                    decoders = DECODERS
                    off = self._off
                    for size, ts, code, server_id, log_pos, flags, checksum, body in run:
                        if self._off != off:
                            break  # restart() or skip_event() while the run was out: frame again from there
                        pos = self._pos
                        header = EventHeader(ts, code, server_id, size, log_pos, flags, pos, checksum)
                        try:
                            ev = decoders[code](header, body, ctx)
                        except BinlogError as e:
                            raise e.at_pos(pos) from None
                        except _FOREIGN as e:
                            raise _malformed(e, code, pos) from e
                        off = self._off = off + size
                        self._pos = pos + size
                        _learn(ctx, ev)  # no context event is framed in C (_CONTEXT_EVENTS)
                        yield ev
                    continue
            size = self.next_size()
            if size is None:
                return
            pos = self._pos
            if self._first:
                self._detect_v1(size)
            if size < self.ctx.header_len:
                raise MalformedError(f"event size {size} is smaller than the event header", pos=pos)
            if len(self._buf) - self._off < size:
                return
            raw = bytes(memoryview(self._buf)[self._off : self._off + size])  # one copy, not two
            if self.ctx.encrypted:
                if self.decryptor is None or self._encryption is None:
                    raise EncryptedError(
                        "the binlog is encrypted from here on (MariaDB encrypt_binlog); give the server's key file"
                        if self.decryptor is None
                        else "encrypted event, but the START_ENCRYPTION event before it was not decoded",
                        pos=pos,
                    )
                raw = self.decryptor(raw, pos, self._encryption)
            ev = decode_event(raw, pos, self.ctx)
            self._off += size
            self._pos += size
            self._first = False
            self._apply(ev)
            yield ev

    def _can_frame(self) -> bool:
        """Whether :mod:`binlake._framing` may frame the next events: after the first, in a log of 19-byte
        headers, with a format description, not encrypted, not a WL#2325 prototype log."""
        ctx = self.ctx
        return (
            _framing is not None
            and not self._first
            and ctx.header_len == 19
            and ctx.fde is not None
            and ctx.fde.type_permutation is None
            and not ctx.encrypted
        )

    def _detect_v1(self, size: int) -> None:
        """A 3.23 binlog (v1) starts with a START_EVENT_V3 of 69 bytes under a 13-byte header."""
        b = self._buf
        if b[self._off + 4] == EventType.START_EVENT_V3 and size == 13 + 56:
            self.ctx.header_len = 13

    def _apply(self, ev: Event) -> None:
        """Update the context for the events after ``ev``."""
        ctx = self.ctx
        if isinstance(ev, FormatDescriptionEvent):
            ctx.fde = ev
            ctx.header_len = ev.header_length if ev.header_length in (13, 19) else 19
            if ctx.schema is not None:  # a server start forgets the sessions' temporary tables
                ctx.schema.started(ev)
        elif isinstance(ev, StartV3Event):
            ctx.fde = ev.as_format_description()
            if ctx.schema is not None:
                ctx.schema.started(ev)
        elif isinstance(ev, StartEncryptionEvent) and not ev.header.flags & LOG_EVENT_IGNORABLE_F:
            # a dump thread sends the decrypted log with this event flagged ignorable (sql_repl.cc, fix_checksum)
            ctx.encrypted = True
            self._encryption = ev
        elif ev.header.type_code == EventType.TRANSACTION_PAYLOAD_EVENT:
            self._payload = ev
        else:
            _learn(ctx, ev)

    def _payload_events(self, ev: Event) -> Iterator[Event]:
        """The events inside a TRANSACTION_PAYLOAD (no checksums; positions are offsets in the payload)."""
        try:
            data: bytes = ev.uncompressed(self.ctx.options.max_decompressed)  # type: ignore[attr-defined]
        except BinlogError as e:  # the payload was already yielded: name it, not the event after it
            raise e.at_pos(ev.header.pos) from None
        at, hlen = 0, self.ctx.header_len
        while at < len(data):
            if len(data) - at < hlen:
                raise TruncatedError(
                    "partial event header at the end of a transaction payload", pos=ev.header.pos, offset=at
                )
            size = int.from_bytes(data[at + 9 : at + 13], "little")
            if size < hlen or at + size > len(data):
                raise MalformedError(
                    f"event of size {size} does not fit its transaction payload", pos=ev.header.pos, offset=at
                )
            try:
                inner = decode_event(data[at : at + size], at, self.ctx, checksummed=False, in_payload=ev.header.pos)
            except BinlogError as e:  # name the payload's file position (+ offset in it), not a bare payload offset
                err = copy.copy(e)
                err.pos, err.offset = ev.header.pos, at + (e.offset or 0)
                raise err from None
            _learn(self.ctx, inner)
            yield inner
            at += size

    def finish(self) -> None:
        """Call at the end of input: raise :class:`TruncatedError` if a partial event is left."""
        if self._need_magic and self.buffered == 0 and self._pos == 0:
            raise TruncatedError("empty input: no binlog magic", pos=0)
        if self.buffered:
            size = self.next_size()
            what = f"a {size}-byte event" if size is not None else "an event header"
            raise TruncatedError(f"the input ends inside {what} ({self.buffered} bytes present)", pos=self._pos)
