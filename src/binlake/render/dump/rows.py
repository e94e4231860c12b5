"""The row events of ``binlake dump``: TABLE_MAP, ANNOTATE_ROWS and the WRITE/UPDATE/DELETE_ROWS events.

As MariaDB's ``print_row_event`` (``client/mysqlbinlog.cc``): rows events of one statement are held back until
the statement's last event (STMT_END_F), their headers in the printer's head cache and their ``###`` text in its
tail cache, an ANNOTATE_ROWS until the table map it belongs to; ``--flashback`` reverses and inverts each
statement's rows events (:mod:`binlake.render.flashback`).  The headers are ``Table_map_log_event::print`` and
``Rows_log_event::print_helper`` (``sql/log_event_client.cc``); the ``###`` text comes from
:mod:`binlake.render.dump.rowtext` (the C printer where it takes the event), the ``# Columns`` lines from
:mod:`binlake.render.dump.tablemap`.  :class:`RowsPrinter` keeps that state and prints the family's events.

Example (corpus-bin.000009 of the corpus: ANNOTATE_ROWS, TABLE_MAP, one WRITE_ROWS)::

    # at 1221
    # at 1287
    #261122 10:27:21 server id 1  end_log_pos 1287 CRC32 0x47e774a5 \tAnnotate_rows:
    #Q> INSERT INTO comp VALUES (3, 3, 'tiny', 'x')
    #261122 10:27:21 server id 1  end_log_pos 1370 CRC32 0x09025a34 \tTable_map: `corpus_dml`.`comp` mapped to number 96
    # Columns(`id` INT NOT NULL,
    #         `a` INT,
    #         `txt` TEXT CHARSET utf8mb4 COLLATE utf8mb4_general_ci,
    #         `pad` VARCHAR(400) CHARSET utf8mb4 COLLATE utf8mb4_general_ci)
    # Primary Key(id)
    # at 1370
    #261122 10:27:21 server id 1  end_log_pos 1421 CRC32 0x2fe22f75 \tWrite_rows: table id 96 flags: STMT_END_F
    ### INSERT INTO `corpus_dml`.`comp`
    ### SET
    ###   @1=3 /* INT meta=0 nullable=0 is_null=0 */
    ###   @2=3 /* INT meta=0 nullable=1 is_null=0 */
    ###   @3='tiny' /* BLOB/TEXT meta=2 nullable=1 is_null=0 */
    ###   @4='x' /* VARSTRING(1600) meta=1600 nullable=1 is_null=0 */
    # Number of rows: 1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from binlake.coltypes import Column
from binlake.events.base import Event, EventType
from binlake.events.mariadb import AnnotateRowsEvent
from binlake.events.rows import RowsEvent
from binlake.events.table_map import TM_BIT_HAS_TRIGGERS_F, OptionalField, TableMapEvent
from binlake.render.dump.output import Output
from binlake.render.dump.quoting import backtick
from binlake.render.dump.rowtext import SQL_CLAUSES, RowsText, TextPlan, text_plan
from binlake.render.dump.tablemap import columns_lines, primary_key_line
from binlake.render.flashback import Change, Image, invert
from binlake.values.row import ABSENT

__all__ = ["RowsPrinter"]

E = EventType
_TEXTS_KEPT = 512  # row printers kept (one per table layout, change kind and columns present)
_ROWS_NAMES: dict[int, str] = {
    E.WRITE_ROWS_EVENT: "Write_rows",
    E.WRITE_ROWS_EVENT_V1: "Write_rows",
    E.UPDATE_ROWS_EVENT: "Update_rows",
    E.UPDATE_ROWS_EVENT_V1: "Update_rows",
    E.DELETE_ROWS_EVENT: "Delete_rows",
    E.DELETE_ROWS_EVENT_V1: "Delete_rows",
    E.WRITE_ROWS_COMPRESSED_EVENT: "Write_compressed_rows",
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: "Write_compressed_rows",
    E.UPDATE_ROWS_COMPRESSED_EVENT: "Update_compressed_rows",
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1: "Update_compressed_rows",
    E.DELETE_ROWS_COMPRESSED_EVENT: "Delete_compressed_rows",
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: "Delete_compressed_rows",
    E.PARTIAL_UPDATE_ROWS_EVENT: "Update_rows_partial",
    E.PRE_GA_WRITE_ROWS_EVENT: "Write_rows",
    E.PRE_GA_UPDATE_ROWS_EVENT: "Update_rows",
    E.PRE_GA_DELETE_ROWS_EVENT: "Delete_rows",
}
_FLASHBACK_NAMES = {"Write_rows": "Delete_rows", "Delete_rows": "Write_rows"}


def _presence(image: Image | None) -> tuple[bool, ...]:
    """Which columns an image holds (those not :data:`ABSENT`)."""
    return tuple(value is not ABSENT for value in image or ())


class RowsPrinter:
    """``print_row_event``'s state and the printers of TABLE_MAP, ANNOTATE_ROWS and rows events, writing to ``out``.

    It holds the head cache (the headers of a statement's events so far, and a kept ANNOTATE_ROWS), the tail cache
    (their ``###`` text), the statement's row count, the table ids whose maps the filter leaves out, the rows events
    of the statement under ``--flashback``, and the row printers made per table layout.
    """

    __slots__ = (
        "_annotate",
        "_head",
        "_ignored",
        "_meta_lines",
        "_row_count",
        "_stmt",
        "_tail",
        "_text_plans",
        "_texts",
        "out",
        "row_counts",
    )

    def __init__(self, out: Output) -> None:
        self.out = out
        self._head: list[str] = []  # head_cache: headers waiting for the end of a statement
        self._tail: list[str] = []  # tail_cache: the rows text of the statement so far
        self._annotate: list[str] | None = None  # a kept ANNOTATE_ROWS (printed with the next table map)
        self._row_count = 0
        self.row_counts: Counter[str] = Counter()  # row changes printed, per operation (the tail's metrics)
        self._ignored: set[int] = set()  # table ids whose maps --database/--table filter out
        self._stmt: list[RowsEvent] = []  # --flashback: rows events of the current statement
        self._texts: dict[tuple[int, str, tuple[tuple[bool, ...], ...]], tuple[tuple[Column, ...], RowsText]] = {}
        self._meta_lines: dict[tuple[int, int], tuple[tuple[Column, ...], tuple[OptionalField, ...], str]] = {}
        self._text_plans: dict[tuple[int, str, bytes, bytes | None], tuple[tuple[Column, ...], TextPlan | None]] = {}

    def table_map(self, ev: Event) -> None:
        """``Table_map_log_event::print``, after a kept ANNOTATE_ROWS (unless the filter leaves the table out)."""
        assert isinstance(ev, TableMapEvent)
        out = self.out
        opts = out.options
        if not opts.filter.wants_table(ev.schema, ev.table):
            self._ignored.add(ev.table_id)
            return
        self._ignored.discard(ev.table_id)
        if self._annotate is not None:
            self._head.extend(self._annotate)
            self._annotate = None
        triggers = " (has triggers)" if ev.flags & TM_BIT_HAS_TRIGGERS_F else ""
        self._head.append(
            f"{out.header(ev)}\tTable_map: {backtick(ev.schema)}.{backtick(ev.table)} "
            f"mapped to number {ev.table_id}{triggers}\n"
        )
        if opts.table_metadata:
            self._head.append(self._metadata_lines(ev))
        out.emit("".join(self._head))
        self._head.clear()
        self._stmt.clear()

    def _metadata_lines(self, tm: TableMapEvent) -> str:
        """``# Columns(...)`` and ``# Primary Key(...)``, made once per layout: a table map decoded again returns
        the same ``columns`` and ``optional`` tuples (``table_map._layout`` is cached), which hold all they print."""
        key = (id(tm.columns), id(tm.optional))
        cached = self._meta_lines.get(key)
        if cached is None or cached[0] is not tm.columns or cached[1] is not tm.optional:
            if len(self._meta_lines) >= _TEXTS_KEPT:
                self._meta_lines.clear()
            cached = (tm.columns, tm.optional, columns_lines(tm) + primary_key_line(tm))
            self._meta_lines[key] = cached
        return cached[2]

    def annotate_rows(self, ev: Event) -> None:
        """``Annotate_rows_log_event::print``, kept until the table map it belongs to."""
        assert isinstance(ev, AnnotateRowsEvent)
        text = ev.query_raw
        lines = [f"{self.out.header(ev)}\tAnnotate_rows:\n"]
        for line in text.replace(b"\r", b"\n").split(b"\n"):
            if line:
                lines.append("#Q> " + line.decode("utf-8", "surrogateescape") + "\n")
        self._annotate = lines

    def rows_event(self, ev: RowsEvent) -> None:
        """``print_row_event``: hold each event's text until the statement ends, then print it all."""
        out = self.out
        stmt_end = ev.stmt_end
        if stmt_end:
            self._annotate = None  # an ANNOTATE_ROWS whose table maps were all filtered away
        if ev.table_id in self._ignored or not out.options.filter.wants_op(ev.kind):
            if stmt_end:  # the statement's last event is filtered: what its other events printed goes out now
                self._ignored.clear()
                out.emit("".join(self._head))
                out.emit("".join(self._tail))
                self._head.clear()
                self._tail.clear()
                self._row_count = 0  # the count is not printed, and starts afresh
            return
        if out.options.flashback:
            self._stmt.append(ev)
            if stmt_end:
                for i, e in enumerate(reversed(self._stmt)):
                    self._rows_text(e, flashback=True, stmt_end=i == len(self._stmt) - 1)
                self._stmt.clear()
        else:
            self._rows_text(ev, flashback=False, stmt_end=stmt_end)
        if stmt_end:
            out.emit(f"# Number of rows: {self._row_count}\n")
            self._row_count = 0

    def _rows_text(self, ev: RowsEvent, flashback: bool, stmt_end: bool) -> None:
        """``Rows_log_event::print_helper`` + ``print_verbose``: the header to head, the rows to tail."""
        out = self.out
        name = _ROWS_NAMES.get(ev.header.type_code, ev.header.type)
        if flashback and not ev.compressed:
            name = _FLASHBACK_NAMES.get(name, name)
        head, tail = self._head, self._tail
        head.append(f"{out.header(ev)}\t{name}: table id {ev.table_id}{' flags: STMT_END_F' if stmt_end else ''}\n")
        if ev.extra is not None and ev.extra.ndb_format is not None:
            data = ev.extra.ndb_data or b""
            tail.append(f"### Extra row data format: {ev.extra.ndb_format}, len: {len(data)} :")
            tail.append(("0x" + data.hex().upper() if data else "") + "\n")
        tm = ev.table_map
        if tm is None:
            tail.append(f"### Row event for unknown table #{ev.table_id}")
        elif flashback or not self._compiled_text(ev, tm):
            changes: Sequence[Change] = ev.rows(typed=False)
            kind: str = ev.kind
            if flashback:
                kind, changes = invert(kind, changes)
            self._changes_text(tm, kind, changes)
        if stmt_end:
            if out.options.flashback:
                out.event_text("".join(head) + "".join(tail))
            else:  # the pieces themselves: joined once, when written
                out.emit_parts(head)
                out.emit_parts(tail)
            head.clear()
            tail.clear()

    def _compiled_text(self, ev: RowsEvent, tm: TableMapEvent) -> bool:
        """The rows text of ``ev`` straight from its row images by the compiled printer (:func:`text_plan`), when
        it takes the event; ``False`` leaves it to the Python path (decoded rows through :class:`RowsText`)."""
        if TextPlan is None or ev.partial or not ev.rows_data or tm.column_count != ev.column_count:
            return False
        after = ev.columns_after if ev.kind == "update" else None
        key = (id(tm.columns), ev.kind, ev.columns_before, after)
        cached = self._text_plans.get(key)
        if cached is None or cached[0] is not tm.columns:
            if len(self._text_plans) >= _TEXTS_KEPT:
                self._text_plans.clear()
            present = (ev.columns_before,) if after is None else (ev.columns_before, after)
            cached = (tm.columns, text_plan(tm.columns, ev.kind, present))
            self._text_plans[key] = cached
        plan = cached[1]
        if plan is None:
            return False
        head = f"### {SQL_CLAUSES[ev.kind][0]} {backtick(tm.schema)}.{backtick(tm.table)}\n"
        try:
            done = plan.text(ev.rows_data, head.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:  # a name with a lone surrogate that is no escaped byte
            return False
        if done is None:
            return False
        self._tail.append(done[0])
        self._row_count += done[1]
        self.row_counts[ev.kind] += done[1]
        return True

    def _changes_text(self, tm: TableMapEvent, kind: str, changes: Sequence[Change]) -> None:
        tail = self._tail
        table = f"{backtick(tm.schema)}.{backtick(tm.table)}"
        if kind == "insert" and not changes:
            self._row_count += 1
            self.row_counts[kind] += 1
            tail.append(f"### INSERT INTO {table} VALUES ()\n")
            return
        if not changes:
            return
        before, after = changes[0]  # every change of an event has the same columns in its images
        present = (
            (_presence(after),)
            if kind == "insert"
            else (_presence(before),)
            if kind == "delete"
            else (_presence(before), _presence(after))
        )
        key = (id(tm.columns), kind, present)
        cached = self._texts.get(key)
        if cached is None or cached[0] is not tm.columns:
            if len(self._texts) >= _TEXTS_KEPT:
                self._texts.clear()
            cached = (tm.columns, RowsText(tm.columns, kind, present))
            self._texts[key] = cached
        self._row_count += len(changes)
        self.row_counts[kind] += len(changes)
        cached[1].text(changes, tail.append, f"### {SQL_CLAUSES[kind][0]} {table}\n")
