"""QUERY_EVENT (2) and MariaDB's QUERY_COMPRESSED_EVENT (165): a statement, its default database and the session
state it ran under (the status variables).

Layout (``Query_event`` in MySQL ``libs/mysql/binlog/event/statement_events.{h,cpp}``; MariaDB
``Query_log_event::Query_log_event`` in ``sql/log_event.cc``)::

    post-header  thread_id        4
                 exec_time        4   seconds
                 db_len           1
                 error_code       2
                 status_vars_len  2   absent when the post-header is 11 bytes (binlog v1/v3)
                 (more)               EXECUTE_LOAD_QUERY's extra fields (binlake.events.load)
    body         status_vars      status_vars_len bytes of (code u8, value) pairs
                 db               db_len bytes + NUL
                 query            to the end of the event

Every status variable either server writes is decoded by its code (:data:`STATUS_VARS`).  Like both servers, an
unknown code ends status parsing: the remaining bytes are kept in :attr:`QueryEvent.status_unparsed` (their layout
is unknown, so nothing after that code can be located).  Q_COMMIT_TS (14) and Q_COMMIT_TS2 (15) are such codes: both
servers reserve them and read neither.

A QUERY_COMPRESSED_EVENT has the same layout with its query compressed by MariaDB's binlog compression
(:func:`binlake.events.rows.mariadb_uncompress`).

Example::

    >>> from binlake.events.base import EventHeader
    >>> from binlake.events.context import DecodeContext
    >>> body = bytes.fromhex("05000000 00000000 04 0000 0c00") + bytes.fromhex("03 0100 0100 04 2100 2100 0800")
    >>> body += b"test\\0CREATE TABLE t (a INT)"
    >>> ev = decode_query(EventHeader(0, 2, 1, 0, 0, 0, 4), body, DecodeContext())
    >>> ev.db, ev.query, ev.status("CHARSET"), ev.summary()
    ('test', 'CREATE TABLE t (a INT)', (33, 33, 8), 'thread 5, db test: CREATE TABLE t (a INT)')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from binlake.errors import MalformedError
from binlake.events.base import Event, EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.gtid import FL_COMMIT_ALTER_E1, FL_ROLLBACK_ALTER_E1
from binlake.wire import Cursor

__all__ = [
    "FLAGS2",
    "STATUS_VARS",
    "QueryEvent",
    "StatusVar",
    "decode_query",
    "decode_status_vars",
    "read_query_post_header",
    "read_query_rest",
]

_MINIMAL_POST_HEADER = 11  # QUERY_HEADER_MINIMAL_LEN: binlog v1/v3 have no status_vars_len
_MAX_DBS_IN_EVENT_MTS = 16  # a larger count (OVER_MAX_DBS_IN_EVENT_MTS = 254) means "too many": no names follow

# OPTIONS_WRITTEN_TO_BIN_LOG (0x0c084000) bits of Q_FLAGS2, as statement_events.h documents them; MariaDB writes
# more bits of its own (``flags2_names`` lists only these)
FLAGS2: dict[int, str] = {
    0x00004000: "OPTION_AUTO_IS_NULL",
    0x00080000: "OPTION_NOT_AUTOCOMMIT",
    0x04000000: "OPTION_NO_FOREIGN_KEY_CHECKS",
    0x08000000: "OPTION_RELAXED_UNIQUE_CHECKS",
}


@dataclass(frozen=True, slots=True)
class StatusVar:
    """One status variable: its code, the name the servers give it, where it is and what it says.

    ``offset`` is from the start of the event (common header included), ``raw`` the value bytes after the code.
    """

    code: int
    name: str
    offset: int
    raw: bytes
    value: object


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _len_str(c: Cursor, what: str) -> str:
    return _text(c.take(c.u8(what), what))


def _catalog(c: Cursor) -> str:
    # 5.0.0-5.0.3: length, string, NUL (the NUL is not counted)
    value = _len_str(c, "Q_CATALOG")
    c.skip(1, "Q_CATALOG terminator")
    return value


def _invoker(c: Cursor) -> tuple[str, str]:
    return _len_str(c, "Q_INVOKER user"), _len_str(c, "Q_INVOKER host")


def _updated_db_names(c: Cursor) -> tuple[str, ...] | None:
    count = c.u8("Q_UPDATED_DB_NAMES count")
    if count > _MAX_DBS_IN_EVENT_MTS:
        return None  # OVER_MAX_DBS_IN_EVENT_MTS: the query touched more databases than are listed
    return tuple(_text(c.cstring("Q_UPDATED_DB_NAMES name")) for _ in range(count))


def _gtid_flags3(c: Cursor) -> tuple[int, int | None]:
    flags = c.u8("Q_GTID_FLAGS3")
    return flags, (
        c.u64("Q_GTID_FLAGS3 start alter seq_no") if flags & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1) else None
    )


def _character_set_collations(c: Cursor) -> tuple[tuple[int, int], ...]:
    # MariaDB 11.2+: count, then (charset id u16, collation id u16) pairs
    return tuple((c.u16("charset id"), c.u16("collation id")) for _ in range(c.u8("Q_CHARACTER_SET_COLLATIONS")))


_Reader = Callable[[Cursor], object]

STATUS_VARS: dict[int, tuple[str, _Reader]] = {
    0: ("FLAGS2", lambda c: c.u32("Q_FLAGS2")),
    1: ("SQL_MODE", lambda c: c.u64("Q_SQL_MODE")),
    2: ("CATALOG", _catalog),
    3: ("AUTO_INCREMENT", lambda c: (c.u16("auto_increment_increment"), c.u16("auto_increment_offset"))),
    4: ("CHARSET", lambda c: (c.u16("character_set_client"), c.u16("collation_connection"), c.u16("server"))),
    5: ("TIME_ZONE", lambda c: _len_str(c, "Q_TIME_ZONE")),
    6: ("CATALOG_NZ", lambda c: _len_str(c, "Q_CATALOG_NZ")),
    7: ("LC_TIME_NAMES", lambda c: c.u16("Q_LC_TIME_NAMES")),
    8: ("CHARSET_DATABASE", lambda c: c.u16("Q_CHARSET_DATABASE")),
    9: ("TABLE_MAP_FOR_UPDATE", lambda c: c.u64("Q_TABLE_MAP_FOR_UPDATE")),
    10: ("MASTER_DATA_WRITTEN", lambda c: c.u32("Q_MASTER_DATA_WRITTEN")),
    11: ("INVOKER", _invoker),
    12: ("UPDATED_DB_NAMES", _updated_db_names),
    13: ("MICROSECONDS", lambda c: c.uint(3, "Q_MICROSECONDS")),
    16: ("EXPLICIT_DEFAULTS_FOR_TIMESTAMP", lambda c: bool(c.u8("Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP"))),
    17: ("DDL_LOGGED_WITH_XID", lambda c: c.u64("Q_DDL_LOGGED_WITH_XID")),
    18: ("DEFAULT_COLLATION_FOR_UTF8MB4", lambda c: c.u16("Q_DEFAULT_COLLATION_FOR_UTF8MB4")),
    19: ("SQL_REQUIRE_PRIMARY_KEY", lambda c: c.u8("Q_SQL_REQUIRE_PRIMARY_KEY")),
    20: ("DEFAULT_TABLE_ENCRYPTION", lambda c: c.u8("Q_DEFAULT_TABLE_ENCRYPTION")),
    21: ("ENABLE_CASCADE_TRIGGERS", lambda c: c.u8("Q_ENABLE_CASCADE_TRIGGERS")),
    # MariaDB (sql/log_event.h)
    128: ("HRNOW", lambda c: c.uint(3, "Q_HRNOW")),
    129: ("XID", lambda c: c.u64("Q_XID")),
    130: ("GTID_FLAGS3", _gtid_flags3),
    131: ("CHARACTER_SET_COLLATIONS", _character_set_collations),
}
"""Status variable code -> (name without the ``Q_`` prefix, reader of its value)."""

# Codes both servers reserve but neither reads (Q_COMMIT_TS, Q_COMMIT_TS2): met in a log, they end parsing.
RESERVED_STATUS_VARS = {14: "COMMIT_TS", 15: "COMMIT_TS2"}


def decode_status_vars(c: Cursor, end: int) -> tuple[tuple[StatusVar, ...], bytes]:
    """Read status variables from ``c`` up to ``end``; return them and the bytes left after an unknown code.

    An unknown (or reserved) code stops parsing as in ``Query_log_event::Query_log_event``: its byte and
    everything after it up to ``end`` is returned unparsed.
    """
    out: list[StatusVar] = []
    inner = c.bounded(end)
    while inner.pos < end:
        start = inner.pos
        code = inner.u8("status variable code")
        entry = STATUS_VARS.get(code)
        if entry is None:
            inner.pos = start
            break
        name, read = entry
        value = read(inner)
        out.append(StatusVar(code, name, start + 1 - c.base, bytes(c.buf[start + 1 : inner.pos]), value))
    rest = bytes(c.buf[inner.pos : end])
    c.pos = end
    return tuple(out), rest


@dataclass(frozen=True, slots=True)
class QueryEvent(Event):
    """A statement (QUERY_EVENT or QUERY_COMPRESSED_EVENT; EXECUTE_LOAD_QUERY extends it)."""

    thread_id: int
    exec_time: int
    error_code: int
    status_vars: tuple[StatusVar, ...]
    status_unparsed: bytes
    db: str
    query_raw: bytes

    @property
    def query(self) -> str:
        """The statement as text, in the client's character set when it is known (bytes that do not decode are
        kept as surrogate escapes, so ``query_raw`` can always be recovered)."""
        from binlake.values.collations import codec, decode

        charset = self.status("CHARSET")
        name = codec(charset[0]) if isinstance(charset, tuple) else None
        text = decode(self.query_raw, name) if name is not None else self.query_raw
        return text if isinstance(text, str) else _text(text)

    @property
    def unparsed_code(self) -> str | None:
        """Name of the status variable code that stopped parsing (``COMMIT_TS``, ``CODE_200``), if one did."""
        if not self.status_unparsed:
            return None
        code = self.status_unparsed[0]
        return RESERVED_STATUS_VARS.get(code, f"CODE_{code}")

    def status(self, name: str) -> object:
        """The value of the status variable ``name`` (e.g. ``"SQL_MODE"``), ``None`` when absent."""
        for var in self.status_vars:
            if var.name == name:
                return var.value
        return None

    @property
    def flags2_names(self) -> list[str]:
        flags = self.status("FLAGS2")
        return [n for bit, n in FLAGS2.items() if isinstance(flags, int) and flags & bit]

    @property
    def xid(self) -> int | None:
        """The XID of a DDL logged as its own transaction (MySQL Q_DDL_LOGGED_WITH_XID, MariaDB Q_XID)."""
        value = self.status("DDL_LOGGED_WITH_XID")
        if value is None:
            value = self.status("XID")
        return value if isinstance(value, int) else None

    def summary(self) -> str:
        text = " ".join(self.query.split())
        if len(text) > 200:
            text = text[:197] + "..."
        where = f", db {self.db}" if self.db else ""
        err = f", error {self.error_code}" if self.error_code else ""
        return f"thread {self.thread_id}{where}{err}: {text}"


def read_query_post_header(c: Cursor, post_header_len: int) -> tuple[int, int, int, int, int]:
    """``(thread_id, exec_time, db_len, error_code, status_vars_len)``: the first 11 or 13 post-header bytes shared
    by QUERY and EXECUTE_LOAD_QUERY (``status_vars_len`` is 0 in binlog v1/v3, whose post-header is 11 bytes)."""
    if post_header_len < _MINIMAL_POST_HEADER:
        raise MalformedError(f"query post-header of {post_header_len} bytes is shorter than 11")
    thread_id, exec_time = c.u32("thread_id"), c.u32("exec_time")
    db_len, error_code = c.u8("db_len"), c.u16("error_code")
    status_len = c.u16("status_vars_len") if post_header_len > _MINIMAL_POST_HEADER else 0
    return thread_id, exec_time, db_len, error_code, status_len


def read_query_rest(
    c: Cursor, post_header_end: int, db_len: int, status_len: int
) -> tuple[tuple[StatusVar, ...], bytes, str, bytes]:
    """After the post-header (ending at ``post_header_end`` in ``c``): ``(status_vars, status_unparsed, db,
    query_raw)``."""
    if post_header_end < c.pos:
        raise MalformedError("query post-header shorter than its fields")
    if post_header_end > c.pos:  # a post-header longer than the fields this decoder knows
        c.skip(post_header_end - c.pos, "rest of the query post-header")
    if status_len > c.remaining:
        raise MalformedError(f"status_vars_len {status_len} runs past the event ({c.remaining} bytes left)")
    status_vars, unparsed = decode_status_vars(c, c.pos + status_len)
    db = _text(c.take(db_len, "db"))
    c.skip(1, "db terminator")
    return status_vars, unparsed, db, c.rest()


def decode_query(header: EventHeader, body: bytes, ctx: DecodeContext) -> QueryEvent:
    """Decode a QUERY_EVENT or QUERY_COMPRESSED_EVENT (whose query is uncompressed here, bounded by
    ``ctx.options.max_decompressed``)."""
    c = ctx.cursor(body)
    post_len = ctx.post_header_len(EventType.QUERY_EVENT)
    thread_id, exec_time, db_len, error_code, status_len = read_query_post_header(c, post_len)
    status_vars, unparsed, db, query = read_query_rest(c, post_len, db_len, status_len)
    if header.type_code == EventType.QUERY_COMPRESSED_EVENT:
        from binlake.events.rows import mariadb_uncompress

        query = mariadb_uncompress(query, ctx.options.max_decompressed, "compressed query")
    return QueryEvent(header, thread_id, exec_time, error_code, status_vars, unparsed, db, query)
