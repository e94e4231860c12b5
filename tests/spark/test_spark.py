"""The Spark side: the ``binlake`` data source's views, ``binlake ingest`` into Delta tables, exactly-once re-runs,
a SIGKILL mid-ingest, and names from the binlog that must not escape the lake.

Expected values come from ``mariadb-binlog`` (the corpus' reference decodings) and from the MariaDB server itself.
"""

from __future__ import annotations

import gzip
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from binlake.reader import walk_headers
from binlake.spark.names import decode_name, encode_name, table_dir

pytestmark = pytest.mark.spark

CORPUS_FILES = ("corpus-bin.000004", "corpus-bin.000005", "corpus-bin.000006")
_REF_ROW = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`\.`([^`]*)`$", re.MULTILINE)
_OPS = {b"INSERT INTO": "insert", b"UPDATE": "update", b"DELETE FROM": "delete"}


def _reference_counts(corpus: Path, names: tuple[str, ...]) -> Counter[tuple[str, str, str]]:
    """(database, table, op) -> row changes that ``mariadb-binlog -vv`` printed for these corpus files."""
    out: Counter[tuple[str, str, str]] = Counter()
    for n in names:
        text = gzip.decompress((corpus / "mariadb" / "reference" / f"{n}.decode-rows-meta.txt.gz").read_bytes())
        for m in _REF_ROW.finditer(text):
            out[(m.group(2).decode(), m.group(3).decode(), _OPS[m.group(1)])] += 1
    return out


def _delta(uri: Path) -> Any:
    from deltalake import DeltaTable

    return DeltaTable(str(uri)).to_pyarrow_table()


def _lake_snapshot(lake: Path, *, ignore: frozenset[str] = frozenset()) -> dict[str, list[tuple[Any, ...]]]:
    """Every Delta table of a lake as sorted rows of (column, value) pairs, leaving out the ``ignore`` columns."""
    from deltalake import DeltaTable

    snap = {}
    for log in sorted(lake.rglob("_delta_log")):
        t = DeltaTable(str(log.parent)).to_pyarrow_table()
        rows = [tuple(sorted((k, repr(v)) for k, v in r.items() if k not in ignore)) for r in t.to_pylist()]
        snap[str(log.parent.relative_to(lake))] = sorted(rows)
    return snap


@pytest.fixture(scope="module")
def corpus_binlogs(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of symlinks to three corpus files (DML, then DDL mid-stream across a rotate)."""
    d = tmp_path_factory.mktemp("corpus-links")
    for n in CORPUS_FILES:
        (d / n).symlink_to(corpus_dir / "mariadb" / "binlogs" / n)
    return d


@pytest.fixture(scope="module")
def corpus_lake(spark: Any, corpus_binlogs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from binlake.spark.ingest import ingest

    lake = tmp_path_factory.mktemp("lake") / "lake"
    result = ingest(spark, [str(corpus_binlogs)], str(lake), split_bytes=64 << 10)
    assert result.batches == 1 and result.files == 3
    return lake


def test_names_are_reversible_and_stay_in_the_lake() -> None:
    for name in ("../../x", "a/b", ".", "..", "Ab%C", "käse tabelle", "x\udcff", "", "CON"):
        enc = encode_name(name)
        assert decode_name(enc) == name
        assert "/" not in enc and "." not in enc and enc.lower() == enc.replace("%", "%").lower()
    assert table_dir("../..", "../../x") == "%2E%2E%2F%2E%2E.%2E%2E%2F%2E%2E%2Fx"
    assert encode_name("T") != encode_name("t")
    with pytest.raises(ValueError):
        decode_name("../x")


def test_events_view_has_every_event(spark: Any, corpus_binlogs: Path) -> None:
    df = spark.read.format("binlake").option("view", "events").option("splitBytes", 64 << 10).load(str(corpus_binlogs))
    got = {(r["file"], r["pos"]) for r in df.filter("payload_offset IS NULL").select("file", "pos").collect()}
    want = {(p.name, h.pos) for p in sorted(corpus_binlogs.iterdir()) for h in walk_headers(p)}
    assert got == want
    # the 621 kB file was split into several partitions at transaction boundaries
    assert df.rdd.getNumPartitions() > 3
    row = df.filter("file = 'corpus-bin.000004' AND pos = 4").first()
    assert row["type"] == "FORMAT_DESCRIPTION_EVENT" and row["type_code"] == 15 and row["server_id"] == 1


def test_changes_view_matches_mariadb_binlog(spark: Any, corpus_dir: Path, corpus_binlogs: Path) -> None:
    df = spark.read.format("binlake").option("view", "changes").option("splitBytes", 64 << 10).load(str(corpus_binlogs))
    got = Counter({(r[0], r[1], r[2]): r[3] for r in df.groupBy("database", "table", "op").count().collect()})
    assert got == _reference_counts(corpus_dir, CORPUS_FILES)
    first = df.orderBy("seq").first()
    assert (first["database"], first["table"], first["op"]) == ("corpus_dml", "accounts", "insert")
    assert first["after"]["owner"] == "alice" and first["after"]["balance"] == "100.00"
    assert first["after"]["updated"] == "2024-01-01 10:00:00.000001" and first["before"] is None
    # seq is unique and follows (file, position, row)
    rows = df.select("file", "pos", "row", "seq").collect()
    assert len({r["seq"] for r in rows}) == len(rows)
    assert sorted(rows, key=lambda r: r["seq"]) == sorted(rows, key=lambda r: (r["file"], r["pos"], r["row"]))


def test_tablemaps_view(spark: Any, corpus_binlogs: Path) -> None:
    df = spark.read.format("binlake").option("view", "tablemaps").load(str(corpus_binlogs))
    acc = df.filter("table = 'accounts'").orderBy("first_pos").first()
    assert [c["name"] for c in acc["columns"]] == ["id", "owner", "balance", "email", "updated", "note"]
    assert acc["primary_key"] == ["id"]
    assert acc["columns"][2]["type"] == "NEWDECIMAL" and acc["columns"][2]["precision"] == 15
    # ALTER TABLE mid-stream: `evolve` has several layouts
    assert df.filter("table = 'evolve'").select("map_id").distinct().count() > 1


def test_change_tables_hold_exactly_the_row_changes(corpus_dir: Path, corpus_lake: Path) -> None:
    want = _reference_counts(corpus_dir, CORPUS_FILES)
    got: Counter[tuple[str, str, str]] = Counter()
    for d in corpus_lake.iterdir():
        if (d / "changes").is_dir():
            db, table = (decode_name(p) for p in d.name.split("."))
            for op, n in Counter(_delta(d / "changes")["_op"].to_pylist()).items():
                if op != "update_preimage":
                    got[(db, table, "update" if op == "update_postimage" else op)] += n
    assert got == want
    acc = _delta(corpus_lake / "corpus_dml.accounts" / "changes").sort_by("_seq").to_pylist()
    assert acc[0]["owner"] == "alice" and str(acc[0]["balance"]) == "100.00" and acc[0]["_op"] == "insert"
    ev = _delta(corpus_lake / "corpus_dml.evolve" / "changes")
    assert "c_renamed" in ev.column_names and "a__decimal128_20__0" in ev.column_names  # ALTER: merge, retype


def test_rerun_is_a_no_op(spark: Any, corpus_binlogs: Path, corpus_lake: Path) -> None:
    from binlake.spark.ingest import ingest

    before = _lake_snapshot(corpus_lake)
    result = ingest(spark, [str(corpus_binlogs)], str(corpus_lake))
    assert result.batches == 0 and not result.changes
    assert _lake_snapshot(corpus_lake) == before


def test_incremental_equals_one_run(spark: Any, corpus_binlogs: Path, corpus_lake: Path, tmp_path: Path) -> None:
    from binlake.spark.ingest import ingest

    lake = tmp_path / "lake"
    for n in CORPUS_FILES:  # one new file per run, as a server would rotate
        ingest(spark, [str(corpus_binlogs / n)], str(lake))
    # the same rows; only _schema_history's batch numbers differ (three runs)
    assert _lake_snapshot(lake, ignore=frozenset({"batch"})) == _lake_snapshot(corpus_lake, ignore=frozenset({"batch"}))


def _ingest_cmd(sources: list[str], lake: Path) -> list[str]:
    return [sys.executable, "-m", "binlake.spark.cli", *sources, "--lake", str(lake), "--master", "local[1]"]


def test_sigkill_mid_ingest_then_rerun(spark: Any, corpus_binlogs: Path, corpus_lake: Path, tmp_path: Path) -> None:
    """Kill the ingest after its first table commit, re-run: the lake equals a clean run's."""
    from binlake.spark.ingest import ingest

    lake = tmp_path / "lake"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), *sys.path])}
    proc = subprocess.Popen(
        _ingest_cmd([str(corpus_binlogs)], lake), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if any(lake.glob("*/changes/_delta_log/*.json")):
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the ingest finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert not (lake / "_binlake" / "batches" / "0000000001.done").exists()
    result = ingest(spark, [str(corpus_binlogs)], str(lake))
    assert result.batches == 1
    assert _lake_snapshot(lake) == _lake_snapshot(corpus_lake)


# -- against a live MariaDB: the current-state tables equal the server's tables --------------------------------

# tables whose rows change without row events (ALTER TABLE ... TRUNCATE PARTITION), or are no longer there
_NOT_COMPARABLE = {("corpus_dml", "parted")}


def _norm(v: Any) -> str | None:
    import datetime as dt
    from decimal import Decimal

    if v is None:
        return None
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    if isinstance(v, dt.datetime):
        text = v.replace(tzinfo=None).isoformat(sep=" ")
        return text.rstrip("0").rstrip(".") if "." in text else text
    if isinstance(v, Decimal | float):
        return str(v)
    return str(v)


def test_current_state_equals_the_server(spark: Any, workload_binlogs: Any, tmp_path: Path) -> None:
    from binlake.spark.ingest import ingest

    server = workload_binlogs.server
    server.execute(
        "CREATE DATABASE IF NOT EXISTS hostile; CREATE TABLE hostile.`../../x` (id INT PRIMARY KEY, v VARCHAR(10));"
        "INSERT INTO hostile.`../../x` VALUES (1, 'a'), (2, 'b'); UPDATE hostile.`../../x` SET v = 'c' WHERE id = 2"
    )
    server.flush_logs()
    files = [str(p) for p in server.binlog_files()]
    lake = tmp_path / "lake"
    ingest(spark, files, str(lake))
    assert not (tmp_path / "x").exists() and not (lake.parent.parent / "x").exists()
    hostile = lake / table_dir("hostile", "../../x") / "current"
    assert sorted(_delta(hostile).select(["id", "v"]).to_pylist(), key=str) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "c"},
    ]
    compared = 0
    for d in sorted(lake.iterdir()):
        if not (d / "current").is_dir():
            continue
        db, table = (decode_name(p) for p in d.name.split("."))
        exists = server.query(
            f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{db}' AND table_name = "
            f"'{table.replace(chr(39), chr(39) * 2)}' AND table_type = 'BASE TABLE'"
        )
        if (db, table) in _NOT_COMPARABLE or exists[0][0] == "0":
            continue
        cur = _delta(d / "current")
        cols = [c for c in cur.column_names if not c.startswith("_")]
        qt = table.replace("`", "``")
        want = server.query(f"SELECT {', '.join(f'`{c}`' for c in cols)} FROM `{db}`.`{qt}`")
        got = [tuple(_norm(r[c]) for c in cols) for r in cur.to_pylist()]
        assert sorted(got, key=repr) == sorted(want, key=repr), f"{db}.{table}"
        compared += 1
    assert compared >= 5
