"""The ``debezium`` column of the data source's ``changes`` view: each row change as the Debezium JSON line
``binlake changes`` writes (:mod:`binlake.render.changes.debezium`, the same encoder), so a Spark job can send it to
Kafka or files with Spark's own sinks.

A split is decoded once (:func:`binlake.ingest.extract.decode_split`, with the DDL tracker the JSON names columns by:
the split's own DDL, as the view's columns are the split's table maps); :class:`SplitJson` watches its event records
for what a :class:`~binlake.ingest.extract.Changes` record does not carry (each rows event's server id, time and
ROWS_QUERY / ANNOTATE_ROWS text, its transaction's ``BEGIN`` and thread, MySQL's commit time) and writes the lines
of each Changes record from it.  Splits are cut at transaction boundaries, so a transaction's ``total_order`` and
``data_collection_order`` count within its split as in the whole log.  The JSON has no trailing newline.

Example::

    tracker = SchemaTracker()
    json = SplitJson(split.file.name, connector, tracker)
    for rec in decode_split(split, tablemaps=False, schema=tracker):
        if isinstance(rec, EventRecord):
            json.see(rec)
        elif isinstance(rec, Changes):
            lines = json.lines(rec)
"""

from __future__ import annotations

from binlake.changes.naming import TableCatalog
from binlake.events.control import RowsQueryEvent
from binlake.events.format import FormatDescriptionEvent
from binlake.events.gtid import GtidEvent
from binlake.events.mariadb import AnnotateRowsEvent
from binlake.events.query import QueryEvent
from binlake.events.rows import RowsEvent
from binlake.ingest.extract import Changes, EventRecord
from binlake.ingest.statements import SEQ_POS
from binlake.reader import Binlog, read_events
from binlake.render.changes.debezium import DebeziumEncoder, SourceInfo
from binlake.schema import SchemaTracker

__all__ = ["SplitJson", "connector_of"]


def connector_of(binlog: Binlog) -> str:
    """``mariadb`` or ``mysql``: the server that wrote ``binlog`` (its format description says): a local path or
    any byte source the reader takes (an object store's file)."""
    for ev in read_events(binlog, stop=5):
        if isinstance(ev, FormatDescriptionEvent):
            return "mariadb" if ev.is_mariadb else "mysql"
    return "mysql"


class SplitJson:
    """Debezium lines of one split's Changes records (module docstring); ``connector`` is ``mariadb`` or
    ``mysql``."""

    def __init__(
        self, file: str, connector: str, schema: SchemaTracker | None = None, encoder: DebeziumEncoder | None = None
    ) -> None:
        self.file = file
        self.connector = connector
        self.encoder = encoder or DebeziumEncoder()
        self.catalog = TableCatalog(schema)
        self._query: str | None = None
        self._trx: int | None = None
        self._rows: dict[tuple[int, int], tuple[int, int, str | None, int | None]] = {}
        self._begin: dict[int, tuple[int, int | None]] = {}  # transaction start -> (BEGIN position, thread)
        self._commit_us: dict[int, int] = {}  # transaction start -> MySQL original commit time
        self._orders: dict[int, tuple[int, dict[tuple[str, str], int]]] = {}

    def see(self, rec: EventRecord) -> None:
        """Take what the lines need from one event record of the split, in order."""
        ev = rec.event
        trx = rec.trx_pos
        if trx != self._trx:  # the statement text is its transaction's (as Debezium keeps it)
            self._trx, self._query = trx, None
        if isinstance(ev, RowsEvent):
            h = ev.header
            self._rows[(rec.pos, rec.payload_offset or 0)] = (h.server_id, h.timestamp, self._query, trx)
        elif isinstance(ev, AnnotateRowsEvent | RowsQueryEvent):
            self._query = ev.query
        elif isinstance(ev, QueryEvent) and trx is not None:
            if trx not in self._begin or ev.query_raw == b"BEGIN":
                self._begin[trx] = (rec.pos if ev.query_raw == b"BEGIN" else trx, ev.thread_id)
        elif isinstance(ev, GtidEvent) and trx is not None and ev.original_commit_timestamp:
            self._commit_us[trx] = ev.original_commit_timestamp

    def lines(self, c: Changes) -> list[str]:
        """The JSON of each row change of ``c``, in order (what :meth:`see` saw of its events must come first)."""
        off = c.seq % SEQ_POS
        server_id, ts, query, trx = self._rows.pop((c.pos, off), (0, c.ts, None, None))
        begin, thread = self._begin.get(trx, (trx, None)) if trx is not None else (c.pos, None)
        info = self.catalog.info(c.table_map)
        ts_us = self._commit_us.get(trx, ts * 1_000_000) if trx is not None else ts * 1_000_000
        src = SourceInfo(self.connector, c.database, c.table, ts_us, server_id, c.gtid, self.file, c.pos, thread, query)
        key = trx if trx is not None else c.pos
        total, per_table = self._orders.setdefault(key, (0, {}))
        mine = per_table.get((c.database, c.table), 0)
        txn_id = c.gtid if c.gtid is not None else f"file={self.file},pos={begin}"
        out = self.encoder.rows(info, c.op, c.rows, src, txn_id, (total, mine))
        per_table[(c.database, c.table)] = mine + len(out)
        self._orders[key] = (total + len(out), per_table)
        return [line[:-1] for line in out]
