"""The ``binlake`` command: one thin module per subcommand (``binlake.cli.events``, ``binlake.cli.dump``, ...), each
turning its command line into typed arguments for the library functions that do the work.

A subcommand's module has ``add_arguments(parser)`` and ``run(args) -> int``; :data:`COMMANDS` names them, and only
the module of the subcommand being run is imported (so ``binlake events`` does not pay for PySpark, and a subcommand
whose module or optional dependencies are missing fails alone, with a message, when it is run).  The options several
commands share have modules of their own: :mod:`.decode` (checksums, ``--schema``, keys, ``--on-error``),
:mod:`.filters`, :mod:`.connection`, :mod:`.debezium`, :mod:`.metrics`; :mod:`.report` is how a command ends (its
exit status and its one stderr line).  argparse is imported here and nowhere else in the library.

Example::

    $ binlake events binlog.000024 --type TABLE_MAP_EVENT
    $ binlake explain binlog.000024 --at 620
    $ python -m binlake explain --hex - < dump.txt
"""

from __future__ import annotations

import argparse
import importlib
import io
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from binlake.cli.report import EPILOG, run
from binlake.errors import ExitStatus

__all__ = ["COMMANDS", "Command", "build_parser", "command_parser", "main", "run", "version"]

DESCRIPTION = "Decode MySQL and MariaDB binary logs exactly, explain them, land them in a lake."


@dataclass(frozen=True, slots=True)
class Command:
    """Where a subcommand lives: ``module.add_arguments(parser)`` and ``module.run(args) -> exit status``."""

    module: str
    help: str


COMMANDS: dict[str, Command] = {
    "events": Command("binlake.cli.events", "list events, one per line (or JSON)"),
    "explain": Command("binlake.cli.explain", "show one event field by field: bytes, offsets, meanings"),
    "dump": Command("binlake.cli.dump", "print events and rows as text"),
    "changes": Command("binlake.cli.changes", "row changes as Debezium JSON, or SQL that replays or undoes them"),
    "tail": Command(
        "binlake.cli.tail", "a running server's changes as text or Debezium JSON, resumable, exactly once into --output"
    ),
    "stats": Command("binlake.cli.stats", "summarise binlogs"),
    # PySpark: needs the `spark` extra
    "ingest": Command("binlake.cli.ingest", "land binlogs in a lake table with PySpark"),
    "mirror": Command("binlake.cli.mirror", "copy a server's binlogs byte for byte"),
    # reads a lake through the Delta log (the `deltalake` package, no Spark)
    "tables": Command("binlake.cli.tables", "list a lake's tables, or show a table's rows"),
    "maintain": Command("binlake.cli.maintain", "compact a lake's files, purge deletion vectors, vacuum, checkpoint"),
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


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(prog="binlake", description=DESCRIPTION, epilog=EPILOG, allow_abbrev=False)
    parser.add_argument("--version", action="version", version=version())
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND", required=True)


def _add(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, *, load: bool) -> argparse.ArgumentParser:
    """Add subcommand ``name``; ``load``: import its module and add its options (raises :class:`ImportError` when
    the module or a dependency of it cannot be imported)."""
    cmd = COMMANDS[name]
    # no abbreviations: an option is taken only by its whole name (a removed --file-key SECRET is an error, not
    # an abbreviation of --file-key-file that would print the secret as a file name)
    p = sub.add_parser(name, help=cmd.help, description=cmd.help, allow_abbrev=False)
    if load:
        module = importlib.import_module(cmd.module)
        module.add_arguments(p)
        command: Callable[[argparse.Namespace], int] = module.run
        p.set_defaults(run=command, parser=p)
    return p


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: every subcommand is listed; only the chosen one's module is imported.

    Raises :class:`ImportError` when the chosen subcommand's module (or a dependency of it) cannot be imported.
    """
    parser, sub = _top_parser()
    chosen = _chosen(argv)
    for name in COMMANDS:
        _add(sub, name, load=name == chosen)
    return parser


def command_parser(name: str | None) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` with all its options (``None``: the top-level ``binlake`` parser), as
    ``binlake NAME --help`` shows it: what the command pages of the documentation are generated from."""
    parser, sub = _top_parser()
    found = {n: _add(sub, n, load=n == name) for n in COMMANDS}
    return parser if name is None else found[name]


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


def _tolerate_unencodable_output() -> None:
    """Escape characters the terminal cannot show (explain's box drawing on an ASCII locale) instead of failing."""
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.encoding.lower().replace("-", "") != "utf8":
        sys.stdout.reconfigure(errors="backslashreplace")
