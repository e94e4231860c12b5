"""``binlake stats`` (:mod:`binlake.cli.stats`): what a set of binlogs holds, and proof that every row value in them
decodes.

Every event is decoded and every row value with it (so a file that ``stats`` reads without error is a file
binlake can decode whole): raw, or converted to its Python type where the conversion checks more than the raw
decode (JSON, ENUM/SET, GEOMETRY, VECTOR, compressed columns; not the charset decoding of strings, which accepts
any bytes).  The report gives events per type (count and bytes), transactions and
their sizes (count, min/median/max bytes), the time span of the events, and row changes per table and operation
with the bytes of the rows events that carry them.

Transactions are counted as :mod:`binlake.transactions` defines them (a GTID event or ``BEGIN`` opens one; XID,
XA_PREPARE, ``COMMIT``/``ROLLBACK`` end it; DDL and other statements logged alone are transactions of their own).
A transaction's size runs from its first event's position to the end of its last event (a MySQL
TRANSACTION_PAYLOAD counts with its compressed size); one a file leaves open counts up to the file's end.

Example::

    $ binlake stats corpus-bin.000015 --json
    {"files": ["corpus-bin.000015"], "events": {"ANNOTATE_ROWS_EVENT": {"count": 1, "bytes": 120}, ...}, ...}
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from binlake.coltypes import Column, ColumnType
from binlake.decoder import Decryptor
from binlake.events.base import Event, EventType
from binlake.events.context import DecodeOptions
from binlake.events.rows import RowsEvent
from binlake.render import open_log
from binlake.schema import schema_tracker
from binlake.transactions import Transactions
from binlake.values import typed

__all__ = ["BinlogStats", "collect"]

E = EventType
T = ColumnType
# Column types whose typed conversion only decodes the charset (values.strings' _text/_string_converter): no check
_CHARSET_ONLY = frozenset({T.STRING, T.VARCHAR, T.VAR_STRING, T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})
_LAYOUTS_KEPT = 512


@dataclass(slots=True)
class _Counter:
    count: int = 0
    bytes: int = 0

    def add(self, n: int, size: int) -> None:
        self.count += n
        self.bytes += size


@dataclass(slots=True)
class BinlogStats:
    """The figures ``binlake stats`` reports; :meth:`add` one event at a time."""

    files: list[str] = field(default_factory=list)
    by_code: dict[int, _Counter] = field(default_factory=lambda: defaultdict(_Counter))
    transactions: list[int] = field(default_factory=list)
    first_time: int | None = None
    last_time: int | None = None
    tables: dict[str, dict[str, _Counter]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(_Counter)))
    _trx: Transactions = field(default_factory=Transactions)
    _trx_end: int = 0  # the end of the open transaction's last event in the file
    _typed: dict[int, tuple[tuple[Column, ...], bool]] = field(default_factory=dict)

    @property
    def events(self) -> dict[str, _Counter]:
        """Events per type name (``TABLE_MAP_EVENT``): count and bytes."""
        return {E.name_of(code): c for code, c in self.by_code.items()}

    def add(self, ev: Event) -> None:
        """Count one event (decoding its rows: an undecodable value raises :class:`BinlogError`)."""
        h = ev.header
        counter = self.by_code[h.type_code]
        counter.count += 1
        counter.bytes += h.event_size
        ts = h.timestamp
        if ts:
            if self.first_time is None or ts < self.first_time:
                self.first_time = ts
            if self.last_time is None or ts > self.last_time:
                self.last_time = ts
        if isinstance(ev, RowsEvent):
            tm = ev.table_map
            changes = len(ev.rows(typed=self._needs_typed(tm.columns) if tm is not None else True))
            name = f"{tm.schema}.{tm.table}" if tm is not None else f"#{ev.table_id}"
            self.tables[name][ev.kind].add(changes, h.event_size)
        self._transaction(ev, h.in_payload is None)

    def _needs_typed(self, columns: tuple[Column, ...]) -> bool:
        """Whether proving that every value decodes needs the typed conversion for these columns.

        The raw decode (``typed=False``) reads and checks every stored value: null bitmaps, lengths, DECIMAL
        digit groups, date and time fields.  The typed conversion adds checks for some types only (those with a
        converter): JSON documents, ENUM/SET members, GEOMETRY's SRID + WKB, VECTOR's dimension, the zlib stream
        of compressed columns.  Converting strings to ``str`` checks nothing (bytes invalid in the column's
        charset stay bytes: ``collations.decode``), so a table of numbers, dates and strings is decoded raw,
        which builds no ``str`` that ``stats`` would throw away; any other table is decoded typed.
        """
        cached = self._typed.get(id(columns))
        if cached is None or cached[0] is not columns:
            needed = any(col.real_type_code not in _CHARSET_ONLY and typed(col) is not None for col in columns)
            if len(self._typed) >= _LAYOUTS_KEPT:
                self._typed.clear()
            cached = self._typed[id(columns)] = (columns, needed)
        return cached[1]

    def _transaction(self, ev: Event, outer: bool) -> None:
        step = self._trx.event(ev)
        if step.cut is not None:
            self._close(step.cut)
        if step.inside and outer:
            h = ev.header
            self._trx_end = h.pos + h.event_size
        if step.ends:
            self._close(self._trx.start)

    def _close(self, start: int | None) -> None:
        if start is not None:
            self.transactions.append(self._trx_end - start)

    def end_file(self) -> None:
        """A file ended: a transaction still open is cut there (its size counts what the file holds)."""
        self._close(self._trx.finish())

    def as_dict(self) -> dict[str, object]:
        """The report as JSON-ready data."""
        trx = self.transactions
        span = None if self.first_time is None or self.last_time is None else self.last_time - self.first_time
        return {
            "files": self.files,
            "events": {k: {"count": c.count, "bytes": c.bytes} for k, c in sorted(self.events.items())},
            "transactions": {
                "count": len(trx),
                "min_bytes": min(trx) if trx else None,
                "median_bytes": statistics.median(trx) if trx else None,
                "max_bytes": max(trx) if trx else None,
            },
            "time": {
                "first": _iso(self.first_time),
                "last": _iso(self.last_time),
                "seconds": span,
            },
            "tables": {
                t: {op: {"rows": c.count, "bytes": c.bytes} for op, c in sorted(ops.items())}
                for t, ops in sorted(self.tables.items())
            },
        }

    def as_text(self) -> str:
        """The report as aligned text."""
        d = self.as_dict()
        lines = [f"files: {', '.join(self.files)}", "", f"{'event type':<32} {'count':>10} {'bytes':>14}"]
        for name, c in sorted(self.events.items()):
            lines.append(f"{name:<32} {c.count:>10} {c.bytes:>14}")
        trx = d["transactions"]
        assert isinstance(trx, dict)
        lines += ["", f"transactions: {trx['count']}"]
        if trx["count"]:
            lines.append(
                f"transaction bytes: min {trx['min_bytes']}, median {trx['median_bytes']}, max {trx['max_bytes']}"
            )
        span = d["time"]
        assert isinstance(span, dict)
        if span["first"] is not None:
            lines.append(f"time: {span['first']} .. {span['last']} ({span['seconds']} s)")
        if self.tables:
            lines += ["", f"{'table':<48} {'op':<7} {'rows':>10} {'bytes':>14}"]
            for table, ops in sorted(self.tables.items()):
                for op, c in sorted(ops.items()):
                    lines.append(f"{table:<48} {op:<7} {c.count:>10} {c.bytes:>14}")
        return "\n".join(lines) + "\n"


def _iso(ts: int | None) -> str | None:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def collect(
    files: Iterable[str],
    options: DecodeOptions | None = None,
    decryptor: Decryptor | None = None,
    on_error: str = "stop",
) -> BinlogStats:
    """Decode ``files`` whole and gather their figures; raises :class:`BinlogError` on the first bad event."""
    stats = BinlogStats()
    options = options or DecodeOptions()
    schema = schema_tracker(options)
    for path in files:
        stats.files.append(path)
        for ev in open_log(path, options, command="stats", on_error=on_error, decryptor=decryptor, schema=schema):
            stats.add(ev)
        stats.end_file()
    return stats
