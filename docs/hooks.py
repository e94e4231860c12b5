"""mkdocs hook: the parts of the pages generated from the code, so that the documentation and the program cannot
say different things.

- ``<!-- binlake:help COMMAND -->``: what ``binlake COMMAND --help`` prints (``<!-- binlake:help -->``: ``binlake
  --help``), from the parser itself (:func:`binlake.cli.command_parser`), at a fixed width;
- ``<!-- binlake:records -->``: the lake's versioned records, each with the version this binlake writes;
- ``<!-- binlake:include FILE -->``: a Markdown file of the repository outside ``docs/`` (``CONTRIBUTING.md``), its
  headings one level down.

tests/test_docs.py builds the site strictly and checks every command page against its parser.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from binlake.cli import command_parser

WIDTH = 100
MARKER = re.compile(r"<!-- binlake:(help|records|include)(?: ([\w.]+))? -->")
REPO = Path(__file__).resolve().parents[1]


def help_text(command: str | None) -> str:
    """``binlake COMMAND --help`` as the parser prints it, :data:`WIDTH` columns wide."""
    parser = command_parser(command)
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=WIDTH)
    return parser.format_help()


def records_table() -> str:
    """The versioned records of a lake and of the commands' state files, with the version each is written in."""
    from binlake.ingest.statements import SCHEMA_STATE_VERSION
    from binlake.lake.fileset import LiveFile, RewriteResult, RewriteTask
    from binlake.lake.lease import LeaseRecord
    from binlake.lake.merge import MergeResult, MergeTask
    from binlake.lake.records import (
        BatchDone,
        BatchFold,
        BatchManifest,
        ChunkDone,
        LakeSettings,
        SnapshotPlan,
        Statement,
        TaskReport,
    )
    from binlake.render.changes.tail import TAIL_STATE_VERSION
    from binlake.replication.position import RESUME_POINT_VERSION
    from binlake.sql.temporary import TemporaryState

    rows = [
        ("`BatchManifest`", "`LAKE/_binlake/batches/NNNNNNNNNN.json`", BatchManifest.VERSION,
         "a batch's plan: its byte ranges, positions reached, file identities, schema, statements; written before "
         "any table is touched"),
        ("`BatchDone`", "`LAKE/_binlake/batches/NNNNNNNNNN.done`", BatchDone.VERSION,
         "a batch's completion mark (the XA transactions still pending)"),
        ("`BatchFold`", "`LAKE/_binlake/batches/AAAAAAAAAA-BBBBBBBBBB.fold`", BatchFold.VERSION,
         "old batches' manifests and marks folded into one record by `binlake maintain`"),
        ("`Statement`", "in the manifest", Statement.VERSION,
         "what the driver learned from a batch's QUERY events: DDL, renames, XA outcomes, temporary tables"),
        ("`TemporaryState`", "in a `Statement`", TemporaryState.VERSION, "the sessions' temporary tables at a point"),
        ("schema state", "in the manifest", SCHEMA_STATE_VERSION, "the DDL tracker's tables, as JSON"),
        ("`TaskReport`", "a decode task's answer to the driver", TaskReport.VERSION,
         "what a task wrote (Parquet files, the staged last change of each key, emptied tables) and skipped"),
        ("`LakeSettings`", "`LAKE/_binlake/settings.json`", LakeSettings.VERSION,
         "how the lake lays out what it writes: the current-state layout (`dv` or `cow`), the retention"),
        ("`MergeTask`, `MergeResult`", "a current-state merge task and its answer", MergeTask.VERSION,
         f"a key range of a batch's changes into a table; the files written and the rows replaced (result: version "
         f"{MergeResult.VERSION})"),
        ("`RewriteTask`, `RewriteResult`", "a copy-on-write rewrite and its answer", RewriteTask.VERSION,
         f"files written again without the rows they lost (result: version {RewriteResult.VERSION})"),
        ("`LiveFile`", "in a merge or rewrite task", LiveFile.VERSION,
         "a current-state file as a batch sees it: its deletion vector and the rows the batch deleted"),
        ("`SnapshotPlan`", "`LAKE/_binlake/snapshots/NNNNNNNNNN/`", SnapshotPlan.VERSION,
         "a consistent snapshot's point, tables and chunks"),
        ("`ChunkDone`", "`LAKE/_binlake/snapshots/NNNNNNNNNN/`", ChunkDone.VERSION,
         "one chunk of a snapshot read and written"),
        ("`LeaseRecord`", "`LAKE/_binlake/lease` (a Delta table)", LeaseRecord.VERSION,
         "who holds the lake's writer lease, until when"),
        ("`TailState`", "`binlake tail --state FILE`", TAIL_STATE_VERSION,
         "a tail's resume point, format and output length"),
        ("`ResumePoint`", "in a tail state, a live ingest's manifest", RESUME_POINT_VERSION,
         "a place in a server's binlogs: file, position, GTID state"),
    ]  # fmt: skip
    lines = ["| record | where | version | what it holds |", "|---|---|---:|---|"]
    lines += [f"| {name} | {where} | {version} | {what} |" for name, where, version, what in rows]
    return "\n".join(lines) + "\n"


def included(name: str) -> str:
    """``name`` (a file of the repository's top folder), its headings one level down."""
    text = (REPO / name).read_text(encoding="utf-8")
    return re.sub(r"^(#+) ", r"#\1 ", text, flags=re.MULTILINE)


def _render(match: re.Match[str]) -> str:
    if match[1] == "records":
        return records_table()
    if match[1] == "include":
        return included(match[2])
    return "```text\n" + help_text(match[2]) + "```\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """mkdocs' hook: the markers of the page replaced by what they stand for."""
    return MARKER.sub(_render, markdown)
