"""The printer of ``binlake dump``: :class:`TextPrinter` turns events into ``mariadb-binlog`` text.

It does what the tool's ``process_event`` (``client/mysqlbinlog.cc``) does: applies the
``--start-datetime``/``--stop-*`` bounds and the GTID sets, writes the ``# at N`` line, and hands each event to the
printer of its family, found by event type: :mod:`~binlake.render.dump.rows` (table maps, rows events, and the head
and tail caches of a statement's rows events: :class:`~binlake.render.dump.rows.RowsPrinter`),
:mod:`~binlake.render.dump.query` (statements and their context), :mod:`~binlake.render.dump.transaction` (GTID,
XID, XA) and :mod:`~binlake.render.dump.control` (the log's own events).  They all write to the printer's
:class:`~binlake.render.dump.output.Output` (the output buffer, the session state printed last, the header line).

Example::

    >>> import io
    >>> out = io.StringIO()
    >>> printer = TextPrinter(out.write)
    >>> printer.begin(); printer.finish()
    >>> out.getvalue().splitlines()[3]
    'DELIMITER /*!*/;'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from binlake.events.base import Event, EventType, RawEvent
from binlake.events.format import FormatDescriptionEvent
from binlake.events.gtid import GtidEvent, MariaGtid, MariaGtidEvent
from binlake.events.rows import RowsEvent
from binlake.render.dump import control, query, transaction
from binlake.render.dump.control import unknown_event
from binlake.render.dump.options import DumpOptions
from binlake.render.dump.output import Handler, Output, Session
from binlake.render.dump.query import MARIADB_OPTIONS
from binlake.render.dump.quoting import DELIM
from binlake.render.dump.rows import RowsPrinter
from binlake.transactions import Transactions

__all__ = ["Session", "TextPrinter"]

# the event families' printers by event type (the rows family's are its RowsPrinter's methods: it keeps state)
_HANDLERS: dict[int, Handler] = {**control.HANDLERS, **query.HANDLERS, **transaction.HANDLERS}


@dataclass(slots=True)
class TextPrinter:
    """Turns events into ``mariadb-binlog`` text; :meth:`feed` one event at a time, :meth:`finish` at the end.

    ``write`` receives the text in large chunks (str with surrogate escapes for bytes that are not UTF-8).
    """

    write: Callable[[str], None]
    options: DumpOptions = field(default_factory=DumpOptions)
    out: Output = field(init=False)
    rows: RowsPrinter = field(init=False)
    _handlers: dict[int, Callable[[Event], None]] = field(init=False)
    _started: bool = False  # --start-datetime reached
    _trx: Transactions | None = None  # --include-gtids/--exclude-gtids: where transactions start and end
    _skipping: bool = False  # the transaction being read is outside the GTID sets

    def __post_init__(self) -> None:
        self.out = Output(self.write, self.options)
        self.rows = RowsPrinter(self.out)
        self._handlers = {code: partial(handler, self.out) for code, handler in _HANDLERS.items()}
        self._handlers[EventType.TABLE_MAP_EVENT] = self.rows.table_map
        self._handlers[EventType.ANNOTATE_ROWS_EVENT] = self.rows.annotate_rows

    @property
    def row_counts(self) -> Counter[str]:
        """Row changes printed so far, per operation (``insert``, ``update``, ``delete``): the tail's metrics."""
        return self.rows.row_counts

    def begin(self) -> None:
        """The lines every dump starts with (``main`` in mysqlbinlog.cc)."""
        self.out.emit(
            "/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;\n"
            "/*!40019 SET @@session.max_delayed_threads=0*/;\n"
            "/*!50003 SET @OLD_COMPLETION_TYPE=@@COMPLETION_TYPE,COMPLETION_TYPE=0*/;\n"
            f"DELIMITER {DELIM}\n"
        )

    def finish(self) -> None:
        """The closing lines (and, with ``--flashback``, every held-back event's text in reverse order)."""
        out = self.out
        if self.options.flashback:
            out.held_back()
        out.emit("DELIMITER ;\n")
        out.emit(
            "# End of log file\nROLLBACK /* added by mysqlbinlog */;\n"
            "/*!50003 SET COMPLETION_TYPE=@OLD_COMPLETION_TYPE*/;\n"
            "/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n"
        )
        out.flush()

    def flush(self) -> None:
        """Write the text so far."""
        self.out.flush()

    def feed(self, ev: Event) -> bool:
        """Print one event; ``False`` when ``--stop-position``/``--stop-datetime`` ends the dump here."""
        h = ev.header
        opts = self.options
        f = opts.filter
        if isinstance(ev, FormatDescriptionEvent):
            self.out.checksum_on = ev.checksum_alg == 1
            self.out.options_mask = 0xFFFFFFFF if ev.is_mariadb else ~sum(MARIADB_OPTIONS) & 0xFFFFFFFF
        elif not self._started:
            if f.start_datetime is not None and h.timestamp < f.start_datetime:
                return True
            self._started = True  # from the first event past --start-datetime on, print everything
        if (f.stop_datetime is not None and h.timestamp >= f.stop_datetime) or (
            f.stop_position is not None and h.in_payload is None and h.pos >= f.stop_position
        ):
            return False
        if f.selects_gtids and self._outside_gtids(ev):
            return True
        if not opts.flashback and h.in_payload is None:
            self.out.emit(f"# at {h.pos}\n")
        handler = self._handlers.get(h.type_code)
        if handler is not None and not isinstance(ev, RawEvent):  # a prototype log's TABLE_MAP comes undecoded
            handler(ev)
        elif isinstance(ev, RowsEvent):
            self.rows.rows_event(ev)
        else:
            unknown_event(self.out, ev)
        return True

    def _outside_gtids(self, ev: Event) -> bool:
        """``--include-gtids``/``--exclude-gtids``: is ``ev`` in a transaction the GTID sets leave out?"""
        trx = self._trx
        if trx is None:
            trx = self._trx = Transactions()
        step = trx.event(ev)
        if step.begins:
            key: MariaGtid | tuple[str, str | None, int] | None = None
            if isinstance(ev, MariaGtidEvent):
                key = ev.gtid
            elif isinstance(ev, GtidEvent) and not ev.anonymous:
                key = (ev.uuid, ev.tag, ev.gno)
            self._skipping = not self.options.filter.wants_gtid(key)
        elif not step.inside:
            self._skipping = False
        return self._skipping
