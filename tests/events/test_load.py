"""LOAD DATA events: BEGIN_LOAD_QUERY / EXECUTE_LOAD_QUERY from real logs, the 4.x LOAD family from bytes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from tests.events._corpus import events_at

from binlake.errors import MalformedError
from binlake.events.base import EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.load import (
    ExecuteLoadQueryEvent,
    FileBlockEvent,
    decode_execute_load_query,
    decode_file_id,
    decode_load,
)


def _h(code: int) -> EventHeader:
    return EventHeader(0, code, 1, 0, 0, 0, 4)


def test_load_data_pair(corpus_dir: Path) -> None:
    # corpus-bin.000007: "#Begin_load_query: file_id: 1  block_len: 54" at 4418, then "Execute_load_query ...
    # LOAD DATA LOCAL INFILE '/srv/SQL_LOAD_MB-1-c' INTO TABLE `s` ... # file_id: 1" at 4531
    evs = events_at(corpus_dir, "mariadb/binlogs/corpus-bin.000007")
    block, run = evs[4418], evs[4531]
    assert isinstance(block, FileBlockEvent) and block.file_id == 1 and len(block.block) == 54
    assert block.block.startswith(b"1\talpha\t10.50\n2\tbeta\t-3.25\n")
    assert isinstance(run, ExecuteLoadQueryEvent) and run.file_id == 1 and run.dup_handling_name == "LOAD_DUP_ERROR"
    assert run.file_clause == " INFILE '/srv/mariadb-corpus/load_data.tsv' INTO"
    assert run.file_name == "/srv/mariadb-corpus/load_data.tsv"
    assert run.query.endswith("LINES TERMINATED BY '\\n' (@`id`, `v`, `r`)") and run.db == "corpus_stmt"


def test_mysql51_load_data(corpus_dir: Path) -> None:
    evs = events_at(corpus_dir, "mysql/rust_mysql_common/ver_5_1_23.001")
    blocks = [ev for ev in evs.values() if isinstance(ev, FileBlockEvent)]
    runs = [ev for ev in evs.values() if isinstance(ev, ExecuteLoadQueryEvent)]
    assert [b.type for b in blocks] == ["BEGIN_LOAD_QUERY_EVENT", "APPEND_BLOCK_EVENT"]
    assert len(runs) == 1 and {b.file_id for b in blocks} == {runs[0].file_id}
    assert runs[0].query.startswith("LOAD DATA") and "INFILE" in runs[0].file_clause


def _sql_ex_new() -> bytes:
    return b"\x01\t" + b"\x00" + b"\x01\n" + b"\x00" + b"\x01\\" + b"\x00"


def test_new_load_and_create_file() -> None:
    post = struct.pack("<IIIBBI", 5, 1, 2, 2, 3, 2)
    tail = b"\x01\x02" + b"a\0bc\0" + b"t1\0" + b"db1\0"
    ev = decode_load(_h(EventType.NEW_LOAD_EVENT), post + _sql_ex_new() + tail + b"/srv/f.txt", DecodeContext())
    assert (ev.thread_id, ev.skip_lines, ev.fields, ev.table, ev.db, ev.file_name) == (
        5,
        2,
        ("a", "bc"),
        "t1",
        "db1",
        "/srv/f.txt",
    )
    assert (ev.sql_ex.field_term, ev.sql_ex.line_term, ev.sql_ex.escaped, ev.sql_ex.empty_flags) == (
        b"\t",
        b"\n",
        b"\\",
        None,
    )
    cf = decode_load(
        _h(EventType.CREATE_FILE_EVENT),
        post + struct.pack("<I", 9) + _sql_ex_new() + tail + b"/srv/f.txt\0" + b"1,2\n",
        DecodeContext(),
    )
    assert (cf.file_id, cf.file_name, cf.block) == (9, "/srv/f.txt", b"1,2\n")
    old = decode_load(_h(EventType.LOAD_EVENT), post + b',"\n\x00\\\x01\x00' + tail + b"x.csv", DecodeContext())
    assert (old.sql_ex.field_term, old.sql_ex.enclosed, old.sql_ex.opt_flags, old.sql_ex.empty_flags) == (
        b",",
        b'"',
        1,
        0,
    )
    assert decode_file_id(_h(EventType.DELETE_FILE_EVENT), struct.pack("<I", 9), DecodeContext()).file_id == 9


def test_file_clause_outside_the_query() -> None:
    body = struct.pack("<IIBHH", 1, 0, 1, 0, 0) + struct.pack("<IIIB", 1, 5, 500, 0) + b"d\0LOAD DATA"
    with pytest.raises(MalformedError):
        decode_execute_load_query(_h(EventType.EXECUTE_LOAD_QUERY_EVENT), body, DecodeContext())
