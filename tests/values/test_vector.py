"""MySQL 9 VECTOR values from a MySQL 9.0.1 binlog."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError
from binlake.values import vector

from . import _binlog

T = ColumnType


def test_corpus_vectors() -> None:
    # rust_mysql_common's vector test: table foo VECTOR(3), rows (1, [1.1, 2.2, 3.3]) and (2, [1, -1, 0])
    path = _binlog.CORPUS / "mysql" / "rust_mysql_common" / "vector.binlog"
    if not path.exists():
        pytest.skip("corpus not present (expected under ../shared/corpus)")
    ev = next(e for e in _binlog.events(path) if e.table.table == "foo" and e.type_code == 30)
    col = ev.table.columns[1]
    assert col.vector_dimension == 3 and col.length == 4
    stored = [after[1] for _, after in ev.rows]  # type: ignore[index]
    assert stored[0] == bytes([205, 204, 140, 63, 205, 204, 12, 64, 51, 51, 83, 64])
    conv = vector.CONVERTERS[T.VECTOR](col)
    assert conv is not None
    assert conv(stored[0]) == struct.unpack("<3f", struct.pack("<3f", 1.1, 2.2, 3.3))
    assert conv(stored[1]) == (1.0, -1.0, 0.0)


@given(st.lists(st.floats(width=32, allow_nan=False), max_size=16))
def test_round_trip(values: list[float]) -> None:
    col = Column.build(0, T.VECTOR, b"\x04").with_(vector_dimension=len(values))
    raw = struct.pack(f"<{len(values)}f", *values)
    stored, end = vector.READERS[T.VECTOR](col)(len(raw).to_bytes(4, "little") + raw, 0)
    assert end == 4 + len(raw) and vector.CONVERTERS[T.VECTOR](col)(stored) == tuple(values)  # type: ignore[misc]


def test_wrong_sizes() -> None:
    col = Column.build(0, T.VECTOR, b"\x04").with_(vector_dimension=2)
    conv = vector.CONVERTERS[T.VECTOR](col)
    assert conv is not None
    for bad in (b"\x00" * 7, b"\x00" * 12):
        with pytest.raises(MalformedError):
            conv(bad)
