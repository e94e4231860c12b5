"""The one exception tree of binlake.

Every problem with the bytes of a binlog is a :class:`BinlogError` (or a child of it) that carries where it
happened: the file (when the bytes came from a file) and the byte position of the event, and, where known, the
offset inside the event.  Nothing else escapes the decoder for bad input: a ``struct.error``, ``IndexError`` or
``UnicodeDecodeError`` met while decoding is a bug, and the decoder turns it into a :class:`MalformedError`.

Example::

    >>> err = ChecksumError("CRC32 mismatch", pos=620)
    >>> str(err.at_file("binlog.000024"))
    'binlog.000024: at 620: CRC32 mismatch'
"""

from __future__ import annotations

import copy
import enum
from typing import ClassVar

__all__ = [
    "AccessDeniedError",
    "BinlogError",
    "BinlogHistoryError",
    "BinlogPurgedError",
    "ChecksumError",
    "ConnectionLostError",
    "DecompressionError",
    "EncryptedError",
    "ExitStatus",
    "Interrupted",
    "MalformedError",
    "ReplicationError",
    "ReplicationTimeoutError",
    "TableChangedError",
    "TruncatedError",
    "UnknownEventError",
    "UnsupportedError",
    "after_ctrl_c",
]


class ExitStatus(enum.IntEnum):
    """The exit status of every ``binlake`` command: the one table (the documentation's "Exit status",
    ``docs/reference/exit-status.md``).

    ``binlake dump`` prints ``mariadb-binlog``'s text, but its errors are binlake's: where the tool prints an
    ``ERROR:`` line and exits 1, ``dump`` prints a ``binlake dump:`` line and exits :attr:`ERROR`.
    """

    OK = 0
    """Done (nothing new to do is done too)."""
    FAILED = 1
    """An unexpected failure: a traceback, not a one-line message (a bug of binlake, or a library failing in a
    way binlake does not know).  Python's own status for an uncaught exception."""
    ERROR = 2
    """Stopped with one line saying why: bad arguments (argparse's own status), bad binlog bytes, a lake, store,
    file or server that cannot be used.  Running the same command again gives the same error."""
    TEMPORARY = 3
    """Stopped with one line, for a reason that passes: another ingest holds the lake, the writer lease was lost,
    the server or the object store stayed unreachable through every retry.  Nothing is lost: the same command run
    later goes on."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT; 128 + 2, as shells report a process a signal ended), with one line saying what is safe."""


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C, turned by the command that met it into what is safe (``"batch 3 is not finished: the next run
    finishes it"``): the command line prints ``binlake COMMAND: interrupted: <that>`` and exits
    :attr:`ExitStatus.INTERRUPTED`.  A :class:`KeyboardInterrupt`, so that nothing catching errors stops it."""


def after_ctrl_c(e: BaseException) -> bool:
    """Whether ``e`` is a Ctrl-C, or an error raised while one unwound (py4j's "Answer from Java side is empty" when
    pyspark talks to the JVM again on its way out of an interrupted call): the command was interrupted."""
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


class BinlogError(Exception):
    """Root of every error binlake raises about binlog bytes.

    ``file`` is the path the bytes came from (``None`` for bytes fed directly to the sans-IO decoder), ``pos`` the
    byte position of the event in that file (or stream), ``offset`` the offset inside the event when known.
    ``exit_status``: the command's exit status when this error stops it (:class:`ExitStatus`).
    """

    exit_status: ClassVar[ExitStatus] = ExitStatus.ERROR

    def __init__(
        self, message: str, *, file: str | None = None, pos: int | None = None, offset: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.pos = pos
        self.offset = offset

    def at_file(self, file: str) -> BinlogError:
        """Return a copy that names ``file`` (the reader calls this; the sans-IO core knows no file names)."""
        err = copy.copy(self)
        err.file = file
        return err

    def at_pos(self, pos: int) -> BinlogError:
        """Return a copy that names event position ``pos`` unless a position is already set."""
        err = copy.copy(self)
        if err.pos is None:
            err.pos = pos
        return err

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.pos is not None:
            at = f"at {self.pos}"
            if self.offset is not None:
                at += f" (+{self.offset})"
            where.append(at)
        return ": ".join([*where, self.message])

    def __reduce__(self) -> tuple[object, ...]:
        # keep file/pos across pickling (Spark ships exceptions between processes)
        return (_rebuild, (type(self), self.message, self.file, self.pos, self.offset))


def _rebuild(
    cls: type[BinlogError], message: str, file: str | None, pos: int | None, offset: int | None
) -> BinlogError:
    return cls(message, file=file, pos=pos, offset=offset)


class TruncatedError(BinlogError):
    """The bytes end inside an event or a field (a partial event at the end of a file, a short field)."""


class ChecksumError(BinlogError):
    """An event's CRC32 does not match its bytes."""


class MalformedError(BinlogError):
    """A field holds a value no server writes (a length past the event end, an unknown code where one is needed)."""


class UnsupportedError(BinlogError):
    """The bytes are valid but use a feature binlake does not decode (said plainly rather than misparsed)."""


class UnknownEventError(UnsupportedError):
    """An event type binlake does not know, raised only when unknown events are asked to be errors."""


class EncryptedError(BinlogError):
    """The binlog is encrypted (MariaDB ``encrypt_binlog``) and no usable key was given."""


class DecompressionError(MalformedError):
    """A compressed payload or value does not decompress, or would decompress past the configured limit."""


class BinlogHistoryError(BinlogError):
    """A binlog file is not the one the lake (or a mirror's copy) knows under its name: another server started it,
    or the same server at another time, because its binlogs were reset (``RESET MASTER``) or it was rebuilt.  Its
    positions do not follow what was landed from the first one, so going on by position would skip or garble
    changes: never retried, never skipped."""


class ReplicationError(BinlogError):
    """Reading a server's binlog over a replication connection failed: the server refused (bad credentials, a
    missing privilege, an impossible start), or the conversation broke its protocol.  ``file`` and ``pos`` name the
    binlog file and position the client was at, where known.  Not retried, except its child
    :class:`ConnectionLostError`."""


class AccessDeniedError(ReplicationError):
    """The server refused the user a privilege a statement or command needs (its errors 1044, 1045, 1142, 1227):
    granting it is the fix, so it is not retried.  :mod:`binlake.replication.privileges` asks before anything is
    written and names the privilege."""


class TableChangedError(ReplicationError):
    """A table a snapshot reads was altered, emptied, renamed or dropped while the snapshot ran (the server's error
    1412, "Table definition has changed", is one): its chunks no longer describe one table, so the snapshot starts
    again from a new plan (:func:`binlake.snapshot.take_snapshot`)."""


class ConnectionLostError(ReplicationError):
    """The connection dropped: the server restarted or was killed, the connection was killed, the network failed.
    The replication client reconnects after this (with backoff) and raises it only when its retries run out."""

    exit_status = ExitStatus.TEMPORARY


class ReplicationTimeoutError(ConnectionLostError):
    """The server sent nothing (not even a heartbeat) for longer than the read timeout: it is hung, stopped or
    unreachable.  Retried like any lost connection."""


class BinlogPurgedError(ReplicationError):
    """The server no longer has the binlog the client asked to start or resume at (``PURGE BINARY LOGS``,
    ``expire_logs_days``): ``file`` names the missing file (or, for a GTID start, ``gtid`` the missing position).
    Continuing from anywhere else would silently skip changes, so this is never retried."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        pos: int | None = None,
        offset: int | None = None,
        gtid: str | None = None,
    ) -> None:
        super().__init__(message, file=file, pos=pos, offset=offset)
        self.gtid = gtid

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_purged, (self.message, self.file, self.pos, self.offset, self.gtid))


def _rebuild_purged(
    message: str, file: str | None, pos: int | None, offset: int | None, gtid: str | None
) -> BinlogPurgedError:
    return BinlogPurgedError(message, file=file, pos=pos, offset=offset, gtid=gtid)
