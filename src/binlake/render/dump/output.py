"""What the event printers of ``binlake dump`` write to: :class:`Output`, and the session state it keeps.

It holds what ``mariadb-binlog`` keeps beside its result file (``client/mysqlbinlog.cc``): the text gathered for
the output (written in large chunks), the session state printed last (:class:`Session`, ``PRINT_EVENT_INFO``),
under ``--flashback`` each event's text held back to be printed in reverse order at the end, and the header line of
each event (``Log_event::print_header``).  The printers of each event family (:mod:`.rows`, :mod:`.query`,
:mod:`.transaction`, :mod:`.control`) write through its methods, one :data:`Handler` per event type;
:class:`~binlake.render.dump.printer.TextPrinter` keeps one :class:`Output` and dispatches the events.

Example::

    >>> out = Output([].append)
    >>> out.emit("# at 4\\n"); out.event_text("COMMIT/*!*/;\\n"); out.text()
    '# at 4\\nCOMMIT/*!*/;\\n'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields

from binlake.events.base import Event
from binlake.render.dump.options import DumpOptions
from binlake.render.dump.quoting import DELIM

__all__ = ["FLUSH_AT", "Handler", "Output", "Session"]

FLUSH_AT = 1 << 20  # characters of text gathered before a write to the output


@dataclass(slots=True)
class Session:
    """``PRINT_EVENT_INFO``: what was printed last, so that SET statements repeat only on change."""

    db: str = ""
    flags2: int | None = None
    sql_mode: int | None = None
    auto_increment: tuple[int, int] = (0, 0)
    charset: tuple[int, ...] | None = None
    time_zone: str = ""
    lc_time_names: int = -1
    charset_database: int = -1
    thread_id: int | None = None
    allow_parallel: bool | None = None
    domain_id: int | None = None
    server_id: int | None = None
    gtid_flags2: int = 0
    skip_replication: int = 0

    def to_dict(self) -> dict[str, object]:
        """The session as a JSON object: a resumed ``binlake tail`` goes on printing as if it had never stopped.

        >>> import json
        >>> s = Session(db="shop", charset=(33, 33, 8), sql_mode=0)
        >>> Session.from_dict(json.loads(json.dumps(s.to_dict()))) == s
        True
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: object) -> Session:
        """Read :meth:`to_dict`'s output (through JSON: tuples as lists); anything else raises :class:`ValueError`."""
        names = {f.name for f in fields(cls)}
        if not isinstance(data, dict) or set(data) != names:
            raise ValueError(f"a printer session needs exactly the fields {sorted(names)}")
        for name in ("db", "time_zone"):
            if not isinstance(data[name], str):
                raise ValueError(f"a printer session's {name} is text, not {data[name]!r}")
        for name in ("lc_time_names", "charset_database", "gtid_flags2", "skip_replication"):
            if type(data[name]) is not int:
                raise ValueError(f"a printer session's {name} is an integer, not {data[name]!r}")
        for name in ("flags2", "sql_mode", "thread_id", "domain_id", "server_id"):
            if data[name] is not None and type(data[name]) is not int:
                raise ValueError(f"a printer session's {name} is an integer or null, not {data[name]!r}")
        if data["allow_parallel"] is not None and not isinstance(data["allow_parallel"], bool):
            raise ValueError(
                f"a printer session's allow_parallel is true, false or null, not {data['allow_parallel']!r}"
            )
        lists = {"auto_increment": data["auto_increment"], "charset": data["charset"]}
        for name, value in lists.items():
            if not (value is None and name == "charset") and not (
                isinstance(value, list) and all(type(v) is int for v in value)
            ):
                raise ValueError(f"a printer session's {name} is a list of integers, not {value!r}")
        auto = tuple(data["auto_increment"])
        if len(auto) != 2:
            raise ValueError(f"a printer session's auto_increment is two integers, not {auto!r}")
        charset = None if data["charset"] is None else tuple(data["charset"])
        return cls(**{**data, "auto_increment": (auto[0], auto[1]), "charset": charset})


@dataclass(slots=True)
class Output:
    """The text of a dump as the event printers make it; see the module docstring.

    ``write`` receives the text in large chunks (str with surrogate escapes for bytes that are not UTF-8).
    ``checksum_on`` and ``options_mask`` are the format description's in force (set by the printer): whether
    headers show each event's CRC32, and the ``options_written_to_bin_log`` bits its server logs.
    """

    write: Callable[[str], None]
    options: DumpOptions = field(default_factory=DumpOptions)
    session: Session = field(default_factory=Session)
    checksum_on: bool = True
    options_mask: int = 0xFFFFFFFF
    _out: list[str] = field(default_factory=list)
    _size: int = 0
    _undo: list[str] = field(default_factory=list)  # --flashback: each event's text, printed reversed
    _stop: str = ""  # --flashback: the STOP event's text, printed last
    _ts_cache: tuple[int, str] = (-1, "")

    def emit(self, text: str) -> None:
        """Straight to the result file."""
        self._out.append(text)
        self._size += len(text)
        if self._size > FLUSH_AT:
            self.flush()

    def emit_parts(self, parts: list[str]) -> None:
        """:meth:`emit` of each of ``parts`` (joined once, when written)."""
        self._out += parts
        self._size += sum(map(len, parts))
        if self._size > FLUSH_AT:
            self.flush()

    def event_text(self, text: str) -> None:
        """An event's own output buffer: printed at once, or held back for reversal under ``--flashback``."""
        if self.options.flashback:
            self._undo.append(text)
        else:
            self.emit(text)

    def stop_text(self, text: str) -> None:
        """The STOP event's text: printed at once, or after everything else under ``--flashback``."""
        if self.options.flashback:
            self._stop = text
        else:
            self.emit(text)

    def header(self, ev: Event) -> str:
        """``Log_event::print_header``: ``#261122 10:27:21 server id 1  end_log_pos 710 CRC32 0xaa425603 ``."""
        h = ev.header
        ts, text = self._ts_cache
        if ts != h.timestamp:
            t = time.localtime(h.timestamp)
            text = f"{t.tm_year % 100:02d}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:2d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            self._ts_cache = (h.timestamp, text)
        crc = f"CRC32 0x{h.checksum:08x} " if h.checksum is not None and self.checksum_on else ""
        return f"#{text} server id {h.server_id}  end_log_pos {h.log_pos} {crc}"

    def held_back(self) -> None:
        """Under ``--flashback``, at the end: every held-back event's text in reverse order, then the STOP event's."""
        self.emit("".join(reversed(self._undo)))
        self.emit(f"COMMIT\n{DELIM}\n")
        self.emit(self._stop)

    def text(self) -> str:
        """The text not written yet (and forget it)."""
        text = "".join(self._out)
        self._out.clear()
        self._size = 0
        return text

    def flush(self) -> None:
        """Write the text gathered so far."""
        if self._out:
            self.write(self.text())


# an event family's printer of one event type (the printer's dispatch table holds one per type)
Handler = Callable[[Output, Event], None]
