"""Every ``corpus_types`` table with a primary key: the lake's current state equals the MariaDB server's rows.

The server side is selected with explicit conversions per column type (``HEX()`` of binary, BIT and GEOMETRY
columns, ``HEX(CONVERT(... USING utf8mb4))`` of text, ``CAST(... AS CHAR)`` of temporal values in UTC), so no
client text has to be parsed; the lake's typed values are converted to the same text. Rows are matched by primary
key and every differing cell is reported as (table, column, key, expected, got).
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from tests.spark.test_spark import _delta, _lake_tables, _sql_str

pytestmark = pytest.mark.spark

_DB = "corpus_types"
_INTS = {"tinyint", "smallint", "mediumint", "int", "bigint", "year"}
_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json"}
_BINARIES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_GEOMETRIES = {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon"}
_GEOMETRIES |= {"geometrycollection"}
_TEMPORALS = {"date", "datetime", "timestamp", "time"}
_NET = {"inet4": 4, "inet6": 16, "uuid": 16}  # MariaDB type plugins: fixed-size binary in the record
# a DATE/DATETIME/TIMESTAMP with a zero year, month or day ('0000-00-00', '2024-00-15') is NULL in the lake by
# design (binlake.ingest.arrow: no Arrow date holds it); only those cells may be NULL in the lake and not on the server
_ZERO_PART = re.compile(r"^(0000|\d{4}-00|\d{4}-\d\d-00)")


def _server_expr(col: str, data_type: str) -> str:
    """The SELECT expression that gives an unambiguous text of column ``col`` of type ``data_type``."""
    q = f"`{col.replace('`', '``')}`"
    if data_type in _INTS:
        return f"{q} + 0"  # no ZEROFILL padding
    if data_type == "float":
        return f"CAST({q} AS DOUBLE)"  # the stored single, widened exactly; the text of FLOAT rounds it
    if data_type in _TEXTS:
        return f"HEX(CONVERT({q} USING utf8mb4))"
    if data_type in _BINARIES or data_type in _GEOMETRIES or data_type == "bit":
        return f"HEX({q})"
    if data_type in _NET:
        return f"HEX(CAST({q} AS BINARY({_NET[data_type]})))"  # the binary form, as the binlog holds it
    if data_type in _TEMPORALS:
        return f"CAST({q} AS CHAR)"
    return q  # decimal, double: exact text


def _server_value(text: str | None, data_type: str) -> Any:
    if text is None:
        return None
    if data_type in _INTS:
        return int(text)
    if data_type == "decimal":
        return Decimal(text)
    if data_type == "float":
        return struct.unpack("<f", struct.pack("<f", float(text)))[0]
    if data_type == "double":
        return float(text)
    if data_type == "set":
        members = bytes.fromhex(text).decode("utf-8")
        return members.split(",") if members else []  # in definition order, as the server lists them
    if data_type in _TEXTS:
        return bytes.fromhex(text).decode("utf-8")
    if data_type in _TEMPORALS and data_type != "time" and _ZERO_PART.match(text):
        return "zero-date"
    if data_type in _TEMPORALS:
        return _no_trailing_fraction_zeros(text)
    return text


def _lake_value(v: Any, data_type: str) -> Any:
    """The lake's typed value as the server side's text or number."""
    if v is None:
        return None
    if data_type in _GEOMETRIES:  # MariaDB's record: 4-byte little-endian SRID, then WKB
        return (v["srid"].to_bytes(4, "little") + v["wkb"]).hex().upper()
    if data_type == "set":
        return list(v)  # the lake lists the members in definition order too
    if data_type == "bit":
        return f"{int(v):X}"  # BIT(64) is a decimal(20,0) in the lake
    if isinstance(v, bytes):
        return v.hex().upper() if data_type not in _TEXTS else v.decode("utf-8")
    if data_type == "float":
        return struct.unpack("<f", struct.pack("<f", v))[0]
    if data_type == "double":
        return float(v)
    if data_type == "decimal":
        return Decimal(v)
    if isinstance(v, dt.datetime):
        return _no_trailing_fraction_zeros(v.replace(tzinfo=None).isoformat(sep=" "))
    if isinstance(v, dt.date):
        return v.isoformat()
    if data_type == "time":
        return _no_trailing_fraction_zeros(v)
    return v


def _no_trailing_fraction_zeros(text: str) -> str:
    """'12:00:00.500' -> '12:00:00.5', '12:00:00.000' -> '12:00:00': the server prints the column's fsp digits,
    Python's isoformat six or none."""
    return re.sub(r"\.?0*$", "", text) if "." in text else text


def _same(want: Any, got: Any, data_type: str) -> bool:
    if want == "zero-date":
        return got is None
    return bool(want == got)


def test_every_corpus_types_table_with_a_key_equals_the_server(
    spark: Any, workload_binlogs: Any, tmp_path: Path
) -> None:
    """Every workload, including the two whose table maps lack FULL metadata (09 MINIMAL: no names, no key; 10
    NO_LOG: not even signedness, charsets or ENUM/SET members): their rows land in the named, typed, keyed
    columns of the table (binlake.columns), so the current state still equals the server.  Ingested in two
    runs, the second from the MINIMAL workload's file on, so those maps are named from the lake's history."""
    from binlake.ingest.run import ingest
    from binlake.spark.runner import SparkRunner

    server = workload_binlogs.server
    lake = tmp_path / "lake"
    files = [str(p) for p in workload_binlogs.files]
    first_minimal = files.index(str(workload_binlogs.by_workload["meta_minimal"][0]))
    ingest(SparkRunner(spark), files[:first_minimal], str(lake))
    ingest(SparkRunner(spark), files, str(lake))
    keyed = {
        r[0]: r[1].split(",")
        for r in server.query(
            "SELECT table_name, GROUP_CONCAT(column_name ORDER BY ordinal_position) FROM "
            f"information_schema.key_column_usage WHERE table_schema = {_sql_str(_DB)} AND "
            "constraint_name = 'PRIMARY' GROUP BY table_name"
        )
        if r[0] is not None and r[1] is not None
    }
    lake_tables = {table: d for db, table, d in _lake_tables(lake) if db == _DB and (d / "current").is_dir()}
    assert len(keyed) >= 20 and set(keyed) <= set(lake_tables), sorted(set(keyed) - set(lake_tables))
    wrong: list[tuple[str, str, tuple[Any, ...], Any, Any]] = []
    cells = 0
    for table, key in sorted(keyed.items()):
        types = {
            str(c): str(t)
            for c, t in server.query(
                "SELECT column_name, data_type FROM information_schema.columns WHERE "
                f"table_schema = {_sql_str(_DB)} AND table_name = {_sql_str(table)}"
            )
        }
        cur = _delta(lake_tables[table] / "current")
        cols = [c for c in cur.column_names if not c.startswith("_")]
        assert set(cols) == set(types), (table, sorted(set(cols) ^ set(types)))
        sel = ", ".join(_server_expr(c, types[c]) for c in cols)
        qt = table.replace("`", "``")
        rows = server.query(f"SET time_zone = '+00:00'; SELECT {sel} FROM `{_DB}`.`{qt}`")
        want = {tuple(_server_value(r[cols.index(k)], types[k]) for k in key): r for r in rows}
        got = {tuple(_lake_value(r[k], types[k]) for k in key): r for r in cur.to_pylist()}
        assert sorted(got, key=repr) == sorted(want, key=repr), table
        for k, srow in want.items():
            for c, text in zip(cols, srow, strict=True):
                w, g = _server_value(text, types[c]), _lake_value(got[k][c], types[c])
                cells += 1
                if not _same(w, g, types[c]):
                    wrong.append((table, c, k, w, g))
    assert not wrong, "\n".join(map(repr, wrong))[:8000]
    assert cells > 500
