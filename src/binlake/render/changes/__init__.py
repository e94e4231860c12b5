"""The change outputs of ``binlake changes`` and ``binlake tail``: row changes as Debezium JSON lines
(:mod:`.debezium`), as SQL that replays them, or as SQL that undoes them (:mod:`.sql`); :func:`write_changes` writes
transactions in either.

``binlake changes SOURCE... [--format debezium|sql] [--flashback] [filters]`` reads binlog files, folders or
globs (in binlog order); with ``--host`` it reads a running server through the replication client instead (from
its oldest binlog, or ``--from FILE[:POS]`` / ``--gtid SET``; to the server's current end, or on with
``--follow``).  The changes come from :class:`binlake.changes.ChangeStream` (whole transactions; the filters of
:mod:`binlake.changes.filters`); the command line is :mod:`binlake.cli.changes`.

Transactions a file holds only in part (a log cut short, a start or stop position inside one) are left out, and
said so on stderr.

Example::

    $ binlake changes binlogs/ --database shop --ops insert,update > changes.jsonl
    $ binlake changes binlog.000042 --format sql | mariadb -h replica
    $ binlake changes binlog.000042 --format sql --flashback --start-position 4 --stop-position 81920 > undo.sql
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from binlake.changes.records import Transaction

if TYPE_CHECKING:
    from binlake.render.changes.debezium import DebeziumOptions
    from binlake.render.changes.sql import SqlOptions

__all__ = ["write_changes"]


def write_changes(transactions: Iterator[Transaction], out: BinaryIO, options: DebeziumOptions | SqlOptions) -> None:
    """Write the transactions to ``out``: Debezium JSON lines for :class:`~.debezium.DebeziumOptions`, SQL
    statements for :class:`~.sql.SqlOptions` (the opening and closing statements even when a transaction fails)."""
    from binlake.render.changes.debezium import DebeziumEncoder, DebeziumOptions

    if isinstance(options, DebeziumOptions):
        encoder = DebeziumEncoder(options)
        for trx in transactions:
            data = encoder.encode(trx)
            if data:
                out.write(data)
        return
    from binlake.render.changes.sql import SqlWriter

    def write(data: bytes) -> None:
        out.write(data)

    writer = SqlWriter(write, options)
    writer.begin()
    try:
        for trx in transactions:
            writer.transaction(trx)
    finally:
        writer.finish()
