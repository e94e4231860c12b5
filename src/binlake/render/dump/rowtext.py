"""The ``###`` lines of row changes: ``Rows_log_event::print_verbose`` and ``log_event_print_value``.

One block per row change: ``### INSERT INTO `db`.`t```/``### WHERE``/``### SET`` and one ``###   @N=value /* TYPE
meta=M nullable=N is_null=N */`` line per present column, the value text given by each value family (``RENDER`` of
the :mod:`binlake.values` modules, see :data:`RENDER`).  Three printers print the same text:

- :meth:`RowsText.plain`: value by value through ``RENDER``, the reference;
- :meth:`RowsText.compiled`: per layout, generated Python code that holds the constant texts (used once a layout
  has printed :data:`_COMPILE_AFTER` row changes);
- :func:`text_plan`: where ``binlake._speedups`` is built (and ``BINLAKE_PURE_PYTHON`` not set), the C printer of
  the row images themselves, its constant texts made here once per layout; a layout with another column type takes
  the Python path.  ``tests/render/test_rows_text.py`` checks the three agree on random row images.

Example::

    >>> from binlake.coltypes import Column, ColumnType
    >>> out = []
    >>> RowsText((Column.build(0, ColumnType.LONG, b""),), "insert", ((True,),)).text(
    ...     [(None, (7,))], out.append, "### INSERT INTO `db`.`t`\\n")
    >>> print(out[0], end="")
    ### INSERT INTO `db`.`t`
    ### SET
    ###   @1=7 /* INT meta=0 nullable=1 is_null=0 */
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from binlake._compiled import compiled
from binlake.coltypes import Column, ColumnType
from binlake.errors import BinlogError
from binlake.render.dump.jsondiff import json_diff_text
from binlake.render.dump.tablemap import value_type_name
from binlake.render.flashback import Change
from binlake.rowdecoder import fixed_kinds
from binlake.values import json_binary
from binlake.values.row import ABSENT
from binlake.values.strings import length_bytes
from binlake.values.temporal import column_fsp
from binlake.wire import bits_lsb_first

if TYPE_CHECKING:
    from binlake import _speedups
    from binlake._speedups import TextPlan
else:  # the compiled row printer (src/binlake/_speedups.c), when it was built and is not turned off
    _speedups = compiled("_speedups")
    TextPlan = getattr(_speedups, "TextPlan", None)

__all__ = ["RENDER", "SQL_CLAUSES", "RowsText", "RowsTextFn", "TextPlan", "line_texts", "text_plan"]

T = ColumnType
_COMPILE_AFTER = 256  # row changes of a layout printed value by value before its printer is generated
SQL_CLAUSES: dict[str, tuple[str, str, str | None]] = {
    "insert": ("INSERT INTO", "### SET\n", None),
    "delete": ("DELETE FROM", "### WHERE\n", None),
    "update": ("UPDATE", "### WHERE\n", "### SET\n"),
}


Renderer = Callable[[Column, object], str]


def _json_value(document: Renderer, col: Column, value: object) -> str:
    """A JSON column's value: its document, or the diffs of a partial update (a list of ``JsonDiff``)."""
    if isinstance(value, list):
        return json_diff_text(value, f"@{col.index + 1}")
    return document(col, value)


def _renderers() -> dict[int, Renderer]:
    from binlake.values import decimal, enum_set, numeric, spatial, strings, temporal, vector

    table: dict[int, Renderer] = {}
    for mod in (numeric, decimal, temporal, strings, json_binary, spatial, enum_set, vector):
        table.update(getattr(mod, "RENDER", {}))
    table[T.JSON] = functools.partial(_json_value, table[T.JSON])
    return table


RENDER = _renderers()


_INT_BITS: dict[int, int] = {T.TINY: 8, T.SHORT: 16, T.INT24: 24, T.LONG: 32, T.LONGLONG: 64}
_QUOTED = frozenset(  # rendered by strings.render_quoted (my_b_write_quoted)
    {T.STRING, T.VARCHAR, T.VAR_STRING, T.VARCHAR_COMPRESSED, T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB}
    | {T.BLOB_COMPRESSED}
)
_DATETIMES = frozenset({T.DATETIME2, T.DATETIME})
# Values printed as C's printf formats them, which Python's format specs reproduce (numeric.render_float/double)
_FORMAT_SPECS: dict[int, str] = {T.FLOAT: "<20g", T.DOUBLE: ".20g"}
RowsTextFn = Callable[[Sequence[Change], Callable[[str], None], str], None]


_LITERAL = str.maketrans(
    {"\\": "\\\\", '"': '\\"', "{": "{{", "}": "}}", **{chr(c): f"\\x{c:02x}" for c in (*range(32), 127)}}
)


def _lit(text: str) -> str:
    """``text`` as literal text of a generated triple-quoted f-string: braces doubled, quotes and controls escaped."""
    return text.translate(_LITERAL)


@dataclass(frozen=True, slots=True)
class _ValueCode:
    """How generated code prints one non-NULL value: ``stmts`` run first, then ``expr`` is formatted with
    ``conv`` (an f-string conversion or format spec: ``"!s"``, ``":f"``) between quotes when ``quoted``."""

    stmts: tuple[str, ...]
    expr: str
    conv: str = ""
    quoted: bool = False


def _value_code(col: Column, v: str, ns: dict[str, object]) -> _ValueCode:
    """The code that prints the non-NULL value held in variable ``v``.

    The common types print in line (``log_event_print_value``'s text, as the ``RENDER`` tables give it, which
    tests/render/test_dump.py checks value for value); an unusual value of them (a string with control bytes, an
    invalid date, an integer out of its type's range) and every other type go through the column's ``RENDER``
    function ``R<v>``.
    """
    code = col.real_type_code
    render = RENDER.get(code)
    if render is None:  # a type no value family renders: its Python repr, rather than nothing
        return _ValueCode((), v, "!r")
    ns[f"R{v}"] = functools.partial(render, col)
    bits = _INT_BITS.get(code)
    if bits is not None:  # render_int: the bits as a signed number, then the unsigned reading when negative
        # (stored values come signed or unsigned as the column is: the likelier branch first)
        half, full = 1 << (bits - 1), 1 << bits
        negative = (f"elif -{half} <= {v} < 0:", f'    t{v} = f"{{{v}}} ({{{v} + {full}}})"')
        high = (f"elif {half} <= {v} < {full}:", f'    t{v} = f"{{{v} - {full}}} ({{{v}}})"')
        return _ValueCode(
            (
                f"if 0 <= {v} < {half}:",
                f"    t{v} = {v}",
                *((*high, *negative) if col.unsigned else (*negative, *high)),
                "else:",
                f"    t{v} = R{v}({v})",
            ),
            f"t{v}",
        )
    if code == T.NEWDECIMAL:  # format(d, "f"); str(d) is the same (and faster) while -exponent <= 6
        return _ValueCode((), v, "!s" if (col.scale if col.scale is not None else col.meta & 0xFF) <= 6 else ":f")
    spec = _FORMAT_SPECS.get(code)
    if spec is not None:
        return _ValueCode((), v, f":{spec}")
    if code in _QUOTED:  # no byte below 0x20 (isprintable() is False for all of them): the bytes as they are
        return _ValueCode(
            (f"s{v} = {v}.decode(U, SE)", f"if not s{v}.isprintable():", f"    s{v} = R{v}({v})[1:-1]"),
            f"s{v}",
            quoted=True,
        )
    if code in _DATETIMES:  # str(datetime): YYYY-MM-DD HH:MM:SS, then .ffffff unless microsecond is 0
        try:
            fsp = column_fsp(col)
        except BinlogError:
            return _ValueCode((), f"R{v}({v})")
        with_us = f"str({v})" if fsp == 6 else f"str({v})[:{19 + (fsp and fsp + 1)}]"
        zeros = "." + "0" * fsp if fsp else ""
        return _ValueCode(
            (
                f"if type({v}) is DT:",
                f"    s{v} = {with_us} if {v}.microsecond else str({v}) + {zeros!r}",
                "else:",
                f"    s{v} = R{v}({v})[1:-1]",
            ),
            f"s{v}",
            quoted=True,
        )
    return _ValueCode((), f"R{v}({v})")


def _image_code(
    columns: tuple[Column, ...],
    present: Sequence[bool],
    v: str,
    ns: dict[str, object],
    before: Sequence[bool] = (),
) -> tuple[list[str], list[str], str]:
    """``print_verbose_one_row`` of one image held in variable ``v``: the checks that it has no NULL where the fast
    code assumes none (NOT NULL columns), the statements, and the f-string part of its lines.

    ``before`` (the after image of an update): the columns present in the before image ``a``; a string or date
    equal to the before image's (an unchanged column) reuses its text.
    """
    checks: list[str] = []
    body: list[str] = []
    parts: list[str] = []
    for col, here in zip(columns, present, strict=True):
        if not here:
            continue
        var = f"{v}{col.index}"
        comment = _lit(f" /* {value_type_name(col)} meta={col.meta} nullable={int(col.nullable)} is_null=")
        code = _value_code(col, var, ns)
        quote = "'" if code.quoted else ""
        if col.nullable:
            # NULL and a value differ in the value text, its quotes and is_null: three variables, no inner f-string
            body += [f"if {var} is None:", f"    v{var} = 'NULL'", f"    n{var} = '1'"]
            if quote:
                body.append(f"    q{var} = ''")
            body += ["else:", *("    " + s for s in code.stmts)]
            value = f'f"{{{code.expr}{code.conv}}}"' if code.conv not in ("", "!s") else code.expr
            body += [f"    v{var} = {value}", f"    n{var} = '0'"]
            if quote:
                body.append(f'    q{var} = "{quote}"')
                quote = f"{{q{var}}}"
            parts.append(f"###   @{col.index + 1}={quote}{{v{var}}}{quote}{comment}{{n{var}}} */\\n")
        else:
            checks.append(f"{var} is None")
            if code.quoted and code.stmts and col.index < len(before) and before[col.index]:
                body += [f"if {var} == a{col.index}:", f"    {code.expr} = sa{col.index}", "else:"]
                body += ["    " + s for s in code.stmts]
            else:
                body += code.stmts
            parts.append(f"###   @{col.index + 1}={quote}{{{code.expr}{code.conv}}}{quote}{comment}0 */\\n")
    return checks, body, "".join(parts)


class RowsText:
    """The ``### INSERT INTO ...``/``### WHERE``/``### SET`` text of the row changes of one layout.

    ``Rows_log_event::print_verbose``: the statement line, the clauses and one ``###   @N=value /* TYPE meta=M
    nullable=N is_null=N */`` line per present column.  :meth:`plain` prints it value by value through the
    ``RENDER`` tables.  Once a layout has printed :data:`_COMPILE_AFTER` row changes (compiling costs about as
    much as printing that many plainly), :meth:`text` generates one function for it whose f-string holds the whole
    text of a row change, its constant parts written into the code; NOT NULL columns print there without a NULL
    test, a row that has NULL in one anyway (a log that disagrees with its own table map) goes to :meth:`plain`.
    ``source`` is the generated code, for the curious.
    """

    __slots__ = ("_fast", "_lines", "_seen", "columns", "kind", "present", "source")

    def __init__(self, columns: tuple[Column, ...], kind: str, present: tuple[Sequence[bool], ...]):
        self.columns, self.kind, self.present = columns, kind, present
        self._seen = 0
        self._fast: RowsTextFn | None = None
        self.source = ""
        self._lines: list[tuple[Column, Renderer | None, str, str, str]] = []
        for col in columns:
            self._lines.append((col, RENDER.get(col.real_type_code), *line_texts(col)))

    def text(self, changes: Sequence[Change], append: Callable[[str], None], head: str) -> None:
        """Append the text of ``changes`` (each change one string), ``head`` being the ``### INSERT INTO ...`` line."""
        fast = self._fast
        if fast is None:
            self._seen += len(changes)
            if self._seen < _COMPILE_AFTER:
                self.plain(changes, append, head)
                return
            fast = self._fast = self.compiled()
        fast(changes, append, head)

    def plain(self, changes: Sequence[Change], append: Callable[[str], None], head: str) -> None:
        """:meth:`text` through the ``RENDER`` tables, value by value (a type without one prints its ``repr``)."""
        clauses = SQL_CLAUSES[self.kind][1:]
        for before, after in changes:
            images = (after,) if self.kind == "insert" else (before,) if self.kind == "delete" else (before, after)
            out = [head]
            for n, image in enumerate(images):
                if n == 1 and not any(self.present[1]):
                    out.append("### SET /* no columns */\n")
                    continue
                out.append(clauses[n] or "")
                for (col, render, prefix, suffix, null_line), value in zip(self._lines, image or (), strict=True):
                    if value is None:
                        out.append(null_line)
                    elif value is not ABSENT:
                        out += (prefix, repr(value) if render is None else render(col, value), suffix)
            append("".join(out))

    def compiled(self) -> RowsTextFn:
        """Generate and compile the function :meth:`text` runs for this layout."""
        columns, kind, present = self.columns, self.kind, self.present
        ns: dict[str, object] = {"U": "utf-8", "SE": "surrogateescape", "DT": datetime.datetime, "plain": self.plain}
        clauses = SQL_CLAUSES[kind][1:]
        images = ("a",) if kind == "delete" else ("b",) if kind == "insert" else ("a", "b")
        lines = ["def text(changes, append, head):", "    for a, b in changes:"]
        checks: list[str] = []
        body: list[str] = []
        fstring = ["{head}"]
        for n, (image, bits) in enumerate(zip(images, present, strict=True)):
            fstring.append(_lit(clauses[n] or ""))
            if n == 1 and not any(bits):
                fstring[-1] = _lit("### SET /* no columns */\n")
                continue
            c, b, f = _image_code(columns, bits, image, ns, () if n == 0 else present[0])
            lines.append(f"        {', '.join(f'{image}{i}' for i in range(len(columns)))}, = {image}")
            checks += c
            body += b
            fstring.append(f)
        if checks:
            lines += [
                f"        if {' or '.join(checks)}:",
                "            plain(((a, b),), append, head)",
                "            continue",
            ]
        lines += ["        " + s for s in body]
        lines.append(f'        append(f"""{"".join(fstring)}""")')
        self.source = "\n".join(lines) + "\n"
        exec(compile(self.source, f"<{kind} text of {len(columns)} columns>", "exec"), ns)
        return cast(RowsTextFn, ns["text"])


def line_texts(col: Column) -> tuple[str, str, str]:
    """The constant parts of a column's value line: ``###   @N=``, `` /* TYPE meta=M nullable=N is_null=0 */\n``
    and the whole NULL line."""
    comment = f"{value_type_name(col)} meta={col.meta} nullable={int(col.nullable)}"
    prefix = f"###   @{col.index + 1}="
    return prefix, f" /* {comment} is_null=0 */\n", f"{prefix}NULL /* {comment} is_null=1 */\n"


# Kinds of binlake._speedups.TextPlan's columns (the extension's K_* constants): per real type, the kind and a
# function of the column giving its two parameters, read exactly as binlake.values' readers read them.  ENUM and SET
# only in the sizes their readers take; every other type is printed by the Python path.
_TEXT_KINDS: dict[int, tuple[int, Callable[[Column], tuple[int, int]]]] = {}
if _speedups is not None:
    _TEXT_KINDS = {
        **{code: (_speedups.K_INT, lambda c: (_INT_BITS[c.real_type_code] // 8, 0)) for code in _INT_BITS},
        **fixed_kinds(_speedups),
        **{code: (_speedups.K_STRING, lambda c: (length_bytes(c), 0)) for code in _QUOTED},
        T.ENUM: (_speedups.K_UINT, lambda c: (c.length if c.length in (1, 2) else 0, 0)),
        T.SET: (_speedups.K_SET_BITS, lambda c: (c.length if c.length in (1, 2, 3, 4, 8) else 0, 0)),
    }


def text_plan(columns: tuple[Column, ...], kind: str, present: Sequence[bytes]) -> TextPlan | None:
    """The compiled printer of one layout's row images (``binlake._speedups.TextPlan``), ``present`` being the
    columns-present bitmap of each image; ``None`` when the extension is not there or a column is one it does not
    print (JSON, GEOMETRY, old temporal types, impossible metadata): the Python printer prints those."""
    if TextPlan is None:
        return None
    images = []
    for clause, bits in zip(SQL_CLAUSES[kind][1:], present, strict=False):
        cols = []
        for col, here in zip(columns, bits_lsb_first(bits, len(columns)), strict=True):
            if not here:
                continue
            spec = _TEXT_KINDS.get(col.real_type_code)
            if spec is None:
                return None
            try:
                p1, p2 = spec[1](col)
            except BinlogError:
                return None
            prefix, suffix, null_line = line_texts(col)
            cols.append((spec[0], p1, p2, prefix.encode(), suffix.encode(), null_line.encode()))
        images.append(((clause or "").encode(), tuple(cols)))
    try:
        return TextPlan(tuple(images))
    except ValueError:  # a length or precision the C printer does not take
        return None
