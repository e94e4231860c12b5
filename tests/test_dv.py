"""Deletion vectors (binlake.lake.dv): the codec against the Delta protocol's own examples and by round trips of
any row set (64-bit row indexes too), and the DVs binlake writes read back by readers binlake did not write:
deltalake's ``deletion_vectors()`` and SQL engine, polars and DuckDB's Delta extension, inline and in files."""

from __future__ import annotations

import struct
import uuid
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")
pytest.importorskip("pyroaring", reason="pyroaring not installed: pip install -e '.[spark]'")

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from binlake.lake import deltalog, dv
from binlake.lake.delta import read_table
from binlake.lake.records import LakeFormatError
from binlake.storage import locate
from binlake.testing import readers

# -- the codec ------------------------------------------------------------------------------------------------------


def test_z85_is_the_zeromq_code() -> None:
    assert dv.z85_encode(bytes.fromhex("864FD26FB559F75B")) == "HelloWorld"  # ZeroMQ RFC 32's test vector
    assert dv.z85_decode("HelloWorld") == bytes.fromhex("864FD26FB559F75B")
    assert dv.z85_encode(b"\x01") == dv.z85_encode(b"\x01\x00\x00\x00")  # padded to 4 bytes, as Delta pads
    assert dv.z85_decode(dv.z85_encode(b"\x01\x02"), 2) == b"\x01\x02"
    for bad in ("Hell", "HelloWorl~", "HelloWorld", "%%%%%"):
        with pytest.raises(LakeFormatError):
            dv.z85_decode(
                bad, 2 if bad == "HelloWorld" else None
            )  # not 5-aligned; not Z85; 8 bytes said to be 2; > 2^32


@given(st.binary(max_size=300))
def test_z85_round_trip(data: bytes) -> None:
    text = dv.z85_encode(data)
    assert len(text) == -(-len(data) // 4) * 5
    assert dv.z85_decode(text, len(data)) == data


def test_uuid_path_of_the_protocol_example() -> None:
    """PROTOCOL.md, "JSON Example 1": ``ab^-aqEH.-t@S}K{vb[*k^`` is prefix ``ab`` and this UUID's file."""
    u = uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")
    assert dv.decode_uuid("ab^-aqEH.-t@S}K{vb[*k^") == ("ab", u)
    assert dv.encode_uuid(u, "ab") == "ab^-aqEH.-t@S}K{vb[*k^"
    d = dv.DeletionVector.from_json(
        {
            "storageType": "u",
            "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
            "offset": 4,
            "sizeInBytes": 40,
            "cardinality": 6,
        }
    )
    assert d.file(locate("s3://mytable")).uri == f"s3://mytable/ab/deletion_vector_{u}.bin"
    assert d.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"
    assert dv.DeletionVector.from_json(d.to_json()) == d


@given(st.uuids(), st.text(alphabet="abcdefghij0123456789", max_size=4))
def test_uuid_round_trip(u: uuid.UUID, prefix: str) -> None:
    assert dv.decode_uuid(dv.encode_uuid(u, prefix)) == (prefix, u)


def test_bitmap_layout() -> None:
    """PROTOCOL.md, "Deletion Vector Format": magic (int32 LE), bucket count (int64 LE), then per bucket its key
    (int32 LE) and a 32-bit portable RoaringBitmap (cookie 12346: no runs, then the container count)."""
    data = dv.encode_bitmap(np.array([(5 << 32) + 9, 3, 2], np.uint64))
    assert struct.unpack_from("<iq", data) == (1681511377, 2)
    assert struct.unpack_from("<iI", data, 12) == (0, 12346)
    second = 12 + 4 + 8 + 4 + 4 + 2 * 2  # key, cookie + count, descriptive header, offset, two values
    assert struct.unpack_from("<iI", data, second) == (5, 12346)
    assert dv.decode_bitmap(data).tolist() == [2, 3, (5 << 32) + 9]


def test_the_protocol_inline_example_is_another_layout() -> None:
    """The protocol's "JSON Example 3" decodes to magic 1681511376 big-endian, delta-spark's "native" layout that
    the protocol text does not define: refused with a clear error, never misread."""
    data = dv.z85_decode("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40)
    assert struct.unpack_from(">i", data)[0] == 1681511376
    with pytest.raises(LakeFormatError, match="magic number"):
        dv.decode_bitmap(data)


_ROWS = st.lists(
    st.one_of(
        st.integers(0, 70_000),  # within one container, and the next
        st.integers(0, (1 << 32) + 10),  # around the first bucket's end
        st.integers(0, dv.MAX_ROW),  # anywhere: keys up to 2^31 - 1
    ),
    max_size=200,
)


@given(_ROWS)
def test_bitmap_round_trip(rows: list[int]) -> None:
    wanted = sorted(set(rows))
    assert dv.decode_bitmap(dv.encode_bitmap(np.array(rows, np.uint64))).tolist() == wanted


def test_bitmap_refuses_rows_java_reads_negative() -> None:
    with pytest.raises(ValueError, match="2\\^63"):
        dv.encode_bitmap(np.array([1 << 63], np.uint64))
    with pytest.raises(LakeFormatError, match="magic"):
        dv.decode_bitmap(b"\x00" * 16)
    with pytest.raises(LakeFormatError, match="damaged"):
        dv.decode_bitmap(dv.encode_bitmap(np.arange(10, dtype=np.uint64))[:-3])


def test_a_commit_s_dvs_inline_and_in_one_file(tmp_path: Path) -> None:
    """Small DVs go inline, the others into one file of the protocol's layout: version byte 1, then per DV its size
    (int32 BE, where ``offset`` points), bytes and CRC-32 (int32 BE)."""
    table = locate(str(tmp_path))
    rows = {"a": np.array([1, 5], np.uint64), "b": np.arange(0, 4000, 2, dtype=np.uint64),
            "c": np.arange(1, 9000, 3, dtype=np.uint64)}  # fmt: skip
    out = dv.write_deletion_vectors(table, rows)
    assert out["a"].storage_type == "i" and out["a"].offset is None and out["a"].cardinality == 2
    assert out["b"].storage_type == out["c"].storage_type == "u"
    assert out["b"].path_or_inline_dv == out["c"].path_or_inline_dv  # one file
    files = list(tmp_path.glob("deletion_vector_*.bin"))
    assert [f.name for f in files] == [out["b"].file(table).name]
    body = files[0].read_bytes()
    assert body[0] == 1 and out["b"].offset == 1
    for name in ("b", "c"):
        d = out[name]
        assert d.offset is not None
        size = struct.unpack_from(">i", body, d.offset)[0]
        data = body[d.offset + 4 : d.offset + 4 + size]
        assert size == d.size_in_bytes and struct.unpack_from(">I", body, d.offset + 4 + size)[0] == zlib.crc32(data)
        assert dv.read_rows(table, d).tolist() == rows[name].tolist()
    assert len(body) == out["c"].offset + 8 + out["c"].size_in_bytes  # type: ignore[operator]
    assert dv.read_rows(table, out["a"]).tolist() == [1, 5]
    mask = dv.keep_mask(dv.read_rows(table, out["a"]), 7)
    assert mask.tolist() == [True, False, True, True, True, False, True]
    with pytest.raises(LakeFormatError, match="row 5 of a file of 5"):
        dv.keep_mask(dv.read_rows(table, out["a"]), 5)
    with pytest.raises(ValueError, match="no rows"):
        dv.write_deletion_vectors(table, {"d": np.array([], np.uint64)})


def test_a_damaged_dv_file_is_refused(tmp_path: Path) -> None:
    table = locate(str(tmp_path))
    d = dv.write_deletion_vectors(table, {"a": np.arange(0, 5000, 2, dtype=np.uint64)})["a"]
    path = d.file(table).uri
    body = bytearray(Path(path).read_bytes())
    body[40] ^= 0xFF
    Path(path).write_bytes(bytes(body))
    with pytest.raises(LakeFormatError, match="CRC-32"):
        dv.read_rows(table, d)
    with pytest.raises(LakeFormatError, match="says 3"):
        dv.read_rows(table, dv.DeletionVector("i", dv.z85_encode(dv.encode_bitmap(np.arange(2, dtype=np.uint64))),
                                             len(dv.encode_bitmap(np.arange(2, dtype=np.uint64))), 3))  # fmt: skip


# -- readers binlake did not write ------------------------------------------------------------------------------


def _table(path: Path, files: int = 3, rows: int = 3000) -> list[str]:
    """A table of ``files`` files of ``rows`` rows (``id`` 0..files*rows-1), written by deltalake; their paths."""
    for f in range(files):
        ids = pa.array(range(f * rows, (f + 1) * rows), pa.int64())
        write_deltalake(str(path), pa.table({"id": ids, "s": pa.array([str(i) for i in ids.to_pylist()])}),
                        mode="append")  # fmt: skip
    snap = deltalog.read_snapshot(locate(str(path)))
    assert snap is not None
    return sorted(snap.files, key=lambda p: snap.files[p]["modificationTime"])


def _selection(path: Path) -> dict[str, list[bool]]:
    """deltalake's own reading of each file's DV: path -> keep mask."""
    out = pa.table(DeltaTable(str(path)).deletion_vectors()).to_pylist()
    return {r["filepath"].rsplit("/", 1)[-1]: r["selection_vector"] for r in out}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 2999), min_size=1, max_size=1200))
def test_deltalake_reads_our_dvs(tmp_path_factory: pytest.TempPathFactory, rows: list[int]) -> None:
    path = tmp_path_factory.mktemp("t")
    (f,) = _table(path, files=1)
    deltalog.commit_batch(locate(str(path)), batch=1, app_id="t", fence=lambda: None,
                          deletes=lambda s: {f: np.array(rows, np.uint64)})  # fmt: skip
    keep = _selection(path)[f]
    assert [i for i, k in enumerate(keep) if not k] == sorted(set(rows))


@pytest.mark.parametrize("rows", [[7], list(range(0, 3000, 2))], ids=["inline", "file"])
def test_every_reader_sees_the_same_rows(tmp_path: Path, rows: list[int]) -> None:
    """One batch deletes ``rows`` from the first file and a few from the second; the next deletes more from the
    second (its DV then the union); deltalake, polars, DuckDB and binlake's own reader see the same rows."""
    files = _table(tmp_path)
    loc = locate(str(tmp_path))
    first = {files[0]: np.array(rows, np.uint64), files[1]: np.array([0, 2999], np.uint64)}
    deltalog.commit_batch(loc, batch=1, app_id="t", fence=lambda: None, deletes=lambda s: first)
    second = {files[1]: np.arange(100, 2000, 3, dtype=np.uint64)}
    deltalog.commit_batch(loc, batch=2, app_id="t", fence=lambda: None, deletes=lambda s: second)
    gone = {*rows, 3000, 5999, *range(3100, 5000, 3)}
    expected = sorted(set(range(9000)) - gone)
    snap = deltalog.read_snapshot(loc)
    assert snap is not None
    assert snap.files[files[0]]["deletionVector"]["storageType"] == ("i" if len(rows) == 1 else "u")
    assert snap.files[files[1]]["deletionVector"]["storageType"] == "u"  # 636 scattered rows: over 1 KiB
    assert _selection(tmp_path)[files[1]].count(False) == 636
    seen = {r: sorted(readers.read_with(r, loc)["id"].to_pylist()) for r in readers.available()}
    binlake = read_table(loc)
    assert binlake is not None
    seen["binlake"] = sorted(binlake["id"].to_pylist())
    assert set(seen) == {"deltalake", "polars", "duckdb", "binlake"}
    assert all(ids == expected for ids in seen.values()), {r: len(ids) for r, ids in seen.items()}
    assert DeltaTable(str(tmp_path)).count() == 9000  # deltalake's count() ignores DVs (a silent misread)
    with pytest.raises(Exception, match="deletionVectors"):
        DeltaTable(str(tmp_path)).to_pyarrow_table()  # and its pyarrow path refuses the table
