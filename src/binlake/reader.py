"""Binlog files on disk → the sans-IO :class:`~binlake.decoder.Decoder` → events.

:class:`Decoder` is that decoder wired with the DDL tracker its options ask for (``binlake.Decoder``): the reader
knows both the decoder and :mod:`binlake.schema`, the core knows only the tracker's protocol.

A thin adapter: it reads a file in large chunks, feeds the decoder, names the file in every error, starts at any
event position (decoding the file's format description first), stops at a position, and can follow a file that the
server is still writing (a binlog in use ends in a partial event: the reader waits for the rest instead of
misparsing it).  :func:`walk_headers` is the cheap header-only walk; :func:`header_table` gives the same headers
of a range as columns, walked in C where ``binlake._framing`` is built (planning splits of large files uses it, and
:class:`HeaderCache` keeps it between the driver's plan and scan).

Every function takes a local path (memory-mapped where it walks or looks at bytes here and there: the fast path) or
a :class:`Source`: a binlog anywhere else (an object store's object, :class:`binlake.storage.StoredFile`), read as
a seekable stream in large chunks, and looked at through :class:`BufferedRanges` (a few blocks held: bounded
memory).  Both give the same events, headers and errors.

Example::

    for ev in read_events("binlog.000001"):
        print(ev.header.pos, ev.type, ev.summary())
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, TypeVar, overload, runtime_checkable

from binlake._compiled import compiled
from binlake.decoder import MAGIC, Decryptor
from binlake.decoder import Decoder as SansIODecoder
from binlake.errors import BinlogError, MalformedError, TruncatedError
from binlake.events.base import Event, EventType
from binlake.events.context import DdlTracker, DecodeOptions
from binlake.schema import SchemaTracker, schema_tracker

__all__ = [
    "Binlog",
    "BufferedRanges",
    "Decoder",
    "FileHead",
    "HeaderCache",
    "HeaderInfo",
    "HeaderTable",
    "Source",
    "binlog_name",
    "binlog_order",
    "byte_ranges",
    "file_head",
    "first_bytes",
    "header_table",
    "opened",
    "read_events",
    "resume_decoder",
    "span",
    "walk_headers",
]

CHUNK = 1 << 20
SOURCE_CHUNK = 8 << 20  # what one read of a Source asks for at most (one ranged request of an object store)
FIRST_SOURCE_CHUNK = 64 << 10
# The common event header: timestamp, type code, server id, event size, next position, flags (19 bytes).
_HEADER = struct.Struct("<IBIIIH")
_R = TypeVar("_R")
_D = TypeVar("_D", bound=SansIODecoder)

if TYPE_CHECKING:
    from binlake import _framing
else:  # the compiled header walk (src/binlake/_framing.c), when it was built and is not turned off
    _framing = compiled("_framing")


@runtime_checkable
class Source(Protocol):
    """A binlog that is no local file (:class:`binlake.storage.StoredFile`: an object in S3, GCS, ADLS, HDFS):
    a name for errors, its size, a seekable binary stream, and what identifies its content (size, modification
    time) for :class:`HeaderCache`."""

    @property
    def name(self) -> str: ...

    def size(self) -> int: ...

    def open(self) -> BinaryIO: ...

    def identity(self) -> tuple[object, ...]: ...


Binlog = str | os.PathLike[str] | Source


class Decoder(SansIODecoder):
    """The sans-IO :class:`binlake.decoder.Decoder` following the DDL of the QUERY events by default: given no
    ``schema`` and no ``context``, it makes the :class:`~binlake.schema.SchemaTracker` its options ask for
    (:func:`binlake.schema.schema_tracker`: ``DecodeOptions.track_schema`` and ``schema_sql``).  This is
    ``binlake.Decoder``.

    >>> d = Decoder()
    >>> type(d.ctx.schema).__name__, Decoder(DecodeOptions(track_schema=False)).ctx.schema
    ('SchemaTracker', None)
    """

    @staticmethod
    def default_schema(options: DecodeOptions) -> DdlTracker | None:
        return schema_tracker(options)


def binlog_name(path: Binlog) -> str:
    """The name errors give ``path``: the local path, or the source's URI."""
    return path.name if isinstance(path, Source) else os.fspath(path)


@contextmanager
def opened(path: Binlog) -> Iterator[tuple[BinaryIO, mmap.mmap | BufferedRanges | bytes, int]]:
    """``(stream, ranges, size)`` of a binlog: a seekable stream for the decoder, random access to its bytes
    (``len``, ``ranges[i]``, ``ranges[a:b]``: a memory map of a local file, :class:`BufferedRanges` of a
    :class:`Source`) and its size when opened."""
    if isinstance(path, Source):
        size = path.size()
        with path.open() as f, BufferedRanges(path, size) as ranges:
            yield f, ranges, size
        return
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            yield f, b"", 0
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            yield f, m, size


def first_bytes(path: Binlog, n: int) -> bytes:
    """The first ``n`` bytes of a binlog (fewer when it is shorter): one small read, also of an object."""
    if isinstance(path, Source):
        with path.open() as f:
            return bytes(f.read(n))
    with open(path, "rb") as f:
        return f.read(n)


@dataclass(frozen=True, slots=True)
class FileHead:
    """Who started a binlog file, and when: its first event's (the FORMAT_DESCRIPTION's) server id and timestamp
    (``created``, Unix seconds).  A server never rewrites them, and resends that event with both kept when a
    replica resumes in the file (``mysql_binlog_send``: it clears the ``created`` field and the next position)."""

    server_id: int
    created: int

    def __str__(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.created))
        return f"server {self.server_id}, started {when}"


def file_head(path: Binlog, size: int | None = None) -> FileHead | None:
    """The :class:`FileHead` of a binlog; ``None`` while its first event is not whole (a copy under way) in its
    first ``size`` bytes (default: the file as it is now; a caller that holds the file's size from a listing gives
    it, so that the head and what it compares with are of the same bytes while the file grows).  A file that does
    not start with the binlog magic raises :class:`~binlake.errors.MalformedError`."""
    data = first_bytes(path, 4 + _HEADER.size)
    if not MAGIC.startswith(data[:4]):
        raise MalformedError("not a binlog (bad magic)", file=binlog_name(path), pos=0)
    if len(data) < 4 + _HEADER.size:
        return None
    created, _code, server_id, event_size, _next, _flags = _HEADER.unpack_from(data, 4)
    if size is None:
        size = path.size() if isinstance(path, Source) else os.path.getsize(path)
    whole = size >= 4 + event_size
    return FileHead(server_id, created) if whole else None


@contextmanager
def byte_ranges(path: Binlog) -> Iterator[mmap.mmap | BufferedRanges | bytes]:
    """Random access to a binlog's bytes (:func:`opened`'s ``ranges``)."""
    if isinstance(path, Source):
        with BufferedRanges(path) as ranges:
            yield ranges
        return
    with opened(path) as (_, ranges, _size):
        yield ranges


class BufferedRanges:
    """Random access to a :class:`Source`'s bytes for readers that look here and there, mostly forward (the
    driver's scan of QUERY events, recovery's resync): aligned blocks of ``block`` bytes read on demand, at most
    ``blocks`` of them held (least recently used first out), so memory stays bounded whatever the file's size.

    ``len(r)``, ``r[i]`` (an int) and ``r[a:b]`` (bytes) as on a memory map; :func:`span` for a regular
    expression search without a copy."""

    def __init__(self, source: Source, size: int | None = None, *, block: int = 4 << 20, blocks: int = 4) -> None:
        self.source, self.block, self.blocks = source, block, blocks
        self._size = source.size() if size is None else size
        self._stream: BinaryIO | None = None
        self._held: dict[int, bytes] = {}  # block index -> its bytes, in use order (oldest first)

    def __enter__(self) -> BufferedRanges:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._held.clear()

    def __len__(self) -> int:
        return self._size

    def _block(self, index: int) -> bytes:
        data = self._held.pop(index, None)
        if data is None:
            if self._stream is None:
                self._stream = self.source.open()
            self._stream.seek(index * self.block)
            data = self._stream.read(self.block)
            while len(self._held) >= self.blocks:
                del self._held[next(iter(self._held))]
        self._held[index] = data
        return data

    @overload
    def __getitem__(self, key: int) -> int: ...

    @overload
    def __getitem__(self, key: slice) -> bytes: ...

    def __getitem__(self, key: int | slice) -> bytes | int:
        if isinstance(key, int):
            if not 0 <= key < self._size:
                raise IndexError(key)
            return self._block(key // self.block)[key % self.block]
        start, stop, step = key.indices(self._size)
        if step != 1:
            raise ValueError("BufferedRanges slices take no step")
        return self.read(start, stop)

    def read(self, start: int, stop: int) -> bytes:
        """The bytes ``[start, stop)`` (fewer at the end of the file)."""
        stop = min(stop, self._size)
        if stop <= start:
            return b""
        first, last = start // self.block, (stop - 1) // self.block
        if first == last:
            off = start - first * self.block
            return self._block(first)[off : off + stop - start]
        if last - first >= self.blocks:  # larger than what is held: read it through, keep nothing
            if self._stream is None:
                self._stream = self.source.open()
            self._stream.seek(start)
            return self._stream.read(stop - start)
        parts = [self._block(i) for i in range(first, last + 1)]
        joined = b"".join(parts)
        off = start - first * self.block
        return joined[off : off + stop - start]

    def span(self, start: int, stop: int) -> tuple[bytes, int, int]:
        """``(buffer, a, b)``: the bytes ``[start, stop)`` are ``buffer[a:b]`` (a held block when they lie in one)."""
        first, last = start // self.block, (max(stop, start + 1) - 1) // self.block
        if first == last and stop <= self._size:
            off = first * self.block
            return self._block(first), start - off, stop - off
        data = self.read(start, stop)
        return data, 0, len(data)


def span(ranges: mmap.mmap | BufferedRanges | bytes, start: int, stop: int) -> tuple[mmap.mmap | bytes, int, int]:
    """``(buffer, a, b)`` with ``buffer[a:b]`` the bytes ``[start, stop)`` of ``ranges``, for ``pattern.search(buffer,
    a, b)`` without a copy (a memory map is its own buffer)."""
    if isinstance(ranges, BufferedRanges):
        return ranges.span(start, stop)
    return ranges, start, stop


@dataclass(frozen=True, slots=True)
class HeaderInfo:
    """One event's position, type code, size and flags, read without decoding its body."""

    pos: int
    type_code: int
    size: int
    flags: int
    timestamp: int


def read_events(
    path: Binlog,
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
    ``path``: a local file, or a :class:`Source` (read in chunks of :data:`SOURCE_CHUNK`; never followed).
    """
    name = binlog_name(path)
    if follow and isinstance(path, Source):
        raise BinlogError("follow=True reads a local file the server is writing, not an object", file=name)
    try:
        yield from _read(
            path if isinstance(path, Source) else Path(name),
            options,
            start,
            stop,
            follow,
            poll_interval,
            idle_timeout,
            should_stop,
            decryptor,
            schema,
        )
    except BinlogError as e:
        raise e.at_file(name) from None
    except OSError as e:
        raise BinlogError(f"cannot read: {e.strerror or e}", file=name) from e


def _read(
    path: Path | Source,
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
    if isinstance(path, Source):
        # a Source does not grow while read; its reads start small (a read of one event costs a small request) and
        # double up to SOURCE_CHUNK (a long read costs few requests)
        f, known, chunk_size, first = path.open(), path.size(), FIRST_SOURCE_CHUNK, FIRST_SOURCE_CHUNK
    else:
        f, known, chunk_size, first = open(path, "rb"), None, CHUNK, CHUNK  # noqa: SIM115 (closed by the with below)
    with f:
        dec = Decoder(options, schema=schema, decryptor=decryptor)
        if start is not None and start > 4:
            dec = resume_decoder(f, start, dec, chunk=first)
        idle_since = time.monotonic()
        while True:
            chunk = f.read(chunk_size)
            if known is not None:
                chunk_size = min(2 * chunk_size, SOURCE_CHUNK)
            if chunk:
                idle_since = time.monotonic()
                dec.feed(chunk)
                for ev in dec.events():
                    if stop is not None and ev.header.in_payload is None and ev.header.pos >= stop:
                        return
                    yield ev
                if stop is not None and dec.position >= stop:
                    return  # the next event starts at the stop: what follows (maybe a partial event) is not read
                size = dec.next_size()
                if (
                    size is not None
                    and not follow
                    and dec.position + size > (known if known is not None else os.fstat(f.fileno()).st_size)
                ):
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


def resume_decoder(f: BinaryIO, start: int, dec: _D, *, chunk: int = CHUNK) -> _D:
    """Prepare ``dec`` to decode from event position ``start``: decode the file's header events first (the format
    description, and MariaDB's START_ENCRYPTION right after it, whose nonce decrypts every later event), read
    ``chunk`` bytes at a time, then continue at ``start`` with that state.

    The decoder's schema tracker is left out meanwhile: it holds the schema at ``start`` already, server start and
    DDL before it included, and the events read here come before it (the first event after the header events is
    decoded too: a ``DROP DATABASE`` there forgot every table the CREATE TABLEs after it gave the tracker, and a
    format description that says the server started forgot the temporary tables of the sessions before
    ``start``)."""
    schema, dec.ctx.schema = dec.ctx.schema, None
    try:
        return _resume(f, start, dec, chunk)
    finally:
        dec.ctx.schema = schema


def _resume(f: BinaryIO, start: int, dec: _D, chunk: int) -> _D:
    f.seek(0)
    while True:
        chunk_bytes = f.read(min(chunk, max(start - f.tell(), 19)))
        if not chunk_bytes:
            dec.finish()
            raise MalformedError("no format description event at the start of the file", pos=4)
        dec.feed(chunk_bytes)
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


def binlog_order(name: str) -> tuple[str, int]:
    """A sort key of binlog file names: the base name, then the numeric extension as a number (``.999999`` is
    followed by ``.1000000``)."""
    base, _, ext = name.rpartition(".")
    return (base, int(ext)) if ext.isdigit() else (name, -1)


def walk_headers(path: Binlog, start: int = 4, stop: int | None = None) -> Iterator[HeaderInfo]:
    """Yield the header of every event from ``start`` on, reading nothing else (memory-mapped; fast; a
    :class:`Source` is read in chunks as the walk goes).

    Raises :class:`~binlake.errors.TruncatedError` naming the file at a partial event.  Encrypted parts of MariaDB
    logs walk too (the size stays in clear), but their type codes and timestamps are ciphertext.
    """
    if isinstance(path, Source):
        yield from _walk_source(path, start, stop)
        return
    name = os.fspath(path)
    with _mapped(name) as m:
        end, why, bad_size = yield from _headers(m, start, stop, HeaderInfo)
        if why:
            raise _header_error(name, end, why, bad_size)


def _walk_source(src: Source, start: int, stop: int | None) -> Iterator[HeaderInfo]:
    """:func:`walk_headers` of a :class:`Source`: chunks read as the walk needs them (the first one small, so
    looking at a file's first events costs one small request)."""
    with src.open() as f:
        size = _source_size(src, f)
        end = size if stop is None else min(stop, size)
        pos, want = start, 64 << 10
        while pos < end:
            f.seek(pos)
            buf = f.read(min(want, size - pos))
            want = SOURCE_CHUNK
            stopped, _, _ = yield from _headers(buf, 0, end - pos, functools.partial(_moved, pos))
            if stopped:
                pos += stopped
                continue
            head = _read_at(f, pos, 19)  # no whole event in the chunk: one larger than it, or the walk's end
            if not _whole(head, size - pos):
                raise _header_error(src.name, pos, *_why(head, size - pos, pos, end))
            ts, code, _, ev_size, _, flags = _HEADER.unpack_from(head)
            yield HeaderInfo(pos, code, ev_size, flags, ts)
            pos += ev_size


def _moved(base: int, pos: int, code: int, size: int, flags: int, ts: int) -> HeaderInfo:
    return HeaderInfo(base + pos, code, size, flags, ts)


def _source_size(src: Source, f: BinaryIO) -> int:
    """The size of a :class:`Source` once its magic is checked (as :func:`_mapped` checks a local file's)."""
    size = src.size()
    if size < 4:
        raise TruncatedError("file shorter than the binlog magic", file=src.name, pos=0)
    f.seek(0)
    if f.read(4) != MAGIC:
        raise MalformedError("not a binlog (bad magic)", file=src.name, pos=0)
    return size


def _whole(head: bytes, left: int) -> bool:
    """Whether the header ``head`` starts an event the file's ``left`` bytes hold whole (as the walks go on)."""
    if len(head) < 19:
        return False
    size = int.from_bytes(head[9:13], "little")
    return 19 <= size <= left


def _read_at(f: BinaryIO, pos: int, n: int) -> bytes:
    f.seek(pos)
    return f.read(n)


# Why a header walk stops before its range ends (:func:`_stop_reason`).
_PARTIAL_HEADER, _SMALL_EVENT, _PARTIAL_EVENT = 1, 2, 3


def _stop_reason(m: mmap.mmap | bytes, pos: int, end: int) -> tuple[int, int]:
    """Why a walk of ``m`` that was to go on to ``end`` stopped at ``pos``: ``(0, 0)`` when it reached ``end``, else
    ``(why, bad_size)`` from the bytes at ``pos`` (a partial header, a size below the header's, a partial event).
    Both walks (C and Python) stop exactly where these bytes are no whole event."""
    return _why(m[pos : pos + 19], len(m) - pos, pos, end)


def _why(head: bytes, left: int, pos: int, end: int) -> tuple[int, int]:
    """:func:`_stop_reason` from the (up to 19) bytes at ``pos`` and the ``left`` bytes of the file from there."""
    if pos >= end:
        return 0, 0
    if left < 19:
        return _PARTIAL_HEADER, 0
    size = int.from_bytes(head[9:13], "little")
    return (_SMALL_EVENT, size) if size < 19 else (_PARTIAL_EVENT, 0)


def _header_error(name: str, pos: int, why: int, bad_size: int) -> BinlogError:
    if why == _PARTIAL_HEADER:
        return TruncatedError("partial event header at the end of the file", file=name, pos=pos)
    if why == _SMALL_EVENT:
        return MalformedError(f"event size {bad_size} is smaller than the event header", file=name, pos=pos)
    return TruncatedError("partial event at the end of the file", file=name, pos=pos)


@contextmanager
def _mapped(name: str) -> Iterator[mmap.mmap]:
    """The file at ``name`` memory-mapped, once its magic is checked."""
    with open(name, "rb") as f:
        if os.fstat(f.fileno()).st_size < 4:
            raise TruncatedError("file shorter than the binlog magic", file=name, pos=0)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m[:4] != MAGIC:
                raise MalformedError("not a binlog (bad magic)", file=name, pos=0)
            yield m


def _headers(
    m: mmap.mmap | bytes, start: int, stop: int | None, row: Callable[[int, int, int, int, int], _R]
) -> Generator[_R, None, tuple[int, int, int]]:
    """``row(pos, type_code, size, flags, timestamp)`` of every event header (the common header of MySQL's
    ``Log_event_header``, libbinlogevents/src/binlog_event.cpp) from ``start`` while the position is below
    ``stop``, following the event sizes; returns where it stopped, why (0: the range ended) and the bad size."""
    size = len(m)
    pos, end = start, size if stop is None else min(stop, size)
    while pos < end and size - pos >= 19:
        ts, code, _, ev_size, _, flags = _HEADER.unpack_from(m, pos)
        if ev_size < 19 or pos + ev_size > size:
            break
        yield row(pos, code, ev_size, flags, ts)
        pos += ev_size
    return (pos, *_stop_reason(m, pos, end))


_Walk = tuple[bytes, bytes, bytes, bytes, bytes, int]


def _walk_python(m: mmap.mmap | bytes, start: int, stop: int) -> _Walk:
    """``_framing.walk`` in Python: the headers of :func:`_headers` as packed native columns, and where it
    stopped."""
    positions, sizes, codes, flags, stamps = array("q"), array("I"), bytearray(), array("H"), array("I")

    def add(pos: int, code: int, size: int, flag: int, ts: int) -> None:
        positions.append(pos)
        sizes.append(size)
        codes.append(code)
        flags.append(flag)
        stamps.append(ts)

    headers = _headers(m, start, stop, add)
    try:
        while True:
            next(headers)
    except StopIteration as done:
        end = done.value[0]
    return positions.tobytes(), sizes.tobytes(), bytes(codes), flags.tobytes(), stamps.tobytes(), end


@dataclass(frozen=True, slots=True)
class HeaderTable:
    """What :func:`walk_headers` gives for a range, as columns: row ``i`` is the ``i``-th event's position, size,
    type code, flags and timestamp (``positions[i]`` etc.; ``codes`` is one byte per event, so a
    regular expression or ``bytes.find`` looks for type codes at C speed), then the error it raises after them
    (:meth:`error`).  ``end`` is where the walk stopped: the end of the last event (``start`` when there is
    none), also the position of the error.

    Example::

        t = header_table("binlog.000001")
        [t.positions[i] for i, code in enumerate(t.codes) if code == EventType.XID_EVENT]
    """

    path: str
    file_size: int
    start: int
    stop: int | None
    positions: Sequence[int]
    sizes: Sequence[int]
    codes: bytes
    flags: Sequence[int]
    timestamps: Sequence[int]
    end: int
    why: int  # 0: the range ended; else what is wrong at ``end`` (_PARTIAL_HEADER, _SMALL_EVENT, _PARTIAL_EVENT)
    bad_size: int

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self) -> Iterator[HeaderInfo]:
        """The headers as :func:`walk_headers` yields them, and its error after them."""
        for row in zip(self.positions, self.codes, self.sizes, self.flags, self.timestamps, strict=True):
            yield HeaderInfo(*row)
        error = self.error()
        if error is not None:
            raise error

    def error(self) -> BinlogError | None:
        """The error :func:`walk_headers` raises after the rows (a fresh one per call), or ``None``."""
        return _header_error(self.path, self.end, self.why, self.bad_size) if self.why else None

    def part(self, start: int, stop: int | None) -> HeaderTable | None:
        """The table of walking ``[start, stop)`` of the same file, taken from this one (no copy of the columns)
        where it holds that walk: ``start`` is one of its positions or its end, and it walked past ``stop`` or
        stopped at an error; else ``None``."""
        n = len(self)
        i = n if start == self.end else bisect_left(self.positions, start)
        if (self.positions[i] if i < n else self.end) != start:
            return None  # not an event boundary of this walk: a walk from there reads other bytes as headers
        limit = self.file_size if stop is None else min(stop, self.file_size)
        if not self.why and limit > self.end:
            return None  # this walk ended before the range does
        j = bisect_left(self.positions, limit, i) if start < limit else i
        why = self.why if limit > self.end else 0
        end = self.end if why or j == n else self.positions[j]
        return HeaderTable(
            self.path, self.file_size, start, stop, self.positions[i:j], self.sizes[i:j], self.codes[i:j],
            self.flags[i:j], self.timestamps[i:j], end, why, self.bad_size if why else 0,
        )  # fmt: skip


def header_table(path: Binlog, start: int = 4, stop: int | None = None) -> HeaderTable:
    """The headers :func:`walk_headers` yields from ``start`` to ``stop``, as a :class:`HeaderTable`, walked in C by
    ``binlake._framing.walk`` where it is built (the Python walk otherwise: the same table).  A bad header ends the
    table (its :meth:`~HeaderTable.error`) instead of raising; a file that is no binlog raises.  A :class:`Source`
    is walked a chunk of :data:`SOURCE_CHUNK` bytes at a time.

    Example::

        t = header_table("binlog.000001", 4)
        len(t), t.end, t.error()          # events, where the walk stopped, what stopped it early (or None)
    """
    if start < 0:
        raise ValueError(f"start {start} is negative")
    if isinstance(path, Source):
        return _source_table(path, start, stop)
    name = os.fspath(path)
    with _mapped(name) as m:
        size = len(m)
        limit = size if stop is None else min(stop, size)
        walk = _walk_python if _framing is None else _framing.walk
        pos, sizes, codes, flags, stamps, end = walk(m, start, limit)
        why, bad_size = _stop_reason(m, end, limit)
    return HeaderTable(
        name, size, start, stop, memoryview(pos).cast("q"), memoryview(sizes).cast("I"), codes,
        memoryview(flags).cast("H"), memoryview(stamps).cast("I"), end, why, bad_size,
    )  # fmt: skip


def _source_table(src: Source, start: int, stop: int | None) -> HeaderTable:
    """:func:`header_table` of a :class:`Source`: each chunk walked as a buffer of its own (positions moved by the
    chunk's offset), an event larger than a chunk taken from its header alone, so memory stays a chunk."""
    walk = _walk_python if _framing is None else _framing.walk
    positions, sizes, flags, stamps = array("q"), array("I"), array("H"), array("I")
    codes = bytearray()
    with src.open() as f:
        size = _source_size(src, f)
        limit = size if stop is None else min(stop, size)
        pos = start
        while pos < limit:
            f.seek(pos)
            buf = f.read(min(SOURCE_CHUNK, size - pos))
            p, n, c, fl, ts, end = walk(buf, 0, min(len(buf), limit - pos))
            if end:
                base = pos
                positions.extend(base + x for x in memoryview(p).cast("q"))
                sizes.frombytes(n)
                codes += c
                flags.frombytes(fl)
                stamps.frombytes(ts)
                pos += end
                continue
            head = _read_at(f, pos, 19)  # no whole event in the chunk: one larger than it, or the walk's end
            if not _whole(head, size - pos):
                break
            t, code, _, ev_size, _, flag = _HEADER.unpack_from(head)
            positions.append(pos)
            sizes.append(ev_size)
            codes.append(code)
            flags.append(flag)
            stamps.append(t)
            pos += ev_size
        why, bad_size = _why(_read_at(f, pos, 19), size - pos, pos, limit)
    return HeaderTable(
        src.name, size, start, stop, memoryview(positions), memoryview(sizes), bytes(codes), memoryview(flags),
        memoryview(stamps), pos, why, bad_size,
    )  # fmt: skip


class HeaderCache:
    """The header tables of the files walked last, so that planning a file and then scanning its splits
    (:func:`binlake.ingest.plan.plan_splits`, :func:`binlake.ingest.statements.scan_statements`) walk its headers
    once: :meth:`table` answers from the table of an earlier walk of the same file (same size, modification time
    and inode) that holds the range, else walks it and keeps that table.  Holds at most ``max_events`` rows (19
    bytes each), forgetting the oldest tables first.

    Example::

        headers = HeaderCache()
        splits = plan_splits(files, headers=headers)
        scan_statements(splits, tracker, read, headers=headers)     # no second walk
    """

    def __init__(self, max_events: int = 1 << 23) -> None:
        self.max_events = max_events
        self._tables: dict[str, tuple[tuple[object, ...], HeaderTable]] = {}

    def table(self, path: Binlog, start: int = 4, stop: int | None = None) -> HeaderTable:
        """:func:`header_table` of ``path`` from ``start`` to ``stop``."""
        name = binlog_name(path)
        if isinstance(path, Source):
            key: tuple[object, ...] = path.identity()
        else:
            st = os.stat(name)
            key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
        held = self._tables.get(name)
        if held is not None and held[0] == key:
            part = held[1].part(start, stop)
            if part is not None:
                return part
        table = header_table(path, start, stop)
        self._tables.pop(name, None)
        if table.file_size == key[0] and len(table) <= self.max_events:
            while self._tables and sum(len(t) for _, t in self._tables.values()) + len(table) > self.max_events:
                del self._tables[next(iter(self._tables))]
            self._tables[name] = (key, table)
        return table

    def clear(self) -> None:
        """Forget every table (their memory goes with them)."""
        self._tables.clear()
