"""Read damaged binlogs on purpose: skip what cannot be decoded, say exactly what was skipped, go on.

Like ``mysqlbinlog --force-read``, but explicit about the cost.  Three modes (``on_error``):

``"stop"`` (default)
    raise the first :class:`~binlake.errors.BinlogError`, as :func:`binlake.reader.read_events` does.
``"skip-event"``
    step over the bad event by its size and go on with the next one.
``"skip-transaction"``
    step over the bad event and drop every event after it up to the next transaction start (a GTID event, or in
    a log without GTIDs a ``BEGIN`` query) or up to and including the end of the broken transaction (XID,
    XA_PREPARE, a ``COMMIT``/``ROLLBACK`` query); events between transactions (ROTATE, STOP, FORMAT_DESCRIPTION,
    GTID lists, ...) also end the skip.  Transactions are the ones :mod:`binlake.transactions` defines.  A
    consumer never sees half a transaction *after* the damage; the events of it yielded *before* the damage are
    named by :attr:`Skipped.transaction_start`.

When the event's size field is itself garbage (the size is below the header length, runs past the end of the file,
or does not lead to a plausible next header), the reader resynchronises: it scans forward for the next position
holding a plausible event header (a known type code, a size within the file, ``log_pos == pos + size`` unless an
event so far lacked it (relay logs), a matching CRC32 when the log is checksummed) and reports the gap.

Every skip is a :class:`Skipped` record (file, start, end, reason, events lost), passed to ``on_skip`` as soon as
it is known and kept in the :class:`RecoverySummary`; without ``on_skip`` each one is logged as a warning on the
``binlake.recovery`` logger.  Nothing is skipped silently.

Example::

    events = read_events_recovering("binlog.000042", on_error="skip-transaction", on_skip=print)
    for ev in events:
        handle(ev)
    print(events.summary)   # 9120 events, 1 skip: 171 bytes at 91204-91375, 1 event lost
"""

from __future__ import annotations

import logging
import mmap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

from binlake.decoder import Decryptor, computed_checksum
from binlake.errors import BinlogError, TruncatedError
from binlake.events.base import Event, EventType
from binlake.events.context import DecodeOptions
from binlake.reader import Binlog, BufferedRanges, Decoder, binlog_name, header_table, opened, resume_decoder
from binlake.schema import SchemaTracker
from binlake.transactions import GTID_EVENTS, Transactions

__all__ = ["OnError", "RecoveringReader", "RecoverySummary", "Skipped", "read_events_recovering"]

OnError = Literal["stop", "skip-event", "skip-transaction"]
_MODES = ("stop", "skip-event", "skip-transaction")
CHUNK = 1 << 20
log = logging.getLogger("binlake.recovery")
Ranges = mmap.mmap | BufferedRanges | bytes  # a binlog's bytes, random access (binlake.reader.opened)

_KNOWN_CODES = frozenset(int(t) for t in EventType)
_FIRST = frozenset({EventType.FORMAT_DESCRIPTION_EVENT, EventType.START_EVENT_V3})  # what a binlog starts with


@dataclass(frozen=True, slots=True)
class Skipped:
    """One stretch of the file that produced no events.

    ``start``/``end``: byte positions of the skipped stretch (end exclusive).  ``events_lost``: events known to be
    lost (the bad event, plus the events of its transaction dropped in ``skip-transaction`` mode); when ``resynced``
    the stretch had no trustworthy size field, so it may have held more.  ``transaction_start``: in
    ``skip-transaction`` mode, the position of the broken transaction's first event when events of it were yielded
    before the damage (the consumer should discard them), else ``None``.  ``error``: the error that started it.
    """

    file: str
    start: int
    end: int
    reason: str
    events_lost: int
    resynced: bool = False
    transaction_start: int | None = None
    error: BinlogError | None = None

    def __str__(self) -> str:
        more = " or more (resynchronised)" if self.resynced else ""
        trx = f"; transaction from {self.transaction_start} incomplete" if self.transaction_start is not None else ""
        return (
            f"{self.file}: skipped {self.end - self.start} bytes at {self.start}-{self.end}, "
            f"{self.events_lost} event{'s' if self.events_lost != 1 else ''} lost{more}{trx}: {self.reason}"
        )


@dataclass(slots=True)
class RecoverySummary:
    """What one recovering read did: events yielded, every skip, and whether it reached the end of the file."""

    file: str
    mode: str
    events: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    complete: bool = False

    @property
    def events_lost(self) -> int:
        return sum(s.events_lost for s in self.skipped)

    @property
    def bytes_skipped(self) -> int:
        return sum(s.end - s.start for s in self.skipped)

    def __str__(self) -> str:
        n = len(self.skipped)
        text = f"{self.events} events, {n} skip{'s' if n != 1 else ''}"
        if n:
            lost = self.events_lost
            text += f" ({self.bytes_skipped} bytes, {lost} event{'s' if lost != 1 else ''} lost)"
        return text + ("" if self.complete else ", stopped before the end")


@dataclass(slots=True)
class _Skipping:
    """A skip-transaction skip still open: the bad stretch, then the dropped events after it."""

    start: int
    end: int
    reason: str
    error: BinlogError
    lost: int
    resynced: bool
    transaction_start: int | None


class RecoveringReader:
    """The iterator :func:`read_events_recovering` returns; :attr:`summary` fills in as it runs."""

    def __init__(
        self,
        path: Binlog,
        on_error: OnError,
        on_skip: Callable[[Skipped], object] | None,
        options: DecodeOptions | None,
        decryptor: Decryptor | None,
        schema: SchemaTracker | None = None,
        start: int | None = None,
    ) -> None:
        if on_error not in _MODES:
            raise ValueError(f"on_error must be one of {', '.join(_MODES)}, not {on_error!r}")
        self.source = path
        self.path = binlog_name(path)
        self.mode: OnError = on_error
        self.on_skip = on_skip
        self.summary = RecoverySummary(self.path, on_error)
        self._options = options
        self._decryptor = decryptor
        self._schema = schema
        self._start = start
        self._it = self._run()
        self._trx = Transactions()  # the transactions of the events read, and where a skip ends
        self._skipping: _Skipping | None = None
        self._logpos_events = 0  # file-level events seen, and how many had log_pos == pos + size
        self._logpos_match = 0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        return next(self._it)

    # -- the read loop --------------------------------------------------------------------------------------------

    def _run(self) -> Iterator[Event]:
        try:
            with opened(self.source) as (f, mm, size):
                yield from self._read(f, mm, size)
        except BinlogError as e:
            raise e.at_file(self.path) from None
        except OSError as e:
            raise BinlogError(f"cannot read: {e.strerror or e}", file=self.path) from e
        self.summary.complete = True

    def _read(self, f: BinaryIO, mm: Ranges, file_size: int) -> Iterator[Event]:
        dec = self._decoder()
        first = 0  # events before it are read (damaged header events: from the file's start) but not yielded
        if self._start is not None and self._start > 4:
            try:
                dec = resume_decoder(f, self._start, dec)
                # does the log have GTID events (a BEGIN then belongs to the GTID's transaction)? the header walk's
                # type codes before the start say it, as reading from the start would have
                codes = header_table(self.source, 4, self._start).codes
                self._trx = Transactions(gtids=any(bytes((code,)) in codes for code in GTID_EVENTS))
            except BinlogError:  # damaged header events: read it all, reporting what is wrong where it is
                f.seek(0)
                dec, first = self._decoder(), self._start
        while True:
            try:
                for ev in dec.events():
                    if (
                        self._keep(ev)
                        and (ev.header.pos if ev.header.in_payload is None else ev.header.in_payload) >= first
                    ):
                        self.summary.events += 1
                        yield ev
                size = dec.next_size()
                if size is not None and dec.position + size > file_size:
                    raise TruncatedError(
                        f"the event claims {size} bytes, past the end of the file ({file_size - dec.position} left)",
                        pos=dec.position,
                    )
                chunk = f.read(CHUNK)
                if chunk:
                    dec.feed(chunk)
                    continue
                dec.finish()
                self._close_skip(file_size)
                return
            except BinlogError as e:
                if self.mode == "stop":
                    raise
                resume = self._recover(e.at_file(self.path), dec, mm, file_size)
                if resume is None:
                    continue
                if resume >= file_size:
                    self._close_skip(file_size)
                    return
                dec.restart(resume)
                f.seek(resume)

    def _decoder(self) -> Decoder:
        return Decoder(self._options, schema=self._schema, decryptor=self._decryptor)

    def _keep(self, ev: Event) -> bool:
        """Track transactions and log_pos; in a skip-transaction skip, drop events until the next transaction."""
        h = ev.header
        pos = h.pos if h.in_payload is None else h.in_payload  # file position of the event or of its payload
        if h.in_payload is None:
            self._logpos_events += 1
            self._logpos_match += h.log_pos == h.end_pos
        step = self._trx.event(ev)
        skip = self._skipping
        if skip is not None:
            if step.begins or not step.inside:
                self._close_skip(pos)
            else:
                skip.lost += 1
                if h.in_payload is None:
                    skip.end = max(skip.end, h.end_pos)
                if step.ends:
                    self._close_skip(skip.end)
                return False
        return True

    # -- recovery ---------------------------------------------------------------------------------------------------

    def _recover(self, e: BinlogError, dec: Decoder, mm: Ranges, file_size: int) -> int | None:
        """Record the skip for error ``e``; return the position to go on from (``None``: where the decoder is)."""
        at = dec.position
        if e.pos is not None and e.pos < at:
            # inside a TRANSACTION_PAYLOAD already yielded: its events from the bad one on are lost; the decoder
            # still holds those before it, and goes on after the payload
            self._skip(e.pos, at, e, lost=1, resynced=False)
            return None
        if at == 0:  # no binlog magic: look for the first event after where it should be
            end = self._resync(mm, 4, file_size, dec)
            self._skip(0, end, e, lost=0 if end == 4 else 1, resynced=end != 4)
            return end
        size = _u32(mm, at + 9) if at + 13 <= file_size else 0
        if size >= dec.ctx.header_len and at + size <= file_size and self._next_ok(mm, at + size, file_size, dec):
            self._skip(at, at + size, e, lost=1, resynced=False)
            return at + size
        end = self._resync(mm, at + 1, file_size, dec)
        self._skip(at, end, e, lost=1, resynced=True)
        return end

    def _next_ok(self, mm: Ranges, pos: int, file_size: int, dec: Decoder) -> bool:
        """Whether a size field leads somewhere sane: the end of the file or a plausible header."""
        return pos == file_size or self._plausible(mm, pos, file_size, dec)

    def _plausible(self, mm: Ranges, pos: int, file_size: int, dec: Decoder) -> bool:
        """Whether an event header that the decoder would accept plausibly starts at ``pos``."""
        ctx = dec.ctx
        hlen = ctx.header_len
        if pos + hlen > file_size:
            return False
        size = _u32(mm, pos + 9)
        if size < hlen or pos + size > file_size:
            return False
        if ctx.encrypted:  # type code, log_pos and CRC are ciphertext; the size must lead on
            after = pos + size
            return after == file_size or (after + 13 <= file_size and _u32(mm, after + 9) >= hlen)
        code = mm[pos + 4]
        if code not in _KNOWN_CODES or (ctx.fde is None and code not in _FIRST):
            return False
        logpos_reliable = hlen == 19 and self._logpos_match == self._logpos_events  # no relay-log evidence yet
        if logpos_reliable and _u32(mm, pos + 13) != pos + size:
            return False
        if ctx.checksum_len and size >= hlen + 4:
            raw = mm[pos : pos + size]
            stored = int.from_bytes(raw[-4:], "little")
            if computed_checksum(raw, stored) != stored:
                return False
        return True

    def _resync(self, mm: Ranges, start: int, file_size: int, dec: Decoder) -> int:
        """The first position from ``start`` on where a plausible event header starts, else the end of the file."""
        last = file_size - dec.ctx.header_len
        known = _KNOWN_CODES
        encrypted = dec.ctx.encrypted
        for pos in range(start, last + 1):
            if (encrypted or mm[pos + 4] in known) and self._plausible(mm, pos, file_size, dec):
                return pos
        return file_size

    def _skip(self, start: int, end: int, e: BinlogError, lost: int, resynced: bool) -> None:
        if self.mode == "skip-transaction":
            if self._skipping is not None:  # a second error inside a skip: the stretch grows
                s = self._skipping
                s.end, s.lost, s.resynced = max(s.end, end), s.lost + lost, s.resynced or resynced
                return
            trx_start = self._trx.start if self._trx.open else None
            self._skipping = _Skipping(start, end, e.message, e, lost, resynced, trx_start)
            self._trx.lost()
            return
        self._emit(Skipped(self.path, start, end, e.message, lost, resynced, None, e))

    def _close_skip(self, end: int) -> None:
        s = self._skipping
        if s is None:
            return
        self._skipping = None
        self._emit(
            Skipped(self.path, s.start, max(s.end, end), s.reason, s.lost, s.resynced, s.transaction_start, s.error)
        )

    def _emit(self, rec: Skipped) -> None:
        self.summary.skipped.append(rec)
        if self.on_skip is not None:
            self.on_skip(rec)
        else:
            log.warning("%s", rec)


def _u32(mm: Ranges, pos: int) -> int:
    return int.from_bytes(mm[pos : pos + 4], "little")


def read_events_recovering(
    path: Binlog,
    *,
    on_error: OnError = "stop",
    on_skip: Callable[[Skipped], object] | None = None,
    options: DecodeOptions | None = None,
    decryptor: Decryptor | None = None,
    schema: SchemaTracker | None = None,
    start: int | None = None,
) -> RecoveringReader:
    """Yield the events of the binlog at ``path``, recovering from bad events as ``on_error`` says (see the module
    docstring).  The returned iterator's ``summary`` is a :class:`RecoverySummary`; in ``"stop"`` mode the first
    error is raised naming the file, as :func:`binlake.reader.read_events` does.  Only
    :class:`~binlake.errors.BinlogError` escapes.

    ``start``: the position of the first event to read (an event boundary, as :func:`binlake.reader.read_events`
    takes it: the file's header events are decoded first); where those header events are themselves damaged the
    file is read from its start (events before ``start`` are not yielded; its skips are all reported)."""
    return RecoveringReader(path, on_error, on_skip, options, decryptor, schema, start)
