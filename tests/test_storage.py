"""Binlogs read from anywhere: :mod:`binlake.storage` (URIs through pyarrow.fs) and the reader's ``Source`` path.

A binlog that is no local file is read as a stream in chunks and looked at through ``BufferedRanges``; everything
must come out as from the memory-mapped local file: the same headers, events, errors and skips, on every corpus
file, on damaged copies and on random bytes, with chunks small enough that events straddle them and outgrow them.
Then the same through a real S3 server (moto): listing, reading, ``binlake dump`` and ``binlake events`` of URIs.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake import reader
from binlake.errors import BinlogError
from binlake.reader import BufferedRanges, Source, header_table, read_events, walk_headers
from binlake.recovery import read_events_recovering
from binlake.storage import Location, StorageError, StoredFile, binlog_source, locate
from test_walk import Outcome, binlog_images, corpus_files, damaged_copies, rows  # tests/ is on sys.path

REPO = Path(__file__).resolve().parents[1]


class FileSource:
    """A local file read as a :class:`~binlake.reader.Source` (a stream, no memory map), counting its opens."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.opens = 0

    @property
    def name(self) -> str:
        return str(self.path)

    def size(self) -> int:
        return self.path.stat().st_size

    def open(self) -> BinaryIO:
        self.opens += 1
        return open(self.path, "rb")

    def identity(self) -> tuple[object, ...]:
        st = self.path.stat()
        return (st.st_size, st.st_mtime_ns)


@pytest.fixture(params=[97, 4096])
def small_chunks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Source reads of ``request.param`` bytes: events straddle chunks, and many are larger than one."""
    chunk: int = request.param
    monkeypatch.setattr(reader, "SOURCE_CHUNK", chunk)
    monkeypatch.setattr(reader, "FIRST_SOURCE_CHUNK", chunk)
    return chunk


def _outcome(walk: Callable[..., Any], *args: Any) -> Outcome:
    """The rows and the error of ``walk(*args)`` (a header table or walk; a file that is no binlog raises at once)."""
    try:
        return rows(walk(*args))
    except BinlogError as e:
        return [], (type(e), e.pos, str(e))


def test_a_file_source_is_a_source(tmp_path: Path) -> None:
    assert isinstance(FileSource(tmp_path), Source) and not isinstance(str(tmp_path), Source)


def test_headers_of_a_source_equal_the_mapped_file(corpus_dir: Path, small_chunks: int) -> None:
    for path in corpus_files(corpus_dir):
        want = _outcome(header_table, path)
        assert _outcome(header_table, FileSource(path)) == want, path
        assert _outcome(walk_headers, FileSource(path)) == want, path
        if len(want[0]) > 8:
            start, stop = want[0][3][0], want[0][7][0] + 1
            assert _outcome(header_table, FileSource(path), start, stop) == _outcome(header_table, path, start, stop)


def test_headers_of_damaged_sources(corpus_dir: Path, tmp_path: Path, small_chunks: int) -> None:
    path = tmp_path / "copy.000001"
    for what, data in damaged_copies((corpus_dir / "mariadb/binlogs/corpus-bin.000009").read_bytes()):
        path.write_bytes(data)
        want = _outcome(header_table, path)
        assert _outcome(header_table, FileSource(path)) == want, what
        assert _outcome(walk_headers, FileSource(path)) == want, what


@settings(max_examples=200, deadline=None)
@given(data=binlog_images(), start=st.integers(0, 400), chunk=st.integers(19, 300))
def test_headers_of_random_sources(data: bytes, start: int, chunk: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.000001"
        path.write_bytes(data)
        old = reader.SOURCE_CHUNK
        reader.SOURCE_CHUNK = chunk
        try:
            assert _outcome(header_table, FileSource(path), start) == _outcome(header_table, path, start)
        finally:
            reader.SOURCE_CHUNK = old


def _events(events: Iterator[Any]) -> list[tuple[Any, ...]]:
    out = []
    try:
        for ev in events:
            out.append((ev.header.pos, ev.header.in_payload, ev.type, ev.summary()))
    except BinlogError as e:
        out.append((type(e), e.pos, e.message))
    return out


def test_events_of_a_source_equal_the_file(corpus_dir: Path, small_chunks: int) -> None:
    for path in sorted((corpus_dir / "mariadb" / "binlogs").glob("corpus-bin.0000*"))[:9]:
        want = _events(read_events(path))
        assert _events(read_events(FileSource(path))) == want, path
        positions = [e[0] for e in want if isinstance(e[0], int) and e[1] is None]
        if len(positions) > 6:
            a, b = positions[2], positions[6]
            assert _events(read_events(FileSource(path), start=a, stop=b)) == _events(
                read_events(path, start=a, stop=b)
            )


def test_a_damaged_source_recovers_as_the_file(corpus_dir: Path, tmp_path: Path, small_chunks: int) -> None:
    data = bytearray((corpus_dir / "mariadb/binlogs/corpus-bin.000008").read_bytes())
    data[2109 + 30] ^= 0xFF  # a CRC32 mismatch inside a rows event
    data[3000:3004] = b"\xff\xff\xff\x7f"  # garbage over an event's header: a resync
    path = tmp_path / "bad.000001"
    path.write_bytes(bytes(data))
    for mode in ("skip-event", "skip-transaction"):
        local = read_events_recovering(path, on_error=mode)  # type: ignore[arg-type]
        want = _events(local)
        stream = read_events_recovering(FileSource(path), on_error=mode)  # type: ignore[arg-type]
        assert _events(stream) == want
        assert [(s.start, s.end, s.reason) for s in stream.summary.skipped] == [
            (s.start, s.end, s.reason) for s in local.summary.skipped
        ]
        assert len(local.summary.skipped) >= 2


@settings(max_examples=100, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=3000),
    cuts=st.lists(st.tuples(st.integers(0, 3100), st.integers(0, 400)), max_size=20),
    block=st.integers(1, 700),
    blocks=st.integers(1, 4),
)
def test_buffered_ranges_are_the_bytes(data: bytes, cuts: list[tuple[int, int]], block: int, blocks: int) -> None:
    class Mem:
        name = "mem"

        def size(self) -> int:
            return len(data)

        def open(self) -> BinaryIO:
            return io.BytesIO(data)

        def identity(self) -> tuple[object, ...]:
            return (len(data),)

    with BufferedRanges(Mem(), block=block, blocks=blocks) as r:
        assert len(r) == len(data)
        for a, n in cuts:
            assert r[a : a + n] == data[a : a + n]
            buf, x, y = r.span(min(a, len(data)), min(a + n, len(data)))
            assert bytes(buf[x:y]) == data[min(a, len(data)) : min(a + n, len(data))]
            if a < len(data):
                assert r[a] == data[a]
            with pytest.raises(IndexError):
                r[len(data) + a]
        assert len(r._held) <= blocks  # bounded memory


def test_locations() -> None:
    assert locate("s3://bucket//a/b/").uri == "s3://bucket/a/b"
    assert locate("file:///data/a%20b").uri == "/data/a b" and locate("rel").uri == os.path.abspath("rel")
    lake = locate("gs://bucket/lake")
    assert (lake / "db" / "t").relative_to(lake) == "db/t" and (lake / "x").parent == lake
    assert lake.delta_uri == "gs://bucket/lake" and locate("gcs://b/l").delta_uri == "gs://b/l"
    for bad in ("..", "/etc", "a/../b", ""):
        with pytest.raises(ValueError):
            lake / bad
    with pytest.raises(StorageError, match="needs a bucket"):
        locate("s3:///key")
    with pytest.raises(StorageError, match="nosuchscheme"):
        locate("nosuchscheme://host/x").exists()
    assert binlog_source("/data/x") == "/data/x" and binlog_source("file:///data/x") == "/data/x"
    assert isinstance(binlog_source("s3://b/x"), StoredFile)


def test_a_location_pickles_as_its_uri() -> None:
    import pickle

    from binlake.lake import Lake

    lake = Lake("s3://bucket/lake")
    assert pickle.loads(pickle.dumps(lake)).root == lake.root
    assert b"secret" not in pickle.dumps(lake) and len(pickle.dumps(locate("s3://bucket/lake"))) < 200


def test_local_writes_are_atomic(tmp_path: Path) -> None:
    target = locate(tmp_path / "a" / "b.json")
    target.write_bytes(b"one")
    target.write_bytes(b"two")
    assert target.read_bytes() == b"two" and [e.location.name for e in target.parent.list()] == ["b.json"]


def test_a_transient_store_failure_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """An object store's write that fails once with an internal error (as moto and S3 do under load) is put again;
    an error that is not transient, or one that outlasts the retries, is a StorageError at once."""
    import binlake.storage as storage

    monkeypatch.setattr(storage.time, "sleep", lambda s: None)
    written: list[bytes] = []

    class Store:
        def __init__(self, failures: list[str]) -> None:
            self.failures = failures

        def open_output_stream(self, path: str) -> Any:
            store = self

            class Stream(io.BytesIO):
                def close(self) -> None:
                    if self.closed:
                        return
                    if store.failures:
                        super().close()
                        raise OSError(store.failures.pop(0))
                    written.append(self.getvalue())
                    super().close()

            return Stream()

    target = locate("s3://bucket/key")
    failures = ["AWS Error INTERNAL_FAILURE during CompleteMultipartUpload operation"]
    monkeypatch.setattr(storage, "_filesystem", lambda loc: (Store(failures), "bucket/key"))
    target.write_bytes(b"payload")
    assert written == [b"payload"] and failures == []
    failures += ["AWS Error ACCESS_DENIED during PutObject operation", "never reached"]
    with pytest.raises(StorageError, match="ACCESS_DENIED"):
        target.write_bytes(b"x")
    failures[:] = ["AWS Error SLOW_DOWN"] * storage._PUT_ATTEMPTS
    with pytest.raises(StorageError, match="SLOW_DOWN"):
        target.write_bytes(b"x")
    assert written == [b"payload"]


# -- through a real S3 server --------------------------------------------------------------------------------------


@pytest.fixture
def s3(s3_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, dict[str, str]]]:
    """A new bucket on the session's S3 server, its ``AWS_*`` variables in this test's environment."""
    env = s3_server.env()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    yield f"s3://{s3_server.bucket()}", env


def _upload(files: list[Path], folder: Location) -> None:
    for f in files:
        (folder / f.name).write_bytes(f.read_bytes())


def test_binlogs_listed_and_read_from_s3(corpus_dir: Path, s3: tuple[str, dict[str, str]]) -> None:
    from binlake.binlogs import list_binlogs
    from binlake.ingest.plan import plan_splits

    local = corpus_dir / "mariadb" / "binlogs"
    names = ["corpus-bin.000004", "corpus-bin.000005", "corpus-bin.000022"]
    folder = locate(s3[0]) / "binlogs"
    _upload([local / n for n in names], folder)
    (folder / "binlog.index").write_bytes(b"not a binlog\n")
    found = list_binlogs(folder.uri)
    assert [(f.name, f.seq, f.size) for f in found] == [(n, int(n[-6:]), (local / n).stat().st_size) for n in names]
    assert [f.name for f in list_binlogs(f"{folder.uri}/corpus-bin.00000*")] == names[:2]
    assert [f.name for f in list_binlogs(f"{folder.uri}/corpus-bin.000005")] == names[1:2]
    assert list_binlogs(f"{folder.uri}/nothing*") == []
    remote = StoredFile(folder / "corpus-bin.000004")
    assert _events(read_events(remote)) == _events(read_events(local / "corpus-bin.000004"))
    assert _outcome(header_table, remote) == _outcome(header_table, local / "corpus-bin.000004")
    split = plan_splits(found[:1], split_bytes=64 << 10)
    assert [(s.start, s.stop) for s in split] == [
        (s.start, s.stop) for s in plan_splits(list_binlogs(local / "corpus-bin.000004"), split_bytes=64 << 10)
    ]


@pytest.mark.parametrize("command", [["dump"], ["events"], ["stats"], ["explain", "--at", "548"]])
def test_decoding_commands_read_uris(corpus_dir: Path, s3: tuple[str, dict[str, str]], command: list[str]) -> None:
    """``binlake dump s3://...`` prints what ``binlake dump FILE`` prints (the file named as given)."""
    local = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"
    uri = f"{s3[0]}/corpus-bin.000004"
    locate(uri).write_bytes(local.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def run(path: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "binlake", command[0], path, *command[1:]], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.replace(path, "FILE")

    assert run(uri) == run(str(local))
    gone = [
        subprocess.run([sys.executable, "-m", "binlake", command[0], p, *command[1:]], env=env, capture_output=True)
        for p in (f"{s3[0]}/nothing", "/nothing")
    ]
    assert gone[0].returncode == gone[1].returncode != 0  # the command's own error, as for a missing local file
    assert b"Traceback" not in gone[0].stderr and b"nothing: not found" in gone[0].stdout + gone[0].stderr
