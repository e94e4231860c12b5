"""Table maps without column names (MINIMAL, NO_LOG metadata) named from an earlier FULL map or from the DDL, on
the corpus files a real MariaDB wrote: 000002 (every column type, FULL metadata), then 000012 (MINIMAL) and 000013
(NO_LOG) writing to the same tables.  No Spark needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.events.query import QueryEvent
from binlake.events.table_map import TableMapEvent
from binlake.reader import read_events
from binlake.schema import SchemaTracker
from binlake.spark.enrich import Namer, fits, named
from binlake.spark.extract import column_info


def _maps(path: Path, tracker: SchemaTracker | None = None) -> list[TableMapEvent]:
    """The table maps of a file; ``tracker`` follows the file's DDL on the way."""
    out = []
    for ev in read_events(path):
        if isinstance(ev, TableMapEvent):
            out.append(ev)
        elif tracker is not None and isinstance(ev, QueryEvent):
            tracker.observe(ev)
    return out


@pytest.fixture(scope="module")
def files(corpus_dir: Path) -> dict[str, Path]:
    d = corpus_dir / "mariadb" / "binlogs"
    return {"full": d / "corpus-bin.000002", "minimal": d / "corpus-bin.000012", "nolog": d / "corpus-bin.000013"}


@pytest.fixture(scope="module")
def full_maps(files: dict[str, Path]) -> dict[tuple[str, str], TableMapEvent]:
    """The last FULL map of every table of the types workload."""
    return {(tm.schema, tm.table): tm for tm in _maps(files["full"])}


@pytest.mark.parametrize("which", ["minimal", "nolog"])
def test_unnamed_maps_borrow_every_fact_of_the_last_full_map(
    files: dict[str, Path], full_maps: dict[tuple[str, str], TableMapEvent], which: str
) -> None:
    namer = Namer()
    for (schema, table), tm in full_maps.items():
        namer.learn(f"{schema}.{table}", tm)
    unnamed = [tm for tm in _maps(files[which]) if not named(tm)]
    assert len(unnamed) >= 6
    for tm in unnamed:
        full = full_maps[(tm.schema, tm.table)]
        cols = namer.columns(f"{tm.schema}.{tm.table}", tm)
        assert cols is not None, tm.table
        assert [c.name for c in cols] == full.column_names
        # every fact the FULL map gives, the named columns give: names, key, signedness, charsets, members
        assert [column_info(c, "") for c in cols] == [column_info(c, "") for c in full.columns]
        assert [c.pk_position for c in cols] == [c.pk_position for c in full.columns]
    if which == "nolog":  # NO_LOG maps lack even signedness: the borrowed facts make BIGINT UNSIGNED unsigned
        t_int = next(tm for tm in unnamed if tm.table == "t_int")
        assert any(c.unsigned is None for c in t_int.columns)
        cols = namer.columns("corpus_types.t_int", t_int)
        assert cols is not None and [c.name for c in cols if c.unsigned] == [
            "tiu",
            "siu",
            "miu",
            "iu",
            "biu",
            "tz",
            "iz",
            "biu_nn",
        ]


def test_a_map_of_another_shape_borrows_nothing(full_maps: dict[tuple[str, str], TableMapEvent]) -> None:
    t_int = full_maps[("corpus_types", "t_int")]
    t_char = full_maps[("corpus_types", "t_char")]
    assert fits(t_int.columns, [column_info(c, n) for c, n in zip(t_int.columns, t_int.column_names, strict=True)])
    assert not fits(
        t_int.columns, [column_info(c, n) for c, n in zip(t_char.columns, t_char.column_names, strict=True)]
    )
    namer = Namer()
    namer.learn("corpus_types.t_int", t_char)  # the wrong table's facts under this key
    assert namer.columns("corpus_types.t_int", t_int) is None


def test_names_from_the_ddl_and_the_ddl_wins_over_stale_facts(
    files: dict[str, Path], full_maps: dict[tuple[str, str], TableMapEvent]
) -> None:
    tracker = SchemaTracker()
    _maps(files["full"], tracker)  # the types workload's CREATE TABLEs
    minimal = [tm for tm in _maps(files["minimal"]) if not named(tm)]
    namer = Namer(tracker)  # no named map seen: the DDL names them
    for tm in minimal:
        cols = namer.columns(f"{tm.schema}.{tm.table}", tm)
        full = full_maps[(tm.schema, tm.table)]
        assert cols is not None and [c.name for c in cols] == full.column_names
        assert [c.pk_position for c in cols] == [c.pk_position for c in full.columns], tm.table  # the DDL's key
    # a column renamed since the FULL map (same types): the facts are stale, the DDL's names hold
    t_int = next(tm for tm in minimal if tm.table == "t_int")
    tracker.execute("ALTER TABLE corpus_types.t_int RENAME COLUMN ti TO ti_renamed")
    namer = Namer(tracker)
    namer.learn("corpus_types.t_int", full_maps[("corpus_types", "t_int")])
    cols = namer.columns("corpus_types.t_int", t_int)
    assert cols is not None and cols[1].name == "ti_renamed" and cols[0].name == "id"
    # MINIMAL maps log signedness: it is the map's, not the DDL's
    assert [c.unsigned for c in cols] == [c.unsigned for c in t_int.columns]


def test_a_sequence_gets_the_row_key_of_its_one_row(corpus_dir: Path) -> None:
    """corpus-bin.000004's sequence seq1 (FULL metadata, no key logged: a sequence has none) gets the row key of
    its one row from its CREATE SEQUENCE; a table map of any other keyless table stays as logged."""
    tracker = SchemaTracker()
    maps = _maps(corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004", tracker)
    namer = Namer(tracker)
    seq = [tm for tm in maps if tm.table == "seq1"][-1]
    assert seq.primary_key == ()
    keyed = namer.keyed(seq)
    assert [keyed.column_names[i] for i in keyed.primary_key] == [
        "minimum_value",
        "maximum_value",
        "start_value",
        "increment",
        "cache_size",
        "cycle_option",
    ]
    keyless = [tm for tm in maps if not tm.primary_key and tm.table != "seq1"]
    assert keyless and all(namer.keyed(tm) is tm for tm in keyless)
