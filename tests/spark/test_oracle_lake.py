"""The server is the oracle, in the lake: random tables of every MariaDB column type (``tests/server/_oracle.py``)
written under every binlog_row_metadata and binlog_row_image setting, ingested in one batch, and each table's
current state compared cell by cell with what ``SELECT`` returns at the end.

``BINLAKE_ORACLE_LAKE_EXAMPLES`` sets the number of tables (default 40: one ``binlake ingest`` of them all).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from tests.server import _oracle
from tests.spark.test_spark import _delta

from binlake.lake.names import table_dir
from binlake.spark.runner import SparkRunner

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("BINLAKE_ORACLE_LAKE_EXAMPLES", "40"))
BINARIES = (
    "CREATE TABLE bins (id INT PRIMARY KEY, b BINARY(4), v VARBINARY(4), i INET6, u UUID, c CHAR(3) CHARACTER SET "
    "binary); INSERT INTO bins VALUES (1, X'0100', X'0100', '::', '00000000-0000-0000-0000-000000000000', '')"
)
BINARIES_ROW = {"id": 1, "b": b"\1\0\0\0", "v": b"\1\0", "i": bytes(16), "u": bytes(16), "c": bytes(3)}


@pytest.fixture(scope="module")
def oracle() -> Iterator[_oracle.Oracle]:
    with _oracle.private_oracle() as o:
        yield o


def test_lake_current_state_equals_select(spark: Any, oracle: _oracle.Oracle, tmp_path: Path) -> None:
    from binlake.ingest.run import ingest

    runs: list[_oracle.Run] = []
    names = (f"lake{i:05d}" for i in itertools.count(1))

    tally = _oracle.Tally()

    @settings(_oracle.SETTINGS, max_examples=EXAMPLES)
    @given(data=_oracle.st.data())
    def write(data: _oracle.st.DataObject) -> None:
        run = oracle.run(data.draw(_oracle.tables(next(names))))
        _oracle.check_dump(oracle.server, run.binlog, tally)
        runs.append(run)

    write()
    lake = tmp_path / "lake"
    ingest(SparkRunner(spark), [str(r.binlog) for r in runs], str(lake))
    differences: list[_oracle.Difference] = []
    for run in runs:
        tally.add_table(run.table)
        current = lake / table_dir(_oracle.DATABASE, run.table.name) / "current"
        rows = _delta(current).to_pylist() if current.is_dir() else []
        differences += _oracle.lake_differences(run, rows, tally)
    print("\nlake oracle:", _oracle.summary(tally, differences))
    assert not differences, "\n".join(map(str, differences[:40]))
    assert tally.values > 0


def test_issue_tables_land_with_every_sign_and_charset(spark: Any, oracle: _oracle.Oracle, tmp_path: Path) -> None:
    """Issue 11's ``geo`` and ``yr`` tables under FULL, MINIMAL and NO_LOG metadata: ``binlake ingest`` lands each
    in its change table and current state with every value as ``SELECT`` gives it (MINIMAL and NO_LOG maps are
    named, signed, given their charsets and ENUM members from the DDL: issue 21), and NO_LOG binary columns
    padded as ``SELECT`` shows them."""
    from binlake.ingest.run import ingest

    server = oracle.server
    files = []
    for meta in ("FULL", "MINIMAL", "NO_LOG"):
        server.execute(f"SET GLOBAL binlog_row_metadata = {meta}; FLUSH BINARY LOGS")
        files.append(str(server.current_binlog()))
        server.execute(f"CREATE DATABASE issue_{meta.lower()}; USE issue_{meta.lower()}; {_oracle.SETUP}; {BINARIES}")
    server.execute("SET GLOBAL binlog_row_metadata = FULL; FLUSH BINARY LOGS")
    lake = tmp_path / "lake"
    ingest(SparkRunner(spark), files, str(lake))
    for meta in ("FULL", "MINIMAL", "NO_LOG"):
        db = f"issue_{meta.lower()}"
        for view in ("current", "changes"):
            (row,) = _delta(lake / table_dir(db, "yr") / view).to_pylist()
            assert {
                k: (int(v) if v is not None else v) for k, v in row.items() if k in _oracle.YR_VALUES
            } == _oracle.YR_VALUES
            (geo,) = _delta(lake / table_dir(db, "geo") / view).to_pylist()
            text = {"a": "é€", "b": "ü😀", "c": "ñ中"}
            assert {k: geo[k] for k in text} == text, (meta, view)
            assert geo["e"] == "y"  # ENUM members: FULL metadata logs them, the DDL gives them to the others
            assert (geo["g"]["srid"], geo["p"]["srid"]) == (4326, 0)
            (geo2,) = _delta(lake / table_dir(db, "geo2") / view).to_pylist()
            assert [geo2[k] for k in "abcd"] == ["à", "ß", "😀€", "ÿ"], (meta, view)
            # zero bytes at the end of a BINARY(n) are not in the row image: the binary charset, which a NO_LOG
            # map does not log but the DDL gives, puts them back
            (bins,) = _delta(lake / table_dir(db, "bins") / view).to_pylist()
            assert {k: v for k, v in bins.items() if not k.startswith("_")} == BINARIES_ROW, (meta, view)
