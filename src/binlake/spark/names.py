"""Safe, reversible folder names for database and table names taken from a binlog.

A binlog names tables with arbitrary bytes (MySQL identifiers may hold ``/``, ``.``, ``%``, spaces, non-ASCII);
a lake folder must never leave the lake (``../../x``) nor clash on case-insensitive file systems.  Every byte
outside ``[a-z0-9_-]`` is percent-encoded (``%2F``), upper-case letters too (``%41``), so the encoding is a pure
function, reversible, and always a single path component without dots.

Example::

    >>> encode_name("../../x")
    '%2E%2E%2F%2E%2E%2Fx'
    >>> decode_name(encode_name("Käse Tabelle"))
    'Käse Tabelle'
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["decode_name", "encode_name", "table_dir"]

_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
_VALID = re.compile(r"(?:[a-z0-9_-]|%[0-9A-F]{2})*")


def encode_name(name: str) -> str:
    """Percent-encode ``name`` (UTF-8, surrogate escapes kept as their bytes) into one safe path component."""
    raw = name.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)


def decode_name(folder: str) -> str:
    """Invert :func:`encode_name`; a folder name it could not have produced raises ``ValueError``."""
    if not _VALID.fullmatch(folder):
        raise ValueError(f"not an encoded binlake name: {folder!r}")
    return urllib.parse.unquote_to_bytes(folder).decode("utf-8", "surrogateescape")


def table_dir(database: str, table: str) -> str:
    """The folder of one source table below the lake root: ``<database>.<table>``, both encoded (no dots inside)."""
    return f"{encode_name(database)}.{encode_name(table)}"
