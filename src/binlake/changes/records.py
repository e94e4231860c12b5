"""The records of a change stream: whole transactions of row changes and statements, each carrying what every
output (Debezium JSON, replay SQL, rollback SQL, the tail) needs.

* :class:`TableInfo`: a table as its table map logged it, named and keyed from what is known (the map, an earlier
  map of the same table, the DDL the binlog logged: :mod:`binlake.changes.naming`);
* :class:`RowsChange`: the row changes of one rows event (decoded when asked: :meth:`RowsChange.rows` gives typed
  values, :meth:`RowsChange.stored_rows` the stored ones), with its place (file, position, end), its time, server
  id, and the ROWS_QUERY / ANNOTATE_ROWS text of its statement;
* :class:`Statement`: a QUERY event inside a transaction (DDL, statement-format DML, savepoints, XA), with the
  INTVAR/RAND/USER_VAR events that set up its session before it;
* :class:`Transaction`: one transaction as :mod:`binlake.transactions` delimits it, its GTID, its outcome, how it
  opens and closes as SQL, and :attr:`Transaction.resume`: the :class:`~binlake.replication.position.ResumePoint`
  right after it (file, end position, GTID state), where a reader goes on with the next whole transaction.

Row images are tuples in table-map column order: ``None`` is SQL NULL, :data:`~binlake.values.row.ABSENT` a column
a MINIMAL or NOBLOB image does not carry.  The records are made by :class:`binlake.changes.stream.ChangeStream`;
they hold decoded events and are meant for one process (the tail stores only their resume points).

Example::

    for trx in ChangeStream(FileSource(["binlog.000001"])):
        for item in trx.items:
            if isinstance(item, RowsChange):
                for before, after in item.rows():
                    print(trx.gtid, item.table.schema, item.table.name, item.kind, before, after)
        state = trx.resume   # store it to go on after this transaction
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from binlake.coltypes import Column
from binlake.events.base import Event
from binlake.events.query import QueryEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import TableMapEvent
from binlake.values.row import Row

if TYPE_CHECKING:
    from binlake.replication.position import Flavor, ResumePoint
    from binlake.schema import TableSchema
    from binlake.sql.statements import Control

__all__ = ["Change", "Outcome", "RowsChange", "Statement", "TableInfo", "Transaction"]

Kind = Literal["insert", "update", "delete"]
Outcome = Literal["commit", "rollback", "prepare"]
Change = tuple["Row | None", "Row | None"]


@dataclass(frozen=True, slots=True)
class TableInfo:
    """A table map with everything known about its columns.

    ``columns`` are the map's, with the facts a MINIMAL or NO_LOG map does not log (names, signedness, key, ENUM
    and SET members) filled in from an earlier FULL map or the DDL where they are known; ``names`` the column names
    (``col_N`` where none is known); ``key`` the primary-key column indexes in key order (empty: none known);
    ``ddl`` the table's DDL as :mod:`binlake.schema` followed it, when it agrees with the map (it tells generated
    columns, BOOLEAN, POINT and UUID columns, which a table map does not).
    """

    schema: str
    name: str
    columns: tuple[Column, ...]
    names: tuple[str, ...]
    key: tuple[int, ...]
    ddl: TableSchema | None
    table_map: TableMapEvent

    @property
    def qualified(self) -> str:
        """`` `db`.`table` `` as SQL names it."""
        return f"`{self.schema.replace('`', '``')}`.`{self.name.replace('`', '``')}`"


@dataclass(slots=True)
class RowsChange:
    """The row changes of one rows event.

    ``event`` is decoded against ``table.columns``; ``file``/``pos``/``end`` its place (an event inside a MySQL
    TRANSACTION_PAYLOAD has the payload's position and end), ``timestamp`` its header's time (seconds),
    ``server_id`` its header's, ``query`` the ROWS_QUERY (MySQL) or ANNOTATE_ROWS (MariaDB) text of its statement
    (``None`` where the binlog has none).  ``by_trigger``: the change was made by a trigger of another table the
    statement changed (MariaDB logs which tables have triggers; a replay runs the target's triggers instead).
    """

    kind: Kind
    table: TableInfo
    event: RowsEvent
    file: str
    pos: int
    end: int
    timestamp: int
    server_id: int
    query: str | None
    by_trigger: bool = False
    _rows: list[Change] | None = field(default=None, repr=False)

    def rows(self) -> list[Change]:
        """``(before, after)`` per row change, typed values (:mod:`binlake.values`); decoded once."""
        if self._rows is None:
            self._rows = self.event.rows(True)
        return self._rows

    def stored_rows(self) -> list[Change]:
        """``(before, after)`` per row change, stored values (strings as bytes, ENUM/SET as numbers)."""
        return self.event.rows(False)

    @property
    def flags(self) -> int:
        """The rows event's flags (``NO_FOREIGN_KEY_CHECKS_F`` 0x2, ``RELAXED_UNIQUE_CHECKS_F`` 0x4, ...)."""
        return self.event.flags


@dataclass(slots=True)
class Statement:
    """A QUERY event inside a transaction: DDL, statement-format DML, or transaction control other than the
    transaction's own opening and closing (savepoints, ``XA END``, MySQL's ``XA START``).

    ``context`` holds the INTVAR, RAND and USER_VAR events logged for it (before it), and for a LOAD DATA the
    BEGIN_LOAD_QUERY/APPEND_BLOCK events holding its file; ``control`` the transaction control it is, if any
    (:func:`binlake.sql.statements.control`).
    """

    event: QueryEvent
    context: tuple[Event, ...]
    file: str
    pos: int
    end: int
    control: Control | None = None

    @property
    def db(self) -> str:
        return self.event.db

    @property
    def timestamp(self) -> int:
        return self.event.header.timestamp


@dataclass(slots=True)
class Transaction:
    """One transaction, whole (:mod:`binlake.transactions`).

    ``file``/``start``/``end``: where it is (its first event's position, its last event's end; a transaction
    read across a ROTATE is in the file of its first event); ``begin_pos``: its ``BEGIN`` (the position Debezium
    names a transaction without a GTID by: its first event when it has no ``BEGIN``).  ``gtid``: MySQL
    ``uuid:gno`` or MariaDB ``domain-server-seq`` (``None`` without one).  ``timestamp``: its first event's time;
    ``commit_us``: MySQL's original commit time in microseconds (its GTID event's), when logged.
    ``thread_id``: the session that ran it, where the binlog says (``BEGIN``'s QUERY event, a statement's, or a
    MariaDB 11 GTID).  ``outcome``: ``commit``, ``rollback`` (a ``ROLLBACK`` was logged: the changes in it are of
    non-transactional tables, which kept them) or ``prepare`` (``XA PREPARE``: decided by a later ``XA COMMIT`` /
    ``XA ROLLBACK`` statement, itself a transaction of its own).  ``xid``: the XA transaction's XID text.
    ``opening``/``closing``: the SQL that opens and closes it as logged (``BEGIN``, ``XA START x``; ``COMMIT``,
    ``ROLLBACK``, ``XA PREPARE x``, ``XA COMMIT x ONE PHASE``), ``None`` for a statement that is a transaction by
    itself (DDL).  ``items`` are its kept row changes and statements in binlog order (filters applied), ``rows``
    how many row changes were kept.  ``resume``: where a reader goes on right after it.
    """

    file: str
    start: int
    end: int
    begin_pos: int
    gtid: str | None
    timestamp: int
    commit_us: int | None
    server_id: int
    thread_id: int | None
    flavor: Flavor | None
    outcome: Outcome
    xid: str | None
    opening: str | None
    closing: str | None
    items: list[RowsChange | Statement]
    resume: ResumePoint | None = None

    @property
    def empty(self) -> bool:
        """No change of this transaction passed the filters (it is still delivered: its resume point counts)."""
        return not self.items

    @property
    def ts_us(self) -> int:
        """Its time in microseconds: MySQL's original commit time where logged, else its first event's second."""
        return self.commit_us if self.commit_us is not None else self.timestamp * 1_000_000
