"""The ingest's vectorised Arrow building against the per-value way it replaced: sequence numbers as decimal128
words, columns converted in one ``pa.array`` call (with their per-value fallback), current state merged the
same whatever the order of the change rows.  No Spark needed."""

from __future__ import annotations

import datetime as dt
import io
import itertools
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("deltalake")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from binlake.ingest.arrow import SEQ, _converter, to_lake  # noqa: E402
from binlake.ingest.statements import SEQ_FILE, SEQ_POS  # noqa: E402
from binlake.lake.merge import latest_changes, merge_current  # noqa: E402
from binlake.lake.tables import seq_array  # noqa: E402
from binlake.values.row import ABSENT  # noqa: E402


@given(
    st.lists(
        st.tuples(st.integers(1, 999_999), st.integers(4, 2**32 - 1), st.integers(0, 2**20), st.integers(1, 300)),
        min_size=1,
        max_size=20,
    )
)
def test_seq_words_equal_decimals(events: list[tuple[int, int, int, int]]) -> None:
    seq0 = [f * SEQ_FILE + p * SEQ_POS + off for f, p, off, _ in events]
    rows = [n for *_, n in events]
    ci = np.repeat(np.arange(len(events)), rows)
    row = np.concatenate([np.arange(n) for n in rows])
    got = seq_array(np.array(seq0, dtype=object), ci, row)
    assert got.type == SEQ
    assert got.to_pylist() == [Decimal(seq0[c] + r) for c, r in zip(ci.tolist(), row.tolist(), strict=True)]


_VALUES = st.one_of(
    st.none(),
    st.just(ABSENT),
    st.integers(-(2**63), 2**64 - 1),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-(10**6), max_value=10**6),
    st.datetimes(),
    st.dates(),
    st.floats(allow_nan=False),
)
_TYPES = [
    pa.int64(),
    pa.float64(),
    pa.string(),
    pa.binary(),
    pa.date32(),
    pa.timestamp("us"),
    pa.decimal128(10, 2),
    pa.decimal128(20, 0),
]


@given(st.sampled_from(_TYPES), st.lists(_VALUES, max_size=8))
def test_one_call_conversion_equals_value_by_value(t: Any, values: list[object]) -> None:
    """to_lake's single pa.array call gives what converting every value first gives, or both fail alike."""
    conv = _converter(t)
    try:
        want = pa.array([None if v is None or v is ABSENT else conv(v) for v in values], t)
    except (TypeError, ValueError, ArithmeticError) as e:
        with pytest.raises(type(e)):
            to_lake(values, t)
        return
    assert to_lake(values, t).equals(want)


def test_whole_decimals_through_integers() -> None:
    got = to_lake([2**64 - 1, None, 0, ABSENT], pa.decimal128(20, 0)).to_pylist()
    assert got == [Decimal(2**64 - 1), None, Decimal(0), None]
    assert to_lake([-5, 7], pa.decimal128(20, 0)).to_pylist() == [Decimal(-5), Decimal(7)]
    assert to_lake([Decimal("12"), None], pa.decimal128(20, 0)).to_pylist() == [Decimal(12), None]


def test_merge_gives_the_last_change_of_each_key_whatever_the_order_of_the_rows() -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("_seq", SEQ), ("_ts", pa.timestamp("us", "UTC"))])
    ts = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    current = pa.Table.from_pylist([{"id": 1, "v": "a", "_seq": Decimal(1), "_ts": ts}], schema=schema)
    rows = [  # binlog order: insert 2, update 1 -> 3 (key change), delete 2, insert 2 again
        ("insert", 2, "b", 10),
        ("update_preimage", 1, "a", 11),
        ("update_postimage", 3, "a2", 11),
        ("delete", 2, "b", 12),
        ("insert", 2, "c", 13),
    ]
    changes = pa.table(
        {
            "_op": [r[0] for r in rows],
            "id": [r[1] for r in rows],
            "v": [r[2] for r in rows],
            "_seq": pa.array([Decimal(r[3]) for r in rows], SEQ),
            "_ts": pa.array([ts] * len(rows), pa.timestamp("us", "UTC")),
        }
    )
    ordered = merge_current(current, changes, ["id"], schema, ordered=True)
    shuffled = merge_current(current, changes.take([4, 2, 0, 3, 1]), ["id"], schema)
    assert ordered.select(["id", "v"]).to_pylist() == [{"id": 2, "v": "c"}, {"id": 3, "v": "a2"}]  # sorted by key
    assert ordered.equals(shuffled)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1) | st.integers(0, 5), st.integers(0, 3)), max_size=60),
    st.sampled_from(["int64", "decimal", "two columns"]),
)
def test_latest_changes_is_the_last_row_of_each_key_sorted(rows: list[tuple[int, int]], kind: str) -> None:
    """The decode tasks' reduction: the last row of each key in table (binlog) order, sorted by the key, whatever
    the key's type (BIGINT UNSIGNED keys, decimal(20,0) in the lake, sorted as 64-bit integers) or width."""
    if kind == "decimal":
        rows = [(abs(k), b) for k, b in rows]  # up to 2**63: uint64 after the narrowing
    ks = [k for k, _ in rows]
    columns: dict[str, Any] = {"k": pa.array(ks, pa.int64() if kind == "int64" else pa.decimal128(20, 0))}
    pk = ["k"]
    if kind == "two columns":
        columns = {"k": pa.array([k % 3 for k in ks], pa.int64()), "b": [b for _, b in rows]}
        pk = ["k", "b"]
    table = pa.table({**columns, "i": list(range(len(rows)))})
    model: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in table.to_pylist():
        model[tuple(r[c] for c in pk)] = r
    expected = [model[key] for key in sorted(model)]
    assert latest_changes(table, pk).to_pylist() == expected


# -- the columnar builder and the tuple path, mixed within one table -----------------------------------------------


_MIXED_FILES = ["corpus-bin.000002", "corpus-bin.000004", "corpus-bin.000005", "corpus-bin.000006"]
_MIXED_FILES += ["corpus-bin.000008", "corpus-bin.000012", "corpus-bin.000013"]


def _local_lake(corpus_dir: Any, lake: Any) -> dict[str, list[tuple[Any, ...]]]:
    import io

    from tests.spark.test_spark import _lake_snapshot

    from binlake.ingest.progress import Progress
    from binlake.ingest.run import ingest
    from binlake.lake.runner import InProcessRunner

    files = [str(corpus_dir / "mariadb" / "binlogs" / n) for n in _MIXED_FILES]
    ingest(InProcessRunner(), files, str(lake), progress=Progress(None, io.StringIO()), split_bytes=64 << 10)
    return _lake_snapshot(lake, ignore=frozenset({"batch"}))


def test_columnar_and_tuple_paths_make_the_same_lake_in_any_mix(
    corpus_dir: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lake of the types, DML, DDL, row-image and MINIMAL/NO_LOG corpus files, its tasks run in this process:
    built by the columnar builder where it can (the usual way), by the tuple path alone, and with every other
    rows event of a table forced onto the tuple path (runs of both kinds interleaved inside one Parquet file):
    three identical lakes."""
    from binlake.ingest import columnar, tasks

    if not columnar.AVAILABLE:
        pytest.skip("binlake._columnar is not built (or BINLAKE_PURE_PYTHON is set): one path only")
    fast_calls: list[int | None] = []
    real_fast = tasks._TableWriter._fast

    def counting(self: Any, ev: Any, layout: Any) -> int | None:
        out = real_fast(self, ev, layout)
        fast_calls.append(out)
        return out

    monkeypatch.setattr(tasks._TableWriter, "_fast", counting)
    usual = _local_lake(corpus_dir, tmp_path / "usual")
    taken = [n for n in fast_calls if n is not None]
    assert len(taken) > 200 and len(fast_calls) - len(taken) > 20  # both paths ran

    monkeypatch.setattr(tasks, "table_for", lambda targets: None)
    assert _local_lake(corpus_dir, tmp_path / "tuples") == usual
    monkeypatch.undo()

    flip = itertools.count()

    def every_other(self: Any, ev: Any, layout: Any) -> int | None:
        return None if next(flip) % 2 else real_fast(self, ev, layout)

    monkeypatch.setattr(tasks._TableWriter, "_fast", every_other)
    assert _local_lake(corpus_dir, tmp_path / "mixed") == usual


def test_columnar_and_tuple_paths_agree_on_every_mysql_corpus_file(
    corpus_dir: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every MySQL corpus file (5.x to 9.x: JSON and partial JSON updates, VECTOR, compressed transaction payloads,
    every column type the servers' own tests log) lands in the same lake through the columnar builder as through
    the tuple path alone, each file in a lake of its own; a damaged file fails alike both ways."""
    from tests.spark.test_spark import _lake_snapshot

    from binlake.errors import BinlogError
    from binlake.ingest import columnar, tasks
    from binlake.ingest.progress import Progress
    from binlake.ingest.run import ingest
    from binlake.lake.runner import InProcessRunner

    if not columnar.AVAILABLE:
        pytest.skip("binlake._columnar is not built (or BINLAKE_PURE_PYTHON is set): one path only")
    real_fast = tasks._TableWriter._fast
    fast: list[int] = []

    def counting(self: Any, ev: Any, layout: Any) -> int | None:
        out = real_fast(self, ev, layout)
        if out is not None:
            fast.append(out)
        return out

    monkeypatch.setattr(tasks._TableWriter, "_fast", counting)
    files = sorted(p for p in (corpus_dir / "mysql").rglob("*") if p.is_file())
    assert len(files) >= 60
    differ, failed = [], []
    ways = (("columnar", tasks.table_for), ("tuples", lambda targets: None))
    for n, path in enumerate(files):
        lakes: list[object] = []
        for mode, table_for in ways:
            monkeypatch.setattr(tasks, "table_for", table_for)
            lake = tmp_path / f"{n}-{mode}"
            try:
                ingest(InProcessRunner(), [str(path)], str(lake), progress=Progress(None, io.StringIO()))
                lakes.append(_lake_snapshot(lake, ignore=frozenset({"batch"})))
            except BinlogError as e:
                lakes.append(("error", e.pos, type(e).__name__))
        if lakes[0] != lakes[1]:
            differ.append(path.name)
        elif isinstance(lakes[0], tuple):
            failed.append(path.name)
    assert not differ, differ
    assert len(failed) <= 4, failed  # the damaged files of mysql-INDEX.md (not a binlog, truncated, corrupt)
    assert len(fast) >= 300  # rows events the columnar builder took
