"""A live ingest reads a table again after an ALTER TABLE left values NULL in its current state
(:func:`binlake.ingest.live._read_again`): the tables of the batch, each once, as globs that match it alone; where
the server refuses, the ingest goes on and says why (the values stay NULL, as its report says).  The whole path
against a server: tests/spark/test_snapshot.py::test_a_table_an_alter_left_null_is_read_again."""

from __future__ import annotations

import io
from pathlib import Path

from binlake.changes.filters import ChangeFilter
from binlake.errors import ReplicationError
from binlake.ingest.live import _read_again
from binlake.ingest.progress import Progress
from binlake.ingest.run import IngestResult, warnings
from binlake.lake.current import Unconverted
from binlake.lake.lake import Lake
from binlake.lake.names import table_dir
from binlake.replication.options import ConnectionOptions


def _result() -> IngestResult:
    r = IngestResult()
    key = table_dir("shop", "orders*")  # a name a glob would read as more than itself
    r.unconverted = [
        Unconverted(key, "f", 3, "ALTER TABLE `orders*` MODIFY f TEXT", "the server's %g text"),
        Unconverted(key, "g", 1, "ALTER TABLE `orders*` MODIFY g TEXT", "the server's %g text"),
    ]
    return r


def test_the_tables_are_read_again_once_each(tmp_path: Path) -> None:
    asked: list[list[str]] = []
    r, out = _result(), io.StringIO()
    _read_again(
        Lake(str(tmp_path)),
        ConnectionOptions(host="h", user="u", server_id=9),
        lambda _l, _o, t: asked.append(t),
        r,
        Progress(None, out),
    )
    assert len(asked) == 1 and len(asked[0]) == 1
    wanted = ChangeFilter(tables=tuple(asked[0]))
    assert wanted.wants_table("shop", "orders*") and not wanted.wants_table("shop", "orders_2")
    assert r.reread == ["shop.orders*"]
    assert "reading shop.orders* again" in out.getvalue()
    text = "\\n".join(warnings(r))
    assert "read again from the server, so their current state equals it: shop.orders*" in text
    assert "--snapshot DB.TABLE" not in text


def test_a_server_that_refuses_leaves_them_null_and_says_why(tmp_path: Path) -> None:
    def refuse(*_: object) -> None:
        raise ReplicationError("user repl@% lacks SELECT on shop.orders*")

    r, out = _result(), io.StringIO()
    _read_again(Lake(str(tmp_path)), ConnectionOptions(host="h", user="u", server_id=9), refuse, r, Progress(None, out))
    assert r.reread == []
    assert "cannot read them again (user repl@% lacks SELECT on shop.orders*)" in out.getvalue()
    assert "--snapshot DB.TABLE" in "\\n".join(warnings(r))
