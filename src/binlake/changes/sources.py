"""Where a change stream's events come from: binlog files (:class:`FileSource`) or a running server
(:class:`ServerSource`, through :class:`~binlake.replication.client.ReplicationClient`).

Both give :class:`Located` events (the event, the binlog file it is in, the position after it) and know, after
each event they gave, the :class:`~binlake.replication.position.ResumePoint` right after it
(:meth:`resume_point`) and the DDL the decoder has followed up to it (:attr:`schema`, for naming the columns of
table maps that log no names); a server's source also gives the server's own table definitions
(:attr:`definitions`: :class:`binlake.columns.SchemaSource`, which the replication side injects).

Example::

    source = FileSource(["binlog.000001", "binlog.000002"], start=4, stop=None)
    for loc in source:
        print(loc.file, loc.event.header.pos, loc.end, source.resume_point())
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from binlake.decoder import Decryptor
from binlake.events.base import Event
from binlake.events.context import DecodeOptions
from binlake.events.format import FormatDescriptionEvent
from binlake.reader import read_events
from binlake.schema import SchemaTracker, schema_tracker

if TYPE_CHECKING:
    from binlake.columns import SchemaSource
    from binlake.replication.client import ReplicationClient
    from binlake.replication.gtid import GtidTracker
    from binlake.replication.position import Flavor, ResumePoint

__all__ = ["EventSource", "FileSource", "Located", "ServerSource"]


@dataclass(frozen=True, slots=True)
class Located:
    """An event with its binlog ``file`` (base name) and ``end``: the position after it (for an event inside a
    TRANSACTION_PAYLOAD, after the payload).  ``gap``: events before it were not read (a start inside a file), so
    whatever transaction it belongs to may have begun unseen."""

    event: Event
    file: str
    end: int
    gap: bool = False


class EventSource(Protocol):
    """What :class:`~binlake.changes.stream.ChangeStream` reads."""

    schema: SchemaTracker | None
    definitions: SchemaSource | None

    def __iter__(self) -> Iterator[Located]: ...

    def resume_point(self) -> ResumePoint | None:
        """Where reading goes on right after the last event given (``None`` before the first); its GTID state
        covers every group seen, the last event's included: the state at a transaction's end, where the change
        stream asks for it."""
        ...

    @property
    def flavor(self) -> Flavor | None:
        """``mariadb`` or ``mysql`` once a format description said which, else ``None``."""
        ...


class FileSource:
    """The events of binlog files, in the order given (one schema for the run: DDL in one file applies to the next).

    ``start``: the position of the first event to read in the first file, ``stop``: read only events that start
    before it in the last file (``mariadb-binlog``'s ``--start-position``/``--stop-position``).  ``open_log``
    replaces the reader (``binlake.render.open_log`` for ``--on-error``); it takes the path and the keyword
    arguments ``start``, ``stop``, ``options``, ``decryptor``, ``schema``.
    """

    def __init__(
        self,
        files: Sequence[str],
        *,
        options: DecodeOptions | None = None,
        start: int | None = None,
        stop: int | None = None,
        decryptor: Decryptor | None = None,
        schema: SchemaTracker | None = None,
        open_log: Callable[..., Iterator[Event]] | None = None,
    ) -> None:
        self.files = list(files)
        self.options = options or DecodeOptions()
        self.start, self.stop = start, stop
        self.decryptor = decryptor
        self.schema = schema if schema is not None else schema_tracker(self.options)
        self.definitions: SchemaSource | None = None  # files: their DDL and --schema say what a column is
        self._open = open_log
        self._flavor: Flavor | None = None
        self._gtids: GtidTracker | None = None
        self._file: str | None = None
        self._end = 0

    @property
    def flavor(self) -> Flavor | None:
        return self._flavor

    def resume_point(self) -> ResumePoint | None:
        from binlake.replication.position import ResumePoint

        if self._file is None or self._end < 4:
            return None
        gtid = self._gtids.state if self._gtids is not None else None
        return ResumePoint(self._file, self._end, gtid, self._flavor)

    def __iter__(self) -> Iterator[Located]:
        for n, path in enumerate(self.files):
            start = self.start if n == 0 else None
            stop = self.stop if n == len(self.files) - 1 else None
            name = os.path.basename(path)
            gap = start is not None and start > 4
            if gap:
                self._learn_flavor(path)
            opener = read_events if self._open is None else self._open
            events = opener(
                path, options=self.options, start=start, stop=stop, decryptor=self.decryptor, schema=self.schema
            )
            self._file = name
            for ev in events:
                h = ev.header
                if h.in_payload is None:
                    self._end = h.pos + h.event_size
                self._observe(ev)
                yield Located(ev, name, self._end, gap)
                gap = False

    def _learn_flavor(self, path: str) -> None:
        """A read that starts past the format description does not see it: read it alone (it starts at 4)."""
        for ev in read_events(path, options=self.options, stop=5, decryptor=self.decryptor):
            self._observe(ev)

    def _observe(self, ev: Event) -> None:
        if isinstance(ev, FormatDescriptionEvent):
            flavor: Flavor = "mariadb" if ev.is_mariadb else "mysql"
            if flavor != self._flavor:
                from binlake.replication.gtid import GtidTracker

                self._flavor, self._gtids = flavor, GtidTracker(flavor)
        elif self._gtids is not None:
            self._gtids.observe(ev)


class ServerSource:
    """The events of a running server's binlog files, as a :class:`ReplicationClient` streams them (what the server
    sends besides its files' events, heartbeats and artificial events, is left out).  The client reconnects by
    itself; a stream that starts inside a file marks its first event as after a gap.

    ``on_start`` is called once with the resume point where the stream begins, as soon as the client knows it (the
    server's first event, its artificial ROTATE): a reader that keeps a state stores it before any transaction, so
    a start at the server's current end is not moved on by a restart.

    ``definitions``: the server's table definitions (``information_schema``), for what neither the table maps nor
    the DDL the stream reads say (:mod:`binlake.columns`)."""

    def __init__(
        self,
        client: ReplicationClient,
        *,
        on_start: Callable[[ResumePoint], None] | None = None,
        definitions: SchemaSource | None = None,
    ) -> None:
        self.client = client
        schema = client.stream.decoder.ctx.schema  # the client's decoder follows the DDL (binlake.reader.Decoder)
        self.schema = schema if isinstance(schema, SchemaTracker) else None
        self.definitions = definitions
        self._on_start = on_start

    @property
    def flavor(self) -> Flavor | None:
        return self.client.server.flavor if self.client.server is not None else None

    def resume_point(self) -> ResumePoint | None:
        """The client's point, with the GTID state including the latest group: at a transaction's end that group
        is the transaction just delivered (the client's own point leaves it out: it may be in flight)."""
        point = self.client.resume_point
        if point is None or point.gtid is None:
            return point
        return replace(point, gtid=self.client.gtid_state)

    def __iter__(self) -> Iterator[Located]:
        first = True
        for se in self.client:
            if self._on_start is not None:
                point = self.resume_point()
                if point is not None:
                    self._on_start(point)
                    self._on_start = None
            if not se.in_file:
                continue
            gap = first and se.start > 4
            first = False
            yield Located(se.event, se.file, se.end, gap)
