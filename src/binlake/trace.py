"""Field-by-field recording of what a decoder reads, for ``binlake explain``.

Every event decoder reads its body through :meth:`binlake.events.context.DecodeContext.cursor`.  When the context's
``trace`` is a list (explain mode), that cursor is a :class:`TracingCursor`: it reads exactly like a
:class:`~binlake.wire.Cursor` and also appends one :class:`TraceField` per field to the list, with the decoder's own
label (the ``what`` argument), the offset from the start of the event, the raw bytes and the decoded value.  So the
layout of each event lives once, in its decoder, and explain shows what the decoder really did.

A read made of smaller reads is recorded once (a TLV entry is one field, not a type, a length and a value), except
:meth:`TracingCursor.packed_bytes`, whose length prefix and bytes are two fields (``"<what> length"`` and
``"<what>"``).

Example::

    >>> trace: list[object] = []
    >>> c = TracingCursor(bytes([0x0C]) + b"presentation", base=-19, trace=trace)
    >>> c.packed_bytes("schema name")
    b'presentation'
    >>> [(f.name, f.offset, f.size, f.value) for f in trace if isinstance(f, TraceField)]
    [('schema name length', 19, 1, 12), ('schema name', 20, 12, b'presentation')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from binlake.wire import Cursor

__all__ = ["TlvValue", "TraceField", "TracingCursor", "fields_of"]

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TlvValue:
    """The decoded value of one ``[type u8][length packed][value]`` entry (table-map optional metadata)."""

    type_code: int
    length: int
    value: bytes


@dataclass(frozen=True, slots=True)
class TraceField:
    """One field as a decoder read it: ``offset`` counts from the first byte of the event (common header included)."""

    name: str
    offset: int
    size: int
    raw: bytes
    value: object


def fields_of(trace: list[object] | None) -> list[TraceField]:
    """The recorded fields of a context's ``trace`` list, in reading order."""
    return [f for f in trace or () if isinstance(f, TraceField)]


class TracingCursor(Cursor):
    """A :class:`~binlake.wire.Cursor` that records every field it reads into ``trace``; see the module docstring.

    Reads of a method this class does not wrap are still recorded (by their raw bytes) through ``_need``.
    """

    __slots__ = ("_depth", "trace")

    def __init__(
        self,
        buf: bytes | memoryview,
        start: int = 0,
        end: int | None = None,
        base: int = 0,
        *,
        trace: list[object],
    ) -> None:
        super().__init__(buf, start, end, base)
        self.trace = trace
        self._depth = 0

    def _record(self, name: str, start: int, value: object) -> None:
        raw = bytes(self.buf[start : self.pos])
        self.trace.append(TraceField(name, start - self.base, len(raw), raw, value))

    def _field(self, what: str, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run one base-class read and record it as one field (reads nested inside it are not recorded)."""
        start = self.pos
        self._depth += 1
        try:
            value = read(*args, **kwargs)
        finally:
            self._depth -= 1
        if self._depth == 0:
            self._record(what, start, bytes(value) if isinstance(value, memoryview) else value)
        return value

    def _need(self, n: int, what: str) -> int:
        p = super()._need(n, what)
        if self._depth == 0:  # a read method added to Cursor after this class: record its bytes
            self._record(what, p, bytes(self.buf[p : p + n]))
        return p

    def bounded(self, end: int) -> Cursor:
        return TracingCursor(self.buf, self.pos, min(end, self.end), self.base, trace=self.trace)

    def u8(self, what: str = "u8") -> int:
        return self._field(what, super().u8, what)

    def uint(self, n: int, what: str = "integer") -> int:
        return self._field(what, super().uint, n, what)

    def u16(self, what: str = "u16") -> int:
        return self._field(what, super().u16, what)

    def u32(self, what: str = "u32") -> int:
        return self._field(what, super().u32, what)

    def u64(self, what: str = "u64") -> int:
        return self._field(what, super().u64, what)

    def f64(self, what: str = "double") -> float:
        return self._field(what, super().f64, what)

    def take(self, n: int, what: str = "bytes") -> bytes:
        return self._field(what, super().take, n, what)

    def view(self, n: int, what: str = "bytes") -> memoryview:
        return self._field(what, super().view, n, what)

    def rest(self) -> bytes:
        return self._field("rest of the event", super().rest)

    def skip(self, n: int, what: str = "padding") -> None:
        self._field(what, super().skip, n, what)

    def packed_int(self, what: str = "packed integer") -> int:
        return self._field(what, super().packed_int, what)

    def packed_bytes(self, what: str = "length-prefixed bytes") -> bytes:
        # two fields, so explain shows the length prefix apart from the bytes (Cursor.packed_bytes reads the same)
        return self.take(self.packed_int(f"{what} length"), what)

    def cstring(self, what: str = "NUL-terminated string") -> bytes:
        return self._field(what, super().cstring, what)

    def iter_tlv(self, what: str = "TLV") -> Iterator[tuple[int, int, memoryview]]:
        entries = super().iter_tlv(what)
        while True:
            start = self.pos
            self._depth += 1
            try:
                entry = next(entries, None)
            finally:
                self._depth -= 1
            if entry is None:
                return
            kind, _, value = entry
            if self._depth == 0:
                self._record(what, start, TlvValue(kind, len(value), bytes(value)))
            yield entry
