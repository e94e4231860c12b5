"""The snapshot's chunks as Spark tasks: one task per chunk, each on its own connection and in its own consistent
snapshot (:func:`binlake.snapshot.chunks.write_chunk`), as many at a time as the cluster has task slots.

A task gets the lake's URI, the plan, its chunk and the server's address without the password (the task reads it
from ``--password-file`` or ``$BINLAKE_PASSWORD`` where it runs): nothing secret is in a Spark plan.  A
:class:`~binlake.errors.BinlogError` in a task reaches the driver as itself.

Example::

    take_snapshot(options, lake, SnapshotSpec(runner=spark_runner(spark), password_file="/etc/binlake/pw"))
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from binlake.errors import BinlogError
from binlake.ingest.progress import Progress
from binlake.lake.lake import Lake
from binlake.lake.records import ChunkDone, SnapshotChunk, SnapshotPlan
from binlake.replication.options import ConnectionOptions
from binlake.snapshot.chunks import write_chunk
from binlake.snapshot.run import Runner
from binlake.snapshot.server import ServerAddress
from binlake.spark.session import context_of

__all__ = ["spark_runner"]


def spark_runner(spark: Any, progress: Progress | None = None) -> Runner:
    """A runner of :func:`binlake.snapshot.take_snapshot` that reads the chunks in Spark tasks."""

    def run(
        lake: Lake, plan: SnapshotPlan, chunks: list[SnapshotChunk], options: ConnectionOptions, address: ServerAddress
    ) -> Iterable[ChunkDone]:
        del options  # its password stays on the driver: each task reads its own (module docstring)
        uri = lake.root.uri
        text = plan.to_json()

        def task(it: Iterator[SnapshotChunk]) -> Iterator[str | BinlogError]:
            own = Lake(uri)
            mine = SnapshotPlan.from_json(text)
            try:
                for c in it:
                    yield write_chunk(own, mine, c, address.options()).to_json()
            except BinlogError as e:
                yield e

        rdd = context_of(spark).parallelize(chunks, max(1, len(chunks)))

        def job() -> list[str | BinlogError]:
            found: list[str | BinlogError] = rdd.mapPartitions(task).collect()
            return found

        rows = progress.run("snapshot", job) if progress is not None else job()
        for row in rows:
            if isinstance(row, BinlogError):
                raise row
        return [ChunkDone.from_json(r) for r in rows if isinstance(r, str)]

    return run
