"""Numbered codes with names: the one base class of binlake's code tables (event types, column types, ...).

Binlogs carry numbers; binlake keeps each number beside its server name, and a number no table knows still gets a
printable name instead of an error.

Example::

    >>> class Color(CodeEnum):
    ...     RED = 1
    >>> Color.name_of(1), Color.name_of(7)
    ('RED', 'UNKNOWN_7')
"""

from __future__ import annotations

import enum

__all__ = ["CodeEnum"]


class CodeEnum(enum.IntEnum):
    """An ``IntEnum`` whose :meth:`name_of` names any number, known or not."""

    @classmethod
    def unknown_name(cls, code: int) -> str:
        """The name of a number the table lacks (override to change the prefix)."""
        return f"UNKNOWN_{code}"

    @classmethod
    def name_of(cls, code: int) -> str:
        member = cls._value2member_map_.get(code)
        return member.name if member is not None else cls.unknown_name(code)
