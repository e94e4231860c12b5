"""``binlake events FILE...`` (:mod:`binlake.cli.events`): one line per event (position, type, size, summary), or one
JSON object per line.

Events inside a TRANSACTION_PAYLOAD follow it; their position is their offset in the uncompressed payload, shown
as ``PAYLOAD_POS+OFFSET`` in text and as ``pos`` with ``in_payload`` in JSON.

Example::

    $ binlake events binlog.000024 --type TABLE_MAP_EVENT
           620  TABLE_MAP_EVENT                  68  table_id 95: `presentation`.`person` (2 columns)
    $ binlake events binlog.000024 --json --stop-position 126
    {"pos": 4, "end_pos": 126, "size": 122, "type": "FORMAT_DESCRIPTION_EVENT", "type_code": 15, ...}
"""

from __future__ import annotations

from collections.abc import Iterable

from binlake.events.base import Event, EventType

__all__ = ["event_json", "event_line", "parse_types"]


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
