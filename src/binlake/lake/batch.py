"""A batch landed in the lake: the caller hands the lake what the batch produced while it runs, and the lake commits
it in its own order when the block ends (``with lake.batch(manifest) as b: ...``), as pyiceberg's ``Transaction``
commits its updates when its block ends.  A block that raises commits nothing: the next run finishes the batch.

What a batch hands over (:class:`Batch`):

* :meth:`~Batch.tables`: the change tables' schemas as the batch knows them (new columns added), and the primary
  key of every keyed table the lake knows;
* :meth:`~Batch.add`: a task's :class:`~binlake.lake.records.TaskReport`: its change and event files, the
  statements that emptied tables, the XA transactions it saw prepared, its skips, the last change of each key it
  staged;
* :meth:`~Batch.history`: the ``_schema_history`` rows of the table maps the batch saw first;
* :meth:`~Batch.columns`: where the batch's table maps were logged and how they name the tables' columns, and the
  ALTER TABLE statements that changed keyed tables' columns (:mod:`binlake.lake.alter`);
* :meth:`~Batch.changes` and :meth:`~Batch.replace_current`: a snapshot's files, a table's rows as its change rows
  and as its whole current state.

The commit, in this order:

1. the change tables (a new table, or new columns, with them);
2. the lake's own tables: ``_events``, ``_schema_history``, ``_skips``;
3. the outcome of each XA transaction prepared in an earlier batch and decided in this one
   (:attr:`~binlake.lake.records.BatchManifest.outcomes`), set on its change rows: one commit per table for all
   the outcomes it has (a second commit would carry the same batch, and be skipped as already there);
4. the current-state tables: a snapshot's replaced (:func:`binlake.lake.current.replace_current`); the others
   merged with the batch's counted changes, the statements that empty or move tables applied where they were
   logged (:func:`binlake.lake.current.update_current`: a small batch in this process, a large one as range tasks on
   the batch's :class:`~binlake.lake.runner.Runner`), the ALTER TABLE statements too (each table's files written
   again with its new columns, in its one commit: :attr:`Batch.unconverted` says what had no exact conversion);
5. the manifest, unless it was written before the batch (the ingest writes its plan first, so that a crash replays
   the same ranges; a snapshot's own records replay it), then the completion mark with the XA transactions still
   waiting for their outcome and the Delta version of every table of the lake now (the previous mark's, with the
   newest version of each table this batch committed to: what a reader of the lake as of this batch reads,
   :meth:`binlake.lake.lake.Lake.snapshot`); the batch's staging files go.

A batch that rewinds the lake (:attr:`~binlake.lake.records.BatchManifest.rewinds`) takes every table back to before
that batch instead, and its mark carries what was pending there (and the version of every table, read anew).

Every commit checks the writer lease and carries the application transaction ``(binlake-ingest, batch)``
(``binlake-xa`` for step 3), and the mark comes last: a batch cut by a kill at any point is finished by the next
run, each table committed once.

Example::

    with lake.batch(manifest) as b:
        b.tables(schemas, pk)
        for report in reports:
            b.add(report)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from binlake.lake.alter import Alteration
from binlake.lake.current import MapLayout, Unconverted, replace_current, staged_latest, update_current
from binlake.lake.records import BatchDone, BatchManifest, DataFile, Emptied, SkipRecord, TaskReport
from binlake.lake.runner import InProcessRunner, Runner
from binlake.lake.tables import EVENTS, EVENTS_DIR, HISTORY, HISTORY_DIR, OWN_TABLES, SKIPS, SKIPS_DIR
from binlake.storage import Location

if TYPE_CHECKING:
    from binlake.lake.lake import Lake

__all__ = ["Batch", "Timer"]

Timer = Callable[[str, Callable[[], Any]], Any]
"""How the commit's steps are run: ``timed(label, step)`` (``commit``, ``current``, ``rewind``), e.g. logging each
one's time (:meth:`binlake.ingest.progress.Progress.timed`)."""


def _untimed(label: str, step: Callable[[], Any]) -> Any:
    del label
    return step()


class Batch:
    """What batch ``manifest.batch`` lands, gathered while it runs and committed by :meth:`commit` (module
    docstring); ``runner`` runs the current-state merge's range tasks of a large batch.  Made by
    :meth:`binlake.lake.lake.Lake.batch`."""

    def __init__(
        self, lake: Lake, manifest: BatchManifest, timed: Timer | None = None, runner: Runner | None = None
    ) -> None:
        self.lake, self.manifest, self.batch = lake, manifest, manifest.batch
        self._timed = timed or _untimed
        self._runner = runner or InProcessRunner()
        self._schemas: dict[str, pa.Schema] = {}
        self._pk: dict[str, list[str]] = {}
        self._reports: list[TaskReport] = []
        self._history: list[dict[str, Any]] = []
        self._files: dict[str, list[DataFile]] = {}  # a snapshot's change files, by table
        self._replaced: dict[str, tuple[list[DataFile], pa.Schema, list[str]]] = {}  # a snapshot's, by table
        self._layouts: list[MapLayout] = []
        self._alterations: list[Alteration] = []
        self.pending: dict[str, tuple[str, ...]] = {}  # after the commit: XID -> tables, still waiting
        self._touched: set[Location] = set()  # every table a step of the commit may have committed to
        self.unconverted: list[Unconverted] = []  # after the commit: values an ALTER left NULL, one per column
        self.rewound = 0  # after the commit of a rewinding batch: the tables it took back

    # -- what the batch produced ---------------------------------------------------------------------------------

    def tables(self, schemas: dict[str, pa.Schema], pk: dict[str, list[str]]) -> None:
        """The change tables' schemas as the batch knows them (``db/table`` -> the table's columns and META), and the
        primary key of every keyed table the lake knows (its current state follows renames and emptying statements
        of tables the batch has no change of)."""
        self._schemas.update(schemas)
        self._pk.update(pk)

    def add(self, report: TaskReport) -> None:
        """A task's report: its files, statements, XA transactions and skips land with the batch."""
        self._reports.append(report)

    def history(self, rows: Sequence[dict[str, Any]]) -> None:
        """``_schema_history`` rows (:data:`~binlake.lake.tables.HISTORY`) of the table maps the batch saw first."""
        self._history.extend(rows)

    def columns(self, layouts: Sequence[MapLayout], alterations: Sequence[Alteration]) -> None:
        """The batch's table maps (where each was logged, and per column its change-table name, its name in the
        table and its type) and the ALTER TABLE statements that changed the columns of keyed tables."""
        self._layouts.extend(layouts)
        self._alterations.extend(alterations)

    def changes(self, key: str, files: Sequence[DataFile], schema: pa.Schema) -> None:
        """Files of table ``key``'s change table written outside the tasks (a snapshot's chunks), with its schema:
        the table is made even when ``files`` is empty."""
        self._schemas[key] = schema
        self._files.setdefault(key, []).extend(files)

    def replace_current(self, key: str, files: Sequence[DataFile], schema: pa.Schema, pk: Sequence[str]) -> None:
        """``files`` become the whole current state of table ``key`` (a snapshot's rows, each file sorted by the
        primary key ``pk``)."""
        self._replaced[key] = (list(files), schema, list(pk))

    # -- the commit ----------------------------------------------------------------------------------------------

    def commit(self) -> None:
        """Commit everything handed over, in the lake's order (module docstring), then mark the batch done."""
        lake, batch = self.lake, self.batch
        if self.manifest.rewinds is not None:
            first = self.manifest.rewinds
            self.rewound = self._timed("rewind", lambda: lake.rewind(first))
            before = lake.done(first - 1)
            self._finish(before.xa_pending, before.xa_layouts, anew=True)
            return
        reports = sorted(self._reports, key=lambda r: r.split)
        by_table: dict[str, list[DataFile]] = defaultdict(list)  # the tasks' change files
        events: list[DataFile] = []
        emptied: list[Emptied] = []
        skips: list[SkipRecord] = []
        before = lake.done(batch - 1)
        pending = {x: set(k) for x, k in before.xa_pending.items()}
        xa_layouts = {x: dict(t) for x, t in before.xa_layouts.items()}
        # each map id's last layout in the batch, kept for the XA transactions left waiting: their rows of a table come
        # after every ALTER of it in the batch (the server holds the table's metadata lock until XA COMMIT/ROLLBACK),
        # so the last layout of their map id names the table's columns as their rows do
        by_map = {m.map_id: m for m in sorted(self._layouts, key=lambda m: m.seq) if m.map_id}
        for rep in reports:
            for f in rep.files:
                by_table[f.table].append(f)
            events.extend(rep.events)
            emptied.extend(rep.emptied)
            skips.extend(rep.skips)
            for x, maps in rep.prepared.items():
                pending.setdefault(x, set()).update(maps)
                for key, mid in maps.items():
                    if mid in by_map:
                        xa_layouts.setdefault(x, {})[key] = tuple((s, n) for s, n, _ in by_map[mid].columns)
        outcomes = self.manifest.outcomes
        resolved = {x: (outcomes[x], keys) for x, keys in pending.items() if x in outcomes}
        pending = {x: keys for x, keys in pending.items() if x not in outcomes}
        earlier_xa: dict[str, list[str]] = defaultdict(list)  # table -> XIDs committed now, prepared in a batch before
        outcomes_of: dict[str, dict[str, bool]] = defaultdict(dict)  # table -> its XIDs resolved now: one commit
        for x, (rolled_back, tables) in resolved.items():
            for key in tables:
                outcomes_of[key][x] = rolled_back
                if not rolled_back:
                    earlier_xa[key].append(x)

        # every table a step commits to, and the lake's own always: a batch re-run after a cut may hand over no
        # _schema_history row that its cut attempt committed (it finds the table maps there), yet has that commit
        touched = self._touched
        touched.update(lake.own(name) for name in OWN_TABLES)

        def commit() -> None:
            for key, fs in sorted({**self._files, **by_table}.items()):
                touched.add(lake.changes(key))
                lake.commit(lake.changes(key), fs, self._schemas[key], batch)
            if events:
                touched.add(lake.own(EVENTS_DIR))
                lake.commit(lake.own(EVENTS_DIR), events, EVENTS, batch)
            if self._history:
                touched.add(lake.own(HISTORY_DIR))
                lake.append(lake.own(HISTORY_DIR), pa.Table.from_pylist(self._history, schema=HISTORY), batch)
            if skips:
                touched.add(lake.own(SKIPS_DIR))
                rows = [{**s.to_json(), "batch": batch} for s in skips]
                lake.append(lake.own(SKIPS_DIR), pa.Table.from_pylist(rows, schema=SKIPS), batch)
            for key, xa in sorted(outcomes_of.items()):
                touched.add(lake.changes(key))
                lake.resolve_rollbacks(lake.changes(key), xa, batch)

        def current() -> None:
            for key, (files, schema, pk) in sorted(self._replaced.items()):
                touched.add(lake.current(key))
                replace_current(lake, key, files, schema, pk, batch)
            latest = staged_latest(reports, by_table)
            keys, self.unconverted = update_current(lake, batch, self._pk, self._schemas, by_table, earlier_xa,
                                                    emptied, self.manifest.renames, latest, self._runner,
                                                    self._layouts, self._alterations)  # fmt: skip
            touched.update(lake.current(key) for key in keys)

        self._timed("commit", commit)
        self._timed("current", current)
        if lake.manifest(batch) is None:
            lake.write_manifest(self.manifest)
        self._finish({x: tuple(sorted(k)) for x, k in pending.items()}, xa_layouts)

    def _finish(
        self,
        pending: dict[str, tuple[str, ...]],
        xa_layouts: dict[str, dict[str, tuple[tuple[str, str], ...]]],
        *,
        anew: bool = False,
    ) -> None:
        """The completion mark (the tables' versions: :meth:`~binlake.lake.lake.Lake.versions_after`; ``anew``:
        read from every table; the layouts of the XA transactions still waiting), then the batch's staging files
        go."""
        self.pending = dict(pending)
        tables = self.lake.versions_after(self.batch, None if anew else self._touched)
        layouts = {x: t for x, t in xa_layouts.items() if x in self.pending}
        self.lake.write_done(self.batch, BatchDone(self.pending, tables, layouts))
        self.lake.staging(self.batch).delete_dir()
