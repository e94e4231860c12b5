"""The lake lands every code of every charset as SELECT returns it (the twin of tests/values/test_charsets.py).

``binlake ingest`` decodes the binlog of ``tests/values/_charset_binlog.py`` (every code of every charset the
server has, ENUM and SET names in each charset, surrogate code points) into Delta tables; each table's current
state must hold, cell by cell, what PyMySQL got from the server.  Text that is no text (the surrogates) lands as
the lake lands any such value: its bytes decoded as UTF-8 with ``\\xNN`` escapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.spark.test_spark import _delta
from tests.values._charset_binlog import SURROGATES, CharsetBinlog, charset_binlog_server, differences

from binlake.testing.mariadb import MariaDBServer

pytestmark = [pytest.mark.spark, pytest.mark.server]


@pytest.fixture(scope="module")
def charset_server() -> Iterator[tuple[MariaDBServer, CharsetBinlog]]:
    with charset_binlog_server() as pair:
        yield pair


def test_lake_lands_every_code_of_every_charset(
    spark: Any, charset_server: tuple[MariaDBServer, CharsetBinlog], tmp_path: Path
) -> None:
    from binlake.ingest.run import ingest
    from binlake.spark.runner import SparkRunner

    data = charset_server[1]
    lake = tmp_path / "lake"
    ingest(SparkRunner(spark), [str(f) for f in data.files], str(lake))
    tables = {
        name: {r["id"]: r for r in _delta(lake / "charset_codes" / name / "current").to_pylist()}
        for name in ("codes", "names", "surrogates")
    }
    wrong = differences(data.codes, tables["codes"]) + differences(data.names, tables["names"])
    assert set(tables["surrogates"]) == set(data.surrogates)
    for row_id, stored in data.surrogates.items():
        for cs in SURROGATES:
            for col in (f"c_{cs}", f"e_{cs}"):
                if tables["surrogates"][row_id][col] != stored[col].decode("utf-8", "backslashreplace"):
                    wrong.append(f"{col} row {row_id}: lake {tables['surrogates'][row_id][col]!r}")
    assert not wrong, "\n".join(wrong[:40])
