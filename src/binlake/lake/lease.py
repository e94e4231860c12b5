"""One writer at a time: the lease a ``binlake ingest`` holds on a lake while it writes, on local disks and object
stores alike.

The lease is a small Delta table, ``LAKE/_binlake/lease``, whose every commit is a :class:`LeaseRecord` (in the
commit's metadata): who holds the lake and until when.  Taking, renewing and handing back the lease are each a
commit of the *next* version with no retry, so they are conditional: delta-rs writes a commit file only if it is
absent (``If-None-Match: *`` on S3, the stores' equivalents elsewhere, a no-replace rename on local disks), and of
two writers reading version ``v`` and committing ``v + 1`` exactly one succeeds.  The version a holder committed
is its *epoch*.

* An ingest takes the lease when it is free: no record yet, handed back, expired (its holder stopped renewing it:
  killed, hung, cut off), or held by a process of this machine that no longer exists (``kill -9``; checked only
  where the record's process namespace is this one's).  Otherwise it waits up to ``wait`` seconds, then stops with
  :class:`LakeBusy` naming the holder.
* While held, a thread renews it every third of its duration (a commit of epoch + 1).  A renewal that finds another
  record there means the lease was taken over: it is lost.
* :meth:`WriterLease.check`, called before every commit to the lake, is the fence: it raises :class:`LeaseLost`
  when the lease was lost, or when its expiry is nearer than a quarter of its duration (the renewals failing), so a
  holder whose lease expired never commits after another ingest could have taken over.  Expiry is wall-clock time:
  the machines' clocks must agree to better than that quarter (NTP does).  Should a commit still race a takeover,
  the tables' own commits stay exactly-once: two writers never both commit one batch (:mod:`binlake.lake.delta`).

Example::

    with WriterLease(locate("s3://bucket/lake"), seconds=60).acquire(wait=300) as lease:
        ...
        lease.check()            # before each commit
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, Schema
from deltalake.exceptions import DeltaError
from deltalake.transaction import CommitProperties, create_table_with_add_actions

from binlake.errors import BinlogError, ExitStatus
from binlake.lake.records import LakeFormatError
from binlake.storage import Location, StorageError, StoreUnreachable, store_error

__all__ = ["LakeBusy", "LeaseLost", "LeaseRecord", "WriterLease"]

_KEY = "binlake.lease"  # the commit metadata entry holding the record
_SCHEMA = pa.schema([("holder", pa.string())])  # the lease table holds no rows: its commits are the records
# old commits go at the checkpoints delta-rs writes every 100 commits: the log of a lease renewed for months stays
# small (a long-running ingest renews it every 20 s)
_CONFIG = {"delta.logRetentionDuration": "interval 1 hour"}
_RACES = 10  # lost races for the lease in a row, each followed by a pause, before a run gives up
_HELD: set[str] = set()  # the holders (LeaseRecord.holder) of the leases this process holds now


class LakeBusy(BinlogError):
    """Another ingest holds the lake's writer lease (and ``wait`` ran out): a later run goes on."""

    exit_status = ExitStatus.TEMPORARY


class LeaseLost(BinlogError):
    """This ingest's writer lease expired or was taken over: it must not commit anything more (a later run goes on
    where it stopped)."""

    exit_status = ExitStatus.TEMPORARY


def _process_space() -> str:
    """What makes a pid mean one process: this boot of this kernel and this pid namespace (``""`` where unknown,
    which turns the same-machine liveness check off)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """One commit of the lease table: ``holder`` (a random id per acquisition) on ``host`` as process ``pid`` (in
    ``process``: :func:`_process_space`) holds the lake from ``acquired`` until ``expires`` (seconds since the epoch,
    UTC; ``0``: handed back)."""

    VERSION = 1

    holder: str
    host: str
    pid: int
    process: str
    acquired: float
    expires: float

    def to_json(self) -> str:
        return json.dumps({"version": self.VERSION, "holder": self.holder, "host": self.host, "pid": self.pid,
                           "process": self.process, "acquired": self.acquired, "expires": self.expires})  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> LeaseRecord:
        v = json.loads(text)
        if v.get("version") != cls.VERSION:
            raise LakeFormatError(f"a writer lease of format version {v.get('version')!r}: written by another binlake")
        return cls(v["holder"], v["host"], int(v["pid"]), v["process"], float(v["acquired"]), float(v["expires"]))

    def free(self, now: float) -> bool:
        """Whether another writer may take the lease at ``now``: handed back, expired, or its process is gone."""
        return self.expires <= now or self._dead_here()

    def _dead_here(self) -> bool:
        if not self.process or self.host != socket.gethostname() or self.process != _process_space():
            return False
        if self.pid == os.getpid():  # this process: held only while one of its WriterLeases holds it (an ingest
            return self.holder not in _HELD  # that stopped where its release could not be written holds it no more)
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive, another user's
            return False
        return False

    def describe(self) -> str:
        until = datetime.fromtimestamp(self.expires, UTC).strftime("%H:%M:%S UTC")
        since = datetime.fromtimestamp(self.acquired, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"pid {self.pid} on {self.host}, writing since {since}, its lease renewed until {until}"


class WriterLease:
    """The writer lease of the lake at ``root`` (see the module docstring); ``seconds`` is how long a lease lasts
    without renewal: how long a crashed holder on another machine keeps the lake from others."""

    def __init__(self, root: Location, seconds: float = 60.0) -> None:
        if seconds <= 0:
            raise ValueError("a lease lasts a positive number of seconds")
        self.loc = root / "_binlake" / "lease"
        self.lake_uri = root.uri
        self.seconds = seconds
        self.epoch = -1  # the version of our last commit to the lease table
        self.waited = 0.0  # seconds spent waiting for another holder
        self._record: LeaseRecord | None = None
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the lease table -------------------------------------------------------------------------------------------

    def _latest(self) -> tuple[DeltaTable | None, LeaseRecord | None]:
        """The lease table at its latest version and the record committed there (``None``, ``None``: no table); a
        store that cannot be read is a :class:`~binlake.storage.StorageError`."""
        try:
            if not DeltaTable.is_deltatable(self.loc.delta_uri, storage_options=self.loc.delta_options()):
                return None, None
            dt = DeltaTable(self.loc.delta_uri, storage_options=self.loc.delta_options())
            text = dt.history(1)[0].get(_KEY)
        except (DeltaError, OSError) as e:
            raise self._unusable("read", e) from None
        return dt, LeaseRecord.from_json(text) if text else None

    def _unusable(self, verb: str, e: Exception) -> StorageError:
        """The error of a lake whose lease table cannot be read or written, naming the lake and the store's
        reason."""
        return store_error(f"cannot {verb} the lake (its writer lease, _binlake/lease)", e, self.lake_uri)

    def _put(self, dt: DeltaTable | None, record: LeaseRecord) -> bool:
        """Commit ``record`` as the version after ``dt``'s (the first one when ``dt`` is ``None``), only if no one
        else committed that version; whether it did.  A commit that fails while no other version appeared is no
        lost race but a store that cannot be written (a lake path that is a file or lies in /proc, a read-only
        disk, a bucket that refuses writes): a :class:`~binlake.storage.StorageError` at once, naming the lake and
        the store's reason."""
        props = CommitProperties(custom_metadata={_KEY: record.to_json()}, max_commit_retries=0)
        try:
            if dt is None:
                create_table_with_add_actions(self.loc.delta_uri, Schema.from_arrow(_SCHEMA), [], mode="error",
                                              configuration=_CONFIG, storage_options=self.loc.delta_options(),
                                              commit_properties=props)  # fmt: skip
                self.epoch = 0
            else:
                target = dt.version() + 1
                dt.create_write_transaction([], mode="append", schema=_SCHEMA, commit_properties=props)
                self.epoch = target
        except (DeltaError, OSError) as e:
            if self._moved_past(dt):
                return False  # another writer committed that version first (or ours went through: the caller looks)
            raise self._unusable("write", e) from None
        self._record = record
        return True

    def _moved_past(self, dt: DeltaTable | None) -> bool:
        """Whether the lease table has a version after ``dt``'s now (after none: whether it exists)."""
        try:
            if not DeltaTable.is_deltatable(self.loc.delta_uri, storage_options=self.loc.delta_options()):
                return False
            now = DeltaTable(self.loc.delta_uri, storage_options=self.loc.delta_options()).version()
        except (DeltaError, OSError):
            return False
        return dt is None or now > dt.version()

    def _mine(self, expires: float) -> LeaseRecord:
        old = self._record
        return LeaseRecord(
            old.holder if old else uuid.uuid4().hex,
            socket.gethostname(),
            os.getpid(),
            _process_space(),
            old.acquired if old else time.time(),
            expires,
        )

    # -- taking, renewing, handing back ----------------------------------------------------------------------------

    def acquire(self, wait: float = 0.0, on_wait: Callable[[str], None] | None = None) -> WriterLease:
        """Take the lease, waiting up to ``wait`` seconds for its holder to finish (``on_wait`` is told, once, who
        that is); :class:`LakeBusy` when it is still held then.  Starts the renewals."""
        t0 = time.monotonic()
        told, waited = False, False
        tried: LeaseRecord | None = None
        races = 0
        try:
            while True:  # each turn sleeps; lost races are bounded by _RACES, waiting for a holder by ``wait``
                dt, held = self._latest()
                now = time.time()
                if held is not None and tried is not None and held.holder == tried.holder and dt is not None:
                    self.epoch, self._record = dt.version(), held  # our commit went through though the store said not
                    break
                if held is None or held.free(now):
                    if tried is not None:
                        _HELD.discard(tried.holder)
                    tried = self._mine(now + self.seconds)
                    # held by this process from before the commit: another thread of it reading the record meanwhile
                    # sees a holder alive, not one a stopped ingest of this process left (LeaseRecord._dead_here)
                    _HELD.add(tried.holder)
                    try:
                        if self._put(dt, tried):
                            break
                    except StoreUnreachable:  # the connection dropped: the commit may have gone through, look again
                        if races >= _RACES:
                            raise
                    races += 1  # another writer took it between our read and our commit: look again, after a pause
                    if races > _RACES:
                        raise LakeBusy(
                            f"the lake's writer lease changed hands {_RACES} times in a row while this ingest tried to "
                            "take it: stopping (another writer takes it and hands it back as fast)",
                            file=self.lake_uri,
                        )
                    time.sleep(min(0.02 * 2**races, 1.0))
                    continue
                left = wait - (time.monotonic() - t0)
                if left <= 0:
                    after = f" after waiting {wait:.0f} s" if wait > 0 else ""
                    raise LakeBusy(
                        f"another binlake ingest is writing this lake ({held.describe()}){after}: stopping "
                        "(--wait SECONDS waits for it)",
                        file=self.lake_uri,
                    )
                if not told and on_wait is not None:
                    on_wait(f"waiting up to {left:.0f} s for another ingest writing this lake ({held.describe()})")
                    told = True
                waited = True
                time.sleep(max(0.05, min(left, self.seconds / 6, held.expires - now + 0.05)))
        finally:
            if tried is not None and (self._record is None or self._record.holder != tried.holder):
                _HELD.discard(tried.holder)
        self.waited = time.monotonic() - t0 if waited else 0.0
        if self._record is not None:
            _HELD.add(self._record.holder)
        self._lost = None
        self._stop.clear()
        self._thread = threading.Thread(target=self._renewals, name="binlake-lease", daemon=True)
        self._thread.start()
        return self

    def _renewals(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.renew()
            except LeaseLost:
                return
            except (DeltaError, OSError, BinlogError):  # the store failing now and then: the next renewal tries again
                continue

    def renew(self) -> None:
        """Extend the lease by its duration (a commit of the next epoch); :class:`LeaseLost` when another writer's
        record is there."""
        if self._lost:
            raise LeaseLost(self._lost)
        dt = DeltaTable(self.loc.delta_uri, version=self.epoch, storage_options=self.loc.delta_options())
        if self._put(dt, self._mine(time.time() + self.seconds)):
            return
        latest, held = self._latest()
        if held is not None and self._record is not None and held.holder == self._record.holder and latest is not None:
            self.epoch = latest.version()  # our commit went through though the store reported an error
            self._record = held
            return
        self._lost = f"the lake's writer lease was taken over ({held.describe() if held else 'by another writer'})"
        raise LeaseLost(self._lost)

    def check(self) -> None:
        """The fence before a commit: :class:`LeaseLost` unless the lease is held and a quarter of its duration at
        least is left."""
        if self._lost:
            raise LeaseLost(self._lost, file=self.lake_uri)
        record = self._record
        if record is None or self._thread is None:
            raise LeaseLost("the lake's writer lease is not held", file=self.lake_uri)
        if time.time() > record.expires - self.seconds / 4:
            raise LeaseLost(
                "the lake's writer lease expires before a commit could finish (its renewals failed): stopping",
                file=self.lake_uri,
            )

    def release(self) -> None:
        """Stop renewing and hand the lease back (a record expiring at once), so the next ingest need not wait."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._record is not None:
            _HELD.discard(self._record.holder)
        if self._record is not None and not self._lost:
            try:
                dt = DeltaTable(self.loc.delta_uri, version=self.epoch, storage_options=self.loc.delta_options())
                self._put(dt, self._mine(0.0))
            except (DeltaError, OSError, BinlogError):
                pass  # it expires by itself
        self._record = None

    def __enter__(self) -> WriterLease:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
