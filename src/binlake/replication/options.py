"""How to reach a server as a replica: the connection options every live command shares (``binlake mirror``, and the
tail and live ingest built on the same client), and the password.

A :class:`ConnectionRequest` is what a user asked for (the command line's flags, :mod:`binlake.cli.connection`, or
the streaming source's Spark options), before the password is read; :meth:`ConnectionRequest.options` turns it into
the :class:`ConnectionOptions` the client connects with.  The password never travels on the command line: it comes
from ``--password-file`` (the file's first line), else the ``BINLAKE_PASSWORD`` environment variable, else a prompt
when standard input is a terminal, else it is empty.  It is held in a :class:`Secret`, whose ``repr``/``str`` hide
it and which refuses to be pickled (so it cannot ride along into a Spark plan or a state file).

Example::

    options = ConnectionRequest("db1", "repl", 77).options(follow=False)
"""

from __future__ import annotations

import getpass
import math
import os
import random
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, NoReturn, cast

from binlake.errors import ReplicationError

__all__ = [
    "PASSWORD_ENV",
    "SSL_MODES",
    "ConnectionOptions",
    "ConnectionRequest",
    "RetryPolicy",
    "Secret",
    "TlsOptions",
    "read_password",
]

PASSWORD_ENV = "BINLAKE_PASSWORD"
SslMode = Literal["disabled", "preferred", "required", "verify_ca", "verify_identity"]
SSL_MODES: tuple[SslMode, ...] = ("disabled", "preferred", "required", "verify_ca", "verify_identity")


class Secret:
    """A password: ``reveal()`` gives it to the one place that needs it (the authentication); everywhere else
    (``repr``, ``str``, logs, tracebacks, pickles) it stays hidden."""

    __slots__ = ("_value",)

    def __init__(self, value: str | bytes = b"") -> None:
        self._value = value.encode("utf-8") if isinstance(value, str) else bytes(value)

    def reveal(self) -> bytes:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret('')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret is not pickled: pass the password to the process that connects another way")


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """TLS as the ``mysql`` client's ``--ssl-mode`` means it: ``disabled``; ``preferred`` (TLS when the server
    offers it, certificate not checked); ``required`` (TLS or fail, not checked); ``verify_ca`` (the server's
    certificate must be signed by ``ca``); ``verify_identity`` (and name the host).  ``cert``/``key`` give a client
    certificate (for ``REQUIRE X509`` users); with one, TLS is required."""

    mode: SslMode = "preferred"
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    def __post_init__(self) -> None:
        if self.mode not in SSL_MODES:
            raise ReplicationError(f"unknown TLS mode {self.mode!r}: one of {', '.join(SSL_MODES)}")
        if self.mode in ("verify_ca", "verify_identity") and self.ca is None:
            raise ReplicationError(f"TLS mode {self.mode} needs the certificate authority's file (--ssl-ca)")
        if self.mode == "disabled" and (self.ca or self.cert or self.key):
            raise ReplicationError("TLS is disabled but certificate files were given")
        if (self.cert is None) != (self.key is None):
            raise ReplicationError("a client certificate needs both --ssl-cert and --ssl-key")

    @property
    def required(self) -> bool:
        return self.mode not in ("disabled", "preferred") or self.cert is not None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Reconnecting after a lost connection: at most ``retries`` attempts in a row (``None``: no limit), waiting
    ``initial`` seconds before the first and twice as long before each next one, at most ``maximum``; each wait is
    jittered (a uniform draw in its upper half) so that replicas cut off together do not reconnect together."""

    retries: int | None = None
    initial: float = 0.5
    maximum: float = 30.0

    def __post_init__(self) -> None:
        if self.retries is not None and self.retries < 0:
            raise ReplicationError(f"retries must be 0 or more, not {self.retries}")
        if not 0 < self.initial <= self.maximum:
            raise ReplicationError(f"retry waits need 0 < initial <= maximum, not {self.initial}, {self.maximum}")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The wait before attempt ``attempt`` (1 for the first reconnection)."""
        cap = min(self.maximum, math.ldexp(self.initial, min(attempt - 1, 62)))
        draw = rng.uniform(0, cap / 2) if rng is not None else random.uniform(0, cap / 2)
        return cap / 2 + draw


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    """Everything needed to read a server's binlog as a replica.

    ``server_id``: the id this replica announces (COM_REGISTER_SLAVE and the dump command); it must be unique among
    the server's replicas: a second connection with the same id makes the server end the first one's dump.
    ``heartbeat``: seconds between the heartbeats the server sends while it has nothing to send; ``timeout``:
    seconds of silence (no event, no heartbeat) after which the connection is taken for dead (it must exceed the
    heartbeat); ``connect_timeout`` bounds opening a connection.  ``semi_sync``: announce a semi-synchronous replica
    and acknowledge the events the server asks about.
    """

    host: str
    user: str
    server_id: int
    port: int = 3306
    password: Secret = field(default_factory=Secret, repr=False)
    tls: TlsOptions = field(default_factory=TlsOptions)
    heartbeat: float = 15.0
    timeout: float = 60.0
    connect_timeout: float = 10.0
    semi_sync: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        if isinstance(self.server_id, bool) or not isinstance(self.server_id, int):
            raise ReplicationError(f"server id must be an integer, not {self.server_id!r}")
        if not 1 <= self.server_id <= 0xFFFFFFFF:
            raise ReplicationError(
                f"server id {self.server_id} is not in 1..4294967295 (0 is the servers' 'not a replica' id; choose"
                " one no other replica of this server uses)"
            )
        if not 0 < self.port < 65536:
            raise ReplicationError(f"port {self.port} is not a TCP port")
        if not self.host:
            raise ReplicationError("no server host given")
        if self.heartbeat < 0 or self.timeout <= 0 or self.connect_timeout <= 0:
            raise ReplicationError("heartbeat, timeout and connect timeout must be positive")
        if self.heartbeat and self.timeout <= self.heartbeat:
            raise ReplicationError(
                f"the timeout ({self.timeout:g} s) must be longer than the heartbeat period ({self.heartbeat:g} s)"
            )

    @property
    def address(self) -> str:
        """``user@host:port`` for messages (never the password)."""
        return f"{self.user}@{self.host}:{self.port}"


def read_password(password_file: Path | None, *, user: str, host: str) -> Secret:
    """The password: ``password_file``'s first line (without its line break), else ``$BINLAKE_PASSWORD``, else a
    prompt when standard input is a terminal, else empty."""
    if password_file is not None:
        try:
            text = password_file.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ReplicationError(f"cannot read the password file {password_file}: {e}") from None
        return Secret(text.splitlines()[0] if text else "")
    env = os.environ.get(PASSWORD_ENV)
    if env is not None:
        return Secret(env)
    if sys.stdin is not None and sys.stdin.isatty():
        return Secret(getpass.getpass(f"Password for {user}@{host}: "))
    return Secret()


@dataclass(frozen=True, slots=True)
class ConnectionRequest:
    """The connection a user asked for, before the password is read (so it may be kept, pickled and planned):
    :class:`ConnectionOptions`' fields as given.  ``ssl_mode`` (any case) ``None``: ``preferred``, or ``verify_ca``
    when ``ssl_ca`` is given; ``retries`` ``None``: unlimited for a command that keeps running, else 5;
    ``password_file``: where the password is read (else ``$BINLAKE_PASSWORD`` or a prompt: :func:`read_password`).
    ``user`` and ``server_id`` are checked by :meth:`options` (a command that reads a server only with ``--host``
    learns of them late)."""

    host: str
    user: str | None
    server_id: int | None
    port: int = 3306
    password_file: Path | None = None
    ssl_mode: str | None = None
    ssl_ca: Path | None = None
    ssl_cert: Path | None = None
    ssl_key: Path | None = None
    heartbeat: float = 15.0
    timeout: float = 60.0
    retries: int | None = None
    semi_sync: bool = False

    def options(self, *, follow: bool = True) -> ConnectionOptions:
        """The :class:`ConnectionOptions`, the password read last (after every other check); ``follow``: the
        command keeps running, which makes the default number of retries unlimited."""
        missing = [flag for flag, value in (("--user", self.user), ("--server-id", self.server_id)) if value is None]
        if missing or self.user is None or self.server_id is None:
            raise ReplicationError(f"reading a server needs {' and '.join(missing)}")
        mode = self.ssl_mode.lower() if self.ssl_mode else ("verify_ca" if self.ssl_ca else "preferred")
        retries = self.retries if self.retries is not None else (None if follow else 5)
        options = ConnectionOptions(
            host=self.host,
            port=self.port,
            user=self.user,
            server_id=self.server_id,
            tls=TlsOptions(cast(SslMode, mode), self.ssl_ca, self.ssl_cert, self.ssl_key),
            heartbeat=self.heartbeat,
            timeout=self.timeout,
            semi_sync=self.semi_sync,
            retry=RetryPolicy(retries),
        )  # checked before the password is asked for
        return replace(options, password=read_password(self.password_file, user=self.user, host=self.host))
