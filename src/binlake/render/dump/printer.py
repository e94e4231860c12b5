"""The printer of ``binlake dump``: :class:`TextPrinter` turns events into ``mariadb-binlog`` text.

It holds what the tool's ``process_event`` (``client/mysqlbinlog.cc``) holds: the output buffer, the head and
tail caches of a statement's rows events, the session state printed last (``PRINT_EVENT_INFO``), the
``--start-datetime``/``--stop-*`` bounds, and writes the ``# at N`` line and each event's header line
(``Log_event::print_header``).  Each event's own text is printed by a function of the event's family, found in
:data:`_HANDLERS` by event type: :mod:`~binlake.render.dump.rows` (table maps, rows events),
:mod:`~binlake.render.dump.query` (statements and their context), :mod:`~binlake.render.dump.transaction` (GTID,
XID, XA) and :mod:`~binlake.render.dump.control` (the log's own events).  Those functions are part of the printer:
they use its buffers and state directly.

Example::

    >>> import io
    >>> out = io.StringIO()
    >>> printer = TextPrinter(out.write)
    >>> printer.begin(); printer.finish()
    >>> out.getvalue().splitlines()[3]
    'DELIMITER /*!*/;'
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from binlake.coltypes import Column
from binlake.events.base import Event, RawEvent
from binlake.events.format import FormatDescriptionEvent
from binlake.events.gtid import GtidEvent, MariaGtid, MariaGtidEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import OptionalField
from binlake.render.dump import control, query, rows, transaction
from binlake.render.dump.control import unknown_event
from binlake.render.dump.options import DumpOptions
from binlake.render.dump.query import MARIADB_OPTIONS
from binlake.render.dump.quoting import DELIM
from binlake.render.dump.rows import rows_event
from binlake.render.dump.rowtext import TextPlan, _RowsText
from binlake.transactions import Transactions

__all__ = ["Handler", "Session", "TextPrinter"]

FLUSH_AT = 1 << 20  # characters of text gathered before a write to the output


@dataclass(slots=True)
class Session:
    """``PRINT_EVENT_INFO``: what was printed last, so that SET statements repeat only on change."""

    db: str = ""
    flags2: int | None = None
    sql_mode: int | None = None
    auto_increment: tuple[int, int] = (0, 0)
    charset: tuple[int, ...] | None = None
    time_zone: str = ""
    lc_time_names: int = -1
    charset_database: int = -1
    thread_id: int | None = None
    allow_parallel: bool | None = None
    domain_id: int | None = None
    server_id: int | None = None
    gtid_flags2: int = 0
    skip_replication: int = 0


@dataclass(slots=True)
class TextPrinter:
    """Turns events into ``mariadb-binlog`` text; :meth:`feed` one event at a time, :meth:`finish` at the end.

    ``write`` receives the text in large chunks (str with surrogate escapes for bytes that are not UTF-8).
    """

    write: Callable[[str], None]
    options: DumpOptions = field(default_factory=DumpOptions)
    session: Session = field(default_factory=Session)
    _out: list[str] = field(default_factory=list)
    _size: int = 0
    _head: list[str] = field(default_factory=list)  # head_cache: headers waiting for the end of a statement
    _tail: list[str] = field(default_factory=list)  # tail_cache: the rows text of the statement so far
    _annotate: list[str] | None = None  # a kept ANNOTATE_ROWS (printed with the next table map)
    _row_count: int = 0
    row_counts: Counter[str] = field(default_factory=Counter)  # row changes printed, per operation (the tail's metrics)
    _ignored: set[int] = field(default_factory=set)  # table ids whose maps --database/--table filter out
    _stmt: list[RowsEvent] = field(default_factory=list)  # --flashback: rows events of the current statement
    _undo: list[str] = field(default_factory=list)  # --flashback: each buffered event's text, printed reversed
    _stop: str = ""  # --flashback: the STOP event's text, printed last
    _texts: dict[tuple[int, str, tuple[tuple[bool, ...], ...]], tuple[tuple[Column, ...], _RowsText]] = field(
        default_factory=dict
    )
    _meta_lines: dict[tuple[int, int], tuple[tuple[Column, ...], tuple[OptionalField, ...], str]] = field(
        default_factory=dict
    )
    _text_plans: dict[tuple[int, str, bytes, bytes | None], tuple[tuple[Column, ...], TextPlan | None]] = field(
        default_factory=dict
    )
    _started: bool = False  # --start-datetime reached
    _trx: Transactions | None = None  # --include-gtids/--exclude-gtids: where transactions start and end
    _skipping: bool = False  # the transaction being read is outside the GTID sets
    _ts_cache: tuple[int, str] = (-1, "")
    _checksum_on: bool = True
    _options_mask: int = 0xFFFFFFFF  # options_written_to_bin_log of the format description in force

    def begin(self) -> None:
        """The lines every dump starts with (``main`` in mysqlbinlog.cc)."""
        self._emit(
            "/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;\n"
            "/*!40019 SET @@session.max_delayed_threads=0*/;\n"
            "/*!50003 SET @OLD_COMPLETION_TYPE=@@COMPLETION_TYPE,COMPLETION_TYPE=0*/;\n"
            f"DELIMITER {DELIM}\n"
        )

    def finish(self) -> None:
        """The closing lines (and, with ``--flashback``, every held-back event's text in reverse order)."""
        if self.options.flashback:
            self._emit("".join(reversed(self._undo)))
            self._emit(f"COMMIT\n{DELIM}\n")
            self._emit(self._stop)
        self._emit("DELIMITER ;\n")
        self._emit(
            "# End of log file\nROLLBACK /* added by mysqlbinlog */;\n"
            "/*!50003 SET COMPLETION_TYPE=@OLD_COMPLETION_TYPE*/;\n"
            "/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n"
        )
        self.flush()

    def flush(self) -> None:
        if self._out:
            self.write("".join(self._out))
            self._out.clear()
            self._size = 0

    # -- output plumbing ----------------------------------------------------------------------------------------

    def _emit(self, text: str) -> None:
        """Straight to the result file."""
        self._out.append(text)
        self._size += len(text)
        if self._size > FLUSH_AT:
            self.flush()

    def _emit_parts(self, parts: list[str]) -> None:
        self._out += parts
        self._size += sum(map(len, parts))
        if self._size > FLUSH_AT:
            self.flush()

    def _event_text(self, text: str) -> None:
        """An event's own output buffer: printed at once, or held back for reversal under ``--flashback``."""
        if self.options.flashback:
            self._undo.append(text)
        else:
            self._emit(text)

    def _header(self, ev: Event) -> str:
        """``Log_event::print_header``: ``#261122 10:27:21 server id 1  end_log_pos 710 CRC32 0xaa425603 ``."""
        h = ev.header
        ts, text = self._ts_cache
        if ts != h.timestamp:
            t = time.localtime(h.timestamp)
            text = f"{t.tm_year % 100:02d}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:2d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            self._ts_cache = (h.timestamp, text)
        crc = f"CRC32 0x{h.checksum:08x} " if h.checksum is not None and self._checksum_on else ""
        return f"#{text} server id {h.server_id}  end_log_pos {h.log_pos} {crc}"

    def feed(self, ev: Event) -> bool:
        """Print one event; ``False`` when ``--stop-position``/``--stop-datetime`` ends the dump here."""
        h = ev.header
        opts = self.options
        f = opts.filter
        if isinstance(ev, FormatDescriptionEvent):
            self._checksum_on = ev.checksum_alg == 1
            self._options_mask = 0xFFFFFFFF if ev.is_mariadb else ~sum(MARIADB_OPTIONS) & 0xFFFFFFFF
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
            self._emit(f"# at {h.pos}\n")
        handler = _HANDLERS.get(h.type_code)
        if handler is not None and not isinstance(ev, RawEvent):  # a prototype log's TABLE_MAP comes undecoded
            handler(self, ev)
        elif isinstance(ev, RowsEvent):
            rows_event(self, ev)
        else:
            unknown_event(self, ev)
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


Handler = Callable[[TextPrinter, Event], None]
_HANDLERS: dict[int, Handler] = {**control.HANDLERS, **rows.HANDLERS, **query.HANDLERS, **transaction.HANDLERS}
