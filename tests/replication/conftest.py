"""Fixtures of the replication tests that need a server: a private MariaDB with TLS certificates the test makes
(``openssl``), replication users (a native password, ed25519, one that must use TLS, one with REPLICATION SLAVE only),
and the binlogs of ``tests/workloads/*.sql``; a fresh server per test for the ones that restart, crash, purge or
stop it.  Helpers compare what a client streamed with what the file reader reads from the server's own files."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from binlake.reader import read_events
from binlake.replication import ConnectionOptions, RetryPolicy, Secret, StreamEvent, TlsOptions
from binlake.testing.mariadb import (
    INSTALL_HINT,
    MariaDBServer,
    TlsFiles,
    WorkloadBinlogs,
    make_certificates,
    missing_tools,
    run_workloads,
)

PASSWORD = "Pw-for-replication-7"  # tests check it never shows in logs or errors
USERS = {
    "native": "mysql_native_password",
    "ed25519": "ed25519",
    "tls": "mysql_native_password",
}


def _need_mariadb() -> None:
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")


def add_users(server: MariaDBServer) -> None:
    """The replication users: the minimal privileges a replica needs in MariaDB 10.11 are REPLICATION SLAVE (to
    register and dump) and, to list binlogs or find the current end, BINLOG MONITOR (alias REPLICATION CLIENT)."""
    server.create_user("repl_native", PASSWORD, grants=("REPLICATION SLAVE", "BINLOG MONITOR"))
    server.create_user("repl_ed25519", PASSWORD, plugin="ed25519", grants=("REPLICATION SLAVE", "REPLICATION CLIENT"))
    server.create_user("repl_tls", PASSWORD, grants=("REPLICATION SLAVE", "BINLOG MONITOR"), require="X509")
    server.create_user("repl_slave_only", PASSWORD, grants=("REPLICATION SLAVE",))
    server.create_user("no_repl", PASSWORD, grants=("SELECT",))


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_certificates(tmp_path_factory.mktemp("tls"))


@dataclass
class ReplServer:
    """A server with the replication users, and the binlogs the workloads wrote on it."""

    server: MariaDBServer
    tls: TlsFiles
    workloads: WorkloadBinlogs | None = None

    def options(
        self,
        user: str = "repl_native",
        *,
        tls: TlsOptions | None = None,
        server_id: int = 4242,
        heartbeat: float = 0.5,
        timeout: float = 5.0,
        retry: RetryPolicy | None = None,
        semi_sync: bool = False,
    ) -> ConnectionOptions:
        """Options for ``user`` with short heartbeats and timeouts, and quick retries."""
        if tls is None:
            tls = (
                TlsOptions("verify_identity", self.tls.ca, self.tls.client_cert, self.tls.client_key)
                if user == "repl_tls"
                else TlsOptions("preferred")
            )
        return ConnectionOptions(
            "127.0.0.1",
            user,
            server_id=server_id,
            port=self.server.port,
            password=Secret(PASSWORD),
            tls=tls,
            heartbeat=heartbeat,
            timeout=timeout,
            connect_timeout=5.0,
            retry=retry or RetryPolicy(30, 0.05, 0.5),
            semi_sync=semi_sync,
        )


@pytest.fixture(scope="module")
def repl_server(tls_files: TlsFiles, repo_root: Path) -> Iterator[ReplServer]:
    """A server with TLS, the users of :func:`add_users` and the workloads' binlogs (tests must not change them)."""
    _need_mariadb()
    with MariaDBServer(tls_files.server_args()) as server:
        add_users(server)
        workloads = run_workloads(server, sorted((repo_root / "tests" / "workloads").glob("*.sql")))
        yield ReplServer(server, tls_files, workloads)


@pytest.fixture
def fresh_server(tls_files: TlsFiles) -> Iterator[ReplServer]:
    """A server of the test's own (it may restart, crash, purge or stop it), with the users and one table."""
    _need_mariadb()
    with MariaDBServer(tls_files.server_args()) as server:
        add_users(server)
        server.execute(
            "CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY, batch INT, v LONGTEXT);"
            " CREATE TABLE r.m (id INT PRIMARY KEY, v TEXT) ENGINE=MyISAM; CREATE DATABASE seq"
        )
        yield ReplServer(server, tls_files)


def batch(server: MariaDBServer, k: int, *, big: bool = False) -> None:
    """One batch of changes: a multi-row transaction, an update, a delete, a MyISAM row (a standalone event
    group), and with ``big`` a 3 MiB transaction (hundreds of rows events, many socket reads)."""
    rows = ", ".join(f"({k * 1000 + i}, {k}, REPEAT('x', {i * 7}))" for i in range(40))
    sql = (
        f"INSERT INTO r.t VALUES {rows}; UPDATE r.t SET v = CONCAT(v, 'u') WHERE batch = {k} AND id % 3 = 0;"
        f" DELETE FROM r.t WHERE batch = {k} AND id % 5 = 0; INSERT INTO r.m VALUES ({k}, 'myisam {k}');"
    )
    if big:
        sql += (
            f" BEGIN; INSERT INTO r.t SELECT {k} * 1000 + 500 + seq, {k}, REPEAT('b', 8000) FROM seq.seq_1_to_400;"
            " COMMIT;"
        )
    server.execute(sql)


# -- what the server's files hold ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """One event of a server's file: file, start, end, type name, its bytes."""

    file: str
    start: int
    end: int
    type: str
    raw: bytes


def file_events(server: MariaDBServer, names: Iterable[str] | None = None) -> list[Ref]:
    """The top-level events of the server's binlogs (all, or ``names``), in binlog order, as the file reader sees
    them; the last file is read up to its last whole event."""
    out: list[Ref] = []
    files = server.binlog_files()
    wanted = set(names) if names is not None else None
    for path in files:
        if wanted is not None and path.name not in wanted:
            continue
        data = path.read_bytes()
        last = path == files[-1]
        events = read_events(path, follow=last, idle_timeout=0.0, poll_interval=0.01) if last else read_events(path)
        for ev in events:
            h = ev.header
            if h.in_payload is None:
                out.append(Ref(path.name, h.pos, h.end_pos, ev.type, data[h.pos : h.end_pos]))
    return out


def streamed(events: Iterable[StreamEvent]) -> list[Ref]:
    """The top-level in-file events of a stream as :class:`Ref` (raw bytes when the client kept them)."""
    return [
        Ref(se.file, se.start, se.end, se.event.type, se.raw or b"")
        for se in events
        if se.in_file and se.event.header.in_payload is None
    ]


def keys(refs: Iterable[Ref]) -> list[tuple[str, int, int, str]]:
    return [(r.file, r.start, r.end, r.type) for r in refs]


def until(events: Iterator[StreamEvent], done: Callable[[StreamEvent], bool], seen: list[StreamEvent],
          timeout: float = 60.0) -> StreamEvent:  # fmt: skip
    """Pull events into ``seen`` until one satisfies ``done`` (a following client sends heartbeats, so this never
    blocks for long); fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    for se in events:
        seen.append(se)
        if done(se):
            return se
        if time.monotonic() > deadline:
            break
    raise AssertionError(f"no such event within {timeout:g} s")


def idle(se: StreamEvent) -> bool:
    """The server has sent everything: a heartbeat."""
    return se.event.type == "HEARTBEAT_LOG_EVENT"
