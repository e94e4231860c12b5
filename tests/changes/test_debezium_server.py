"""Debezium JSON against a server: records equal to the ones Debezium's documentation shows, every value read back
equal to what ``SELECT`` returns through PyMySQL, and ``binlake changes --host`` equal to the same on the server's
files.

The golden records come from the Debezium MySQL connector's documentation
(https://debezium.io/documentation/reference/stable/connectors/mysql.html, "Data change events": the
``customers`` table's create, update and delete events; "Data type mappings": ``DATETIME '2018-06-20 06:37:03'``
is ``1529476623000`` and the same ``TIMESTAMP`` in a zone 7 hours behind UTC is ``"2018-06-20T13:37:03Z"``, and
BIT(n) is ``n/8 + (n%8 == 0 ? 0 : 1)`` bytes little-endian)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest
from tests.changes._debezium import DEFAULTS, MODES, carried, conforms, decode, schema, type_name
from tests.changes.conftest import binlake_changes

from binlake.changes import ChangeStream, FileSource, RowsChange, TableInfo
from binlake.coltypes import ColumnType
from binlake.render.changes import debezium
from binlake.render.changes.debezium import DebeziumEncoder, DebeziumOptions, ValueModes
from binlake.testing.mariadb import MariaDBServer, WorkloadBinlogs

pytestmark = pytest.mark.server
T = ColumnType


def _written(server: MariaDBServer, sql: str) -> list[Path]:
    """Run ``sql`` in binlogs of its own; the files it wrote."""
    server.flush_logs()
    first = len(server.binlog_files())
    server.execute(sql)
    server.flush_logs()
    return server.binlog_files()[first - 1 : -1]


def _records(files: list[Path], *args: str) -> list[dict[str, Any]]:
    out = binlake_changes(*args, *map(str, files)).stdout.decode("utf-8")
    return [json.loads(line) for line in out.splitlines()]


def test_records_equal_the_debezium_documentation(mariadb_server: MariaDBServer) -> None:
    files = _written(
        mariadb_server,
        "DROP DATABASE IF EXISTS inventory; CREATE DATABASE inventory; USE inventory;"
        "CREATE TABLE customers (id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, first_name VARCHAR(255) NOT NULL,"
        " last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE KEY) AUTO_INCREMENT=1001;"
        "INSERT INTO customers (first_name, last_name, email) VALUES ('x', 'y', 'z'), ('x', 'y', 'z2'),"
        " ('x', 'y', 'z3');"
        "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org');"
        "UPDATE customers SET first_name='Anne Marie' WHERE id=1004;"
        "DELETE FROM customers WHERE id=1004;"
        "CREATE TABLE types (id INT PRIMARY KEY, dt DATETIME, ts TIMESTAMP NULL, b BIT(10), b1 BIT(1));"
        "SET time_zone = '-07:00';"
        "INSERT INTO types VALUES (1, '2018-06-20 06:37:03', '2018-06-20 06:37:03', b'1000000001', b'1');",
    )
    records = [r for r in _records(files, "--name", "mysql-server-1") if r["source"]["table"] == "customers"][3:]
    anne = {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
    marie = dict(anne, first_name="Anne Marie")
    assert [(r["op"], r["before"], r["after"]) for r in records] == [
        ("c", None, anne),
        ("u", anne, marie),
        ("d", marie, None),
    ]
    documented = ["version", "connector", "name", "ts_ms", "snapshot", "db", "table", "server_id", "gtid", "file"]
    documented += ["pos", "row", "thread", "query"]
    for r in records:
        keys = list(r["source"])
        assert [k for k in keys if k in documented] == documented  # the documented fields, in their order
        assert list(r) == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
        src = r["source"]
        assert (src["connector"], src["name"], src["db"], src["snapshot"], src["row"]) == (
            "mariadb", "mysql-server-1", "inventory", "false", 0,
        )  # fmt: skip
        assert src["file"] == files[0].name and isinstance(src["pos"], int) and src["server_id"] == 1
        assert r["transaction"]["id"] == src["gtid"] and r["transaction"]["total_order"] == 1
        assert r["ts_ms"] == src["ts_ms"] == src["ts_us"] // 1000  # binlake writes the change's own time
    assert records[0]["source"]["query"].startswith("INSERT INTO customers")
    (types,) = [r for r in _records(files) if r["source"]["table"] == "types"]
    assert types["after"] == {"id": 1, "dt": 1529476623000, "ts": "2018-06-20T13:37:03Z", "b": "AQI=", "b1": True}


def test_a_bigint_unsigned_key_is_what_stock_debezium_writes(mariadb_server: MariaDBServer) -> None:
    """Issue 21, finding 5: ``binlake changes`` writes a BIGINT UNSIGNED key 82 as ``82`` (the connector's default
    bigint.unsigned.handling.mode=long; 2^63 and above wrap to negative, as the connector's do), not ``"Ug=="``,
    and DECIMAL as the connector's default ``precise`` does; the output of before is one option away."""
    files = _written(
        mariadb_server,
        "DROP DATABASE IF EXISTS ukeys; CREATE DATABASE ukeys; USE ukeys;"
        "CREATE TABLE t (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL(10,2), b VARBINARY(4));"
        "INSERT INTO t VALUES (82, -1.23, 0xfbff), (9223372036854775808, 0, NULL),"
        " (18446744073709551615, 99999999.99, '');",
    )

    def after(*args: str) -> list[dict[str, Any]]:
        return [r["after"] for r in _records(files, *args) if r["source"]["db"] == "ukeys"]

    assert after() == [
        {"id": 82, "d": "hQ==", "b": "+/8="},
        {"id": -(2**63), "d": "AA==", "b": None},
        {"id": -1, "d": "AlQL4/8=", "b": ""},
    ]
    assert after("--debezium-option", "decimal.handling.mode=string,bigint.unsigned.handling.mode=precise") == [
        {"id": "Ug==", "d": "-1.23", "b": "+/8="},
        {"id": "AIAAAAAAAAAA", "d": "0.00", "b": None},
        {"id": "AP//////////", "d": "99999999.99", "b": ""},
    ]
    assert after(
        "--debezium-option", "decimal.handling.mode=double", "--debezium-option", "binary.handling.mode=hex"
    ) == [
        {"id": 82, "d": -1.23, "b": "fbff"},
        {"id": -(2**63), "d": 0.0, "b": None},
        {"id": -1, "d": 99999999.99, "b": ""},
    ]


# -- every value read back equals SELECT -------------------------------------------------------------------------


def _state(
    files: list[Path], db: str, modes: ValueModes = DEFAULTS
) -> dict[str, tuple[TableInfo, list[dict[str, Any]]]]:
    """The tables of ``db`` as the Debezium records of ``files`` leave them, their values read back to Python as a
    consumer of stock Debezium reads them (each of the documented JSON type of its column)."""
    tables: dict[str, tuple[TableInfo, list[dict[str, Any]]]] = {}
    encoder = DebeziumEncoder(DebeziumOptions(modes=modes))
    for trx in ChangeStream(FileSource([str(f) for f in files])):
        python = encoder.transaction(trx)
        assert encoder.encode(trx) == "".join(python).encode("utf-8", "surrogateescape")  # the compiled writer's
        lines = iter(python)
        for item in trx.items:
            if not isinstance(item, RowsChange):
                continue
            info = item.table
            records = [json.loads(next(lines)) for _ in item.rows()]
            if info.schema != db:
                continue
            rows = tables.setdefault(info.name, (info, []))[1]
            key = [info.names[i] for i in info.key] or list(info.names)
            for rec in records:
                before, after = (_image(info, rec["before"], modes), _image(info, rec["after"], modes))
                if before is not None:  # the row the change names by its key (or by all its columns)
                    at = next(k for k, r in enumerate(rows) if all(repr(r[n]) == repr(before[n]) for n in key))
                    old = rows.pop(at)
                    if after is not None:
                        rows.insert(at, {**old, **after})
                elif after is not None:
                    rows.append(after)
    if debezium.JsonPlan is not None:  # the compiled writer wrote some (and wrote them as the Python writer)
        assert encoder.plans.compiled() > 0
    return tables


def _image(info: TableInfo, image: dict[str, Any] | None, modes: ValueModes) -> dict[str, Any] | None:
    if image is None:
        return None
    out = {}
    for i, (c, n) in enumerate(zip(info.columns, info.names, strict=True)):
        if n in image:
            literal, _ = schema(c, type_name(info, i), modes)
            assert image[n] is None or conforms(literal, image[n]), (info.name, n, literal, image[n])
            out[n] = decode(c, type_name(info, i), image[n], modes)
    return out


@pytest.mark.parametrize("modes", MODES, ids=lambda m: m.text())
def test_every_value_reads_back_as_select_returns_it(workload_binlogs: WorkloadBinlogs, modes: ValueModes) -> None:
    """In each mode set, every table of the all-column-types workload (BIGINT UNSIGNED 2^63 and 2^64-1,
    DECIMAL(65,30) and negative decimals, TIME negative and past 24 h, DATETIME(6), TIMESTAMP(3), zero dates, YEAR,
    BIT(n), BINARY/VARBINARY/BLOB, JSON, ENUM/SET, GEOMETRY, ...), rebuilt from the Debezium records of the
    workloads' binlogs read as the connector's documentation says, equals SELECT (PyMySQL, time zone UTC), as far
    as the mode keeps it (``carried``: DECIMAL as a double, DATETIME at milliseconds, TIME as Connect's Time): zero
    dates are null (the connector's rule), YEAR 0000 reads 1900 (Debezium's binlog reader; read back here), and
    FLOAT compares at the 6 digits the server sends it with."""
    server = workload_binlogs.server
    state = _state(workload_binlogs.files, "corpus_types", modes)
    conn = pymysql.connect(
        unix_socket=str(server.socket_path), user="root", charset="utf8mb4", init_command="SET time_zone='+00:00'"
    )
    compared = 0
    with conn, conn.cursor() as cur:
        for table, (info, rows) in sorted(state.items()):
            if table.startswith("t_temporal_old"):
                continue  # MariaDB 5.3 temporal layouts: checked against the server by tests/values
            names = ", ".join("`" + n.replace("`", "``") + "`" for n in info.names)
            cur.execute(f"SELECT {names} FROM `corpus_types`.`{table}`")
            selected = cur.fetchall()
            got = sorted(tuple(repr(_norm(info, i, r[n])) for i, n in enumerate(info.names)) for r in rows)
            want = sorted(
                tuple(repr(carried(info.columns[i], _norm_select(info, i, v), modes)) for i, v in enumerate(row))
                for row in selected
            )
            assert got == want, table
            compared += len(selected) * len(info.names)
    assert compared > 1400


def _norm(info: TableInfo, i: int, v: Any) -> Any:
    col, name = info.columns[i], type_name(info, i)
    if col.real_type_code == T.GEOMETRY and v is not None:
        return (v.srid, v.wkb)
    if col.real_type_code == T.FLOAT and v is not None:
        return float(f"{v:.6g}")
    if name == "uuid" and isinstance(v, bytes):
        import uuid

        return str(uuid.UUID(bytes=v))
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v
    if isinstance(v, bytes) and col.charset is not None and not col.is_binary:
        return v.decode("utf-8", "replace")
    return v


def _norm_select(info: TableInfo, i: int, v: Any) -> Any:
    col, name = info.columns[i], type_name(info, i)
    code = col.real_type_code
    if v is None:
        return None
    if isinstance(v, str) and code in (T.DATE, T.NEWDATE, T.DATETIME, T.DATETIME2, T.TIMESTAMP, T.TIMESTAMP2):
        if col.nullable:  # a zero or partial date: null in Debezium's JSON, or the epoch in a NOT NULL column
            return None
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC if code in (T.TIMESTAMP, T.TIMESTAMP2) else None)
        return epoch.date() if code in (T.DATE, T.NEWDATE) else epoch
    if code in (T.TIMESTAMP, T.TIMESTAMP2):
        return v.replace(tzinfo=dt.UTC)
    if code == T.BIT:
        return int.from_bytes(v, "big")
    if code == T.FLOAT:  # the server sends a FLOAT with 6 digits (FLT_DIG): compare at that
        return float(f"{v:.6g}")
    if code == T.SET:
        return frozenset(v.split(",")) if v else frozenset()
    if code == T.GEOMETRY:
        return (int.from_bytes(v[:4], "little"), v[4:])
    if name in ("inet6", "inet4"):
        return ipaddress.ip_address(v).packed
    if code == T.STRING and col.is_binary and col.length and isinstance(v, bytes):
        return v.ljust(col.length, b"\0")
    if isinstance(v, Decimal):
        return v
    return v


def test_host_gives_the_records_of_the_files(workload_binlogs: WorkloadBinlogs) -> None:
    """``binlake changes --host`` (the replication client, from the oldest binlog to the server's end) writes the
    same records as ``binlake changes`` on the server's files."""
    server = workload_binlogs.server
    server.create_user("changes_repl", "pw-changes-9", grants=("REPLICATION SLAVE", "BINLOG MONITOR"))
    server.flush_logs()
    files = server.binlog_files()[:-1]
    host = subprocess.run(
        [sys.executable, "-m", "binlake", "changes", "--host", "127.0.0.1", "--port", str(server.port), "--user",
         "changes_repl", "--server-id", "4711", "--ssl-mode", "DISABLED"],
        capture_output=True, env={"BINLAKE_PASSWORD": "pw-changes-9", "PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert host.returncode == 0, host.stderr.decode()[-2000:]
    from_files = binlake_changes(*map(str, files)).stdout.decode("utf-8").splitlines()
    names = {f.name for f in files}
    from_host = [
        line for line in host.stdout.decode("utf-8").splitlines() if json.loads(line)["source"]["file"] in names
    ]
    assert len(from_host) > 10_000
    assert from_host == from_files
    sql_host = subprocess.run(
        [sys.executable, "-m", "binlake", "changes", "--format", "sql", "--host", "127.0.0.1", "--port",
         str(server.port), "--user", "changes_repl", "--server-id", "4712", "--ssl-mode", "DISABLED",
         "--from", files[0].name],
        capture_output=True, env={"BINLAKE_PASSWORD": "pw-changes-9", "PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert sql_host.returncode == 0, sql_host.stderr.decode()[-2000:]
    assert sql_host.stdout.startswith(binlake_changes("--format", "sql", *map(str, files)).stdout[:-200])
