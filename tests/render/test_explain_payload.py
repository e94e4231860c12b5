"""``binlake explain FILE --at POS+OFFSET``: the events inside a TRANSACTION_PAYLOAD_EVENT, field by field.

The three corpus files with compressed transactions (mysql-INDEX.md).  mariadb-binlog cannot read their payloads
(the .vv.txt references stop at "incompatible MySQL 8.0 TRANSACTION_PAYLOAD_EVENT"), so the values asserted come from
the source repositories' tests (the inner event types of transaction_compression.000001, rust_mysql_common
src/binlog/mod.rs), from the statements the server logged next to the rows (ROWS_QUERY events, and the
``create table b(id int)`` QUERY and session of mysql-bin.000057 that mariadb-binlog prints), and the bytes from an
independent zstd decompression of the payload.  No reference decodes the rows of mysql-bin.compressed: its movie
values are asserted as the file holds them (readable text, unchanged columns equal before and after the update).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import zstandard

from binlake.cli import main
from binlake.errors import DecompressionError, MalformedError
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.format import synthetic_fde
from binlake.reader import read_events
from binlake.render.explain import Explanation, event_at, explain_event, inner_event_at, parse_position, render_json

RUST_COMMON = "mysql/rust_mysql_common/transaction_compression.000001"  # 8.0.32, payload at 274
JAVA = "mysql/mysql-binlog-connector-java/mysql-bin.compressed"  # 8.0.28, payload at 236
RUST_CONNECTOR = "mysql/mysql-binlog-connector-rust/mysql-bin.000057"  # 8.0.31, payloads at 457 and 730
ZSTD_MAGIC = bytes.fromhex("28b52ffd")


def _uncompressed(data: bytes, pos: int) -> bytes:
    """The payload of the TRANSACTION_PAYLOAD_EVENT at ``pos``, decompressed without binlake: the zstd frame runs
    from its magic number to the event's CRC32."""
    end = pos + int.from_bytes(data[pos + 9 : pos + 13], "little")
    frame = data[data.index(ZSTD_MAGIC, pos, end) : end - 4]
    return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(frame))


def _explain(path: Path, pos: int, offset: int) -> Explanation:
    raw, ctx, place = inner_event_at(str(path), pos, offset, DecodeOptions())
    return explain_event(raw, offset, ctx, place)


def _explain_top(path: Path, pos: int) -> Explanation:
    raw, ctx = event_at(str(path), pos, DecodeOptions())
    return explain_event(raw, pos, ctx)


def _rows(ex: Explanation) -> dict[str, object]:
    return {r.name: r.value for r in ex.rows}


def _meanings(ex: Explanation) -> dict[str, str]:
    return {r.name: r.meaning for r in ex.rows}


# --- every inner event of every compressed transaction -----------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("name", [RUST_COMMON, JAVA, RUST_CONNECTOR])
def test_every_byte_of_every_inner_event_is_explained(corpus_dir: Path, name: str) -> None:
    path = corpus_dir / name
    data = path.read_bytes()
    inner = [ev for ev in read_events(path) if ev.header.in_payload is not None]
    assert inner
    for ev in inner:
        h = ev.header
        assert h.in_payload is not None
        ex = _explain(path, h.in_payload, h.pos)
        # the explained fields tile exactly the inner event's bytes: the slice of the decompressed payload
        expected = _uncompressed(data, h.in_payload)[h.pos : h.end_pos]
        assert ex.raw == expected
        assert b"".join(r.raw for r in ex.rows) == expected
        assert [r.offset for r in ex.rows] == sorted(r.offset for r in ex.rows)
        assert not [r for r in ex.rows if r.name == "(not read)"]
        # no checksum: inner events carry none
        assert ex.checksum is None and "checksum" not in {r.section for r in ex.rows}
        assert ex.error is None and ex.decode_error is None
        assert ex.event is not None and ex.event.summary() == ev.summary()
        assert (ex.pos, ex.type, ex.address) == (h.pos, h.type, f"{h.in_payload}+{h.pos}")
        assert ex.in_payload is not None and (ex.in_payload.pos, ex.in_payload.offset) == (h.in_payload, h.pos)
        assert _meanings(ex)["log_pos"].startswith("0: not recorded")


@pytest.mark.corpus
def test_an_inner_event_is_explained_like_a_top_level_one(corpus_dir: Path) -> None:
    """The same code path: the inner TABLE_MAP's bytes given as a lone event of a checksum-less MySQL 8 log give the
    same rows."""
    ex = _explain(corpus_dir / RUST_COMMON, 274, 71)
    plain = explain_event(ex.raw, 71, DecodeContext(fde=synthetic_fde("8.0.32", checksum=False)))
    assert plain.in_payload is None and plain.rows == ex.rows


# --- real values -------------------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_transaction_compression_inner_events(corpus_dir: Path) -> None:
    path = corpus_dir / RUST_COMMON
    payload = _explain_top(path, 274)
    # rust_mysql_common's test reads QUERY, TABLE_MAP, WRITE_ROWS, XID out of this payload, and nothing more
    assert payload.inner is not None
    assert [(ev.header.pos, ev.header.type, ev.header.event_size) for ev in payload.inner] == [
        (0, "QUERY_EVENT", 71),
        (71, "TABLE_MAP_EVENT", 45),
        (116, "WRITE_ROWS_EVENT", 36),
        (152, "XID_EVENT", 27),
    ]
    assert sum(ev.header.event_size for ev in payload.inner) == 179  # the uncompressed size

    query = _rows(_explain(path, 274, 0))
    assert (query["db"], query["rest of the event"]) == ("test", "BEGIN")

    tm = _explain(path, 274, 71)
    meanings = _meanings(tm)
    assert (_rows(tm)["table_id"], meanings["schema name"], meanings["table name"]) == (88, "`test`", "`tb1`")
    assert meanings["column types"] == "col 1 LONG (3)"
    assert meanings["optional metadata"] == "SIGNEDNESS: col 1 is signed [type 1, length 1]"

    rows = _explain(path, 274, 116)
    assert _rows(rows)["table_id"] == 88 and _rows(rows)["column count"] == 1
    assert rows.event is not None and len(rows.event.rows()) == 1  # type: ignore[attr-defined]

    xid = _explain(path, 274, 152)
    assert _rows(xid)["xid"] == 462
    assert xid.rows[-1].raw == (462).to_bytes(8, "little")


@pytest.mark.corpus
def test_connector_java_compressed_update(corpus_dir: Path) -> None:
    path = corpus_dir / JAVA
    tm = _explain(path, 236, 76)
    meanings = _meanings(tm)
    assert (meanings["schema name"], meanings["table name"], meanings["column count"]) == (
        "`demo`",
        "`movies`",
        "11 columns",
    )
    assert meanings["column types"].startswith("col 1 LONG (3), col 2 VARCHAR (15), col 3 LONG (3)")
    update = _explain(path, 236, 158)
    assert update.type == "UPDATE_ROWS_EVENT" and update.header.event_size == 775
    assert update.event is not None
    ((before, after),) = update.event.rows()  # type: ignore[attr-defined]
    assert before[:5] == (1, "Once Upon a Time in the West", 1968, "Italy", "Western")
    assert after[4] == "Western|Action"
    assert _rows(_explain(path, 236, 933))["xid"] == 31


@pytest.mark.corpus
def test_connector_rust_rows_match_the_logged_statements(corpus_dir: Path) -> None:
    path = corpus_dir / RUST_CONNECTOR
    # mariadb-binlog prints the session of thread 8 with the `create table b(id int)` at 274, before the payload
    begin = _rows(_explain(path, 457, 0))
    assert (begin["thread_id"], begin["db"], begin["rest of the event"]) == (8, "a", "BEGIN")
    assert (begin["Q_SQL_MODE"], begin["collation_connection"], begin["server"]) == (1168113696, 8, 33)
    assert _rows(_explain(path, 457, 68))["rest of the event"] == "insert into b values(1)"
    tm = _meanings(_explain(path, 457, 111))
    assert (tm["schema name"], tm["table name"], tm["column types"]) == ("`a`", "`b`", "col 1 LONG (3)")
    insert = _explain(path, 457, 151)
    assert insert.event is not None and insert.event.rows() == [(None, (1,))]  # type: ignore[attr-defined]
    assert _rows(_explain(path, 457, 187))["xid"] == 10

    # the second payload: the UPDATE is decoded with the TABLE_MAP at 730+212, before it in the same payload
    logged = _explain(path, 730, 77).rows[-1]  # the statement has a newline: shown as hex
    assert " ".join(bytes.fromhex(str(logged.value)).decode().split()) == (
        "update test_table_3 set enum_field='large', set_field='c', product_item_2='product_3_value' "
        "where product_id=55555"
    )
    update = _explain(path, 730, 306)
    assert update.event is not None
    ((before, after),) = update.event.rows()  # type: ignore[attr-defined]
    assert before[0] == after[0] == 55555
    assert (before[10], after[10]) == ("product_item_2_value", "product_3_value")
    insert = _explain(path, 730, 1029)
    assert insert.event is not None
    ((_, row),) = insert.event.rows()  # type: ignore[attr-defined]
    assert row[:2] == (6666, "product_item_value_2") and row[2] == datetime.date(2022, 11, 20)


# --- the payload event lists what to address ---------------------------------------------------------------------


@pytest.mark.corpus
def test_payload_event_names_its_fields_and_lists_its_events(corpus_dir: Path) -> None:
    path = corpus_dir / RUST_CONNECTOR
    ex = _explain_top(path, 457)
    assert ex.error is None and b"".join(r.raw for r in ex.rows) == ex.raw
    types = [r.meaning for r in ex.rows if r.name == "payload field type"]
    assert types[-1] == "OTW_PAYLOAD_HEADER_END_MARK: the payload follows"
    assert "OTW_PAYLOAD_COMPRESSION_TYPE_FIELD: the compression type follows (ZSTD)" in types
    values = [r.value for r in ex.rows if r.name == "payload field"]
    assert values == [0, 214, 161]  # ZSTD, compressed size, uncompressed size (binlake events)
    assert ex.inner is not None
    assert [f"{ev.header.in_payload}+{ev.header.pos}" for ev in ex.inner] == [
        "457+0",
        "457+68",
        "457+111",
        "457+151",
        "457+187",
    ]
    listed = render_json(ex)["inner_events"]
    assert isinstance(listed, list)
    assert [(e["pos"], e["type"], e["size"]) for e in listed] == [
        (0, "QUERY_EVENT", 68),
        (68, "ROWS_QUERY_LOG_EVENT", 43),
        (111, "TABLE_MAP_EVENT", 40),
        (151, "WRITE_ROWS_EVENT", 36),
        (187, "XID_EVENT", 27),
    ]


# --- errors ------------------------------------------------------------------------------------------------------


def test_parse_position() -> None:
    assert parse_position("620") == (620, None)
    assert parse_position("274+71") == (274, 71)
    for bad in ("274:71", "274+", "+71", "x", "-4"):
        with pytest.raises(ValueError, match=r"not POS or POS\+OFFSET"):
            parse_position(bad)


@pytest.mark.corpus
def test_offset_that_is_not_an_inner_event_start(corpus_dir: Path) -> None:
    path = str(corpus_dir / RUST_COMMON)
    with pytest.raises(MalformedError) as e:
        inner_event_at(path, 274, 70, DecodeOptions())
    assert str(e.value) == (
        f"{path}: at 274: no event starts at offset 70 of the transaction payload: its events start at offsets "
        "0, 71, 116, 152"
    )
    with pytest.raises(MalformedError, match="ANONYMOUS_GTID_LOG_EVENT has no events inside it"):
        inner_event_at(path, 197, 0, DecodeOptions())


@pytest.mark.corpus
def test_payload_that_fails_to_decompress(corpus_dir: Path, tmp_path: Path) -> None:
    data = bytearray((corpus_dir / RUST_COMMON).read_bytes())
    pos, size = 274, 157
    data[pos + 40] ^= 0xFF  # inside the zstd frame
    data[pos + size - 4 : pos + size] = zlib.crc32(data[pos : pos + size - 4]).to_bytes(4, "little")
    bad = tmp_path / "bad.000001"
    bad.write_bytes(data)
    with pytest.raises(DecompressionError) as e:
        inner_event_at(str(bad), 274, 71, DecodeOptions())
    assert e.value.pos == 274 and "zstd" in str(e.value)
    # the payload event itself is still explained, the decoder's error reported
    ex = _explain_top(bad, 274)
    assert isinstance(ex.error, DecompressionError) and ex.inner is None and ex.checksum is not None


# --- the subcommand ----------------------------------------------------------------------------------------------


def _binlake(*args: str) -> subprocess.CompletedProcess[str]:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "binlake", *args], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.corpus
def test_explain_inner_event_subprocess(corpus_dir: Path) -> None:
    path = str(corpus_dir / RUST_COMMON)
    events = _binlake("events", path)
    assert events.returncode == 0
    line = next(x for x in events.stdout.splitlines() if "TABLE_MAP_EVENT" in x)
    address = line.split()[0]
    assert address == "274+71"  # what `binlake events` prints is what --at takes
    done = _binlake("explain", path, "--at", address)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Position 274+71: TABLE_MAP_EVENT, 45 bytes = 19 header + 8 post-header + 18 body"
    assert lines[1].startswith(
        "Inside the TRANSACTION_PAYLOAD_EVENT at 274 (ZSTD, 124 bytes -> 179 bytes): offset 71 of the uncompressed"
    )
    assert "CHECKSUM" not in done.stdout and "`tb1`" in done.stdout

    bad = _binlake("explain", path, "--at", "274+72")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == (
        f"binlake explain: {path}: at 274: no event starts at offset 72 of the transaction payload: its events start "
        "at offsets 0, 71, 116, 152\n"
    )
    usage = _binlake("explain", path, "--at", "274:71")
    assert usage.returncode == 2 and "is not POS or POS+OFFSET" in usage.stderr


@pytest.mark.corpus
def test_explain_inner_event_json_and_payload_listing(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(corpus_dir / JAVA)
    assert main(["explain", path, "--at", "236+933", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    facts = (doc["pos"], doc["in_payload"], doc["type"], doc["size"], doc["checksum"])
    assert facts == (933, 236, "XID_EVENT", 27, None)
    assert doc["payload"] == {"compression": "ZSTD", "payload_size": 451, "uncompressed_size": 960}
    assert doc["inner_events"] is None
    assert [f["value"] for f in doc["fields"] if f["name"] == "xid"] == [31]
    assert "".join(f["hex"] for f in doc["fields"]) == _uncompressed(Path(path).read_bytes(), 236)[933:960].hex()

    assert main(["explain", path, "--at", "236"]) == 0
    out = capsys.readouterr().out
    listing = out[out.index("4 events inside (explain one with --at 236+OFFSET):") :].splitlines()[1:]
    assert [x.split()[:3] for x in listing] == [
        ["236+0", "QUERY_EVENT", "76"],
        ["236+76", "TABLE_MAP_EVENT", "82"],
        ["236+158", "UPDATE_ROWS_EVENT", "775"],
        ["236+933", "XID_EVENT", "27"],
    ]


def test_inner_address_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--at", "274+71", "--hex", "00" * 19]) == 2
    assert "not with --hex" in capsys.readouterr().err
