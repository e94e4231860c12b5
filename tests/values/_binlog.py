"""Row images of corpus binlogs for the value-family tests, read through binlake's own reader and rows API.

``events(path)`` yields every rows event with its table map and its rows as *stored* values
(``RowsEvent.rows(typed=False)``): what the value readers under test return, before any converter.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from binlake.events.rows import RowsEvent as _Rows
from binlake.events.table_map import TableMapEvent
from binlake.reader import read_events

# as the corpus_dir fixture (tests/conftest.py) finds it: $BINLAKE_CORPUS, else ../shared/corpus beside the checkout
CORPUS = Path(os.environ.get("BINLAKE_CORPUS") or Path(__file__).resolve().parents[2].parent / "shared" / "corpus")


@dataclass
class RowsEvent:
    type_code: int
    table: TableMapEvent
    rows: list[tuple[tuple[object, ...] | None, tuple[object, ...] | None]]


def events(path: Path) -> Iterator[RowsEvent]:
    """Every rows event of a binlog file with its decoded row images (stored values)."""
    for ev in read_events(path):
        if isinstance(ev, _Rows) and ev.table_map is not None:
            yield RowsEvent(ev.type_code, ev.table_map, ev.rows(typed=False))
