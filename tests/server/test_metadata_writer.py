"""Issue 11's tables on binlogs a private MariaDB writes: GEOMETRY columns count in the charset entries and YEAR in
SIGNEDNESS (MariaDB's ``Table_map_log_event::init_charset_field``/``init_signedness_field`` ask each field's
``binlog_type_info()``), so every charset and sign lands on its own column, in the values as ``SELECT`` gives them.
``binlake dump`` still prints ``mariadb-binlog``'s text, whose printer skips YEAR.  The lake side of the same
tables is in ``tests/spark/test_oracle_lake.py``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlake.events.rows import RowsEvent
from binlake.reader import read_events
from binlake.render.dump import DumpOptions, dump
from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools
from binlake.values.spatial import Geometry

from ._oracle import FORWARD, SETUP, YR_VALUES

pytestmark = pytest.mark.server

_GEOMETRIES = {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon"}


@pytest.fixture(scope="module")
def binlogs() -> Iterator[tuple[MariaDBServer, dict[str, Path]]]:
    """One binlog per binlog_row_metadata setting, the tables created and written in database ``m_<setting>``."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    with MariaDBServer() as server:
        files = {}
        for meta in ("FULL", "MINIMAL", "NO_LOG"):
            server.execute(f"SET GLOBAL binlog_row_metadata = {meta}; FLUSH BINARY LOGS")
            files[meta] = server.current_binlog()
            server.execute(f"CREATE DATABASE m_{meta.lower()}; USE m_{meta.lower()}; {SETUP}")
        server.execute("SET GLOBAL binlog_row_metadata = FULL; FLUSH BINARY LOGS")
        yield server, files


def _event(path: Path, table: str) -> RowsEvent:
    (ev,) = [e for e in read_events(path) if isinstance(e, RowsEvent) and e.table_map and e.table_map.table == table]
    return ev


def _columns(server: MariaDBServer, db: str, table: str) -> list[tuple[str, str, int | None]]:
    """(name, data type, collation id) per column, as the server has them."""
    rows = server.query(
        "SELECT c.COLUMN_NAME, c.DATA_TYPE, co.ID FROM information_schema.COLUMNS c LEFT JOIN "
        "information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME "
        f"WHERE c.TABLE_SCHEMA = '{db}' AND c.TABLE_NAME = '{table}' ORDER BY c.ORDINAL_POSITION"
    )
    return [(str(n), str(t), None if cid is None else int(cid)) for n, t, cid in rows]


@pytest.mark.parametrize("meta", ["FULL", "MINIMAL"])
@pytest.mark.parametrize("table", ["geo", "geo2"])
def test_every_charset_lands_on_its_column(
    binlogs: tuple[MariaDBServer, dict[str, Path]], meta: str, table: str
) -> None:
    server, files = binlogs
    db = f"m_{meta.lower()}"
    ev = _event(files[meta], table)
    assert ev.table_map is not None
    columns = _columns(server, db, table)
    want = [
        63 if t in _GEOMETRIES else None if t == "int" or (t == "enum" and meta != "FULL") else cid
        for _, t, cid in columns
    ]  # GEOMETRY: binary (information_schema shows none); ENUM/SET charsets are FULL metadata only
    assert [c.charset for c in ev.table_map.columns] == want
    ((_, after),) = ev.rows()
    assert after is not None
    select = ", ".join(f"HEX(`{n}`)" if t in _GEOMETRIES else f"`{n}`" for n, t, _ in columns)
    (row,) = server.query(f"SELECT {select} FROM {db}.{table}")
    for (name, _, _), text, got in zip(columns, row, after, strict=True):
        if isinstance(got, Geometry):
            assert got.srid.to_bytes(4, "little") + got.wkb == bytes.fromhex(text or ""), name
        elif isinstance(got, int) and name != "id":  # ENUM without member names (MINIMAL): the index
            assert got == 2, name
        else:
            assert str(got) == text, name


@pytest.mark.parametrize("meta", ["FULL", "MINIMAL"])
def test_year_takes_its_own_sign_bit(binlogs: tuple[MariaDBServer, dict[str, Path]], meta: str) -> None:
    server, files = binlogs
    ev = _event(files[meta], "yr")
    ((before, after),) = ev.rows()
    (row,) = server.query(f"SELECT id, y, u, s, ub, t FROM m_{meta.lower()}.yr")
    assert before is None and after == tuple(YR_VALUES.values()) == tuple(int(v or "") for v in row)
    if meta == "FULL":
        assert ev.row_dicts() == [(None, YR_VALUES)]


def test_no_log_maps_read_every_integer_signed(binlogs: tuple[MariaDBServer, dict[str, Path]]) -> None:
    """NO_LOG logs no signedness: the Python API reads the integers signed, as mysqlbinlog does (README, Value
    types); the lake takes the signs from the DDL (tests/spark/test_oracle_lake.py)."""
    _, files = binlogs
    ((_, after),) = _event(files["NO_LOG"], "yr").rows()
    assert after == (1, 2024, -1, -1, -1, -1)


def test_dump_prints_what_mariadb_binlog_prints(binlogs: tuple[MariaDBServer, dict[str, Path]]) -> None:
    """mariadb-binlog's printer gives YEAR no sign bit (``is_numeric_type`` in sql/log_event_client.cc), so its
    ``# Columns`` line moves each UNSIGNED after a YEAR one column up; binlake dump prints that same text."""
    server, files = binlogs
    texts = {}
    for meta, path in files.items():
        out = io.BytesIO()
        assert dump([str(path)], DumpOptions(table_metadata=True), out) == 0
        rc, ref, err = server.mariadb_binlog(FORWARD, path)
        assert rc == 0, err
        assert out.getvalue() == ref, meta
        texts[meta] = out.getvalue()
    yr_columns = (
        b"# Columns(`id` INT NOT NULL,\n#         `y` YEAR,\n#         `u` INT UNSIGNED,\n"
        b"#         `s` INT UNSIGNED,\n#         `ub` BIGINT,\n#         `t` TINYINT UNSIGNED)\n"
    )
    assert yr_columns in texts["FULL"]
