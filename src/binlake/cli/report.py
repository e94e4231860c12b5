"""How a command ends: its exit status (:class:`~binlake.errors.ExitStatus`, the one table) and the one line it
prints on stderr, prefixed ``binlake COMMAND:`` as every line a command writes there.

:func:`run` is the one place where the way a command ends becomes its status; :func:`error_line` is the line of a
:class:`~binlake.errors.BinlogError` (the commands that go on past a file's error, ``events`` and ``explain``,
print it themselves).

Example::

    >>> error_line("events", BinlogError("CRC32 mismatch", pos=620), "binlog.000024")
    'binlake events: binlog.000024: at 620: CRC32 mismatch'
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from typing import TypeVar

from binlake.errors import (
    BinlogError,
    ChecksumError,
    ExitStatus,
    Interrupted,
    MalformedError,
    TruncatedError,
    UnknownEventError,
    UnsupportedError,
    after_ctrl_c,
)

__all__ = ["EPILOG", "error_line", "option_type", "run"]

T = TypeVar("T")

EPILOG = (
    "Exit status: 0 done, 1 an unexpected failure (a traceback), 2 an error (one line says it), "
    "3 a temporary failure (the same command run later goes on), 130 interrupted (Ctrl-C)."
)
"""The exit-status table in one sentence, as ``binlake --help`` ends."""

#: What ``--on-error skip-event|skip-transaction`` reads on past: an event that does not decode (the errors the
#: recovering reader of :mod:`binlake.recovery` skips, met at a position of the file); an unknown event type is an
#: error only when ``--unknown-events error`` asked for it.
_SKIPPABLE = (TruncatedError, ChecksumError, MalformedError, UnsupportedError)


def error_line(command: str, err: BinlogError, file: str | None = None, *, on_error: str | None = None) -> str:
    """``binlake COMMAND: <file>: at <pos>: <message>``, the line a command prints on stderr for a BinlogError; a
    damaged event met under ``--on-error stop`` (``on_error``: the command's option, ``None`` where it has none)
    says how to read on past it.

    >>> error_line("dump", TruncatedError("the event ends early", pos=620), "b.000001", on_error="stop")
    'binlake dump: b.000001: at 620: the event ends early (--on-error skip-event or skip-transaction reads on past it)'
    """
    if file is not None and err.file is None:
        err = err.at_file(file)
    hint = ""
    if on_error == "stop" and isinstance(err, _SKIPPABLE) and not isinstance(err, UnknownEventError) and err.pos:
        hint = " (--on-error skip-event or skip-transaction reads on past it)"
    return f"binlake {command}: {err}{hint}"


def option_type(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` as an argparse ``type``: its :class:`ValueError` (or :class:`~binlake.errors.BinlogError`) is a
    usage error that says its own message (argparse would otherwise say only "invalid value")."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except (ValueError, BinlogError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return convert


def run(command: str, fn: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``fn(args)``, the command ``binlake COMMAND`` names, and the one place where the way it ends becomes an exit
    status (:class:`~binlake.errors.ExitStatus`) and at most one line on stderr, prefixed ``binlake COMMAND:`` as
    every line a command writes there: a :class:`~binlake.errors.BinlogError` its line (with ``--on-error``'s way
    past a damaged event where the command has it) and its status; Ctrl-C (or a library's error on its way out of
    one: :func:`~binlake.errors.after_ctrl_c`) ``interrupted``, with what is safe when the command said it
    (:class:`~binlake.errors.Interrupted`), and 130; a closed pipe (``binlake events big.bin | head``) nothing, and
    0, as ``cat`` does; an output that cannot be written (standard output on a full disk, or closed; a file the
    command writes) its one line naming it, and 2.  Any other exception is a bug: Python's traceback and 1."""
    _log_to_stderr(command)
    try:
        status = int(fn(args))
        sys.stdout.flush()  # its last bytes: an output that cannot take them is said here, not at the exit
        return status
    except BrokenPipeError:
        _drop_output()
        return ExitStatus.OK
    except BaseException as e:
        if after_ctrl_c(e):
            what = f": {e}" if isinstance(e, Interrupted) and str(e) else ""
            print(f"binlake {command}: interrupted{what}", file=sys.stderr)
            return ExitStatus.INTERRUPTED
        # an output the system refuses (a connection a retry loop should have taken would be a bug: raised)
        if isinstance(e, OSError) and not isinstance(e, ConnectionError | TimeoutError):
            where = e.filename if e.filename is not None else "standard output" if _output_failed() else None
            print(f"binlake {command}: {f'{where}: ' if where else ''}{e.strerror or e}", file=sys.stderr)
            return ExitStatus.ERROR
        if not isinstance(e, BinlogError):
            raise
        print(error_line(command, e, on_error=getattr(args, "on_error", None)), file=sys.stderr)
        return e.exit_status


def _output_failed() -> bool:
    """Whether standard output cannot be written (its buffer does not flush: a full disk, a closed descriptor);
    where so, what is left in it is dropped, so that the interpreter's own flush at exit does not fail again."""
    try:
        sys.stdout.flush()
    except OSError:
        _drop_output()
        return True
    return False


def _drop_output() -> None:
    """Standard output from now on goes nowhere (the command has ended; Python flushes it once more at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _log_to_stderr(command: str) -> None:
    """binlake's log lines (connections, each reconnection attempt, a store's retried write, a cut-back output) on
    stderr, timestamped and prefixed ``binlake COMMAND:``; only binlake's loggers, not a library's (py4j's
    "Closing down clientserver connection").  Called again (tests run commands in one process), it replaces its
    handler: one line per record, on the stderr of the time."""
    root = logging.getLogger("binlake")
    for old in [h for h in root.handlers if h.get_name() == "binlake-cli"]:
        root.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name("binlake-cli")
    handler.setFormatter(logging.Formatter(f"binlake {command}: %(asctime)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
