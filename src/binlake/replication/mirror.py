"""``binlake mirror``: copy a server's binlog files byte for byte into a directory, as a replica reads them, and keep
the copy going (a binlog backup, like ``mariadb-binlog --read-from-remote-server --raw --stop-never``).

Each file in the directory has the server's name and bytes: the magic, then every event as the server's file holds
it, from its FORMAT_DESCRIPTION on (what the server sends besides its files' events, the artificial ROTATE and
GTID_LIST, heartbeats, a resent FORMAT_DESCRIPTION, is not written).  Every event's CRC32 is checked by the decoder
before it is written.  The file being written carries LOG_EVENT_BINLOG_IN_USE_F in its FORMAT_DESCRIPTION, as the
server's open binlog does (a dump thread clears the flag on the wire; the CRC32 is computed without it); the flag is
cleared when the file is complete (its ROTATE or STOP arrived, or the server went on to the next file), so a
finished copy equals the server's file byte for byte, and a reader can tell a complete file from one still growing.

The directory is the mirror's only state: a restarted mirror finds its last file, cuts a partial event at its end
back off (a kill during a write leaves one) and asks the server to go on at that file's size.  A purged binlog there
is an error naming it (:class:`~binlake.errors.BinlogPurgedError`), never a silent jump to a later file.

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

import argparse
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from binlake.decoder import MAGIC
from binlake.errors import BinlogError, ReplicationError
from binlake.events.base import EventType
from binlake.events.control import RotateEvent
from binlake.reader import header_table
from binlake.replication.client import ReplicationClient
from binlake.replication.options import ConnectionOptions, add_connection_arguments, connection_from_args
from binlake.replication.position import StartAt, binlog_order

__all__ = ["Mirror", "MirrorStats", "add_mirror_arguments", "mirror_files", "mirror_main", "recover_file"]

log = logging.getLogger("binlake.replication")

_IN_USE = 0x01  # LOG_EVENT_BINLOG_IN_USE_F, in the FORMAT_DESCRIPTION's flags (file offset 4 + 17)
_FDE_FLAGS_AT = 4 + 17
_FILE_ENDS = (EventType.ROTATE_EVENT, EventType.STOP_EVENT)
_FLUSH_EVERY = 0.5  # seconds: the longest a received event waits in the write buffer


@dataclass(slots=True)
class MirrorStats:
    """What one run copied."""

    files: list[str]
    events: int = 0
    bytes: int = 0


def mirror_files(directory: Path) -> list[Path]:
    """The binlog files of a mirror directory (names ending in a number, starting with the magic), in binlog
    order."""
    found = []
    for path in directory.iterdir():
        _, _, ext = path.name.rpartition(".")
        if ext.isdigit() and path.is_file():
            with path.open("rb") as f:
                head = f.read(4)
            if MAGIC.startswith(head):  # a kill can leave a file shorter than the magic
                found.append(path)
    return sorted(found, key=lambda p: binlog_order(p.name))


def recover_file(path: Path) -> tuple[int, bool]:
    """Cut ``path`` back to the end of its last whole event; return that size and whether the file is complete
    (it ends with a ROTATE or STOP).  A file without a whole event is cut back to the magic."""
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


def _set_in_use(path: Path, in_use: bool) -> None:
    """Set or clear LOG_EVENT_BINLOG_IN_USE_F in the FORMAT_DESCRIPTION at position 4 of ``path``."""
    with path.open("r+b") as f:
        f.seek(_FDE_FLAGS_AT)
        flags = f.read(1)
        if len(flags) != 1:
            return
        new = flags[0] | _IN_USE if in_use else flags[0] & ~_IN_USE
        if new != flags[0]:
            f.seek(_FDE_FLAGS_AT)
            f.write(bytes([new]))


class Mirror:
    """Copies a server's binlogs into ``directory``; see the module docstring.  ``start`` says where an empty
    directory begins (``StartAt.oldest()`` or ``StartAt.at(file)``); a directory holding a mirror goes on after its
    last file, whatever ``start`` says.  ``follow``: keep copying as the server writes (else stop at its end)."""

    def __init__(
        self,
        directory: Path,
        options: ConnectionOptions,
        *,
        start: StartAt | None = None,
        follow: bool = False,
    ) -> None:
        self.directory = directory
        self.options = options
        self.start = start
        self.follow = follow
        self._out: BinaryIO | None = None
        self._name: str | None = None
        self._size = 0
        self._flushed = 0.0

    def _resume_start(self) -> StartAt:
        self.directory.mkdir(parents=True, exist_ok=True)
        files = mirror_files(self.directory)
        if files:
            last = files[-1]
            size, _complete = recover_file(last)
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
        stats = MirrorStats([])
        client = ReplicationClient(self.options, start, follow=self.follow, keep_raw=True, track_gtid=False)
        if start.kind == "position" and start.file is not None and (self.directory / start.file).exists():
            self._open(start.file, existing=True)
            stats.files.append(start.file)
        try:
            self._copy(client, stats)
        finally:
            self._close(complete=False)
        return stats

    def _copy(self, client: ReplicationClient, stats: MirrorStats) -> None:
        for se in client:
            ev = se.event
            if not se.in_file:
                if isinstance(ev, RotateEvent) and ev.name != self._name:
                    self._close(complete=self._name is not None)
                    self._open(ev.name, existing=False)
                    stats.files.append(ev.name)
                elif ev.header.type_code in (EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2):
                    self._flush()
                continue
            if ev.header.in_payload is not None:
                continue  # the payload's bytes hold it
            if se.file != self._name or se.start != self._size or se.raw is None:
                raise ReplicationError(
                    f"the server sent {ev.type} of {se.file} at {se.start}, the copy of {self._name} ends at"
                    f" {self._size}: a hole in the stream",
                    file=se.file,
                    pos=se.start,
                )
            raw = se.raw
            if se.start == 4 and ev.header.type_code == EventType.FORMAT_DESCRIPTION_EVENT:
                raw = raw[:17] + bytes([raw[17] | _IN_USE]) + raw[18:]  # open, as the server's file is
            out = self._out
            assert out is not None
            out.write(raw)
            self._size = se.end
            stats.events += 1
            stats.bytes += len(raw)
            if se.ack:
                self._flush(sync=True)  # acknowledged events are on disk
            elif client.stream.buffered == 0 or time.monotonic() - self._flushed > _FLUSH_EVERY:
                self._flush()
            if ev.header.type_code in _FILE_ENDS:
                self._close(complete=True)

    def _open(self, name: str, *, existing: bool) -> None:
        if "/" in name or name in ("", ".", ".."):
            raise ReplicationError(f"the server named a binlog {name!r}: not a file name")
        path = self.directory / name
        if not existing and path.exists():
            raise ReplicationError(
                f"{path} exists already but the mirror did not expect it: remove it or the later ones"
            )
        self._out = path.open("ab")
        self._name = name
        self._size = path.stat().st_size
        if self._size == 0:
            self._out.write(MAGIC)
            self._size = 4
        self._flushed = time.monotonic()

    def _flush(self, *, sync: bool = False) -> None:
        out = self._out
        if out is not None:
            out.flush()
            if sync:
                os.fsync(out.fileno())
        self._flushed = time.monotonic()

    def _close(self, *, complete: bool) -> None:
        """Close the file being written; ``complete``: the server finished it (clear its in-use flag)."""
        out, self._out = self._out, None
        if out is None:
            return
        out.flush()
        os.fsync(out.fileno())
        out.close()
        if complete and self._name is not None:
            _set_in_use(self.directory / self._name, False)
        _sync_directory(self.directory)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def add_mirror_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``binlake mirror``."""
    parser.add_argument("directory", type=Path, metavar="DIR", help="where the copies go (created if missing)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--from-start", action="store_true", help="an empty DIR starts at the oldest binlog")
    where.add_argument("--from", dest="from_file", metavar="FILE", help="an empty DIR starts at this binlog")
    parser.add_argument(
        "--follow", action="store_true", help="keep copying as the server writes (else stop at its current end)"
    )
    add_connection_arguments(parser)


def mirror_main(args: argparse.Namespace) -> int:
    """Run ``binlake mirror``: 0 when the copy reached the server's end (or was stopped), 2 on an error."""
    start = StartAt.oldest() if args.from_start else StartAt.at(args.from_file) if args.from_file else None
    try:
        options = connection_from_args(args, follow=args.follow)
        stats = Mirror(args.directory, options, start=start, follow=args.follow).run()
    except KeyboardInterrupt:
        return 0
    except BinlogError as e:
        print(f"binlake mirror: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"binlake mirror: {args.directory}: {e.strerror or e}", file=sys.stderr)
        return 2
    files = f" ({stats.files[0]} .. {stats.files[-1]})" if stats.files else ""
    print(f"mirrored {stats.events} events, {stats.bytes} bytes into {args.directory}{files}")
    return 0
