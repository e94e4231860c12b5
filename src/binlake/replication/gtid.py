"""GTID positions a replication client starts and resumes from: MariaDB's ``domain-server-seq`` lists and MySQL's
GTID sets (their text form, and the binary form COM_BINLOG_DUMP_GTID carries).  Sans-IO, standard library only.

MariaDB (``@slave_connect_state``, ``@@gtid_binlog_pos``; ``rpl_slave_state`` / ``slave_connection_state::load`` in
``sql/rpl_gtid.cc``): comma-separated ``domain-server_id-seq_no``, at most one per domain, each meaning "every event
group of this domain up to and including this one was applied".

MySQL (``Gtid_set::add_gtid_text`` and ``Gtid_set::encode`` in ``sql/rpl_gtid_set.cc``): text
``uuid:1-5:7,uuid2:tag:1-3`` (a uuid, then ranges, and since 8.3 ``:tag:`` switching the tag for the ranges after it;
tags are ``[a-z_][a-z0-9_]{0,31}``, case-insensitive, kept lower-case); binary::

    n_sids u64, or for a set holding any tag: (1 << 56) | (n_sids << 8) | 1 (encode_nsids_format)
    per (uuid, tag): uuid 16 bytes, [tagged format: tag as a serialization-library varlen length + bytes],
                     n_intervals u64, then (start i64, end i64 exclusive) per interval

Example::

    >>> str(MariaGtidPosition.parse("1-7-30, 0-1-5").with_gtid(MariaGtid(0, 1, 6)))
    '0-1-6,1-7-30'
    >>> s = parse_gtid_set("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7")
    >>> str(add_gtid(s, "3e11fa47-71ca-11e1-9e33-c80aa9429562", None, 6))
    '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7'
"""

from __future__ import annotations

import re
import struct
import uuid as _uuid
from dataclasses import dataclass

from binlake.errors import ReplicationError
from binlake.events.base import Event
from binlake.events.gtid import (
    GtidEvent,
    GtidInterval,
    GtidListEvent,
    GtidSet,
    MariaGtid,
    MariaGtidEvent,
    PreviousGtidsEvent,
)

__all__ = [
    "GtidTracker",
    "MariaGtidPosition",
    "add_gtid",
    "encode_gtid_set",
    "parse_gtid_set",
    "write_varlen",
]

_U32_MAX = 0xFFFFFFFF
_U64_MAX = 0xFFFFFFFFFFFFFFFF
_GNO_MAX = (1 << 63) - 1  # MySQL's rpl_gno is a signed 64-bit number; GNO_END
_MARIA_GTID = re.compile(r"\s*(\d+)-(\d+)-(\d+)\s*")
_TAG = re.compile(r"[a-z_][a-z0-9_]{0,31}")
_TAGGED_FORMAT = 1


@dataclass(frozen=True, slots=True)
class MariaGtidPosition:
    """A MariaDB GTID position: the last event group of each replication domain, sorted by domain."""

    gtids: tuple[MariaGtid, ...] = ()

    @classmethod
    def parse(cls, text: str) -> MariaGtidPosition:
        """Read ``'0-1-100,1-2-5'`` (an empty string is the empty position); raise
        :class:`~binlake.errors.ReplicationError` for anything a server would refuse."""
        by_domain: dict[int, MariaGtid] = {}
        if text.strip():
            for item in text.split(","):
                m = _MARIA_GTID.fullmatch(item)
                if m is None:
                    raise ReplicationError(f"not a MariaDB GTID (domain-server_id-seq_no): {item.strip()!r}")
                domain, server, seq = (int(g) for g in m.groups())
                if domain > _U32_MAX or server > _U32_MAX or seq > _U64_MAX:
                    raise ReplicationError(f"MariaDB GTID out of range: {item.strip()!r}")
                if domain in by_domain:
                    raise ReplicationError(f"two GTIDs for domain {domain} in {text!r}")
                by_domain[domain] = MariaGtid(domain, server, seq)
        return cls(tuple(by_domain[d] for d in sorted(by_domain)))

    def with_gtid(self, gtid: MariaGtid) -> MariaGtidPosition:
        """This position after the event group ``gtid``: it replaces its domain's entry."""
        rest = [g for g in self.gtids if g.domain_id != gtid.domain_id]
        return MariaGtidPosition(tuple(sorted([*rest, gtid], key=lambda g: g.domain_id)))

    def __str__(self) -> str:
        return ",".join(str(g) for g in self.gtids)


# -- MySQL GTID sets --------------------------------------------------------------------------------------------


def _uuid_text(text: str) -> str:
    try:
        return str(_uuid.UUID(hex=text))
    except ValueError:
        raise ReplicationError(f"not a server UUID in a GTID set: {text!r}") from None


def parse_gtid_set(text: str) -> GtidSet:
    """Read a MySQL GTID set as ``SELECT @@gtid_executed`` prints it (uuids in any case, ranges in any order);
    raise :class:`~binlake.errors.ReplicationError` for text MySQL would refuse."""
    ranges: dict[tuple[str, str | None], list[tuple[int, int]]] = {}
    for item in text.replace("\n", "").split(","):
        parts = [p.strip() for p in item.split(":")]
        if parts == [""]:
            continue
        uuid = _uuid_text(parts[0])
        tag: str | None = None
        if len(parts) == 1:
            raise ReplicationError(f"GTID set entry without ranges: {item.strip()!r}")
        for part in parts[1:]:
            if part[:1].isdigit():
                ranges.setdefault((uuid, tag), []).append(_interval(part, item))
            elif _TAG.fullmatch(part.lower()):
                tag = part.lower()
            else:
                raise ReplicationError(f"neither a range nor a tag in a GTID set: {part!r} in {item.strip()!r}")
    return _gtid_set(ranges)


def _interval(part: str, item: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
    if m is None:
        raise ReplicationError(f"not a GTID range: {part!r} in {item.strip()!r}")
    start = int(m.group(1))
    last = int(m.group(2)) if m.group(2) is not None else start
    if not 1 <= start <= last <= _GNO_MAX:
        raise ReplicationError(f"GTID range out of order or range: {part!r} in {item.strip()!r}")
    return start, last + 1


def _merge(intervals: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return tuple(out)


def _gtid_set(ranges: dict[tuple[str, str | None], list[tuple[int, int]]]) -> GtidSet:
    keys = sorted(ranges, key=lambda k: (k[0], k[1] or ""))
    return GtidSet(tuple(GtidInterval(u, t, _merge(ranges[(u, t)])) for u, t in keys if ranges[(u, t)]))


def add_gtid(gtid_set: GtidSet, uuid: str, tag: str | None, gno: int) -> GtidSet:
    """``gtid_set`` with the transaction ``uuid[:tag]:gno`` added (a new set; the argument is not changed)."""
    ranges = {(e.uuid, e.tag): list(e.intervals) for e in gtid_set.entries}
    ranges.setdefault((uuid, tag), []).append((gno, gno + 1))
    return _gtid_set(ranges)


def write_varlen(value: int) -> bytes:
    """An unsigned integer in the MySQL serialization library's variable-length form (the inverse of
    :func:`binlake.events.gtid.read_varlen`): the byte count ``n`` as ``n - 1`` one-bits at the bottom of the first
    byte, the value above them; 9 bytes (``0xFF`` then 8) past 2^56."""
    if not 0 <= value <= _U64_MAX:
        raise ValueError(f"varlen out of range: {value}")
    for size in range(1, 9):
        if value < 1 << (7 * size):
            return ((value << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")
    return b"\xff" + value.to_bytes(8, "little")


def encode_gtid_set(gtid_set: GtidSet) -> bytes:
    """The binary form of ``gtid_set`` a COM_BINLOG_DUMP_GTID carries (the module docstring's layout); the tagged
    format only when a tag is present, so servers before MySQL 8.3 read sets without tags."""
    tagged = any(e.tag for e in gtid_set.entries)
    n = len(gtid_set.entries)
    out = [struct.pack("<Q", (_TAGGED_FORMAT << 56) | (n << 8) | _TAGGED_FORMAT if tagged else n)]
    for e in gtid_set.entries:
        out.append(_uuid.UUID(e.uuid).bytes)
        if tagged:
            tag = (e.tag or "").encode("ascii")
            out.append(write_varlen(len(tag)) + tag)
        out.append(struct.pack("<Q", len(e.intervals)))
        out.extend(struct.pack("<qq", start, end) for start, end in e.intervals)
    return b"".join(out)


class GtidTracker:
    """The GTID state of a stream, event by event: :attr:`state` covers every event group seen (its GTID event
    seen), :attr:`resume_state` every group but the latest, which may still be in flight (see
    :mod:`binlake.replication.position`).  A baseline comes from the start (:meth:`set_baseline`) or from the
    state each binlog file starts with (MariaDB GTID_LIST, MySQL PREVIOUS_GTIDS); before one, both are ``None``
    (a partial state would make a GTID start replay whole domains).

    Example::

        >>> t = GtidTracker("mariadb")
        >>> t.set_baseline("0-1-5")
        >>> t.add(MariaGtid(0, 1, 6)); (t.state, t.resume_state)
        ('0-1-6', '0-1-5')
    """

    def __init__(self, flavor: str) -> None:
        self.flavor = flavor
        self._maria: MariaGtidPosition | None = None
        self._maria_before: MariaGtidPosition | None = None
        self._mysql: GtidSet | None = None
        self._mysql_before: GtidSet | None = None

    def set_baseline(self, text: str) -> None:
        """Start from the state ``text`` (checked: a malformed state raises
        :class:`~binlake.errors.ReplicationError`)."""
        if self.flavor == "mariadb":
            self._maria = self._maria_before = MariaGtidPosition.parse(text)
        else:
            self._mysql = self._mysql_before = parse_gtid_set(text)

    def set_file_state(self, gtids: tuple[MariaGtid, ...] | GtidSet) -> None:
        """The state a binlog file starts with (GTID_LIST: the last GTID of each domain is its last entry), taken
        only while no state is known: a known state is never behind it, and is ahead of it when a GTID start
        re-reads a file from its beginning (the server skips, unsent, the groups up to the start)."""
        if self.state is not None:
            return
        if isinstance(gtids, GtidSet):
            self._mysql = self._mysql_before = gtids
        else:
            by_domain = {g.domain_id: g for g in gtids}
            self._maria = self._maria_before = MariaGtidPosition(tuple(by_domain[d] for d in sorted(by_domain)))

    def add(self, gtid: MariaGtid | tuple[str, str | None, int]) -> None:
        """The GTID event of a new group was seen."""
        if isinstance(gtid, MariaGtid):
            if self._maria is not None:
                self._maria_before, self._maria = self._maria, self._maria.with_gtid(gtid)
        elif self._mysql is not None:
            self._mysql_before, self._mysql = self._mysql, add_gtid(self._mysql, *gtid)

    def observe(self, event: Event) -> None:
        """Follow one event of the stream: a GTID event adds its group (an anonymous one none), a file's GTID_LIST /
        PREVIOUS_GTIDS gives the state it starts with (:meth:`set_file_state`); other events change nothing."""
        if isinstance(event, MariaGtidEvent):
            self.add(event.gtid)
        elif isinstance(event, GtidEvent):
            if not event.anonymous:
                self.add((event.uuid, event.tag, event.gno))
        elif isinstance(event, GtidListEvent):
            self.set_file_state(event.gtids)
        elif isinstance(event, PreviousGtidsEvent):
            self.set_file_state(event.gtid_set)

    @property
    def state(self) -> str | None:
        current = self._maria if self.flavor == "mariadb" else self._mysql
        return None if current is None else str(current)

    @property
    def resume_state(self) -> str | None:
        before = self._maria_before if self.flavor == "mariadb" else self._mysql_before
        return None if before is None else str(before)
