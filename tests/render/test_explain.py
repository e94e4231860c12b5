"""``binlake explain``: the tracing cursor, hex-dump input, the explanation of real events, and the subcommand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.cli import main
from binlake.errors import BinlogError, TruncatedError
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.format import synthetic_fde
from binlake.events.table_map import TableMapEvent
from binlake.reader import read_events
from binlake.render.explain import Explanation, event_at, explain_event, parse_hex_dump, render_json
from binlake.trace import TlvValue, TraceField, TracingCursor, fields_of
from binlake.wire import Cursor

MINIMAL = "mysql/rust_mysql_common/minimal_row_metadata.000001"  # 8.0.40, TABLE_MAP at 312 (`noria`.`t1`, id 111)
ENUM_SET = "mysql/rust_mysql_common/mysql-enum-string-set.000001"  # 8.0.28, FULL metadata, ENUM/SET strings
SEED_000 = bytes.fromhex(  # the TABLE_MAP_EVENT of seed 000 (see tests/test_seeds.py)
    "32103568130100000044000000b002000000005f00000000000100"
    "0c70726573656e746174696f6e0006706572736f6e0002030f02580202010100"
    "0203fcff00fba8d0d8"
)


# --- TracingCursor -----------------------------------------------------------------------------------------------

# (method, argument) reads applied to both a Cursor and a TracingCursor
READS = st.lists(
    st.sampled_from(
        [
            ("u8", None),
            ("u16", None),
            ("u32", None),
            ("u64", None),
            ("f64", None),
            ("packed_int", None),
            ("packed_bytes", None),
            ("cstring", None),
            ("uint", 3),
            ("take", 2),
            ("view", 1),
            ("skip", 1),
            ("rest", None),
        ]
    ),
    max_size=12,
)


def _run(cursor: Cursor, reads: list[tuple[str, int | None]]) -> list[object]:
    out: list[object] = []
    for name, arg in reads:
        method = getattr(cursor, name)
        try:
            value = method() if arg is None else method(arg)
        except BinlogError as e:  # the same failure is expected of both cursors (and nothing but BinlogError)
            out.append(type(e).__name__)
            break
        out.append(bytes(value) if isinstance(value, memoryview) else value)
    return out


@given(st.binary(max_size=40), READS)
def test_tracing_cursor_reads_like_cursor_and_records_what_it_consumed(
    buf: bytes, reads: list[tuple[str, int | None]]
) -> None:
    trace: list[object] = []
    plain = Cursor(buf, base=-19)
    traced = TracingCursor(buf, base=-19, trace=trace)
    assert _run(traced, reads) == _run(plain, reads)
    assert traced.pos == plain.pos
    fields = fields_of(trace)
    # the fields tile the bytes consumed, in order, with event offsets (base -19: the body starts at offset 19)
    at = 19
    for f in fields:
        assert f.offset == at
        assert f.raw == buf[at - 19 : at - 19 + f.size]
        at += f.size
    assert at - 19 == traced.pos


def test_tracing_cursor_values_and_labels() -> None:
    trace: list[object] = []
    c = TracingCursor(bytes.fromhex("fc2c01036162630102ffee0700"), base=-19, trace=trace)
    assert c.packed_int("count") == 300
    assert c.packed_bytes("name") == b"abc"
    assert [(k, off, bytes(v)) for k, off, v in c.iter_tlv("tlv")] == [(1, 26, b"\xff\xee"), (7, 30, b"")]
    assert [(f.name, f.offset, f.size, f.value) for f in fields_of(trace)] == [
        ("count", 19, 3, 300),
        ("name length", 22, 1, 3),
        ("name", 23, 3, b"abc"),
        ("tlv", 26, 4, TlvValue(1, 2, b"\xff\xee")),
        ("tlv", 30, 2, TlvValue(7, 0, b"")),
    ]


def test_tracing_cursor_records_a_failed_tlv_walk_up_to_the_failure() -> None:
    trace: list[object] = []
    c = TracingCursor(bytes.fromhex("0101000205ff"), trace=trace)
    with pytest.raises(TruncatedError):
        list(c.iter_tlv("optional metadata"))
    assert [f.raw for f in fields_of(trace)] == [b"\x01\x01\x00"]


def test_fields_of_ignores_foreign_entries() -> None:
    f = TraceField("x", 0, 1, b"\x00", 0)
    assert fields_of([f, "other"]) == [f]
    assert fields_of(None) == []


# --- hex input ---------------------------------------------------------------------------------------------------


def _xxd(data: bytes, start: int) -> str:
    """What ``xxd -s START`` prints (two spaces before the ASCII column)."""
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i : i + 16]
        groups = " ".join(chunk[j : j + 2].hex() for j in range(0, len(chunk), 2))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{start + i:08x}: {groups:<39}  {text}")
    return "\n".join(lines) + "\n"


def _hexdump_c(data: bytes) -> str:
    """What ``hexdump -C`` prints."""
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i : i + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{i:08x}  {' '.join(f'{b:02x}' for b in chunk):<48} |{text}|")
    return "\n".join(lines) + "\n"


@given(st.binary(min_size=1, max_size=100), st.integers(0, 1 << 20))
def test_xxd_output_parses_back(data: bytes, start: int) -> None:
    assert parse_hex_dump(_xxd(data, start)) == data


@given(st.binary(min_size=1, max_size=100))
def test_hexdump_c_output_parses_back(data: bytes) -> None:
    dump = _hexdump_c(data)
    # hexdump -C has no colon after the offset: the offset is one more 4-byte group, so strip it as a user would
    assert parse_hex_dump("\n".join(line[10:] for line in dump.splitlines())) == data


@given(st.binary(max_size=64))
def test_plain_hex_parses(data: bytes) -> None:
    assert parse_hex_dump(data.hex()) == data
    assert parse_hex_dump(" ".join(f"{b:02x}" for b in data)) == data


def test_hex_dump_comments_and_ascii_column_with_spaces() -> None:
    text = "#171206 13:43:00 server id 10124\n00000000: 6120 6220 a b \n"
    assert parse_hex_dump(text) == b"a b "


# --- explaining real events --------------------------------------------------------------------------------------


def _explained_table_maps(path: Path) -> list[tuple[TableMapEvent, Explanation]]:
    out = []
    data = path.read_bytes()
    for ev in read_events(path):
        if isinstance(ev, TableMapEvent) and ev.header.in_payload is None:
            raw, ctx = event_at(str(path), ev.header.pos, DecodeOptions())
            assert raw == data[ev.header.pos : ev.header.end_pos]
            out.append((ev, explain_event(raw, ev.header.pos, ctx)))
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("name", [MINIMAL, ENUM_SET, "mariadb/binlogs/corpus-bin.000012"])
def test_every_byte_of_corpus_table_maps_is_explained(corpus_dir: Path, name: str) -> None:
    explained = _explained_table_maps(corpus_dir / name)
    assert explained
    for tm, ex in explained:
        assert ex.error is None
        rows = ex.rows
        assert b"".join(r.raw for r in rows) == ex.raw
        assert not [r for r in rows if r.name == "(not read)"]
        tlv = [r for r in rows if r.name == "optional metadata"]
        assert [r.offset for r in tlv] == [o.offset for o in tm.optional]
        assert [r.meaning.split(":")[0] for r in tlv] == [o.type for o in tm.optional]
        assert rows[-1].meaning.endswith(": OK")


@pytest.mark.corpus
def test_minimal_row_metadata_table_map_meanings(corpus_dir: Path) -> None:
    # mariadb-binlog -vv: `noria`.`t1` mapped to number 111; @1 INT NOT NULL, @3 STRING(8), @5 INT unsigned
    raw, ctx = event_at(str(corpus_dir / MINIMAL), 312, DecodeOptions())
    ex = explain_event(raw, 312, ctx)
    rows = {r.name: r for r in ex.rows}
    assert rows["table_id"].value == 111
    assert rows["schema name"].meaning == "`noria`"
    assert rows["column types"].meaning == (
        "col 1 LONG (3), col 2 BLOB (252), col 3 STRING (254), col 4 LONG (3), col 5 LONG (3)"
    )
    assert rows["column metadata"].meaning == "col 2 BLOB: 2-byte length prefix, col 3 STRING: CHAR, max 8 bytes"
    tlv = [r.meaning for r in ex.rows if r.name == "optional metadata"]
    assert tlv == [
        "SIGNEDNESS: col 1 is signed, col 4 is signed, col 5 is unsigned [type 1, length 1]",
        "COLUMN_CHARSET: col 2: binary (63), col 3: utf8mb4_0900_ai_ci (255) [type 3, length 4]",
    ]


@pytest.mark.corpus
def test_enum_set_table_map_meanings(corpus_dir: Path) -> None:
    raw, ctx = event_at(str(corpus_dir / ENUM_SET), 946, DecodeOptions())
    tlv = {
        r.meaning.split(":")[0]: r.meaning for r in explain_event(raw, 946, ctx).rows if r.name == "optional metadata"
    }
    assert tlv["SET_STR_VALUE"].startswith("SET_STR_VALUE: `f4`: 'one', 'two', 'three', 'four'")
    assert tlv["ENUM_STR_VALUE"].startswith("ENUM_STR_VALUE: `f3`: 'var1', 'variant2', 'foo'")
    assert tlv["COLUMN_NAME"].startswith("COLUMN_NAME: col 1 = `f1`, col 2 = `f2`")


@pytest.mark.corpus
def test_format_description_split_into_lengths_and_checksum_alg(corpus_dir: Path) -> None:
    raw, ctx = event_at(str(corpus_dir / MINIMAL), 4, DecodeOptions())
    ex = explain_event(raw, 4, ctx)
    rows = {r.name: r for r in ex.rows}
    assert rows["server_version"].meaning == '"8.0.40"'
    assert rows["checksum_alg"].meaning == "1 = CRC32" and rows["checksum_alg"].section == "body"
    assert "TABLE_MAP_EVENT 8" in rows["post_header_lengths"].meaning
    assert ex.post_header_len == 98


def test_json_form_of_an_explanation() -> None:
    doc = render_json(explain_event(SEED_000, 620, DecodeContext(fde=synthetic_fde())))
    assert (doc["pos"], doc["end_pos"], doc["type"], doc["type_code"], doc["size"]) == (
        620,
        688,
        "TABLE_MAP_EVENT",
        19,
        68,
    )
    assert doc["checksum"] == {"stored": "0xd8d0a8fb", "computed": "0xd8d0a8fb", "ok": True}
    fields = doc["fields"]
    assert isinstance(fields, list)
    assert fields[0] == {
        "section": "header",
        "name": "timestamp",
        "offset": 0,
        "size": 4,
        "hex": "32103568",
        "value": 1748308018,
        "meaning": "1748308018 = 2025-05-27 01:06:58 UTC",
    }
    tlv = [f for f in fields if f["name"] == "optional metadata"]
    assert tlv[1]["value"] == {"type": 2, "length": 3, "value": "fcff00"}
    json.dumps(doc)  # serialisable as is


# --- the subcommand ----------------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_explain_file_subcommand(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(corpus_dir / MINIMAL), "--at", "312"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Position 312: TABLE_MAP_EVENT, 62 bytes = 19 header + 8 post-header + 31 body + 4 checksum")
    assert "COLUMN_CHARSET: col 2: binary (63)" in out


@pytest.mark.corpus
def test_explain_not_an_event_start(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(corpus_dir / MINIMAL)
    assert main(["explain", path, "--at", "313"]) == 2
    assert capsys.readouterr().err == f"binlake explain: {path}: no event starts at 313: the event at 312 ends at 374\n"


def test_explain_hex_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--json", "--hex", SEED_000.hex()]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pos"] == 620  # end_log_pos 688 - size 68
    assert doc["error"] is None


def test_explain_hex_without_checksum(capsys: pytest.CaptureFixture[str]) -> None:
    # the seed event without its CRC, explained as written by a server with binlog_checksum=NONE
    raw = bytearray(SEED_000[:-4])
    raw[9] = 64  # event size
    assert main(["explain", "--no-checksum", "--at", "620", "--hex", raw.hex()]) == 0
    out = capsys.readouterr().out
    assert "CHECKSUM" not in out and "DEFAULT_CHARSET: utf8mb4_0900_ai_ci (255)" in out


def test_explain_needs_an_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain"]) == 2
    assert "give FILE --at POS, or --hex HEX" in capsys.readouterr().err


def test_query_status_variables_are_explained_field_by_field(corpus_dir: Path) -> None:
    """Every byte of a QUERY event is a named field: post-header fields, each status variable, db, query."""
    from binlake.decoder import Decoder
    from binlake.events.query import QueryEvent
    from binlake.trace import fields_of

    path = corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"
    data = path.read_bytes()
    d = Decoder()
    d.feed(data)
    ev = next(e for e in d.events() if isinstance(e, QueryEvent) and e.status_vars)
    raw = data[ev.header.pos : ev.header.end_pos]
    from binlake.decoder import decode_event
    from binlake.events.context import DecodeContext

    ctx = DecodeContext(fde=d.ctx.fde, trace=[])
    decode_event(raw, ev.header.pos, ctx)
    fields = fields_of(ctx.trace)
    names = [f.name for f in fields]
    assert names[:5] == ["thread_id", "exec_time", "db_len", "error_code", "status_vars_len"]
    assert "Q_FLAGS2" in names and "Q_SQL_MODE" in names
    covered = sum(f.size for f in fields)
    assert covered == len(raw) - 19 - 4  # every body byte belongs to a field
