"""Shared fixtures of the binlake test suite, and the CI rule that some skips are failures.

Fixtures
    ``repo_root``         the checkout (the directory holding ``pyproject.toml``).
    ``corpus_dir``        the shared binlog corpus: ``$BINLAKE_CORPUS``, else ``<repo>/../shared/corpus``; skips
                          when absent. Tests read it in place, never copy it into the repo.
    ``mariadb_server``    one private MariaDB server for the session (:class:`binlake.testing.mariadb.MariaDBServer`);
                          skips when MariaDB is not installed.
    ``s3_server``         one private S3-compatible server for the session (moto in server mode on 127.0.0.1,
                          :class:`binlake.testing.objectstore.S3Server`); skips when moto is not installed.  It
                          sets no environment: a test or fixture puts ``s3_server.env()`` in place for itself.
    ``spark``             the one SparkSession of the suite: local[2], no UI, 2 shuffle partitions, UTC
                          (:func:`binlake.spark.session.build_session`); skips when pyspark or deltalake is missing.
                          An ingest run in this process (``binlake.cli.main(["ingest", ...])``) uses it too.
    ``read_only_dir``     a folder that cannot be written, and the command prefix that runs a program where that
                          is so (a read-only tmpfs mounted over it in a private mount namespace); skips where
                          neither that nor a folder's mode can make one.
    ``workload_binlogs``  runs ``tests/workloads/*.sql`` once on that server and returns a
                          :class:`binlake.testing.mariadb.WorkloadBinlogs` (the server, the binlogs written, and
                          which workload wrote which), so tests can decode the files and ``SELECT`` the tables'
                          final state. Tests that write through ``mariadb_server`` too must not PURGE logs, must
                          restore any GLOBAL they change, and must not expect to own a binlog unless they
                          ``flush_logs()`` first.

CI strictness: with ``BINLAKE_STRICT_SKIPS=1`` (set by ``.ci/run``) a skip whose reason mentions the corpus,
MariaDB, Spark, moto or mkdocs fails instead, so CI cannot go green by silently not running the real-data tests (or
not building the documentation). A test skipped that way is reported failed; a whole module skipped at collection
makes the run exit 1 and is listed in the summary.

Example::

    def test_compressed_file(workload_binlogs):
        (path,) = workload_binlogs.by_workload["compressed"]
        rows = workload_binlogs.server.query("SELECT id, a FROM corpus_dml.comp ORDER BY id")
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.testing.mariadb import (
    INSTALL_HINT,
    MariaDBServer,
    WorkloadBinlogs,
    missing_tools,
    run_workloads,
)
from binlake.testing.objectstore import INSTALL_HINT as S3_INSTALL_HINT
from binlake.testing.objectstore import S3Server
from binlake.testing.objectstore import available as objectstore_available

pytest_plugins = ["pytester"]

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # Spark, in this process and in the commands tests start

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS_ENV = "BINLAKE_CORPUS"
CORPUS_MISSING = "../shared/corpus not found: corpus tests need the shared binlog corpus beside the checkout"
STRICT_ENV = "BINLAKE_STRICT_SKIPS"
# Skip reasons CI must not accept. The Spark fixture (another module) can add its own words here, e.g. "spark".
STRICT_SKIP_RE = re.compile(r"corpus|mariadb|pyspark|deltalake|spark|moto|mkdocs", re.IGNORECASE)
_STRICT_COLLECT_SKIPS = pytest.StashKey[list[str]]()


# -- fixtures ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout's root directory."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus directory (README.md, mariadb/, mysql/, ...); skips when it is not there."""
    override = os.environ.get(CORPUS_ENV)
    if override:
        path = Path(override)
        if not path.is_dir():
            pytest.skip(f"{CORPUS_ENV}={override} is not a directory: corpus tests need the shared binlog corpus")
        return path
    path = REPO_ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        pytest.skip(CORPUS_MISSING)
    return path


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDBServer]:
    """One private MariaDB server (ROW, FULL image, FULL metadata, CRC32) for the whole session."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    with MariaDBServer() as server:
        yield server


@pytest.fixture(scope="session")
def workload_binlogs(mariadb_server: MariaDBServer, repo_root: Path) -> WorkloadBinlogs:
    """The binlogs of ``tests/workloads/*.sql`` (run once per session, a few seconds) and their server."""
    workloads = sorted((repo_root / "tests" / "workloads").glob("*.sql"))
    return run_workloads(mariadb_server, workloads)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A moto S3 server on 127.0.0.1 for the session (its buckets are per test: ``s3_server.bucket()``)."""
    if not objectstore_available():
        pytest.skip(f"moto not installed: {S3_INSTALL_HINT}")
    with S3Server() as server:
        yield server


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """A folder that cannot be written and the command prefix under which that holds: ``unshare -rm`` (a user and
    mount namespace of the command's own: no root needed, nothing seen outside it) mounting a read-only tmpfs over
    the folder, so that root cannot write it either; where user namespaces are off, a folder of mode 0555 for a
    test that does not run as root (no prefix)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    prefix = ["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"', str(folder)]
    if shutil.which("unshare") and subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
        yield folder, prefix
        return
    if os.geteuid() == 0:
        pytest.skip("no read-only folder here: root writes any folder, and unshare -rm (user namespaces) is off")
    folder.chmod(0o555)
    try:
        yield folder, []
    finally:
        folder.chmod(0o755)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession with the ``binlake`` data source registered (skips when pyspark is missing)."""
    pytest.importorskip("pyspark", reason="pyspark not installed: pip install -e '.[spark]'")
    pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")
    from binlake.spark.session import build_session

    session = build_session("local[2]", shuffle_partitions=2, app_name="binlake-tests")
    yield session
    session.stop()


# -- BINLAKE_STRICT_SKIPS ---------------------------------------------------------------------------------------


def _strict_reason(report: pytest.TestReport | pytest.CollectReport) -> str | None:
    """The skip reason when strict mode is on and this report is a skip CI must not accept, else None."""
    if os.environ.get(STRICT_ENV) != "1" or not report.skipped or hasattr(report, "wasxfail"):
        return None
    longrepr = report.longrepr
    # a skip's longrepr is (path, lineno, "Skipped: reason")
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
    return reason if STRICT_SKIP_RE.search(reason) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    reason = _strict_reason(report)
    if reason is not None:
        report.outcome = "failed"
        report.longrepr = f"{STRICT_ENV}=1: this skip is a failure in CI: {reason}"
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    reason = _strict_reason(report)
    if reason is not None:
        # Failing the collect report would abort the whole run; record it and fail at the end instead.
        collector.config.stash.setdefault(_STRICT_COLLECT_SKIPS, []).append(f"{report.nodeid}: {reason}")
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.stash.get(_STRICT_COLLECT_SKIPS, []) and exitstatus in (
        pytest.ExitCode.OK,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = terminalreporter.config.stash.get(_STRICT_COLLECT_SKIPS, [])
    if skipped:
        terminalreporter.section(f"{STRICT_ENV}=1: modules skipped at collection (failure)", red=True)
        for line in skipped:
            terminalreporter.line(line)
