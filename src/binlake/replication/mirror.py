"""``binlake mirror`` (:mod:`binlake.cli.mirror`): copy a server's binlog files byte for byte into a directory, as a
replica reads them, and keep the copy going (a binlog backup, like ``mariadb-binlog --read-from-remote-server --raw
--stop-never``).

Each file in the directory has the server's name and bytes: the magic, then every event as the server's file holds
it, from its FORMAT_DESCRIPTION on (what the server sends besides its files' events, the artificial ROTATE and
GTID_LIST, heartbeats, a resent FORMAT_DESCRIPTION, is not written).  Every event's CRC32 is checked by the decoder
before it is written.  The file being written carries LOG_EVENT_BINLOG_IN_USE_F in its FORMAT_DESCRIPTION, as the
server's open binlog does (a dump thread clears the flag on the wire; the CRC32 is computed without it); the flag is
cleared when the file is complete (its ROTATE or STOP arrived, or the server went on to the next file), so a
finished copy equals the server's file byte for byte, and a reader can tell a complete file from one still growing.

The directory is a local folder or an object-store URI (:mod:`binlake.storage`: ``s3://bucket/binlogs``).  On a
local disk the file being written is appended to in place.  An object store has no appends, and uploading the
growing file whole would cost each sync the size of the file so far; so there a copy is kept in segments
(:data:`binlake.storage.PART`): ``NAME.part/OFFSET`` holds the bytes from ``OFFSET`` on, one object (one PUT,
whole events only) per upload of what arrived since the last one: when the file is complete, every
:data:`UPLOAD_EVERY` seconds while it grows, and whenever :meth:`Mirror.sync` asks (the live ingest does before
each batch).  Segment 0 holds the magic and the FORMAT_DESCRIPTION alone, so clearing the in-use flag when the
file is complete rewrites that small object, not the file.  Readers take the segments as one file
(:func:`binlake.storage.binlog_pieces`, :class:`binlake.storage.SegmentedFile`); a whole object ``NAME`` a mirror
wrote before segments is the start of its copy, continued by segments after it.

The directory is the mirror's only state: a restarted mirror finds its last file, cuts a partial event at its end
back off (a kill during a write leaves one on a local disk; a segment holds whole events, so there the copy ends
with its last segment written whole) and asks the server to go on at that file's size.  A purged binlog there
is an error naming it (:class:`~binlake.errors.BinlogPurgedError`), never a silent jump to a later file; a file of
that name the server started anew (``RESET MASTER``, a rebuilt server: the format description the server resends
has another server id or start time than the copy's) is a :class:`~binlake.errors.BinlogHistoryError`, never bytes
of another file appended to the copy.

Why the live ingest (``binlake ingest --host``) is designed as this mirror into the lake's storage plus the existing
file ingest of the mirrored files, rather than Spark tasks reading the socket:

- the file ingest already does everything the live one must (planning splits at transaction boundaries, schema
  history, typed change tables, current state, exactly-once batches keyed by file and position); a second pipeline
  fed from a socket would duplicate all of it;
- a mirror file is replayable: a failed or killed batch re-reads the same bytes, whereas a socket delivers once,
  so exactly-once would otherwise hang on holding batches in memory or a second log of our own;
- the resume point of the copy is its files' sizes, written with the bytes themselves (no state to drift), and the
  ingest's own progress is its batch manifests over the same files: each side restarts from its own durable state;
- a replication connection is one ordered stream, while the file ingest parallelises over files and within files;
  the mirror is the one sequential part, kept to a byte copy that outruns the decoding;
- the copy is a backup in its own right (point-in-time recovery with ``mariadb-binlog``), the same files ``binlake
  events``/``dump``/``explain`` read.

Example::

    $ binlake mirror --host db1 --user repl --password-file pw --server-id 4242 --from-start backup/ --follow
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from binlake.decoder import MAGIC
from binlake.errors import BinlogHistoryError, ReplicationError
from binlake.events.base import LOG_EVENT_BINLOG_IN_USE_F, EventType
from binlake.events.control import RotateEvent
from binlake.metrics import NO_METRICS, Metrics
from binlake.reader import FileHead, binlog_order, file_head, header_table
from binlake.replication.client import ReplicationClient
from binlake.replication.options import ConnectionOptions
from binlake.replication.position import StartAt
from binlake.replication.stream import StreamEvent
from binlake.storage import (
    PART,
    Location,
    Piece,
    SegmentedFile,
    binlog_copies,
    binlog_pieces,
    locate,
    segment_name,
)

__all__ = [
    "UPLOAD_EVERY",
    "Mirror",
    "MirrorStats",
    "mirror_files",
    "recover_file",
]

log = logging.getLogger("binlake.replication")

_FDE_FLAGS_AT = 4 + 17
_FILE_ENDS = (EventType.ROTATE_EVENT, EventType.STOP_EVENT)
_FLUSH_EVERY = 0.5  # seconds: the longest a received event waits in the write buffer (local disk)
UPLOAD_EVERY = 10.0
"""Seconds: on an object store, the longest a received event waits before the growing file is uploaded again."""
_CHUNK = 8 << 20  # bytes per read or write when a spool file goes to an object store (a segment)


@dataclass(slots=True)
class MirrorStats:
    """What one run copied: events, bytes, and the files it wrote to (how many, the first and the last)."""

    events: int = 0
    bytes: int = 0
    files: int = 0
    first: str | None = None
    last: str | None = None

    def wrote(self, name: str) -> None:
        self.files += 1
        self.first = self.first or name
        self.last = name


def mirror_files(directory: str | os.PathLike[str] | Location) -> list[Location]:
    """The binlog files of a mirror directory, local or in an object store (names ending in a number, starting with
    the magic), in binlog order: each as ``directory / name`` (a copy kept in segments is read through
    :func:`copy_source`)."""
    folder = locate(directory)
    found = []
    for name, pieces in binlog_copies(folder).items():
        _, _, ext = name.rpartition(".")
        if ext.isdigit():
            with pieces[0].location.open_input() as f:
                head = bytes(f.read(4))
            if MAGIC.startswith(head):  # a kill can leave a local file shorter than the magic
                found.append(folder / name)
    return sorted(found, key=lambda loc: binlog_order(loc.name))


def copy_source(loc: Location) -> str | SegmentedFile:
    """What :mod:`binlake.reader` reads for the copy of binlog ``loc.name`` in the mirror directory ``loc.parent``:
    the local file, or the objects holding it in an object store."""
    return loc.uri if loc.is_local else SegmentedFile(loc.parent, loc.name)


def recover_file(path: Path) -> tuple[int, bool]:
    """Cut the local file ``path`` back to the end of its last whole event; return that size and whether the file is
    complete (it ends with a ROTATE or STOP: its in-use flag is then cleared).  A file without a whole event is cut
    back to the magic."""
    size = path.stat().st_size
    if size < 4:
        with path.open("wb") as f:
            f.write(MAGIC)
        return 4, False
    table = header_table(path)
    end = table.end
    if end < size:
        log.warning("%s: cutting a partial event at %d off (%d bytes)", path, end, size - end)
        os.truncate(path, end)
    complete = len(table) > 0 and table.codes[-1] in _FILE_ENDS
    if complete:
        _set_in_use(path, False)
    return end, complete


def _recover(loc: Location) -> int:
    """:func:`recover_file` for a local file or a copy in an object store (its pieces: one cut back to the end of
    its last whole event, the ones after it and segments off its chain removed, its in-use flag cleared if it is
    complete); the size of its whole events."""
    if loc.is_local:
        return recover_file(Path(loc.uri))[0]
    pieces = binlog_pieces(loc.parent, loc.name)
    table = header_table(SegmentedFile(loc.parent, loc.name, pieces))
    end = max(table.end, 4)
    kept = {p.location for p in pieces if p.offset < end}
    for segment in (loc.parent / (loc.name + PART)).list():
        if segment.location not in kept:
            segment.location.delete()  # after the last whole event, or a leftover off the chain
    last = next(p for p in reversed(pieces) if p.offset < end)
    if last.end > end:
        log.warning("%s: cutting a partial event at %d off (%d bytes)", loc, end, last.end - end)
        last.location.write_bytes(last.location.read_bytes()[: end - last.offset])
    if len(table) > 0 and table.codes[-1] in _FILE_ENDS:
        _clear_stored_in_use(loc, pieces)
    return end


def _clear_stored_in_use(loc: Location, pieces: list[Piece]) -> None:
    """Clear the in-use flag of the copy ``loc`` in an object store, held by ``pieces``: the flags' byte read
    through the copy's reader (one ranged request), and where it is set the piece holding it rewritten (segment 0,
    the magic and the FORMAT_DESCRIPTION alone, a few hundred bytes; a whole object a mirror wrote before segments,
    once; segment 4 after a segment 0 of the magic alone, which binlake 0.1's mirror wrote when a sync came between
    the two).  A copy that ends before the flags has none."""
    piece = next((p for p in pieces if p.offset <= _FDE_FLAGS_AT < p.end), None)
    if piece is None:
        return
    with SegmentedFile(loc.parent, loc.name, pieces).open() as f:
        f.seek(_FDE_FLAGS_AT)
        flags = f.read(1)
    if flags[0] & LOG_EVENT_BINLOG_IN_USE_F:
        data = bytearray(piece.location.read_bytes())
        data[_FDE_FLAGS_AT - piece.offset] &= ~LOG_EVENT_BINLOG_IN_USE_F
        piece.location.write_bytes(bytes(data))


def _set_in_use(path: Path, in_use: bool) -> None:
    """Set or clear LOG_EVENT_BINLOG_IN_USE_F in the FORMAT_DESCRIPTION at position 4 of ``path``."""
    with path.open("r+b") as f:
        _patch_in_use(f, in_use)


def _patch_in_use(f: BinaryIO, in_use: bool) -> None:
    """:func:`_set_in_use` on an open file (left positioned at its end)."""
    f.seek(_FDE_FLAGS_AT)
    flags = f.read(1)
    if len(flags) == 1:
        new = flags[0] | LOG_EVENT_BINLOG_IN_USE_F if in_use else flags[0] & ~LOG_EVENT_BINLOG_IN_USE_F
        if new != flags[0]:
            f.seek(_FDE_FLAGS_AT)
            f.write(bytes([new]))
    f.seek(0, os.SEEK_END)


def _copy_stream(src: BinaryIO, dst: BinaryIO) -> None:
    while chunk := src.read(_CHUNK):
        dst.write(chunk)


class _Copy:
    """The copy being written of one binlog file: appended to in place on a local disk; for an object store, what
    arrived since the last upload is kept in a local spool file and uploaded as the next segment by :meth:`flush`
    (``durable``, or :data:`UPLOAD_EVERY` after the last upload) and :meth:`close` (see the module docstring)."""

    def __init__(self, loc: Location, *, existing: bool) -> None:
        self.loc = loc
        self._flushed = time.monotonic()
        if loc.is_local:
            self._out: BinaryIO = Path(loc.uri).open("ab")  # noqa: SIM115 (closed by close())
            self.size = self._out.tell()
            self._first = loc
        else:
            self._out = tempfile.TemporaryFile(prefix="binlake-mirror-")  # noqa: SIM115 (closed by close())
            pieces = binlog_pieces(loc.parent, loc.name) if existing else []
            self.size = pieces[-1].end if pieces else 0
        self._sent = self.size  # (object store) the bytes before it are uploaded; the spool holds the rest
        if self.size == 0:
            self.write(MAGIC)

    def _segment(self, offset: int) -> Location:
        return self.loc.parent / f"{self.loc.name}{PART}" / segment_name(offset)

    def write(self, raw: bytes) -> None:
        self._out.write(raw)
        self.size += len(raw)
        if self._sent == 0 and self.size > len(MAGIC) and not self.loc.is_local:
            self._upload()  # segment 0: the magic and the FORMAT_DESCRIPTION alone

    def _upload(self) -> None:
        """Put what the spool holds as the segment at the end of the uploaded bytes (one PUT), and empty it."""
        spool = self._out
        spool.flush()
        spool.seek(0)
        with self._segment(self._sent).open_output() as out:
            _copy_stream(spool, out)
        spool.seek(0)
        spool.truncate()
        self._sent = self.size

    def flush(self, *, durable: bool = False) -> None:
        """Pass what was written on: to the file (``durable``: and to the disk), or, for an object store, to a new
        segment when ``durable`` or when the last upload is :data:`UPLOAD_EVERY` old."""
        out = self._out
        if self.loc.is_local:
            out.flush()
            if durable:
                os.fsync(out.fileno())
        elif 0 < self._sent < self.size and (durable or time.monotonic() - self._flushed > UPLOAD_EVERY):
            # (never segment 0 before the FORMAT_DESCRIPTION: :meth:`write` puts it with it)
            self._upload()
        else:
            return
        self._flushed = time.monotonic()

    @property
    def flushed(self) -> float:
        """When :meth:`flush` last passed the bytes on (``time.monotonic()``)."""
        return self._flushed

    def close(self, *, complete: bool) -> None:
        """Finish the copy; ``complete``: the server finished the file (its in-use flag is cleared)."""
        out = self._out
        try:
            if self.loc.is_local:
                out.flush()
                os.fsync(out.fileno())
                out.close()
                if complete:
                    _set_in_use(Path(self.loc.uri), False)
                _sync_directory(Path(self.loc.uri).parent)
            else:
                if self.size > self._sent:
                    self._upload()
                if complete:  # after every byte: a complete copy is a whole one
                    _clear_stored_in_use(self.loc, binlog_pieces(self.loc.parent, self.loc.name))
        finally:
            out.close()


class Mirror:
    """Copies a server's binlogs into ``directory`` (a local folder or an object-store URI); see the module
    docstring.  ``start`` says where an empty directory begins (``StartAt.oldest()`` or ``StartAt.at(file)``); a
    directory holding a mirror goes on after its last file, whatever ``start`` says.  ``follow``: keep copying as
    the server writes (else stop at its end).  ``metrics``: its replication client's (:mod:`binlake.metrics`).

    :meth:`run` copies; from another thread, :meth:`sync` makes every event copied so far durable and visible to
    readers of the directory, and :meth:`stop` ends the run."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | Location,
        options: ConnectionOptions,
        *,
        start: StartAt | None = None,
        follow: bool = False,
        metrics: Metrics = NO_METRICS,
    ) -> None:
        self.directory = locate(directory)
        self.options = options
        self.start = start
        self.follow = follow
        self.metrics = metrics
        self.stats = MirrorStats()
        self._copy_of: _Copy | None = None
        self._name: str | None = None
        self._lock = threading.Lock()
        self._client: ReplicationClient | None = None
        self._stopped = False
        self._resumed: FileHead | None = None  # the head of the copy the mirror goes on in, until the server's

    def _resume_start(self) -> StartAt:
        if self.directory.is_local:
            os.makedirs(self.directory.uri, exist_ok=True)
        files = mirror_files(self.directory)
        if files:
            last = files[-1]
            size = _recover(last)
            if self.start is not None and self.start.kind == "position" and self.start.file != last.name:
                log.info("%s holds a mirror: going on after %s, not at %s", self.directory, last.name, self.start.file)
            return StartAt.at(last.name, size)
        if self.start is None:
            raise ReplicationError(
                f"{self.directory} holds no binlog yet: say where to start (--from-start, or --from FILE)"
            )
        return self.start

    def run(self) -> MirrorStats:
        """Copy until the server's end (or, following, until stopped); return what was copied."""
        start = self._resume_start()
        client = ReplicationClient(
            self.options, start, follow=self.follow, keep_raw=True, track_gtid=False, metrics=self.metrics
        )
        with self._lock:
            self._client = client
            if self._stopped:
                return self.stats
            if start.kind == "position" and start.file is not None and binlog_pieces(self.directory, start.file):
                self._open(start.file, existing=True)
                loc = self.directory / start.file
                self._resumed = file_head(copy_source(loc))
        try:
            self._copy(client)
        finally:
            with self._lock:
                self._close(complete=False)
        return self.stats

    def sync(self) -> None:
        """Make every event copied so far durable and visible in the directory (an upload on an object store)."""
        with self._lock:
            if self._copy_of is not None:
                self._copy_of.flush(durable=True)

    def stop(self) -> None:
        """End :meth:`run` (from another thread): it returns after the event it is writing, the copy closed."""
        with self._lock:
            self._stopped = True
            if self._client is not None:
                self._client.close()

    def _copy(self, client: ReplicationClient) -> None:
        for se in client:
            with self._lock:
                self._take(client, se)

    def _take(self, client: ReplicationClient, se: StreamEvent) -> None:
        ev = se.event
        if not se.in_file:
            if isinstance(ev, RotateEvent) and ev.name != self._name:
                self._close(complete=self._name is not None)
                self._open(ev.name, existing=False)
            elif ev.header.type_code in (EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2):
                self._flush()
            elif ev.header.type_code == EventType.FORMAT_DESCRIPTION_EVENT and self._resumed is not None:
                self._check_resumed(FileHead(ev.header.server_id, ev.header.timestamp))
            return
        if ev.header.in_payload is not None:
            return  # the payload's bytes hold it
        copy = self._copy_of
        if copy is None or se.file != self._name or se.start != copy.size or se.raw is None:
            raise ReplicationError(
                f"the server sent {ev.type} of {se.file} at {se.start}, the copy of {self._name} ends at"
                f" {copy.size if copy is not None else 0}: a hole in the stream",
                file=se.file,
                pos=se.start,
            )
        raw = se.raw
        if se.start == 4 and ev.header.type_code == EventType.FORMAT_DESCRIPTION_EVENT:
            raw = raw[:17] + bytes([raw[17] | LOG_EVENT_BINLOG_IN_USE_F]) + raw[18:]  # open, as the server's file is
        copy.write(raw)
        self.stats.events += 1
        self.stats.bytes += len(raw)
        if se.ack:
            copy.flush(durable=True)  # acknowledged events are on disk
        elif client.stream.buffered == 0 or time.monotonic() - copy.flushed > _FLUSH_EVERY:
            copy.flush()
        if ev.header.type_code in _FILE_ENDS:
            self._close(complete=True)

    def _check_resumed(self, theirs: FileHead) -> None:
        """The server resends the format description of the file the mirror goes on in: it must be the one the copy
        starts with, or the server's binlogs were reset (``RESET MASTER``) or it was rebuilt since, and the bytes it
        would send next belong to another file."""
        ours, self._resumed = self._resumed, None
        if ours is not None and theirs != ours:
            raise BinlogHistoryError(
                f"the server's {self._name} is not the file copied here ({ours}; the server's: {theirs}): its "
                "binlogs were reset (RESET MASTER) or it was rebuilt; copy its binlogs into a new folder (for "
                "binlake ingest --host: a new lake)",
                file=self._name,
            )

    def _open(self, name: str, *, existing: bool) -> None:
        if "/" in name or name in ("", ".", ".."):
            raise ReplicationError(f"the server named a binlog {name!r}: not a file name")
        loc = self.directory / name
        if not existing and binlog_pieces(self.directory, name):
            raise ReplicationError(
                f"{loc} exists already but the mirror did not expect it: remove it or the later ones"
            )
        self._copy_of = _Copy(loc, existing=existing)
        self._name = name
        self.stats.wrote(name)

    def _flush(self) -> None:
        if self._copy_of is not None:
            self._copy_of.flush()

    def _close(self, *, complete: bool) -> None:
        """Close the file being written; ``complete``: the server finished it (clear its in-use flag)."""
        copy, self._copy_of = self._copy_of, None
        if copy is not None:
            copy.close(complete=complete and self._name is not None)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
