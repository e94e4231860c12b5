"""``spark.readStream.format("binlake")``: Spark Structured Streaming over a folder of binlogs that grows, or over a
running server (through a mirror of its binlogs).  The views and their columns are the batch source's
(:mod:`binlake.spark.datasource`): a micro-batch is a list of byte ranges read by the same
:func:`~binlake.spark.datasource.read_split`.

Offsets (:class:`StreamOffset`, a typed, versioned record Spark keeps in its checkpoint as JSON) name a binlog
``file`` and the ``pos`` where the next transaction starts, and, for a server, ``gtid``: the GTID state there
(where known).  An offset is always the end of a whole transaction (:mod:`binlake.transactions`, the one rule: the
header walk's boundaries, and the event-level rule for the last transaction of a file still being written), never
inside a transaction or a partial event: what is not whole yet is left for a later micro-batch.

A file is *done* when it holds a ROTATE or STOP event after the offset, or a later file exists (a server writes one
file at a time: an earlier file without them is one a crash ended, and nothing more comes to it).  A done file is
read to the end of its last whole event; the last file, still growing, to the end of its last whole transaction.
An offset at the end of a done file is written as the start (position 4) of the next one.  The ranges between two
offsets depend on the offsets alone (done files do not change), so Spark re-running a micro-batch after a failure
reads the same rows: with Spark's checkpoint and an idempotent or transactional sink, each row lands exactly once.

Options (case-insensitive), besides the batch source's ``view`` and ``splitBytes``:

- ``maxBytesPerTrigger``: a micro-batch covers at most this many bytes of binlog (at least one transaction);
  ``trigger(availableNow=True)`` catches up to what exists when the query starts, in micro-batches of that size,
  then stops.
- A folder: ``load(PATH)`` (a folder, a glob or a URI, as in batch).  The stream starts at the oldest file.
- A server: ``host``, ``port``, ``user``, ``serverId`` (required, unique among the server's replicas),
  ``passwordFile`` (else ``$BINLAKE_PASSWORD``: never the password itself, so it is in no plan), ``sslMode``,
  ``sslCa``, ``sslCert``, ``sslKey``, ``heartbeat``, ``timeout``, ``retries``; ``mirror``: a directory the binlogs
  are copied into (:class:`~binlake.replication.mirror.Mirror`, byte for byte, CRC32 checked, resumable); on a
  cluster a directory every executor reads at the same path.  ``startingPosition``: ``earliest`` (the oldest binlog
  the server has) or ``latest`` (its current end, the default).

Why a server is read through a mirror, not by partitions with replication connections of their own: a micro-batch
must be readable again after a failure, with the same rows, which a socket does not give (the server may have
purged the binlog since) and a file does; the driver knows the transaction boundaries of the next range only from
the bytes (the mirror's header walk), not from ``SHOW BINARY LOGS``' sizes; one replication connection (one server
id) per query instead of one per partition and trigger (two with one id cut each other off); and the folder
source, the batch source and ``binlake events``/``dump`` read the same copy.  Each ``latestOffset`` first brings the
mirror up to the server's current end (a non-blocking dump), then plans over the mirror as over a folder.

Example::

    q = (spark.readStream.format("binlake").option("view", "changes").option("maxBytesPerTrigger", 64 << 20)
         .load("/var/lib/mysql-binlogs/")
         .writeStream.format("parquet").option("checkpointLocation", "ckpt/").start("out/"))
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxBytes, SupportsTriggerAvailableNow

from binlake.binlogs import BinlogFile
from binlake.errors import BinlogError
from binlake.events.base import EventType
from binlake.events.gtid import GtidEvent, GtidListEvent, MariaGtidEvent, PreviousGtidsEvent
from binlake.lake.records import Split
from binlake.reader import HeaderTable, header_table, read_events
from binlake.transactions import FILE_END_EVENTS, GTID_EVENTS, Transactions, last_boundary, next_boundary

if TYPE_CHECKING:
    from binlake.replication.options import ConnectionOptions, ConnectionRequest

__all__ = [
    "STREAM_OFFSET_VERSION",
    "BinlakeStreamReader",
    "LiveSource",
    "StreamOffset",
    "advance",
    "available_end",
    "stream_splits",
]

STREAM_OFFSET_VERSION = 1
_FIELDS = ("version", "file", "pos", "gtid")
ReadSplit = Callable[[Split, str], Iterator[pa.RecordBatch]]
"""The rows of one view of one split: the batch source's :func:`~binlake.spark.datasource.read_split`, which the
data source hands over (this module does not import the data source that registers it)."""
_GTID_STATE_EVENTS = GTID_EVENTS | {EventType.GTID_LIST_EVENT, EventType.PREVIOUS_GTIDS_LOG_EVENT}


@dataclass(frozen=True, slots=True)
class StreamOffset:
    """Where a micro-batch ends and the next begins: ``file`` at ``pos``, the end of a whole transaction (``file``
    ``None``: before the first binlog, a folder still empty); ``gtid``: the GTID state there, where known."""

    file: str | None
    pos: int = 4
    gtid: str | None = None
    version: int = STREAM_OFFSET_VERSION

    def __post_init__(self) -> None:
        if self.version != STREAM_OFFSET_VERSION:
            raise BinlogError(f"stream offset version {self.version!r}: this binlake reads {STREAM_OFFSET_VERSION}")
        if self.file is not None and (not isinstance(self.file, str) or not self.file or "/" in self.file):
            raise BinlogError(f"not a binlog file name in a stream offset: {self.file!r}")
        if isinstance(self.pos, bool) or not isinstance(self.pos, int) or self.pos < 4:
            raise BinlogError(f"a stream offset's position is an integer of at least 4, not {self.pos!r}")
        if self.gtid is not None and not isinstance(self.gtid, str):
            raise BinlogError(f"a stream offset's GTID state is text, not {self.gtid!r}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object Spark stores (every field, ``version`` first)."""
        return {"version": self.version, "file": self.file, "pos": self.pos, "gtid": self.gtid}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamOffset:
        """Read :meth:`to_dict`'s output; anything else raises :class:`~binlake.errors.BinlogError`."""
        if not isinstance(data, Mapping) or set(data) != set(_FIELDS):
            raise BinlogError(f"a binlake stream offset has exactly the fields {list(_FIELDS)}, not {data!r}")
        return cls(data["file"], data["pos"], data["gtid"], data["version"])


# -- planning over files: where the whole transactions end ------------------------------------------------------


def _position(table: HeaderTable, k: int) -> int:
    """The position of boundary index ``k`` of a header walk (``len(table)``: the walk's end)."""
    return table.positions[k] if k < len(table) else table.end


def _whole_end(file: BinlogFile, base: int, stop: int) -> int:
    """The end of the last whole transaction of ``file`` in ``[base, stop)`` (``base``: a boundary), by the
    event-level rule (:class:`~binlake.transactions.Transactions`): a DDL statement or a standalone group at the end
    of a growing file, which a header walk cannot tell complete, is whole once its statement is there."""
    if stop <= base:
        return base
    trx = Transactions()
    for ev in read_events(file.source, start=base, stop=stop):
        trx.event(ev)
    return trx.resume if trx.resume is not None and trx.resume > base else base


def _reach(file: BinlogFile, pos: int, *, later: bool, budget: int | None) -> tuple[int, bool]:
    """From ``pos`` (a boundary) in ``file``: where the range to read ends, and whether that is the file's end for
    good (it is done: module docstring).  ``later``: a later file exists.  ``budget``: the most bytes to take
    (at least one transaction when there is one)."""
    table = header_table(file.source, pos)
    done = later or any(table.codes.find(c) >= 0 for c in FILE_END_EVENTS)
    if done:
        end = table.end  # every whole event: what the batch source reads of a finished file
    else:
        k = last_boundary(table.codes)
        end = _whole_end(file, pos if k is None else _position(table, k), table.end)
    if budget is None or end - pos <= budget:
        return end, done
    limit = pos + budget
    j = bisect_right(table.positions, limit)  # the events that start at or before the limit
    cut = None
    for head in (j, j - 1):
        k = last_boundary(table.codes[:head]) if head > 0 else None
        if k is not None and pos < _position(table, k) <= limit:
            cut = _position(table, k)
            break
    if cut is None:  # the first transaction is larger than the budget: take it whole
        k = next_boundary(table.codes, 1)
        cut = end if k is None else min(_position(table, k), end)
    return cut, cut >= end and done


def _index(files: Sequence[BinlogFile], offset: StreamOffset) -> int:
    """The index of the offset's file in ``files`` (0 for an offset before the first file)."""
    if offset.file is None:
        return 0
    for i, f in enumerate(files):
        if f.name == offset.file:
            return i
    raise BinlogError(
        f"the stream's offset is in {offset.file}, which is no longer among the binlogs ({_names(files)}):"
        " removed or purged; start the query afresh (a new checkpoint) to go on from what is there",
        file=offset.file,
        pos=offset.pos,
    )


def _names(files: Sequence[BinlogFile]) -> str:
    return f"{files[0].name} .. {files[-1].name}" if files else "none"


def advance(
    files: Sequence[BinlogFile],
    start: StreamOffset,
    *,
    max_bytes: int | None = None,
    target: StreamOffset | None = None,
) -> StreamOffset:
    """The end of the next micro-batch from ``start``: every whole transaction there is, at most ``max_bytes`` of
    them (at least one), not beyond ``target`` (an offset of :func:`available_end`: Trigger.AvailableNow).  Returns
    ``start`` itself when there is nothing new (its GTID state is left for the caller to carry)."""
    if not files or (target is not None and target.file is None):
        return start
    i = _index(files, start)
    if target is not None and _index(files, target) < i:
        return start
    pos = start.pos if start.file is not None else 4
    budget = max_bytes
    while True:
        f = files[i]
        stop_at = target.pos if target is not None and target.file == f.name else None
        if stop_at is not None and pos >= stop_at:
            return StreamOffset(f.name, pos)
        end, done = _reach(f, pos, later=i + 1 < len(files), budget=budget)
        if stop_at is not None and end >= stop_at:
            return StreamOffset(f.name, stop_at)
        if budget is not None:
            budget -= end - pos
        if not done or i + 1 == len(files):
            return StreamOffset(f.name, end)
        i, pos = i + 1, 4  # the end of a done file is the start of the next
        if budget is not None and budget <= 0:
            return StreamOffset(files[i].name, 4)


def available_end(files: Sequence[BinlogFile], start: StreamOffset) -> StreamOffset:
    """The offset of everything whole that exists now, from ``start`` on (the last file's last whole transaction)."""
    if not files:
        return start
    first = _index(files, start)
    last = len(files) - 1
    pos = start.pos if first == last and start.file is not None else 4
    end, _done = _reach(files[last], pos, later=False, budget=None)
    return StreamOffset(files[last].name, end)


def stream_splits(
    files: Sequence[BinlogFile], start: StreamOffset, end: StreamOffset, *, split_bytes: int
) -> list[Split]:
    """The byte ranges from ``start`` to ``end`` (two offsets of :func:`advance`), cut at transaction boundaries
    into splits of about ``split_bytes``, numbered."""
    if end.file is None or (start.file, start.pos) == (end.file, end.pos):
        return []
    from binlake.ingest.plan import plan_file

    first, last = _index(files, start), _index(files, end)
    out: list[Split] = []
    for i in range(first, last + 1):
        f = files[i]
        a = start.pos if i == first and start.file is not None else 4
        b = end.pos if i == last else _reach(f, a, later=True, budget=None)[0]
        if b <= a:
            continue
        for s in plan_file(f, a, split_bytes=split_bytes, whole_tail=True):
            if s.start < b:
                out.append(Split(f, s.start, min(s.end, b)))
    return [Split(s.file, s.start, s.stop, i) for i, s in enumerate(out)]


def gtid_after(splits: Iterable[Split], state: str | None) -> str | None:
    """The GTID state after reading ``splits`` from a point whose state is ``state``: each GTID event's group added,
    a file's GTID_LIST / PREVIOUS_GTIDS taken while no state is known (:meth:`GtidTracker.observe
    <binlake.replication.gtid.GtidTracker.observe>`: the client's rule)."""
    from binlake.replication.gtid import GtidTracker

    tracker: GtidTracker | None = None
    for split in splits:
        table = header_table(split.file.source, split.start, split.stop)
        if not any(table.codes.find(c) >= 0 for c in _GTID_STATE_EVENTS):
            continue
        for ev in read_events(split.file.source, start=split.start, stop=split.stop):
            if tracker is None:
                if not isinstance(ev, MariaGtidEvent | GtidListEvent | GtidEvent | PreviousGtidsEvent):
                    continue
                tracker = GtidTracker("mariadb" if isinstance(ev, MariaGtidEvent | GtidListEvent) else "mysql")
                if state is not None:
                    tracker.set_baseline(state)
            tracker.observe(ev)
    return state if tracker is None else tracker.state


# -- a server, through a mirror ----------------------------------------------------------------------------------


def _ssl_mode(text: str) -> str:
    from binlake.replication.options import SSL_MODES

    if text.lower() not in SSL_MODES:
        raise ValueError(f"invalid choice: {text!r} (choose from {', '.join(m.upper() for m in SSL_MODES)})")
    return text


# Spark option (lowercased, as Spark hands options over) -> the field of ConnectionRequest, its type, and the flag of
# the command line it stands for (errors name the flag, as binlake's other commands do)
_CONNECTION_FIELDS: dict[str, tuple[str, Callable[[str], object], str]] = {
    "host": ("host", str, "--host"),
    "port": ("port", int, "--port"),
    "user": ("user", str, "--user"),
    "serverid": ("server_id", int, "--server-id"),
    "passwordfile": ("password_file", Path, "--password-file"),
    "sslmode": ("ssl_mode", _ssl_mode, "--ssl-mode"),
    "sslca": ("ssl_ca", Path, "--ssl-ca"),
    "sslcert": ("ssl_cert", Path, "--ssl-cert"),
    "sslkey": ("ssl_key", Path, "--ssl-key"),
    "heartbeat": ("heartbeat", float, "--heartbeat"),
    "timeout": ("timeout", float, "--timeout"),
    "retries": ("retries", int, "--retries"),
}
_REQUIRED = ("host", "user", "serverid")
STARTS = ("earliest", "latest")


def _connection_request(options: Mapping[str, str]) -> ConnectionRequest:
    """The connection a server source's Spark options ask for; a :class:`BinlogError` naming the option (by the
    flag it stands for) that is missing or not of its type."""
    from binlake.replication.options import ConnectionRequest

    missing = [_CONNECTION_FIELDS[k][2].removeprefix("--") for k in _REQUIRED if k not in options]
    if missing:
        raise BinlogError(f"binlake: the following arguments are required: {', '.join(missing)}")
    fields: dict[str, object] = {}
    for key, (name, kind, flag) in _CONNECTION_FIELDS.items():
        if key in options:
            try:
                fields[name] = kind(options[key])
            except ValueError as e:
                why = e if kind is _ssl_mode else f"invalid {getattr(kind, '__name__', '')} value: {options[key]!r}"
                raise BinlogError(f"binlake: argument {flag.removeprefix('--')}: {why}") from None
    return ConnectionRequest(**fields)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class LiveSource:
    """A server read through a mirror directory (module docstring).  Holds the connection asked for, never the
    password: :meth:`options` reads it (``passwordFile``, else ``$BINLAKE_PASSWORD``) each time it connects, in the
    process that connects, so nothing Spark pickles, plans or logs carries it."""

    request: ConnectionRequest
    mirror: str
    starting: str = "latest"

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> LiveSource:
        if "password" in options:
            raise BinlogError(
                "binlake: no password option (Spark shows options in its plans): use passwordFile or $BINLAKE_PASSWORD"
            )
        mirror = options.get("mirror", "")
        if not mirror:
            raise BinlogError("binlake: a server is streamed through a mirror: give option mirror=DIR")
        starting = options.get("startingposition", "latest").lower()
        if starting not in STARTS:
            raise BinlogError(f"binlake: startingPosition is one of {', '.join(STARTS)}, not {starting!r}")
        # bad options fail when the query starts, not at its first trigger
        return cls(_connection_request(options), mirror, starting)

    def options(self) -> ConnectionOptions:
        """The :class:`~binlake.replication.options.ConnectionOptions`, with the password read now."""
        return self.request.options(follow=False)

    def files(self) -> list[BinlogFile]:
        """The mirror's binlog files (what has been copied so far), in binlog order."""
        from binlake.binlogs import list_binlogs

        return list_binlogs(self.mirror) if os.path.isdir(self.mirror) else []

    def catch_up(self) -> None:
        """Copy what the server has written since the last call into the mirror (a non-blocking dump).  An empty
        mirror starts where ``startingPosition`` says: at the server's oldest binlog, or at the start of the one
        it writes now."""
        from binlake.replication.mirror import Mirror
        from binlake.replication.position import StartAt

        start = None
        if not self.files():
            start = StartAt.oldest() if self.starting == "earliest" else StartAt.at(self.status()[0])
        Mirror(Path(self.mirror), self.options(), start=start, follow=False).run()

    def status(self) -> tuple[str, int, str | None]:
        """The server's current end: file, position and GTID state there (MySQL's executed set, MariaDB's
        ``BINLOG_GTID_POS``)."""
        from binlake.replication.connection import ReplicationConnection

        with ReplicationConnection(self.options()) as conn:
            conn.open()
            file, pos, gtid = conn.binlog_status()
            return file, pos, gtid if gtid is not None else conn.binlog_gtid_pos(file, pos)

    def initial(self) -> StreamOffset:
        """Where a new query starts (``startingPosition``): ``latest``, the server's current end; ``earliest``, the
        mirror's first file (for an empty mirror, the server's oldest binlog, copied first)."""
        if self.starting == "latest":
            file, pos, gtid = self.status()
            self.catch_up()
            return StreamOffset(file, pos, gtid)
        if not self.files():
            self.catch_up()
        have = self.files()
        return StreamOffset(have[0].name if have else None)


# -- the Spark stream reader ---------------------------------------------------------------------------------------


class StreamPartition(InputPartition):
    """One byte range of a micro-batch (pickled to the executor)."""

    def __init__(self, split: Split) -> None:
        super().__init__(split.index)
        self.split = split


class BinlakeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader of ``spark.readStream.format("binlake")`` (module docstring).  Spark pickles it into the
    plan of each micro-batch's read: it holds options only (no connection, no password)."""

    def __init__(
        self,
        view: str,
        *,
        path: str | None,
        live: LiveSource | None,
        split_bytes: int,
        max_bytes: int | None,
        read: ReadSplit,
    ) -> None:
        if (path is None) == (live is None):
            raise BinlogError("binlake: stream a folder (load(PATH)) or a server (option host), not both")
        if max_bytes is not None and max_bytes <= 0:
            raise BinlogError(f"binlake: maxBytesPerTrigger must be positive, not {max_bytes}")
        self.view = view
        self.path = path
        self.live = live
        self.split_bytes = split_bytes
        self.max_bytes = max_bytes
        self.read_split = read
        self._target: StreamOffset | None = None  # Trigger.AvailableNow: where the catch-up ends

    def _files(self, *, refresh: bool) -> list[BinlogFile]:
        if self.live is not None:
            if refresh:
                self.live.catch_up()
            return self.live.files()
        from binlake.binlogs import list_binlogs

        assert self.path is not None
        return list_binlogs(self.path)

    def initialOffset(self) -> dict[str, Any]:
        if self.live is not None:
            return self.live.initial().to_dict()
        files = self._files(refresh=False)
        return StreamOffset(files[0].name if files else None).to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxBytes(self.max_bytes) if self.max_bytes is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        files = self._files(refresh=True)
        first = StreamOffset(files[0].name if files else None)
        self._target = available_end(files, first)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = StreamOffset.from_dict(start)
        files = self._files(refresh=self._target is None)
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        end = advance(files, begin, max_bytes=max_bytes, target=self._target)
        if (end.file, end.pos) == (begin.file, begin.pos):
            return start
        gtid = None
        if self.live is not None:
            gtid = gtid_after(stream_splits(files, begin, end, split_bytes=1 << 62), begin.gtid)
        return StreamOffset(end.file, end.pos, gtid).to_dict()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, finish = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        files = self._files(refresh=False)
        return [StreamPartition(s) for s in stream_splits(files, begin, finish, split_bytes=self.split_bytes)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StreamPartition)
        yield from self.read_split(partition.split, self.view)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the files stay (a mirror is a backup; purge it with the server's own tools)."""


def stream_reader(options: Mapping[str, str], view: str, split_bytes: int, read: ReadSplit) -> BinlakeStreamReader:
    """The stream reader for the data source's (lowercased) ``options``: a server when ``host`` is given, else the
    folder ``path``; ``read``: the batch source's rows of a split (:func:`binlake.spark.datasource.read_split`)."""
    text = options.get("maxbytespertrigger")
    if text is not None and not text.isdigit():
        raise BinlogError(f"binlake: maxBytesPerTrigger is a number of bytes, not {text!r}")
    max_bytes = int(text) if text else None
    if "host" in options:
        if options.get("path"):
            raise BinlogError("binlake: stream a folder (load(PATH)) or a server (option host), not both")
        live = LiveSource.from_options(options)
        return BinlakeStreamReader(view, path=None, live=live, split_bytes=split_bytes, max_bytes=max_bytes, read=read)
    path = options.get("path", "")
    if not path:
        raise BinlogError('binlake: give a folder (spark.readStream.format("binlake").load(PATH)) or option host')
    return BinlakeStreamReader(view, path=path, live=None, split_bytes=split_bytes, max_bytes=max_bytes, read=read)
