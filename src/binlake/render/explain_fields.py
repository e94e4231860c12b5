"""The rows of an explanation (:class:`Row`) and the words ``binlake explain`` says of fields and columns.

:mod:`binlake.render.explain` (events) and :mod:`binlake.render.explain_rows` (row images) both build on it, so
that neither imports the other's helpers.

Example::

    >>> flags_text(0x9, {0x1: "STMT_END_F", 0x8: "COMPLETE_ROWS_F"}), n_bytes(1)
    ('0x0009 = STMT_END_F | COMPLETE_ROWS_F', '1 byte')
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from binlake.coltypes import Column, ColumnType
from binlake.trace import TlvValue, TraceField

__all__ = ["Row", "column_meta", "field_row", "flags_text", "generic", "label", "n_bytes", "plain", "when"]


@dataclass(frozen=True, slots=True)
class Row:
    """One field of the explained event: where it is, its bytes, its decoded value and what that means."""

    section: str
    name: str
    offset: int
    raw: bytes
    value: object
    meaning: str

    @property
    def size(self) -> int:
        return len(self.raw)


def field_row(f: TraceField, meaning: str | None = None) -> Row:
    """A row of ``f`` (its section is set by the caller, from its offset)."""
    return Row("", f.name, f.offset, f.raw, plain(f.value), generic(f) if meaning is None else meaning)


def plain(value: object) -> object:
    """A JSON-friendly form of a traced value."""
    if isinstance(value, TlvValue):
        return {"type": value.type_code, "length": value.length, "value": value.value.hex()}
    if isinstance(value, bytes | bytearray | memoryview):
        text = _text(bytes(value))
        return text if text is not None else bytes(value).hex()
    return value


def _text(b: bytes) -> str | None:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return s if s.isprintable() else None


def generic(f: TraceField) -> str:
    """The meaning of a field whose event type has no specific explanation: its value, named where possible."""
    v, name = f.value, f.name.lower()
    if v is None:
        return "terminator" if "nul" in name or "terminator" in name else "skipped"
    if isinstance(v, TlvValue):
        return f"type {v.type_code}, {v.length} bytes: {v.value.hex() or '(empty)'}"
    if isinstance(v, bytes):
        text = _text(v)
        if not v:
            return "(empty)"
        return f'"{text}"' if text is not None else n_bytes(len(v))
    if isinstance(v, int) and not isinstance(v, bool):
        if "flag" in name:
            return f"0x{v:0{max(2, f.size * 2)}x}"
        if ("time" in name or name == "created") and f.size == 4 and v:
            return when(v)
    return str(v)


def n_bytes(n: int) -> str:
    return f"{n} byte" if n == 1 else f"{n} bytes"


def when(ts: int) -> str:
    return f"{ts} = {datetime.datetime.fromtimestamp(ts, datetime.UTC):%Y-%m-%d %H:%M:%S} UTC"


def flags_text(value: int, names: dict[int, str]) -> str:
    if not value:
        return "0x0000: none"
    known = [n for bit, n in names.items() if value & bit]
    other = value & ~sum(names)
    return f"0x{value:04x} = " + " | ".join(known + ([f"0x{other:x}"] if other else []))


def label(c: Column) -> str:
    return f"`{c.name}`" if c.name is not None else f"col {c.index + 1}"


def column_meta(c: Column) -> str:
    """What a column's table-map metadata says (``Field::do_save_field_metadata`` in sql/field.cc)."""
    t = ColumnType
    code, real = c.type_code, c.real_type_code
    if code in (t.VARCHAR, t.VAR_STRING, t.VARCHAR_COMPRESSED):
        return f"max {c.length} bytes"
    if code == t.STRING:
        if real in (t.ENUM, t.SET):
            return f"{ColumnType.name_of(real)} stored in {c.length} byte(s)"
        return f"CHAR, max {c.length} bytes"
    if code in (t.ENUM, t.SET):
        return f"stored in {c.length} byte(s)"
    if code in (t.NEWDECIMAL, t.DECIMAL):
        return f"DECIMAL({c.precision},{c.scale})"
    if code in (t.TIMESTAMP2, t.DATETIME2, t.TIME2):
        return f"{c.fsp} fractional-second digits"
    if code == t.BIT:
        return f"BIT({c.bits})"
    if code in (t.FLOAT, t.DOUBLE):
        return f"{c.length}-byte value"
    if c.meta_bytes:  # BLOB family, GEOMETRY, JSON, VECTOR: the size of the length prefix
        return f"{c.length}-byte length prefix"
    return "no metadata"
