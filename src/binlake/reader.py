"""Binlog files on disk → the sans-IO :class:`~binlake.decoder.Decoder` → events.

A thin adapter: it reads a file in large chunks, feeds the decoder, names the file in every error, starts at any
event position (decoding the file's format description first), stops at a position, and can follow a file that the
server is still writing (a binlog in use ends in a partial event: the reader waits for the rest instead of
misparsing it).  :func:`walk_headers` is the cheap header-only walk used to plan splits of large files.

Example::

    for ev in read_events("binlog.000001"):
        print(ev.header.pos, ev.type, ev.summary())
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from binlake.decoder import MAGIC, Decoder, Decryptor
from binlake.errors import BinlogError, MalformedError, TruncatedError
from binlake.events.base import Event, EventType
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.schema import SchemaTracker

__all__ = ["HeaderInfo", "read_events", "walk_headers"]

CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class HeaderInfo:
    """One event's position, type code, size and flags, read without decoding its body."""

    pos: int
    type_code: int
    size: int
    flags: int
    timestamp: int


def read_events(
    path: str | os.PathLike[str],
    *,
    options: DecodeOptions | None = None,
    start: int | None = None,
    stop: int | None = None,
    follow: bool = False,
    poll_interval: float = 0.5,
    idle_timeout: float | None = None,
    should_stop: Callable[[], bool] | None = None,
    decryptor: Decryptor | None = None,
    schema: SchemaTracker | None = None,
) -> Iterator[Event]:
    """Yield the events of the binlog at ``path``.

    ``start``: position of the first event to yield (an event boundary; the format description at position 4 is
    decoded first but not yielded).  ``stop``: yield only events that start before it.  ``follow``: at the end of
    the file, wait for more bytes (polling every ``poll_interval`` s) until ``should_stop()`` is true or nothing
    arrived for ``idle_timeout`` s; without ``follow`` a partial event at the end is a
    :class:`~binlake.errors.TruncatedError`.  ``schema``: a :class:`~binlake.schema.SchemaTracker` to continue
    (pass the same one for consecutive files of one log, so DDL seen in one file applies to the next).
    """
    name = os.fspath(path)
    try:
        yield from _read(
            Path(name), options, start, stop, follow, poll_interval, idle_timeout, should_stop, decryptor, schema
        )
    except BinlogError as e:
        raise e.at_file(name) from None
    except OSError as e:
        raise BinlogError(f"cannot read: {e.strerror or e}", file=name) from e


def _read(
    path: Path,
    options: DecodeOptions | None,
    start: int | None,
    stop: int | None,
    follow: bool,
    poll: float,
    idle_timeout: float | None,
    should_stop: Callable[[], bool] | None,
    decryptor: Decryptor | None,
    schema: SchemaTracker | None,
) -> Iterator[Event]:
    with open(path, "rb") as f:
        dec = Decoder(context=DecodeContext(options or DecodeOptions(), schema=schema), decryptor=decryptor)
        if start is not None and start > 4:
            dec = _resume(f, start, dec)
        idle_since = time.monotonic()
        while True:
            chunk = f.read(CHUNK)
            if chunk:
                idle_since = time.monotonic()
                dec.feed(chunk)
                for ev in dec.events():
                    if stop is not None and ev.header.in_payload is None and ev.header.pos >= stop:
                        return
                    yield ev
                size = dec.next_size()
                if size is not None and not follow and dec.position + size > os.fstat(f.fileno()).st_size:
                    dec.finish()  # the claimed size runs past the end of the file: do not buffer toward it
                continue
            if not follow:
                dec.finish()
                return
            if (should_stop is not None and should_stop()) or (
                idle_timeout is not None and time.monotonic() - idle_since > idle_timeout
            ):
                return
            time.sleep(poll)


_HEADER_EVENTS = (EventType.FORMAT_DESCRIPTION_EVENT, EventType.START_EVENT_V3, EventType.START_ENCRYPTION_EVENT)


def _resume(f: BinaryIO, start: int, dec: Decoder) -> Decoder:
    """Prepare ``dec`` to decode from event position ``start``: decode the file's header events first (the format
    description, and MariaDB's START_ENCRYPTION right after it, whose nonce decrypts every later event), then
    continue at ``start`` with that state."""
    f.seek(0)
    while True:
        chunk = f.read(min(CHUNK, max(start - f.tell(), 19)))
        if not chunk:
            dec.finish()
            raise MalformedError("no format description event at the start of the file", pos=4)
        dec.feed(chunk)
        try:
            for ev in dec.events():
                if ev.header.type_code not in _HEADER_EVENTS or ev.header.end_pos >= start:
                    break
            else:
                continue
        except BinlogError:
            if dec.ctx.fde is None:  # past the header events an error is the range's business, not ours
                raise
        if dec.ctx.fde is None:
            raise MalformedError("no format description event before the start position", pos=4)
        dec.restart(start)
        f.seek(start)
        return dec


def walk_headers(path: str | os.PathLike[str], start: int = 4, stop: int | None = None) -> Iterator[HeaderInfo]:
    """Yield the header of every event from ``start`` on, reading nothing else (memory-mapped; fast).

    Raises :class:`~binlake.errors.TruncatedError` naming the file at a partial event.  Encrypted parts of MariaDB
    logs walk too (the size stays in clear), but their type codes and timestamps are ciphertext.
    """
    name = os.fspath(path)
    with open(name, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 4:
            raise TruncatedError("file shorter than the binlog magic", file=name, pos=0)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m[:4] != MAGIC:
                raise MalformedError("not a binlog (bad magic)", file=name, pos=0)
            pos, end = start, size if stop is None else min(stop, size)
            while pos < end:
                if size - pos < 19:
                    raise TruncatedError("partial event header at the end of the file", file=name, pos=pos)
                ts = int.from_bytes(m[pos : pos + 4], "little")
                code = m[pos + 4]
                ev_size = int.from_bytes(m[pos + 9 : pos + 13], "little")
                flags = int.from_bytes(m[pos + 17 : pos + 19], "little")
                if ev_size < 19:
                    raise MalformedError(f"event size {ev_size} is smaller than the event header", file=name, pos=pos)
                if pos + ev_size > size:
                    raise TruncatedError("partial event at the end of the file", file=name, pos=pos)
                yield HeaderInfo(pos, code, ev_size, flags, ts)
                pos += ev_size
