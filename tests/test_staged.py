"""A decode task's staged last changes (:func:`binlake.lake.merge.write_staged`): a merge task of a key range reads
the record batches its range may hold and gets exactly the range's rows, whatever the batch size, the range, or a
first key column that repeats across batches (a key of two columns); the file says its rows and where to cut
ranges."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.lake.merge import (
    STAGED,
    MergeTask,
    Source,
    change_rows,
    describe_source,
    plan_ranges,
    read_changes,
    write_staged,
)
from binlake.storage import locate


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3)), min_size=1, max_size=80, unique=True),
    st.integers(1, 9),
    st.none() | st.integers(-1, 42),
)
def test_a_range_reads_its_rows(keys: list[tuple[int, int]], batch_rows: int, hi: int | None) -> None:
    """Every lower bound (a first key column that repeats across batches included) with the drawn upper one."""
    import tempfile

    keys.sort()
    rows = pa.table({"a": [a for a, _ in keys], "b": [b for _, b in keys], "v": [f"{a}/{b}" for a, b in keys]})
    with tempfile.TemporaryDirectory() as d:
        loc = locate(d) / f"one{STAGED}"
        write_staged(rows, loc, ["a", "b"], batch_rows)
        source = describe_source(loc, counted=True, sorted=False)
        assert (source.rows, source.sorted, source.partial) == (len(keys), True, False)
        for lo in (None, *range(-1, 43)):
            where = None if lo is None else pc.field("a") >= lo
            if hi is not None:
                where = pc.field("a") < hi if where is None else where & (pc.field("a") < hi)
            got = change_rows(loc, rows.schema, None, (lo, hi))  # the bounds alone
            assert got.to_pylist() == (rows if where is None else rows.filter(where)).to_pylist(), (lo, hi)


def test_ranges_are_cut_at_the_batches_first_keys(tmp_path: Path) -> None:
    """:func:`plan_ranges` cuts at the first key of a staged file's batches, and each range's task reads its rows
    once: together the ranges read every row once."""
    rows = pa.table({"id": list(range(0, 1000, 2)), "v": ["x"] * 500})
    for n, part in enumerate((rows.slice(0, 260), rows.slice(240))):  # two tasks' files, overlapping keys
        write_staged(part, locate(tmp_path) / f"{n}{STAGED}", ["id"], 50)
    sources = [describe_source(locate(tmp_path) / f"{n}{STAGED}", counted=True, sorted=True) for n in (0, 1)]
    assert [s.rows for s in sources] == [260, 260]
    ranges = plan_ranges(sources, pa.field("id", pa.int64()), target=100)
    assert len(ranges) > 3 and ranges[0][0] is None and ranges[-1][1] is None
    starts = {*range(0, 520, 100), *range(480, 1000, 100)}  # every 50th row of each file
    assert {lo for lo, _ in ranges[1:]} <= starts
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
    seen = []
    for bounds in ranges:
        task = MergeTask("t", str(tmp_path), schema, ("id",), tuple(sources), (), bounds=bounds)
        seen += read_changes(task)["id"].to_pylist()
    assert sorted(seen) == sorted(rows["id"].to_pylist() + rows.slice(240, 20)["id"].to_pylist())


def test_an_unsorted_source_beside_it(tmp_path: Path) -> None:
    """A source that is not staged (an XA transaction's rows, a change file) still reads as Parquet."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [5, 1]}), tmp_path / "xa.parquet")
    s = describe_source(locate(tmp_path) / "xa.parquet", counted=True, sorted=False)
    assert isinstance(s, Source) and (s.rows, s.sorted) == (2, False)
    assert change_rows(locate(tmp_path) / "xa.parquet", pa.schema([pa.field("id", pa.int64())]), None)[
        "id"
    ].to_pylist() == [5, 1]


def test_a_local_staged_file_is_read_in_place(tmp_path: Path) -> None:
    """On a local disk the file is uncompressed (a merge task maps it and reads it without a copy): it is at least
    as large as its rows in memory, and the rows read stay whole after the file is closed and removed (the batch
    ends by removing its staging folder)."""
    rows = pa.table({"a": list(range(20_000)), "v": ["the same words again and again"] * 20_000})
    loc = locate(tmp_path) / f"one{STAGED}"
    write_staged(rows, loc, ["a"], 4096)
    assert (tmp_path / f"one{STAGED}").stat().st_size >= rows.nbytes  # LZ4 would make these words a few KB
    got = change_rows(loc, rows.schema, None, (5_000, None))
    (tmp_path / f"one{STAGED}").unlink()
    assert got.to_pylist() == rows.slice(5_000).to_pylist()
