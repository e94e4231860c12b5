"""The Spark side: the ``binlake`` data source's views, ``binlake ingest`` into Delta tables, exactly-once re-runs,
a SIGKILL mid-ingest, and names from the binlog that must not escape the lake.

The corpus ingest, its re-run, the incremental runs, the SIGKILL and ``binlake tables`` run twice: with the binlogs
and the lake on a local disk, and on S3 (``storage``: a moto server on 127.0.0.1); the S3 lake must equal the
local one, and Spark and deltalake read it back from the object store.

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
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from binlake.lake.names import decode_name, encode_name, table_dir
from binlake.reader import walk_headers
from binlake.spark.runner import SparkRunner
from binlake.storage import Location, locate

pytestmark = pytest.mark.spark

CORPUS_FILES = ("corpus-bin.000004", "corpus-bin.000005", "corpus-bin.000006")
# names are backquoted with inner backquotes doubled, as mariadb-binlog quotes them
_REF_ROW = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `((?:[^`]|``)*)`\.`((?:[^`]|``)*)`$", re.MULTILINE)
_OPS = {b"INSERT INTO": "insert", b"UPDATE": "update", b"DELETE FROM": "delete"}


def _reference_counts(corpus: Path, names: tuple[str, ...]) -> Counter[tuple[str, str, str]]:
    """(database, table, op) -> row changes that ``mariadb-binlog -vv`` printed for these corpus files."""
    out: Counter[tuple[str, str, str]] = Counter()
    for n in names:
        text = gzip.decompress((corpus / "mariadb" / "reference" / f"{n}.decode-rows-meta.txt.gz").read_bytes())
        for m in _REF_ROW.finditer(text):
            db, table = (m.group(i).replace(b"``", b"`").decode() for i in (2, 3))
            out[(db, table, _OPS[m.group(1)])] += 1
    return out


def _lake_tables(lake: Path | Location) -> list[tuple[str, str, Location]]:
    """(database, table, folder) of every source table in a lake (a folder or a URI)."""
    root = locate(lake)
    return [
        (decode_name(db.location.name), decode_name(t.location.name), t.location)
        for db in root.list()
        if db.is_dir and not db.location.name.startswith("_")
        for t in db.location.list()
        if t.is_dir
    ]


def _delta(table: Path | Location | str, version: int | None = None) -> Any:
    """The table's rows through binlake's reader, which applies deletion vectors (current-state tables have them;
    deltalake's ``to_pyarrow_table`` refuses such a table)."""
    from binlake.lake.delta import read_table

    return read_table(locate(table), version)


def _delta_tables(lake: Path | Location | str) -> list[Location]:
    """Every Delta table below ``lake`` (but the writer lease, which is no data)."""
    root = locate(lake)
    logs = {e.location.parent for e in root.list(recursive=True) if e.location.parent.name == "_delta_log"}
    return sorted({log.parent for log in logs if not log.parent.uri.endswith("/_binlake/lease")}, key=str)


def _lake_snapshot(
    lake: Path | Location | str, *, ignore: frozenset[str] = frozenset()
) -> dict[str, list[tuple[Any, ...]]]:
    """Every Delta table of a lake as sorted rows of (column, value) pairs, leaving out the ``ignore`` columns."""
    snap = {}
    for table in _delta_tables(lake):
        rows = [tuple(sorted((k, repr(v)) for k, v in r.items() if k not in ignore)) for r in _delta(table).to_pylist()]
        snap[table.relative_to(locate(lake))] = sorted(rows)
    return snap


@pytest.fixture(scope="module")
def corpus_binlogs(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of symlinks to three corpus files (DML, then DDL mid-stream across a rotate)."""
    d = tmp_path_factory.mktemp("corpus-links")
    for n in CORPUS_FILES:
        (d / n).symlink_to(corpus_dir / "mariadb" / "binlogs" / n)
    return d


@pytest.fixture(scope="module")
def local_lake(spark: Any, corpus_binlogs: Path, tmp_path_factory: pytest.TempPathFactory) -> Location:
    """The corpus files ingested on a local disk (the lake the tests that are not about storage read)."""
    from binlake.ingest.run import ingest

    lake = tmp_path_factory.mktemp("lake") / "lake"
    result = ingest(SparkRunner(spark), [str(corpus_binlogs)], str(lake), split_bytes=64 << 10)
    assert result.batches == 1 and result.files == 3
    return locate(lake)


@pytest.fixture(scope="module")
def sources(storage: Any, corpus_dir: Path) -> str:
    """The corpus files in a folder of ``storage``."""
    return str(storage.sources([corpus_dir / "mariadb" / "binlogs" / n for n in CORPUS_FILES]))


@pytest.fixture(scope="module")
def corpus_lake(spark: Any, storage: Any, sources: str, local_lake: Location) -> Location:
    """The corpus files ingested from ``storage`` into a lake on ``storage``."""
    from binlake.ingest.run import ingest

    if storage.name == "local":
        return local_lake
    lake = storage.uri("lake")
    result = ingest(SparkRunner(spark), [sources], lake, split_bytes=64 << 10)
    assert result.batches == 1 and result.files == 3
    return locate(lake)


def test_names_are_reversible_and_stay_in_the_lake() -> None:
    for name in ("../../x", "a/b", ".", "..", "Ab%C", "käse tabelle", "x\udcff", "CON", "_events", "Ä~\\"):
        enc = encode_name(name)
        assert decode_name(enc) == name
        assert not set(enc) & set("/.\\%") and not enc.startswith("_")
        assert not any(c.isupper() for c in re.sub(r"\+[0-9A-F]{2}", "", enc))  # no case-only clashes
    assert table_dir("../..", "../../x") == "+2E+2E+2F+2E+2E/+2E+2E+2F+2E+2E+2Fx"
    assert encode_name("T") != encode_name("t") and encode_name("Ä") != encode_name("ä")
    long = encode_name("表" * 64 + "x" * 64)
    assert len(long.encode()) <= 200 and "~" in long and encode_name("") == "~empty"
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


def test_changes_view_matches_mariadb_binlog(spark: Any, corpus_dir: Path, sources: str) -> None:
    """The data source reads the binlogs wherever they are (a folder, or an S3 prefix)."""
    df = spark.read.format("binlake").option("view", "changes").option("splitBytes", 64 << 10).load(sources)
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


def test_change_tables_hold_exactly_the_row_changes(corpus_dir: Path, corpus_lake: Location) -> None:
    want = _reference_counts(corpus_dir, CORPUS_FILES)
    got: Counter[tuple[str, str, str]] = Counter()
    for db, table, d in _lake_tables(corpus_lake):
        if (d / "changes").is_dir():
            for op, n in Counter(_delta(d / "changes")["_op"].to_pylist()).items():
                if op != "update_preimage":
                    got[(db, table, "update" if op == "update_postimage" else op)] += n
    assert got == want
    acc = _delta(corpus_lake / "corpus_dml" / "accounts" / "changes").sort_by("_seq").to_pylist()
    assert acc[0]["owner"] == "alice" and str(acc[0]["balance"]) == "100.00" and acc[0]["_op"] == "insert"
    ev = _delta(corpus_lake / "corpus_dml" / "evolve" / "changes")
    assert "c_renamed" in ev.column_names and "a__decimal128_20__0" in ev.column_names  # ALTER: merge, retype


def test_the_lake_is_the_same_on_every_storage(corpus_lake: Location, local_lake: Location) -> None:
    assert _lake_snapshot(corpus_lake) == _lake_snapshot(local_lake)


def test_rerun_is_a_no_op(spark: Any, sources: str, corpus_lake: Location) -> None:
    from binlake.ingest.run import ingest

    before = _lake_snapshot(corpus_lake)
    result = ingest(SparkRunner(spark), [sources], corpus_lake.uri)
    assert result.batches == 0 and not result.changes
    assert _lake_snapshot(corpus_lake) == before


def test_incremental_equals_one_run(spark: Any, storage: Any, sources: str, corpus_lake: Location) -> None:
    from binlake.ingest.run import ingest

    lake = storage.uri("lake")
    for n in CORPUS_FILES:  # one new file per run, as a server would rotate
        ingest(SparkRunner(spark), [f"{sources}/{n}"], lake)
    # the same rows; only _schema_history's batch numbers differ (three runs)
    assert _lake_snapshot(lake, ignore=frozenset({"batch"})) == _lake_snapshot(corpus_lake, ignore=frozenset({"batch"}))


def _ingest_cmd(sources: list[str], lake: Path | Location | str) -> list[str]:
    return [sys.executable, "-m", "binlake.cli.ingest", *sources, "--lake", str(lake), "--master", "local[1]"]


def _committed(lake: Location) -> bool:
    """Whether a change table of ``lake`` has a commit."""
    return any(
        "/changes/_delta_log/" in e.location.uri and e.location.name.endswith(".json")
        for e in lake.list(recursive=True)
    )


def test_sigkill_mid_ingest_then_rerun(spark: Any, storage: Any, sources: str, corpus_lake: Location) -> None:
    """Kill the ingest after its first table commit, re-run: the lake equals a clean run's."""
    from binlake.ingest.run import ingest

    lake = locate(storage.uri("lake"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), *sys.path])}
    proc = subprocess.Popen(_ingest_cmd([sources], lake), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if _committed(lake):
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the ingest finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert not (lake / "_binlake" / "batches" / "0000000001.done").exists()
    # the killed ingest's lease: its process is gone, taken at once
    result = ingest(SparkRunner(spark), [sources], lake.uri)
    assert result.batches == 1 and not result.waited
    assert _lake_snapshot(lake) == _lake_snapshot(corpus_lake)


def test_spark_reads_the_lake_from_its_storage(spark: Any, corpus_lake: Location) -> None:
    """``binlake-lake``: Spark reads the committed tables wherever the lake is, as deltalake does."""
    want = _delta(corpus_lake / "corpus_dml" / "accounts" / "current")
    df = spark.read.format("binlake-lake").option("table", "corpus_dml.accounts").load(corpus_lake.uri)
    got = df.toArrow()
    assert got.schema.names == want.schema.names
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(want.to_pylist(), key=lambda r: r["id"])
    changes = spark.read.format("binlake-lake").load((corpus_lake / "corpus_dml" / "evolve" / "changes").uri)
    assert changes.count() == _delta(corpus_lake / "corpus_dml" / "evolve" / "changes").num_rows


# -- against a live MariaDB: the current-state tables equal the server's tables --------------------------------

# tables whose rows change without row events: ALTER TABLE ... TRUNCATE PARTITION, and InnoDB foreign-key
# cascades (the server does not log the cascaded changes); `comp` is written in STATEMENT format.  The types
# workload's values need per-type normalisation of the client's text (BIT, binary) that this test does not do, so
# of corpus_types only the MariaDB 5.3 temporal tables are compared; of corpus_stmt (STATEMENT/MIXED) only the
# row-image table.
_NOT_COMPARABLE = {("corpus_dml", "parted"), ("corpus_dml", "child"), ("corpus_dml", "comp")}
_COMPARED_DBS = {"corpus_dml", "hostile", "gone", "gone_again"}
_COMPARED_TABLES = {
    ("corpus_stmt", "ri"),
    ("corpus_types", "t_temporal_old"),
    ("corpus_types", "t_temporal_old0"),
}


def _sql_str(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _norm(v: Any) -> str | None:
    import datetime as dt
    from decimal import Decimal

    if v is None:
        return None
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    if isinstance(v, dt.datetime):
        return _norm(v.replace(tzinfo=None).isoformat(sep=" "))
    if isinstance(v, str) and v.startswith("0000-00-00"):
        return None  # a zero date is null in the lake
    if isinstance(v, str) and re.fullmatch(r"(\d{4}-\d\d-\d\d |-?)\d+:\d\d:\d\d\.\d+", v):
        return v.rstrip("0").rstrip(".")  # DATETIME(n)/TIME(n) as the client prints them
    if isinstance(v, float):
        return repr(v).removesuffix(".0")  # the client prints DOUBLE -362.0 as -362
    if isinstance(v, Decimal):
        return str(v)
    return str(v)


def test_current_state_equals_the_server(spark: Any, workload_binlogs: Any, tmp_path: Path) -> None:
    from binlake.ingest.run import ingest

    server = workload_binlogs.server
    server.execute(
        "CREATE DATABASE IF NOT EXISTS hostile; CREATE TABLE hostile.`../../x` (id INT PRIMARY KEY, v VARCHAR(10));"
        "INSERT INTO hostile.`../../x` VALUES (1, 'a'), (2, 'b'); UPDATE hostile.`../../x` SET v = 'c' WHERE id = 2;"
        # renames carry the current state: a plain one, then the online-schema-change swap
        "CREATE TABLE hostile.r1 (id INT PRIMARY KEY, v INT); INSERT INTO hostile.r1 VALUES (1, 1), (2, 2);"
        "RENAME TABLE hostile.r1 TO hostile.r2; UPDATE hostile.r2 SET v = 20 WHERE id = 2;"
        "CREATE TABLE hostile.r2_new (id INT PRIMARY KEY, v INT); INSERT INTO hostile.r2_new VALUES (7, 7);"
        "RENAME TABLE hostile.r2 TO hostile.r2_old, hostile.r2_new TO hostile.r2; INSERT INTO hostile.r2 VALUES (8, 8);"
        "ALTER TABLE hostile.r2_old ADD COLUMN w INT, RENAME TO hostile.r3; INSERT INTO hostile.r3 VALUES (3, 3, 3);"
        # DROP DATABASE empties every current table of it; one created again after it starts from nothing
        "CREATE DATABASE gone; CREATE TABLE gone.a (id INT PRIMARY KEY); CREATE TABLE gone.b (id INT PRIMARY KEY);"
        "INSERT INTO gone.a VALUES (1), (2); INSERT INTO gone.b VALUES (3); DROP DATABASE IF EXISTS gone;"
        "CREATE SCHEMA gone_again; CREATE TABLE gone_again.c (id INT PRIMARY KEY); INSERT INTO gone_again.c VALUES (4);"
        "DROP SCHEMA gone_again; CREATE DATABASE gone_again; CREATE TABLE gone_again.c (id INT PRIMARY KEY);"
        "INSERT INTO gone_again.c VALUES (5)"
    )
    server.flush_logs()
    files = [str(p) for p in server.binlog_files()]
    lake = tmp_path / "lake"
    result = ingest(SparkRunner(spark), files, str(lake), split_bytes=256 << 10)
    assert result.renames == 4  # the DDL workload's RENAME TABLE evolve TO evolved, and these three
    assert not (tmp_path / "x").exists() and not (lake.parent.parent / "x").exists()
    hostile = lake / table_dir("hostile", "../../x") / "current"
    assert sorted(_delta(hostile).select(["id", "v"]).to_pylist(), key=str) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "c"},
    ]
    compared = 0
    wrong: dict[str, list[tuple[Any, ...]]] = {}
    for db, table, d in _lake_tables(lake):
        if not (d / "current").is_dir():
            continue
        exists = server.query(
            f"SELECT COUNT(*), COALESCE(SUM(table_type = 'BASE TABLE'), 0) FROM information_schema.tables WHERE "
            f"table_schema = {_sql_str(db)} AND table_name = {_sql_str(table)}"
        )
        if (db not in _COMPARED_DBS and (db, table) not in _COMPARED_TABLES) or (db, table) in _NOT_COMPARABLE:
            continue
        if exists[0][0] == "0":
            assert _delta(d / "current").num_rows == 0, f"{db}.{table} is gone: its current state must be empty"
            continue
        if exists[0][1] == "0":
            continue  # a sequence, a system-versioned table: not a plain table of rows
        cur = _delta(d / "current")
        cols = [c for c in cur.column_names if not c.startswith("_")]
        qt = table.replace("`", "``")
        qd = db.replace("`", "``")
        sel = ", ".join(f"`{c.replace('`', '``')}`" for c in cols)
        want = [tuple(_norm(v) for v in r) for r in server.query(f"SELECT {sel} FROM `{qd}`.`{qt}`")]
        got = [tuple(_norm(r[c]) for c in cols) for r in cur.to_pylist()]
        if sorted(got, key=repr) != sorted(want, key=repr):
            wrong[f"{db}.{table}"] = sorted(set(got) ^ set(want), key=repr)[:3]
        compared += 1
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in sorted(wrong.items()))[:6000]
    assert compared >= 10
    for table in ("r1", "r2_new", "r2_old"):  # renamed away: their current state left with them
        assert _delta(lake / "hostile" / table / "current").num_rows == 0
    for table in ("a", "b"):  # dropped with their database
        assert _delta(lake / "gone" / table / "current").num_rows == 0
    assert _delta(lake / "gone_again" / "c" / "current")["id"].to_pylist() == [5]


# -- the gaps of the first version: XA outcomes, partial images, schema across splits and batches, decoding options,
#    `binlake tables`, progress -------------------------------------------------------------------------------------


def _cut_after_gtid_before(path: Path, pos: int) -> int:
    """The length of a prefix of ``path`` that ends right after the last GTID event before ``pos``: an ingest of it
    stops at that transaction start (the file is not closed, so its last transaction is left for the next run)."""
    gtids = [h for h in walk_headers(path) if h.type_code == 162 and h.pos < pos]
    return gtids[-1].pos + gtids[-1].size


def _two_batches(spark: Any, corpus: Path, name: str, cut: int, tmp: Path, **kw: Any) -> tuple[Path, list[Any]]:
    """Ingest ``name`` as a server would have written it: its first ``cut`` bytes (the format description flagged
    LOG_EVENT_BINLOG_IN_USE_F: a file still being written), then all of it (same file, closed)."""
    from binlake.ingest.run import ingest

    src, binlogs, lake = corpus / "mariadb" / "binlogs" / name, tmp / "binlogs", tmp / "lake"
    binlogs.mkdir()
    head = bytearray(src.read_bytes()[:cut])
    head[4 + 17] |= 0x01
    (binlogs / name).write_bytes(bytes(head))
    results = [ingest(SparkRunner(spark), [str(binlogs)], str(lake), **kw)]
    (binlogs / name).write_bytes(src.read_bytes())
    results.append(ingest(SparkRunner(spark), [str(binlogs)], str(lake), **kw))
    assert [r.batches for r in results] == [1, 1]
    return lake, results


def test_xa_outcome_decides_current_state(spark: Any, corpus_dir: Path, local_lake: Location, tmp_path: Path) -> None:
    """XA PREPARE logs the rows; the later XA COMMIT/ROLLBACK decides, in the same batch or a later one."""
    acc = local_lake / "corpus_dml" / "accounts"
    ids = {r["id"] for r in _delta(acc / "current").to_pylist()}
    assert 300 in ids and 302 in ids and 301 not in ids  # XA COMMIT, one phase; XA ROLLBACK after prepare
    xa = {(r["id"], r["_op"]): r for r in _delta(acc / "changes").to_pylist() if r["_xid"]}
    assert (
        xa[(301, "insert")]["_rolled_back"] is True and xa[(301, "insert")]["_xid"] == "X'0102ff',X'627175616c2d78',42"
    )
    assert xa[(300, "insert")]["_rolled_back"] is False and xa[(3, "update_postimage")]["_rolled_back"] is False
    # the first run stops between XA PREPARE 'xa-commit-1' (11301) and its XA COMMIT (11401): pending, not applied
    lake, results = _two_batches(spark, corpus_dir, "corpus-bin.000004", 11401, tmp_path)
    assert results[0].xa_pending == 1 and results[1].xa_pending == 0
    first = _delta_version(lake / "corpus_dml" / "accounts" / "changes", 0)
    assert {r["_rolled_back"] for r in first.to_pylist() if r["_xid"]} == {None}
    cur0 = _delta_version(lake / "corpus_dml" / "accounts" / "current", 0).to_pylist()
    assert 300 not in {r["id"] for r in cur0}
    # its UPDATE ... balance + 1 WHERE id = 3 is not applied yet either
    assert (
        {r["balance"] for r in cur0 if r["id"] == 3} == {xa[(3, "update_preimage")]["balance"]} == {Decimal("1100.00")}
    )
    # after the second run the lake is what one run over the whole file gives
    want = _lake_snapshot(local_lake / "corpus_dml" / "accounts")
    assert _lake_snapshot(lake / "corpus_dml" / "accounts") == want


def _delta_version(uri: Path, version: int) -> Any:
    return _delta(uri, version)


_RI_FINAL = [  # corpus_stmt.ri after tests/workloads/06_row_image.sql (what the server's SELECT * shows)
    {"id": 1, "a": 1000, "b": "one", "c": "text one", "d": b"\x01", "e": "2024-01-01 00:00:00.100000", "f": 1},
    {"id": 2, "a": 2, "b": None, "c": "noblob changed text", "d": b"\x02", "e": None, "f": 2},
    {"id": 20, "a": 3, "b": "three", "c": None, "d": None, "e": None, "f": 3},
]


def _ri_rows(table: Any) -> list[dict[str, Any]]:
    rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in table.to_pylist()]
    for r in rows:
        r["e"] = None if r["e"] is None else r["e"].isoformat(sep=" ", timespec="microseconds")
    return sorted(rows, key=lambda r: r["id"])


def test_partial_row_images_keep_absent_columns(spark: Any, corpus_dir: Path, tmp_path: Path) -> None:
    """binlog_row_image=MINIMAL/NOBLOB: an absent column keeps its value; `_absent` tells absent from NULL."""
    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000008"
    # first run: the FULL inserts and the MINIMAL insert; second run: every update starts from the lake's current
    lake, _ = _two_batches(spark, corpus_dir, "corpus-bin.000008", _cut_after_gtid_before(path, 2109), tmp_path)
    assert _ri_rows(_delta(lake / "corpus_stmt" / "ri" / "current")) == _RI_FINAL
    changes = {(r["_pos"], r["_op"]): r for r in _delta(lake / "corpus_stmt" / "ri" / "changes").to_pylist()}
    # UPDATE ri SET b = NULL, c = 'minimal text' WHERE id = 2 (MINIMAL): b is NULL, a is absent
    post = changes[(2395, "update_postimage")]
    assert post["b"] is None and "b" not in post["_absent"] and "a" in post["_absent"] and post["id"] is None
    assert changes[(2395, "update_preimage")]["_absent"] == ["a", "b", "c", "d", "e", "f"]
    assert changes[(1192, "insert")]["_absent"] is None  # a FULL image
    assert changes[(4355, "update_postimage")]["_absent"] == ["d"]  # NOBLOB: the blob not changed


def test_schema_follows_splits_and_batches(spark: Any, corpus_dir: Path, tmp_path: Path) -> None:
    """MariaDB 5.3 TIME(n)/DATETIME(n)/TIMESTAMP(n) need their CREATE TABLE: in an earlier split, or batch."""
    import datetime as dt

    from binlake.binlogs import list_binlogs
    from binlake.ingest.plan import plan_splits
    from binlake.ingest.run import ingest

    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000003"
    splits = plan_splits(list_binlogs(path), split_bytes=256)
    assert any(s.start > 2084 for s in splits)  # the rows of t_temporal_old are in splits after its CREATE TABLE
    lake = tmp_path / "one" / "lake"
    ingest(SparkRunner(spark), [str(path)], str(lake), split_bytes=256)
    # a second lake reads the CREATE TABLE (at 1778) in its first run and the rows in the next one
    lake2, _ = _two_batches(spark, corpus_dir, "corpus-bin.000003", 2126, tmp_path)
    for lk in (lake, lake2):
        rows = {r["id"]: r for r in _delta(lk / "corpus_types" / "t_temporal_old" / "current").to_pylist()}
        assert sorted(rows) == [1, 2, 3, 4]
        r4 = rows[4]
        assert (r4["t3"], r4["t6"]) == ("12:34:56.789000", "01:00:00.500000")
        assert r4["dtm3"] == dt.datetime(2024, 2, 29, 12, 34, 56, 789000) and r4["dtm6"] is None
        assert r4["ts6"] == dt.datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=dt.UTC)
        assert rows[2]["dtm6"] == dt.datetime(9999, 12, 31, 23, 59, 59, 999999) and rows[1]["t6"] == "-838:59:59.999999"
        assert rows[3]["dtm0"] is None  # the zero date
    assert _lake_snapshot(lake2 / "corpus_types") == _lake_snapshot(lake / "corpus_types")


def test_ingest_cli_encrypted_log_with_key_file(corpus_dir: Path, tmp_path: Path) -> None:
    """`binlake ingest --key-file`: an encrypt_binlog=ON log lands like any other (and without the key it stops)."""
    from deltalake import DeltaTable

    binlogs = tmp_path / "enc"
    binlogs.mkdir()
    (binlogs / "corpus-bin.000022").symlink_to(corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000022")
    lake = tmp_path / "lake"
    keys = corpus_dir / "workloads" / "keys.txt"
    cmd = [*_ingest_cmd([str(binlogs)], lake), "--key-file", str(keys)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), *sys.path])}
    bad = subprocess.run(_ingest_cmd([str(binlogs)], tmp_path / "nokey"), env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "corpus-bin.000022" in bad.stderr
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ingested 1 batch: 1 file" in done.stdout
    assert "corpus_enc.secret       2       1       1" in done.stdout  # the summary's per-table counts
    events = DeltaTable(str(lake / "_events")).to_pyarrow_table()
    assert "START_ENCRYPTION_EVENT" in events["type"].to_pylist()
    current = _delta(lake / "corpus_enc" / "secret" / "current").to_pylist()
    assert [(r["id"], r["v"]) for r in current] == [(2, "changed")]
    first = (
        DeltaTable(str(lake / "corpus_enc" / "secret" / "changes")).to_pyarrow_table().sort_by("_seq").to_pylist()[0]
    )
    assert (first["id"], first["v"], first["_op"]) == (1, "encrypted row 😀", "insert")


@pytest.mark.parametrize("split_bytes", [64 << 20, 1500])
def test_on_error_skips_are_kept_and_reported(spark: Any, corpus_dir: Path, tmp_path: Path, split_bytes: int) -> None:
    """--on-error skip-transaction: a damaged rows event drops its transaction; `_skips` and the summary say so, once,
    whether the file is one split or many (each split's recovering reader starts at the split)."""
    from binlake.errors import BinlogError
    from binlake.ingest.run import ingest, summary
    from binlake.ingest.statements import ReadSpec

    src = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000008"
    data = bytearray(src.read_bytes())
    data[2109 + 30] ^= 0xFF  # inside UPDATE ri SET a = a + 1 WHERE id = 1 (MINIMAL): its CRC32 no longer matches
    binlogs = tmp_path / "bad"
    binlogs.mkdir()
    (binlogs / src.name).write_bytes(bytes(data))
    with pytest.raises(BinlogError, match="CRC32"):
        ingest(SparkRunner(spark), [str(binlogs)], str(tmp_path / "stop"))
    lake = tmp_path / "lake"
    result = ingest(
        SparkRunner(spark),
        [str(binlogs)],
        str(lake),
        read=ReadSpec(on_error="skip-transaction"),
        split_bytes=split_bytes,
    )
    assert [(s.file, s.start) for s in result.skips] == [(src.name, 2109)]
    assert "1 damaged stretch(es) skipped" in summary(result)
    skips = _delta(lake / "_skips").to_pylist()
    assert len(skips) == 1 and skips[0]["start"] == 2109 and "CRC32" in skips[0]["reason"]
    assert skips[0]["transaction_start"] is not None
    ri = {r["id"]: r for r in _delta(lake / "corpus_stmt" / "ri" / "current").to_pylist()}
    assert ri[1]["a"] == 1000 and 2109 not in {
        r["_pos"] for r in _delta(lake / "corpus_stmt" / "ri" / "changes").to_pylist()
    }


def test_tables_command_lists_and_shows(corpus_lake: Location) -> None:
    """`binlake tables LAKE [TABLE]` reads the Delta logs (no Spark): names as the source named them, row counts."""
    import argparse
    import io

    from binlake.cli import build_parser
    from binlake.cli.tables import run as tables_main
    from binlake.errors import BinlogError

    out = io.StringIO()
    assert tables_main(argparse.Namespace(lake=corpus_lake.uri, table=None, limit=None, batch=None), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[1].split() == ["TABLE", "KIND", "ROWS", "COLUMNS", "VERSION"]
    rows = {tuple(line.split()[:2]): line.split()[2:4] for line in lines[2:]}
    current = _delta(corpus_lake / "corpus_dml" / "accounts" / "current")
    assert rows[("corpus_dml.accounts", "current")] == [str(current.num_rows), str(current.num_columns)]
    assert ("_events", "events") in rows and ("_schema_history", "schema_history") in rows
    out = io.StringIO()
    assert (
        tables_main(argparse.Namespace(lake=corpus_lake.uri, table="corpus_dml.accounts", limit=3, batch=None), out)
        == 0
    )
    shown = out.getvalue().splitlines()
    assert shown[0] == f"corpus_dml.accounts (current): {current.num_rows} rows, {current.num_columns} columns"
    first = current.sort_by("_seq").to_pylist()[0]
    assert shown[1].split()[:3] == ["id", "owner", "balance"]
    assert shown[2].split()[:2] == [str(first["id"]), first["owner"]] and len(shown) == 6
    assert shown[-1] == f"... {current.num_rows - 3} more rows (--limit N)"
    with pytest.raises(BinlogError, match=r"no table 'no\.such' in .*binlake tables LAKE"):
        tables_main(argparse.Namespace(lake=corpus_lake.uri, table="no.such", limit=3, batch=None), io.StringIO())
    with pytest.raises(BinlogError, match="--limit N is the rows shown of a TABLE"):
        tables_main(argparse.Namespace(lake=corpus_lake.uri, table=None, limit=3, batch=None), io.StringIO())
    # the command is registered without importing Spark
    code = "import sys; from binlake.cli import build_parser; build_parser(['tables']); print('pyspark' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), *sys.path])}
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout == "False\n"
    assert build_parser(["tables"]).parse_args(["tables", "lk", "--limit", "2"]).limit == 2


class _FakeStage:
    numCompletedTasks = 3
    numTasks = 8


class _FakeSpark:
    class sparkContext:
        @staticmethod
        def statusTracker() -> Any:
            class T:
                def getActiveStageIds(self) -> list[int]:
                    return [1]

                def getStageInfo(self, sid: int) -> Any:
                    return _FakeStage()

            return T()


def test_progress_bar_on_a_tty_log_lines_otherwise() -> None:
    import io

    from binlake.ingest.progress import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, log = Tty(), io.StringIO()
    for stream in (tty, log):
        Progress(SparkRunner(_FakeSpark()), stream, interval=0.01).run("decode", lambda: time.sleep(0.1))
    assert "\r\x1b[Kdecode     [###########...................] 3/8 tasks" in tty.getvalue()
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("binlake ingest: decode: 3/8 tasks") and len(lines) == 2  # one line per change
    assert "\r" not in log.getvalue() and lines[-1].startswith("binlake ingest: decode: done in ")


def test_a_quiet_progress_says_nothing_while_nothing_happens() -> None:
    """``ingest --follow`` (``Progress(quiet=True)``): a batch with nothing new shows nothing (it logged "plan: done"
    and "nothing new" every interval); a batch that lands something shows its lines, in order."""
    import io

    from binlake.ingest.progress import Progress

    stream = io.StringIO()
    progress = Progress(None, stream, quiet=True)
    for _ in range(3):
        progress.timed("plan", lambda: None)
        progress.detail("nothing new")
        progress.idle()
    assert stream.getvalue() == ""
    progress.timed("plan", lambda: None)
    progress.log("batch 4: 1 splits of 1 files")
    progress.timed("scan", lambda: None)
    progress.run("decode", lambda: None)
    lines = [line.split(" in ")[0] for line in stream.getvalue().splitlines()]
    assert lines == [f"binlake ingest: {t}" for t in ("plan: done", "batch 4: 1 splits of 1 files", "scan: done",
                                                      "decode: done")]  # fmt: skip
