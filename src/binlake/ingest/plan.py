"""How to cut binlog files into partitions at transaction boundaries.

Runs on the driver and reads only event headers (:func:`binlake.reader.header_table`, memory-mapped, walked in C
where the extension is built; an object-store file is read in chunks), so planning a large file costs a fraction of
decoding it.  The files are :func:`binlake.binlogs.list_binlogs`'s (local, or URIs of any store
:mod:`binlake.storage` reaches).  A split starts where a transaction starts (a GTID event, or just after an XID),
never inside one, so a task decodes it with nothing but the file's format description (``read_events(path,
start=..., stop=...)`` decodes the FDE at position 4 first).  The boundaries are those a header walk sees
(:data:`binlake.transactions.CUT`).

Example::

    files = list_binlogs("binlogs/")              # binlake.binlogs: a file, a folder or a glob
    for split in plan_splits(files, split_bytes=64 << 20):
        print(split.name, split.start, split.stop)
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Iterable, Mapping

from binlake.binlogs import BinlogFile
from binlake.errors import BinlogError, TruncatedError
from binlake.events.base import LOG_EVENT_BINLOG_IN_USE_F, EventType
from binlake.lake.records import Split
from binlake.reader import HeaderCache, HeaderInfo, HeaderTable, Source, header_table, walk_headers
from binlake.transactions import FILE_END_EVENTS, last_boundary, next_boundary

__all__ = ["DEFAULT_SPLIT_BYTES", "binlog_head", "plan_file", "plan_splits"]

DEFAULT_SPLIT_BYTES = 64 << 20


def binlog_head(source: str | Source, *, cut: bool = False) -> tuple[bool, bool]:
    """(closed, encrypted) from the file's first events: the format description's LOG_EVENT_BINLOG_IN_USE_F (set
    while the server writes the file, cleared when it closes it: ``MYSQL_BIN_LOG::close``) and MariaDB's
    START_ENCRYPTION_EVENT right after it (every later header's type code is then ciphertext).  ``cut``: a file
    cut short before its second event is read as far as it goes (else its TruncatedError is raised)."""
    first: list[HeaderInfo] = []
    try:
        first.extend(itertools.islice(walk_headers(source, 4), 2))  # the generator (and its mmap) closes as it goes
    except TruncatedError:
        if not cut:
            raise
    closed = bool(first) and not first[0].flags & LOG_EVENT_BINLOG_IN_USE_F
    return closed, any(h.type_code == EventType.START_ENCRYPTION_EVENT for h in first[1:])


def _first_cut(table: HeaderTable, at: int) -> int | None:
    """The first transaction boundary of ``table``'s range at or after ``at`` (``None``: none)."""
    k = next_boundary(table.codes, bisect_left(table.positions, at))
    if k is None:
        return None
    cut = table.positions[k] if k < len(table) else table.end
    return cut if cut >= at else None


def _last_cut(table: HeaderTable) -> int | None:
    """The last transaction boundary of ``table``'s range, or ``None``."""
    k = last_boundary(table.codes)
    return None if k is None else table.positions[k] if k < len(table) else table.end


def plan_file(
    file: BinlogFile,
    start: int = 4,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    whole_tail: bool = True,
    headers: HeaderCache | None = None,
) -> list[Split]:
    """Cut ``file`` from ``start`` into splits of about ``split_bytes`` at transaction boundaries.

    ``whole_tail=False`` (incremental ingest) stops a file that does not end with its ROTATE or STOP at its last
    transaction boundary a header walk sees, so a transaction the server is still writing, or one an interrupted
    copy holds only part of (its format description no longer flagged in use, but cut short), is left for the next
    run (:func:`binlake.ingest.run` then decodes the events after that boundary for a last group it cannot see
    end); an encrypted file, whose boundaries and events the header walk cannot see, is one split, planned once it
    is closed and whole (no partial event at its end).  ``headers``: where to walk the file's headers (and keep
    them for the scan).
    """
    if file.size - start <= split_bytes and whole_tail:
        return [Split(file, start, None)] if file.size > start else []
    try:
        source = file.source
        closed, encrypted = binlog_head(source, cut=not whole_tail)
        table = headers.table(source, start) if headers is not None else header_table(source, start)
    except BinlogError:
        return [Split(file, start, None)]  # encrypted or damaged: one task decodes (and reports) it all
    if table.why and not isinstance(table.error(), TruncatedError):  # (a partial event at the end is a file still
        return [Split(file, start, None)]  # being written: planned up to its last whole event) damaged: as above
    # an encrypted file's type codes are ciphertext: no visible boundaries, and ended only by its header's flag
    ended = closed and not table.why if encrypted else any(table.codes.find(c) >= 0 for c in FILE_END_EVENTS)
    last = None if encrypted else _last_cut(table)
    stop = table.end if (ended or whole_tail) else (start if last is None else last)
    points = [start]
    while not encrypted and (cut := _first_cut(table, points[-1] + split_bytes)) is not None and cut < stop:
        points.append(cut)
    points.append(stop)
    return [Split(file, a, b) for a, b in itertools.pairwise(points) if b > a]


def plan_splits(
    files: Iterable[BinlogFile],
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    resume: Mapping[str, int] | None = None,
    whole_tail: bool = True,
    headers: HeaderCache | None = None,
) -> list[Split]:
    """Splits of every file in order, numbered; ``resume`` maps a file name to the position to start from.
    ``headers``: keeps the header walks for :func:`~binlake.ingest.statements.scan_statements` of the splits."""
    out: list[Split] = []
    for f in files:
        start = max(4, (resume or {}).get(f.name, 4))
        out.extend(plan_file(f, start, split_bytes=split_bytes, whole_tail=whole_tail, headers=headers))
    return [Split(s.file, s.start, s.stop, i) for i, s in enumerate(out)]
