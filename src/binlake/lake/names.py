"""Safe, reversible folder names for database and table names taken from a binlog.

A binlog names tables with arbitrary characters (MySQL identifiers may hold ``/``, ``.``, ``%``, spaces, any
Unicode, up to 64 characters); a lake folder must never leave the lake (``../../x``), clash on case-insensitive
file systems, collide with the lake's own ``_events``/``_schema_history``, or pass the 255-byte limit of a file
name.  So: ``[a-z0-9-]`` and lower-case non-ASCII letters stay as they are, everything else is escaped as ``+``
and two hex digits per UTF-8 byte (upper case too: ``+41``; ``_`` too when it leads).  Not ``%``: delta-rs and
Hadoop read a table location as a URL and would decode ``%XX`` themselves.  A name still longer than 200 bytes
keeps its first bytes and ends in ``~`` plus a hash (the real names are also in ``_schema_history``).

Example::

    >>> encode_name("../../x")
    '+2E+2E+2F+2E+2E+2Fx'
    >>> decode_name(encode_name("Käse Tabelle"))
    'Käse Tabelle'
    >>> table_dir("shop", "Orders")
    'shop/+4Frders'
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse

__all__ = ["MAX_NAME_BYTES", "decode_name", "encode_name", "table_dir"]

MAX_NAME_BYTES = 200
_ASCII_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_VALID = re.compile(r"(?:[^%+./~\\]|\+[0-9A-F]{2})*")


def _char(ch: str, first: bool) -> str:
    if ch in _ASCII_SAFE and not (first and ch == "_"):
        return ch
    if not ch.isascii() and ch.isalnum() and ch == ch.lower() and not 0xD800 <= ord(ch) <= 0xDFFF:
        return ch
    return "".join(f"+{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))


def encode_name(name: str) -> str:
    """``name`` as one safe path component (see the module docstring); reversible unless it had to be shortened."""
    if not name:
        return "~empty"  # no server allows an empty name; never the parent folder itself
    enc = "".join(_char(ch, i == 0) for i, ch in enumerate(name))
    raw = enc.encode("utf-8")
    if len(raw) <= MAX_NAME_BYTES:
        return enc
    digest = hashlib.sha1(name.encode("utf-8", "surrogateescape"), usedforsecurity=False).hexdigest()[:16]
    head = raw[: MAX_NAME_BYTES - 17].decode("utf-8", "ignore")
    head = re.sub(r"\+[0-9A-F]?$", "", head)  # never cut an escape in half
    return f"{head}~{digest}"


def decode_name(folder: str) -> str:
    """Invert :func:`encode_name`; a folder name it could not have produced (or a shortened one) raises
    ``ValueError``."""
    if not _VALID.fullmatch(folder):
        raise ValueError(f"not a (reversible) encoded binlake name: {folder!r}")
    return urllib.parse.unquote_to_bytes(folder.replace("+", "%")).decode("utf-8", "surrogateescape")


def table_dir(database: str, table: str) -> str:
    """The folder of one source table below the lake root: ``<database>/<table>``, each encoded."""
    return f"{encode_name(database)}/{encode_name(table)}"
