"""The text result set reader (binlake.replication.resultset): rows cut from packets fed in any pieces, by the C
``text_rows`` and its Python twin alike; errors, long rows, malformed packets; and against a real server, the same
values PyMySQL reads, a row past 16 MiB, an error after rows were sent, and the connection usable afterwards."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pymysql
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.errors import MalformedError, ReplicationError
from binlake.replication import resultset
from binlake.replication.connection import ReplicationConnection
from binlake.replication.protocol import MAX_PAYLOAD
from binlake.replication.resultset import ColumnDefinition, RowBatch, TextResultReader, parse_column_definition

from ._fake_mysql import lenenc, lenenc_str
from .conftest import PASSWORD, ReplServer

try:
    from binlake import _framing
except ImportError:  # not built: the Python twin alone
    _framing = None  # type: ignore[assignment]

Cell = bytes | None

IMPLEMENTATIONS = [pytest.param(resultset.text_rows, id="python")]
if _framing is not None:
    IMPLEMENTATIONS.append(pytest.param(_framing.text_rows, id="c"))


def _cell(v: Cell) -> bytes:
    return b"\xfb" if v is None else lenenc_str(v)


def _packets(payload: bytes, seq: int) -> tuple[bytes, int]:
    """``payload`` as packets (16 MiB ones continued by the next, as the server splits them)."""
    out = b""
    while True:
        part, payload = payload[:MAX_PAYLOAD], payload[MAX_PAYLOAD:]
        out += len(part).to_bytes(3, "little") + bytes([seq % 256]) + part
        seq += 1
        if len(part) < MAX_PAYLOAD:
            return out, seq


def _definition(name: str, type_code: int = 253, charset: int = 45) -> bytes:
    texts = b"".join(_cell(t) for t in (b"def", b"db", b"t", b"t", name.encode(), name.encode()))
    return texts + b"\x0c" + charset.to_bytes(2, "little") + (255).to_bytes(4, "little") + bytes([type_code]) + bytes(5)


EOF_PACKET = b"\xfe\x00\x00\x02\x00"


def result_bytes(rows: Sequence[Sequence[Cell]], ncols: int, *, tail: bytes = EOF_PACKET) -> bytes:
    """A whole text result set: count, definitions, EOF, rows, then ``tail`` (EOF or an ERR packet)."""
    out, seq = _packets(lenenc(ncols), 1)
    for i in range(ncols):
        more, seq = _packets(_definition(f"c{i}"), seq)
        out += more
    more, seq = _packets(EOF_PACKET, seq)
    out += more
    for row in rows:
        more, seq = _packets(b"".join(_cell(v) for v in row), seq)
        out += more
    more, _ = _packets(tail, seq)
    return out + more


def read_all(data: bytes, cuts: Sequence[int]) -> tuple[TextResultReader, list[RowBatch]]:
    """Feed ``data`` in pieces cut at ``cuts``; every batch the reader gave."""
    reader = TextResultReader()
    batches: list[RowBatch] = []
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    for a, b in itertools.pairwise(bounds):
        reader.feed(data[a:b])
        batches.extend(reader.batches())
    return reader, batches


def cells_of(batches: Sequence[RowBatch], ncols: int) -> list[list[Cell]]:
    """The rows the batches hold, through Arrow (as the snapshot reads them)."""
    columns: list[list[Cell]] = [[] for _ in range(ncols)]
    for b in batches:
        for i, (v, o, d) in enumerate(b.columns):
            arr = pa.Array.from_buffers(pa.binary(), b.rows, [pa.py_buffer(v), pa.py_buffer(o), pa.py_buffer(d)])
            arr.validate(full=True)
            columns[i].extend(arr.to_pylist())
    return [list(r) for r in zip(*columns, strict=True)] if ncols else []


cell = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=250, max_size=300))
shapes = st.integers(1, 6).flatmap(lambda n: st.lists(st.lists(cell, min_size=n, max_size=n), max_size=30))


@pytest.fixture(params=IMPLEMENTATIONS)
def cutter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> object:
    """Each implementation of text_rows as the reader's."""
    monkeypatch.setattr(resultset, "_cut", request.param)
    return request.param


@settings(max_examples=200, deadline=None)
@given(rows=shapes, cuts=st.lists(st.integers(0, 20_000), max_size=12), width=st.integers(1, 6))
def test_rows_come_out_whatever_the_pieces(rows: list[list[Cell]], cuts: list[int], width: int) -> None:
    ncols = len(rows[0]) if rows else width
    original = resultset._cut
    for impl in IMPLEMENTATIONS:
        resultset._cut = impl.values[0]  # restored below: hypothesis runs examples without fixtures per example
        try:
            reader, batches = read_all(result_bytes(rows, ncols), cuts)
        finally:
            resultset._cut = original
        assert reader.done and [c.name for c in reader.columns or []] == [f"c{i}" for i in range(ncols)]
        assert cells_of(batches, ncols) == rows


@settings(max_examples=200, deadline=None)
@given(rows=shapes, start=st.integers(0, 64), junk=st.binary(max_size=64))
def test_c_and_python_cut_alike(rows: list[list[Cell]], start: int, junk: bytes) -> None:
    """Equal results (or both ValueError) on rows, on rows with bytes of anything after them, and from any
    offset: the C text_rows is the Python one."""
    if _framing is None:
        pytest.skip("binlake._framing is not built")
    ncols = len(rows[0]) if rows else 1
    body = b"".join(_packets(b"".join(_cell(v) for v in r), 0)[0] for r in rows) + junk
    start = min(start, len(body))
    outcomes = []
    for impl in (resultset.text_rows, _framing.text_rows):
        try:
            outcomes.append(impl(body, start, ncols))
        except ValueError:
            outcomes.append("ValueError")
    assert outcomes[0] == outcomes[1]


def test_an_error_after_rows_raises_the_servers_error(cutter: object) -> None:
    err = b"\xff" + (1242).to_bytes(2, "little") + b"#21000Subquery returns more than 1 row"
    data = result_bytes([[b"1"], [b"2"]], 1, tail=err)
    reader = TextResultReader()
    reader.feed(data)
    got: list[RowBatch] = []
    with pytest.raises(ReplicationError, match="1242: Subquery returns more than 1 row"):
        got.extend(reader.batches())
    assert cells_of(got, 1) == [[b"1"], [b"2"]]


def test_an_error_instead_of_rows_and_a_statement_without_rows() -> None:
    reader = TextResultReader()
    reader.feed(_packets(b"\xff" + (1146).to_bytes(2, "little") + b"#42S02Table 'x.y' doesn't exist", 1)[0])
    with pytest.raises(ReplicationError, match="1146"):
        list(reader.batches())
    reader = TextResultReader()
    reader.feed(_packets(b"\x00\x00\x00\x02\x00\x00\x00", 1)[0])
    assert list(reader.batches()) == [] and reader.done and reader.columns == []


def test_a_row_past_16_mib_is_read_whole(cutter: object) -> None:
    big = bytes(range(256)) * (17 << 12)  # 17 MiB: two packets, the first of 0xFFFFFF bytes
    rows: list[list[Cell]] = [[b"a", None], [big, b"after"], [b"z", b""]]
    reader, batches = read_all(result_bytes(rows, 2), [5, 1000, 20 << 20])
    assert reader.done and cells_of(batches, 2) == rows


@pytest.mark.parametrize(
    "row",
    [
        b"\x05abc",  # a cell past the end of its packet
        b"\x01a\x01b\x01c",  # more cells than columns
        b"\x01a",  # fewer
        b"\xfc\x01",  # a length cut short
        b"\xff",  # not a row: an ERR packet would be longer; still read as one and refused below
    ],
)
def test_malformed_rows_are_malformed_errors(row: bytes, cutter: object) -> None:
    data = result_bytes([], 2, tail=b"")[:-4] + _packets(row, 9)[0] + _packets(EOF_PACKET, 10)[0]
    reader = TextResultReader()
    reader.feed(data)
    with pytest.raises((MalformedError, ReplicationError)):
        list(reader.batches())


def test_bytes_after_the_end_are_refused() -> None:
    reader = TextResultReader()
    reader.feed(result_bytes([[b"1"]], 1) + b"\x01\x00\x00\x09x")
    with pytest.raises(MalformedError, match="after the end"):
        list(reader.batches())


def test_column_definitions_are_read() -> None:
    d = parse_column_definition(_definition("naïve", type_code=12, charset=63))
    assert d == ColumnDefinition("naïve", 12, 63, 255, 0, 0)
    with pytest.raises(MalformedError):
        parse_column_definition(b"\x03de")


# -- against a server ----------------------------------------------------------------------------------------


def _stream(conn: ReplicationConnection, sql: str) -> Iterator[RowBatch]:
    reader = TextResultReader()
    conn.send_query(sql)
    while not reader.done:
        reader.feed(conn.read())
        yield from reader.batches()


def test_a_server_s_rows_are_pymysql_s(fresh_server: ReplServer) -> None:
    """Every cell equals the text PyMySQL's own reader gets (a connection without converters); a 20 MiB value comes
    whole; an error after 49 rows raises the server's error after those rows; the connection serves the next
    query."""
    server = fresh_server.server
    server.execute("SET GLOBAL max_allowed_packet = 67108864")
    server.create_user("reader", PASSWORD, grants=("SELECT",))
    server.execute(
        "CREATE TABLE r.v (id INT PRIMARY KEY, s VARCHAR(20), b LONGBLOB, d DECIMAL(10,3), t DATETIME(6), n INT);"
        "INSERT INTO r.v SELECT seq, CONCAT('é', seq), IF(seq % 3 = 0, NULL, REPEAT('x', seq * 100)),"
        " seq / 7, '2024-01-01' + INTERVAL seq SECOND, IF(seq % 2, NULL, seq) FROM seq.seq_1_to_3000;"
        "INSERT INTO r.v VALUES (0, 'big', REPEAT('b', 20 * 1024 * 1024), 0, '2024-01-01', 0);"
    )
    sql = "SELECT id, s, b, d, t, n FROM r.v ORDER BY id"
    plain = pymysql.connect(
        host="127.0.0.1",
        port=server.port,
        user="reader",
        password=PASSWORD,
        conv=dict(pymysql.converters.encoders),
        charset="utf8mb4",
    )
    with plain, plain.cursor() as cur:
        cur.execute(sql)
        want = [[v.encode() if isinstance(v, str) else v for v in r] for r in cur.fetchall()]
    conn = ReplicationConnection(fresh_server.options("reader", timeout=30.0))
    conn.open()
    try:
        batches = list(_stream(conn, sql))
        assert len(batches) > 1
        got = cells_of(batches, 6)
        assert len(got) == 3001 and got[0][2] == b"b" * (20 << 20) and got[1][1] == "é1".encode()
        assert got == want
        failing = "SELECT id, (SELECT 1 FROM seq.seq_1_to_2 WHERE r.v.id = 50) FROM r.v WHERE id > 0 ORDER BY id"
        seen: list[RowBatch] = []
        with pytest.raises(ReplicationError, match="1242"):
            for batch in _stream(conn, failing):
                seen.append(batch)
        assert [r[0] for r in cells_of(seen, 2)] == [str(i).encode() for i in range(1, 50)]
        assert conn.query("SELECT 41 + 1") == [(42,)]
    finally:
        conn.close()
