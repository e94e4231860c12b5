"""The WL#2325 prototype logs ("5.2.2-a_drop6p13"): read through MySQL 5.1's type permutation."""

from __future__ import annotations

from pathlib import Path

from tests.events._corpus import events_at

from binlake.events.format import FormatDescriptionEvent, PrototypeEvent, prototype_permutation
from binlake.events.load import ExecuteLoadQueryEvent

RUST = "mysql/rust_mysql_common/"


def test_permutation_only_for_prototype_versions() -> None:
    assert prototype_permutation("5.2.2-a_drop6p13-debug-log", 22) is not None
    assert prototype_permutation("5.1.1-a_drop5p3", 22) is not None
    assert prototype_permutation("5.2.2-a_drop6p13-debug-log", 27) is None  # MySQL 5.1 checks the count too
    assert prototype_permutation("5.1.23-rc-debug-log", 22) is None
    assert prototype_permutation("5.1.3-a_drop6p1", 22) is None


def test_statement_prototype_log(corpus_dir: Path) -> None:
    evs = events_at(corpus_dir, RUST + "ver_5_1-wl2325_s.001")
    fde = evs[4]
    assert isinstance(fde, FormatDescriptionEvent) and fde.type_permutation is not None
    assert fde.post_header_len(18) == 26 and fde.post_header_len(16) == 0  # EXECUTE_LOAD_QUERY, XID in 5.1 order
    types = [ev.type for ev in evs.values()]
    assert "XID_EVENT" in types and "BEGIN_LOAD_QUERY_EVENT" in types
    run = next(ev for ev in evs.values() if isinstance(ev, ExecuteLoadQueryEvent))
    assert run.query.startswith("LOAD DATA") and run.file_id >= 1


def test_row_prototype_log(corpus_dir: Path) -> None:
    # mariadb-binlog reads the stored type 16 as "Xid = 8359244358505296900": it is the table map of t1
    evs = events_at(corpus_dir, RUST + "ver_5_1-wl2325_r.001")
    tm = evs[428]
    assert isinstance(tm, PrototypeEvent) and tm.type == "TABLE_MAP_EVENT" and tm.stored_type_code == 16
    assert b"test\x00\x02t1\x00" in tm.body
    assert tm.summary() == "TABLE_MAP_EVENT of a WL#2325 prototype server (stored as type 16): 19 bytes not decoded"
    rows = evs[466]
    assert isinstance(rows, PrototypeEvent) and rows.type == "PRE_GA_WRITE_ROWS_EVENT" and b"one" in rows.body
