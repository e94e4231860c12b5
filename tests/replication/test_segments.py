"""A live ingest into an object store (moto) pays per batch, not per binlog: each batch uploads into ``_binlogs/`` the
bytes the server wrote since the last one (a segment ``NAME.part/OFFSET``) plus a small bound, not the growing copy
whole; the segments read as one file equal to the server's binlog byte for byte; a completed copy's in-use flag is
cleared in its small segment 0; ``binlake maintain`` removes a landed copy whole; a folder a mirror wrote before
segments (whole objects), continued by segments, reads right."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.replication.conftest import ReplServer

from binlake.binlogs import list_binlogs
from binlake.decoder import MAGIC
from binlake.events.base import LOG_EVENT_BINLOG_IN_USE_F
from binlake.lake.lake import Lake
from binlake.lake.runner import InProcessRunner
from binlake.storage import PART, SegmentedFile, binlog_pieces, locate, segment_name

pytestmark = pytest.mark.server
BOUND = 64 << 10  # bytes a batch may upload into _binlogs/ beyond the binlog bytes it brings
BATCHES = 20


@pytest.fixture
def s3_env(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The session's S3 server in this process's environment; a new bucket's URI."""
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    yield f"s3://{s3_server.bucket()}"


def _objects(bucket_uri: str) -> dict[str, tuple[str, int]]:
    """Every object of the bucket: key -> (ETag, size): a rewritten object has a new ETag."""
    import botocore.session

    client = botocore.session.get_session().create_client("s3")
    bucket = bucket_uri.split("://", 1)[1]
    found: dict[str, tuple[str, int]] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            found[o["Key"]] = (o["ETag"], int(o["Size"]))
    return found


def _copied(bucket_uri: str) -> int:
    """The bytes the lake's binlog copies hold, read as the ingest reads them."""
    return sum(f.size for f in list_binlogs(f"{bucket_uri}/lake/_binlogs"))


def test_a_live_batch_uploads_its_new_bytes(fresh_server: ReplServer, s3_env: str) -> None:
    from binlake.ingest.live import live_ingest
    from binlake.lake.maintain import maintain

    server = fresh_server.server
    stop = threading.Event()

    def workload() -> None:  # ~8 KiB of binlog every 0.1 s: the copy outgrows the bound within a few batches
        k = 0
        while not stop.is_set():
            k += 1
            server.execute(f"INSERT INTO r.t VALUES ({k}, {k}, REPEAT('w', 8000))")
            time.sleep(0.1)

    rows: list[tuple[int, int, int, int]] = []  # per batch: new binlog bytes, uploaded to _binlogs/, lake, copy size
    before, copied = _objects(s3_env), _copied(s3_env)

    def on_batch(_: Any) -> None:
        nonlocal before, copied
        now, size = _objects(s3_env), _copied(s3_env)
        changed = {k: s for k, (etag, s) in now.items() if before.get(k, ("", 0))[0] != etag}
        binlogs = sum(s for k, s in changed.items() if k.startswith("lake/_binlogs/"))
        rows.append((size - copied, binlogs, sum(changed.values()) - binlogs, size))
        before, copied = now, size

    thread = threading.Thread(target=workload)
    thread.start()
    try:
        live_ingest(InProcessRunner(), fresh_server.options(), f"{s3_env}/lake", from_start=True, follow=True,
                    interval=0.5, on_batch=on_batch, should_stop=lambda: len(rows) >= BATCHES)  # fmt: skip
    finally:
        stop.set()
        thread.join()
    print("batch  new binlog bytes  uploaded to _binlogs/  lake files  copy size")
    for i, (new, up, other, size) in enumerate(rows, 1):
        print(f"{i:5}  {new:16}  {up:21}  {other:10}  {size:9}")
    assert rows[-1][3] > 4 * BOUND  # the copy grew well past the bound: re-uploading it whole would show
    for i, (new, up, _, _) in enumerate(rows, 1):
        assert up <= new + BOUND, f"batch {i} uploaded {up} bytes into _binlogs/ for {new} new binlog bytes"

    # the copy, read as one file across its segments, is the server's binlog: a prefix of the file it writes
    (copy,) = list_binlogs(f"{s3_env}/lake/_binlogs")
    assert copy.path.endswith(PART) and len(binlog_pieces(locate(copy.path).parent, copy.name)) > BATCHES
    source = copy.source
    assert isinstance(source, SegmentedFile)
    with source.open() as f:
        ours = f.read()
    theirs = (server.datadir / copy.name).read_bytes()
    assert len(ours) == copy.size and theirs.startswith(ours)

    # maintenance merges the segments (one per sync) into one, segment 0 and the last one (the mirror goes on
    # after it) aside; the copy reads the same, and the mirror goes on after the merged chain below
    held = Lake(f"{s3_env}/lake")
    with held.writing():
        merged = maintain(held, only=["binlogs"])
    assert merged.segments_into == 1 and merged.segments > BATCHES - 3
    assert len(binlog_pieces(locate(copy.path).parent, copy.name)) == 3
    (again,) = list_binlogs(f"{s3_env}/lake/_binlogs")
    with again.source.open() as f:  # type: ignore[union-attr]
        assert f.read() == ours

    # the server goes on in the next file: a run to its end completes the copy, whose in-use flag is cleared in
    # segment 0 (the magic and the format description alone), and the copy is then the server's file
    server.flush_logs()
    live_ingest(InProcessRunner(), fresh_server.options(), f"{s3_env}/lake")
    segment0 = locate(f"{s3_env}/lake/_binlogs/{copy.name}{PART}/{segment_name(0)}").read_bytes()
    assert segment0.startswith(MAGIC) and len(segment0) < 512 and not segment0[21] & LOG_EVENT_BINLOG_IN_USE_F
    first = list_binlogs(f"{s3_env}/lake/_binlogs")[0]
    with first.source.open() as f:  # type: ignore[union-attr]
        assert f.read() == (server.datadir / copy.name).read_bytes()

    # maintenance removes the landed copy whole: every segment of it
    lake = Lake(f"{s3_env}/lake")
    with lake.writing():
        report = maintain(lake, only=["binlogs"], retention=0, now=time.time() + 60)
    assert report.binlogs == 1
    assert not any(k.startswith(f"lake/_binlogs/{copy.name}") for k in _objects(s3_env))
    assert [f.name for f in list_binlogs(f"{s3_env}/lake/_binlogs")] == [server.binlog_files()[-1].name]


def test_a_folder_of_whole_copies_and_segments_reads_as_one(s3_env: str) -> None:
    """A copy a mirror wrote before segments (the whole object ``NAME``) continued by segments after it, beside a
    whole copy and a segmented one: each reads as its bytes in order; a segment off the chain holds none."""
    folder = locate(f"{s3_env}/binlogs")
    body = MAGIC + bytes(range(256)) * 40
    (folder / "b.000001").write_bytes(body)  # whole, as before segments
    (folder / "b.000002").write_bytes(body[:1000])  # whole, continued by segments
    (folder / f"b.000002{PART}" / segment_name(1000)).write_bytes(body[1000:5000])
    (folder / f"b.000002{PART}" / segment_name(5000)).write_bytes(body[5000:])
    (folder / f"b.000003{PART}" / segment_name(0)).write_bytes(body[:100])  # segmented
    (folder / f"b.000003{PART}" / segment_name(100)).write_bytes(body[100:])
    (folder / f"b.000003{PART}" / segment_name(99999)).write_bytes(b"off the chain")
    found = list_binlogs(folder.uri)
    assert [(f.name, f.size) for f in found] == [(f"b.00000{n}", len(body)) for n in (1, 2, 3)]
    (one,) = list_binlogs(f"{folder.uri}/b.000003{PART}")  # a copy named by the folder of its segments
    assert (one.name, one.size, one.path) == ("b.000003", len(body), f"{folder.uri}/b.000003{PART}")
    for f in found:
        with f.source.open() as stream:  # type: ignore[union-attr]
            assert stream.read() == body
            stream.seek(990)
            assert stream.read(20) == body[990:1010]  # a range across two pieces


def _example() -> tuple[bytes, bytes]:
    """examples/example-bin.000001's FORMAT_DESCRIPTION (its in-use flag set, as a mirror writes it while the file
    grows) and the events after it."""
    data = (Path(__file__).parents[2] / "examples" / "example-bin.000001").read_bytes()
    size = int.from_bytes(data[4 + 9 : 4 + 13], "little")  # the event header's event_size (log_event.h)
    fde = bytearray(data[4 : 4 + size])
    fde[17] |= LOG_EVENT_BINLOG_IN_USE_F  # the header's flags (log_event.h: LOG_EVENT_BINLOG_IN_USE_F)
    return bytes(fde), data[4 + size :]


def test_a_sync_between_the_magic_and_the_format_description(s3_env: str) -> None:
    """A sync (the live ingest asks for one before each batch) that comes while a new copy holds the magic alone
    uploads nothing: segment 0 is the magic with the FORMAT_DESCRIPTION, and the copy's in-use flag is cleared when
    it is complete.  (A segment 0 of the magic alone made the clearing read past its end: the following ingest
    stopped with pyarrow's "Cannot seek past end of file" as Spark's failure.)"""
    from binlake.replication.mirror import _Copy

    fde, rest = _example()
    loc = locate(f"{s3_env}/binlogs") / "example-bin.000001"
    copy = _Copy(loc, existing=False)
    copy.flush(durable=True)  # the magic alone: nothing to upload
    assert binlog_pieces(loc.parent, loc.name) == []
    copy.write(fde)
    copy.flush(durable=True)
    copy.write(rest)
    copy.close(complete=True)
    pieces = binlog_pieces(loc.parent, loc.name)
    assert [p.offset for p in pieces] == [0, 4 + len(fde)]
    with SegmentedFile(loc.parent, loc.name).open() as f:
        assert f.read() == (Path(__file__).parents[2] / "examples" / "example-bin.000001").read_bytes()


def test_a_segment_0_of_the_magic_alone_is_cleared_in_its_next_segment(s3_env: str) -> None:
    """A copy binlake 0.1's mirror left with a segment 0 of the magic alone (a sync came between the magic and the
    FORMAT_DESCRIPTION), its FORMAT_DESCRIPTION at the start of segment 4: a restarted mirror that finds it complete
    clears the flag there, and leaves segment 0 as it is."""
    from binlake.replication.mirror import _recover

    fde, rest = _example()
    folder = locate(f"{s3_env}/binlogs")
    (folder / f"example-bin.000001{PART}" / segment_name(0)).write_bytes(MAGIC)
    (folder / f"example-bin.000001{PART}" / segment_name(4)).write_bytes(fde + rest)
    whole = MAGIC + fde + rest
    assert _recover(folder / "example-bin.000001") == len(whole)  # the example ends with its ROTATE
    with SegmentedFile(folder, "example-bin.000001").open() as f:
        assert f.read() == (Path(__file__).parents[2] / "examples" / "example-bin.000001").read_bytes()
    assert (folder / f"example-bin.000001{PART}" / segment_name(0)).read_bytes() == MAGIC
