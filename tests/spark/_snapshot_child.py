"""A snapshot that a test kills with SIGKILL between chunks: ``python -m tests.spark._snapshot_child PORT
PASSWORD_FILE LAKE``; chunks are read in this process one after the other, ``$BINLAKE_SNAPSHOT_DELAY`` seconds
apart (so the kill lands between chunks written and chunks still to read)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from binlake.lake.lake import Lake
from binlake.lake.records import ChunkDone, SnapshotChunk, SnapshotPlan
from binlake.replication import ConnectionOptions
from binlake.replication.options import read_password
from binlake.snapshot import SnapshotSpec, take_snapshot
from binlake.snapshot.chunks import run_chunks
from binlake.snapshot.server import ServerAddress


def slow(
    lake: Lake, plan: SnapshotPlan, chunks: list[SnapshotChunk], options: ConnectionOptions, address: ServerAddress
) -> Iterator[ChunkDone]:
    delay = float(os.environ.get("BINLAKE_SNAPSHOT_DELAY", "0"))
    for done in run_chunks(lake, plan, chunks, options, address):
        yield done
        time.sleep(delay)


def main(port: int, password_file: str, lake: str) -> int:
    password = read_password(Path(password_file), user="snap", host="127.0.0.1")
    options = ConnectionOptions("127.0.0.1", "snap", 7778, port, password, timeout=30.0)
    take_snapshot(options, lake, SnapshotSpec(runner=slow, password_file=password_file, chunk_rows=10_000, log=print))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
