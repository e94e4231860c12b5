"""Servers and helpers of the change-output tests: a fresh MariaDB to replay SQL into, the ``mariadb`` client fed
binlake's SQL, ``binlake changes`` run as a command, and table comparisons (``CHECKSUM TABLE`` and ``SELECT``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, find_tool, missing_tools

SYSTEM_DBS = ("mysql", "information_schema", "performance_schema", "sys")


def need_mariadb() -> None:
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")


@pytest.fixture(scope="session")
def target_server() -> Iterator[MariaDBServer]:
    """A second private MariaDB, the target binlake's SQL is replayed into (tests empty it first: :func:`reset`)."""
    need_mariadb()
    with MariaDBServer() as server:
        yield server


def reset(server: MariaDBServer) -> None:
    """Drop every database but the system ones."""
    for (db,) in server.query("SELECT schema_name FROM information_schema.schemata"):
        if db not in SYSTEM_DBS:
            server.execute(f"DROP DATABASE `{str(db).replace('`', '``')}`")


def binlake_changes(*args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """``binlake changes ARGS`` in a child process (stdout bytes)."""
    proc = subprocess.run([sys.executable, "-m", "binlake", "changes", *args], capture_output=True, check=False)
    if check:
        assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    return proc


def apply_sql(server: MariaDBServer, sql: bytes) -> None:
    """Feed ``sql`` to the ``mariadb`` client, which stops at the first error (the test fails with it)."""
    cmd = [
        find_tool("mariadb") or "mariadb",
        "--no-defaults",
        "--protocol=socket",
        f"--socket={server.socket_path}",
        "--user=root",
        "--default-character-set=utf8mb4",
        "--local-infile=1",
        "--binary-mode",
    ]
    proc = subprocess.run(cmd, input=sql, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _s(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def tables(server: MariaDBServer, dbs: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """Every base table (system-versioned ones included) of the user databases, or of ``dbs``."""
    rows = server.query(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_type IN ('BASE TABLE', 'SYSTEM VERSIONED') AND table_schema NOT IN "
        f"({', '.join(_s(d) for d in SYSTEM_DBS)}) ORDER BY 1, 2"
    )
    return [(str(d), str(t)) for d, t in rows if dbs is None or d in dbs]


def snapshot(
    server: MariaDBServer,
    names: Sequence[tuple[str, str]],
    skip: dict[tuple[str, str], set[str]] | None = None,
) -> dict[tuple[str, str], tuple[object, list[tuple[str | None, ...]]]]:
    """Per table its ``CHECKSUM TABLE`` and its rows (every column, invisible ones too, in hex, sorted); ``skip``:
    columns left out of a table's comparison (an empty set: no column, but no checksum either), whose checksum is
    then not compared (``None``)."""
    out = {}
    for db, table in names:
        left_out = (skip or {}).get((db, table))
        cols = [
            str(c)
            for (c,) in server.query(
                f"SELECT column_name FROM information_schema.columns WHERE table_schema={_s(db)} "
                f"AND table_name={_s(table)} ORDER BY ordinal_position"
            )
            if left_out is None or c not in left_out
        ]
        qualified = f"{_q(db)}.{_q(table)}"
        select = ", ".join(f"HEX({_q(c)})" for c in cols)
        rows = sorted(server.query(f"SELECT {select} FROM {qualified}"), key=lambda r: tuple(map(str, r)))
        checksum = None if left_out is not None else server.query(f"CHECKSUM TABLE {qualified}")[0][1]
        out[(db, table)] = (checksum, rows)
    return out


def run_sql_file(server: MariaDBServer, path: Path) -> None:
    server.execute(path.read_text("utf-8").replace("${BASE_DIR}", os.fspath(server.base_dir)))
