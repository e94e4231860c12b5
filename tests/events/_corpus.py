"""Shared helper of the event-family tests: the events of one corpus file, by position."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from binlake.events.base import Event
from binlake.reader import read_events


@cache
def _events(path: str) -> dict[int, Event]:
    return {ev.header.pos: ev for ev in read_events(path) if ev.header.in_payload is None}


def events_at(corpus_dir: Path, rel: str) -> dict[int, Event]:
    """``{position: event}`` of the top-level events of ``corpus_dir / rel``."""
    return _events(str(corpus_dir / rel))


def events_of(corpus_dir: Path, rel: str) -> list[Event]:
    """Every event of ``corpus_dir / rel``, payload events included, in order."""
    return list(read_events(corpus_dir / rel))
