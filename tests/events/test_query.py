"""QUERY and QUERY_COMPRESSED: status variables, db and text, against mariadb-binlog's output and hand-built bytes."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.events._corpus import events_at

from binlake.errors import DecompressionError, MalformedError, TruncatedError
from binlake.events.base import EventHeader, EventType
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.format import StartV3Event
from binlake.events.query import QueryEvent, decode_query

MARIA = "mariadb/binlogs/corpus-bin.0000"


def _body(status: bytes, db: bytes = b"test", query: bytes = b"SELECT 1", thread: int = 7) -> bytes:
    return struct.pack("<IIBHH", thread, 3, len(db), 0, len(status)) + status + db + b"\0" + query


def _decode(body: bytes, code: int = EventType.QUERY_EVENT, ctx: DecodeContext | None = None) -> QueryEvent:
    return decode_query(EventHeader(0, code, 1, 19 + len(body), 0, 0, 4), body, ctx or DecodeContext())


def test_mariadb_status_vars_as_mariadb_binlog_prints_them(corpus_dir: Path) -> None:
    # corpus-bin.000007 at 385: "SET @@session.sql_mode=1411383296", "character_set_client=utf8mb4,
    # collation_connection=45,collation_server=8", thread_id=6, "CREATE DATABASE corpus_stmt CHARACTER SET utf8mb4"
    ev = events_at(corpus_dir, MARIA + "07")[385]
    assert isinstance(ev, QueryEvent)
    assert (ev.thread_id, ev.exec_time, ev.error_code, ev.db) == (6, 0, 0, "corpus_stmt")
    assert ev.query == "CREATE DATABASE corpus_stmt CHARACTER SET utf8mb4"
    assert ev.status("SQL_MODE") == 1411383296
    assert ev.status("CHARSET") == (45, 45, 8)
    assert ev.status("CATALOG_NZ") == "std"
    assert ev.flags2_names == []  # foreign_key_checks=1, sql_auto_is_null=0, unique_checks=1, autocommit=1
    assert [v.code for v in ev.status_vars] == [0, 1, 6, 4] and ev.status_unparsed == b""
    assert ev.status_vars[0].offset == 19 + 13 + 1  # right after the code byte of the first status variable


def test_query_compressed_with_q_xid(corpus_dir: Path) -> None:
    # corpus-bin.000009 at 429: "Query_compressed thread_id=6 exec_time=0 error_code=0 xid=442"
    ev = events_at(corpus_dir, MARIA + "09")[429]
    assert isinstance(ev, QueryEvent) and ev.type == "QUERY_COMPRESSED_EVENT"
    assert ev.xid == 442 and ev.status("XID") == 442 and ev.db == "corpus_dml"
    assert ev.query.startswith("CREATE TABLE comp (")
    later = events_at(corpus_dir, MARIA + "09")[9943]
    assert isinstance(later, QueryEvent)
    assert later.query.startswith("INSERT INTO comp VALUES (20, 20, 'statement-format insert long enough")
    assert later.query.endswith(
        "quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.', 'stmt')"
    )


def test_mysql8_status_vars(corpus_dir: Path) -> None:
    # maxwell/binlog.000004 (8.0.29): a DDL carries its XID, the databases it touched and the 8.0 session vars
    ev = events_at(corpus_dir, "mysql/maxwell/binlog.000004")[276]
    assert isinstance(ev, QueryEvent)
    assert ev.status("UPDATED_DB_NAMES") == ("maxwell",)
    assert ev.status("CHARSET") == (255, 255, 224)
    assert ev.status("DEFAULT_COLLATION_FOR_UTF8MB4") == 255
    assert ev.status("DEFAULT_TABLE_ENCRYPTION") == 0
    assert ev.xid == ev.status("DDL_LOGGED_WITH_XID") == 727


def test_ddl_xids_increase_with_the_commit_xids(corpus_dir: Path) -> None:
    """XIDs of one server only grow: DDL XIDs interleave with the XID events' values."""
    xids = []
    for ev in events_at(corpus_dir, "mysql/maxwell/binlog.000004").values():
        if isinstance(ev, QueryEvent) and ev.xid is not None:
            xids.append(ev.xid)
        elif ev.type == "XID_EVENT":
            xids.append(ev.xid)  # type: ignore[attr-defined]
    assert len(xids) > 20 and xids == sorted(xids) and len(set(xids)) == len(xids)


def test_every_status_var_code() -> None:
    status = (
        b"\x00"
        + struct.pack("<I", 0x0C084000)
        + b"\x01"
        + struct.pack("<Q", 1 << 33)
        + b"\x02\x03std\x00"
        + b"\x03"
        + struct.pack("<HH", 5, 2)
        + b"\x04"
        + struct.pack("<HHH", 33, 8, 255)
        + b"\x05\x06+02:00"
        + b"\x06\x03cat"
        + b"\x07"
        + struct.pack("<H", 7)
        + b"\x08"
        + struct.pack("<H", 28)
        + b"\x09"
        + struct.pack("<Q", 0b101)
        + b"\x0a"
        + struct.pack("<I", 1234)
        + b"\x0b\x04root\x09localhost"
        + b"\x0c\x02d1\x00d2\x00"
        + b"\x0d"
        + (999999).to_bytes(3, "little")
        + b"\x10\x01"
        + b"\x11"
        + struct.pack("<Q", 42)
        + b"\x12"
        + struct.pack("<H", 255)
        + b"\x13\x01\x14\x00\x15\x01"
        + b"\x80"
        + (123456).to_bytes(3, "little")
        + b"\x81"
        + struct.pack("<Q", 99)
        + b"\x82\x04"
        + struct.pack("<Q", 17)
        + b"\x83\x01"
        + struct.pack("<HH", 33, 224)
    )
    ev = _decode(_body(status))
    assert {v.name: v.value for v in ev.status_vars} == {
        "FLAGS2": 0x0C084000,
        "SQL_MODE": 1 << 33,
        "CATALOG": "std",
        "AUTO_INCREMENT": (5, 2),
        "CHARSET": (33, 8, 255),
        "TIME_ZONE": "+02:00",
        "CATALOG_NZ": "cat",
        "LC_TIME_NAMES": 7,
        "CHARSET_DATABASE": 28,
        "TABLE_MAP_FOR_UPDATE": 5,
        "MASTER_DATA_WRITTEN": 1234,
        "INVOKER": ("root", "localhost"),
        "UPDATED_DB_NAMES": ("d1", "d2"),
        "MICROSECONDS": 999999,
        "EXPLICIT_DEFAULTS_FOR_TIMESTAMP": True,
        "DDL_LOGGED_WITH_XID": 42,
        "DEFAULT_COLLATION_FOR_UTF8MB4": 255,
        "SQL_REQUIRE_PRIMARY_KEY": 1,
        "DEFAULT_TABLE_ENCRYPTION": 0,
        "ENABLE_CASCADE_TRIGGERS": 1,
        "HRNOW": 123456,
        "XID": 99,
        "GTID_FLAGS3": (4, 17),
        "CHARACTER_SET_COLLATIONS": ((33, 224),),
    }
    assert ev.flags2_names == [
        "OPTION_AUTO_IS_NULL",
        "OPTION_NOT_AUTOCOMMIT",
        "OPTION_NO_FOREIGN_KEY_CHECKS",
        "OPTION_RELAXED_UNIQUE_CHECKS",
    ]
    assert ev.status_unparsed == b"" and ev.query == "SELECT 1" and ev.db == "test"


def test_too_many_databases_and_unknown_code_stop_like_the_server() -> None:
    ev = _decode(_body(b"\x0c\xfe" + b"\x0e" + b"\x01\x02\x03" + b"\x04" + bytes(6)))
    assert ev.status("UPDATED_DB_NAMES") is None  # OVER_MAX_DBS_IN_EVENT_MTS
    assert ev.status_unparsed == b"\x0e\x01\x02\x03\x04" + bytes(6) and ev.unparsed_code == "COMMIT_TS"
    assert ev.status("CHARSET") is None  # after the unknown code nothing can be located
    assert ev.query == "SELECT 1"


def test_gtid_flags3_without_alter_has_no_seq_no() -> None:
    assert _decode(_body(b"\x82\x01")).status("GTID_FLAGS3") == (1, None)


def test_query_text_in_the_client_charset() -> None:
    latin1 = _decode(_body(b"\x04" + struct.pack("<HHH", 8, 8, 8), query="SELECT 'é'".encode("latin1")))
    assert latin1.query == "SELECT 'é'"
    bad = _decode(_body(b"", query=b"SELECT '\xff'"))
    assert bad.query.encode("utf-8", "surrogateescape") == bad.query_raw


def test_binlog_v3_query_has_no_status_vars() -> None:
    body = struct.pack("<IIBH", 1, 0, 2, 0) + b"db\0DROP TABLE t"
    start = StartV3Event(EventHeader(0, 1, 1, 75, 0, 0, 4), 3, "4.0.20", 0)
    ctx = DecodeContext(fde=start.as_format_description())  # QUERY's post-header is 11 bytes in binlog v3
    ev = _decode(body, ctx=ctx)
    assert (ev.db, ev.query, ev.status_vars) == ("db", "DROP TABLE t", ())


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (struct.pack("<IIBHH", 1, 0, 4, 0, 200) + b"test\0x", MalformedError),  # status_vars_len past the end
        (struct.pack("<IIBHH", 1, 0, 9, 0, 0) + b"test\0x", TruncatedError),  # db_len past the end
        (struct.pack("<IIBHH", 1, 0, 0, 0, 2) + b"\x00\x01" + b"\0x", TruncatedError),  # FLAGS2 cut short
    ],
)
def test_malformed_query(body: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        _decode(body)


def _compressed(query: bytes) -> bytes:
    return bytes([0x80 | 4]) + len(query).to_bytes(4, "big") + zlib.compress(query)


def test_query_compressed_bound() -> None:
    body = _body(b"", query=_compressed(b"INSERT INTO t VALUES " + b"(1)," * 1000))
    ev = _decode(body, EventType.QUERY_COMPRESSED_EVENT)
    assert ev.query.startswith("INSERT INTO t VALUES (1),(1)")
    with pytest.raises(DecompressionError):
        _decode(body, EventType.QUERY_COMPRESSED_EVENT, DecodeContext(DecodeOptions(max_decompressed=100)))


@given(st.binary(max_size=300), st.text(max_size=40).map(lambda s: s.encode()), st.integers(0, 2**32 - 1))
def test_query_roundtrip(query: bytes, db: bytes, thread: int) -> None:
    db = db[:255]
    ev = _decode(_body(b"\x01" + struct.pack("<Q", 3), db=db, query=query, thread=thread))
    assert (ev.query_raw, ev.db.encode("utf-8", "surrogateescape"), ev.thread_id) == (query, db, thread)
    assert ev.status("SQL_MODE") == 3
