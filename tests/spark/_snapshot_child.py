"""A snapshot that a test kills with SIGKILL between chunks: ``python -m tests.spark._snapshot_child PORT
PASSWORD_FILE LAKE``; chunks are read in this process one after the other, ``$BINLAKE_SNAPSHOT_DELAY`` seconds
apart (so the kill lands between chunks written and chunks still to read)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from binlake.lake.runner import InProcessRunner
from binlake.replication import ConnectionOptions
from binlake.replication.options import read_password
from binlake.snapshot import SnapshotSpec, take_snapshot

T = TypeVar("T")
R = TypeVar("R")


class Slow(InProcessRunner):
    """The chunks one after the other in this process, ``$BINLAKE_SNAPSHOT_DELAY`` seconds apart."""

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        delay = float(os.environ.get("BINLAKE_SNAPSHOT_DELAY", "0"))
        out = []
        for item in items:
            out.append(fn(item))
            time.sleep(delay)
        return out


def main(port: int, password_file: str, lake: str) -> int:
    password = read_password(Path(password_file), user="snap", host="127.0.0.1")
    options = ConnectionOptions("127.0.0.1", "snap", 7778, port, password, timeout=30.0)
    take_snapshot(options, lake, SnapshotSpec(runner=Slow(), password_file=password_file, chunk_rows=10_000, log=print))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
