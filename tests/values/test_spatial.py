"""GEOMETRY values (SRID + WKB) from the MariaDB 10.11 corpus."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError
from binlake.values import spatial

from . import _binlog

T = ColumnType


def test_corpus_geometries() -> None:
    # workload.sql t_geo row 1: POINT(1 1), POINT(1.5 -2.25), LINESTRING, POLYGON, MULTI*, COLLECTION, SRID 4326
    path = _binlog.CORPUS / "mariadb" / "binlogs" / "corpus-bin.000002"
    if not path.exists():
        pytest.skip("corpus not present (expected under ../shared/corpus)")
    ev = next(e for e in _binlog.events(path) if e.table.table == "t_geo")
    columns = ev.table.columns
    _, row = ev.rows[0]
    assert row is not None
    geoms = [spatial.CONVERTERS[T.GEOMETRY](c)(v) for c, v in zip(columns[1:], row[1:], strict=True)]  # type: ignore[misc]
    assert [g.type_name for g in geoms] == [
        "POINT", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
        "GEOMETRYCOLLECTION", "POINT",
    ]  # fmt: skip
    assert struct.unpack("<dd", geoms[1].wkb[5:]) == (1.5, -2.25)
    assert geoms[8].srid == 4326 and struct.unpack("<dd", geoms[8].wkb[5:]) == (13.4, 52.5)
    assert all(g.srid == 0 for g in geoms[:8])


@given(st.integers(0, 0xFFFFFFFF), st.floats(allow_nan=False), st.floats(allow_nan=False), st.booleans())
def test_point_round_trip(srid: int, x: float, y: float, big_endian: bool) -> None:
    wkb = b"\x00" + struct.pack(">Idd", 1, x, y) if big_endian else b"\x01" + struct.pack("<Idd", 1, x, y)
    stored = struct.pack("<I", srid) + wkb
    col = Column.build(0, T.GEOMETRY, b"\x04")
    value, end = spatial.READERS[T.GEOMETRY](col)(len(stored).to_bytes(4, "little") + stored, 0)
    g = spatial.CONVERTERS[T.GEOMETRY](col)(value)  # type: ignore[misc]
    assert end == 4 + len(stored) and g == spatial.Geometry(srid, wkb) and g.geometry_type == 1


@pytest.mark.parametrize("bad", [b"", b"\x00\x00\x00\x00\x01\x01", b"\x00\x00\x00\x00\x07\x01\x00\x00\x00"])
def test_not_a_geometry(bad: bytes) -> None:
    with pytest.raises(MalformedError):
        spatial.CONVERTERS[T.GEOMETRY](Column.build(0, T.GEOMETRY, b"\x04"))(bad)  # type: ignore[misc]
