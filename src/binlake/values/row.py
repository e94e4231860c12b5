"""The vocabulary of row images that every layer above the values shares.

A row image (``pack_row`` in ``sql/rpl_record.cc``) is one value per column of its table map: :data:`Row` (alias
:data:`Image`) is that tuple, in table-map column order, with ``None`` for SQL NULL and :data:`ABSENT` for a column
the image does not carry (``binlog_row_image=MINIMAL``/``NOBLOB``).  A :data:`Reader` reads one stored value of one
column from an image, a :data:`Converter` turns a stored value into its documented Python type; the value families
(:mod:`binlake.values`) make them per column.

It lives below the events and the row decoder so that both depend on it, never on each other: events hold row
images, :mod:`binlake.rowdecoder` builds them, and neither imports the other to name them.

Example::

    >>> ABSENT, (1, None, ABSENT)
    (ABSENT, (1, None, ABSENT))
    >>> import pickle; pickle.loads(pickle.dumps(ABSENT)) is ABSENT
    True
"""

from __future__ import annotations

from collections.abc import Callable

from binlake.coltypes import Column

__all__ = ["ABSENT", "Converter", "ConverterFactory", "Image", "Reader", "ReaderFactory", "Row"]


class _Absent:
    """The type of :data:`ABSENT`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"  # pickles (to Spark workers) as the module-level singleton


ABSENT = _Absent()
"""A column not in a row image (``binlog_row_image=MINIMAL``/``NOBLOB``): unknown, which is not NULL (``None``)."""

Row = tuple[object, ...]
"""One row image: a value per table-map column (``None`` NULL, :data:`ABSENT` not in the image)."""
Image = Row

Reader = Callable[[bytes, int], tuple[object, int]]
"""Reads one non-NULL stored value of a column at ``pos`` of a row image: ``(value, next_pos)``."""
ReaderFactory = Callable[[Column], Reader]
Converter = Callable[[object], object]
"""Turns a stored value into the documented Python type (charset decoding, ENUM/SET names, ...)."""
ConverterFactory = Callable[[Column], "Converter | None"]
