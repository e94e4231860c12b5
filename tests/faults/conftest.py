"""Fixtures of the fault matrix, and its figures at the end of a run.

Fixtures
    ``case``          the running case (:class:`tests.faults._matrix.Case`): ``case.expect(ran, status, ...)``.
    ``mount``         :class:`Mounts`: ``mount.tmpfs(path, "8m", read_only=False)`` (a small disk to fill, or a
                      read-only one), ``mount.read_only_bind(source, path)``, ``mount.writable(path)``, until the
                      test ends; each skips, saying why, where mounting is not permitted (root in CI).
    ``fault_server``  a private MariaDB for the cases that kill, stop or starve it (the suite's ``mariadb_server``
                      stays untouched), with ``shop`` tables written before binlake reads them and one user per
                      missing privilege (:data:`USERS`); a case that kills it starts it again before it ends.

The figures (``python -m pytest -m faults`` prints them): how many cases ran, how many ended in each outcome, and the
longest case's time.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.faults._matrix import Case

from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools

PASSWORD = "Faults-pw-5"  # (only in a file: the commands read it with --password-file)
# a user per privilege it lacks; "all" has every privilege a live command asks for (MariaDB 10.11's names)
EVERY = ("SELECT", "RELOAD", "REPLICATION SLAVE", "BINLOG MONITOR")
USERS = {"all": EVERY, **{f"no_{p.split()[-1].lower()}": tuple(g for g in EVERY if g != p) for p in EVERY}}
ROWS = 3000  # shop.big: enough rows for a snapshot of several chunks (--chunk-rows 500)


@pytest.fixture
def case(request: pytest.FixtureRequest) -> Case:
    return Case(request.node)


class Mounts:
    """The ``mount`` fixture: tmpfs and bind mounts a test makes (unmounted when it ends); each skips, saying why,
    where mounting is not permitted (the tests run as root in CI)."""

    def __init__(self) -> None:
        self.mounted: list[Path] = []

    def _run(self, *args: str) -> None:
        done = subprocess.run(["mount", *args], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount here (tests run as root in CI): {done.stderr.decode().strip()}")

    def tmpfs(self, path: Path, size: str = "8m", *, read_only: bool = False) -> Path:
        """A tmpfs of ``size`` at ``path`` (a small disk to fill, or a read-only one)."""
        path.mkdir(parents=True, exist_ok=True)
        self._run("-t", "tmpfs", "-o", f"size={size}" + (",ro" if read_only else ""), "tmpfs", str(path))
        self.mounted.append(path)
        return path

    def read_only_bind(self, source: Path, path: Path) -> Path:
        """``source`` bind-mounted read-only at ``path``."""
        source.mkdir(parents=True, exist_ok=True)
        path.mkdir(parents=True, exist_ok=True)
        self._run("--bind", str(source), str(path))
        self.mounted.append(path)
        self._run("-o", "remount,bind,ro", str(path))
        return path

    def writable(self, path: Path) -> None:
        """Make the read-only mount at ``path`` writable."""
        bind = ",bind" if subprocess.run(["findmnt", "-n", "-o", "FSTYPE", str(path)], capture_output=True,
                                         text=True).stdout.strip() != "tmpfs" else ""  # fmt: skip
        self._run("-o", f"remount{bind},rw", str(path))

    def close(self) -> None:
        for path in reversed(self.mounted):
            subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.fixture
def mount() -> Iterator[Mounts]:
    mounts = Mounts()
    yield mounts
    mounts.close()


@pytest.fixture(scope="session")
def fault_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultServer]:
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    folder = tmp_path_factory.mktemp("fault-server")
    password = folder / "password"
    password.write_text(PASSWORD + "\n")
    with MariaDBServer() as server:
        for user, grants in USERS.items():
            server.create_user(user, PASSWORD, grants=grants)
        server.execute(
            "CREATE DATABASE shop; USE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(40)) CHARSET utf8mb4;"
            " INSERT INTO shop.t VALUES (1, 'a'), (2, 'Zoë');"
            " CREATE TABLE shop.big (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT);"
            f" INSERT INTO shop.big SELECT seq, CONCAT('row ', seq), seq * 7 FROM seq_1_to_{ROWS}"
        )
        yield FaultServer(server, password)


class FaultServer:
    """:data:`fault_server`: the server, the password file, and the connection options of a user."""

    def __init__(self, server: MariaDBServer, password: Path) -> None:
        self.server, self.password = server, password

    def options(self, user: str = "all", *, port: int | None = None, password: Path | None = None) -> list[str]:
        """``--host ... --server-id ...`` for ``user``: short heartbeats, timeouts and retries, so that every
        case of a lost or silent server ends within seconds."""
        return [
            "--host", "127.0.0.1", "--port", str(self.server.port if port is None else port), "--user", user,
            "--password-file", str(password or self.password), "--server-id", "4311", "--heartbeat", "1",
            "--timeout", "3", "--retries", "2",
        ]  # fmt: skip

    def ensure_running(self) -> None:
        """Start the server again where a case killed it (with its tables' statistics made again: after a crash
        InnoDB's say shop.big has a few dozen rows, and a snapshot would read it in one chunk)."""
        if not self.server.running:
            log = self.server.error_log.read_text(errors="replace").splitlines()[-15:]
            print("the fault server was down; the end of its log:", *log, sep="\n", file=sys.stderr)
            self.server.crash()  # (forgets a process that ended by itself)
            self.server.start()
            self.server.execute("ANALYZE NO_WRITE_TO_BINLOG TABLE shop.big")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The matrix's figures: cases, outcomes, the longest case."""
    seconds: dict[str, float] = {}
    outcomes: Counter[str] = Counter()
    ends: Counter[str] = Counter()
    for kind in ("passed", "failed", "skipped", "xfailed", "xpassed", "error"):
        for report in terminalreporter.stats.get(kind, []):
            nodeid = getattr(report, "nodeid", "")
            if not nodeid.startswith("tests/faults/"):
                continue
            seconds[nodeid] = seconds.get(nodeid, 0.0) + getattr(report, "duration", 0.0)
            if getattr(report, "when", "call") == "call" or kind == "skipped":
                ends[kind] += 1
                outcomes.update(v for k, v in getattr(report, "user_properties", ()) if k == "outcome")
    if not seconds:
        return
    longest = max(seconds, key=lambda n: seconds[n])
    terminalreporter.section("fault matrix")
    terminalreporter.line(f"{len(seconds)} cases: " + ", ".join(f"{n} {k}" for k, n in sorted(ends.items())))
    terminalreporter.line(f"{sum(outcomes.values())} outcomes checked:")
    for label, n in sorted(outcomes.items(), key=lambda x: (-x[1], x[0])):
        terminalreporter.line(f"  {n:4d}  {label}")
    terminalreporter.line(f"longest case: {seconds[longest]:.1f} s ({longest})")
