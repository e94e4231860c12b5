"""A consistent snapshot of a server's tables into the lake: the rows already there before the binlogs the stream
reads, landed as one batch (op ``read`` in the change tables, and the current-state tables) at the exact binlog
point the stream then goes on from.

* :mod:`.server`: the consistent-snapshot transaction and its binlog point, the tables, their description and
  chunks, a chunk's rows in the lake's Arrow types (PyMySQL, unbuffered);
* :mod:`.columns`: a column as its table map describes it, the SELECT expression and value conversion that give
  the binlog decoder's values;
* :mod:`.chunks`: one chunk read and written (a task's work, on the spec's runner), its record;
* :mod:`.reconcile`: chunks read at different points brought to one;
* :mod:`.run`: :func:`take_snapshot`, plan to landed batch, resumable by chunk.

Example::

    from binlake.snapshot import take_snapshot
    take_snapshot(options, "lake/", SnapshotSpec(runner=SparkRunner(spark)))
"""

from binlake.snapshot.run import (
    SnapshotResult,
    SnapshotSpec,
    check_snapshot,
    server_transactions,
    snapshot_held,
    take_snapshot,
)

__all__ = ["SnapshotResult", "SnapshotSpec", "check_snapshot", "server_transactions", "snapshot_held", "take_snapshot"]
