"""What a long run is doing, for the people who keep it running: lag behind the server (seconds and bytes), events
and row changes, batches, retries, skips and the last commit's time, served to Prometheus (``--metrics-port``) and
written as JSON lines (``--metrics-log``).

``binlake tail``, ``binlake mirror`` and ``binlake ingest --host --follow`` run for months; each updates a
:class:`Metrics` through a narrow interface (:meth:`~Metrics.event`, :meth:`~Metrics.caught_up`,
:meth:`~Metrics.retry`, :meth:`~Metrics.committed`).  :data:`NO_METRICS`, the default everywhere, does nothing: a
run without the options pays one empty call per event.  A :class:`Recorder` keeps the figures and computes the
lags when asked (:meth:`Recorder.snapshot`), so a scrape reads them as of its own moment.  This module imports the
standard library only; ``prometheus_client`` is imported by :func:`start_metrics` when ``--metrics-port`` is given.

Where lag is measured (``docs/reference/metrics.md`` says the same to users):

- **stream**: the replication stream, as events arrive.  Seconds: now minus the timestamp of the last event read
  (the event header's, whole seconds), and **0 once the stream is known to hold everything the server wrote**: a
  heartbeat arrived at the position the stream reached (the server sends one after ``--heartbeat`` seconds with
  nothing to send), or a poll of the server's binlogs found no byte past it.  An idle server so reads 0, not the
  age of its last write.  Bytes: the server's binlog bytes past the stream's position (``SHOW BINARY LOGS``, polled
  every :data:`SERVER_POLL` seconds on a connection of its own; the last file's size is the server's current
  end), 0 when caught up as above.
- **commit**: what the command has made durable (``tail``: each transaction delivered with its state; ``ingest``:
  each batch committed to the lake).  Seconds: now minus the timestamp of the first event the stream read that is
  not committed yet; when every event read is committed, the stream's figure (0 on an idle server).  Bytes: the
  server's binlog bytes past the last commit's resume point.

The figures, their names and labels are :data:`FIGURES` (``docs/reference/metrics.md`` lists the same;
a test compares them).

Example::

    watch = start_metrics(MetricsOptions(port=9187), "tail", stages=("stream", "commit"))  # binds the port now
    try:
        sizes = BinlogSizes(options)
        watch.poll_server(sizes, sizes.close)                           # the bytes lag
        client = ReplicationClient(options, start, metrics=watch.metrics)
        ...
    finally:
        watch.close()
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from binlake.errors import BinlogError, ConnectionLostError

if TYPE_CHECKING:
    from prometheus_client.registry import Collector

__all__ = [
    "FIGURES",
    "NO_METRICS",
    "SERVER_POLL",
    "Figure",
    "Metrics",
    "MetricsError",
    "MetricsOptions",
    "MetricsRun",
    "Recorder",
    "Snapshot",
    "bytes_after",
    "start_metrics",
]

log = logging.getLogger("binlake.metrics")

Stage = Literal["stream", "commit"]
Point = tuple[str, int]
"""A place in the server's binlogs: file name and position."""
SERVER_POLL = 5.0
"""Seconds between two looks at the server's binlog sizes (``SHOW BINARY LOGS``) for the bytes lag."""
OPS = ("insert", "update", "delete")
LOCAL = "127.0.0.1"
"""Where ``--metrics-port`` listens unless ``--metrics-host`` says otherwise."""
_JOIN = 5.0  # seconds a closing run waits for each of its threads


class MetricsError(BinlogError):
    """The metrics cannot be served as asked (the port is taken, the address is not this machine's)."""


@dataclass(frozen=True, slots=True)
class Figure:
    """One exported figure: its Prometheus name, type, labels, meaning and the commands that expose it."""

    name: str
    kind: Literal["counter", "gauge"]
    labels: tuple[str, ...]
    help: str
    commands: tuple[str, ...]


_LIVE = ("tail", "mirror", "ingest --host")
_ALL = ("tail", "mirror", "ingest --host", "ingest")
FIGURES: tuple[Figure, ...] = (
    Figure("binlake_info", "gauge", ("command", "version"), "1, labelled with the command and binlake's version", _ALL),
    Figure("binlake_lag_seconds", "gauge", ("stage",), "seconds behind the server at the stream or the commit", _LIVE),
    Figure(
        "binlake_lag_bytes", "gauge", ("stage",), "binlog bytes the server wrote past the stream or the commit", _LIVE
    ),
    Figure(
        "binlake_events_total", "counter", (), "events read from the server's binlogs (ingest: from the files)", _ALL
    ),
    Figure(
        "binlake_row_changes_total",
        "counter",
        ("op",),
        "row changes written (tail) or landed (ingest), by operation",
        ("tail", "ingest --host", "ingest"),
    ),
    Figure("binlake_batches_total", "counter", (), "batches committed to the lake", ("ingest --host", "ingest")),
    Figure("binlake_retries_total", "counter", (), "reconnections to the server after a lost connection", _LIVE),
    Figure("binlake_skips_total", "counter", (), "damaged stretches --on-error skipped", ("ingest --host", "ingest")),
    Figure(
        "binlake_last_commit_timestamp_seconds",
        "gauge",
        (),
        "when the last transaction was delivered (tail) or batch committed (ingest), Unix time",
        ("tail", "ingest --host", "ingest"),
    ),
)


def bytes_after(point: Point, sizes: Sequence[Point]) -> int | None:
    """The binlog bytes a server whose files are ``sizes`` (``SHOW BINARY LOGS``: name and size, oldest first) holds
    past ``point``: the rest of its file and every later file.  ``None`` where ``point``'s file is not among them
    and not after them (purged, or another server's); 0 where it is after them (a poll older than the stream)."""
    from binlake.reader import binlog_order

    file, position = point
    total: int | None = None
    for name, size in sizes:
        if total is not None:
            total += size
        elif name == file:
            total = max(0, size - position)
    if total is not None:
        return total
    if sizes:
        (base, number), (last_base, last_number) = binlog_order(file), binlog_order(sizes[-1][0])
        if base == last_base and number > last_number:
            return 0
    return None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The figures at ``time`` (Unix seconds): what a scrape or a JSON line shows.  A lag is ``None`` while it is
    not known (nothing read yet, the server's sizes not polled yet); ``stages`` are the command's."""

    command: str
    time: float
    stages: tuple[Stage, ...]
    events: int
    row_changes: Mapping[str, int]
    batches: int
    retries: int
    skips: int
    last_commit: float | None
    lag_seconds: Mapping[str, float | None]
    lag_bytes: Mapping[str, int | None]

    def figures(self) -> Iterable[tuple[Figure, Sequence[tuple[tuple[str, ...], float]]]]:
        """Each of the command's :data:`FIGURES` with its samples (label values, value); unknown values are left
        out."""
        from binlake.version import __version__

        values: dict[str, list[tuple[tuple[str, ...], float | None]]] = {
            "binlake_info": [((self.command, __version__), 1.0)],
            "binlake_lag_seconds": [((s,), self.lag_seconds.get(s)) for s in self.stages],
            "binlake_lag_bytes": [((s,), _num(self.lag_bytes.get(s))) for s in self.stages],
            "binlake_events_total": [((), float(self.events))],
            "binlake_row_changes_total": [((op,), float(n)) for op, n in sorted(self.row_changes.items())],
            "binlake_batches_total": [((), float(self.batches))],
            "binlake_retries_total": [((), float(self.retries))],
            "binlake_skips_total": [((), float(self.skips))],
            "binlake_last_commit_timestamp_seconds": [((), self.last_commit)],
        }
        for fig in FIGURES:
            if self.command in fig.commands:
                yield fig, [(labels, v) for labels, v in values[fig.name] if v is not None]

    def to_json(self) -> str:
        """One JSON line of the same figures: ``{"time": ..., "command": ..., "<figure>": value or {label: value}}``
        (``null`` where unknown)."""
        out: dict[str, Any] = {"time": round(self.time, 3), "command": self.command}
        for fig, samples in self.figures():
            if fig.name == "binlake_info":
                continue
            if fig.labels:
                by: dict[str, float | int | None] = {labels[0]: _plain(v) for labels, v in samples}
                if fig.name.startswith("binlake_lag"):
                    by = {s: by.get(s) for s in self.stages}
                out[fig.name] = by
            else:
                out[fig.name] = _plain(samples[0][1]) if samples else None
        return json.dumps(out, separators=(",", ":"))


def _num(v: int | None) -> float | None:
    return None if v is None else float(v)


def _plain(v: float) -> float | int:
    return int(v) if v == int(v) and abs(v) < 1 << 53 else round(v, 3)


class Metrics:
    """The interface the commands update; this base does nothing (:data:`NO_METRICS`).  ``enabled`` says whether
    the figures are kept (a caller may skip work only a :class:`Recorder` needs)."""

    enabled = False

    def event(self, timestamp: int, file: str, position: int) -> None:
        """An event of the server's binlogs was read (its header's ``timestamp``); the stream is now at
        ``file``:``position``."""

    def caught_up(self) -> None:
        """The stream holds everything the server wrote (a heartbeat came at the position the stream reached)."""

    def retry(self) -> None:
        """The connection was lost and is being opened again."""

    def committed(
        self,
        point: Point | None = None,
        *,
        rows: Mapping[str, int] | None = None,
        events: int = 0,
        batches: int = 0,
        skips: int = 0,
        pending: Callable[[], int | None] | None = None,
    ) -> None:
        """The command made what it read up to ``point`` durable (a transaction delivered, a batch committed):
        ``rows`` row changes per operation, ``events`` events read from files (not from a stream, which counts its
        own), ``batches`` and ``skips`` of it.  ``pending``: the timestamp of the first event after ``point`` the
        stream read, asked only where the stream is past ``point``."""


NO_METRICS = Metrics()
"""The metrics of a run without ``--metrics-port`` or ``--metrics-log``: nothing is kept."""


class Recorder(Metrics):
    """Keeps the figures of one run of ``command`` (a name of :attr:`Figure.commands`) with lag ``stages``.
    :meth:`event`, :meth:`caught_up` and :meth:`retry` come from the stream's one thread and take no lock (an event
    costs about 0.2 µs); the rest may come from any thread (the driver's, the poll's, the HTTP server's).  ``clock``:
    Unix time."""

    enabled = True

    def __init__(self, command: str, stages: tuple[Stage, ...] = (), *, clock: Callable[[], float] = time.time):
        self.command = command
        self.stages = stages
        self._clock = clock
        self._lock = threading.Lock()
        self._events = 0  # events counted at commits (a file ingest's); a stream's are _read
        self._rows: Counter[str] = Counter(dict.fromkeys(OPS, 0))
        self._batches = self._retries = self._skips = 0
        self._last_commit: float | None = None
        self._read = 0  # events read by the stream
        self._read_ts: int | None = None  # the last one's timestamp
        self._at: Point | None = None  # where the stream is
        self._caught = -1  # the value of _read when the stream last held everything the server wrote
        self._pending_ts: int | None = None  # the first event read that is not committed yet
        self._commit_at: Point | None = None
        self._sizes: list[Point] | None = None  # the server's binlogs at the last poll

    # -- the interface -----------------------------------------------------------------------------------------

    def event(self, timestamp: int, file: str, position: int) -> None:
        self._read += 1
        if timestamp:
            self._read_ts = timestamp
            if self._pending_ts is None:
                self._pending_ts = timestamp
        self._at = (file, position)

    def caught_up(self) -> None:
        self._caught = self._read

    def retry(self) -> None:
        self._retries += 1

    def committed(
        self,
        point: Point | None = None,
        *,
        rows: Mapping[str, int] | None = None,
        events: int = 0,
        batches: int = 0,
        skips: int = 0,
        pending: Callable[[], int | None] | None = None,
    ) -> None:
        with self._lock:
            self._rows.update(rows or {})
            self._events += events
            self._batches += batches
            self._skips += skips
            self._last_commit = self._clock()
            behind = point is not None and point != self._at
            if point is not None:
                self._commit_at = point
                if not behind:
                    self._pending_ts = None  # every event read is committed: the next one read is the first pending
        if behind and pending is not None:
            ts = pending()
            if ts:
                with self._lock:
                    self._pending_ts = ts

    # -- the server's side -------------------------------------------------------------------------------------

    def stream_mark(self) -> tuple[int, Point | None]:
        """How many events the stream has read and where it is (taken before a poll of the server)."""
        with self._lock:
            return self._read, self._at

    def server_sizes(self, sizes: Sequence[Point], mark: tuple[int, Point | None]) -> None:
        """The server's binlogs and sizes, polled after :meth:`stream_mark` gave ``mark``: where the stream was
        then is their end, it had read everything written before the poll."""
        read, at = mark
        caught = at is not None and bytes_after(at, sizes) == 0
        with self._lock:
            self._sizes = list(sizes)
            if caught:
                self._caught = max(self._caught, read)

    # -- reading -----------------------------------------------------------------------------------------------

    def snapshot(self, now: float | None = None) -> Snapshot:
        """The figures as of ``now`` (default: the clock's time)."""
        now = self._clock() if now is None else now
        with self._lock:
            caught = self._caught == self._read
            stream_s: float | None = 0.0 if caught else None if self._read_ts is None else max(0.0, now - self._read_ts)
            sizes = self._sizes
            stream_b = 0 if caught else None if sizes is None or self._at is None else bytes_after(self._at, sizes)
            if self._pending_ts is None:
                commit_s, commit_b = stream_s, stream_b
            else:
                commit_s = max(0.0, now - self._pending_ts)
                at = self._commit_at
                commit_b = None if sizes is None or at is None else bytes_after(at, sizes)
            return Snapshot(
                self.command,
                now,
                self.stages,
                self._read + self._events,
                dict(self._rows),
                self._batches,
                self._retries,
                self._skips,
                self._last_commit,
                {"stream": stream_s, "commit": commit_s},
                {"stream": stream_b, "commit": commit_b},
            )


# -- serving -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetricsOptions:
    """What a run's metrics are (``--metrics-port``, ``--metrics-host``, ``--metrics-log``): served to Prometheus
    at ``http://host:port/metrics`` (``port`` 0: a free one; ``host`` ``None``: :data:`LOCAL`, this machine only),
    written as a JSON line every ``log_every`` seconds; neither: none."""

    port: int | None = None
    host: str | None = None
    log_every: float | None = None


@dataclass
class MetricsRun:
    """The metrics of one command run: :attr:`metrics` to update, and what serves them (an HTTP server, the JSON
    log, the server poll) until :meth:`close`."""

    metrics: Metrics = NO_METRICS
    address: str | None = None  # http://HOST:PORT/metrics, where served
    _stop: threading.Event = field(default_factory=threading.Event)
    _closers: list[Callable[[], None]] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    def poll_server(self, sizes: Callable[[], Sequence[Point]], close: Callable[[], None]) -> None:
        """Poll the server's binlog sizes every :data:`SERVER_POLL` seconds with ``sizes`` (``SHOW BINARY LOGS``:
        :class:`binlake.replication.connection.BinlogSizes`) for the bytes lag; the poll calls ``close`` (its
        connection's) when it ends.  Nothing is polled where no lag is kept."""
        if isinstance(self.metrics, Recorder) and self.metrics.stages:
            self._thread(_Poll(self.metrics, sizes, close, self._stop).run, "binlake-metrics-poll")

    def _thread(self, target: Callable[[], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def close(self) -> None:
        """Stop serving; a last JSON line (with ``--metrics-log``) gives the figures at the end.  A poll of a server
        that does not answer is left to end on its own (its thread is a daemon; its connection times out)."""
        self._stop.set()
        for t in self._threads:
            t.join(_JOIN)
        for c in self._closers:
            c()
        self._threads.clear()
        self._closers.clear()


class _Poll:
    """The server poll of :meth:`MetricsRun.poll_server`: one look at once, then every :data:`SERVER_POLL`
    seconds.  A lost connection is tried again at the next look (said once until a look succeeds); any other error
    (no BINLOG MONITOR / REPLICATION CLIENT privilege) ends the polling, said once: the bytes lag stays unknown."""

    def __init__(
        self,
        recorder: Recorder,
        sizes: Callable[[], Sequence[Point]],
        close: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        self.recorder, self.sizes, self.close, self.stop = recorder, sizes, close, stop

    def run(self) -> None:
        try:
            self._loop()
        finally:
            self.close()

    def _loop(self) -> None:
        failing = False
        while not self.stop.is_set():
            mark = self.recorder.stream_mark()
            try:
                sizes = self.sizes()
            except ConnectionLostError as e:
                if not failing:
                    log.warning("the server's binlog sizes (for the bytes lag): %s; trying again", e)
                failing = True
            except BinlogError as e:
                log.warning("the server's binlog sizes (for the bytes lag): %s; the bytes lag stays unknown", e)
                return
            else:
                failing = False
                self.recorder.server_sizes(sizes, mark)
            if self.stop.wait(SERVER_POLL):
                return


def start_metrics(options: MetricsOptions, command: str, *, stages: tuple[Stage, ...] = ()) -> MetricsRun:
    """The metrics ``options`` ask for: none (a run of :data:`NO_METRICS`), or a :class:`Recorder` served at
    ``--metrics-port`` (bound here, before the long run starts: a port taken or an address not this machine's is a
    :class:`MetricsError`) and written every ``--metrics-log`` seconds."""
    port, every = options.port, options.log_every
    host = options.host or LOCAL
    if port is None and options.host is not None:
        raise MetricsError("--metrics-host says where --metrics-port listens: give --metrics-port too")
    if port is None and every is None:
        return MetricsRun()
    recorder = Recorder(command, stages)
    run = MetricsRun(recorder)
    if port is not None:
        server, bound = _serve(recorder, host, port)
        run._closers.append(server.shutdown)
        run._closers.append(server.server_close)
        run.address = f"http://{f'[{host}]' if ':' in host else host}:{bound}/metrics"
        print(f"binlake {command.split()[0]}: metrics at {run.address}", file=sys.stderr, flush=True)
    if every is not None:
        run._thread(lambda: _log_lines(recorder, every, run._stop), "binlake-metrics-log")
    return run


def _log_lines(recorder: Recorder, every: float, stop: threading.Event) -> None:
    """One JSON line of the figures on stderr every ``every`` seconds, and one more when the run ends."""
    while not stop.wait(every):
        print(recorder.snapshot().to_json(), file=sys.stderr, flush=True)
    print(recorder.snapshot().to_json(), file=sys.stderr, flush=True)


def _serve(recorder: Recorder, host: str, port: int) -> tuple[Any, int]:
    """Start prometheus_client's HTTP server for ``recorder`` on ``host``:``port``; the server and its port."""
    from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_collector(recorder))
    ProcessCollector(registry=registry)  # process_resident_memory_bytes, process_cpu_seconds_total, ...
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as e:
        why = e.strerror or str(e)
        raise MetricsError(f"--metrics-port {port}: cannot listen on {host}:{port}: {why}") from None
    return server, int(server.server_address[1])


def _collector(recorder: Recorder) -> Collector:
    """A prometheus_client collector of ``recorder``'s :meth:`~Recorder.snapshot`, taken at each scrape."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

    class _Figures:
        def collect(self) -> Iterable[Metric]:
            for fig, samples in recorder.snapshot().figures():
                family: Metric
                if fig.kind == "counter":
                    family = CounterMetricFamily(fig.name, fig.help, labels=fig.labels)
                else:
                    family = GaugeMetricFamily(fig.name, fig.help, labels=fig.labels)
                for labels, value in samples:
                    family.add_metric(list(labels), value)
                yield family

    return _Figures()
