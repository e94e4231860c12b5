"""``binlake dump``: the text ``mariadb-binlog --base64-output=DECODE-ROWS -vv --print-table-metadata`` prints.

Every line kind follows MariaDB's client code: the ``# at N`` lines, the flow of each event into the output and
the ``# Number of rows`` lines come from ``process_event``/``print_row_event`` in ``client/mysqlbinlog.cc``; the
event header line (``#YYMMDD HH:MM:SS server id N  end_log_pos N CRC32 0x... <TAB>...``) from
``Log_event::print_header``, each event's own lines from its ``print()`` in ``sql/log_event_client.cc``; the
``# Columns(...)``/``# Primary Key(...)`` lines from ``Table_map_log_event::print_columns``/``print_primary_key``;
and the ``### INSERT INTO``/``### WHERE``/``### SET``/``###   @N=value /* TYPE meta=M nullable=N is_null=N */``
blocks from ``Rows_log_event::print_verbose`` and ``log_event_print_value``, whose value text each value family
gives (``RENDER`` of the :mod:`binlake.values` modules).  Timestamps print in local time, as the tool does.

Where ``binlake._speedups`` is built (and ``BINLAKE_PURE_PYTHON`` not set), the ``###`` lines of a rows event are
written in C straight from its row images; a layout with another column type, an event it is not sure to print
the same way (a value its reader rejects, a NaN) and ``--flashback`` take the Python path, which stays the
reference.

Like the tool, rows events of one statement are held back until the statement's last event (STMT_END_F), an
ANNOTATE_ROWS until the table map it belongs to, and ``--flashback`` prints the undo of the log: every buffered
event's text in reverse order, each statement's rows events reversed and inverted (:mod:`binlake.render.flashback`).

Where the tool fails (old MariaDB 5.3 temporal columns, MINIMAL images under ``--flashback``, encrypted logs without
the key) binlake goes on decoding correctly; a decoding error ends the dump with the text so far, then the error
as every command reports it (``binlake dump: FILE: at POS: ...``, exit status 2: :class:`binlake.errors.ExitStatus`).

The modules, one per event family and per value family:

- :mod:`.printer`: :class:`TextPrinter`, the bounds and dispatch by event type;
- :mod:`.output`: what the printers write to: the output buffer, the ``--flashback`` hold-back, the session state
  printed last, the header lines;
- :mod:`.rows`, :mod:`.query`, :mod:`.transaction`, :mod:`.control`: the event families' printers;
- :mod:`.rowtext`: the ``###`` lines of row changes (Python printers and the C printer's plans);
- :mod:`.tablemap`: the SQL type names (``# Columns``/``# Primary Key``, the ``TYPE`` of row lines);
- :mod:`.jsondiff`: MySQL's partial JSON updates; :mod:`.quoting`: the quoting styles and the delimiter;
- :mod:`.options` and this module: :class:`DumpOptions` and :func:`dump` (the command line: :mod:`binlake.cli.dump`).

Example::

    $ binlake dump corpus-bin.000015 --start-position 710 --stop-position 796
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO

from binlake.decoder import Decryptor
from binlake.errors import BinlogError
from binlake.events.context import DecodeOptions
from binlake.render import open_log
from binlake.render.dump.options import DumpOptions
from binlake.render.dump.printer import TextPrinter
from binlake.schema import SchemaTracker

__all__ = ["DumpOptions", "TextPrinter", "dump"]


def dump(
    files: Iterable[str],
    options: DumpOptions,
    out: BinaryIO,
    decode: DecodeOptions | None = None,
    decryptor: Decryptor | None = None,
) -> int:
    """Print ``files`` in order to ``out``, decoded with ``decode`` (and ``decryptor`` for MariaDB encrypted logs);
    0 on success.  A file that cannot be decoded raises its :class:`~binlake.errors.BinlogError` after the text up
    to it is printed (as the tool prints it: no closing lines)."""

    def write(text: str) -> None:
        out.write(text.encode("utf-8", "surrogateescape"))

    decode = decode or DecodeOptions()
    printer = TextPrinter(write, options)
    printer.begin()
    files = list(files)
    schema = SchemaTracker.from_sql(decode.schema_sql) if decode.schema_sql else SchemaTracker()
    for n, path in enumerate(files):  # one schema for the run: DDL in one file applies to the next
        start = options.filter.start_position if n == 0 else None
        last = n == len(files) - 1
        try:
            for ev in open_log(
                path, decode, command="dump", on_error=options.on_error, start=start, decryptor=decryptor,
                schema=schema,
            ):  # fmt: skip
                if not printer.feed(ev) and last:
                    break
        except BinlogError:
            printer.flush()  # like the tool: the text so far, no closing lines
            out.flush()
            raise
    printer.finish()
    out.flush()
    return 0
