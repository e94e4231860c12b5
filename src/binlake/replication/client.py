"""The replication client: a replica's connection that survives its server.

:class:`ReplicationClient` opens a :class:`~binlake.replication.connection.ReplicationConnection`, starts a dump at a
:class:`~binlake.replication.position.StartAt`, feeds the bytes to a
:class:`~binlake.replication.stream.ReplicationStream` and yields its :class:`~binlake.replication.stream.StreamEvent`
s.  When the connection is lost (the server restarts or is killed, the connection is killed, the network fails, or
nothing arrives for the timeout: a hung server is a lost one) it logs one line, waits (capped exponential backoff
with jitter, :class:`~binlake.replication.options.RetryPolicy`) and reconnects where the last event it yielded
ended: by file and position, or, for a stream started by GTID, by the GTID state before the event group in flight
plus dropping that group's events already yielded.  So no event is lost or yielded twice across reconnections.
The same decoder goes on (its table maps and format description carry over).

Errors that retrying cannot fix are raised at once: bad credentials or privileges, an impossible start, and a purged
binlog (:class:`~binlake.errors.BinlogPurgedError` naming the missing file; the client never jumps ahead to a binlog
the server still has).

For the tail and the live ingest: :attr:`ReplicationClient.resume_point` is, after each event yielded, the
:class:`~binlake.replication.position.ResumePoint` that continues right after it (store it at transaction ends
and start a later client with ``StartAt.resume(point)``); :attr:`ReplicationClient.gtid_state` is the GTID state
including the group in flight.

Example::

    options = ConnectionOptions("db1", "repl", server_id=4242, password=Secret(...))
    client = ReplicationClient(options, StartAt.at("binlog.000042", 4), follow=False)
    for se in client:
        if se.in_file:
            print(se.file, se.start, se.event.type, client.resume_point)
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from binlake.decoder import Decoder
from binlake.errors import ConnectionLostError, ReplicationError
from binlake.events.context import DecodeOptions
from binlake.events.control import HeartbeatEvent, RotateEvent
from binlake.metrics import NO_METRICS, Metrics
from binlake.reader import binlog_order
from binlake.replication.connection import ReplicationConnection, ServerInfo
from binlake.replication.gtid import GtidTracker, MariaGtidPosition, encode_gtid_set, parse_gtid_set
from binlake.replication.options import ConnectionOptions
from binlake.replication.position import ResumePoint, StartAt
from binlake.replication.stream import ReplicationStream, StreamEvent

__all__ = ["ReplicationClient", "connected"]

log = logging.getLogger("binlake.replication")

T = TypeVar("T")


def connected(
    options: ConnectionOptions,
    ask: Callable[[ReplicationConnection], T],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``ask(conn)`` on a connection opened for it, opened again after a lost one as the stream is (the options'
    :class:`~binlake.replication.options.RetryPolicy`: one line per attempt, a jittered capped backoff between
    them, at most ``retries`` attempts, then the last :class:`~binlake.errors.ConnectionLostError`).  For the
    questions a command asks before it streams (``ingest --host``'s privileges): a server restarting as the command
    starts is waited for, not taken for gone; errors retrying cannot fix (credentials, privileges) are raised at
    once."""
    rng = random.Random()
    attempt = 0
    while True:
        try:
            with ReplicationConnection(options) as conn:
                conn.open()
                return ask(conn)
        except ConnectionLostError as e:
            attempt += 1
            limit = options.retry.retries
            if limit is not None and attempt > limit:
                log.error("%s; giving up after %d attempts", e, attempt - 1)
                raise
            delay = options.retry.delay(attempt, rng)
            log.warning("%s; retrying in %.1f s (attempt %d%s)", e, delay, attempt,
                        f" of {limit}" if limit is not None else "")  # fmt: skip
            sleep(delay)


class ReplicationClient:
    """See the module docstring.

    ``follow``: wait for new events at the server's end (else stop there: a non-blocking dump).  ``keep_raw``: the
    events' bytes ride along (``binlake mirror``).  ``track_gtid``: follow the GTID state (on a MariaDB position
    start this asks the server for the state at the start, ``BINLOG_GTID_POS``, which reads the file up to there).
    ``metrics``: told of each event read, each heartbeat that finds the stream caught up and each reconnection
    (:mod:`binlake.metrics`).  ``connect`` and ``sleep`` are replaceable for tests.
    """

    def __init__(
        self,
        options: ConnectionOptions,
        start: StartAt,
        *,
        follow: bool = True,
        keep_raw: bool = False,
        track_gtid: bool = True,
        decode_options: DecodeOptions | None = None,
        decoder: Decoder | None = None,
        metrics: Metrics = NO_METRICS,
        connect: Callable[[ConnectionOptions], ReplicationConnection] = ReplicationConnection,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if start.kind == "gtid" and start.gtid is None:
            raise ReplicationError("a GTID start needs a GTID state")
        self.options = options
        self.follow = follow
        self.track_gtid = track_gtid
        self.metrics = metrics
        self.stream = ReplicationStream(decode_options, decoder=decoder, keep_raw=keep_raw)
        self.server: ServerInfo | None = None
        self._start = start
        self._connect = connect
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._conn: ReplicationConnection | None = None
        self._file: str | None = None  # the next event to yield: its file and position
        self._position = 0
        self._skip: tuple[str, int] | None = None  # GTID start: drop in-file events ending at or before this
        self._skipped = 0
        self._closed = False
        self._gtid: GtidTracker | None = None

    # -- what a caller keeps -----------------------------------------------------------------------------------

    @property
    def resume_point(self) -> ResumePoint | None:
        """Where a new client goes on right after the last event yielded (``None`` before the first one)."""
        if self._file is None or self._position < 4:
            return None
        gtid = self._gtid.resume_state if self._gtid is not None else None
        return ResumePoint(self._file, self._position, gtid, self.server.flavor if self.server else None)

    @property
    def gtid_state(self) -> str | None:
        """The GTID state including the latest event group seen (``None`` while unknown)."""
        return self._gtid.state if self._gtid is not None else None

    # -- the loop ----------------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[StreamEvent]:
        return self.events()

    def events(self) -> Iterator[StreamEvent]:
        """Yield the stream's events, reconnecting after lost connections; see the module docstring."""
        attempt = 0
        try:
            while True:
                try:
                    self._open()
                    for se in self._pump():
                        if se.in_file:
                            attempt = 0  # progress: the next loss starts a fresh series of attempts
                        yield se
                    return  # the end of a non-blocking dump
                except ConnectionLostError as e:
                    self._drop()
                    if self._closed:
                        return
                    attempt += 1
                    limit = self.options.retry.retries
                    if limit is not None and attempt > limit:
                        log.error("%s; giving up after %d attempts", e, attempt - 1)
                        raise
                    delay = self.options.retry.delay(attempt, self._rng)
                    self.metrics.retry()
                    log.warning(
                        "%s; reconnecting in %.1f s (attempt %d%s) to go on at %s",
                        e,
                        delay,
                        attempt,
                        f" of {limit}" if limit is not None else "",
                        self._where(),
                    )
                    self._sleep(delay)
        finally:
            self._drop()

    def close(self) -> None:
        """Drop the connection; an iteration in progress ends (without reconnecting) at its next read."""
        self._closed = True
        self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _where(self) -> str:
        s = self._restart_point()
        if s.kind == "gtid":
            return f"GTID {s.gtid!r}" + (f" (after {s.file}:{s.position})" if s.file else "")
        return f"{s.file}:{s.position}" if s.kind == "position" else f"the server's {s.kind} binlog"

    def _restart_point(self) -> StartAt:
        """Where the next connection starts: the start, until an event told where the stream is."""
        start = self._start
        if self._file is None:
            return start
        if start.kind == "gtid":
            gtid = self._gtid.resume_state if self._gtid is not None else None
            skip = self._skip or (self._file, self._position)
            return StartAt("gtid", skip[0], skip[1], gtid if gtid is not None else start.gtid)
        return StartAt.at(self._file, self._position)

    def _open(self) -> None:
        conn = self._connect(self.options)
        self._conn = conn
        info = conn.open()
        if self.server is not None and info.flavor != self.server.flavor:
            raise ReplicationError(f"{self.options.address} is now a {info.flavor} server, was {self.server.flavor}")
        self.server = info
        start = self._restart_point()
        if self._gtid is None and (self.track_gtid or start.kind == "gtid"):  # a GTID start resumes by it
            self._gtid = GtidTracker(info.flavor)
        if start.kind == "current":
            file, position, gtid = conn.binlog_status()
            start = self._start = StartAt.at(file, position)
            if self._gtid is not None and gtid is not None:
                self._gtid.set_baseline(gtid)
        if start.kind == "position" and self._gtid is not None and self._gtid.state is None and start.position > 4:
            assert start.file is not None
            baseline = conn.binlog_gtid_pos(start.file, start.position)
            if baseline is not None:
                self._gtid.set_baseline(baseline)
        conn.prepare(semi_sync=self.options.semi_sync)
        self.stream.semi_sync = self.options.semi_sync
        if start.kind == "gtid":
            assert start.gtid is not None and self._gtid is not None
            self.stream.reset(gtid=start.gtid)
            # The server replays from the group after ``start.gtid``; the tracker replays with it (the events
            # dropped below as already delivered are observed again), so its state is what it was the first time.
            self._gtid.set_baseline(start.gtid)
            self._skip = (start.file, start.position) if start.file is not None else None
            if info.flavor == "mariadb":
                conn.set_gtid_start(str(MariaGtidPosition.parse(start.gtid)))
                conn.dump("", 4, follow=self.follow)
            else:
                conn.dump_gtid(encode_gtid_set(parse_gtid_set(start.gtid)), follow=self.follow)
        else:
            self.stream.reset(file=start.file)
            conn.dump(start.file or "", start.position, follow=self.follow)
        log.info(
            "%s: %s %s (server id %d%s): reading from %s",
            self.options.address,
            info.flavor,
            info.version,
            info.server_id,
            ", TLS" if info.tls else "",
            self._where() if start.kind != "oldest" else "the oldest binlog",
        )

    def _pump(self) -> Iterator[StreamEvent]:
        conn, stream, metrics = self._conn, self.stream, self.metrics
        assert conn is not None
        while True:
            stream.feed(conn.read(file=self._file, pos=self._position))
            for se in stream.events():
                ev = se.event
                if se.in_file:
                    if self._gtid is not None:
                        self._gtid.observe(ev)
                    if self._skip is not None:
                        if self._already_yielded(se):
                            self._skipped += 1
                            if se.ack:
                                conn.acknowledge(se.file, se.end)
                            continue
                        if self._skipped:
                            log.info(
                                "%s: dropped %d events up to %s:%d, already delivered before the reconnection",
                                self.options.address,
                                self._skipped,
                                *self._skip,
                            )
                        self._skip, self._skipped = None, 0
                    if isinstance(ev, RotateEvent):
                        self._file, self._position = ev.name, ev.position
                    elif ev.header.in_payload is None:
                        self._file, self._position = se.file, se.end
                    metrics.event(ev.header.timestamp, self._file or se.file, self._position)
                elif isinstance(ev, RotateEvent):
                    self._file, self._position = ev.name, ev.position
                elif isinstance(ev, HeartbeatEvent) and (ev.log_file, ev.position) == (self._file, self._position):
                    metrics.caught_up()  # the server waits for new events where the stream is: nothing more to read
                yield se
                if se.ack:
                    conn.acknowledge(se.file, se.end)
            if stream.ended:
                if self.follow:  # a following dump never ends on its own: the server is shutting down
                    raise ConnectionLostError(
                        f"{self.options.address} ended the dump (shutting down?)", file=self._file, pos=self._position
                    )
                return

    def _already_yielded(self, se: StreamEvent) -> bool:
        """After a GTID restart: ``se`` is at or before the point the last connection got to."""
        assert self._skip is not None
        file, position = self._skip
        if se.file == file:
            return se.end <= position
        here, there = binlog_order(se.file), binlog_order(file)
        return here[0] == there[0] and here < there
