"""Command-line renderers of decoded events (``binlake events``, ``binlake explain``, ``dump``, ``stats``).

What every subcommand shares lives here: the decoding options they all accept and the one error line they print
(``binlake COMMAND: ...``: every line a command writes on stderr starts with its name).

Example::

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_decode_arguments(p)
    >>> o = decode_options(p.parse_args(["--no-verify-checksum", "--unknown-events", "error"]))
    >>> o.verify_checksum, o.unknown_events, o.schema_sql
    (False, 'error', None)
    >>> error_line("events", BinlogError("CRC32 mismatch", pos=620), "binlog.000024")
    'binlake events: binlog.000024: at 620: CRC32 mismatch'
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from binlake.decoder import Decryptor
from binlake.errors import (
    BinlogError,
    ChecksumError,
    MalformedError,
    TruncatedError,
    UnknownEventError,
    UnsupportedError,
)
from binlake.events.base import Event
from binlake.events.context import DecodeOptions
from binlake.reader import read_events
from binlake.schema import SchemaTracker
from binlake.storage import binlog_source

__all__ = [
    "FILE_KEY_ENV",
    "add_decode_arguments",
    "decode_options",
    "decryptor_of",
    "error_line",
    "open_log",
]

FILE_KEY_ENV = "BINLAKE_FILE_KEY"
"""The environment variable holding the secret of an encrypted ``--key-file`` (``file_key_management_filekey``),
where ``--file-key-file`` does not name a file holding it: a secret is never an argument (``ps`` shows those)."""


def add_decode_arguments(parser: argparse.ArgumentParser, *, on_error: bool = True) -> None:
    """Add the options every decoding subcommand shares: checksums, unknown events, ``--schema``, ``--key-file``
    with ``--file-key-file``, and (``on_error``: for the subcommands that read on past a damaged event)
    ``--on-error``."""
    parser.add_argument(
        "--verify-checksum",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="check each event's CRC32 and stop at a mismatch (default: on)",
    )
    parser.add_argument(
        "--unknown-events",
        choices=("raw", "error"),
        default="raw",
        help="an event type binlake does not know: keep its raw bytes (default) or stop with an error",
    )
    parser.add_argument(
        "--schema",
        metavar="SQL_FILE",
        help="DDL (CREATE DATABASE/TABLE ...) of tables created before these binlogs: names, keys, charsets and "
        "signedness of columns whose table maps do not log them (binlog_row_metadata MINIMAL, NO_LOG), and the size "
        "of MariaDB 5.3 fractional temporals",
    )
    parser.add_argument(
        "--key-file",
        metavar="FILE",
        help="MariaDB file_key_management key file, to read encrypted binlogs (encrypt_binlog=ON)",
    )
    parser.add_argument(
        "--file-key-file",
        metavar="FILE",
        help="a file holding the secret of an encrypted --key-file (file_key_management_filekey); "
        f"or set it in the environment variable {FILE_KEY_ENV}",
    )
    if on_error:
        parser.add_argument(
            "--on-error",
            choices=("stop", "skip-event", "skip-transaction"),
            default="stop",
            help="a damaged event: stop there (default), or skip it / the rest of its transaction and go on; "
            "every skip is reported on stderr with its positions",
        )


def decode_options(args: argparse.Namespace) -> DecodeOptions:
    """The :class:`~binlake.events.context.DecodeOptions` of arguments added by :func:`add_decode_arguments`."""
    schema = getattr(args, "schema", None)
    try:
        schema_sql = None if schema is None else Path(schema).read_text(encoding="utf-8")
    except OSError as e:
        raise BinlogError(f"cannot read --schema: {e.strerror or e}", file=schema) from e
    return DecodeOptions(
        verify_checksum=args.verify_checksum,
        unknown_events=args.unknown_events,
        schema_sql=schema_sql,
    )


def decryptor_of(args: argparse.Namespace) -> Decryptor | None:
    """The decryptor ``--key-file`` asks for, or ``None``; the file key (for an encrypted key file) comes from
    ``--file-key-file`` or else the environment variable :data:`FILE_KEY_ENV`.  A key file that cannot be read or
    decrypted is a :class:`~binlake.errors.BinlogError` (never showing the secret)."""
    key_file = getattr(args, "key_file", None)
    file_key_file = getattr(args, "file_key_file", None)
    if key_file is None:
        if file_key_file is not None:
            raise BinlogError("--file-key-file is the secret of an encrypted --key-file: give --key-file too")
        return None
    from binlake.crypto import load_key_file, mariadb_decryptor

    # FILE:path is the server's own way to name a file holding the secret (file_key_management_filekey)
    file_key = f"FILE:{file_key_file}" if file_key_file is not None else os.environ.get(FILE_KEY_ENV) or None
    return mariadb_decryptor(load_key_file(key_file, file_key))


def open_log(
    path: str,
    options: DecodeOptions,
    *,
    command: str,
    on_error: str = "stop",
    start: int | None = None,
    stop: int | None = None,
    decryptor: Decryptor | None = None,
    schema: SchemaTracker | None = None,
    follow: bool = False,
    idle_timeout: float | None = None,
) -> Iterator[Event]:
    """The events of ``path`` (a local path, or a URI of :mod:`binlake.storage`: ``s3://bucket/binlog.000042``) for
    a subcommand: :func:`~binlake.reader.read_events`, or under ``--on-error skip-*`` the recovering reader, which
    reports each skip and a closing summary on stderr, prefixed ``binlake COMMAND:`` (never a silent skip)."""
    source = binlog_source(path)
    if on_error == "stop":
        yield from read_events(
            source,
            options=options,
            start=start,
            stop=stop,
            decryptor=decryptor,
            schema=schema,
            follow=follow,
            idle_timeout=idle_timeout,
        )
        return
    if follow:
        raise BinlogError("--follow reads a log being written: it cannot be combined with --on-error skip-*")
    from binlake.recovery import read_events_recovering

    events = read_events_recovering(
        source,
        on_error=on_error,  # type: ignore[arg-type]
        on_skip=lambda skip: print(f"binlake {command}: skipped {skip}", file=sys.stderr),
        options=options,
        decryptor=decryptor,
        schema=schema,
    )
    for ev in events:
        pos = ev.header.pos if ev.header.in_payload is None else ev.header.in_payload
        if stop is not None and pos >= stop:
            break
        if start is None or pos >= start:
            yield ev
    print(f"binlake {command}: {events.summary}", file=sys.stderr)


#: What ``--on-error skip-event|skip-transaction`` reads on past: an event that does not decode (the errors the
#: recovering reader of :mod:`binlake.recovery` skips, met at a position of the file); an unknown event type is an
#: error only when ``--unknown-events error`` asked for it.
_SKIPPABLE = (TruncatedError, ChecksumError, MalformedError, UnsupportedError)


def error_line(command: str, err: BinlogError, file: str | None = None, *, on_error: str | None = None) -> str:
    """``binlake COMMAND: <file>: at <pos>: <message>``, the line a command prints on stderr for a BinlogError; a
    damaged event met under ``--on-error stop`` (``on_error``: the command's option, ``None`` where it has none)
    says how to read on past it.

    >>> error_line("dump", TruncatedError("the event ends early", pos=620), "b.000001", on_error="stop")
    'binlake dump: b.000001: at 620: the event ends early (--on-error skip-event or skip-transaction reads on past it)'
    """
    if file is not None and err.file is None:
        err = err.at_file(file)
    hint = ""
    if on_error == "stop" and isinstance(err, _SKIPPABLE) and not isinstance(err, UnknownEventError) and err.pos:
        hint = " (--on-error skip-event or skip-transaction reads on past it)"
    return f"binlake {command}: {err}{hint}"
