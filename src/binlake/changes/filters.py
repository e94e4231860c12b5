"""Which changes a command keeps: one filter for ``binlake dump``, ``binlake changes`` and ``binlake tail``.

:class:`ChangeFilter` holds every selection those commands share (their command line is
:mod:`binlake.cli.filters`):

* ``--database GLOB`` and ``--table GLOB`` (each may be given several times; shell-style globs, case-sensitive as
  table names are on Linux servers): a row change is kept when its database matches one ``--database`` glob and
  its table one ``--table`` glob (a ``--table`` glob holding a dot is matched against ``db.table``); a statement
  (DDL, statement-format DML) when its default database matches, as ``mariadb-binlog --database`` decides it;
  ``--table`` selects rows only, as ``mariadb-binlog --table`` does;
* ``--ops insert,update,delete,statement``: the kinds of change kept (``statement``: the QUERY events of DDL and of
  statement-format DML; transaction control is never dropped);
* ``--start-position``/``--stop-position``: byte positions in the first and the last file (as ``mariadb-binlog``
  reads them): ``changes`` keeps the transactions that start at or after the start and end at or before the stop;
* ``--start-datetime``/``--stop-datetime``: local time, as ``mariadb-binlog`` reads it: ``changes`` keeps the
  transactions whose first event is at or after the start, and stops at the first one at or after the stop;
* ``--include-gtids``/``--exclude-gtids``: GTID sets.  MySQL's form is ``uuid:1-5:7[,uuid2:...]`` (tags as 8.3
  writes them), the set ``@@gtid_executed`` prints.  MariaDB's is ``domain-server-seq[,...]``, one per domain as
  ``@@gtid_binlog_pos`` prints it, standing for every transaction of that domain up to and including that
  sequence number (the server id is not compared: a domain's sequence numbers are one series whatever server wrote
  them).  ``--include-gtids 0-1-50 --exclude-gtids 0-1-19`` keeps 20 to 50 of domain 0.  With
  ``--include-gtids``, transactions without a GTID are left out.

Example::

    >>> f = ChangeFilter(databases=("shop*",), tables=("orders", "shop.audit"), ops=frozenset({"insert"}))
    >>> f.wants_table("shop_eu", "orders"), f.wants_table("shop", "audit"), f.wants_table("shop_eu", "audit")
    (True, True, False)
    >>> f.wants_table("x", "orders")  # the table matches, the database does not: both must
    False
    >>> g = ChangeFilter(include_gtids=parse_gtids("0-1-50"), exclude_gtids=parse_gtids("0-1-19"))
    >>> [g.wants_gtid(MariaGtid(0, 2, n)) for n in (19, 20, 50, 51)]
    [False, True, True, False]
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from binlake.events.gtid import GtidSet, MariaGtid

if TYPE_CHECKING:
    from binlake.replication.gtid import MariaGtidPosition

__all__ = [
    "OPS",
    "ChangeFilter",
    "GtidSelection",
    "MysqlGtid",
    "parse_datetime",
    "parse_gtids",
    "parse_ops",
    "table_glob",
]

OPS = ("insert", "update", "delete", "statement")
"""The kinds of change ``--ops`` names: the three row operations, and statements (QUERY events)."""

MysqlGtid = tuple[str, "str | None", int]
"""A MySQL GTID as ``(uuid, tag or None, gno)``, the form :class:`~binlake.events.gtid.GtidSet` tests."""

_MARIA_LIST = re.compile(r"\s*\d+-\d+-\d+\s*(,\s*\d+-\d+-\d+\s*)*")


@dataclass(frozen=True, slots=True)
class GtidSelection:
    """A set of GTIDs: MariaDB's per-domain positions (every sequence number up to each one) or a MySQL GTID set."""

    text: str
    mariadb: MariaGtidPosition | None = None
    mysql: GtidSet | None = None

    def __contains__(self, gtid: object) -> bool:
        if isinstance(gtid, MariaGtid):
            if self.mariadb is None:
                return False
            return any(g.domain_id == gtid.domain_id and gtid.seq_no <= g.seq_no for g in self.mariadb.gtids)
        return self.mysql is not None and gtid in self.mysql


def parse_gtids(text: str) -> GtidSelection:
    """Read a GTID set in either server's form (module docstring); :class:`~binlake.errors.ReplicationError` for
    text that is neither."""
    # late: the replication package loads PyMySQL, which no command needs unless it filters by GTID
    from binlake.replication.gtid import MariaGtidPosition, parse_gtid_set

    if _MARIA_LIST.fullmatch(text):
        return GtidSelection(text, mariadb=MariaGtidPosition.parse(text))
    return GtidSelection(text, mysql=parse_gtid_set(text))


@dataclass(frozen=True, slots=True)
class ChangeFilter:
    """The selections of the module docstring; the defaults keep everything.  Datetimes are Unix seconds."""

    databases: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    ops: frozenset[str] = frozenset(OPS)
    start_position: int | None = None
    stop_position: int | None = None
    start_datetime: int | None = None
    stop_datetime: int | None = None
    include_gtids: GtidSelection | None = None
    exclude_gtids: GtidSelection | None = None

    def __post_init__(self) -> None:
        unknown = set(self.ops) - set(OPS)
        if unknown:
            raise ValueError(f"unknown operations {sorted(unknown)}: choose from {', '.join(OPS)}")

    @property
    def selects_gtids(self) -> bool:
        return self.include_gtids is not None or self.exclude_gtids is not None

    def wants_database(self, db: str) -> bool:
        """Is a statement run with default database ``db`` kept (``--database``)?"""
        return not self.databases or any(fnmatchcase(db, g) for g in self.databases)

    def wants_table(self, db: str, table: str) -> bool:
        """Are the rows of ``db.table`` kept (``--database`` and ``--table``)?"""
        if not self.wants_database(db):
            return False
        if not self.tables:
            return True
        return any(fnmatchcase(f"{db}.{table}" if "." in g else table, g) for g in self.tables)

    def wants_op(self, op: str) -> bool:
        """Is a change of kind ``op`` (:data:`OPS`) kept?"""
        return op in self.ops

    def wants_gtid(self, gtid: MariaGtid | MysqlGtid | None) -> bool:
        """Is the transaction with this GTID (``None``: none, or anonymous) kept?"""
        if gtid is None:
            return self.include_gtids is None
        if self.include_gtids is not None and gtid not in self.include_gtids:
            return False
        return self.exclude_gtids is None or gtid not in self.exclude_gtids


def table_glob(db: str, table: str) -> str:
    """A ``--tables`` glob (:meth:`ChangeFilter.wants_table`) that matches ``db.table`` alone: fnmatch's special
    characters in brackets.

    >>> only = ChangeFilter(tables=(table_glob("shop", "a*?"),))
    >>> only.wants_table("shop", "a*?"), only.wants_table("shop", "ab?"), only.wants_table("shop", "a*b")
    (True, False, False)
    """
    return "".join(f"[{c}]" if c in "*?[" else c for c in f"{db}.{table}")


def parse_datetime(text: str) -> int:
    """``--start-datetime`` as ``mariadb-binlog`` reads it: local time ``YYYY-MM-DD HH:MM:SS`` (or a prefix down to
    the date), as Unix seconds; :class:`ValueError` for text that is not one."""
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return int(time.mktime(time.strptime(text, fmt)))
        except ValueError:
            continue
    raise ValueError(f"not a date and time (YYYY-MM-DD HH:MM:SS): {text!r}")


def parse_ops(text: str) -> frozenset[str]:
    """``--ops``: a comma-separated list of :data:`OPS` (any case); :class:`ValueError` for anything else.

    >>> sorted(parse_ops("Insert, delete"))
    ['delete', 'insert']
    """
    ops = frozenset(w.strip().lower() for w in text.split(",") if w.strip())
    unknown = ops - set(OPS)
    if unknown or not ops:
        raise ValueError(f"--ops takes a comma-separated list of {', '.join(OPS)}, not {text!r}")
    return ops
