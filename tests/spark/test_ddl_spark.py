"""An ALTER TABLE's rewrite of a current-state table as tasks on Spark's executors (a task per file), and the
``binlake-lake`` Spark source reading the table after it: both equal the server's ``SELECT *``."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.test_ddl_current import _check, _server_columns, _text

from binlake.testing.mariadb import INSTALL_HINT, MariaDBServer, missing_tools

pytestmark = [pytest.mark.spark, pytest.mark.server]


def test_an_alter_rewrites_the_files_on_the_executors(spark: Any, tmp_path: Path) -> None:
    from binlake.ingest.progress import Progress
    from binlake.ingest.run import ingest
    from binlake.lake import Lake, deltalog
    from binlake.spark.runner import SparkRunner

    missing = missing_tools()
    if missing:
        pytest.skip(f"MariaDB server not installed ({', '.join(missing)} not found): {INSTALL_HINT}")
    sources, lake = tmp_path / "binlogs", tmp_path / "lake"
    sources.mkdir()
    with MariaDBServer() as server:

        def batch() -> None:
            server.flush_logs()
            for f in server.binlog_files():
                shutil.copyfile(f, sources / f.name)
            ingest(SparkRunner(spark), [str(sources)], str(lake), progress=Progress(None, io.StringIO()))

        server.execute("CREATE DATABASE s; CREATE TABLE s.t (id INT PRIMARY KEY, a INT, c DECIMAL(6,2), d DATETIME(2))")
        for i in range(3):  # a file per batch
            server.execute(f"INSERT INTO s.t VALUES ({i}, {i * 11}, {i}.25, '2024-01-0{i + 1} 10:00:00.75')")
            batch()
        loc = Lake(str(lake)).current("s/t")
        before = deltalog.read_snapshot(loc)
        assert before is not None and len(before.files) >= 3
        server.execute("ALTER TABLE s.t RENAME COLUMN a TO aa, MODIFY c VARCHAR(9), MODIFY d DATE, ADD z INT DEFAULT 5")
        batch()
        _check(server, lake, "on Spark", "s")
        after = deltalog.read_snapshot(loc)
        assert after is not None and not set(after.files) & set(before.files)  # every file written again
        columns = _server_columns(server, "s", "t")
        got = spark.read.format("binlake-lake").load(loc.uri).toArrow().drop_columns(["_seq", "_ts"])
        assert [(f.name, f.type) for f in got.schema] == [(n, t) for n, t, _ in columns]
        rows = sorted(got.to_pylist(), key=lambda r: r["id"])
        expected = sorted(server.query("SELECT * FROM s.t"), key=lambda r: int(str(r[0])))
        assert [tuple(_text(r[n], fsp) for n, _, fsp in columns) for r in rows] == expected
