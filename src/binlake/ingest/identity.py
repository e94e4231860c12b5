"""Which binlog a file is, beyond its name: a lake lands each binlog once, whatever it is called, and never takes
another binlog for one it landed because the two share a name.

A file's identity (:class:`~binlake.lake.records.FileIdentity`) comes from its head, which a server never rewrites:
the server id and timestamp of its FORMAT_DESCRIPTION (the server that started the file, and when; a replication
stream resends that event with both kept), and a SHA-256 of its first bytes as far as the lake landed them (at most
:data:`PREFIX`), with the FORMAT_DESCRIPTION's in-use flag left out: the one byte a server changes in place, when it
closes the file (``MYSQL_BIN_LOG::close``; the event's CRC32 is computed without it).  Server id and timestamp alone
do not tell apart two files one server started within a second (a burst of ``FLUSH LOGS``, a tiny
``max_binlog_size``): their bytes do, once they hold a transaction.

Before a batch is planned, :func:`sort_out` holds every file of the sources against the identities the lake
recorded (its last batch manifest's ``files``):

* a name the lake knows, with that identity: planned from where the lake is in it;
* a name the lake knows, with another identity: :class:`~binlake.errors.BinlogHistoryError`, since the server's
  binlogs were reset (``RESET MASTER``) or it was rebuilt, and going on by position would skip or garble changes;
* a name the lake does not know whose head is that of a file it knows, or of an earlier file of the same run: the
  same binlog under another name (a second copy, a renamed folder), skipped with one line saying so.  Where that
  file is among the sources its bytes decide; else its record does, if it covers more than the head events a
  server writes to every new binlog (two binlogs started in the same second share those);
* a file shorter than its FORMAT_DESCRIPTION, or than what the lake landed of it (a copy under way): it waits, and
  the files after it wait for it (their changes come after its missing ones), with one line saying so.

Files a lake landed before it recorded identities (manifests of version 3 and older) get theirs from the file of
that name the first time it is seen (nothing older tells what it was).

Example::

    files, known = sort_out(files, manifest.files, manifest.positions, print)
    ... plan and land files ...
    manifest_files = recorded(files, known, positions_after)
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable, Mapping

from binlake.binlogs import BinlogFile
from binlake.errors import BinlogError, BinlogHistoryError
from binlake.events.base import EventType
from binlake.lake.records import FileIdentity
from binlake.reader import FileHead, file_head, first_bytes, walk_headers

__all__ = ["PREFIX", "recorded", "sort_out"]

PREFIX = 64 << 10
"""The most bytes of a file's head its identity's digest covers (a transaction or more: what tells files apart)."""
_HEADER_AT = 4  # the first event's common header, after the magic
_IN_USE_AT = _HEADER_AT + 17  # the FORMAT_DESCRIPTION's flags: LOG_EVENT_BINLOG_IN_USE_F (0x1)
_FILE_ENDS = (EventType.ROTATE_EVENT, EventType.STOP_EVENT)  # a server closes a binlog with one (MYSQL_BIN_LOG)
_HEAD_EVENTS = frozenset(
    (
        EventType.FORMAT_DESCRIPTION_EVENT,
        EventType.PREVIOUS_GTIDS_LOG_EVENT,
        EventType.GTID_LIST_EVENT,
        EventType.BINLOG_CHECKPOINT_EVENT,
        EventType.START_ENCRYPTION_EVENT,
    )
)
_RESET = (
    "the server's binlogs were reset (RESET MASTER) or it was rebuilt, so positions in this file do not follow what "
    "the lake holds: land the new binlogs into a new lake (docs/formats/lake.md: files cut short, renamed, or replaced)"
)


def _digest(data: bytes) -> str:
    """SHA-256 of a file's first bytes, the FORMAT_DESCRIPTION's in-use flag cleared."""
    head = bytearray(data[: _IN_USE_AT + 1])
    if len(head) > _IN_USE_AT and head[_HEADER_AT + 4] == EventType.FORMAT_DESCRIPTION_EVENT:
        head[_IN_USE_AT] &= 0xFE
    h = hashlib.sha256(head)
    h.update(memoryview(data)[len(head) :])
    return h.hexdigest()


def _identity(file: BinlogFile, head: FileHead, prefix: int) -> FileIdentity:
    data = first_bytes(file.source, prefix)
    return FileIdentity(head.server_id, head.created, len(data), _digest(data))


def _same_bytes(a: BinlogFile, b: BinlogFile) -> bool | None:
    """Whether ``a`` and ``b`` are one binlog: the same bytes as far as both go (at most :data:`PREFIX`), and, where
    that is less than :data:`PREFIX` and one is shorter, the shorter one not finished (a server's finished binlog
    ends with its ROTATE or STOP: a copy of it has its size; two binlogs a server started in the same second can
    share all the bytes of the shorter one's head).  ``None``: it cannot be told yet (the shorter one, unfinished,
    may be a copy under way or a binlog still growing)."""
    n = min(a.size, b.size, PREFIX)
    if _digest(first_bytes(a.source, n)) != _digest(first_bytes(b.source, n)):
        return False
    if n == PREFIX or a.size == b.size:
        return True
    return False if _finished(a if a.size < b.size else b) else None


def _finished(f: BinlogFile) -> bool:
    """Whether ``f``'s bytes (as listed) end with the ROTATE or STOP event a server closes a binlog with."""
    try:
        last = collections.deque(walk_headers(f.source, 4, f.size), maxlen=1)
    except BinlogError:  # a partial event at the end: a copy cut short or under way
        return False
    return bool(last) and last[0].type_code in _FILE_ENDS and last[0].pos + last[0].size == f.size


def _tells(f: BinlogFile, prefix: int) -> bool:
    """Whether ``f``'s first ``prefix`` bytes tell it from any other binlog its server started in the same second:
    they hold an event past the head a server writes to every new binlog (its GTID state, checkpoint and
    encryption key: ``MYSQL_BIN_LOG::open``), a transaction, say, with its unique GTID, or the ROTATE naming the
    next file."""
    if prefix >= PREFIX:
        return True
    try:
        return any(h.type_code not in _HEAD_EVENTS for h in walk_headers(f.source, 4, prefix))
    except BinlogError:  # (a partial event within the prefix: more than a head)
        return True


def sort_out(
    files: list[BinlogFile],
    known: Mapping[str, FileIdentity],
    positions: Mapping[str, int],
    log: Callable[[str], None],
) -> tuple[list[BinlogFile], dict[str, FileIdentity]]:
    """The files of ``files`` to plan (see the module docstring), and the identities the lake knows: ``known``,
    and those of files it landed before it recorded identities (``positions`` has them), taken from the files of
    those names.  ``log`` gets a line per file skipped, and one for the file the others wait for."""
    by_name = {f.name: f for f in files}
    known = dict(known)
    heads: dict[str, FileHead] = {}
    keep: list[BinlogFile] = []
    for i, f in enumerate(files):
        later = ", and the files after it wait for it" if i + 1 < len(files) else ""
        # the head as the listing saw the file: a copy growing as it is read (a mirror's) is compared over the
        # bytes it had then, which must hold its whole FORMAT_DESCRIPTION (else two files a server started in the
        # same second compare equal over their first few bytes, and the later one is skipped as a copy)
        head = file_head(f.source, f.size)
        if head is None:
            log(f"{f.name}: {f.size} bytes, less than its format description: waits for the rest of the file{later}")
            break
        landed = positions.get(f.name)
        rec = known.get(f.name)
        if rec is not None:
            _check_same(f, head, rec, landed)
        elif landed is None:
            twin = _twin(f, head, known, {n: by_name[n] for n in heads if heads[n] == head}, by_name)
            if twin is not None and twin[1]:
                log(f"{f.name} is {twin[0]} under another name ({head}): it lands once, as {twin[0]}; skipped")
                continue
            if twin is not None:
                log(f"{f.name} starts as {twin[0]} did ({head}) and holds fewer bytes than the lake landed of it: "
                    f"waits until it shows whether it is {twin[0]} under another name{later}")  # fmt: skip
                break
        if landed is not None and f.size < landed:
            log(f"{f.name}: {f.size} bytes, fewer than the {landed} the lake landed of it: waits for the rest{later}")
            break
        if rec is None and landed is not None:  # landed before identities were recorded
            known[f.name] = _identity(f, head, min(landed, PREFIX))
        heads[f.name] = head
        keep.append(f)
    return keep, known


def _check_same(f: BinlogFile, head: FileHead, rec: FileIdentity, landed: int | None) -> None:
    """Raise :class:`~binlake.errors.BinlogHistoryError` unless ``f`` is the file ``rec`` describes (its digest is
    checked when there is something new to land from it)."""
    was = FileHead(rec.server_id, rec.created)
    if head != was:
        raise BinlogHistoryError(f"not the binlog the lake landed under this name ({was}; this one: {head}): {_RESET}",
                                 file=f.path)  # fmt: skip
    if f.size != landed and f.size >= rec.prefix and _digest(first_bytes(f.source, rec.prefix)) != rec.digest:
        raise BinlogHistoryError(
            f"not the binlog the lake landed under this name (both {head}, but their first {rec.prefix} bytes "
            f"differ): {_RESET}",
            file=f.path,
        )


def _twin(
    f: BinlogFile,
    head: FileHead,
    known: Mapping[str, FileIdentity],
    earlier: Mapping[str, BinlogFile],
    by_name: Mapping[str, BinlogFile],
) -> tuple[str, bool] | None:
    """The name of a file the lake landed, or of an ``earlier`` file of this run, that ``f`` is a copy of, and
    whether that is sure (not: ``f`` starts as that file did but is too short to tell, and that file is not
    among the sources to compare with)."""
    for name, rec in known.items():
        if FileHead(rec.server_id, rec.created) != head:
            continue
        if name in by_name:  # the file itself, not the record of what was landed of it: its bytes decide
            same = _same_bytes(f, by_name[name])
            if same is not False:
                return name, bool(same)
        elif f.size >= rec.prefix:
            # a record of no more than a file's head events matches every binlog the server started in that second
            # with nothing logged between: it tells nothing (and nothing was landed from it to land twice)
            if _digest(first_bytes(f.source, rec.prefix)) == rec.digest and _tells(f, rec.prefix):
                return name, True
        elif not _finished(f):  # (a finished binlog shorter than what the lake landed of ``name`` is another one)
            return name, False
    for name, other in earlier.items():
        same = _same_bytes(f, other)
        if same is not False:
            return name, bool(same)
    return None


def recorded(
    files: list[BinlogFile], known: Mapping[str, FileIdentity], positions: Mapping[str, int]
) -> dict[str, FileIdentity]:
    """The identities to record with a batch after which the lake is at ``positions``: ``known``'s, and for each
    of ``files`` landed further into its first :data:`PREFIX` bytes than its record covers, one that covers what
    was landed (so a record grows until it covers a transaction or more)."""
    out = dict(known)
    for f in files:
        landed = positions.get(f.name)
        rec = out.get(f.name)
        if landed is None or (rec is not None and rec.prefix >= min(landed, PREFIX)):
            continue
        head = file_head(f.source, f.size)
        if head is not None:
            out[f.name] = _identity(f, head, min(landed, PREFIX))
    return out
