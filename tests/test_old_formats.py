"""Binlogs of MySQL 3.23 (v1: 13-byte headers) and 4.0/4.1 (v3: START_EVENT_V3, no format description).

No such file is in the corpus, so the events are built here from the layouts of MySQL 4.0's ``log_event.cc``
(``Start_log_event::write_data``, ``Query_log_event::write_data``: thread id 4, exec time 4, db length 1, error
code 2, then the database, a NUL and the query; no status variables before 5.0).
"""

from __future__ import annotations

import struct

import pytest

from binlake.decoder import Decoder
from binlake.errors import TruncatedError
from binlake.events.format import StartV3Event
from binlake.events.query import QueryEvent


def _start_v3(version: int, header_len: int, pos: int) -> bytes:
    body = struct.pack("<H", version) + b"4.0.24-log".ljust(50, b"\0") + struct.pack("<I", 1_100_000_000)
    return _event(1, body, header_len, pos)


def _query(db: bytes, sql: bytes, header_len: int, pos: int) -> bytes:
    body = struct.pack("<IIBH", 7, 0, len(db), 0) + db + b"\0" + sql
    return _event(2, body, header_len, pos)


def _event(code: int, body: bytes, header_len: int, pos: int) -> bytes:
    size = header_len + len(body)
    if header_len == 13:
        return struct.pack("<IBII", 1_100_000_000, code, 1, size) + body
    return struct.pack("<IBIIIH", 1_100_000_000, code, 1, size, pos + size, 0) + body


@pytest.mark.parametrize(("version", "header_len"), [(1, 13), (3, 19)])
def test_old_binlogs_decode(version: int, header_len: int) -> None:
    start = _start_v3(version, header_len, 4)
    q1 = _query(b"test", b"CREATE TABLE t (a INT)", header_len, 4 + len(start))
    q2 = _query(b"test", b"INSERT INTO t VALUES (1)", header_len, 4 + len(start) + len(q1))
    d = Decoder()
    d.feed(b"\xfebin" + start + q1 + q2)
    events = list(d.events())
    d.finish()
    first, a, b = events
    assert isinstance(first, StartV3Event) and (first.binlog_version, first.server_version) == (version, "4.0.24-log")
    assert isinstance(a, QueryEvent) and isinstance(b, QueryEvent)
    assert (a.db, a.query, a.thread_id) == ("test", "CREATE TABLE t (a INT)", 7)
    assert (b.header.pos, b.query) == (4 + len(start) + len(q1), "INSERT INTO t VALUES (1)")
    assert d.ctx.header_len == header_len and d.ctx.checksum_len == 0


def test_partial_v1_event_is_truncated() -> None:
    start = _start_v3(1, 13, 4)
    q = _query(b"test", b"SELECT 1", 13, 4 + len(start))
    d = Decoder()
    d.feed(b"\xfebin" + start + q[:-3])
    assert len(list(d.events())) == 1
    with pytest.raises(TruncatedError):
        d.finish()
