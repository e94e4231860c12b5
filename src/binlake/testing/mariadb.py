"""Private, throw-away MariaDB servers that write real binlogs, for tests and for the bundled example.

A :class:`MariaDBServer` owns everything it touches: a fresh temporary base directory (datadir, socket,
pid file, logs), a free TCP port on 127.0.0.1 and one ``mariadbd`` process started with ``--no-defaults`` so
no ``my.cnf`` on the machine changes what it writes.  The server logs in ROW format with FULL row images,
FULL table-map metadata and CRC32 checksums (the settings of the shared corpus, see
``../shared/corpus/workloads/START.md``); ``extra_args`` append to or override them
(``--binlog-checksum=NONE``, ``--encrypt-binlog=ON`` with a key plugin, ...) because mariadbd lets the last
occurrence of an option win.

It never outlives its owner: ``__exit__`` stops it (and a failed start stops it too), and on Linux the child
is started with ``PR_SET_PDEATHSIG`` so even a killed test runner takes it down.  Only the standard library
is used, so the helpers work wherever the ``binlake`` package does.

``python -m binlake.testing.mariadb`` starts one for a person trying binlake: it prints how to connect (the
``mariadb`` client as root, and ``binlake ingest --host`` as a replica user whose password is in a file) and runs
until Ctrl-C, which stops it and deletes its data (:func:`main`; the README's and ``docs/getting-started.md``).

Example::

    with MariaDBServer() as server:
        server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v TEXT); "
                       "INSERT INTO d.t VALUES (1, 'a\\tb'), (2, NULL)")
        assert server.query("SELECT id, v FROM d.t ORDER BY id") == [("1", "a\\tb"), ("2", None)]
        server.flush_logs()
        first = server.binlog_files()[0]
        rc, text, err = server.mariadb_binlog(["-vv", "--base64-output=DECODE-ROWS"], first)
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

__all__ = [
    "BASE_DIR_PLACEHOLDER",
    "BINLOG_ARGS",
    "INSTALL_HINT",
    "MariaDBError",
    "MariaDBServer",
    "MariaDBUnavailable",
    "TlsFiles",
    "WorkloadBinlogs",
    "available",
    "die_with_parent",
    "find_tool",
    "free_port",
    "main",
    "make_certificates",
    "missing_tools",
    "run_mariadb_binlog",
    "run_workloads",
]

INSTALL_HINT = "install Debian's MariaDB packages: apt-get install -y mariadb-server mariadb-client"

#: The binlog settings every server starts with (the shared corpus' settings, START.md).
BINLOG_ARGS: tuple[str, ...] = (
    "--binlog-format=ROW",
    "--binlog-row-image=FULL",
    "--binlog-row-metadata=FULL",
    "--binlog-checksum=CRC32",
    "--server-id=1",
)

# Tools a server needs; mariadbd lives in sbin, which is not on every user's PATH.
_SERVER_TOOLS = ("mariadbd", "mariadb-install-db", "mariadb")
_EXTRA_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/local/mysql/sbin")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL.
_MAX_SOCKET_PATH = 107
# How the client's batch mode escapes field bytes (client/mysql.cc, safe_put_field()).
_BATCH_ESCAPES = {"0": "\0", "t": "\t", "n": "\n", "\\": "\\"}
_BATCH_ESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)


class MariaDBError(RuntimeError):
    """A private server or one of the MariaDB command-line tools failed; the message carries its stderr."""


class MariaDBUnavailable(MariaDBError):
    """The MariaDB binaries are not installed on this machine."""


def find_tool(name: str) -> str | None:
    """Return the path of MariaDB program ``name`` (searching PATH, then the usual sbin dirs), or ``None``.

    >>> find_tool("no-such-mariadb-tool") is None
    True
    """
    found = shutil.which(name)
    if found is not None:
        return found
    return shutil.which(name, path=os.pathsep.join(_EXTRA_DIRS))


def missing_tools() -> list[str]:
    """Names of the programs a :class:`MariaDBServer` needs that are not installed."""
    return [name for name in _SERVER_TOOLS if find_tool(name) is None]


def available() -> bool:
    """True when ``mariadbd``, ``mariadb-install-db`` and the ``mariadb`` client are all installed."""
    return not missing_tools()


def _require_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        raise MariaDBUnavailable(f"{name} not found on PATH or in {', '.join(_EXTRA_DIRS)}: {INSTALL_HINT}")
    return path


def run_mariadb_binlog(args: Sequence[str], file: Path | str, *, timeout: float = 300.0) -> tuple[int, bytes, str]:
    """Run ``mariadb-binlog --no-defaults ARGS FILE``; return (exit code, stdout bytes, stderr text).

    The exit code is returned, not raised on: ``mariadb-binlog`` fails on purpose on some corpus files and
    tests compare against that.

    Example::

        rc, out, err = run_mariadb_binlog(["--base64-output=DECODE-ROWS", "-vv"], "binlake-bin.000002")
    """
    tool = _require_tool("mariadb-binlog")
    proc = subprocess.run(
        [tool, "--no-defaults", *args, os.fspath(file)], capture_output=True, timeout=timeout, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on now (the server start retries if it gets taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def die_with_parent() -> None:
    """Runs in the forked child before exec: SIGTERM the server when the process that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _unescape_field(field: str) -> str | None:
    """Undo the client's batch-mode escaping of one field; the bare word NULL is SQL NULL."""
    if field == "NULL":
        return None
    if "\\" not in field:
        return field
    return _BATCH_ESCAPE_RE.sub(lambda m: _BATCH_ESCAPES.get(m.group(1), m.group(0)), field)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return f"({path.name} not readable)"
    return "\n".join(text.splitlines()[-lines:])


class MariaDBServer:
    """One private ``mariadbd`` with binary logging on, used as a context manager.

    ``extra_args`` are appended to the server command line (they win over the defaults). ``base_dir`` (a new
    or empty directory, created if missing) is kept after the server stops; without it a temporary
    directory is created and removed on exit. ``binlog_basename`` names the binlog files
    (``<datadir>/<basename>.000001``). ``buffer_pool`` sizes InnoDB's buffer pool (small for tests).

    Attributes set by :meth:`start`: ``port`` (TCP on 127.0.0.1; root@127.0.0.1 has no password), and from
    construction ``base_dir``, ``datadir``, ``socket_path``, ``pid_file``, ``error_log``.

    Example::

        with MariaDBServer(["--binlog-checksum=NONE"]) as server:
            server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY)")
    """

    def __init__(
        self,
        extra_args: Sequence[str] = (),
        *,
        base_dir: Path | None = None,
        binlog_basename: str = "binlake-bin",
        buffer_pool: str = "128M",
        start_timeout: float = 60.0,
        stop_timeout: float = 120.0,
    ) -> None:
        self.extra_args = tuple(extra_args)
        self.binlog_basename = binlog_basename
        self.buffer_pool = buffer_pool
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._own_base = base_dir is None
        self.base_dir = Path(tempfile.mkdtemp(prefix="binlake-mariadb-")) if base_dir is None else base_dir
        self.datadir = self.base_dir / "data"
        self.socket_path = self.base_dir / "run" / "mysqld.sock"
        self.pid_file = self.base_dir / "run" / "mysqld.pid"
        self.error_log = self.base_dir / "logs" / "mariadbd.err"
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    # -- lifecycle -----------------------------------------------------------------------------------------

    def __enter__(self) -> MariaDBServer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server and, when the base directory is our own temporary one, remove it."""
        try:
            self.stop()
        finally:
            if self._own_base:
                shutil.rmtree(self.base_dir, ignore_errors=True)

    @property
    def running(self) -> bool:
        """True while the mariadbd process we started is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Initialise the datadir (unless it already holds one: a restart keeps it), start mariadbd (on the port of
        the last start, if any, so clients reconnect where they were) and wait (at most ``start_timeout`` s) until
        it answers.  Linux ends the server when the *thread* that started it ends (PR_SET_PDEATHSIG): start it from
        a thread that outlives it."""
        if self._proc is not None:
            raise MariaDBError("server already started")
        mariadbd = _require_tool("mariadbd")
        install_db = _require_tool("mariadb-install-db")
        _require_tool("mariadb")
        if len(os.fsencode(self.socket_path)) > _MAX_SOCKET_PATH:
            raise MariaDBError(f"socket path too long for a unix socket: {self.socket_path}")
        for sub in ("data", "run", "logs", "tmp"):
            (self.base_dir / sub).mkdir(parents=True, exist_ok=True)
        user = ["--user=root"] if os.geteuid() == 0 else []
        if not (self.datadir / "mysql").is_dir():  # a restart keeps the datadir
            self._install(install_db, user)
        self._launch(mariadbd, user)

    def _install(self, install_db: str, user: list[str]) -> None:
        """Initialise the datadir; a failed bootstrap is tried once more in an emptied datadir (on a loaded
        machine the bootstrap has failed with ``Unknown table 'mysql.tmp_user_sys'``, a temporary table of
        scripts/mysql_system_tables.sql, now kept in the server's own tmpdir), then raised with its log."""
        install_log = self.base_dir / "logs" / "install-db.log"
        for attempt in range(2):
            with install_log.open("wb") as log:
                # scripts/mariadb-install-db.sh: "normal" gives root@localhost/127.0.0.1/::1 empty passwords.
                rc = subprocess.run(
                    [
                        install_db,
                        "--no-defaults",
                        f"--datadir={self.datadir}",
                        *user,
                        "--auth-root-authentication-method=normal",
                        "--skip-test-db",
                        f"--tmpdir={self.base_dir / 'tmp'}",  # (passed on to the bootstrapping mariadbd)
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=self.start_timeout,
                    check=False,
                ).returncode
            if rc == 0:
                return
            text = install_log.read_text("utf-8", "replace")
            errors = "\n".join(line for line in text.splitlines() if "ERROR" in line)[-2000:]
            if attempt == 1:
                raise MariaDBError(f"mariadb-install-db failed (exit {rc}):\n{errors}\n...\n{_tail(install_log)}")
            shutil.rmtree(self.datadir)
            self.datadir.mkdir()
            time.sleep(1.0)

    def _launch(self, mariadbd: str, user: list[str]) -> None:
        keep_port = self.port != 0  # a restart listens where clients already connect
        for _attempt in range(3):
            if not keep_port:
                self.port = free_port()
            log_size = self.error_log.stat().st_size if self.error_log.exists() else 0
            self._spawn(mariadbd, user)
            if self._wait_ready():
                return
            # the port can be taken between free_port() and the bind: try another one
            new_log = self.error_log.read_bytes()[log_size:] if self.error_log.exists() else b""
            if b"Bind on TCP/IP port" not in new_log:
                break
            if keep_port:
                time.sleep(1.0)
        proc_state = "exited" if not self.running else f"did not answer within {self.start_timeout:g} s"
        self.stop()
        raise MariaDBError(f"mariadbd {proc_state}; last lines of {self.error_log}:\n{_tail(self.error_log)}")

    def _spawn(self, mariadbd: str, user: list[str]) -> None:
        args = [
            mariadbd,
            "--no-defaults",
            *user,
            f"--datadir={self.datadir}",
            f"--socket={self.socket_path}",
            f"--pid-file={self.pid_file}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--log-error={self.error_log}",
            "--skip-name-resolve",
            f"--log-bin={self.datadir / self.binlog_basename}",
            *BINLOG_ARGS,
            f"--innodb-buffer-pool-size={self.buffer_pool}",
            "--max-allowed-packet=256M",
            "--local-infile=1",
            f"--secure-file-priv={self.base_dir}",
            f"--tmpdir={self.base_dir / 'tmp'}",
            *self.extra_args,
        ]
        with (self.base_dir / "logs" / "mariadbd.stdout").open("ab") as out:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
            )

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if not self.running:
                self._proc = None
                return False
            if self.socket_path.exists():
                try:
                    self.query("SELECT 1", timeout=10)
                    return True
                except MariaDBError:
                    pass
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        """Shut the server down cleanly (SIGTERM, which writes a STOP event into the current binlog).

        Waits at most ``stop_timeout`` seconds, then kills it and raises. Does nothing when not running.
        """
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise MariaDBError(f"mariadbd {proc.pid} ignored SIGTERM for {self.stop_timeout:g} s") from None

    def restart(self) -> None:
        """Shut down cleanly (:meth:`stop`) and start again with the same datadir and port."""
        self.stop()
        self.start()

    def crash(self) -> None:
        """SIGKILL the server (no STOP event, no clean close: what a power cut leaves) and wait for it to die;
        :meth:`start` then recovers the same datadir on the same port."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    @property
    def pid(self) -> int:
        """The server's process id (for SIGSTOP/SIGCONT in tests of a hung server)."""
        if self._proc is None:
            raise MariaDBError("server is not running")
        return self._proc.pid

    def create_user(
        self,
        user: str,
        password: str,
        *,
        plugin: str = "mysql_native_password",
        grants: Sequence[str] = ("REPLICATION SLAVE", "REPLICATION CLIENT"),
        require: str | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        """Create ``user``@``host`` authenticated by ``plugin`` (``mysql_native_password`` or ``ed25519``, whose
        plugin is installed on first use) with ``password``, granted ``grants`` on ``*.*``; ``require`` is a
        ``REQUIRE`` clause (``"SSL"``, ``"X509"``).  Not written to the binlog."""
        if plugin == "ed25519" and not self.query(
            "SELECT 1 FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'"
        ):
            self.execute("INSTALL SONAME 'auth_ed25519'")
        quoted = _sql_string(password)
        privileges = ", ".join(grants) if grants else "USAGE"
        self.execute(
            "SET sql_log_bin = 0;"
            f" CREATE USER {_sql_string(user)}@{_sql_string(host)} IDENTIFIED VIA {plugin} USING PASSWORD({quoted})"
            + (f" REQUIRE {require}" if require else "")
            + f"; GRANT {privileges} ON *.* TO {_sql_string(user)}@{_sql_string(host)}; SET sql_log_bin = 1"
        )

    # -- SQL -----------------------------------------------------------------------------------------------

    def _client(self, sql: str, extra: Sequence[str], timeout: float) -> str:
        if not self.running:
            raise MariaDBError("server is not running")
        cmd = [
            _require_tool("mariadb"),
            "--no-defaults",
            "--protocol=socket",
            f"--socket={self.socket_path}",
            "--user=root",
            "--default-character-set=utf8mb4",
            *extra,
        ]
        try:
            proc = subprocess.run(cmd, input=sql.encode("utf-8"), capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise MariaDBError(f"mariadb client timed out after {timeout:g} s on: {sql[:200]!r}") from exc
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise MariaDBError(f"mariadb client failed (exit {proc.returncode}): {err}\nSQL: {sql[:300]!r}")
        return proc.stdout.decode("utf-8", "surrogateescape")

    def execute(self, sql: str, *, timeout: float = 600.0) -> None:
        """Run SQL (one or more statements; ``DELIMITER`` works) through the ``mariadb`` client.

        Raises :class:`MariaDBError` with the client's stderr when a statement fails (the client stops at it).
        """
        self._client(sql, (), timeout)

    def query(self, sql: str, *, timeout: float = 600.0) -> list[tuple[str | None, ...]]:
        """Run a query and return its rows as tuples of strings, SQL NULL as ``None``.

        Uses the client's ``--batch --skip-column-names`` output *without* ``--raw``: the client escapes
        NUL, tab, newline and backslash inside values (``\\0 \\t \\n \\\\``), which this undoes, so
        values with tabs and newlines come back exactly. Two limits: the string ``'NULL'`` is
        indistinguishable from SQL NULL (select ``col IS NULL`` or ``HEX(col)`` where that matters), and bytes
        that are not UTF-8 (binary columns) come back as surrogate escapes:
        ``value.encode("utf-8", "surrogateescape")`` gives the exact bytes. Several result sets are
        concatenated.

        >>> # server.query("SELECT 1, NULL, 'a\\\\tb'")  ->  [('1', None, 'a\\tb')]
        """
        out = self._client(sql, ("--batch", "--skip-column-names"), timeout)
        lines = out.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [tuple(_unescape_field(field) for field in line.split("\t")) for line in lines]

    def flush_logs(self) -> None:
        """``FLUSH BINARY LOGS``: close the current binlog (it ends with a ROTATE event) and open the next."""
        self.execute("FLUSH BINARY LOGS")

    def current_binlog(self) -> Path:
        """The binlog file the server writes to now (``SHOW MASTER STATUS``)."""
        rows = self.query("SHOW MASTER STATUS")
        if not rows or rows[0][0] is None:
            raise MariaDBError("binary logging is off")
        return self.datadir / rows[0][0]

    def binlog_files(self) -> list[Path]:
        """All binlog files the server knows (``SHOW BINARY LOGS``), oldest first, as paths in the datadir."""
        return [self.datadir / row[0] for row in self.query("SHOW BINARY LOGS") if row[0] is not None]

    def mariadb_binlog(self, args: Sequence[str], file: Path | str) -> tuple[int, bytes, str]:
        """:func:`run_mariadb_binlog` on one of this server's files (a bare name means one in the datadir)."""
        path = Path(file)
        return run_mariadb_binlog(args, path if path.is_absolute() else self.datadir / path)


#: Placeholder in workload SQL for the base directory of the server (its ``secure_file_priv``).
BASE_DIR_PLACEHOLDER = "${BASE_DIR}"


@dataclass(frozen=True)
class WorkloadBinlogs:
    """What :func:`run_workloads` wrote: the server (still running) and its binlog files.

    ``files`` are every binlog the workloads wrote, oldest first, all closed (each ends with a ROTATE event);
    ``by_workload`` maps a workload's name (its file stem without the numeric prefix: ``"compressed"`` for
    ``07_compressed.sql``) to the files it wrote.
    """

    server: MariaDBServer
    files: list[Path]
    by_workload: dict[str, list[Path]]


def run_workloads(server: MariaDBServer, sql_files: Iterable[Path]) -> WorkloadBinlogs:
    """Run SQL files one after another, each in its own client session, and say which binlogs each wrote.

    Every file must start a new binlog (``FLUSH BINARY LOGS``, or a ``binlog_checksum`` change) before its
    first logged statement: the files a workload wrote are the ones opened while it ran. ``${BASE_DIR}`` in
    the SQL becomes the server's base directory. A final ``FLUSH BINARY LOGS`` closes the last file.

    Example::

        result = run_workloads(server, sorted(Path("tests/workloads").glob("*.sql")))
        result.by_workload["compressed"]   # [PosixPath('.../binlake-bin.000010')]
    """
    by_workload: dict[str, list[Path]] = {}
    files: list[Path] = []
    for sql_file in sql_files:
        name = sql_file.stem.lstrip("0123456789_") or sql_file.stem
        before = server.binlog_files()
        sql = sql_file.read_text("utf-8").replace(BASE_DIR_PLACEHOLDER, os.fspath(server.base_dir))
        server.execute(sql)
        written = server.binlog_files()[len(before) :]
        by_workload[name] = written
        files.extend(written)
    server.flush_logs()
    return WorkloadBinlogs(server=server, files=files, by_workload=by_workload)


def _sql_string(value: str) -> str:
    """``value`` as a single-quoted SQL string literal (quotes and backslashes escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class TlsFiles:
    """The certificates :func:`make_certificates` wrote: a CA, the server's certificate and key (signed by it, for
    ``127.0.0.1`` and ``localhost``) and a client's.  :meth:`server_args` gives the server's options."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_args(self) -> list[str]:
        return [f"--ssl-ca={self.ca}", f"--ssl-cert={self.server_cert}", f"--ssl-key={self.server_key}"]


def make_certificates(directory: Path) -> TlsFiles:
    """Make a throw-away CA and the server's and a client's certificates in ``directory`` with ``openssl``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise MariaDBUnavailable("openssl not found: apt-get install -y openssl")
    directory.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        proc = subprocess.run([openssl, *args], cwd=directory, capture_output=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise MariaDBError(f"openssl {args[0]} failed: {proc.stderr.decode('utf-8', 'replace')}")

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3", "-subj", "/CN=binlake test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n", "ascii")
    for name, cn in (("server", "127.0.0.1"), ("client", "binlake test client")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={cn}", "-keyout", f"{name}.key",
            "-out", f"{name}.csr")  # fmt: skip
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "3", "-out", f"{name}.pem", "-extfile", "san.ext")  # fmt: skip
    return TlsFiles(
        directory / "ca.pem",
        directory / "server.pem",
        directory / "server.key",
        directory / "client.pem",
        directory / "client.key",
    )


#: The replica user :func:`main` creates, and what it may do: read the binlog as a replica (``REPLICATION SLAVE``,
#: ``BINLOG MONITOR`` for the server's current end) and ``SELECT`` the tables a first ``ingest --host`` snapshots.
THROWAWAY_USER = ("binlake", ("REPLICATION SLAVE", "BINLOG MONITOR", "SELECT"))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m binlake.testing.mariadb``: a throw-away server for trying binlake, until Ctrl-C (or SIGTERM)
    stops it and deletes its data; 0 then, 2 when MariaDB is not installed or does not start."""
    import argparse
    import secrets

    parser = argparse.ArgumentParser(
        prog="python -m binlake.testing.mariadb",
        description="Start a throw-away MariaDB on 127.0.0.1 that writes binlogs, print how to connect, run until "
        "Ctrl-C (which stops it and deletes its data).",
    )
    parser.parse_args(argv)
    # Ctrl-C and `kill` stop it, its data deleted: even where it was started with SIGINT ignored (in the background
    # of a script), which Python would otherwise keep
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with MariaDBServer() as server:
            user, grants = THROWAWAY_USER
            password = server.base_dir / f"{user}.password"
            password.write_text(secrets.token_urlsafe(16) + "\n", "ascii")
            password.chmod(0o600)
            server.create_user(user, password.read_text("ascii").strip(), grants=grants)
            version = server.query("SELECT VERSION()")[0][0]
            print(
                f"a throw-away MariaDB {version} on 127.0.0.1:{server.port}, its data in {server.base_dir} (deleted "
                "when it stops); Ctrl-C stops it\n"
                f"  SQL, as root:   mariadb --no-defaults -h 127.0.0.1 -P {server.port} -u root\n"
                f"  binlake:        binlake ingest --host 127.0.0.1 --port {server.port} --user {user} "
                f"--password-file {password} --server-id 4242 --lake LAKE",
                flush=True,
            )
            while server.running:
                time.sleep(0.5)
            print(f"mariadbd stopped by itself; its log: {_tail(server.error_log)}", file=sys.stderr)
            return 2
    except KeyboardInterrupt:
        print("stopped; its data deleted", flush=True)
        return 0
    except MariaDBError as e:
        print(f"python -m binlake.testing.mariadb: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
