"""Row changes turned back, as ``mariadb-binlog --flashback`` turns them: the undo of a rows event.

``Rows_log_event::change_to_flashback_event`` (MariaDB ``sql/log_event_client.cc``) inverts one event: a
WRITE_ROWS becomes a DELETE_ROWS of the same images and the other way round, an UPDATE_ROWS gets its before and
after images exchanged, and the rows of the event are put in reverse order.  Where the after image does not hold
every column (``binlog_row_image=MINIMAL``/``NOBLOB``) the tool exchanges only the columns present in both images
and keeps each image's own column set; binlake does the same, column by column, where the tool itself stops with
"Error row length: 0" on such events.  A MINIMAL image cannot hold what was not logged: the undo of a MINIMAL
update restores only the changed columns that were also logged in the before image.

Which events and statements are reversed (the whole file, statement by statement) is the printer's business
(:mod:`binlake.render.dump.rows`); this module only inverts one event's row changes.

Example::

    >>> invert("insert", [(None, (1, b"a")), (None, (2, b"b"))])
    ('delete', [((2, b'b'), None), ((1, b'a'), None)])
    >>> invert("update", [((1, b"old"), (1, b"new"))])
    ('update', [((1, b'new'), (1, b'old'))])
"""

from __future__ import annotations

from collections.abc import Sequence

from binlake.values.row import ABSENT

__all__ = ["FLASHBACK_KIND", "invert", "swap_images"]

Image = tuple[object, ...]
Change = tuple["Image | None", "Image | None"]

#: What each kind of row change becomes when undone.
FLASHBACK_KIND = {"insert": "delete", "delete": "insert", "update": "update"}


def swap_images(before: Image, after: Image) -> tuple[Image, Image]:
    """Exchange the values of the columns present in both images; each image keeps its own columns.

    With full images this is a plain exchange; with MINIMAL images a column logged only in one image keeps its
    value there (``fill_row_image`` after the per-column swap in ``change_to_flashback_event``).

    >>> swap_images((1, ABSENT), (2, b"x"))
    ((2, ABSENT), (1, b'x'))
    """
    new_before = tuple(a if b is not ABSENT and a is not ABSENT else b for b, a in zip(before, after, strict=True))
    new_after = tuple(b if b is not ABSENT and a is not ABSENT else a for b, a in zip(before, after, strict=True))
    return new_before, new_after


def invert(kind: str, changes: Sequence[Change]) -> tuple[str, list[Change]]:
    """The kind and row changes of the undo of one rows event (rows in reverse order)."""
    out: list[Change] = []
    for before, after in reversed(changes):
        if kind == "update":
            assert before is not None and after is not None
            out.append(swap_images(before, after))
        else:
            out.append((after, before))
    return FLASHBACK_KIND[kind], out
