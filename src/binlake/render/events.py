"""``binlake events FILE...``: one line per event (position, type, size, summary), or one JSON object per line.

Events inside a TRANSACTION_PAYLOAD follow it; their position is their offset in the uncompressed payload, shown
as ``PAYLOAD_POS+OFFSET`` in text and as ``pos`` with ``in_payload`` in JSON.

Example::

    $ binlake events binlog.000024 --type TABLE_MAP_EVENT
           620  TABLE_MAP_EVENT                  68  table_id 95: `presentation`.`person` (2 columns)
    $ binlake events binlog.000024 --json --stop-position 126
    {"pos": 4, "end_pos": 126, "size": 122, "type": "FORMAT_DESCRIPTION_EVENT", "type_code": 15, ...}
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import TextIO

from binlake.errors import BinlogError
from binlake.events.base import Event, EventType
from binlake.render import add_decode_arguments, decode_options, decryptor_of, error_line, open_log

__all__ = ["add_events_arguments", "event_json", "event_line", "events_main", "parse_types"]


def parse_types(values: Iterable[str]) -> frozenset[int]:
    """Type codes of ``--type`` values: server names (``TABLE_MAP_EVENT``, case-insensitive, the ``_EVENT`` or
    ``_LOG_EVENT`` suffix optional) or numbers, several per value separated by commas.

    >>> sorted(parse_types(["TABLE_MAP_EVENT", "write_rows,2", "gtid_log"]))
    [2, 19, 30, 33]

    Raises :class:`ValueError` naming an unknown type.
    """
    names = EventType.__members__
    codes = set()
    for value in values:
        for item in filter(None, (v.strip() for v in value.split(","))):
            if item.isdigit():
                codes.add(int(item))
                continue
            key = item.upper()
            match = next((names[k] for k in (key, f"{key}_EVENT", f"{key}_LOG_EVENT") if k in names), None)
            if match is None:
                raise ValueError(f"unknown event type {item!r} (give a server name such as TABLE_MAP_EVENT, or a code)")
            codes.add(int(match))
    return frozenset(codes)


def event_json(ev: Event, file: str | None = None) -> dict[str, object]:
    """The JSON object ``binlake events --json`` prints for ``ev``."""
    h = ev.header
    out: dict[str, object] = {} if file is None else {"file": file}
    out.update(
        pos=h.pos,
        end_pos=h.end_pos,
        size=h.event_size,
        type=h.type,
        type_code=h.type_code,
        server_id=h.server_id,
        timestamp=h.timestamp,
        log_pos=h.log_pos,
        flags=h.flags,
        in_payload=h.in_payload,
        summary=ev.summary(),
    )
    return out


def event_line(ev: Event) -> str:
    """The text line ``binlake events`` prints for ``ev``."""
    h = ev.header
    pos = str(h.pos) if h.in_payload is None else f"{h.in_payload}+{h.pos}"
    return f"{pos:>12}  {h.type:<28} {h.event_size:>8}  {ev.summary()}".rstrip()


def add_events_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, listed in the order given")
    parser.add_argument("--start-position", type=int, metavar="POS", help="first event to list (an event start)")
    parser.add_argument("--stop-position", type=int, metavar="POS", help="list only events that start before POS")
    parser.add_argument(
        "--type",
        action="append",
        dest="types",
        metavar="TYPE",
        default=[],
        help="list only events of this type (server name such as TABLE_MAP_EVENT, or code); repeatable",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--follow",
        action="store_true",
        help="at the end of the (last) file, wait for the server to write more, like tail -f (Ctrl-C stops)",
    )
    parser.add_argument(
        "--idle-timeout", type=float, metavar="SECONDS", help="with --follow: stop after this long without new bytes"
    )
    add_decode_arguments(parser)


def events_main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``binlake events``; return the exit status (:attr:`~binlake.errors.ExitStatus.ERROR` when any file stopped
    at a BinlogError: the others are listed still)."""
    out = sys.stdout if out is None else out
    if getattr(args, "idle_timeout", None) is not None and not getattr(args, "follow", False):
        raise BinlogError("--idle-timeout: only with --follow (it bounds the wait for new bytes)")
    try:
        wanted = parse_types(args.types)
    except ValueError as e:
        raise BinlogError(str(e)) from None
    options = decode_options(args)
    status = 0
    for i, path in enumerate(args.files):
        if len(args.files) > 1 and not args.json:
            out.write(f"# {path}\n")
        follow = bool(getattr(args, "follow", False)) and i == len(args.files) - 1
        try:
            for ev in open_log(
                path,
                options,
                command="events",
                on_error=args.on_error,
                start=args.start_position,
                stop=args.stop_position,
                decryptor=decryptor_of(args),
                follow=follow,
                idle_timeout=getattr(args, "idle_timeout", None),
            ):
                if wanted and ev.header.type_code not in wanted:
                    continue
                out.write((json.dumps(event_json(ev, path)) if args.json else event_line(ev)) + "\n")
                if follow:
                    out.flush()
        except BinlogError as e:
            out.flush()
            print(error_line("events", e, path, on_error=args.on_error), file=sys.stderr)
            status = e.exit_status
    return status
