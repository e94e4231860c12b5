"""The data source's ``changes`` view carries each row change as Debezium JSON (column ``debezium``): the same
line ``binlake changes`` writes for it, from Spark's own read of the view, whatever the split."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from binlake.binlogs import list_binlogs
from binlake.changes import ChangeStream, FileSource
from binlake.ingest.plan import plan_splits
from binlake.render.changes.debezium import DebeziumEncoder, DebeziumOptions, ValueModes
from binlake.spark.datasource import read_split

pytestmark = pytest.mark.spark


OPTIONS = {
    "decimal.handling.mode": "string",
    "bigint.unsigned.handling.mode": "precise",
    "time.precision.mode": "connect",
}
OPTIONS["binary.handling.mode"] = "hex"


def _cli_lines(path: Path, modes: ValueModes | None = None) -> list[str]:
    encoder = DebeziumEncoder(DebeziumOptions(modes=modes or ValueModes()))
    return [line[:-1] for trx in ChangeStream(FileSource([str(path)])) for line in encoder.transaction(trx)]


def test_every_corpus_file_s_json_column_is_binlake_changes(corpus_dir: Path) -> None:
    """Without Spark: every split of every MariaDB corpus file (small splits, so files are cut in several)."""
    lines = 0
    for path in sorted((corpus_dir / "mariadb" / "binlogs").glob("corpus-bin.0000*"))[:-1]:
        view = []
        for split in plan_splits(list_binlogs(str(path)), split_bytes=64 << 10):
            for batch in read_split(split, "changes"):
                assert batch.num_rows == len(batch.column("debezium"))
                view += batch.column("debezium").to_pylist()
        assert view == _cli_lines(path), path.name
        lines += len(view)
    assert lines > 10_000


def test_the_json_column_takes_the_debezium_settings(corpus_dir: Path) -> None:
    """Without Spark: the column is what ``binlake changes --debezium-option`` writes in the same modes."""
    modes = ValueModes.parse(OPTIONS.items())
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000002"  # every type
    view = []
    for split in plan_splits(list_binlogs(str(path)), split_bytes=64 << 10):
        for batch in read_split(split, "changes", modes=modes):
            view += batch.column("debezium").to_pylist()
    assert view == _cli_lines(path, modes) != _cli_lines(path)


def test_spark_reads_the_json_column(spark: Any, corpus_dir: Path) -> None:
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"
    df = spark.read.format("binlake").option("view", "changes").load(str(path))
    rows = df.orderBy("seq").select("database", "table", "op", "debezium").collect()
    assert [r["debezium"] for r in rows] == _cli_lines(path)
    ops = {"insert": "c", "update": "u", "delete": "d"}
    for r in rows[:500]:
        rec = json.loads(r["debezium"])
        assert (rec["source"]["db"], rec["source"]["table"], rec["op"]) == (r["database"], r["table"], ops[r["op"]])


def test_spark_takes_the_debezium_settings_as_options(spark: Any, corpus_dir: Path) -> None:
    """``.option("decimal.handling.mode", "string")`` and the rest, under the connector's names, give the lines
    ``binlake changes --debezium-option`` gives; a value binlake does not take fails the read, naming it."""
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000002"
    reader = spark.read.format("binlake").option("view", "changes")
    for key, value in OPTIONS.items():
        reader = reader.option(key, value)
    rows = reader.load(str(path)).orderBy("seq").select("debezium").collect()
    assert [r["debezium"] for r in rows] == _cli_lines(path, ValueModes.parse(OPTIONS.items()))
    with pytest.raises(Exception, match=re.escape("time.precision.mode is one of adaptive_time_microseconds, connect")):
        spark.read.format("binlake").option("time.precision.mode", "isostring").load(str(path)).count()
