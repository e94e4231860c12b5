"""FORMAT_DESCRIPTION_EVENT (15) and START_EVENT_V3 (1): what every later event's layout depends on.

Layout (``Format_description_event`` in ``libs/mysql/binlog/event/control_events.h``; MariaDB
``Format_description_log_event`` in ``sql/log_event.h``)::

    binlog_version      2   4 for every server since 5.0 (1 = 3.23, 3 = 4.0/4.1)
    server_version     50   NUL-padded, e.g. "8.0.32" or "10.11.19-MariaDB-0+deb12u1-log"
    create_timestamp    4   0 except in the first FDE a server writes after start-up
    header_length       1   19 (13 in v1)
    post_header_len     n   one byte per event type, type 1 first
    checksum_alg        1   only when the server knows checksums (MySQL >= 5.6.1, MariaDB >= 5.3): 0 off, 1 CRC32
    (checksum           4)  the FDE of a checksum-aware server always carries its own CRC32, even when alg is 0

START_EVENT_V3 has the first three fields only; binlogs of 3.23 (v1, 13-byte headers) and 4.0 (v3) begin with it.

Example::

    >>> server_version_tuple("10.11.19-MariaDB-0+deb12u1-log")
    (10, 11, 19)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from binlake.events.base import Event, EventHeader, EventType, register
from binlake.events.context import DecodeContext

__all__ = [
    "CHECKSUM_ALGS",
    "DEFAULT_POST_HEADER_LENGTHS",
    "FormatDescriptionEvent",
    "StartV3Event",
    "checksum_aware",
    "server_version_tuple",
    "synthetic_fde",
]

CHECKSUM_ALGS = {0: "OFF", 1: "CRC32", 255: "UNDEF"}

# The post-header lengths a MySQL 8.0/9.x server writes (type code -> bytes); used before any FDE is seen, e.g. for
# `binlake explain --hex` on a lone event.
_MYSQL8 = [
    0,
    13,
    0,
    8,
    0,
    0,
    0,
    0,
    4,
    0,
    4,
    0,
    0,
    0,
    99,
    0,
    4,
    26,
    8,
    0,
    0,
    0,
    0,
    0,
    0,
    2,
    0,
    0,
    0,
    10,
    10,
    10,
    42,
    42,
    0,
    18,
    52,
    0,
    10,
    40,
    0,
    0,
]
DEFAULT_POST_HEADER_LENGTHS: dict[int, int] = {i + 1: n for i, n in enumerate(_MYSQL8)}

# Post-header lengths of binlog v1 (3.23) and v3 (4.0/4.1), from Format_description_event's constructor
# (control_events.cpp) for binlog_ver 1 and 3.
_OLD_POST_HEADERS = {
    1: 56,
    2: 11,
    3: 0,
    4: 8,
    5: 0,
    6: 18,
    7: 0,
    8: 22,
    9: 4,
    10: 4,
    11: 4,
    12: 18,
    13: 0,
    14: 0,
}


def server_version_tuple(version: str) -> tuple[int, int, int]:
    """The leading ``X.Y.Z`` of a server version string, ``(0, 0, 0)`` when there is none."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)


def checksum_aware(version: str) -> bool:
    """Whether a server of ``version`` writes the checksum-algorithm byte (``FD_checksum_alg`` presence)."""
    v = server_version_tuple(version)
    return v >= (5, 3, 0) if "mariadb" in version.lower() else v >= (5, 6, 1)


@dataclass(frozen=True, slots=True)
class FormatDescriptionEvent(Event):
    """A format description: server version, header length, per-type post-header lengths, checksum algorithm."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: tuple[int, ...]
    checksum_alg: int | None

    @property
    def checksum_alg_name(self) -> str | None:
        return None if self.checksum_alg is None else CHECKSUM_ALGS.get(self.checksum_alg, str(self.checksum_alg))

    @property
    def in_use(self) -> bool:
        """LOG_EVENT_BINLOG_IN_USE_F: the server had the file open (not closed cleanly, or copied while open)."""
        return bool(self.header.flags & 0x1)

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    def post_header_len(self, type_code: int) -> int:
        if 1 <= type_code <= len(self.post_header_lengths):
            return self.post_header_lengths[type_code - 1]
        return 0

    def summary(self) -> str:
        alg = self.checksum_alg_name or "none"
        return f"binlog v{self.binlog_version}, server {self.server_version}, checksum {alg}"


@dataclass(frozen=True, slots=True)
class StartV3Event(Event):
    """START_EVENT_V3: the first event of 3.23 and 4.0 binlogs."""

    binlog_version: int
    server_version: str
    create_timestamp: int

    def summary(self) -> str:
        return f"binlog v{self.binlog_version}, server {self.server_version}"

    def as_format_description(self) -> FormatDescriptionEvent:
        """The format description a v1/v3 log implies (no checksums, the old post-header lengths)."""
        n = max(_OLD_POST_HEADERS)
        lengths = tuple(_OLD_POST_HEADERS[i] for i in range(1, n + 1))
        if self.binlog_version == 1:
            lengths = tuple(0 if i == 3 else x for i, x in enumerate(lengths))  # ROTATE has none in v1
        return FormatDescriptionEvent(
            self.header,
            self.binlog_version,
            self.server_version,
            self.create_timestamp,
            13 if self.binlog_version == 1 else 19,
            lengths,
            None,
        )


def _version(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


@register(EventType.FORMAT_DESCRIPTION_EVENT)
def decode_fde(header: EventHeader, body: bytes, ctx: DecodeContext) -> FormatDescriptionEvent:
    """Decode an FDE body; ``body`` still ends with ``checksum_alg`` (the decoder strips only the CRC)."""
    c = ctx.cursor(body)
    binlog_version = c.u16("binlog_version")
    version = _version(c.take(50, "server_version"))
    created = c.u32("create_timestamp")
    header_len = c.u8("header_length")
    rest = c.rest()
    alg: int | None = None
    if checksum_aware(version) and rest:
        alg, rest = rest[-1], rest[:-1]
    return FormatDescriptionEvent(header, binlog_version, version, created, header_len, tuple(rest), alg)


@register(EventType.START_EVENT_V3)
def decode_start_v3(header: EventHeader, body: bytes, ctx: DecodeContext) -> StartV3Event:
    c = ctx.cursor(body)
    return StartV3Event(header, c.u16("binlog_version"), _version(c.take(50, "server_version")), c.u32("created"))


def synthetic_fde(server_version: str = "8.0.40", checksum: bool = True) -> FormatDescriptionEvent:
    """The format description a MySQL 8 server writes, for decoding a lone event (``binlake explain --hex``)."""
    header = EventHeader(0, EventType.FORMAT_DESCRIPTION_EVENT, 0, 0, 0, 0, 4)
    lengths = tuple(DEFAULT_POST_HEADER_LENGTHS[i] for i in range(1, len(DEFAULT_POST_HEADER_LENGTHS) + 1))
    return FormatDescriptionEvent(header, 4, server_version, 0, 19, lengths, 1 if checksum else 0)
