"""The metrics options of the long-running commands (``tail``, ``mirror``, ``ingest``): the command line of
:class:`~binlake.metrics.MetricsOptions`.

Example::

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_metrics_arguments(p)
    >>> metrics_options(p.parse_args(["--metrics-port", "0", "--metrics-log", "30"]))
    MetricsOptions(port=0, host=None, log_every=30.0)
"""

from __future__ import annotations

import argparse

from binlake.metrics import LOCAL, MetricsOptions

__all__ = ["add_metrics_arguments", "metrics_options"]


def add_metrics_arguments(parser: argparse.ArgumentParser) -> None:
    """``--metrics-port``, ``--metrics-host`` and ``--metrics-log``, in a group of their own."""
    g = parser.add_argument_group("metrics (lag, throughput, retries; see docs/reference/metrics.md)")
    g.add_argument(
        "--metrics-port",
        type=_port,
        metavar="PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (0: a free port, named on stderr)",
    )
    g.add_argument(
        "--metrics-host",
        metavar="HOST",
        help=f"the address --metrics-port listens on (default {LOCAL}: this machine only)",
    )
    g.add_argument(
        "--metrics-log",
        type=_seconds,
        metavar="SECONDS",
        help="write the metrics to stderr as one JSON line every SECONDS",
    )


def metrics_options(args: argparse.Namespace) -> MetricsOptions:
    """The :class:`~binlake.metrics.MetricsOptions` of options added by :func:`add_metrics_arguments`."""
    return MetricsOptions(port=args.metrics_port, host=args.metrics_host, log_every=args.metrics_log)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535)")
    return port


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return seconds
