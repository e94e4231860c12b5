"""A replication stream, sans-IO: the bytes a server sends after a dump command in, events with their binlog file
and positions out.

The packets are cut by :class:`~binlake.replication.protocol.PacketReader`; each event's bytes (after the packet's
``0x00`` byte and, with semi-sync, its 2-byte header) go to the same :class:`~binlake.decoder.Decoder` that reads
binlog files, fed in runs so that its compiled framing cuts and checks them as it does a file's.  Nothing is parsed
twice: the stream reads only the common header's type, size, next position and flags of each event (what a dump
thread writes there says where the event belongs), the decoder does the rest.

What a server sends besides the events of its files (MariaDB ``mysql_binlog_send`` in ``sql/sql_repl.cc``, MySQL
``Binlog_sender`` in ``sql/rpl_binlog_sender.cc``), all yielded with ``in_file=False``:

- before each file, an artificial ROTATE (flag LOG_EVENT_ARTIFICIAL_F 0x20, timestamp and next position 0) naming
  the file and the position the dump goes on at; it carries a CRC32 when the connection negotiated one, whatever the
  file's own algorithm, so it is decoded by a decoder of its own (:func:`binlake.events.control.decode_rotate`
  recognises the CRC);
- the file's FORMAT_DESCRIPTION (and a MariaDB START_ENCRYPTION flagged ignorable) sent again with next position 0
  when the dump starts past position 4 (it is not at the position the dump goes on at);
- heartbeats (HEARTBEAT_LOG_EVENT 27, MySQL's HEARTBEAT_LOG_EVENT_V2 41) while the server waits for new events;
- MariaDB's artificial GTID_LIST after the first event group of a GTID start.

Every other event is in the file: it starts at its header's next position minus its size (the next position of a
v4 header is where the event ends), or, where that field is 0 (MariaDB 11.4+ writes 0 in events copied from a
transaction cache), where the previous one ended.  A start past the previous end is a hole the server left on
purpose (the event groups a GTID start skips); the decoder is moved there, keeping its context (format description,
table maps).  A real ROTATE at the end of a file moves the stream to the next file.

The stream ends at an EOF packet (:attr:`ReplicationStream.ended`: a non-blocking dump reached the end of the last
binlog); an ERR packet raises the error it carries (:func:`~binlake.replication.protocol.server_error`), after the
events before it.

Example::

    stream = ReplicationStream()
    stream.feed(bytes_from_socket)
    for se in stream.events():
        print(se.file, se.start, se.end, se.in_file, se.event.type)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from binlake.decoder import Decoder as SansIODecoder
from binlake.errors import MalformedError
from binlake.events.base import LOG_EVENT_ARTIFICIAL_F, Event, EventType, quicken
from binlake.events.context import DecodeOptions
from binlake.events.control import RotateEvent
from binlake.reader import Decoder
from binlake.replication.protocol import (
    EOF_PACKET,
    ERR_PACKET,
    OK_PACKET,
    SEMI_SYNC_ACK_REQUESTED,
    SEMI_SYNC_MAGIC,
    PacketReader,
    parse_error_packet,
    server_error,
)

__all__ = ["ReplicationStream", "StreamEvent"]

_HEARTBEATS = frozenset({EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2})
# header events a dump thread sends again, with next position 0, when it starts past position 4
_RESENT_HEADERS = frozenset({EventType.FORMAT_DESCRIPTION_EVENT, EventType.START_ENCRYPTION_EVENT})
_ROTATE = EventType.ROTATE_EVENT
_RUN = 256  # in-file events fed to the decoder before they are decoded and yielded (bounds the buffered bytes)


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of a replication stream.

    ``file`` is the server's binlog the event is in; ``start`` and ``end`` its position there (an event inside a
    TRANSACTION_PAYLOAD has the payload's).  ``in_file`` is false for what the server sent besides its files'
    events (artificial ROTATE and GTID_LIST, heartbeats, a resent format description); their ``start`` and ``end``
    are where the stream was.  ``raw`` is the event's bytes as sent (with ``keep_raw``; ``None`` inside a payload),
    ``ack`` whether the server asked (semi-sync) to be told once the event is safe.
    """

    event: Event
    file: str
    start: int
    end: int
    in_file: bool
    raw: bytes | None = None
    ack: bool = False


quicken([StreamEvent])


class ReplicationStream:
    """The state machine of the module docstring.  ``decoder``: the decoder to continue (a new connection keeps the
    format description and table maps of the last one); ``semi_sync``: the server puts the 2-byte semi-sync header
    in every event packet (the client asked with ``@rpl_semi_sync_slave = 1``); ``keep_raw``: yield each event's
    bytes too (``binlake mirror`` writes them).

    :attr:`file` and :attr:`position` are where the next event of the files is expected (``None``/0 before the
    first ROTATE).
    """

    def __init__(
        self,
        options: DecodeOptions | None = None,
        *,
        decoder: SansIODecoder | None = None,
        semi_sync: bool = False,
        keep_raw: bool = False,
    ) -> None:
        self.decoder = decoder if decoder is not None else Decoder(options, magic=False)
        self.semi_sync = semi_sync
        self.keep_raw = keep_raw
        self.file: str | None = None
        self.position = 0
        self.ended = False
        self._packets = PacketReader()
        self._rotates = SansIODecoder(magic=False)  # the artificial ROTATE events: no DDL to follow
        self._fed_end = 0  # where the bytes fed to the decoder end (its position once they are decoded)
        self._pending: deque[tuple[bytes | None, bool]] = deque()  # (raw, ack) of each event taken, not yet yielded
        self._run: list[memoryview] = []  # the bytes of those events, fed to the decoder together
        self._payload_end = 0  # end of the last top-level event yielded (a TRANSACTION_PAYLOAD's inner events)
        self._asked: tuple[str | None, str | None] = (None, None)  # the binlog file or GTID state the dump asked for

    def feed(self, data: bytes) -> None:
        """Bytes read from the connection (any amount; a packet may span several calls)."""
        self._packets.feed(data)

    def reset(self, *, file: str | None = None, gtid: str | None = None) -> None:
        """Forget the bytes of a lost connection (a partial packet, events not yet yielded) before a new one; the
        decoder's context stays.  The new connection's first ROTATE says where the stream is; ``file`` or ``gtid``
        name what the new dump asked for, for the errors the server may answer with before that ROTATE."""
        self._asked = (file, gtid)
        self._packets = PacketReader()
        self._pending.clear()
        self._run.clear()
        self.ended = False
        self.decoder.restart(max(self.position, 4))
        self.file, self.position, self._fed_end = None, 0, 0

    @property
    def buffered(self) -> int:
        """Bytes fed and not yet yielded as events."""
        return self._packets.buffered + self.decoder.buffered

    def events(self) -> Iterator[StreamEvent]:
        """Yield every event whose bytes were fed; stop at a partial packet (more bytes will come) or at the EOF."""
        decoder, pending, run = self.decoder, self._pending, self._run
        semi_sync, keep_raw = self.semi_sync, self.keep_raw
        for payload in self._packets.payloads():
            if self.ended:
                continue
            kind = payload[0]
            if kind != OK_PACKET:  # an event follows the OK byte
                yield from self._drain()
                if kind == EOF_PACKET:
                    self.ended = True
                    continue
                if kind == ERR_PACKET:
                    err = parse_error_packet(payload)
                    file, gtid = (self.file, None) if self.file is not None else self._asked
                    raise server_error(err.code, err.message, file=file, pos=self.position or None, gtid=gtid)
                raise MalformedError(f"replication packet starts with 0x{kind:02x}, not an event, EOF or error")
            ack = False
            if semi_sync:
                if len(payload) < 3 or payload[1] != SEMI_SYNC_MAGIC:
                    raise MalformedError("event packet without the semi-sync header the server was asked for")
                ack = bool(payload[2] & SEMI_SYNC_ACK_REQUESTED)
                ev = payload[3:]
            else:
                ev = payload[1:]
            size = len(ev)
            if size < 19:
                raise MalformedError(f"event of {size} bytes in a replication packet", pos=self.position)
            claimed = ev[9] | ev[10] << 8 | ev[11] << 16 | ev[12] << 24
            if claimed != size:
                raise MalformedError(
                    f"event size field says {claimed} bytes, its packet holds {size}", pos=self.position
                )
            code = ev[4]
            log_pos = ev[13] | ev[14] << 8 | ev[15] << 16 | ev[16] << 24
            if code in _HEARTBEATS or ev[17] & LOG_EVENT_ARTIFICIAL_F or (log_pos == 0 and code in _RESENT_HEADERS):
                yield from self._out_of_band(ev, code)
                continue
            if self.file is None:
                raise MalformedError(f"{EventType.name_of(code)} before the first ROTATE of the stream")
            start = log_pos - size if log_pos else self.position
            if start != self._fed_end:
                if start < self.position:
                    raise MalformedError(
                        f"{EventType.name_of(code)} at {start} overlaps the event before it (ends at {self.position})",
                        file=self.file,
                        pos=start,
                    )
                yield from self._drain()
                decoder.restart(start)  # a hole the server left (skipped event groups): same context, new position
            run.append(ev)
            self._fed_end = self.position = start + size
            pending.append((bytes(ev) if keep_raw else None, ack))
            if code == _ROTATE:
                yield from self._drain()
                continue
            if len(pending) >= _RUN:
                yield from self._drain()
        yield from self._drain()

    def _drain(self) -> Iterator[StreamEvent]:
        """Decode and yield the in-file events fed so far; a real ROTATE among them moves the stream on."""
        pending = self._pending
        if not pending:
            return
        self.decoder.feed(b"".join(self._run))  # the run's events, contiguous in the file: one copy, one call
        self._run.clear()
        file = self.file
        assert file is not None
        for ev in self.decoder.events():
            h = ev.header
            if h.in_payload is None:
                raw, ack = pending.popleft()
                end = self._payload_end = h.pos + h.event_size
                yield StreamEvent(ev, file, h.pos, end, True, raw, ack)
                if h.type_code == _ROTATE and isinstance(ev, RotateEvent):
                    self.file, self.position = ev.name, ev.position
            else:
                yield StreamEvent(ev, file, h.in_payload, self._payload_end, True, None, False)
        if pending:  # every event fed is whole: the decoder yields all of them
            raise MalformedError(f"{len(pending)} events fed to the decoder were not decoded", file=file)

    def _out_of_band(self, ev: memoryview, code: int) -> Iterator[StreamEvent]:
        """Decode and yield one event that is not at a position of the files (module docstring)."""
        yield from self._drain()
        raw = bytes(ev) if self.keep_raw else None
        if code == _ROTATE:  # artificial: decoded before any format description, by a decoder of its own
            dec = self._rotates
            dec.restart(4)
            dec.feed(ev)
            for rotate in dec.events():
                assert isinstance(rotate, RotateEvent)
                self.file, self.position = rotate.name, rotate.position
                yield StreamEvent(rotate, rotate.name, rotate.position, rotate.position, False, raw)
            return
        at = max(self.position, 4)
        dec = self.decoder
        dec.restart(at)
        dec.feed(ev)
        decoded = list(dec.events())
        dec.restart(at)
        self._fed_end = at
        for e in decoded:
            yield StreamEvent(e, self.file or "", at, at, False, raw if e.header.in_payload is None else None)
