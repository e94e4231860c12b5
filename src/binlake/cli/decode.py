"""The decoding options every subcommand that reads binlogs shares: checksums, unknown events, ``--schema``,
``--key-file`` with ``--file-key-file``, and ``--on-error``; turned into the library's
:class:`~binlake.events.context.DecodeOptions` and :data:`~binlake.decoder.Decryptor`.

Example::

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_decode_arguments(p)
    >>> o = decode_options(p.parse_args(["--no-verify-checksum", "--unknown-events", "error"]))
    >>> o.verify_checksum, o.unknown_events, o.schema_sql
    (False, 'error', None)
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from binlake.decoder import Decryptor
from binlake.errors import BinlogError
from binlake.events.context import DecodeOptions

__all__ = ["FILE_KEY_ENV", "add_decode_arguments", "decode_options", "decryptor_of"]

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
