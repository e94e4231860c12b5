"""The statements of ``binlake dump``: QUERY (and its compressed and LOAD DATA forms) and the events that give a
statement its context (INTVAR, RAND, USER_VAR, the LOAD DATA file blocks).

``Query_log_event::print_query_header``/``print`` (``sql/log_event_client.cc``): the ``SET`` statements of the
session state repeat only where it changed since the last statement printed (the printer's
:class:`~binlake.render.dump.output.Session`, ``PRINT_EVENT_INFO`` in MariaDB).  :data:`HANDLERS` is this
family's part of the printer's dispatch table.

Example (corpus-bin.000009 of the corpus, some lines left out)::

    #261122 10:27:21 server id 1  end_log_pos 762 CRC32 0x4ba28dc8 \tQuery_compressed\tthread_id=6\texec_time=0\t...
    use `corpus_dml`/*!*/;
    SET TIMESTAMP=1795343241/*!*/;
    SET @@session.pseudo_thread_id=6/*!*/;
    ...
    SET @@session.collation_database=DEFAULT/*!*/;
    CREATE TABLE comp (
    ...
    /*!*/;
"""

from __future__ import annotations

import struct

from binlake.coltypes import Column, ColumnType
from binlake.events.base import (
    LOG_EVENT_SKIP_REPLICATION_F,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_THREAD_SPECIFIC_F,
    Event,
    EventType,
)
from binlake.events.control import IntvarEvent, RandEvent, UserVarEvent
from binlake.events.gtid import (
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_START_ALTER_E1,
)
from binlake.events.load import ExecuteLoadQueryEvent, FileBlockEvent, FileIdEvent
from binlake.events.query import QueryEvent
from binlake.render.dump.output import Handler, Output, Session
from binlake.render.dump.quoting import DELIM, backtick, pretty_str
from binlake.render.dump.rowtext import RENDER
from binlake.values import collations, reader_for

__all__ = [
    "HANDLERS",
    "MARIADB_OPTIONS",
    "context_statement",
    "load_file_name",
    "load_query",
    "session_statements",
]

T = ColumnType
E = EventType

# (Q_FLAGS2 bit, printed inverted, session variable) in print_query_header's order
_NOT_AUTOCOMMIT = 1 << 19
_FLAGS2_PRINTED = (
    (1 << 26, True, "foreign_key_checks"),
    (1 << 14, False, "sql_auto_is_null"),
    (1 << 27, True, "unique_checks"),
    (1 << 19, True, "autocommit"),
    (1 << 29, True, "check_constraint_checks"),
    (1 << 30, False, "sql_if_exists"),
    (1 << 24, False, "explicit_defaults_for_timestamp"),
    (1 << 31, False, "system_versioning_insert_history"),
)
MARIADB_OPTIONS = frozenset({1 << 30, 1 << 24, 1 << 31})  # logged only by MariaDB (options_written_to_bin_log)
_LOAD_DIR = "/tmp"  # where mariadb-binlog would write LOAD DATA files (its --local-load default, the tmpdir)
_LOAD_DUP_REPLACE = 2


def _is_trans_keyword(query: bytes, is_xa: bool) -> bool:
    """``Query_log_event::is_trans_keyword`` (MariaDB ``sql/log_event.h``): statements after which the printer
    forgets the current database.  This is the printer's own byte comparison, reproduced so the text matches
    ``mariadb-binlog`` byte for byte (``BEGIN``/``COMMIT`` and their prefixes, case-sensitive); which statements
    *are* transaction control is :func:`binlake.sql.statements.control`'s question, not this one."""
    if is_xa:
        return query[:3].upper() == b"XA "
    return (
        query == b"BEGIN"[: len(query)]
        or query == b"COMMIT"[: len(query)]
        or query[:9].upper() == b"SAVEPOINT"
        or query[:8].upper() == b"ROLLBACK"
    )


def _c_g(value: float, precision: int) -> str:
    """C's ``%.{precision}g``."""
    return f"{value:.{precision}g}"


# Query_log_event::print_query_header / print


def _query(out: Output, ev: Event) -> None:
    assert isinstance(ev, QueryEvent)
    state = out.session
    is_xa = bool(state.gtid_flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA))
    trans = _is_trans_keyword(ev.query_raw, is_xa)
    f = out.options.filter
    if not trans and (not f.wants_database(ev.db) or not f.wants_op("statement")):
        return
    suppress_use = trans or bool(ev.header.flags & LOG_EVENT_SUPPRESS_USE_F)
    _skip_replication(out, ev)
    load = isinstance(ev, ExecuteLoadQueryEvent)
    name = (
        "Execute_load_query"
        if load
        else ("Query_compressed" if ev.header.type_code == E.QUERY_COMPRESSED_EVENT else "Query")
    )
    xid = ev.status("XID")
    lines = [
        f"{out.header(ev)}\t{name}\tthread_id={ev.thread_id}\texec_time={ev.exec_time}\t"
        f"error_code={ev.error_code}\txid={xid if isinstance(xid, int) else 0}\n"
    ]
    if suppress_use:
        if not _is_trans_keyword(ev.query_raw, is_xa):
            state.db = ""
    elif ev.db is not None:
        different = state.db != ev.db
        state.db = ev.db
        if ev.db and different:
            lines.append(f"use {backtick(ev.db)}{DELIM}\n")
    lines.extend(f"{stmt}{DELIM}\n" for stmt in session_statements(state, ev, out.options_mask))
    query = ev.query_raw.decode("utf-8", "surrogateescape")
    gtid3 = ev.status("GTID_FLAGS3")
    alter = isinstance(gtid3, tuple) and gtid3[0] & (FL_START_ALTER_E1 | FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1)
    if isinstance(ev, ExecuteLoadQueryEvent):
        local = f"{_LOAD_DIR}/{load_file_name(ev)}"
        lines.append(f"{load_query(ev, local)}\n{DELIM}\n# file_id: {ev.file_id} \n")
        out.emit("".join(lines))  # Execute_load_query_log_event::print writes straight out, even under flashback
        return
    if out.options.flashback:  # Query_log_event::print compares the text with "BEGIN" / "COMMIT" exactly
        if ev.query_raw == b"BEGIN":
            lines.append(f"COMMIT\n{DELIM}\n")
        elif ev.query_raw == b"COMMIT":
            lines.append(f"START TRANSACTION\n{DELIM}\n")
    elif alter:
        lines.append(f"### {query}\n")
    else:
        lines.append(f"{query}\n{DELIM}\n")
    out.event_text("".join(lines))


def load_file_name(ev: ExecuteLoadQueryEvent) -> str:
    """The name ``mariadb-binlog`` gives the file of a LOAD DATA it writes out: ``SQL_LOAD_MB-<file id>-0``."""
    return f"SQL_LOAD_MB-{ev.file_id:x}-0"


def load_query(ev: ExecuteLoadQueryEvent, path: str) -> str:
    """The LOAD DATA statement of ``ev`` reading the client's file ``path`` (``LOCAL INFILE 'path'``), as
    ``Execute_load_query_log_event::print_query_header`` rewrites its file clause."""
    raw = ev.query_raw
    return (
        raw[: ev.fn_pos_start].decode("utf-8", "surrogateescape")
        + " LOCAL INFILE "
        + pretty_str(path)
        + (" REPLACE" if ev.dup_handling == _LOAD_DUP_REPLACE else "")
        + " INTO"
        + raw[ev.fn_pos_end :].decode("utf-8", "surrogateescape")
    )


def session_statements(
    state: Session, ev: QueryEvent, options_mask: int, *, pseudo_thread: bool = True, autocommit: bool = True
) -> list[str]:
    """The ``SET`` statements that give the session of ``state`` the one ``ev`` ran in, each without its delimiter,
    as ``Query_log_event::print_query_header`` prints them: the timestamp always, every other variable only where
    it differs from what ``state`` says was set last (``state`` is updated).  ``options_mask``: the FLAGS2 bits
    the format description's server logs (:data:`MARIADB_OPTIONS` only for MariaDB); ``pseudo_thread``: include
    ``pseudo_thread_id`` (which only a privileged user may set); ``autocommit``: include ``autocommit`` (setting
    it to 1 inside a transaction commits it)."""
    out: list[str] = []
    micro = ev.status("HRNOW")
    frac = f".{micro:06d}" if isinstance(micro, int) and 0 < micro <= 999999 else ""
    out.append(f"SET TIMESTAMP={ev.header.timestamp}{frac}")
    if pseudo_thread and (
        state.thread_id is None or (ev.header.flags & LOG_EVENT_THREAD_SPECIFIC_F and ev.thread_id != state.thread_id)
    ):
        out.append(f"SET @@session.pseudo_thread_id={ev.thread_id}")
        state.thread_id = ev.thread_id
    flags2 = ev.status("FLAGS2")
    if isinstance(flags2, int):
        changed = 0xFFFFFFFF if state.flags2 is None else state.flags2 ^ flags2
        if changed:
            sets = []
            for bit, inverted, var in _FLAGS2_PRINTED:
                if not autocommit and bit == _NOT_AUTOCOMMIT:
                    continue
                if changed & bit & (options_mask if bit in MARIADB_OPTIONS else bit):
                    sets.append(f"@@session.{var}={int(bool(flags2 & bit) != inverted)}")
            if sets:
                out.append(f"SET {', '.join(sets)}")
            state.flags2 = flags2
    sql_mode = ev.status("SQL_MODE")
    if isinstance(sql_mode, int) and sql_mode != state.sql_mode:
        out.append(f"SET @@session.sql_mode={sql_mode}")
        state.sql_mode = sql_mode
    auto = ev.status("AUTO_INCREMENT")
    auto_inc = auto if isinstance(auto, tuple) else (1, 1)
    if auto_inc != state.auto_increment:
        out.append(
            f"SET @@session.auto_increment_increment={auto_inc[0]}, @@session.auto_increment_offset={auto_inc[1]}"
        )
        state.auto_increment = auto_inc
    charset = ev.status("CHARSET")
    if isinstance(charset, tuple) and charset != state.charset:
        cs = collations.charset_name(charset[0])
        if cs is not None:
            out.append(f"/*!\\C {cs} */")
        out.append(
            ("" if cs is not None else "# Ignored (Unknown charset) ")
            + f"SET @@session.character_set_client={cs or 'Unknown'},@@session.collation_connection={charset[1]},"
            f"@@session.collation_server={charset[2]}"
        )
        state.charset = charset
    tz = ev.status("TIME_ZONE")
    if isinstance(tz, str) and tz and tz != state.time_zone:
        out.append(f"SET @@session.time_zone='{tz}'")
        state.time_zone = tz
    lc = ev.status("LC_TIME_NAMES")
    lc_time = lc if isinstance(lc, int) else 0
    if lc_time != state.lc_time_names:
        out.append(f"SET @@session.lc_time_names={lc_time}")
        state.lc_time_names = lc_time
    cdb = ev.status("CHARSET_DATABASE")
    charset_db = cdb if isinstance(cdb, int) else 0
    if charset_db != state.charset_database:
        out.append(f"SET @@session.collation_database={charset_db or 'DEFAULT'}")
        state.charset_database = charset_db
    return out


def _skip_replication(out: Output, ev: Event) -> None:
    """``print_skip_replication_statement``: only when LOG_EVENT_SKIP_REPLICATION_F changes."""
    flag = int(bool(ev.header.flags & LOG_EVENT_SKIP_REPLICATION_F))
    if flag != out.session.skip_replication:
        out.emit(f"/*!50521 SET skip_replication={flag}*/{DELIM}\n")
        out.session.skip_replication = flag


# the statement's context: Intvar_log_event, Rand_log_event, User_var_log_event ::print


def context_statement(ev: Event, *, exact: bool = False) -> str:
    """The ``SET`` statement (without its delimiter) that gives the next statement the context an INTVAR, RAND or
    USER_VAR event logged for it (``Intvar_log_event::print``, ``Rand_log_event::print``,
    ``User_var_log_event::print``): strings in hex with their charset, numbers as the server printed them (a REAL
    with ``%.14g``; ``exact``: with every digit, so that a replay sets the same double)."""
    if isinstance(ev, IntvarEvent):
        name = {1: "LAST_INSERT_ID", 2: "INSERT_ID"}.get(ev.kind, "INVALID_INT")
        return f"SET {name}={ev.value}"
    if isinstance(ev, RandEvent):
        return f"SET @@RAND_SEED1={ev.seed1}, @@RAND_SEED2={ev.seed2}"
    assert isinstance(ev, UserVarEvent)
    name = ev.name_raw.decode("utf-8", "surrogateescape")
    raw = ev.value_raw
    if ev.is_null:
        value = "NULL"
    elif ev.value_type == 1:  # REAL_RESULT
        real = struct.unpack("<d", raw[:8])[0]
        value = repr(real) if exact else _c_g(real, 14)
    elif ev.value_type == 2:  # INT_RESULT
        n = int.from_bytes(raw[:8], "little", signed=not (ev.flags or 0) & 1)
        value = str(n)
    elif ev.value_type == 4:  # DECIMAL_RESULT: precision, scale, then the binary decimal
        col = Column.build(0, T.NEWDECIMAL, raw[:2])
        dec, _ = reader_for(col)(raw, 2)
        value = RENDER[T.NEWDECIMAL](col, dec)
    else:  # STRING_RESULT
        cs = collations.charset_name(ev.charset)
        coll = collations.collation_name(ev.charset, mariadb=True)
        value = "???" if cs is None or coll is None else f"_{cs} X'{raw.hex().upper()}' COLLATE `{coll}`"
    return f"SET @{backtick(name)}:={value}"


def _intvar(out: Output, ev: Event) -> None:
    out.emit(f"{out.header(ev)}\tIntvar\n{context_statement(ev)}{DELIM}\n")


def _rand(out: Output, ev: Event) -> None:
    out.emit(f"{out.header(ev)}\tRand\n{context_statement(ev)}{DELIM}\n")


def _user_var(out: Output, ev: Event) -> None:
    out.emit(f"{out.header(ev)}\tUser_var\n{context_statement(ev)}{DELIM}\n")


# LOAD DATA: Append_block_log_event::print, Delete_file_log_event::print


def _file_block(out: Output, ev: Event) -> None:
    """``Append_block_log_event::print`` (BEGIN_LOAD_QUERY prints the same, under its own name)."""
    assert isinstance(ev, FileBlockEvent)
    name = "Begin_load_query" if ev.header.type_code == E.BEGIN_LOAD_QUERY_EVENT else "Append_block"
    out.emit(f"{out.header(ev)}\n#{name}: file_id: {ev.file_id}  block_len: {len(ev.block)}\n")


def _delete_file(out: Output, ev: Event) -> None:
    assert isinstance(ev, FileIdEvent)
    out.emit(f"{out.header(ev)}\n#Delete_file: file_id={ev.file_id}\n")


HANDLERS: dict[int, Handler] = {
    E.QUERY_EVENT: _query,
    E.QUERY_COMPRESSED_EVENT: _query,
    E.EXECUTE_LOAD_QUERY_EVENT: _query,
    E.INTVAR_EVENT: _intvar,
    E.RAND_EVENT: _rand,
    E.USER_VAR_EVENT: _user_var,
    E.BEGIN_LOAD_QUERY_EVENT: _file_block,
    E.APPEND_BLOCK_EVENT: _file_block,
    E.DELETE_FILE_EVENT: _delete_file,
}
