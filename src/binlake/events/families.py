"""Importing this module registers every event family's decoders (see :func:`binlake.events.base.registry`).

A new event type is one new module (or a function in an existing family) plus one line here.
"""

from binlake.events import (  # noqa: F401
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
