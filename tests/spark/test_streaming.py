"""The streaming source (``spark.readStream.format("binlake")``, :mod:`binlake.spark.streaming`).

- Offsets: typed, versioned records; every offset the planner gives while a folder grows (appends cut anywhere,
  mid-event included) is the end of a whole transaction of the final files, and the ranges between consecutive
  offsets cover the files once, in order, with the batch source's rows.
- A folder grows while a query (Parquet sink, checkpoint) runs in a process of its own, SIGKILLed twice with its
  JVM and started again from its checkpoint; a last run with Trigger.AvailableNow catches up and stops.  The sink
  holds the batch source's rows over the final folder, each exactly once.
- maxBytesPerTrigger gives several micro-batches (one of them a transaction larger than the limit, whole);
  AvailableNow stops by itself.
- A server: a workload on a private MariaDB (restarted in the middle) streamed through a mirror into a sink equals
  the batch read of the server's files; the password (from a file) is in no plan, checkpoint or offset.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from tests.replication.conftest import PASSWORD, ReplServer, batch, fresh_server, tls_files  # noqa: F401

from binlake.binlogs import list_binlogs
from binlake.errors import BinlogError
from binlake.reader import header_table, read_events
from binlake.spark.datasource import read_split
from binlake.spark.streaming import StreamOffset, advance, available_end, stream_reader, stream_splits
from binlake.transactions import Transactions

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


# -- helpers ------------------------------------------------------------------------------------------------------


def final_sizes(files: list[Path]) -> dict[str, int]:
    """How long each file is at the end of the growth: whole, but the last one stops before its ROTATE (a file the
    server is still writing, ending with a whole transaction)."""
    sizes = {f.name: f.stat().st_size for f in files}
    last = header_table(files[-1])
    sizes[files[-1].name] = last.positions[len(last) - 1]
    return sizes


def boundaries(path: Path, size: int) -> set[int]:
    """Every position of ``path`` (first ``size`` bytes) where reading can start with a whole transaction next."""
    out = {4}
    trx = Transactions()
    for ev in read_events(path, stop=size):
        trx.event(ev)
        if not trx.open and trx.resume is not None:
            out.add(trx.resume)
    return out


def row_key(row: Any) -> tuple[Any, ...]:
    """A row of the changes view as a hashable tuple (maps as sorted items)."""
    d = row.asDict() if hasattr(row, "asDict") else dict(row)
    return tuple(tuple(sorted(v.items())) if isinstance(v, dict) else v for _, v in sorted(d.items()))


def arrow_rows(batches: Iterable[Any]) -> list[tuple[Any, ...]]:
    out = []
    for b in batches:
        for r in b.to_pylist():
            out.append(row_key({k: dict(v) if isinstance(v, list) else v for k, v in r.items()}))
    return out


class Grower:
    """Copies ``files`` into ``folder`` a chunk at a time (random sizes, cutting events anywhere), one file after
    another as a server writes them, up to :func:`final_sizes`."""

    def __init__(self, files: list[Path], folder: Path, seed: int = 7) -> None:
        self.data = {f.name: f.read_bytes() for f in files}
        self.sizes = final_sizes(files)
        self.order = [f.name for f in files]
        self.folder = folder
        self.rng = random.Random(seed)
        self.i, self.n = 0, 0

    @property
    def done(self) -> bool:
        return self.i >= len(self.order)

    def step(self, most: int = 200_000) -> None:
        if self.done:
            return
        name = self.order[self.i]
        self.n = min(self.sizes[name], self.n + self.rng.randint(1, most))
        with (self.folder / name).open("ab") as f:
            f.seek(0, os.SEEK_END)
            f.write(self.data[name][f.tell() : self.n])
        if self.n >= self.sizes[name]:
            self.i, self.n = self.i + 1, 0

    def finish(self) -> None:
        while not self.done:
            self.step(1 << 30)


# -- offsets, without Spark ---------------------------------------------------------------------------------------


def test_offset_record_round_trip_and_refusals() -> None:
    o = StreamOffset("binlog.000007", 1234, "0-1-9")
    assert StreamOffset.from_dict(o.to_dict()) == o
    assert list(o.to_dict()) == ["version", "file", "pos", "gtid"]
    assert StreamOffset.from_dict(StreamOffset(None).to_dict()).file is None
    for bad in (
        {"version": 2, "file": "b.1", "pos": 4, "gtid": None},
        {"version": 1, "file": "b.1", "pos": 3, "gtid": None},
        {"version": 1, "file": "../b.1", "pos": 4, "gtid": None},
        {"version": 1, "file": "b.1", "pos": 4},
        {"version": 1, "file": "b.1", "pos": 4, "gtid": None, "extra": 1},
        {"version": 1, "file": "b.1", "pos": True, "gtid": None},
    ):
        with pytest.raises(BinlogError):
            StreamOffset.from_dict(bad)


def test_a_range_ending_before_a_partial_event_reads_cleanly(workload_binlogs: Any, tmp_path: Path) -> None:
    """``read_events(stop=...)`` stops at ``stop`` without reading on into a partial event (the growing file's end
    that a micro-batch leaves for later)."""
    source = max(workload_binlogs.files, key=lambda p: p.stat().st_size)
    table = header_table(source)
    k = len(table) // 2
    cut = tmp_path / source.name
    cut.write_bytes(source.read_bytes()[: table.positions[k] + table.sizes[k] // 2])  # event k cut in half
    got = [ev.header.pos for ev in read_events(cut, stop=table.positions[k])]
    assert got == list(table.positions[:k])


def test_live_options_refuse_a_password_and_need_a_mirror() -> None:
    base = {"host": "127.0.0.1", "user": "u", "serverid": "7", "mirror": "m"}
    with pytest.raises(BinlogError, match="passwordFile") as e:
        stream_reader({**base, "password": "sekrit-pw"}, "changes", 1 << 20, read_split)
    assert "sekrit-pw" not in str(e.value)
    with pytest.raises(BinlogError, match="mirror"):
        stream_reader({k: v for k, v in base.items() if k != "mirror"}, "changes", 1 << 20, read_split)
    with pytest.raises(BinlogError, match="server-id"):
        stream_reader({**base, "serverid": "x"}, "changes", 1 << 20, read_split)
    with pytest.raises(BinlogError, match="startingPosition"):
        stream_reader({**base, "startingposition": "middle"}, "changes", 1 << 20, read_split)
    with pytest.raises(BinlogError, match="not both"):
        stream_reader({**base, "path": "/x"}, "changes", 1 << 20, read_split)


def test_offsets_while_a_folder_grows_are_whole_transaction_ends(workload_binlogs: Any, tmp_path: Path) -> None:
    files = workload_binlogs.files
    grower = Grower(files, tmp_path)
    whole = {name: boundaries(p, grower.sizes[name]) for name, p in zip(grower.order, files, strict=True)}
    offset = StreamOffset(None)
    rows: list[tuple[Any, ...]] = []
    ranges: list[tuple[str, int, int]] = []
    steps = 0
    while True:
        grower.step(150_000)
        listed = list_binlogs(tmp_path)
        end = advance(listed, offset, max_bytes=random.Random(steps).choice([None, 1, 50_000, 400_000]))
        steps += 1
        assert end.file is None or end.pos in whole[end.file], (end, "not the end of a whole transaction")
        if end.file is not None and end.file == grower.order[min(grower.i, len(files) - 1)] and not grower.done:
            assert end.pos <= grower.n or grower.n == 0  # nothing beyond what is there (a partial event left)
        for s in stream_splits(listed, offset, end, split_bytes=100_000):
            ranges.append((s.file.name, s.start, s.end))
            rows += arrow_rows(read_split(s, "changes"))
        if grower.done and end == offset:
            break
        offset = end
    assert steps > 20
    by_file: dict[str, list[tuple[int, int]]] = {}
    for name, a, b in ranges:
        by_file.setdefault(name, []).append((a, b))
    for name in grower.order:  # every byte once, in order
        pos = 4
        for a, b in by_file[name]:
            assert a == pos
            pos = b
        assert pos == grower.sizes[name]
    final = list_binlogs(tmp_path)
    assert available_end(final, StreamOffset(None)) == offset
    batch_rows = [r for f in final for s in stream_splits(final, StreamOffset(f.name), StreamOffset(f.name, f.size),
                  split_bytes=1 << 40) for r in arrow_rows(read_split(s, "changes"))]  # fmt: skip
    assert len(rows) > 1000
    assert Counter(rows) == Counter(batch_rows) and len(set(rows)) == len(rows)


def test_a_statement_at_the_end_of_a_growing_file_is_whole(workload_binlogs: Any, tmp_path: Path) -> None:
    """A DDL statement (a group without XID) ending a file still being written is whole once its statement is
    there: the header walk cannot tell, the event-level rule can."""
    source = next(f for f in workload_binlogs.files if f.stat().st_size > 5000)
    ends = []  # where a statement logged alone ends
    trx = Transactions()
    for ev in read_events(source):
        step = trx.event(ev)
        if step.ends and ev.type == "QUERY_EVENT":
            ends.append(ev.header.end_pos)
    assert ends
    copy = tmp_path / source.name
    for end in ends[:5]:
        copy.write_bytes(source.read_bytes()[:end])
        assert advance(list_binlogs(tmp_path), StreamOffset(None)) == StreamOffset(source.name, end)
        copy.write_bytes(source.read_bytes()[: end - 1])  # its last byte missing: the statement is not there yet
        assert advance(list_binlogs(tmp_path), StreamOffset(None)).pos < end


# -- Spark ----------------------------------------------------------------------------------------------------------


def spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return [row_key(r) for r in df.collect()]


def test_max_bytes_gives_several_micro_batches_and_available_now_stops(
    spark: Any, workload_binlogs: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "binlogs"
    folder.mkdir()
    for f in workload_binlogs.files:
        (folder / f.name).symlink_to(f)
    got: list[tuple[Any, ...]] = []
    sizes: list[int] = []

    def sink(df: Any, batch_id: int) -> None:
        rows = spark_rows(df)
        sizes.append(len(rows))
        got.extend(rows)

    query = (
        spark.readStream.format("binlake")
        .option("maxBytesPerTrigger", 1 << 20)
        .load(str(folder))
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300), "Trigger.AvailableNow did not stop"
    assert len(sizes) >= 4  # bounded by the limit: several micro-batches
    ends = [StreamOffset.from_dict(json.loads(p["sources"][0]["endOffset"])) for p in query.recentProgress]
    assert ends[-1].file == workload_binlogs.files[-1].name
    expected = spark_rows(spark.read.format("binlake").load(str(folder)))
    assert Counter(got) == Counter(expected) and len(got) == len(expected) > 1000


def run_child(folder: Path, ckpt: Path, out: Path, mode: str, max_bytes: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "tests.spark._stream_child", str(folder), str(ckpt), str(out), mode, str(max_bytes)]
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def commits(ckpt: Path) -> int:
    d = ckpt / "commits"
    return len([p for p in d.iterdir() if p.name.isdigit()]) if d.is_dir() else 0


def kill_after(proc: subprocess.Popen[str], ckpt: Path, more: int, grower: Grower, timeout: float = 240) -> None:
    """Grow the folder while the query commits ``more`` micro-batches, then SIGKILL it (driver and JVM)."""
    want = commits(ckpt) + more
    deadline = time.monotonic() + timeout
    while commits(ckpt) < want:
        assert proc.poll() is None, f"the query died: {proc.stdout.read() if proc.stdout else ''}"
        assert time.monotonic() < deadline, "the query made no progress"
        grower.step(120_000)
        time.sleep(0.15)
    time.sleep(random.Random(want).random() * 0.5)  # somewhere inside the next micro-batch
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_growing_folder_streamed_exactly_once_across_sigkills(
    spark: Any, workload_binlogs: Any, tmp_path: Path
) -> None:
    folder, ckpt, out = tmp_path / "binlogs", tmp_path / "ckpt", tmp_path / "out"
    folder.mkdir()
    grower = Grower(workload_binlogs.files, folder, seed=13)
    grower.step(30_000)
    max_bytes = 256 << 10
    for _ in range(2):
        kill_after(run_child(folder, ckpt, out, "follow", max_bytes), ckpt, 3, grower)
    grower.finish()
    done = run_child(folder, ckpt, out, "available", 4 * max_bytes)  # offsets do not depend on the limit
    output, _ = done.communicate(timeout=600)
    assert done.returncode == 0, output[-3000:]
    got = spark_rows(spark.read.parquet(str(out)))
    expected = spark_rows(spark.read.format("binlake").load(str(folder)))
    assert len(expected) > 1000
    assert Counter(got) == Counter(expected), "not exactly once"
    assert commits(ckpt) >= 8


# -- a server -----------------------------------------------------------------------------------------------------


@pytest.mark.server
def test_a_server_streamed_through_a_mirror(spark: Any, fresh_server: ReplServer, tmp_path: Path) -> None:  # noqa: F811
    server = fresh_server.server
    pw = tmp_path / "pw"
    pw.write_text(PASSWORD + "\n")
    mirror, ckpt = tmp_path / "mirror", tmp_path / "ckpt"
    got: list[tuple[Any, ...]] = []

    def sink(df: Any, batch_id: int) -> None:
        got.extend(spark_rows(df))

    def start(trigger: dict[str, Any], starting: str = "earliest", ckpt: Path = ckpt, mirror: Path = mirror) -> Any:
        df = (
            spark.readStream.format("binlake")
            .option("host", "127.0.0.1")
            .option("port", server.port)
            .option("user", "repl_native")
            .option("serverId", 4343)
            .option("passwordFile", str(pw))
            .option("mirror", str(mirror))
            .option("startingPosition", starting)
            .option("maxBytesPerTrigger", 1 << 20)
            .load()
        )
        return df.writeStream.foreachBatch(sink).option("checkpointLocation", str(ckpt)).trigger(**trigger).start()

    query = start({"processingTime": "300 milliseconds"})
    for k in range(1, 9):  # in this thread: a server lives as long as the thread that started it
        batch(server, k, big=k % 3 == 0)
        if k == 4:
            server.restart()  # a STOP event, a new file; the mirror reconnects
        time.sleep(0.3)
    assert query.isActive, query.exception()
    plan = query._jsq.streamingQuery().explainInternal(True)  # the last micro-batch's plans, options included
    assert "binlake" in plan and PASSWORD not in plan, plan
    time.sleep(1)
    query.stop()
    query = start({"availableNow": True})  # the same checkpoint: catch up and stop
    assert query.awaitTermination(300)
    assert query.exception() is None
    files = server.binlog_files()
    expected = spark_rows(spark.read.format("binlake").load(str(files[0].parent / f"{server.binlog_basename}.[0-9]*")))
    assert len(expected) > 400
    assert Counter(got) == Counter(expected)
    for p in [*ckpt.rglob("*"), *mirror.rglob("*")]:
        if p.is_file():
            assert PASSWORD.encode() not in p.read_bytes(), p
    last = StreamOffset.from_dict(json.loads(query.lastProgress["sources"][0]["endOffset"]))
    assert last.gtid == server.query("SELECT @@gtid_binlog_pos")[0][0]  # every group streamed, the state followed

    # startingPosition=latest: a new query (checkpoint, mirror) starts at the server's end, takes only what follows
    got.clear()
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    later = {"starting": "latest", "ckpt": tmp_path / "ckpt2", "mirror": tmp_path / "mirror2"}
    query = start({"availableNow": True}, **later)
    assert query.awaitTermination(300) and query.exception() is None and got == []
    batch(server, 9)
    query = start({"availableNow": True}, **later)
    assert query.awaitTermination(300) and query.exception() is None
    new = spark_rows(spark.read.format("binlake").load(str(files[0].parent / str(file))).where(f"pos >= {pos}"))
    assert len(new) > 40 and Counter(got) == Counter(new)
