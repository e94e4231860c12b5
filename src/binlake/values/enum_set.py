"""ENUM and SET columns: stored as a little-endian index / bit mask of ``col.length`` bytes.

``Field_enum::pack`` writes the 1-based member index in 1 or 2 bytes (0 is the "error" value ``''`` that
non-strict SQL modes store for invalid input); ``Field_set::pack`` writes the member bit mask in 1, 2, 3, 4 or 8
bytes, bit 0 being the first member.  The byte count is the table map's metadata (``col.length``).

Readers return the stored ``int``.  Converters give member names when the table map carries them
(ENUM_STR_VALUE / SET_STR_VALUE optional metadata, ``binlog_row_metadata=FULL``): ENUM -> ``str``, SET ->
``frozenset[str]``; without names the ``int`` stays.  The server logs the names in the column's charset (the
field's typelib, ``Field_enum::binlog_type_info`` in ``sql/field.cc``; the charset is ENUM_AND_SET_*_CHARSET):
:func:`member_names` decodes them with it, as ``SELECT`` converts them.  ``mariadb-binlog -vv`` prints ENUM as
the index and SET as the stored bytes in bits (``b'00000101'``), which :data:`RENDER` reproduces.

Example::

    >>> from binlake.coltypes import Column
    >>> col = Column.build(0, 254, b"\\xf8\\x02").with_(set_values=("a", "b", "c"))
    >>> READERS[248](col)(b"\\x05\\x00", 0), sorted(CONVERTERS[248](col)(5)), RENDER[248](col, 5)
    ((5, 2), ['a', 'c'], "b'0000010100000000'")
"""

from __future__ import annotations

from collections.abc import Callable

from binlake.coltypes import Column, ColumnType
from binlake.errors import MalformedError, TruncatedError
from binlake.values.collations import codec, decoder

__all__ = ["CONVERTERS", "READERS", "RENDER", "member_names"]

T = ColumnType
Reader = Callable[[bytes, int], tuple[object, int]]
Converter = Callable[[object], object]


def member_names(logged: tuple[str, ...] | None, collation: int | None) -> tuple[str, ...] | None:
    """ENUM/SET member names decoded with the column's charset (``collation``; UTF-8 when unknown or binary).

    ``logged`` are the names as the table map parser read them, UTF-8 with surrogate escapes, so the logged
    bytes come back exactly.  A name that is not valid in its charset (no server logs one: ``CREATE TABLE``
    converts the names to the column's charset) keeps its ASCII bytes and shows each other byte as ``\\xNN``,
    so every name is text that encodes (no lone surrogates).

    >>> member_names(("\\udc81_", "a\\udcff"), 13)  # sjis: 0x815F is "\\", 0xFF is no code
    ('\\\\', 'a\\\\xff')
    """
    if logged is None:
        return None
    name = None if collation is None else codec(collation)
    text = decoder("utf-8" if name is None else name)
    out = []
    for logged_name in logged:
        raw = logged_name.encode("utf-8", "surrogateescape")
        value = text(raw)
        out.append(value if isinstance(value, str) else raw.decode("ascii", "backslashreplace"))
    return tuple(out)


def _int_reader(col: Column, sizes: tuple[int, ...]) -> Reader:
    size = col.length or 0
    what = col.real_type
    if size not in sizes:
        raise MalformedError(f"{what} column stored in {size} bytes ({sizes} expected)")

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        end = pos + size
        if end > len(buf):
            raise TruncatedError(f"{what} value runs past the end of the row", offset=pos)
        return int.from_bytes(buf[pos:end], "little"), end

    return read


def _enum_reader(col: Column) -> Reader:
    return _int_reader(col, (1, 2))


def _set_reader(col: Column) -> Reader:
    return _int_reader(col, (1, 2, 3, 4, 8))


def _enum_converter(col: Column) -> Converter | None:
    if col.enum_values is None:
        return None
    names = ("", *col.enum_values)

    def convert(index: object) -> object:
        try:
            return names[index]  # type: ignore[call-overload]
        except IndexError:
            raise MalformedError(f"ENUM index {index} past the column's {len(names) - 1} members") from None

    return convert


def _set_converter(col: Column) -> Converter | None:
    if col.set_values is None:
        return None
    names = col.set_values
    full = (1 << len(names)) - 1

    def convert(mask: object) -> object:
        m: int = mask  # type: ignore[assignment]
        if m & ~full:
            raise MalformedError(f"SET mask {m:#x} has bits past the column's {len(names)} members")
        return frozenset(name for i, name in enumerate(names) if m >> i & 1)

    return convert


def _render_enum(col: Column, value: object) -> str:
    return str(value)


def _render_set(col: Column, value: object) -> str:
    # log_event_print_value: the stored bytes in order, each printed most significant bit first
    raw = int(value).to_bytes(col.length or 1, "little")  # type: ignore[call-overload]
    return "b'" + "".join(f"{b:08b}" for b in raw) + "'"


READERS: dict[int, Callable[[Column], Reader]] = {T.ENUM: _enum_reader, T.SET: _set_reader}
CONVERTERS: dict[int, Callable[[Column], Converter | None]] = {T.ENUM: _enum_converter, T.SET: _set_converter}
RENDER: dict[int, Callable[[Column, object], str]] = {T.ENUM: _render_enum, T.SET: _render_set}
