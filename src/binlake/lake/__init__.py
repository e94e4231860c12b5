"""The lake without Spark: a :class:`Lake` of Delta tables on a local disk or an object store, its names, records,
commit protocol, current-state merge and writer lease; ``binlake tables`` reads it.

The ingest (:mod:`binlake.ingest`) decodes binlogs into the files a :class:`Lake` commits, its tasks run by a
:class:`~binlake.lake.runner.Runner` (this process, or Spark's executors); everything here needs only ``pyarrow`` and
``deltalake``.

==================  ===============================================================================================
``lake``            :class:`Lake`: the layout, the batch manifests, reading (as of one batch) and committing
``batch``           the commit protocol: what a batch produced, committed in the lake's order, then its done mark
``runner``          where tasks run: the :class:`~binlake.lake.runner.Runner` protocol, its records, this process's
``storage``         (``binlake.storage``) the filesystem layer under it: URIs through ``pyarrow.fs``
``names``           reversible folder names for database and table names from a binlog
``tables``          the lake's own tables, and the META columns of every change table (built by ``meta_columns``)
``records``         the typed, versioned records: batch manifests, completion marks, task reports, splits, settings
``delta``           Delta commits with ``deltalake``, each carrying its batch as an application transaction
``deltalog``        binlake's own Delta log: snapshots replayed, commits delta-rs cannot make, files read with DVs
``dv``              deletion vectors: RoaringBitmapArray, Z85, DV files and descriptors
``current``         current state per batch: file sets of the touched tables, statements, one diff commit per table
``merge``           the merge of a key range of a batch into a table (a task): change rows, key lookups, new files
``fileset``         a table's live files as a batch changes them, and the commit that makes the table so
``files``           current-state files: sorted by the key, Delta statistics, row groups; key bounds read back
``lease``           one writer at a time, on object stores too: a lease renewed by conditional Delta commits
``show``            ``binlake tables LAKE [TABLE]``
==================  ===============================================================================================

Example::

    from binlake.lake import Lake
    for t in Lake("s3://bucket/lake").tables():
        print(t.name, t.kind, t.rows)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from binlake.lake.lake import Lake, LakeSnapshot, LakeTable
    from binlake.lake.lease import LakeBusy, LeaseLost

__all__ = ["Lake", "LakeBusy", "LakeSnapshot", "LakeTable", "LeaseLost"]

_WHERE = {"Lake": "binlake.lake.lake", "LakeTable": "binlake.lake.lake", "LakeSnapshot": "binlake.lake.lake",
          "LakeBusy": "binlake.lake.lease", "LeaseLost": "binlake.lake.lease"}  # fmt: skip


def __getattr__(name: str) -> Any:
    """Load the module of a public name on first use (``import binlake.lake.names`` stays cheap)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'binlake.lake' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
