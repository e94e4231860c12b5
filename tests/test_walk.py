"""The header walk in C (``binlake._framing.walk``) against the Python one, and the planning and scanning built on it.

Both walks must give the same headers and stop with the same error at the same position on every corpus binlog, on
truncated and damaged copies of them, and on random bytes; :func:`~binlake.ingest.plan.plan_splits` and
:func:`~binlake.ingest.statements.scan_statements` must give the same splits and statements whichever walk runs,
with or without a shared :class:`~binlake.reader.HeaderCache`, and the splits those of the planner before the
header tables (``reference_plan`` below: the loop over :func:`~binlake.reader.walk_headers` it replaced).
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake import reader
from binlake.binlogs import BinlogFile, list_binlogs
from binlake.crypto import load_key_file, mariadb_decryptor
from binlake.decoder import MAGIC
from binlake.errors import BinlogError, MalformedError, TruncatedError
from binlake.events.base import EventType
from binlake.ingest import plan, statements
from binlake.ingest.plan import plan_splits
from binlake.ingest.statements import ReadSpec, Statement, scan_statements
from binlake.lake.records import Split
from binlake.reader import HeaderCache, HeaderInfo, HeaderTable, header_table, walk_headers
from binlake.schema import SchemaTracker

try:
    from binlake import _framing
    from binlake._framing import walk as compiled_walk
except ImportError:  # not built
    _framing = compiled_walk = None  # type: ignore[assignment]

needs_c = pytest.mark.skipif(compiled_walk is None, reason="binlake._framing was not built")

Outcome = tuple[list[tuple[int, int, int, int, int]], tuple[type[BinlogError], int | None, str] | None]


def corpus_files(corpus: Path) -> list[Path]:
    """Every file of the MariaDB binlogs and of the MySQL corpus (some are damaged, one is no binlog at all)."""
    mariadb = sorted((corpus / "mariadb" / "binlogs").glob("*-bin.*"))
    return mariadb + sorted(p for p in (corpus / "mysql").rglob("*") if p.is_file())


def rows(headers: Iterator[HeaderInfo] | HeaderTable) -> Outcome:
    """The headers a walk yields, and the error it raises after them (class, position, text)."""
    out = []
    try:
        for h in headers:
            out.append((h.pos, h.type_code, h.size, h.flags, h.timestamp))
    except BinlogError as e:
        return out, (type(e), e.pos, str(e))
    return out, None


def table_rows(path: Path, start: int = 4, stop: int | None = None) -> Outcome:
    try:
        return rows(header_table(path, start, stop))
    except BinlogError as e:  # not a binlog at all: raised before any row, like walk_headers
        return [], (type(e), e.pos, str(e))


@pytest.fixture(params=["c", "python"])
def walk_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with the C walk and with the Python walk."""
    kind: str = request.param
    if kind == "c" and compiled_walk is None:
        pytest.skip("binlake._framing was not built")
    monkeypatch.setattr(reader, "_framing", _framing if kind == "c" else None)
    return kind


def with_walk(monkeypatch: pytest.MonkeyPatch, compiled: bool, f: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """``f(*args, **kw)`` with the C walk (``compiled``) or the Python walk."""
    with monkeypatch.context() as m:
        m.setattr(reader, "_framing", _framing if compiled else None)
        return f(*args, **kw)


# -- the walk -----------------------------------------------------------------------------------------------------


def test_walks_agree_on_every_corpus_file(corpus_dir: Path, walk_kind: str) -> None:
    files = corpus_files(corpus_dir)
    assert len(files) > 60
    for path in files:
        assert table_rows(path) == rows(walk_headers(path)), path


def test_the_walk_of_known_files(corpus_dir: Path, walk_kind: str) -> None:
    """Values from mysql-INDEX.md: json.binlog.000001 (4011 bytes) holds 36 events of these types, and the damage
    the index documents in three other files."""
    t = header_table(corpus_dir / "mysql/rust_mysql_common/json.binlog.000001")
    assert len(t) == 36 and t.end == 4011 and t.error() is None and t.positions[0] == 4
    assert all(a + s == b for a, s, b in zip(t.positions, t.sizes, t.positions[1:], strict=False))
    histogram = {code: t.codes.count(code) for code in set(t.codes)}
    assert histogram == {34: 8, 2: 8, 19: 6, 16: 6, 30: 4, 15: 1, 39: 1, 35: 1, 31: 1}
    assert t.flags[0] & 1  # "FDE flagged LOG_EVENT_BINLOG_IN_USE_F"
    short = rows(header_table(corpus_dir / "mysql/rust_mysql_common/binlog_truncated_event.000001"))
    assert short[0] == [] and short[1] is not None and short[1][:2] == (TruncatedError, 4)  # magic + 10 bytes
    gtid = rows(header_table(corpus_dir / "mysql/rust_mysql_common/binlog_truncated_prev_gtid_event.000001"))
    assert gtid[1] is not None and gtid[1][:2] == (TruncatedError, 120) and gtid[0][-1][0] + gtid[0][-1][2] == 120
    with pytest.raises(MalformedError, match="bad magic"):
        header_table(corpus_dir / "mysql/canal/tsdb_mysql-bin.000001")


def damaged_copies(data: bytes) -> Iterator[tuple[str, bytes]]:
    """Truncations at and around every event boundary, and every event's size field set to 0, 18, 19 and beyond
    the file."""
    ends = [4]
    while ends[-1] + 19 <= len(data):
        size = int.from_bytes(data[ends[-1] + 9 : ends[-1] + 13], "little")
        if size < 19 or ends[-1] + size > len(data):
            break
        ends.append(ends[-1] + size)
    for end in ends:
        for cut in (end - 1, end + 1, end + 18, end + 19, end + 20):
            if 4 <= cut < len(data):
                yield f"cut at {cut}", data[:cut]
        if end + 13 <= len(data):
            for size in (0, 18, 19, len(data)):
                yield f"size {size} at {end}", data[: end + 9] + struct.pack("<I", size) + data[end + 13 :]


@pytest.mark.parametrize(
    "rel",
    [
        "mariadb/binlogs/corpus-bin.000009",
        "mysql/rust_mysql_common/json.binlog.000001",
        "mysql/rust_mysql_common/binlog_transaction_with_GTID.000001",
    ],
)
def test_walks_agree_on_damaged_copies(
    corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    if compiled_walk is None:
        pytest.skip("binlake._framing was not built")
    source = corpus_dir / rel
    path = tmp_path / "copy.000001"
    errors: set[type[BinlogError]] = set()
    for what, data in damaged_copies(source.read_bytes()):
        path.write_bytes(data)
        want = rows(walk_headers(path))
        for compiled in (True, False):
            assert with_walk(monkeypatch, compiled, table_rows, path) == want, (what, compiled)
        for start in (4, *(h for h, *_ in want[0][1::7])):
            stop = start + 2000
            want_part = rows(walk_headers(path, start, stop))
            assert with_walk(monkeypatch, True, table_rows, path, start, stop) == want_part, what
        if want[1] is not None:
            errors.add(want[1][0])
    assert errors == {TruncatedError, MalformedError}  # both kinds of damage were met


# random bytes after the magic, and random sequences of headers (some broken) with random bodies
_events = st.lists(
    st.tuples(st.integers(0, 255), st.integers(0, 80), st.integers(0, 0xFFFF), st.integers(0, 2**32 - 1)), max_size=12
)


@st.composite
def binlog_images(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        return MAGIC + draw(st.binary(max_size=300))
    out = bytearray(MAGIC)
    for code, body, flags, ts in draw(_events):
        size = draw(st.sampled_from([19 + body, 19 + body, draw(st.integers(0, 2**32 - 1))]))
        out += struct.pack("<IBIIIH", ts, code, 1, size, (len(out) + size) & 0xFFFFFFFF, flags) + draw(
            st.binary(min_size=body, max_size=body)
        )
    return bytes(out[: draw(st.integers(0, len(out)))]) if draw(st.booleans()) else bytes(out)


@needs_c
@settings(max_examples=400, deadline=None)
@given(data=binlog_images(), start=st.integers(0, 400), stop=st.integers(0, 2**40))
def test_walks_agree_on_random_bytes(data: bytes, start: int, stop: int) -> None:
    assert compiled_walk is not None
    assert compiled_walk(data, start, stop) == reader._walk_python(data, start, stop)


@needs_c
def test_the_compiled_walk_reads_headers_and_names_its_stops() -> None:
    """Values encoded here: two events, then a partial header, an event too small, an event past the end."""
    a = struct.pack("<IBIIIH", 7, 15, 1, 25, 29, 1) + bytes(6)
    b = struct.pack("<IBIIIH", 8, 16, 1, 19, 48, 2)
    image = MAGIC + a + b
    assert compiled_walk is not None
    pos, sizes, codes, flags, stamps, end = compiled_walk(image, 4, 1 << 40)
    assert struct.unpack("<2q", pos) == (4, 29) and struct.unpack("<2I", sizes) == (25, 19) and codes == b"\x0f\x10"
    assert struct.unpack("<2H", flags) == (1, 2) and struct.unpack("<2I", stamps) == (7, 8) and end == 48
    assert reader._stop_reason(image, end, len(image)) == (0, 0)
    small = struct.pack("<IBIIIH", 0, 2, 1, 18, 0, 0)
    past = struct.pack("<IBIIIH", 0, 2, 1, 20, 0, 0)
    for tail, why in ((bytes(18), (1, 0)), (small, (2, 18)), (past, (3, 0))):
        data = image + tail
        assert compiled_walk(data, 4, 1 << 40)[5] == 48
        assert reader._stop_reason(data, 48, len(data)) == why
    assert compiled_walk(image, 29, 29)[2:] == (b"", b"", b"", 29)
    with pytest.raises(ValueError):
        compiled_walk(image, -1, 10)


# -- parts of a walk and the cache ----------------------------------------------------------------------------------


def test_a_part_of_a_walk_is_the_walk_of_the_part(corpus_dir: Path, tmp_path: Path) -> None:
    data = (corpus_dir / "mariadb/binlogs/corpus-bin.000009").read_bytes()
    for n, cut in enumerate((len(data), len(data) - 5)):  # whole, and ending in a partial event
        path = tmp_path / f"f{n}.000001"
        path.write_bytes(data[:cut])
        whole = header_table(path, 4)
        marks = sorted({4, 5, whole.end, len(data), *whole.positions[::3], *(p + 1 for p in whole.positions[::5])})
        served = 0
        for start, stop in itertools.product(marks, [*marks, None]):
            part = whole.part(start, stop)
            if part is not None:
                served += 1
                assert rows(part) == rows(walk_headers(path, start, stop)), (start, stop)
            else:
                assert start not in whole.positions and start != whole.end
        assert served > len(marks)
        assert whole.part(5, None) is None and header_table(path, 4, 300).part(4, None) is None


def test_the_cache_walks_a_file_once(corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bin.000001"
    path.write_bytes((corpus_dir / "mariadb/binlogs/corpus-bin.000009").read_bytes())
    walks: list[tuple[int, int | None]] = []
    real = reader.header_table

    def counted(p: str, start: int = 4, stop: int | None = None) -> HeaderTable:
        walks.append((start, stop))
        return real(p, start, stop)

    monkeypatch.setattr(reader, "header_table", counted)
    cache = HeaderCache()
    whole = cache.table(path)
    ranges = [(4, whole.positions[5]), (whole.positions[5], whole.positions[9]), (whole.positions[9], None)]
    for start, stop in ranges:
        assert rows(cache.table(path, start, stop)) == rows(walk_headers(path, start, stop))
    assert walks == [(4, None)]
    with open(path, "ab") as f:  # the file grows: its walk is stale
        f.write(b"\x00" * 7)
    os.utime(path, ns=(1, 1))
    assert rows(cache.table(path, whole.positions[9])) == rows(walk_headers(path, whole.positions[9]))
    assert (
        walks == [(4, None), (whole.positions[9], None)] and cache.table(path, whole.positions[9]).error() is not None
    )
    small = HeaderCache(max_events=3)
    small.table(path)
    small.table(path)
    assert len(walks) == 4  # too many events to keep
    cache.clear()
    cache.table(path, whole.positions[9])
    assert len(walks) == 5
    data = bytearray(path.read_bytes())  # the same size, other bytes: a size field broken
    data[whole.positions[9] + 9 : whole.positions[9] + 13] = bytes(4)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(2, 2))
    broken = cache.table(path, whole.positions[9])
    assert broken.why == 2 and broken.end == whole.positions[9] and len(walks) == 6


# -- planning and scanning ----------------------------------------------------------------------------------------


def test_the_boundaries_of_a_walk(tmp_path: Path, walk_kind: str) -> None:
    """Transaction boundaries of events encoded here: where a GTID starts and where an XID ends."""
    events = [(15, 40), (162, 7), (2, 30), (30, 100), (16, 8), (33, 20), (2, 5), (16, 8), (4, 10)]
    image, ends = bytearray(MAGIC), []
    for code, body in events:
        size = 19 + body
        image += struct.pack("<IBIIIH", 0, code, 1, size, len(image) + size, 0) + bytes(body)
        ends.append(len(image))
    path = tmp_path / "b.000001"
    path.write_bytes(bytes(image[:-1]))  # the last event (a ROTATE) is partial: the walk ends at the XID before
    starts = [4, *ends[:-1]]
    want = sorted({starts[1], ends[4], starts[5], ends[7]})
    assert want == [63, 284, 374]  # GTID at 63, XID ends where the GTID at 284 starts, XID ends at 374
    for start in (4, starts[2]):
        t = header_table(path, start)
        assert t.end == ends[7] and t.why == 3
        for at in range(start, len(image) + 30):
            assert plan._first_cut(t, at) == min((b for b in want if b >= at), default=None), (start, at)
        assert plan._last_cut(t) == ends[7]
    assert plan._last_cut(header_table(path, 4, starts[1])) is None


def reference_plan(file: BinlogFile, start: int, split_bytes: int, whole_tail: bool) -> list[tuple[int, int | None]]:
    """The planner before header tables: one loop over walk_headers collecting every boundary."""
    if file.size - start <= split_bytes and whole_tail:
        return [(start, None)] if file.size > start else []
    trx = {EventType.GTID_LOG_EVENT, EventType.ANONYMOUS_GTID_LOG_EVENT, EventType.GTID_TAGGED_LOG_EVENT}
    try:
        first: list[HeaderInfo] = []
        try:
            for h in walk_headers(file.path, 4):
                first.append(h)
                if len(first) == 2:
                    break
        except TruncatedError:  # cut before its second event: the ingest (not whole_tail) plans what is there
            if whole_tail:
                raise
        closed = bool(first) and not first[0].flags & 1
        encrypted = any(h.type_code == EventType.START_ENCRYPTION_EVENT for h in first[1:])
        ended = False  # by its ROTATE or STOP (an encrypted file: closed, and whole to its end)
        cuts, end = [], start
        try:
            for h in walk_headers(file.path, start):
                end = h.pos + h.size
                if not encrypted:
                    if h.type_code in trx or h.type_code == EventType.GTID_EVENT:
                        cuts.append(h.pos)
                    if h.type_code == EventType.XID_EVENT:
                        cuts.append(end)
                    ended = ended or h.type_code in (EventType.ROTATE_EVENT, EventType.STOP_EVENT)
            ended = ended or (encrypted and closed)
        except TruncatedError:
            pass
    except BinlogError:
        return [(start, None)]
    stop = end if (ended or whole_tail) else (cuts[-1] if cuts else start)
    points = [start]
    for c in cuts:
        if c - points[-1] >= split_bytes and c < stop:
            points.append(c)
    points.append(stop)
    return [(a, b) for a, b in itertools.pairwise(points) if b > a]


def planned(splits: list[Split]) -> list[tuple[str, int, int | None, int]]:
    return [(s.file.name, s.start, s.stop, s.index) for s in splits]


WALKS = (True, False) if compiled_walk is not None else (False,)  # with the C walk, and with the Python walk


def test_plans_agree_with_both_walks_and_the_reference(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [f for p in corpus_files(corpus_dir) for f in list_binlogs(p)]
    cut_files = 0
    for f, split_bytes, whole_tail in itertools.product(files, (1, 700, 5000), (True, False)):
        want = reference_plan(f, 4, split_bytes, whole_tail)
        got = [
            planned(
                with_walk(
                    monkeypatch,
                    compiled,
                    plan_splits,
                    [f],
                    split_bytes=split_bytes,
                    whole_tail=whole_tail,
                    headers=cache,
                )
            )
            for compiled, cache in itertools.product(WALKS, (None, HeaderCache()))
        ]
        assert all(g == got[0] for g in got), f.name
        assert [(a, b) for _, a, b, _ in got[0]] == want, (f.name, split_bytes, whole_tail)
        cut_files += len(want) > 2
    assert cut_files > 20  # many files were cut at many boundaries


def test_plans_from_resume_positions(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (f,) = list_binlogs(corpus_dir / "mariadb/binlogs/corpus-bin.000002")
    positions = [h.pos for h in walk_headers(f.path)]
    for start, whole_tail in itertools.product(positions[::37], (True, False)):
        want = reference_plan(f, start, 100_000, whole_tail)
        for compiled in WALKS:
            got = with_walk(
                monkeypatch,
                compiled,
                plan_splits,
                [f],
                split_bytes=100_000,
                resume={f.name: start},
                whole_tail=whole_tail,
            )
            assert [(s.start, s.stop) for s in got] == want


def scanned(
    splits: list[Split], headers: HeaderCache | None, read: ReadSpec
) -> tuple[list[Statement], list[tuple[int, int, str, str]]]:
    """The statements of a scan and (split, position, database, table) of its table maps."""
    maps: list[tuple[int, int, str, str]] = []
    found = scan_statements(
        splits,
        SchemaTracker(),
        read,
        lambda s, pos, tm: maps.append((s.index, pos, tm.schema, tm.table)),
        headers=headers,
    )
    return found, maps


def test_scans_agree_with_both_walks(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = list_binlogs(corpus_dir / "mariadb" / "binlogs")
    assert len(files) >= 15
    read = ReadSpec(decryptor=mariadb_decryptor(load_key_file(corpus_dir / "workloads/keys.txt")))  # for 000022
    cache = HeaderCache()
    splits = plan_splits(files, split_bytes=2_000, headers=cache)
    assert len(splits) > 3 * len(files)
    found, maps = scanned(splits, cache, read)
    assert any(s.kind == "ddl" and "CREATE TABLE" in s.query.upper() for s in found) and len(maps) > 100
    assert scanned(splits, None, read) == (found, maps)
    if compiled_walk is not None:
        assert with_walk(monkeypatch, False, scanned, splits, None, read) == (found, maps)
        assert with_walk(monkeypatch, False, scanned, splits, HeaderCache(), read) == (found, maps)
    # the full decode (the scan's fallback where the header walk fails) finds the same statements and table maps

    def no_walk(*_: object) -> HeaderTable:
        raise BinlogError("no header walk")

    monkeypatch.setattr(statements, "header_table", no_walk)
    assert scanned(splits, None, read) == (found, maps)
    monkeypatch.undo()
    # one split per file, no table maps: the same statements
    whole = plan_splits(files)
    assert [s.to_json() for s in scan_statements(whole, SchemaTracker(), read)] == [s.to_json() for s in found]
