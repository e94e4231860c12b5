"""Column values: one module per value family, joined here into one dispatch table.

Each family module exports ``READERS: dict[int, ReaderFactory]``, keyed by the *real* type code of a column
(``Column.real_type_code``).  A factory is called once per column of a table map and returns a ``Reader``, a
function ``(buf, pos) -> (value, next_pos)`` that reads one non-NULL value of that column from a row image.
Readers return the *stored* value: strings and blobs as ``bytes``, ENUM as its 1-based index, SET as its bit mask.
``typed(col)`` then gives the converter (or ``None``) that turns a stored value into the documented Python type
(charset decoding, ENUM/SET names); ``binlake dump`` prints stored values, the row API returns typed ones.

The Python type of each MySQL type is documented in one table, in ``docs/formats/values.md``.  Row images
(``Row``, ``ABSENT``) and the reader and converter types live in :mod:`binlake.values.row`, below the family
modules and the events alike.
"""

from __future__ import annotations

import functools

from binlake.coltypes import Column, ColumnType
from binlake.errors import UnsupportedError
from binlake.values.row import Converter, ConverterFactory, Reader, ReaderFactory

__all__ = ["Converter", "Reader", "ReaderFactory", "reader_for", "typed"]


@functools.cache
def _tables() -> tuple[dict[int, ReaderFactory], dict[int, ConverterFactory]]:
    """The family modules' tables joined, on first use (``binlake events`` decodes no value: it never loads them)."""
    from binlake.values import decimal, enum_set, json_binary, numeric, spatial, strings, temporal, vector

    readers: dict[int, ReaderFactory] = {}
    converters: dict[int, ConverterFactory] = {}
    for mod in (numeric, decimal, temporal, strings, json_binary, spatial, enum_set, vector):
        readers.update(mod.READERS)
        converters.update(getattr(mod, "CONVERTERS", {}))
    return readers, converters


def reader_for(col: Column) -> Reader:
    """The reader of one column's stored values; :class:`UnsupportedError` for a type no module decodes."""
    factory = _tables()[0].get(col.real_type_code)
    if factory is None:
        raise UnsupportedError(f"no decoder for column type {ColumnType.name_of(col.real_type_code)}")
    return factory(col)


def typed(col: Column) -> Converter | None:
    """The converter from stored value to documented Python type, or ``None`` where they are the same."""
    factory = _tables()[1].get(col.real_type_code)
    return None if factory is None else factory(col)
