"""What binlake prints of decoded events: ``events``' lines, ``explain``'s tables, ``dump``'s text (:mod:`.dump`),
the change outputs (:mod:`.changes`: Debezium JSON, replay and rollback SQL) and ``stats``' report.

This module holds what the printers share: :func:`open_log`, the events of one file as a command reads them
(with ``--on-error``'s recovering reader, whose skips are said on stderr).  The command line that drives them is
:mod:`binlake.cli`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from binlake.decoder import Decryptor
from binlake.errors import BinlogError
from binlake.events.base import Event
from binlake.events.context import DecodeOptions
from binlake.reader import read_events
from binlake.schema import SchemaTracker
from binlake.storage import binlog_source

__all__ = ["open_log"]


def open_log(
    path: str,
    options: DecodeOptions,
    *,
    command: str,
    on_error: str = "stop",
    start: int | None = None,
    stop: int | None = None,
    decryptor: Decryptor | None = None,
    schema: SchemaTracker | None = None,
    follow: bool = False,
    idle_timeout: float | None = None,
) -> Iterator[Event]:
    """The events of ``path`` (a local path, or a URI of :mod:`binlake.storage`: ``s3://bucket/binlog.000042``) for
    a subcommand: :func:`~binlake.reader.read_events`, or under ``--on-error skip-*`` the recovering reader, which
    reports each skip and a closing summary on stderr, prefixed ``binlake COMMAND:`` (never a silent skip)."""
    source = binlog_source(path)
    if on_error == "stop":
        yield from read_events(
            source,
            options=options,
            start=start,
            stop=stop,
            decryptor=decryptor,
            schema=schema,
            follow=follow,
            idle_timeout=idle_timeout,
        )
        return
    if follow:
        raise BinlogError("--follow reads a log being written: it cannot be combined with --on-error skip-*")
    from binlake.recovery import read_events_recovering

    events = read_events_recovering(
        source,
        on_error=on_error,  # type: ignore[arg-type]
        on_skip=lambda skip: print(f"binlake {command}: skipped {skip}", file=sys.stderr),
        options=options,
        decryptor=decryptor,
        schema=schema,
    )
    for ev in events:
        pos = ev.header.pos if ev.header.in_payload is None else ev.header.in_payload
        if stop is not None and pos >= stop:
            break
        if start is None or pos >= start:
            yield ev
    print(f"binlake {command}: {events.summary}", file=sys.stderr)
