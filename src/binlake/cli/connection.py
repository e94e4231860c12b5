"""The server connection options of ``binlake mirror``, ``tail``, ``changes --host`` and ``ingest --host``: the
command line of :class:`~binlake.replication.options.ConnectionRequest`.  A password is never an argument:
``--password`` is refused without repeating its value.

Example::

    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    options = connection_from_args(parser.parse_args(["--host", "db1", "--user", "repl", "--server-id", "77"]))
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from binlake.replication.options import PASSWORD_ENV, SSL_MODES, ConnectionOptions, ConnectionRequest

__all__ = ["add_connection_arguments", "connection_from_args", "connection_request"]

_DEFAULT = ConnectionRequest("", None, None)  # the defaults the flags show


class _RefusePassword(argparse.Action):
    """``--password`` (or an abbreviation argparse would expand to ``--password-file``): refused, the value not
    repeated, so a password typed on the command line is neither used as a file name nor echoed."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        parser.error(f"no password on the command line: use --password-file FILE, ${PASSWORD_ENV} or the prompt")


def add_connection_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The flags of :class:`~binlake.replication.options.ConnectionRequest`, in a group of their own.
    ``required=False`` for a command that reads a server only when ``--host`` is given (it then checks ``--user``
    and ``--server-id`` itself: :meth:`~binlake.replication.options.ConnectionRequest.options` does)."""
    g = parser.add_argument_group("server connection (the password: --password-file, $BINLAKE_PASSWORD or a prompt)")
    g.add_argument("--password", "--passwd", nargs="?", action=_RefusePassword, help=argparse.SUPPRESS)
    g.add_argument("--host", required=required, help="the server to read from")
    g.add_argument("--port", type=int, default=_DEFAULT.port, help=f"its TCP port (default {_DEFAULT.port})")
    g.add_argument(
        "--user", required=required, help="a user with REPLICATION SLAVE (and REPLICATION CLIENT to list logs)"
    )
    g.add_argument("--password-file", type=Path, metavar="FILE", help="read the password from FILE's first line")
    g.add_argument(
        "--server-id",
        type=int,
        required=required,
        metavar="N",
        help="this replica's server id, 1..4294967295, unique among the server's replicas (two connections with"
        " one id cut each other off)",
    )
    g.add_argument("--ssl-mode", choices=[m.upper() for m in SSL_MODES], type=str.upper, help="default PREFERRED,"
                   " or VERIFY_CA when --ssl-ca is given")  # fmt: skip
    g.add_argument(
        "--ssl-ca",
        type=Path,
        metavar="FILE",
        help="the certificate authority (PEM) that signed the server's certificate",
    )
    g.add_argument("--ssl-cert", type=Path, metavar="FILE", help="client certificate")
    g.add_argument("--ssl-key", type=Path, metavar="FILE", help="client certificate's key")
    g.add_argument(
        "--heartbeat",
        type=float,
        default=_DEFAULT.heartbeat,
        metavar="SECONDS",
        help=f"server heartbeat period ({_DEFAULT.heartbeat:g})",
    )
    g.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULT.timeout,
        metavar="SECONDS",
        help=f"silence that means a dead connection ({_DEFAULT.timeout:g})",
    )
    g.add_argument(
        "--retries",
        type=int,
        metavar="N",
        help="reconnection attempts in a row before giving up (default: unlimited with --follow, else 5)",
    )
    g.add_argument("--semi-sync", action="store_true", help="be a semi-synchronous replica (acknowledge events)")


def connection_request(args: argparse.Namespace) -> ConnectionRequest:
    """The :class:`~binlake.replication.options.ConnectionRequest` of flags added by
    :func:`add_connection_arguments`."""
    return ConnectionRequest(
        host=args.host,
        user=args.user,
        server_id=args.server_id,
        port=args.port,
        password_file=args.password_file,
        ssl_mode=args.ssl_mode,
        ssl_ca=args.ssl_ca,
        ssl_cert=args.ssl_cert,
        ssl_key=args.ssl_key,
        heartbeat=args.heartbeat,
        timeout=args.timeout,
        retries=args.retries,
        semi_sync=args.semi_sync,
    )


def connection_from_args(args: argparse.Namespace, *, follow: bool = True) -> ConnectionOptions:
    """The :class:`~binlake.replication.options.ConnectionOptions` of flags added by
    :func:`add_connection_arguments` (``follow``: the command keeps running, which makes the default number of
    retries unlimited); the password is read last."""
    return connection_request(args).options(follow=follow)
