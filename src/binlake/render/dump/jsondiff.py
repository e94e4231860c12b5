"""The JSON diffs of a PARTIAL_UPDATE_ROWS after image, as MySQL's ``mysqlbinlog -vv`` prints them.

mariadb-binlog cannot read these events; MySQL prints the diffs of a JSON column as nested calls on the column's
old value (``print_json_diff`` and ``json_wrapper_to_string`` in MySQL's ``sql/log_event.cc``).  The row printer
(:mod:`binlake.render.dump.rowtext`) prints a JSON column's value with :func:`json_diff_text` when it holds diffs.

Example::

    >>> from binlake.values.json_binary import JsonDiff, JsonDiffOperation as Op, encode
    >>> json_diff_text([JsonDiff(Op.INSERT, "$[0]", encode("x"))], "@3")
    "JSON_ARRAY_INSERT(@3, '$[0]', 'x')"
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from binlake.render.dump.quoting import mysql_quoted
from binlake.values import json_binary

__all__ = ["json_diff_text"]

_DIFF_SEPARATOR = "\n###      "


def _json_diff_value(doc: bytes) -> str:
    """``json_wrapper_to_string(..., json_type=false)``: numbers, booleans and null as JSON prints them, strings
    and SQL scalars (dates, opaque values) as quoted text, objects and arrays as ``CAST('...' AS JSON)``."""
    value = json_binary.decode(doc)
    if isinstance(value, str):
        return mysql_quoted(value.encode("utf-8", "surrogatepass"))
    text = json_binary.dumps(value)
    if isinstance(value, dict | list):
        return f"CAST({mysql_quoted(text.encode('utf-8', 'surrogatepass'))} AS JSON)"
    if text.startswith('"'):  # a date, time or opaque value: its text without the JSON quotes
        return mysql_quoted(json.loads(text).encode("utf-8", "surrogatepass"))
    return text


def json_diff_text(diffs: Sequence[json_binary.JsonDiff], column: str) -> str:
    """``print_json_diff``: the diffs of one JSON column as nested calls on the column's old value.

    Consecutive diffs of one operation share one call; an INSERT whose path ends in ``]`` is JSON_ARRAY_INSERT.

    >>> from binlake.values.json_binary import JsonDiff, JsonDiffOperation as Op, encode
    >>> print(json_diff_text([JsonDiff(Op.REPLACE, "$.a", encode(1)), JsonDiff(Op.REMOVE, "$.b", None)], "@2"))
    JSON_REMOVE(
    ###      JSON_REPLACE(@2, '$.a', 1),
    ###      '$.b')
    """
    names = []
    for diff in diffs:
        if diff.operation == json_binary.JsonDiffOperation.REPLACE:
            names.append("JSON_REPLACE")
        elif diff.operation == json_binary.JsonDiffOperation.INSERT:
            names.append("JSON_ARRAY_INSERT" if diff.path.endswith("]") else "JSON_INSERT")
        else:
            names.append("JSON_REMOVE")
    calls = [names[i] + "(" for i in reversed(range(len(names))) if i == 0 or names[i - 1] != names[i]]
    out = [_DIFF_SEPARATOR.join(calls), column]
    if names:
        out.append(", ")
    for i, diff in enumerate(diffs):
        out.append(mysql_quoted(diff.path.encode("utf-8", "surrogatepass")))
        if diff.value is not None:
            out += (", ", _json_diff_value(diff.value))
        last = i == len(diffs) - 1
        if last or names[i + 1] != names[i]:
            out.append(")")
        if not last:
            out.append("," + _DIFF_SEPARATOR)
    return "".join(out)
