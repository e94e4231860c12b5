"""Command-line renderers of decoded events (``binlake events``, ``binlake explain``, ``dump``, ``stats``).

What every subcommand shares lives here: the decoding options they all accept and the one error line they print.

Example::

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_decode_arguments(p)
    >>> o = decode_options(p.parse_args(["--no-verify-checksum", "--unknown-events", "error"]))
    >>> o.verify_checksum, o.unknown_events, o.schema_sql
    (False, 'error', None)
    >>> error_line(BinlogError("CRC32 mismatch", pos=620), "binlog.000024")
    'binlake: binlog.000024: at 620: CRC32 mismatch'
"""

from __future__ import annotations

import argparse
from pathlib import Path

from binlake.errors import BinlogError
from binlake.events.context import DecodeOptions

__all__ = ["EXIT_ERROR", "add_decode_arguments", "decode_options", "error_line"]

EXIT_ERROR = 2
"""Exit status of a subcommand that met a :class:`~binlake.errors.BinlogError` (or a usage error, as argparse)."""


def add_decode_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options every decoding subcommand shares: checksums, unknown events, ``--schema``, ``--key-file``."""
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
        help="DDL (CREATE TABLE ...) of tables created before these binlogs; sizes MariaDB 5.3 fractional temporals",
    )
    parser.add_argument(
        "--key-file",
        metavar="FILE",
        help="MariaDB file_key_management key file, to read encrypted binlogs (encrypt_binlog=ON)",
    )


def decode_options(args: argparse.Namespace) -> DecodeOptions:
    """The :class:`~binlake.events.context.DecodeOptions` of arguments added by :func:`add_decode_arguments`."""
    schema = getattr(args, "schema", None)
    return DecodeOptions(
        verify_checksum=args.verify_checksum,
        unknown_events=args.unknown_events,
        schema_sql=None if schema is None else Path(schema).read_text(encoding="utf-8"),
    )


def error_line(err: BinlogError, file: str | None = None) -> str:
    """``binlake: <file>: at <pos>: <message>``, the line every subcommand prints on stderr for a BinlogError."""
    if file is not None and err.file is None:
        err = err.at_file(file)
    return f"binlake: {err}"
