"""The ``binlake`` command: argparse glue from subcommands to the modules that implement them.

Each subcommand is a module with ``add_<name>_arguments(parser)`` and ``<name>_main(args) -> int``; only the module
of the subcommand being run is imported (so ``binlake events`` does not pay for PySpark, and a subcommand whose
module or optional dependencies are missing fails alone, with a message, when it is run).

Example::

    $ binlake events binlog.000024 --type TABLE_MAP_EVENT
    $ binlake explain binlog.000024 --at 620
    $ python -m binlake explain --hex - < dump.txt
"""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from binlake.errors import BinlogError, ExitStatus, Interrupted, after_ctrl_c

__all__ = ["COMMANDS", "Command", "build_parser", "main", "run", "version"]


@dataclass(frozen=True, slots=True)
class Command:
    """Where a subcommand lives: ``module.add_arguments(parser)`` and ``module.run(args) -> exit status``."""

    module: str
    add_arguments: str
    run: str
    help: str


COMMANDS: dict[str, Command] = {
    "events": Command(
        "binlake.render.events", "add_events_arguments", "events_main", "list events, one per line (or JSON)"
    ),
    "explain": Command(
        "binlake.render.explain",
        "add_explain_arguments",
        "explain_main",
        "show one event field by field: bytes, offsets, meanings",
    ),
    # -- registration point: `binlake dump` (render/dump/) ---------------------------------------------------------
    "dump": Command("binlake.render.dump", "add_dump_arguments", "dump_main", "print events and rows as text"),
    # -- registration point: `binlake changes` (render/changes/; the change stream: changes/) ----------------------
    "changes": Command(
        "binlake.render.changes",
        "add_changes_arguments",
        "changes_main",
        "row changes as Debezium JSON, or SQL that replays or undoes them",
    ),
    # -- registration point: `binlake tail` (render/changes/tail.py: the change stream of a server, resumable) -------
    "tail": Command(
        "binlake.render.changes.tail",
        "add_tail_arguments",
        "tail_main",
        "a running server's changes as text or Debezium JSON, resumable, exactly once into --output",
    ),
    # -- registration point: `binlake stats` (render/stats.py) -----------------------------------------------------
    "stats": Command("binlake.render.stats", "add_stats_arguments", "stats_main", "summarise binlogs"),
    # -- registration point: `binlake ingest` (PySpark; needs the `spark` extra) -----------------------------------
    "ingest": Command(
        "binlake.spark.cli", "add_ingest_arguments", "ingest_main", "land binlogs in a lake table with PySpark"
    ),
    # -- registration point: `binlake mirror` (replication/mirror.py; PyMySQL) -----------------------------------
    "mirror": Command(
        "binlake.replication.mirror", "add_mirror_arguments", "mirror_main", "copy a server's binlogs byte for byte"
    ),
    # `binlake tables`: reads a lake through the Delta log (the `deltalake` package, no Spark)
    "tables": Command(
        "binlake.lake.show", "add_tables_arguments", "tables_main", "list a lake's tables, or show a table's rows"
    ),
}


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first argument that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def version() -> str:
    """``binlake X.Y.Z``: the installed package's version (its metadata, as ``pip`` sees it)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return f"binlake {installed('binlake')}"
    except PackageNotFoundError:  # run from a source tree that was never installed (PYTHONPATH=src)
        return "binlake (not installed: no version)"


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: every subcommand is listed; only the chosen one's module is imported.

    Raises :class:`ImportError` when the chosen subcommand's module (or a dependency of it) cannot be imported.
    """
    parser = argparse.ArgumentParser(
        prog="binlake",
        description="Decode MySQL and MariaDB binary logs exactly, explain them, land them in a lake.",
        epilog="Exit status: 0 done, 1 an unexpected failure (a traceback), 2 an error (one line says it), "
        "3 a temporary failure (the same command run later goes on), 130 interrupted (Ctrl-C).",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = _chosen(argv)
    for name, cmd in COMMANDS.items():
        # no abbreviations: an option is taken only by its whole name (a removed --file-key SECRET is an error, not
        # an abbreviation of --file-key-file that would print the secret as a file name)
        p = sub.add_parser(name, help=cmd.help, description=cmd.help, allow_abbrev=False)
        if name == chosen:
            module = importlib.import_module(cmd.module)
            getattr(module, cmd.add_arguments)(p)
            run: Callable[[argparse.Namespace], int] = getattr(module, cmd.run)
            p.set_defaults(run=run, parser=p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``binlake``; return the exit status (:class:`~binlake.errors.ExitStatus`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    _tolerate_unencodable_output()
    try:
        parser = build_parser(args_list)
    except ImportError as e:
        print(f"binlake: {_chosen(args_list)} is not available here: {e}", file=sys.stderr)
        return ExitStatus.ERROR
    args, unknown = parser.parse_known_args(args_list)
    if unknown:  # the subcommand's usage, not the top level's: it is the one that did not know them
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    status = run(args.command, args.run, args)
    if argv is None and threading.current_thread() is threading.main_thread():
        # the program's command is done and its output flushed: a Ctrl-C while the interpreter tears down (Spark's
        # JVM exiting) changes nothing, so it is ignored and the status stays the command's (Python restores
        # SIGINT's default action as it finalizes: the process would die of it, silently, with 130)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


def run(command: str, fn: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``fn(args)``, the command ``binlake COMMAND`` names, and the one place where the way it ends becomes an exit
    status (:class:`~binlake.errors.ExitStatus`) and at most one line on stderr, prefixed ``binlake COMMAND:`` as
    every line a command writes there: a :class:`~binlake.errors.BinlogError` its line (with ``--on-error``'s way
    past a damaged event where the command has it) and its status; Ctrl-C (or a library's error on its way out of
    one: :func:`~binlake.errors.after_ctrl_c`) ``interrupted``, with what is safe when the command said it
    (:class:`~binlake.errors.Interrupted`), and 130; a closed pipe (``binlake events big.bin | head``) nothing, and
    0, as ``cat`` does; an output that cannot be written (standard output on a full disk, or closed; a file the
    command writes) its one line naming it, and 2.  Any other exception is a bug: Python's traceback and 1."""
    from binlake.render import error_line

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


def _tolerate_unencodable_output() -> None:
    """Escape characters the terminal cannot show (explain's box drawing on an ASCII locale) instead of failing."""
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.encoding.lower().replace("-", "") != "utf8":
        sys.stdout.reconfigure(errors="backslashreplace")
