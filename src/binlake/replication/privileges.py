"""What a server user may do, asked before a command that reads a server writes anything: a missing privilege is one
line naming it (and the ``GRANT`` that gives it), not a half-landed lake.

What a live ingest needs (MariaDB's and MySQL's manuals, "Replication privileges"):

- REPLICATION SLAVE: to register as a replica and stream the binlog;
- REPLICATION CLIENT (called BINLOG MONITOR in MariaDB 10.5+): to list the binlogs and find the current end
  (``SHOW BINARY LOGS``, ``SHOW MASTER STATUS``);
- a snapshot: SELECT on each table it reads (:func:`binlake.snapshot.server.snapshot_tables`), and on MySQL, whose
  snapshot takes a brief global read lock (:func:`binlake.snapshot.server.snapshot_method`), RELOAD.

How each is asked: ``SHOW BINARY LOGS`` runs as it would (harmless); REPLICATION SLAVE and RELOAD are read from
``SHOW GRANTS`` (their statements have effects: registering a replica cuts off another one of the same server id,
a global read lock stops the writers), trusted only where the grants say it all: a user given roles is not refused
on its grants (its roles' privileges are not listed), the server then refuses what it must.

Example::

    with connect(options) as conn:
        require_replication(conn)        # raises ReplicationError naming the missing privilege
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from binlake.errors import AccessDeniedError, ReplicationError
from binlake.replication.connection import ReplicationConnection
from binlake.replication.definitions import quote
from binlake.sql.lexer import keyword, split_commas, tokens, top_level_words, unquote

__all__ = [
    "Grants",
    "account",
    "database_target",
    "grant_line",
    "read_grants",
    "reload_refused",
    "require_reload",
    "require_replication",
]

ER_NO_BINARY_LOGGING = 1381  # "You are not using binary logging"


def account(conn: ReplicationConnection) -> str:
    """The account the server authenticated the connection as (``CURRENT_USER()``), quoted as a GRANT names it:
    ``'repl'@'%'`` (the user's name at any host where the server does not say)."""
    try:
        rows = conn.query("SELECT CURRENT_USER()")
    except ReplicationError:
        rows = []
    user, _, host = str(rows[0][0]).rpartition("@") if rows and rows[0] else (conn.options.user, "", "%")
    return f"'{user}'@'{host}'"


@dataclass(frozen=True, slots=True)
class Grants:
    """``SHOW GRANTS`` of the connection's user: the privileges on ``*.*``, on each database (its name or pattern
    as written), on each table (``db.table``), and whether roles were granted (whose privileges are not listed)."""

    on_all: frozenset[str]
    on_databases: dict[str, frozenset[str]]
    on_tables: dict[str, frozenset[str]]
    roles: bool

    def has_global(self, privilege: str) -> bool:
        """Is ``privilege`` granted on ``*.*`` (or ALL PRIVILEGES), as far as the grants say?  True when roles
        were granted: their privileges are not listed here."""
        return self.roles or bool({privilege, "ALL PRIVILEGES", "ALL"} & self.on_all)

    def may_select(self, db: str) -> bool:
        """Do the grants give SELECT on every table of ``db`` (on ``*.*``, or on ``db.*`` or a pattern matching
        it, ``%`` and ``_`` as in a GRANT)?"""
        every = {"SELECT", "ALL PRIVILEGES", "ALL"}
        if self.roles or every & self.on_all:
            return True
        return any(every & p and _matches(pattern, db) for pattern, p in self.on_databases.items())

    def selects_anything(self) -> bool:
        """May the user SELECT from some table, as far as the grants say?"""
        every = [self.on_all, *self.on_databases.values(), *self.on_tables.values()]
        return self.roles or any({"SELECT", "ALL PRIVILEGES", "ALL"} & p for p in every)


def read_grants(conn: ReplicationConnection) -> Grants:
    """The connection user's :class:`Grants` (``SHOW GRANTS``: ``GRANT privileges ON target TO account ...``; a
    line without ``ON`` grants a role)."""
    on_all: set[str] = set()
    databases: dict[str, set[str]] = {}
    tables: dict[str, set[str]] = {}
    roles = False
    for (line,) in conn.query("SHOW GRANTS"):
        toks = list(tokens(str(line)))
        words = [keyword(t) for t in toks]
        if not words or words[0] != "GRANT":
            continue
        if "ON" not in words:
            roles = True
            continue
        on = words.index("ON")
        privileges = {" ".join(top_level_words(part)) for part in split_commas(toks[1:on])}  # SELECT (a, b): SELECT
        target = toks[on + 1 :]
        if target and keyword(target[0]) in ("PROCEDURE", "FUNCTION", "PACKAGE"):
            continue
        names = [unquote(t) if t.kind != "p" else t.text for t in target[: next((i for i, t in enumerate(target)
                 if keyword(t) == "TO"), len(target))]]  # fmt: skip
        text = "".join(names)
        if text == "*.*":
            on_all |= privileges
        elif text.endswith(".*"):
            databases.setdefault(text[:-2], set()).update(privileges)
        else:
            tables.setdefault(text, set()).update(privileges)
    return Grants(
        frozenset(on_all),
        {k: frozenset(v) for k, v in databases.items()},
        {k: frozenset(v) for k, v in tables.items()},
        roles,
    )


def _matches(pattern: str, name: str) -> bool:
    """Does a GRANT's database ``pattern`` (``%`` any run, ``_`` one character, a backslash escaping them) name
    ``name``?"""
    parts = []
    for m in re.finditer(r"\\(.)|(%)|(_)|(.)", pattern, re.DOTALL):
        escaped, many, one, plain = m.groups()
        parts.append(".*" if many else "." if one else re.escape(escaped or plain))
    return re.fullmatch("".join(parts), name, re.DOTALL) is not None


def grant_line(privilege: str, target: str, who: str) -> str:
    """``GRANT privilege ON target TO who`` (the statement a refusal tells the user to ask for)."""
    return f"GRANT {privilege} ON {target} TO {who}"


def monitor_privilege(conn: ReplicationConnection) -> str:
    """The name of the privilege that lists binlogs on this server: BINLOG MONITOR on MariaDB 10.5+ (REPLICATION
    CLIENT is its old name there), REPLICATION CLIENT elsewhere."""
    info = conn.info
    if info is not None and info.flavor == "mariadb":
        from binlake.events.format import server_version_tuple

        if server_version_tuple(info.version) >= (10, 5, 0):
            return "BINLOG MONITOR"
    return "REPLICATION CLIENT"


def require_replication(conn: ReplicationConnection) -> None:
    """Raise :class:`~binlake.errors.ReplicationError` naming the privilege, unless the user may list the binlogs
    (``SHOW BINARY LOGS`` runs; binary logging must be on) and stream them (REPLICATION SLAVE in its grants)."""
    where = conn.options.address
    who = account(conn)
    try:
        conn.binary_logs()
    except AccessDeniedError:
        privilege = monitor_privilege(conn)
        raise ReplicationError(
            f"user {who} lacks {privilege} on {where}: the server's binlogs cannot be listed "
            f"({grant_line(privilege, '*.*', who)})"
        ) from None
    except ReplicationError as e:
        if f"server error {ER_NO_BINARY_LOGGING}:" in str(e):
            raise ReplicationError(f"binary logging is off on {where}: there is no binlog to stream") from None
        raise
    if not read_grants(conn).has_global("REPLICATION SLAVE"):
        raise ReplicationError(
            f"user {who} lacks REPLICATION SLAVE on {where}: the binlog cannot be streamed "
            f"({grant_line('REPLICATION SLAVE', '*.*', who)})"
        )


def require_reload(conn: ReplicationConnection) -> None:
    """Raise :class:`~binlake.errors.ReplicationError` unless the user's grants give RELOAD (a snapshot's ``FLUSH
    TABLES WITH READ LOCK``)."""
    if not read_grants(conn).has_global("RELOAD"):
        who = account(conn)
        raise ReplicationError(reload_refused(conn, who))


def reload_refused(conn: ReplicationConnection, who: str | None = None) -> str:
    """The line that says the user lacks RELOAD for the snapshot's global read lock."""
    who = who or account(conn)
    return (
        f"user {who} lacks RELOAD on {conn.options.address}: the snapshot's brief global read lock (FLUSH TABLES "
        f"WITH READ LOCK) is refused ({grant_line('RELOAD', '*.*', who)})"
    )


def database_target(db: str) -> str:
    """``db.*`` as a GRANT names it."""
    return f"{quote(db)}.*"
