"""The options of ``binlake dump``: :class:`DumpOptions` (their command line, named as ``mariadb-binlog``'s, is
:mod:`binlake.cli.dump`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from binlake.changes.filters import ChangeFilter

__all__ = ["DumpOptions"]


@dataclass(slots=True)
class DumpOptions:
    """What ``binlake dump`` prints: the options of ``mariadb-binlog`` it supports (how the files are decoded is
    :func:`~binlake.render.dump.dump`'s ``decode`` and ``decryptor``).

    ``filter``: the selections ``dump``, ``changes`` and ``tail`` share (:mod:`binlake.changes.filters`).  Where
    ``mariadb-binlog`` has the same option (one ``--database``, one ``--table``, the positions and datetimes) the
    text is the tool's; several ``--database``/``--table`` globs, ``--ops`` and GTID sets are binlake's own: a
    rows event of another table or operation is left out as a filtered table's is, a statement of another
    database as the tool leaves it out, and a transaction outside the GTID sets is left out whole (its events
    print nothing, not even ``# at``)."""

    filter: ChangeFilter = field(default_factory=ChangeFilter)
    flashback: bool = False
    table_metadata: bool = True
    on_error: str = "stop"
