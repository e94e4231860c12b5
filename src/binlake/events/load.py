"""LOAD DATA INFILE events: the 3.23-4.x LOAD (6), CREATE_FILE (8), APPEND_BLOCK (9), EXEC_LOAD (10),
DELETE_FILE (11), NEW_LOAD (12), and the 5.0+ BEGIN_LOAD_QUERY (17) / EXECUTE_LOAD_QUERY (18) pair.

The file's bytes travel in CREATE_FILE / BEGIN_LOAD_QUERY and APPEND_BLOCK events (``file_id`` ties them
together); EXEC_LOAD / EXECUTE_LOAD_QUERY runs the load, DELETE_FILE drops the file.

Layouts (MySQL 5.0 ``sql/log_event.cc`` ``Load_log_event::copy_log_event``, ``sql_ex_info::init``;
``libs/mysql/binlog/event/load_data_events.{h,cpp}``; MariaDB ``sql/log_event.cc``)::

    LOAD / NEW_LOAD / CREATE_FILE post-header
        thread_id u32, exec_time u32, skip_lines u32, table_name_len u8, db_len u8, num_fields u32
        (CREATE_FILE: then file_id u32)
    body
        sql_ex       LOAD: field_term, enclosed, line_term, line_start, escaped, opt_flags, empty_flags (1 byte each)
                     NEW_LOAD / CREATE_FILE: the five strings as (len u8, bytes), then opt_flags u8
        field_lens   num_fields bytes
        fields       num_fields names, each + NUL
        table_name   + NUL;  db + NUL;  file name (CREATE_FILE: + NUL, then the file's first block)
    APPEND_BLOCK / BEGIN_LOAD_QUERY   file_id u32, block
    EXEC_LOAD / DELETE_FILE           file_id u32
    EXECUTE_LOAD_QUERY                QUERY's post-header, file_id u32, fn_pos_start u32, fn_pos_end u32,
                                      dup_handling u8 (0 ERROR, 1 IGNORE, 2 REPLACE), then QUERY's body

Example::

    >>> from binlake.events.base import EventHeader
    >>> from binlake.events.context import DecodeContext
    >>> ev = decode_file_block(EventHeader(0, 17, 1, 0, 0, 0, 4), b"\\x01\\x00\\x00\\x001\\ta\\n", DecodeContext())
    >>> ev.file_id, ev.block, ev.summary()
    (1, b'1\\ta\\n', 'file_id 1, 4 bytes')
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from binlake.errors import MalformedError
from binlake.events.base import Event, EventHeader, EventType
from binlake.events.context import DecodeContext
from binlake.events.query import QueryEvent, read_query_post_header, read_query_rest
from binlake.wire import Cursor

__all__ = [
    "DUP_HANDLING",
    "ExecuteLoadQueryEvent",
    "FileBlockEvent",
    "FileIdEvent",
    "LoadEvent",
    "SqlEx",
]

_LOAD_POST = struct.Struct("<IIIBBI")  # thread_id, exec_time, skip_lines, table_name_len, db_len, num_fields
DUP_HANDLING = {0: "LOAD_DUP_ERROR", 1: "LOAD_DUP_IGNORE", 2: "LOAD_DUP_REPLACE"}


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class SqlEx:
    """The FIELDS / LINES clauses of a LOAD DATA (``sql_ex_info``); ``empty_flags`` only in the old format."""

    field_term: bytes
    enclosed: bytes
    line_term: bytes
    line_start: bytes
    escaped: bytes
    opt_flags: int
    empty_flags: int | None


def _sql_ex(c: Cursor, new_format: bool) -> SqlEx:
    if new_format:
        t = [c.take(c.u8("sql_ex length"), "sql_ex string") for _ in range(5)]
        return SqlEx(t[0], t[1], t[2], t[3], t[4], c.u8("opt_flags"), None)
    raw = c.take(7, "old sql_ex")
    return SqlEx(raw[0:1], raw[1:2], raw[2:3], raw[3:4], raw[4:5], raw[5], raw[6])


@dataclass(frozen=True, slots=True)
class LoadEvent(Event):
    """LOAD (6), NEW_LOAD (12) or CREATE_FILE (8): a LOAD DATA statement's parameters, in pieces.

    ``file_id`` and ``block`` only for CREATE_FILE (the file's first block).
    """

    thread_id: int
    exec_time: int
    skip_lines: int
    sql_ex: SqlEx
    fields: tuple[str, ...]
    table: str
    db: str
    file_name: str
    file_id: int | None
    block: bytes

    def summary(self) -> str:
        fid = f"file_id {self.file_id}, " if self.file_id is not None else ""
        return f"{fid}LOAD DATA INFILE '{self.file_name}' INTO TABLE `{self.db}`.`{self.table}`"


def decode_load(header: EventHeader, body: bytes, ctx: DecodeContext) -> LoadEvent:
    c = ctx.cursor(body)
    load_post = ctx.post_header_len(EventType.LOAD_EVENT) or _LOAD_POST.size
    thread_id, exec_time, skip_lines, table_len, db_len, num_fields = _LOAD_POST.unpack(
        c.take(_LOAD_POST.size, "load post-header")
    )
    c.skip(load_post - _LOAD_POST.size, "rest of the load post-header")
    create = header.type_code == EventType.CREATE_FILE_EVENT
    file_id = c.u32("file_id") if create else None
    if num_fields > c.remaining:
        raise MalformedError(f"LOAD event claims {num_fields} fields in {c.remaining} bytes")
    sql_ex = _sql_ex(c, header.type_code != EventType.LOAD_EVENT)
    lens = c.take(num_fields, "field lengths")
    fields = []
    for n in lens:
        fields.append(_text(c.take(n, "field name")))
        c.skip(1, "field name terminator")
    table = _text(c.take(table_len, "table name"))
    c.skip(1, "table name terminator")
    db = _text(c.take(db_len, "db"))
    c.skip(1, "db terminator")
    if create:
        file_name, block = _text(c.cstring("file name")), c.rest()
    else:
        file_name, block = _text(c.rest().split(b"\0", 1)[0]), b""
    return LoadEvent(
        header, thread_id, exec_time, skip_lines, sql_ex, tuple(fields), table, db, file_name, file_id, block
    )


@dataclass(frozen=True, slots=True)
class FileBlockEvent(Event):
    """APPEND_BLOCK (9) or BEGIN_LOAD_QUERY (17): ``block`` is the next piece of file ``file_id``."""

    file_id: int
    block: bytes

    def summary(self) -> str:
        return f"file_id {self.file_id}, {len(self.block)} bytes"


def decode_file_block(header: EventHeader, body: bytes, ctx: DecodeContext) -> FileBlockEvent:
    c = ctx.cursor(body)
    return FileBlockEvent(header, c.u32("file_id"), c.rest())


@dataclass(frozen=True, slots=True)
class FileIdEvent(Event):
    """EXEC_LOAD (10): run the load of ``file_id``; DELETE_FILE (11): drop it."""

    file_id: int

    def summary(self) -> str:
        return f"file_id {self.file_id}"


def decode_file_id(header: EventHeader, body: bytes, ctx: DecodeContext) -> FileIdEvent:
    return FileIdEvent(header, ctx.cursor(body).u32("file_id"))


@dataclass(frozen=True, slots=True)
class ExecuteLoadQueryEvent(QueryEvent):
    """The LOAD DATA statement over file ``file_id``; ``fn_pos_start``/``fn_pos_end`` delimit its file clause."""

    file_id: int
    fn_pos_start: int
    fn_pos_end: int
    dup_handling: int

    @property
    def file_clause(self) -> str:
        """``query_raw[fn_pos_start:fn_pos_end]``: the part a replica rewrites, `` INFILE 'name' [REPLACE] INTO``
        (``Execute_load_query_log_event::print_query_header``)."""
        return _text(self.query_raw[self.fn_pos_start : self.fn_pos_end])

    @property
    def file_name(self) -> str:
        """The file the source loaded (the quoted string of :attr:`file_clause`)."""
        clause = self.file_clause
        first, last = clause.find("'"), clause.rfind("'")
        return clause[first + 1 : last] if 0 <= first < last else clause

    @property
    def dup_handling_name(self) -> str:
        return DUP_HANDLING.get(self.dup_handling, f"UNKNOWN_{self.dup_handling}")

    def summary(self) -> str:
        return f"file_id {self.file_id}, {QueryEvent.summary(self)}"


_ELQ_EXTRA = struct.Struct("<IIIB")


def decode_execute_load_query(header: EventHeader, body: bytes, ctx: DecodeContext) -> ExecuteLoadQueryEvent:
    c = ctx.cursor(body)
    post_len = ctx.post_header_len(EventType.EXECUTE_LOAD_QUERY_EVENT)
    thread_id, exec_time, db_len, error_code, status_len = read_query_post_header(c, post_len)
    file_id, start, end, dup = _ELQ_EXTRA.unpack(c.take(_ELQ_EXTRA.size, "execute load query post-header"))
    status_vars, unparsed, db, query = read_query_rest(c, post_len, db_len, status_len)
    if not start <= end <= len(query):
        raise MalformedError(f"file name position {start}..{end} outside the {len(query)}-byte query")
    return ExecuteLoadQueryEvent(
        header, thread_id, exec_time, error_code, status_vars, unparsed, db, query, file_id, start, end, dup
    )
