"""Where a replication stream starts (:class:`StartAt`) and where a stopped one resumes (:class:`ResumePoint`, the
typed, versioned record the tail and the live ingest store).  Sans-IO, standard library only.

A resume point names the server's binlog ``file`` and the ``position`` in it where the next event to deliver starts,
and ``gtid``: the server's GTID state (MariaDB ``domain-server-seq,...``, MySQL GTID set).  Two kinds exist:

* the replication client's, after any event (:attr:`ReplicationClient.resume_point
  <binlake.replication.client.ReplicationClient.resume_point>`): ``gtid`` covers every event group before the latest
  one, which may be in flight.  Resuming by GTID restarts at that group; the client drops the events of ``file``
  that end at or before ``position`` (the part already delivered), so the point is exact, event for event, on the
  same server, events between groups included;
* a change stream's, after a whole transaction (:attr:`Transaction.resume
  <binlake.changes.records.Transaction.resume>`, what the tail stores): ``gtid`` is the state at the transaction's
  end, that transaction included.  Resuming by GTID goes on with the next transaction, on any server of the
  replication topology (events between transactions that end a file, its STOP or ROTATE, are not read again).

Resuming by position is exact on the same server for both.

Example::

    >>> p = ResumePoint("binlog.000003", 1234, gtid="0-1-77", flavor="mariadb")
    >>> ResumePoint.from_json(p.to_json()) == p
    True
    >>> StartAt.resume(p, by="gtid")
    StartAt(kind='gtid', file='binlog.000003', position=1234, gtid='0-1-77')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from binlake.errors import ReplicationError

__all__ = ["RESUME_POINT_VERSION", "Flavor", "ResumePoint", "StartAt", "load_json", "record_fields"]

RESUME_POINT_VERSION = 1
Flavor = Literal["mariadb", "mysql"]
_FLAVORS = ("mariadb", "mysql")


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a stream goes on after a stop; see the module docstring.  ``flavor`` says how to read ``gtid``."""

    file: str
    position: int
    gtid: str | None = None
    flavor: Flavor | None = None
    version: int = RESUME_POINT_VERSION

    def __post_init__(self) -> None:
        if not self.file or "/" in self.file or "\0" in self.file:
            raise ReplicationError(f"not a binlog file name: {self.file!r}")
        if isinstance(self.position, bool) or not isinstance(self.position, int) or self.position < 4:
            raise ReplicationError(f"a binlog position is an integer of at least 4, not {self.position!r}")
        if self.gtid is not None and not isinstance(self.gtid, str):
            raise ReplicationError(f"a GTID state is text, not {self.gtid!r}")
        if self.flavor is not None and self.flavor not in _FLAVORS:
            raise ReplicationError(f"unknown server flavor {self.flavor!r}")
        if self.version != RESUME_POINT_VERSION:
            raise ReplicationError(
                f"resume point version {self.version!r}: this binlake reads version {RESUME_POINT_VERSION}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Every field (``version`` first): the JSON object of :meth:`to_json`, for records that hold one."""
        return {
            "version": self.version,
            "file": self.file,
            "position": self.position,
            "gtid": self.gtid,
            "flavor": self.flavor,
        }

    def to_json(self) -> str:
        """One line of JSON with every field (``version`` first)."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: object) -> ResumePoint:
        """Read :meth:`to_dict`'s output; anything else (other versions, missing or extra fields, wrong types)
        raises :class:`~binlake.errors.ReplicationError`."""
        data = record_fields(data, {"version", "file", "position", "gtid", "flavor"}, "resume point")
        if not isinstance(data["file"], str):
            raise ReplicationError(f"resume point file is not text: {data['file']!r}")
        return cls(data["file"], data["position"], data["gtid"], data["flavor"], data["version"])

    @classmethod
    def from_json(cls, text: str | bytes) -> ResumePoint:
        """Read :meth:`to_json`'s output (as :meth:`from_dict`)."""
        return cls.from_dict(load_json(text, "resume point"))


@dataclass(frozen=True, slots=True)
class StartAt:
    """Where a dump starts: ``kind`` ``"position"`` (``file`` at ``position``), ``"gtid"`` (after the GTID state
    ``gtid``; with ``file``/``position`` from a resume point, the events of ``file`` before ``position`` are
    dropped), ``"oldest"`` (the first event of the oldest binlog the server still has) or ``"current"`` (the
    server's end: only events written from now on)."""

    kind: Literal["position", "gtid", "oldest", "current"]
    file: str | None = None
    position: int = 4
    gtid: str | None = None

    @classmethod
    def at(cls, file: str, position: int = 4) -> StartAt:
        if position < 4:
            raise ReplicationError(f"a binlog position is at least 4, not {position}")
        return cls("position", file, position)

    @classmethod
    def after_gtid(cls, gtid: str) -> StartAt:
        return cls("gtid", None, 4, gtid)

    @classmethod
    def parse_at(cls, text: str) -> StartAt:
        """``FILE`` or ``FILE:POS`` (a command line's ``--from``) as a position start."""
        file, colon, pos = text.partition(":")
        if not file or (colon and not pos.isdigit()):
            raise ReplicationError(f"a start is FILE or FILE:POS, not {text!r}")
        return cls.at(file, int(pos) if pos else 4)

    @classmethod
    def oldest(cls) -> StartAt:
        return cls("oldest")

    @classmethod
    def current(cls) -> StartAt:
        return cls("current")

    @classmethod
    def resume(cls, point: ResumePoint, *, by: Literal["position", "gtid"] = "position") -> StartAt:
        """Go on from ``point`` by its file and position, or by its GTID state."""
        if by == "gtid":
            if point.gtid is None:
                raise ReplicationError("the resume point has no GTID state to resume by")
            return cls("gtid", point.file, point.position, point.gtid)
        return cls("position", point.file, point.position)


def load_json(text: str | bytes, what: str) -> Any:
    """``text`` parsed as JSON; else a :class:`~binlake.errors.ReplicationError` (``what`` names the record)."""
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ReplicationError(f"{what} is not JSON: {e}") from None


def record_fields(data: object, fields: set[str], what: str) -> dict[str, Any]:
    """``data`` as a JSON record with exactly ``fields``; else a :class:`~binlake.errors.ReplicationError` saying
    what it has (``what`` names the record)."""
    if not isinstance(data, dict) or set(data) != fields:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ReplicationError(f"{what} needs exactly the fields {sorted(fields)}, has {keys}")
    return data
