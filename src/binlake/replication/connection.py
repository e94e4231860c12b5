"""One replication connection, the thin IO part: PyMySQL opens it (TCP, TLS, authentication: mysql_native_password,
caching_sha2_password over TLS or with the RSA key exchange, MariaDB's client_ed25519 through PyNaCl), binlake asks
the server what it is, sets the replica's session variables, registers, sends the dump command and then reads raw
bytes for :class:`~binlake.replication.stream.ReplicationStream`.

The session a dump runs in (the user variables the dump thread reads: MariaDB ``sql/sql_repl.cc``, MySQL
``sql/rpl_binlog_sender.cc``)::

    SET @master_binlog_checksum = @@global.binlog_checksum, @source_binlog_checksum = ... (the events then carry the
        server's CRC32, which the decoder checks; a replica that does not say so gets an error where they have one)
    SET @mariadb_slave_capability = 4     (MariaDB: understands GTID events; 10.6+ refuses a replica without it)
    SET @master_heartbeat_period = ns, @source_heartbeat_period = ns   (a heartbeat while there is nothing to send)
    SET @rpl_semi_sync_slave = 1, @rpl_semi_sync_replica = 1            (semi-sync only)
    SET @slave_connect_state = '...', @slave_gtid_strict_mode = 1, @slave_gtid_ignore_duplicates = 0  (MariaDB GTID)
    COM_REGISTER_SLAVE, then COM_BINLOG_DUMP or (MySQL GTID) COM_BINLOG_DUMP_GTID

PyMySQL has no public API for a command that answers with a stream, so this module (and only it) uses four of its
private attributes: ``_write_bytes`` and ``_next_seq_id`` to send a command, ``_read_packet`` to read the answer to
COM_REGISTER_SLAVE, and ``_rfile`` (the socket's buffered reader) to read the stream and the rows of a large SELECT
(:meth:`ReplicationConnection.send_query`: PyMySQL's row reader, in Python, was most of a snapshot's time).  Every
PyMySQL, socket and TLS error becomes a :class:`~binlake.errors.ReplicationError` (a
:class:`~binlake.errors.ConnectionLostError` where a retry can help): none escapes.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import pymysql
import pymysql.converters
import pymysql.cursors
import pymysql.err

from binlake.errors import BinlogError, ConnectionLostError, ReplicationError, ReplicationTimeoutError
from binlake.events.format import server_version_tuple
from binlake.replication.options import ConnectionOptions
from binlake.replication.position import Flavor
from binlake.replication.protocol import (
    BINLOG_DUMP_NON_BLOCK,
    BINLOG_SEND_ANNOTATE_ROWS_EVENT,
    COM_QUERY,
    MARIA_SLAVE_CAPABILITY_GTID,
    RETRYABLE_CODES,
    binlog_dump,
    binlog_dump_gtid,
    command_packet,
    register_slave,
    semi_sync_ack,
    server_error,
)

__all__ = ["CHUNK", "BinlogSizes", "ReplicationConnection", "ServerInfo", "binlog_status_statement"]

CHUNK = 1 << 18  # bytes asked of the socket per read


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What a server said about itself when the connection opened."""

    flavor: Flavor
    version: str
    server_id: int
    checksum: str  # @@global.binlog_checksum: CRC32 or NONE
    tls: bool  # the connection is encrypted


@contextlib.contextmanager
def translate_errors(options: ConnectionOptions, *, file: str | None = None, pos: int | None = None) -> Iterator[None]:
    """Turn PyMySQL's, the socket's and TLS's exceptions into binlake's (see the module docstring)."""
    where = options.address
    try:
        yield
    except BinlogError:
        raise
    except pymysql.err.MySQLError as e:
        code = e.args[0] if e.args and isinstance(e.args[0], int) else 0
        message = str(e.args[1]) if len(e.args) > 1 else str(e)
        original = getattr(e, "original_exception", None) or e.__context__
        if isinstance(original, ssl.SSLError):
            raise ReplicationError(f"TLS with {where} failed: {original}", file=file, pos=pos) from None
        if isinstance(original, TimeoutError) or "timed out" in message:
            raise ReplicationTimeoutError(
                f"{where} did not answer within {options.timeout:g} s", file=file, pos=pos
            ) from None
        if code in RETRYABLE_CODES:
            raise ConnectionLostError(f"{where}: {message}", file=file, pos=pos) from None
        if not code:  # PyMySQL's own error, not the server's
            raise ReplicationError(f"{where}: {message}", file=file, pos=pos) from None
        raise server_error(code, f"{message} ({where})", file=file, pos=pos) from None
    except TimeoutError:
        raise ReplicationTimeoutError(
            f"{where} sent nothing for {options.timeout:g} s (no event, no heartbeat)", file=file, pos=pos
        ) from None
    except ssl.SSLError as e:
        raise ConnectionLostError(f"TLS connection to {where} broke: {e}", file=file, pos=pos) from None
    except OSError as e:
        raise ConnectionLostError(f"connection to {where} failed: {e.strerror or e}", file=file, pos=pos) from None
    except (ValueError, RuntimeError) as e:  # PyMySQL's own checks; a library PyMySQL needs is missing
        raise ReplicationError(f"{where}: {e}", file=file, pos=pos) from None
    except Exception as e:  # PyMySQL met bytes it cannot read (struct.error, IndexError, UnboundLocalError, ...)
        raise ReplicationError(f"{where} sent a packet PyMySQL cannot read: {e!r}", file=file, pos=pos) from None


def binlog_status_statement(info: ServerInfo) -> str:
    """The statement that gives the server's binlog file and position: ``SHOW BINARY LOG STATUS`` on MySQL 8.2.0
    and later (added there, ``SHOW MASTER STATUS`` deprecated; 8.4 removed the old name), ``SHOW MASTER STATUS``
    on older MySQL and on MariaDB (whose new name, since 10.5.2, is ``SHOW BINLOG STATUS``).  Both need REPLICATION
    CLIENT (MariaDB 10.5+: BINLOG MONITOR)."""
    if info.flavor == "mysql" and server_version_tuple(info.version) >= (8, 2, 0):
        return "SHOW BINARY LOG STATUS"
    return "SHOW MASTER STATUS"


class ReplicationConnection:
    """One connection to a server; see the module docstring.  Use as a context manager, or call :meth:`close`."""

    def __init__(self, options: ConnectionOptions) -> None:
        self.options = options
        self._conn: pymysql.connections.Connection[Any] | None = None
        self.info: ServerInfo | None = None

    def __enter__(self) -> ReplicationConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening ---------------------------------------------------------------------------------------------

    def open(self) -> ServerInfo:
        """Connect, authenticate, and learn the server's flavour, version, id and checksum algorithm."""
        o = self.options
        kwargs: dict[str, Any] = {}
        tls = o.tls
        if tls.mode == "disabled":
            kwargs["ssl_disabled"] = True
        elif tls.mode != "preferred" or tls.cert is not None:
            ctx: dict[str, Any] = {
                "verify_mode": tls.mode in ("verify_ca", "verify_identity"),
                "check_hostname": tls.mode == "verify_identity",
            }
            if tls.ca is not None:
                ctx["ca"] = str(tls.ca)
            if tls.cert is not None and tls.key is not None:
                ctx["cert"], ctx["key"] = str(tls.cert), str(tls.key)
            kwargs["ssl"] = ctx
        with translate_errors(o):
            self._conn = pymysql.connect(
                host=o.host,
                port=o.port,
                user=o.user,
                password=o.password.reveal(),
                connect_timeout=o.connect_timeout,
                read_timeout=o.timeout,
                write_timeout=o.timeout,
                autocommit=True,
                charset="utf8mb4",
                program_name="binlake",
                **kwargs,
            )
            version, server_id = self._row("SELECT VERSION(), @@server_id")
            checksum = self._variable("@@global.binlog_checksum", "NONE")  # servers before 5.6.2 have none
            encrypted = bool(self._row("SHOW SESSION STATUS LIKE 'Ssl_cipher'")[1])
        if tls.required and not encrypted:
            self.close()
            raise ReplicationError(f"TLS is required ({tls.mode}) but the connection to {o.address} is not encrypted")
        flavor: Flavor = "mariadb" if "mariadb" in str(version).lower() else "mysql"
        self.info = ServerInfo(flavor, str(version), int(server_id), str(checksum).upper(), encrypted)
        return self.info

    def _connection(self) -> pymysql.connections.Connection[Any]:
        if self._conn is None:
            raise ReplicationError("the connection is not open")
        return self._conn

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` and return its rows."""
        with translate_errors(self.options), self._connection().cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def cursor(self, *, unbuffered: bool = False) -> pymysql.cursors.Cursor:
        """A PyMySQL cursor of this connection (``unbuffered``: rows are read from the socket as they are fetched,
        so a large result takes no more memory than a ``fetchmany``); run it inside :func:`translate_errors`."""
        return self._connection().cursor(pymysql.cursors.SSCursor if unbuffered else pymysql.cursors.Cursor)

    def _row(self, sql: str) -> tuple[Any, ...]:
        rows = self.query(sql)
        if not rows:
            raise ReplicationError(f"{self.options.address} answered nothing to {sql!r}")
        return rows[0]

    def _variable(self, name: str, default: str) -> str:
        try:
            value = self._row(f"SELECT {name}")[0]
        except ReplicationError as e:
            if isinstance(e, ConnectionLostError) or "1193" not in str(e):  # ER_UNKNOWN_SYSTEM_VARIABLE
                raise
            return default
        return default if value is None else str(value)

    def binary_logs(self) -> list[tuple[str, int]]:
        """``SHOW BINARY LOGS``: the server's binlogs, oldest first, with their sizes (needs REPLICATION CLIENT,
        BINLOG MONITOR in MariaDB 10.5+)."""
        return [(str(r[0]), int(r[1])) for r in self.query("SHOW BINARY LOGS")]

    def binlog_status(self) -> tuple[str, int, str | None]:
        """The file and position the server writes next, and (MySQL) its executed GTID set
        (:func:`binlog_status_statement`; the row's ``File``, ``Position``, ``Binlog_Do_DB``, ``Binlog_Ignore_DB``
        and, MySQL, ``Executed_Gtid_Set``, printed with a newline after each comma, which is dropped here)."""
        if self.info is None:
            raise ReplicationError("the connection is not open")
        rows = self.query(binlog_status_statement(self.info))
        if not rows:
            raise ReplicationError(f"binary logging is off on {self.options.address}")
        row = rows[0]
        gtid = None
        if len(row) > 4 and row[4] is not None and self.flavor == "mysql":
            gtid = "".join(str(row[4]).split())
        return str(row[0]), int(row[1]), gtid

    def binlog_gtid_pos(self, file: str, position: int) -> str | None:
        """MariaDB's GTID position at ``file``:``position`` (``BINLOG_GTID_POS``), ``None`` elsewhere or unknown."""
        if self.flavor != "mariadb":
            return None
        with translate_errors(self.options), self._connection().cursor() as cur:
            cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, position))
            row = cur.fetchone()
        return None if row is None or row[0] is None else str(row[0])

    @property
    def flavor(self) -> Flavor:
        if self.info is None:
            raise ReplicationError("the connection is not open")
        return self.info.flavor

    # -- the dump --------------------------------------------------------------------------------------------

    def prepare(self, *, semi_sync: bool) -> None:
        """Set the session variables of the module docstring (but the GTID start's) and register as a replica."""
        o = self.options
        ns = int(o.heartbeat * 1_000_000_000)
        self.query(
            "SET @master_binlog_checksum = @@global.binlog_checksum, @source_binlog_checksum = @@global.binlog_checksum"
        )
        self.query(f"SET @mariadb_slave_capability = {MARIA_SLAVE_CAPABILITY_GTID}")
        self.query(f"SET @master_heartbeat_period = {ns}, @source_heartbeat_period = {ns}")
        if semi_sync:
            names = ("rpl_semi_sync_master_enabled", "rpl_semi_sync_source_enabled")
            found = [r for n in names for r in self.query(f"SHOW GLOBAL VARIABLES LIKE '{n}'")]
            if not found:
                raise ReplicationError(f"{o.address} has no semi-sync master (the plugin is not loaded)")
            self.query("SET @rpl_semi_sync_slave = 1, @rpl_semi_sync_replica = 1")
        self._command(register_slave(o.server_id, user=b"", port=0))
        try:
            with translate_errors(o):
                packet = self._connection()._read_packet()
        except ReplicationError as e:
            if isinstance(e, ConnectionLostError) or not any(c in str(e) for c in ("1045", "1227")):
                raise
            raise ReplicationError(
                f"{o.address} may not read binlogs: the user lacks REPLICATION SLAVE ({e})"
            ) from None
        if not packet.is_ok_packet():
            raise ReplicationError(f"{o.address} answered COM_REGISTER_SLAVE with {packet.get_all_data()[:32]!r}")

    def set_gtid_start(self, gtid: str) -> None:
        """MariaDB: start after the GTID position ``gtid`` (strict: a GTID the server lacks is an error)."""
        with translate_errors(self.options), self._connection().cursor() as cur:
            cur.execute(
                "SET @slave_connect_state = %s, @slave_gtid_strict_mode = 1, @slave_gtid_ignore_duplicates = 0",
                (gtid,),
            )

    def dump(self, file: str, position: int, *, follow: bool) -> None:
        """COM_BINLOG_DUMP from ``file`` at ``position`` (MariaDB after :meth:`set_gtid_start`: ``""`` and 4)."""
        flags = 0 if follow else BINLOG_DUMP_NON_BLOCK
        if self.flavor == "mariadb":
            flags |= BINLOG_SEND_ANNOTATE_ROWS_EVENT
        self._command(binlog_dump(file, position, self.options.server_id, flags))

    def dump_gtid(self, gtid_data: bytes, *, follow: bool) -> None:
        """COM_BINLOG_DUMP_GTID (MySQL): every transaction not in the encoded GTID set."""
        flags = 0 if follow else BINLOG_DUMP_NON_BLOCK
        self._command(binlog_dump_gtid(self.options.server_id, gtid_data, flags))

    def _command(self, payload: bytes) -> None:
        with translate_errors(self.options):
            conn = self._connection()
            conn._next_seq_id = 0
            conn._write_bytes(command_packet(payload))
            conn._next_seq_id = 1

    def send_query(self, sql: str) -> None:
        """Send ``sql`` as COM_QUERY and leave its answer to :meth:`read` (a
        :class:`~binlake.replication.resultset.TextResultReader` reads it; read it to its end, or close the
        connection, before the next query)."""
        self._command(bytes([COM_QUERY]) + sql.encode("utf-8"))

    def read(self, *, file: str | None = None, pos: int | None = None) -> bytes:
        """The next bytes of the stream (at least one); ``file``/``pos`` name where the stream is, for errors."""
        with translate_errors(self.options, file=file, pos=pos):
            rfile = cast(Any, self._conn)._rfile if self._conn is not None else None
            if rfile is None:
                raise ConnectionLostError(f"the connection to {self.options.address} is closed", file=file, pos=pos)
            data: bytes = rfile.read1(CHUNK)
        if not data:
            raise ConnectionLostError(f"{self.options.address} closed the connection", file=file, pos=pos)
        return data

    def acknowledge(self, file: str, position: int) -> None:
        """Semi-sync: tell the server every event up to ``file``:``position`` is received."""
        with translate_errors(self.options, file=file, pos=position):
            conn = self._connection()
            conn._write_bytes(command_packet(semi_sync_ack(file, position)))

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


class BinlogSizes:
    """``SHOW BINARY LOGS`` on a connection of its own, each call: the server's binlogs and their sizes, oldest first
    (the last one's size is where the server writes next).  The bytes lag of :mod:`binlake.metrics` polls it while
    the replication connection streams.  The connection opens at the first call and again after a failure;
    :meth:`close` ends it.  Needs REPLICATION CLIENT (MariaDB 10.5+: BINLOG MONITOR)."""

    def __init__(self, options: ConnectionOptions) -> None:
        self.options = options
        self._conn: ReplicationConnection | None = None

    def __call__(self) -> list[tuple[str, int]]:
        if self._conn is None:
            conn = ReplicationConnection(self.options)
            try:
                conn.open()
            except BinlogError:
                conn.close()
                raise
            self._conn = conn
        try:
            return self._conn.binary_logs()
        except BinlogError:
            self.close()
            raise

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
