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

Prototype logs: the MySQL 5.1 development trees of WL#1012/WL#2325 (server versions ``5.1.x-a_drop5p*``,
``5.1.2-a_drop6p*``, ``5.2.x-a_drop6p*``) numbered types 16..22 differently.  Like MySQL 5.1's
``Format_description_log_event`` (its ``event_type_permutation``), :func:`decode_fde` recognises their format
description and sets :attr:`FormatDescriptionEvent.type_permutation`, with the post-header lengths already put in
modern order; the decoder then reads every later type code through the permutation (see
:func:`prototype_permutation`).  Their statement events (QUERY, XID, the LOAD DATA pair, ...) have the released
layouts and decode as usual; their TABLE_MAP (no metadata block) and pre-GA rows events do not, and decode to
:class:`PrototypeEvent`, a raw event that says so.

Example::

    >>> server_version_tuple("10.11.19-MariaDB-0+deb12u1-log")
    (10, 11, 19)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from binlake.events.base import LOG_EVENT_BINLOG_IN_USE_F, Event, EventHeader, EventType, RawEvent
from binlake.events.context import DEFAULT_POST_HEADER_LENGTHS, DecodeContext

__all__ = [
    "CHECKSUM_ALGS",
    "DEFAULT_POST_HEADER_LENGTHS",
    "PROTOTYPE_UNDECODED",
    "FormatDescriptionEvent",
    "PrototypeEvent",
    "StartV3Event",
    "checksum_aware",
    "prototype_permutation",
    "server_version_tuple",
    "synthetic_fde",
]

CHECKSUM_ALGS = {0: "OFF", 1: "CRC32", 255: "UNDEF"}

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


# event_type_permutation of MySQL 5.1's Format_description_log_event: prototype type code -> released type code
_PROTOTYPE_PERMUTATION = (
    *range(16),
    EventType.TABLE_MAP_EVENT,
    EventType.PRE_GA_WRITE_ROWS_EVENT,
    EventType.PRE_GA_UPDATE_ROWS_EVENT,
    EventType.PRE_GA_DELETE_ROWS_EVENT,
    EventType.XID_EVENT,
    EventType.BEGIN_LOAD_QUERY_EVENT,
    EventType.EXECUTE_LOAD_QUERY_EVENT,
)


# released type codes whose prototype layout differs from every released server's: kept raw
PROTOTYPE_UNDECODED = frozenset(
    {
        EventType.TABLE_MAP_EVENT,
        EventType.PRE_GA_WRITE_ROWS_EVENT,
        EventType.PRE_GA_UPDATE_ROWS_EVENT,
        EventType.PRE_GA_DELETE_ROWS_EVENT,
    }
)


@dataclass(frozen=True, slots=True)
class PrototypeEvent(RawEvent):
    """A TABLE_MAP or rows event of a WL#2325 prototype log: kept as bytes, with the type code as stored."""

    stored_type_code: int

    def summary(self) -> str:
        return (
            f"{self.type} of a WL#2325 prototype server (stored as type {self.stored_type_code}): "
            f"{len(self.body)} bytes not decoded"
        )


def prototype_permutation(version: str, n_types: int) -> tuple[int, ...] | None:
    """The type-code permutation of a WL#1012/WL#2325 prototype server, ``None`` for every other server.

    The test is MySQL 5.1's (``Format_description_log_event::Format_description_log_event``): ``5.1.[1-9]-a_drop5*``,
    ``5.1.2-a_drop6*`` or ``5.2.[12]-a_drop6*``, with exactly 22 post-header lengths.

    >>> prototype_permutation("5.2.2-a_drop6p13-debug-log", 22)[16:]
    (19, 20, 21, 22, 16, 17, 18)
    """
    v = version
    if n_types != 22 or len(v) < 13 or not (v[0] == "5" and v[1] == "." and v[3] == "." and v[5:12] == "-a_drop"):
        return None
    minor, patch, drop = v[2], v[4], v[12]
    if (
        (minor == "1" and "1" <= patch <= "9" and drop == "5")
        or (minor == "1" and patch == "2" and drop == "6")
        or (minor == "2" and patch in "12" and drop == "6")
    ):
        return tuple(int(code) for code in _PROTOTYPE_PERMUTATION)
    return None


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
    # prototype (WL#2325) logs only: stored type code -> released type code; post_header_lengths are then already
    # in released order
    type_permutation: tuple[int, ...] | None = None

    @property
    def checksum_alg_name(self) -> str | None:
        return None if self.checksum_alg is None else CHECKSUM_ALGS.get(self.checksum_alg, str(self.checksum_alg))

    @property
    def in_use(self) -> bool:
        """LOG_EVENT_BINLOG_IN_USE_F: the server had the file open (not closed cleanly, or copied while open)."""
        return bool(self.header.flags & LOG_EVENT_BINLOG_IN_USE_F)

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
    lengths = tuple(rest)
    perm = prototype_permutation(version, len(lengths))
    if perm is not None:
        permuted = list(lengths)
        for stored in range(1, len(lengths) + 1):
            permuted[perm[stored] - 1] = lengths[stored - 1]
        lengths = tuple(permuted)
    return FormatDescriptionEvent(header, binlog_version, version, created, header_len, lengths, alg, perm)


def decode_start_v3(header: EventHeader, body: bytes, ctx: DecodeContext) -> StartV3Event:
    c = ctx.cursor(body)
    return StartV3Event(header, c.u16("binlog_version"), _version(c.take(50, "server_version")), c.u32("created"))


def synthetic_fde(server_version: str = "8.0.40", checksum: bool = True) -> FormatDescriptionEvent:
    """The format description a MySQL 8 server writes, for decoding a lone event (``binlake explain --hex``)."""
    header = EventHeader(0, EventType.FORMAT_DESCRIPTION_EVENT, 0, 0, 0, 0, 4)
    lengths = tuple(DEFAULT_POST_HEADER_LENGTHS[i] for i in range(1, len(DEFAULT_POST_HEADER_LENGTHS) + 1))
    return FormatDescriptionEvent(header, 4, server_version, 0, 19, lengths, 1 if checksum else 0)
