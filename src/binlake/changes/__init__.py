"""Change streams: binlog events in, whole transactions of typed row changes and statements out.

The layer every change output builds on (``binlake changes`` and its Debezium JSON, replay SQL and rollback SQL;
``binlake dump``'s filters; ``binlake tail``):

- :mod:`~binlake.changes.filters`: :class:`ChangeFilter`, the selections all those commands share, and their
  command line;
- :mod:`~binlake.changes.sources`: where events come from (:class:`FileSource`, :class:`ServerSource`), each
  knowing the resume point after the last event it gave;
- :mod:`~binlake.changes.naming`: the :class:`TableInfo` of a table map (names, key, DDL) from what is known;
- :mod:`~binlake.changes.records`: :class:`Transaction`, :class:`RowsChange`, :class:`Statement`;
- :mod:`~binlake.changes.stream`: :class:`ChangeStream`, which turns events into transactions.

Example::

    from binlake.changes import ChangeFilter, ChangeStream, FileSource

    for trx in ChangeStream(FileSource(["binlog.000001"]), ChangeFilter(databases=("shop",))):
        print(trx.gtid, len(trx.items), trx.resume)
"""

from binlake.changes.filters import ChangeFilter
from binlake.changes.records import RowsChange, Statement, TableInfo, Transaction
from binlake.changes.sources import FileSource, Located, ServerSource
from binlake.changes.stream import ChangeStream

__all__ = [
    "ChangeFilter",
    "ChangeStream",
    "FileSource",
    "Located",
    "RowsChange",
    "ServerSource",
    "Statement",
    "TableInfo",
    "Transaction",
]
