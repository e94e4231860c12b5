"""Which binlog files a path names, and their order: a file, a folder or a glob, local or a URI of any store
:mod:`binlake.storage` reaches (``s3://bucket/binlogs/``, ``gs://bucket/binlogs/mysql-bin.*``).  Every command that
reads binlog files asks :func:`list_binlogs` (``binlake changes``, the ingest, the data source).

Example::

    for f in list_binlogs("binlogs/"):
        print(f.seq, f.name, f.size)
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binlake.decoder import MAGIC
from binlake.storage import PART, Location, Piece, StorageError, binlog_copies, binlog_pieces, binlog_source, locate

__all__ = ["BinlogFile", "list_binlogs", "source_exists"]

_EXT = re.compile(r"\.(\d+)$")


@dataclass(frozen=True, slots=True)
class BinlogFile:
    """One binlog file: where it is (a local path or a URI), its name (stored in every table), its sequence number
    (orders files) and its size when planned."""

    path: str
    name: str
    seq: int
    size: int

    @property
    def source(self) -> Any:
        """What :mod:`binlake.reader` reads: the local path, or a :class:`binlake.storage.StoredFile`."""
        return binlog_source(self.path)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "seq": self.seq, "size": self.size}

    @classmethod
    def from_json(cls, v: dict[str, Any]) -> BinlogFile:
        return cls(str(v["path"]), str(v["name"]), int(v["seq"]), int(v["size"]))


def _is_binlog(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == MAGIC
    except OSError:
        return False


def _stored_is_binlog(pieces: list[Piece]) -> bool:
    try:
        with pieces[0].location.open_input() as f:
            return bytes(f.read(4)) == MAGIC
    except (OSError, StorageError):
        return False


def list_binlogs(path: str | os.PathLike[str]) -> list[BinlogFile]:
    """The binlog files at ``path`` (a file, a folder, or a glob; local, or a URI of :mod:`binlake.storage`),
    ordered by sequence number.

    A folder or glob keeps only files that start with the binlog magic (so ``binlog.index``, README files and the
    like are skipped).  The sequence number is the numeric extension (``mysql-bin.000042`` -> 42) when every file
    has one, otherwise the position in name order.
    """
    text = os.fspath(path)
    found: list[tuple[str, str, int]]  # (path or URI, name, size)
    if "://" in text and not locate(text).is_local:
        found = _stored_binlogs(locate(text))
    else:
        local = locate(text).uri if "://" in text else text
        if os.path.isdir(local):
            names = [str(p) for p in Path(local).iterdir() if p.is_file() and _is_binlog(str(p))]
        elif os.path.isfile(local):
            names = [local]
        else:
            names = [p for p in glob.glob(local) if os.path.isfile(p) and _is_binlog(p)]
        found = [(n, os.path.basename(n), os.path.getsize(n)) for n in sorted({os.path.abspath(n) for n in names})]
    exts = [_EXT.search(name) for _, name, _ in found]
    if found and all(m is not None for m in exts):
        seqs = [int(m.group(1)) for m in exts if m is not None]
    else:
        seqs = list(range(1, len(found) + 1))
    files = [BinlogFile(p, name, s, size) for (p, name, size), s in zip(found, seqs, strict=True)]
    return sorted(files, key=lambda f: (f.seq, f.name))


def _stored_binlogs(loc: Location) -> list[tuple[str, str, int]]:
    """:func:`list_binlogs` of a URI: an object, a folder (prefix), or a glob in its last part.  A copy kept in
    segments (:data:`binlake.storage.PART`, the live ingest's mirror into an object store) is one file, named by
    the folder of its segments (what :func:`binlake.storage.binlog_source` reads as one)."""
    info = loc.info()
    import pyarrow.fs as pafs

    folder = loc.parent
    if info.type == pafs.FileType.Directory and not loc.name.endswith(PART):
        folder = loc
        copies = binlog_copies(loc)
    elif any(c in loc.name for c in "*?["):
        copies = {n: p for n, p in binlog_copies(folder).items() if fnmatch.fnmatchcase(n, loc.name)}
    else:
        name = loc.name.removesuffix(PART)
        copies = {name: binlog_pieces(folder, name)}
    found = []
    for name, pieces in copies.items():
        if pieces and _stored_is_binlog(pieces):
            whole = len(pieces) == 1 and pieces[0].location == folder / name
            path = pieces[0].location.uri if whole else (folder / f"{name}{PART}").uri
            found.append((path, name, pieces[-1].end))
    return found


def source_exists(path: str) -> bool:
    """Whether ``path`` (a local path or a URI) names an existing file or folder: a source that lists no binlog
    is then an empty folder (nothing new), not a typo."""
    loc = locate(path)
    return os.path.exists(loc.uri) if loc.is_local else loc.exists()
