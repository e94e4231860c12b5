"""The Debezium options of ``binlake changes`` and ``binlake tail``: the command line of
:class:`~binlake.render.changes.debezium.DebeziumOptions`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from binlake.errors import BinlogError

if TYPE_CHECKING:
    from binlake.render.changes.debezium import DebeziumOptions

__all__ = ["add_debezium_arguments", "debezium_options"]


def add_debezium_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the Debezium JSON (``binlake changes``, ``binlake tail``)."""
    from binlake.render.changes.debezium import SETTINGS

    parser.add_argument(
        "--name",
        "--topic-prefix",
        dest="name",
        default="binlake",
        help="debezium: the logical server name (source.name; Debezium's topic.prefix), default binlake",
    )
    parser.add_argument(
        "--processing-time",
        action="store_true",
        help="debezium: top-level ts_ms is the time the line is written (default: the change's own time)",
    )
    choices = "; ".join(f"{key}={'|'.join(values)}" for key, values in SETTINGS.items())
    parser.add_argument(
        "--debezium-option",
        dest="debezium_options",
        action="append",
        type=_debezium_option,
        default=[],
        metavar="KEY=VALUE[,...]",
        help=f"debezium: connector settings under Debezium's names, repeatable ({choices}; the first value of "
        "each is the default, the connector's); decimal.handling.mode=string,bigint.unsigned.handling.mode=precise "
        "gives binlake's output from before these options",
    )


def _debezium_option(text: str) -> str:
    """``--debezium-option``'s value, checked as it is read (a bad one is a usage error)."""
    from binlake.render.changes.debezium import ValueModes

    try:
        ValueModes.parse_text([text])
    except BinlogError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def debezium_options(args: argparse.Namespace) -> DebeziumOptions:
    """The :class:`~binlake.render.changes.debezium.DebeziumOptions` of :func:`add_debezium_arguments`' options."""
    from binlake.render.changes.debezium import DebeziumOptions, ValueModes

    modes = ValueModes.parse_text(args.debezium_options)
    return DebeziumOptions(name=args.name, processing_time=args.processing_time, modes=modes)
