"""How ``binlake dump`` quotes names and strings, and the statement delimiter it ends statements with.

MariaDB's client quotes with ``pretty_print_str`` (strings in ``# Columns``/``SET`` lines) and ``my_snprintf``'s
``%`s`` (identifiers); the JSON diffs of MySQL's partial updates use MySQL's ``my_b_write_quoted``.  Each is its
own function because each escapes a different set of characters.

Example::

    >>> print(pretty_str("it's"), backtick("a`b"), mysql_quoted(b"tab\\there"))
    'it\\'s' `a``b` 'tab\\there'
"""

from __future__ import annotations

import re

__all__ = ["DELIM", "backtick", "mysql_quoted", "pretty_str"]

DELIM = "/*!*/;"  # the delimiter mysqlbinlog.cc sets (``DELIMITER /*!*/;``) and ends each statement with

# pretty_print_str / my_snprintf's %`s in MariaDB
_PRETTY = str.maketrans({"\n": "\\n", "\r": "\\r", "\\": "\\\\", "\b": "\\b", "\t": "\\t", "'": "\\'", "\0": "\\0"})


def pretty_str(s: str, quote: str = "'") -> str:
    """``pretty_print_str``: ``'it\\'s'``; with ``quote="`"`` the identifier form (backticks not doubled)."""
    return quote + s.translate(_PRETTY) + quote


def backtick(s: str) -> str:
    """``%`s`` of ``my_snprintf``: ``table ``with`` backticks`` between backticks, inner ones doubled."""
    return "`" + s.replace("`", "``") + "`"


# my_b_write_quoted in MySQL's sql/log_event.cc
# get_quote_table: \b \f \n \r \t \\ \' escaped, other bytes below 0x20 as \xNN, every other byte as is
_MYSQL_QUOTE = {c: b"\\x%02x" % c for c in range(32)}
_MYSQL_QUOTE.update({8: b"\\b", 12: b"\\f", 10: b"\\n", 13: b"\\r", 9: b"\\t", 92: b"\\\\", 39: b"\\'"})
_MYSQL_QUOTE_RE = re.compile(rb"[\x00-\x1f\\']")


def mysql_quoted(raw: bytes) -> str:
    """MySQL's ``my_b_write_quoted``: ``'it\\'s'`` (bytes that are not UTF-8 come back as surrogate escapes)."""
    escaped = _MYSQL_QUOTE_RE.sub(lambda m: _MYSQL_QUOTE[m[0][0]], raw)
    return "'" + escaped.decode("utf-8", "surrogateescape") + "'"
