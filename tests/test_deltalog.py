"""binlake's own Delta commits (binlake.lake.deltalog): the log replayed as delta-rs sees it, the protocol upgrade
that gives a table deletion vectors, commits made once (put-if-absent on a local disk and on S3, the fence, a lost
race planned again), and what the rest of delta-rs does with a table that has DVs (checkpoints, metadata cleanup,
time travel, appends, vacuum, compaction), which binlake's maintenance relies on or must do itself."""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")
pytest.importorskip("pyroaring", reason="pyroaring not installed: pip install -e '.[spark]'")

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from binlake.lake import Lake, LeaseLost, deltalog
from binlake.lake.delta import commit_files, read_table, write_parquet
from binlake.lake.records import LakeFormatError
from binlake.lake.show import show_table
from binlake.storage import Location, StorageError, locate
from binlake.testing import readers


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A table folder: local, or a prefix of a new bucket on the session's S3 server (its variables set here)."""
    if request.param == "local":
        yield str(tmp_path / "t")
        return
    server = request.getfixturevalue("s3_server")
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    yield f"s3://{server.bucket()}/t"


def _table(loc: Location, files: int = 2, rows: int = 1000, **options: Any) -> list[str]:
    """``files`` files of ``rows`` rows each (``id`` 0, 1, ...) appended by deltalake; their paths, oldest first."""
    for f in range(files):
        ids = pa.array(range(f * rows, (f + 1) * rows), pa.int64())
        write_deltalake(loc.delta_uri, pa.table({"id": ids}), mode="append", storage_options=loc.delta_options(),
                        **options)  # fmt: skip
    snap = deltalog.read_snapshot(loc)
    assert snap is not None
    return sorted(snap.files, key=lambda p: snap.files[p]["modificationTime"])


def _ids(loc: Location, version: int | None = None) -> dict[str, list[int]]:
    """The sorted ids each reader sees (DuckDB's for local tables' newest version)."""
    names = [r for r in readers.available() if r != "duckdb" or (loc.is_local and version is None)]
    out = {r: sorted(readers.read_with(r, loc, version)["id"].to_pylist()) for r in names}
    mine = read_table(loc, version)
    assert mine is not None
    out["binlake"] = sorted(mine["id"].to_pylist())
    return out


def _same(seen: dict[str, list[int]], expected: list[int]) -> None:
    assert all(ids == expected for ids in seen.values()), {r: len(ids) for r, ids in seen.items()}


def _delete(loc: Location, batch: int, rows: dict[str, list[int]]) -> int | None:
    def deletes(snap: deltalog.Snapshot) -> dict[str, Any]:
        return {p: np.array(r, np.uint64) for p, r in rows.items()}

    return deltalog.commit_batch(loc, batch=batch, app_id="t", fence=lambda: None, deletes=deletes)


# -- the log ------------------------------------------------------------------------------------------------------


def test_snapshot_is_the_log_delta_rs_reads(tmp_path: Path) -> None:
    loc = locate(str(tmp_path))
    assert deltalog.read_snapshot(loc) is None
    files = _table(loc, 3, configuration={"delta.checkpointInterval": "4"})
    _delete(loc, 1, {files[0]: [1, 2]})  # version 3
    _delete(loc, 2, {files[1]: list(range(0, 1000, 2))})  # version 4: a checkpoint by delta-rs (interval 4)
    assert (tmp_path / "_delta_log" / f"{4:020d}.checkpoint.parquet").exists()
    dt = DeltaTable(str(tmp_path))
    snap = deltalog.read_snapshot(loc)
    assert snap is not None and snap.version == dt.version() == 4
    assert set(snap.files) == {p.rsplit("/", 1)[-1] for p in dt.file_uris()}
    assert snap.txns == {"t": 2} and dt.transaction_version("t") == 2
    assert snap.schema == pa.schema(dt.schema().to_arrow())
    assert [snap.live_records(p) for p in files] == [998, 500, 1000]
    from_checkpoint = snap
    (tmp_path / "_delta_log" / f"{4:020d}.checkpoint.parquet").rename(tmp_path / "aside.parquet")
    from_json = deltalog.read_snapshot(loc)
    assert from_json is not None
    assert (from_json.files, from_json.txns, from_json.protocol, from_json.metadata) == (
        from_checkpoint.files, from_checkpoint.txns, from_checkpoint.protocol, from_checkpoint.metadata)  # fmt: skip
    older = deltalog.read_snapshot(loc, 2)
    assert older is not None and older.version == 2 and len(older.files) == 3 and older.txns == {}
    with pytest.raises(StorageError, match="no version 9"):
        deltalog.read_snapshot(loc, 9)


def _snapshot(protocol: dict[str, Any], configuration: dict[str, str] | None = None) -> deltalog.Snapshot:
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    )
    meta = {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
            "partitionColumns": [], "configuration": configuration or {}}  # fmt: skip
    return deltalog.Snapshot(locate("/nowhere"), 5, protocol, meta, {}, {})


@pytest.mark.parametrize(
    ("protocol", "readers_", "writers"),
    [
        ({"minReaderVersion": 1, "minWriterVersion": 2}, ["deletionVectors"],
         ["appendOnly", "deletionVectors", "invariants"]),
        ({"minReaderVersion": 2, "minWriterVersion": 5}, ["columnMapping", "deletionVectors"],
         ["appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "deletionVectors", "generatedColumns",
          "invariants"]),
        ({"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly"]}, ["deletionVectors"],
         ["appendOnly", "deletionVectors"]),
        ({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"],
          "writerFeatures": ["timestampNtz"]}, ["deletionVectors", "timestampNtz"],
         ["deletionVectors", "timestampNtz"]),
    ],
    ids=["1-2", "2-5", "1-7", "3-7"],
)  # fmt: skip
def test_protocol_upgrade_keeps_what_legacy_versions_implied(
    protocol: dict[str, Any], readers_: list[str], writers: list[str]
) -> None:
    """PROTOCOL.md, "Table Features for New and Existing Tables": an upgrade lists every feature the old versions
    implied (it cannot prove one was never used); a reader feature is a writer feature too."""
    actions = deltalog.table_actions(_snapshot(protocol), deletion_vectors=True)
    assert actions[0] == {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": readers_,
                                       "writerFeatures": writers}}  # fmt: skip
    assert actions[1]["metaData"]["configuration"] == {"delta.enableDeletionVectors": "true"}
    upgraded = _snapshot(actions[0]["protocol"], {"delta.enableDeletionVectors": "true"})
    assert deltalog.table_actions(upgraded, deletion_vectors=True) == []
    grown = deltalog.table_actions(upgraded, schema=pa.schema([("id", pa.int64()), ("b", pa.string())]))
    assert [f["name"] for f in json.loads(grown[0]["metaData"]["schemaString"])["fields"]] == ["id", "b"]


def test_tables_binlake_cannot_respect_are_refused() -> None:
    legacy = {"minReaderVersion": 1, "minWriterVersion": 4}
    for config, what in [({"delta.appendOnly": "true"}, "delta.appendOnly"),
                         ({"delta.enableChangeDataFeed": "true"}, "change data feed"),
                         ({"delta.constraints.positive": "id > 0"}, "CHECK constraints"),
                         ({"delta.columnMapping.mode": "name"}, "column mapping")]:  # fmt: skip
        with pytest.raises(LakeFormatError, match=f"cannot write this Delta table: {what}"):
            _snapshot(legacy, config).check(write=True)
    _snapshot(legacy, {"delta.appendOnly": "true"}).check(write=False)  # reading it is fine
    future = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
              "writerFeatures": ["v2Checkpoint", "rowTracking"]}  # fmt: skip
    with pytest.raises(LakeFormatError, match="cannot read this Delta table: v2Checkpoint"):
        _snapshot(future).check(write=False)
    with pytest.raises(LakeFormatError, match="cannot write this Delta table: rowTracking, v2Checkpoint"):
        _snapshot(future).check(write=True)


# -- commits --------------------------------------------------------------------------------------------------------


def test_put_if_absent(root: str) -> None:
    """Of two writers creating one file, one writes it and the other is told (and leaves it as it was)."""
    loc = locate(root) / "_delta_log" / f"{1:020d}.json"
    assert loc.create_bytes(b"first")
    assert not loc.create_bytes(b"second")
    assert loc.read_bytes() == b"first"
    if loc.is_local:
        assert sorted(os.listdir(os.path.dirname(loc.uri))) == [loc.name]  # no temporary file left behind


def test_a_batch_commits_once_with_its_dvs(root: str) -> None:
    """A batch's new file, the rows it deletes (a DV inline, one in a file) and the columns it adds, in one commit
    with its application transaction; the same batch again commits nothing; every reader sees the same rows."""
    loc = locate(root)
    files = _table(loc)
    new = write_parquet(pa.table({"id": pa.array([5000, 5001], pa.int64()), "b": ["x", "y"]}), loc, "")

    def deletes(snap: deltalog.Snapshot) -> dict[str, Any]:
        return {files[0]: np.array([3], np.uint64), files[1]: np.arange(0, 1000, 2, dtype=np.uint64)}

    version = deltalog.commit_batch(loc, batch=4, app_id="binlake-ingest", fence=lambda: None, adds=new,
                                    deletes=deletes, schema=new[0].arrow_schema)  # fmt: skip
    assert version == 2
    again = deltalog.commit_batch(loc, batch=4, app_id="binlake-ingest", fence=lambda: None, adds=new,
                                  deletes=deletes, schema=new[0].arrow_schema)  # fmt: skip
    assert again is None
    dt = DeltaTable(loc.delta_uri, storage_options=loc.delta_options())
    assert dt.version() == 2 and dt.transaction_version("binlake-ingest") == 4
    assert dt.schema().to_arrow().names == ["id", "b"]  # type: ignore[union-attr]
    history = dt.history(1)[0]
    assert history["operation"] == "MERGE" and history["readVersion"] == 1
    expected = sorted({*range(2000), 5000, 5001} - {3, *range(1000, 2000, 2)})
    _same(_ids(loc), expected)
    mine = read_table(loc)
    assert mine is not None and sorted(mine.filter(pa.compute.field("id") >= 5000)["b"].to_pylist()) == ["x", "y"]


def _first_batch(new: list[Any]) -> Any:
    def plan(snap: deltalog.Snapshot) -> list[deltalog.Action] | None:
        if snap.txns.get("binlake-ingest", -1) >= 1:
            return None
        actions = deltalog.table_actions(snap) + [deltalog.new_file(f) for f in new]
        return [*actions, deltalog.txn("binlake-ingest", 1)]

    return plan


def test_a_table_is_created_with_its_first_files(root: str) -> None:
    """binlake's own version 0 (``commit(create=...)``): the protocol delta-rs would pick (reader 1 / writer 2;
    3 / 7 with ``timestampNtz`` for a DATETIME column), the metadata, the files with their tags and the batch in
    one commit, read by delta-rs; a writer that finds the table made meanwhile plans on it, and the batch is there
    once."""
    for name, schema in (("plain", pa.schema([("id", pa.int64())])),
                         ("ntz", pa.schema([("id", pa.int64()), ("d", pa.timestamp("us"))]))):  # fmt: skip
        loc = locate(root) / name
        rows = (
            pa.table({"id": pa.array([1, 2], pa.int64())})
            .append_column("d", pa.array([None, None], pa.timestamp("us")))
            .select(schema.names)
        )
        new = [replace(f, tags={"binlake.sortedBy": '["id"]'}) for f in write_parquet(rows, loc, "")]

        plan = _first_batch(new)
        assert deltalog.commit(loc, plan, fence=lambda: None, create=schema) == 0
        assert deltalog.commit(loc, plan, fence=lambda: None, create=schema) is None
        lines = [json.loads(line) for line in (loc / "_delta_log" / f"{0:020d}.json").read_bytes().splitlines()]
        assert [next(iter(a)) for a in lines] == ["commitInfo", "protocol", "metaData", "add", "txn"]
        assert lines[3]["add"]["tags"] == {"binlake.sortedBy": '["id"]'}
        dt = DeltaTable(loc.delta_uri, storage_options=loc.delta_options())
        assert dt.version() == 0 and dt.transaction_version("binlake-ingest") == 1
        assert pa.schema(dt.schema().to_arrow()) == schema
        protocol = dt.protocol()
        want = (1, 2) if name == "plain" else (3, 7)
        assert (protocol.min_reader_version, protocol.min_writer_version) == want
        if name == "ntz":
            assert protocol.reader_features == ["timestampNtz"]
        _same(_ids(loc), [1, 2])
    with pytest.raises(StorageError, match="no Delta table"):
        deltalog.commit(locate(root) / "none", lambda snap: [], fence=lambda: None)


def test_a_lost_race_is_planned_again(tmp_path: Path) -> None:
    """Another writer commits the version this one read + 1 first (delta-rs, appending): the commit is planned
    again on the new snapshot and lands on the next version; both writes are there."""
    loc = locate(str(tmp_path))
    files = _table(loc)
    seen: list[int] = []

    def plan(snap: deltalog.Snapshot) -> list[deltalog.Action]:
        seen.append(snap.version)
        if len(seen) == 1:
            write_deltalake(str(tmp_path), pa.table({"id": pa.array([7777], pa.int64())}), mode="append")
        return deltalog.table_actions(snap, deletion_vectors=True) + deltalog.delete_rows(
            snap, {files[0]: np.array([0], np.uint64)}
        )

    assert deltalog.commit(loc, plan, fence=lambda: None) == 3
    assert seen == [1, 2]
    _same(_ids(loc), sorted({*range(1, 2000), 7777}))


def test_racing_writers_commit_each_batch_once(tmp_path: Path) -> None:
    """Two threads commit 8 batches each to one table at once (the lease aside): every batch lands exactly once,
    on its own version."""
    loc = locate(str(tmp_path))
    _table(loc, 1, 10)
    versions: dict[str, list[int | None]] = {"a": [], "b": []}

    def writer(app: str) -> None:
        for batch in range(8):
            data = write_parquet(pa.table({"id": pa.array([batch], pa.int64())}), loc, "")
            versions[app].append(deltalog.commit_batch(loc, batch=batch, app_id=app, fence=lambda: None, adds=data))

    threads = [threading.Thread(target=writer, args=(app,)) for app in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    landed = [v for vs in versions.values() for v in vs]
    assert sorted(landed) == list(range(1, 17))  # type: ignore[type-var]
    snap = deltalog.read_snapshot(loc)
    assert snap is not None and snap.txns == {"a": 7, "b": 7}
    assert sorted(read_table(loc)["id"].to_pylist()) == sorted([*range(10), *range(8), *range(8)])  # type: ignore[index]


def test_the_fence_stops_a_writer_that_lost_its_lease(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loc = locate(str(tmp_path))
    files = _table(loc)

    def lost() -> None:
        raise LeaseLost("the lease was taken over")

    with pytest.raises(LeaseLost):
        deltalog.commit_batch(loc, batch=1, app_id="t", fence=lost,
                              deletes=lambda s: {files[0]: np.array([1], np.uint64)})  # fmt: skip
    assert DeltaTable(str(tmp_path)).version() == 1  # nothing committed
    monkeypatch.setattr(Location, "create_bytes", lambda self, data: False)  # every race lost
    monkeypatch.setattr(deltalog.time, "sleep", lambda s: None)
    with pytest.raises(StorageError, match="lost 8 races"):
        deltalog.commit_batch(loc, batch=1, app_id="t", fence=lambda: None,
                              deletes=lambda s: {files[0]: np.array([1], np.uint64)})  # fmt: skip


def test_lake_counts_and_shows_the_rows_left(tmp_path: Path) -> None:
    """``Lake.tables()`` counts each file's records less its DV's; ``binlake tables LAKE TABLE`` shows those rows."""
    lake = Lake(str(tmp_path))
    loc = lake.current("db/t")
    files = _table(loc)
    _delete(loc, 1, {files[0]: list(range(0, 1000, 3)), files[1]: [999]})
    (table,) = lake.tables()
    assert (table.name, table.kind, table.rows) == ("db.t", "current", 1000 - 334 + 999)
    assert table.rows == len(readers.read_with("deltalake", loc))
    out = io.StringIO()
    show_table(lake, table, 3, out)
    assert out.getvalue().startswith("db.t (current): 1665 rows, 1 columns\n")


# -- what the rest of delta-rs does with a table that has DVs --------------------------------------------------


def test_delta_rs_checkpoints_keep_dvs_and_time_travel(tmp_path: Path) -> None:
    """delta-rs' checkpoint keeps each file's DV descriptor: with the JSON commits before it cleaned up, every
    reader reads the table as before.  Time travel before and after the DVs gives each version's rows, until its
    commits are cleaned up."""
    loc = locate(str(tmp_path))
    files = _table(loc, configuration={"delta.logRetentionDuration": "interval 0 seconds"})
    held = DeltaTable(str(tmp_path))  # a reader's table object from before binlake's commits
    _delete(loc, 1, {files[0]: [0, 1]})
    _delete(loc, 2, {files[0]: list(range(100, 1000, 2)), files[1]: [5]})
    expected = sorted(set(range(2000)) - {0, 1, *range(100, 1000, 2), 1005})
    for version, rows in [(1, list(range(2000))), (2, list(range(2, 2000))), (3, expected)]:
        _same(_ids(loc, version), rows)
    held.update_incremental()  # delta-rs catches up with commits it did not make
    kept = {sum(keep) for keep in pa.table(held.deletion_vectors())["selection_vector"].to_pylist()}
    assert held.version() == 3 and kept == {548, 999}
    write_deltalake(str(tmp_path), pa.table({"id": pa.array([9000], pa.int64())}), mode="append")  # version 4
    dt = DeltaTable(str(tmp_path))
    assert dt.protocol().reader_features == ["deletionVectors"]  # a delta-rs append keeps the protocol
    dt.create_checkpoint()
    dt.cleanup_metadata()
    assert sorted(os.listdir(tmp_path / "_delta_log")) == [
        f"{4:020d}.checkpoint.parquet", f"{4:020d}.json", "_last_checkpoint"]  # fmt: skip
    _same(_ids(loc), [*expected, 9000])
    with pytest.raises(StorageError, match="no longer in its log"):
        read_table(loc, 2)


def test_the_ingest_s_delta_rs_appends_keep_the_dvs(tmp_path: Path) -> None:
    """The ingest still appends plain files with delta-rs (``create_write_transaction``; a new column by
    ``alter.add_columns``): to a table with DVs, they keep its protocol and its DVs."""
    loc = locate(str(tmp_path))
    files = _table(loc)
    _delete(loc, 1, {files[0]: list(range(0, 1000, 2))})
    before = DeltaTable(str(tmp_path)).protocol()
    data = pa.table({"id": pa.array([4000], pa.int64()), "z": ["new"]})
    assert commit_files(loc, write_parquet(data, loc, ""), data.schema, batch=2)
    dt = DeltaTable(str(tmp_path))
    after = dt.protocol()
    assert dt.version() == 4  # a commit adding the column, then the files
    assert (after.min_reader_version, after.min_writer_version) == (before.min_reader_version, 7)
    assert sorted(after.reader_features or []) == ["deletionVectors"]
    assert sorted(after.writer_features or []) == sorted(before.writer_features or [])
    _same(_ids(loc), sorted({*range(1, 1000, 2), *range(1000, 2000), 4000}))


def test_delta_rs_vacuum_and_compaction_with_dvs(tmp_path: Path) -> None:
    """Where binlake's maintenance cannot rely on delta-rs (1.6.6), pinned so a change shows:

    * ``vacuum`` (lite) never deletes a DV file, neither a replaced one nor one no commit references;
    * ``vacuum(full=True)`` deletes every DV file, the ones the table still uses too: the table is then unreadable
      by every reader.  Maintenance must delete DV files itself (those no version within retention references);
    * ``optimize.compact`` rewrites the files of a bin of several without their deleted rows, but leaves a file
      alone in its bin with its DV: purging DVs is maintenance's own work;
    * ``alter.set_table_properties`` on a table with table features lists ``variantType`` among its features
      (delta-spark reads that from 4.0 only): table properties must be set by binlake's own commits."""
    loc = locate(str(tmp_path))
    files = _table(loc)
    _delete(loc, 1, {files[0]: list(range(0, 1000, 2))})
    replaced = deltalog.read_snapshot(loc).files[files[0]]["deletionVector"]  # type: ignore[union-attr]
    _delete(loc, 2, {files[0]: list(range(1, 1000, 4))})
    used = deltalog.read_snapshot(loc).files[files[0]]["deletionVector"]  # type: ignore[union-attr]
    names = {d["pathOrInlineDv"] for d in (replaced, used)}
    assert len(names) == 2 and all(d["storageType"] == "u" for d in (replaced, used))
    dt = DeltaTable(str(tmp_path))
    assert dt.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False) == []
    full = dt.vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False, full=True)
    assert sorted(os.path.basename(p) for p in full) == sorted(
        f"deletion_vector_{deltalog.dvs.decode_uuid(n)[1]}.bin" for n in names)  # fmt: skip
    expected = sorted(set(range(2000)) - set(range(0, 1000, 2)) - set(range(1, 1000, 4)))
    _same(_ids(loc), expected)

    single = locate(str(tmp_path / "single"))
    (only,) = _table(single, 1)
    _delete(single, 1, {only: list(range(0, 1000, 2))})
    assert DeltaTable(single.uri).optimize.compact()["numFilesRemoved"] == 0
    kept = deltalog.read_snapshot(single).files[only]["deletionVector"]  # type: ignore[union-attr]
    assert (kept["storageType"], kept["cardinality"]) == ("u", 500)

    dt.optimize.compact()
    snap = deltalog.read_snapshot(loc)
    assert snap is not None and len(snap.files) == 1
    assert all("deletionVector" not in add for add in snap.files.values())
    _same(_ids(loc), expected)

    DeltaTable(str(tmp_path)).alter.set_table_properties({"delta.checkpointInterval": "10"})
    assert "variantType" in (DeltaTable(str(tmp_path)).protocol().reader_features or [])
    _same(_ids(loc), expected)  # binlake reads on: no column is of the variant type

    DeltaTable(single.uri).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False, full=True)
    for reader in readers.available():
        with pytest.raises(Exception, match="deletion_vector_"):
            readers.read_with(reader, single)
    with pytest.raises(StorageError, match="deletion_vector_"):
        read_table(single)
