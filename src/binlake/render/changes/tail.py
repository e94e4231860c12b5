"""``binlake tail``: a running server's changes as they happen, resumable, exactly once into a file it owns (the
command line: :mod:`binlake.cli.tail`; the run: :func:`tail` with :class:`TailOptions`).

``binlake tail --host H --user U --server-id N [--from FILE[:POS] | --gtid SET | --from-start] [--no-follow]
[--format text|debezium] [--state FILE] [--output FILE] [filters]`` is the live face of the change stream that
``binlake changes`` reads: the replication client (:class:`~binlake.replication.client.ReplicationClient`, which
reconnects with capped exponential backoff) feeds :class:`~binlake.changes.ServerSource`, and
:class:`~binlake.changes.ChangeStream` hands on whole transactions, each with the resume point right after it.  Each
transaction is written in one of two formats, by the printers the file commands use:

* ``text`` (default): what ``binlake dump`` prints for the transaction's events (and the events between
  transactions before it), from the same :class:`~binlake.render.dump.TextPrinter`;
* ``debezium``: what ``binlake changes --format debezium`` prints, one JSON line per row change
  (:class:`~binlake.render.changes.debezium.DebeziumEncoder`).

It starts at the server's current end (``--from-start``: its oldest binlog; ``--from``/``--gtid``: there) and goes
on as the server writes; ``--no-follow`` stops at the server's current end.

``--state FILE`` keeps a :class:`TailState` (the :class:`~binlake.replication.position.ResumePoint` after the last
transaction delivered, how to resume by it, the format, the output's length), replaced atomically (a temporary
file, fsync, rename, fsync of the folder) after each transaction is delivered.  A tail started with an existing
state goes on from it (the start options then say nothing: they tell where a tail without a state begins): by GTID
when the first tail started by ``--gtid``, else by file and position.  Delivery:

* ``--output FILE``: the transaction's text is written and fsynced before the state records the file's new length;
  a restarted tail first cuts FILE back to that length.  FILE holds every transaction exactly once after any number
  of kills;
* standard output: written and flushed before the state is; a kill between the two repeats that one transaction on
  the next start (at least once).

Example::

    $ BINLAKE_PASSWORD=... binlake tail --host db1 --user repl --server-id 4242 --format debezium \\
          --state tail.state --output changes.jsonl
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from binlake.changes.filters import ChangeFilter
from binlake.changes.records import Transaction
from binlake.changes.sources import EventSource, Located, ServerSource
from binlake.changes.stream import ChangeStream
from binlake.errors import BinlogError, ExitStatus, Interrupted, ReplicationError
from binlake.events.base import Event
from binlake.events.context import DecodeOptions
from binlake.replication.position import Flavor, ResumePoint, StartAt, load_json, record_fields

if TYPE_CHECKING:
    from binlake.metrics import MetricsRun
    from binlake.render.changes.debezium import DebeziumOptions
    from binlake.render.dump.output import Session
    from binlake.replication.options import ConnectionOptions

__all__ = [
    "TAIL_STATE_VERSION",
    "TailOptions",
    "TailState",
    "load_state",
    "resumed_state",
    "save_state",
    "tail",
]

TAIL_STATE_VERSION = 1
Format = Literal["text", "debezium"]
By = Literal["position", "gtid"]
_FIELDS = {"version", "format", "by", "output_offset", "resume"}
_OPTIONAL_FIELDS = {"debezium", "session"}

log = logging.getLogger("binlake.tail")


@dataclass(frozen=True, slots=True)
class TailState:
    """What a restarted tail needs: ``resume``, the point after the last transaction delivered; ``by``, how to
    resume at it (``gtid`` for a tail started by ``--gtid``, else ``position``); ``format``, what the output holds;
    ``output_offset``, the length of ``--output``'s file holding exactly the transactions up to ``resume``
    (``None``: the output is standard output); ``debezium``, how a ``debezium`` tail writes values (its
    ``--debezium-option`` settings, :meth:`~binlake.render.changes.debezium.ValueModes.text`; a state written
    before they were kept has none: its tail wrote :data:`~binlake.render.changes.debezium.LEGACY_MODES`).  No
    connection detail is kept (no host, user or password)."""

    resume: ResumePoint
    by: By
    format: Format
    output_offset: int | None
    version: int = TAIL_STATE_VERSION
    debezium: str | None = None
    session: Session | None = None

    def __post_init__(self) -> None:
        if self.version != TAIL_STATE_VERSION:
            raise ReplicationError(f"tail state version {self.version!r}: this binlake reads {TAIL_STATE_VERSION}")
        if self.by not in ("position", "gtid"):
            raise ReplicationError(f"tail state: resume by {self.by!r}, not position or gtid")
        if self.format not in ("text", "debezium"):
            raise ReplicationError(f"tail state: unknown format {self.format!r}")
        off = self.output_offset
        if off is not None and (isinstance(off, bool) or not isinstance(off, int) or off < 0):
            raise ReplicationError(f"tail state: an output offset is a byte count, not {off!r}")
        if self.debezium is not None and not isinstance(self.debezium, str):
            raise ReplicationError(f"tail state: the Debezium settings are KEY=VALUE text, not {self.debezium!r}")

    def to_json(self) -> str:
        record: dict[str, object] = {
            "version": self.version,
            "format": self.format,
            "by": self.by,
            "output_offset": self.output_offset,
            "resume": self.resume.to_dict(),
        }
        if self.debezium is not None:
            record["debezium"] = self.debezium
        if self.session is not None:
            record["session"] = self.session.to_dict()
        return json.dumps(record, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> TailState:
        """Read :meth:`to_json`'s output; anything else raises :class:`~binlake.errors.ReplicationError`."""
        raw = load_json(text, "tail state")
        fields = set(_FIELDS)
        if isinstance(raw, dict):  # (optional: states written before each was kept have none)
            fields |= _OPTIONAL_FIELDS & set(raw)
        data = record_fields(raw, fields, "tail state")
        resume = ResumePoint.from_dict(data["resume"])
        from binlake.render.dump.output import Session

        try:
            session = Session.from_dict(data["session"]) if "session" in data else None
        except ValueError as e:
            raise ReplicationError(f"tail state: {e}") from None
        return cls(resume, data["by"], data["format"], data["output_offset"], data["version"], data.get("debezium"),
                   session)  # fmt: skip


def load_state(path: Path) -> TailState | None:
    """The state in ``path``; ``None`` when there is no such file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ReplicationError(f"cannot read the tail state {path}: {e.strerror or e}") from None
    try:
        return TailState.from_json(data)
    except ReplicationError as e:
        raise ReplicationError(f"{path}: {e}") from None


def save_state(path: Path, state: TailState) -> None:
    """Replace ``path`` by ``state`` atomically and durably: a reader (or a restart after a crash) sees the old state
    or the new one, whole."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, state.to_json().encode() + b"\n")
        os.fsync(fd)
    except OSError as e:  # (a full disk: the error names the state, the old one still whole)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OSError(e.errno, e.strerror, str(path)) from None
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder if str(folder) else ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- the output ------------------------------------------------------------------------------------------------


class _Output:
    """Where transactions go: standard output (flushed per transaction) or a file binlake owns (written and
    fsynced per transaction, cut back to ``offset`` on a restart).  :attr:`offset` counts the bytes delivered."""

    def __init__(self, path: Path | None, offset: int | None) -> None:
        self.path = path
        self.offset = 0
        self._file: IO[bytes]
        if path is None:
            self._file = sys.stdout.buffer
            return
        if offset is None:  # a fresh tail: the file is ours from its first byte
            self._file = path.open("wb")
            return
        try:
            self._file = path.open("r+b")
        except FileNotFoundError:
            if offset:
                raise ReplicationError(f"{path} is gone, but the tail state says it held {offset} bytes") from None
            self._file = path.open("wb")
        size = os.fstat(self._file.fileno()).st_size
        if size < offset:
            self._file.close()
            raise ReplicationError(f"{path} holds {size} bytes, but the tail state says it held {offset}")
        if size > offset:
            log.info("%s: cut back from %d to %d bytes, the end of the last transaction delivered", path, size, offset)
            self._file.truncate(offset)
            os.fsync(self._file.fileno())
        self._file.seek(offset)
        self.offset = offset

    def deliver(self, data: bytes) -> None:
        """Write ``data`` and make it durable (a file) or visible (standard output) before the state records it."""
        try:
            if data:
                self._file.write(data)
                self.offset += len(data)
            self._file.flush()
            if self.path is not None and data:
                os.fsync(self._file.fileno())
        except OSError as e:  # (a full disk: the error names the output)
            raise OSError(e.errno, e.strerror, str(self.path or "standard output")) from None

    def close(self) -> None:
        """Close the file (standard output stays open).  Every delivery flushed its bytes: what is left in the buffer
        is a failed delivery's (a full disk), which the state does not count, so failing to write it again is not
        a second error."""
        with contextlib.suppress(OSError):
            self._file.flush()
        if self.path is not None:
            with contextlib.suppress(OSError):
                self._file.close()


# -- the formats ---------------------------------------------------------------------------------------------


class _Kept:
    """An event source that keeps the events it gave since :meth:`take` (the text format prints them)."""

    def __init__(self, source: EventSource) -> None:
        self.source = source
        self.schema = source.schema
        self.definitions = source.definitions
        self.events: list[Event] = []

    @property
    def flavor(self) -> Flavor | None:
        return self.source.flavor

    def resume_point(self) -> ResumePoint | None:
        return self.source.resume_point()

    def __iter__(self) -> Iterator[Located]:
        for loc in self.source:
            self.events.append(loc.event)
            yield loc

    def take(self) -> list[Event]:
        events, self.events = self.events, []
        return events


class _Text:
    """``binlake dump``'s text: every event the server's files hold, in order, each transaction's once it is whole.

    The events between transactions are printed with the transaction after them (or at the end, without
    ``--follow``); a transaction the stream leaves out for being read in part (a ``--from`` position inside it) is
    printed as ``binlake dump --start-position`` prints it."""

    def __init__(self, source: _Kept, change_filter: ChangeFilter, session: Session | None = None) -> None:
        from binlake.render.dump import DumpOptions, TextPrinter

        self.source = source
        self._chunks: list[str] = []
        options = DumpOptions(filter=change_filter, table_metadata=True)
        self.printer = TextPrinter(self._chunks.append, options)
        if session is not None:  # a resumed tail: the SET statements repeat only where the session changes
            self.printer.out.session = session

    def session(self) -> Session:
        """What the text printed last (the database, the SET statements' values): kept in the state with the
        resume point, so that a resumed tail prints what a tail that never stopped would have."""
        return self.printer.out.session

    def _drain(self) -> bytes:
        self.printer.flush()
        text = "".join(self._chunks)
        self._chunks.clear()
        return text.encode("utf-8", "surrogateescape")

    def begin(self) -> bytes:
        self.printer.begin()
        return self._drain()

    def transaction(self, trx: Transaction) -> bytes:
        for ev in self.source.take():
            self.printer.feed(ev)
        return self._drain()

    def row_counts(self) -> Counter[str]:
        """Row changes printed so far, per operation."""
        return self.printer.row_counts

    def finish(self) -> bytes:
        for ev in self.source.take():
            self.printer.feed(ev)
        self.printer.finish()
        return self._drain()


class _Debezium:
    """``binlake changes --format debezium``'s JSON lines."""

    def __init__(self, options: DebeziumOptions) -> None:
        from binlake.render.changes.debezium import DebeziumEncoder

        self.encoder = DebeziumEncoder(options)

    def begin(self) -> bytes:
        return b""

    def transaction(self, trx: Transaction) -> bytes:
        return self.encoder.encode(trx)

    def row_counts(self) -> Counter[str]:
        """Row changes written so far, per operation."""
        return self.encoder.counts

    def finish(self) -> bytes:
        return b""


# -- the run ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TailOptions:
    """What ``binlake tail`` does besides its connection: ``start`` and ``by``, where a tail without a state starts
    and how a restart resumes it (``gtid`` for a start after a GTID state); ``follow``: go on as the server writes
    (else stop at its current end); ``format`` (``debezium`` writes with ``debezium``'s options); ``state`` and
    ``output``: the files of the module docstring (``None``: no state, standard output); the changes ``filter``
    keeps, and how events are decoded."""

    start: StartAt
    by: By = "position"
    follow: bool = True
    format: Format = "text"
    state: Path | None = None
    output: Path | None = None
    filter: ChangeFilter = field(default_factory=ChangeFilter)
    debezium: DebeziumOptions | None = None
    decode: DecodeOptions = field(default_factory=DecodeOptions)

    @property
    def debezium_settings(self) -> str | None:
        """What the state keeps of how a ``debezium`` tail writes values (``None`` for ``text``)."""
        if self.format != "debezium":
            return None
        return (self.debezium or _default_debezium()).modes.text()


def _default_debezium() -> DebeziumOptions:
    from binlake.render.changes.debezium import DebeziumOptions

    return DebeziumOptions()


def resumed_state(options: TailOptions) -> TailState | None:
    """The state ``options.state`` holds (``None``: no state file, or none yet), checked against ``options``: a
    state belongs to one format, one way of writing values and one kind of output, and a tail does not go on in
    another (the output would mix two encodings)."""
    from binlake.render.changes.debezium import LEGACY_MODES

    if options.state is None:
        return None
    state = load_state(options.state)
    if state is None:
        return None
    if state.format != options.format:
        raise ReplicationError(f"{options.state} is the state of a --format {state.format} tail, not {options.format}")
    if (state.output_offset is None) != (options.output is None):
        wrote = "standard output" if state.output_offset is None else "an --output file"
        raise ReplicationError(f"{options.state} is the state of a tail that wrote to {wrote}")
    kept = (state.debezium or LEGACY_MODES.text()) if state.format == "debezium" else None
    if kept != options.debezium_settings:
        raise ReplicationError(
            f"{options.state} is the state of a tail that wrote {kept}: give --debezium-option {kept} to go on"
        )
    return state


def tail(options: TailOptions, state: TailState | None, connection: ConnectionOptions, watch: MetricsRun) -> int:
    """Run a tail from ``state`` (:func:`resumed_state`) or, without one, from ``options.start``; ``watch`` is
    closed at the end.  0 at the server's end (without ``follow``), else the status of the error, its line said
    (:class:`~binlake.errors.ExitStatus`); Ctrl-C is :class:`~binlake.errors.Interrupted`, saying where the next
    run goes on."""
    from binlake.replication.client import ReplicationClient
    from binlake.replication.connection import BinlogSizes
    from binlake.replication.definitions import ServerDefinitions

    start, by = (
        (StartAt.resume(state.resume, by=state.by), state.by) if state is not None else (options.start, options.by)
    )
    try:
        out = _Output(options.output, state.output_offset if state is not None else None)
    except (BinlogError, OSError) as e:
        watch.close()
        why = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.filename else e
        print(f"binlake tail: {why}", file=sys.stderr)
        return ExitStatus.ERROR
    debezium = options.debezium_settings

    def save(point: ResumePoint) -> None:
        if options.state is not None:
            offset = out.offset if options.output is not None else None
            session = fmt.session() if isinstance(fmt, _Text) else None
            save_state(options.state, TailState(point, by, options.format, offset, debezium=debezium, session=session))

    sizes = BinlogSizes(connection)
    watch.poll_server(sizes, sizes.close)
    metrics = watch.metrics
    client = ReplicationClient(connection, start, follow=options.follow, decode_options=options.decode, metrics=metrics)
    # a fresh state is written where the stream begins, before any transaction: a restart goes on from there
    definitions = ServerDefinitions(connection, lambda line: print(f"binlake tail: {line}", file=sys.stderr))
    source: EventSource = ServerSource(client, on_start=save if state is None else None, definitions=definitions)
    fmt: _Text | _Debezium
    if options.format == "text":
        kept = _Kept(source)
        source, fmt = kept, _Text(kept, options.filter, state.session if state is not None else None)
    else:
        fmt = _Debezium(options.debezium or _default_debezium())
    stream = ChangeStream(source, options.filter)
    status = 0
    counted: Counter[str] = Counter()  # the row changes the metrics were told of
    try:
        if out.offset == 0:
            out.deliver(fmt.begin())
        for trx in stream:
            out.deliver(fmt.transaction(trx))
            assert trx.resume is not None  # a server source knows where it is after an event
            save(trx.resume)
            if metrics.enabled:
                rows = fmt.row_counts()
                metrics.committed((trx.resume.file, trx.resume.position), rows=rows - counted)
                counted = rows.copy()
        out.deliver(fmt.finish())  # not in the state: a restart cuts it off and goes on after the last transaction
    except KeyboardInterrupt:
        if options.state is None:
            raise Interrupted("no --state: a next run starts where its options say") from None
        raise Interrupted(
            f"the next run with --state {options.state} goes on after the last transaction saved"
        ) from None
    except BinlogError as e:
        print(f"binlake tail: {e}", file=sys.stderr)
        status = e.exit_status
    except OSError as e:  # the output or the state cannot be written (a full disk): the state is still whole
        print(f"binlake tail: {e.filename or 'output'}: {e.strerror or e}", file=sys.stderr)
        status = ExitStatus.ERROR
    finally:
        client.close()
        out.close()
        watch.close()
        if stream.dropped:
            print(
                f"binlake tail: {stream.dropped} transaction(s) left out: not whole in what was read "
                "(a --from position inside a transaction)",
                file=sys.stderr,
            )
    return status
