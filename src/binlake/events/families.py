"""Importing this module registers every event family's decoders (see :func:`binlake.events.base.registry`).

A new event type is one new module (or a function in an existing family) plus one line here.
"""

from binlake.events import (
    base,
    control,
    format,
    gtid,
    load,
    mariadb,
    payload,
    query,
    rows,
    table_map,
)
from binlake.events.base import Event, EventHeader, quicken

# every event class (and the header) of the families built faster: see quicken
quicken(
    [
        EventHeader,
        *(
            v
            for m in (base, control, format, gtid, load, mariadb, payload, query, rows, table_map)
            for v in vars(m).values()
            if isinstance(v, type) and issubclass(v, Event) and v.__module__ == m.__name__
        ),
    ]
)
