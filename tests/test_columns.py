"""What a column is (:mod:`binlake.columns`): table maps without column names (MINIMAL, NO_LOG metadata) described
from an earlier FULL map, from the DDL, or from the server's definition, on the corpus files a real MariaDB wrote:
000002 (every column type, FULL metadata), then 000012 (MINIMAL) and 000013 (NO_LOG) writing to the same tables.
No Spark, no server."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from binlake.coltypes import Column
from binlake.columns import ColumnCatalog, fits, named
from binlake.events.query import QueryEvent
from binlake.events.table_map import TableMapEvent
from binlake.ingest.extract import column_info
from binlake.reader import read_events
from binlake.schema import SchemaTracker, TableSchema
from binlake.values.collations import charset_name


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


@pytest.fixture(scope="module")
def ddl(corpus_dir: Path) -> SchemaTracker:
    """The DDL of the corpus files before the MINIMAL one (the types workload's databases and tables)."""
    tracker = SchemaTracker()
    for n in range(1, 12):
        _maps(corpus_dir / "mariadb" / "binlogs" / f"corpus-bin.{n:06d}", tracker)
    return tracker


def _facts(columns: tuple[Column, ...]) -> list[tuple[object, ...]]:
    """What a column is, as the lake and the outputs read it: name, signedness of numbers, whether text and its
    charset, members, geometry type, key."""
    return [
        (
            c.name,
            c.unsigned if c.is_numeric else None,
            c.is_text,
            charset_name(c.charset) if c.is_character and c.charset is not None else None,
            c.enum_values,
            c.set_values,
            c.pk_position,
        )
        for c in columns
    ]


@pytest.mark.parametrize("which", ["minimal", "nolog"])
def test_unnamed_maps_borrow_every_fact_of_the_last_full_map(
    files: dict[str, Path], full_maps: dict[tuple[str, str], TableMapEvent], which: str
) -> None:
    catalog = ColumnCatalog(learned={k: tm.columns for k, tm in full_maps.items()})
    unnamed = [tm for tm in _maps(files[which]) if not named(tm)]
    assert len(unnamed) >= 6
    for tm in unnamed:
        full = full_maps[(tm.schema, tm.table)]
        cols = catalog.columns(tm)
        assert [c.name for c in cols] == full.column_names
        # every fact the FULL map gives, the named columns give: names, key, signedness, charsets, members
        assert [column_info(c, "") for c in cols] == [column_info(c, "") for c in full.columns]
        assert [c.pk_position for c in cols] == [c.pk_position for c in full.columns]
    if which == "nolog":  # NO_LOG maps lack even signedness: the borrowed facts make BIGINT UNSIGNED unsigned
        t_int = next(tm for tm in unnamed if tm.table == "t_int")
        assert any(c.unsigned is None for c in t_int.columns)
        cols = catalog.columns(t_int)
        assert [c.name for c in cols if c.unsigned] == ["tiu", "siu", "miu", "iu", "biu", "tz", "iz", "biu_nn"]


@pytest.mark.parametrize("which", ["minimal", "nolog"])
def test_the_ddl_alone_gives_what_the_full_map_gives(
    files: dict[str, Path], full_maps: dict[tuple[str, str], TableMapEvent], ddl: SchemaTracker, which: str
) -> None:
    """No FULL map learned: the DDL the binlogs logged gives each column of a MINIMAL or NO_LOG map the name,
    signedness, text-or-bytes and charset, members and key the FULL map of the same table logs (the lake and the
    outputs then read the three files alike)."""
    catalog = ColumnCatalog(ddl)
    unnamed = [tm for tm in _maps(files[which]) if not named(tm)]
    assert {tm.table for tm in unnamed} >= {"t_int", "t_char", "t_enum_set", "t_geo", "t_net", "t_decimal"}
    for tm in unnamed:
        full = full_maps[(tm.schema, tm.table)]
        assert _facts(catalog.columns(tm)) == _facts(full.columns), tm.table
    t_char = next(tm for tm in unnamed if tm.table == "t_char")
    if which == "nolog":
        assert all(c.charset is None for c in t_char.columns)  # the map says none of it
    texts = {c.name: charset_name(c.charset or 0) for c in catalog.columns(t_char) if c.is_text}
    assert texts["c10_sjis"] == "sjis" and texts["c10_u32"] == "utf32" and texts["c_nn"] == "utf8mb4"
    assert "cbin10" not in texts


def test_a_map_of_another_shape_borrows_nothing(full_maps: dict[tuple[str, str], TableMapEvent]) -> None:
    t_int = full_maps[("corpus_types", "t_int")]
    t_char = full_maps[("corpus_types", "t_char")]
    assert fits(t_int.columns, t_int.columns) and not fits(t_int.columns, t_char.columns)
    nolog = replace(t_int, columns=tuple(replace(c, name=None, unsigned=None, pk_position=None) for c in t_int.columns))
    catalog = ColumnCatalog(learned={("corpus_types", "t_int"): t_char.columns})  # the wrong table's facts
    assert catalog.columns(nolog) == nolog.columns


def test_names_from_the_ddl_and_the_ddl_wins_over_stale_facts(
    files: dict[str, Path], full_maps: dict[tuple[str, str], TableMapEvent]
) -> None:
    tracker = SchemaTracker()
    _maps(files["full"], tracker)  # the types workload's CREATE TABLEs
    minimal = [tm for tm in _maps(files["minimal"]) if not named(tm)]
    catalog = ColumnCatalog(tracker)  # no named map seen: the DDL names them
    for tm in minimal:
        cols = catalog.columns(tm)
        full = full_maps[(tm.schema, tm.table)]
        assert [c.name for c in cols] == full.column_names
        assert [c.pk_position for c in cols] == [c.pk_position for c in full.columns], tm.table  # the DDL's key
    # a column renamed since the FULL map (same types): the facts are stale, the DDL's names hold
    t_int = next(tm for tm in minimal if tm.table == "t_int")
    tracker.execute("ALTER TABLE corpus_types.t_int RENAME COLUMN ti TO ti_renamed")
    catalog = ColumnCatalog(tracker, learned={("corpus_types", "t_int"): full_maps[("corpus_types", "t_int")].columns})
    cols = catalog.columns(t_int)
    assert cols[1].name == "ti_renamed" and cols[0].name == "id"
    # MINIMAL maps log signedness: it is the map's, not the DDL's
    assert [c.unsigned for c in cols] == [c.unsigned for c in t_int.columns]


def test_a_sequence_gets_the_row_key_of_its_one_row(corpus_dir: Path) -> None:
    """corpus-bin.000004's sequence seq1 (FULL metadata, no key logged: a sequence has none) gets the row key of
    its one row from its CREATE SEQUENCE; a FULL map of any other keyless table stays as logged."""
    tracker = SchemaTracker()
    maps = _maps(corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004", tracker)
    catalog = ColumnCatalog(tracker)
    seq = [tm for tm in maps if tm.table == "seq1"][-1]
    assert seq.primary_key == ()
    described = catalog.describe(seq)
    assert [described.names[i] for i in described.key] == [
        "minimum_value",
        "maximum_value",
        "start_value",
        "increment",
        "cache_size",
        "cycle_option",
    ]
    keyless = [tm for tm in maps if not tm.primary_key and tm.table != "seq1"]
    assert keyless and all(catalog.describe(tm).key == () for tm in keyless)


class _Server:
    """A schema source that counts the questions it is asked."""

    def __init__(self, tables: dict[tuple[str, str], TableSchema]) -> None:
        self.tables = tables
        self.asked: list[tuple[str, str]] = []

    def table(self, schema: str, name: str) -> TableSchema | None:
        self.asked.append((schema, name))
        return self.tables.get((schema, name))


def test_the_servers_definition_fills_what_the_binlogs_do_not_say(
    files: dict[str, Path], full_maps: dict[tuple[str, str], TableMapEvent], ddl: SchemaTracker
) -> None:
    """A stream that never saw the tables' DDL (a --host stream started after it) and logs NO_LOG maps: the
    server's definitions give what the FULL maps would, each table asked once; a definition whose names differ
    from the DDL the stream did see is not taken; a table the DDL describes whole is never asked."""
    server = _Server(dict(ddl.tables))
    catalog = ColumnCatalog(SchemaTracker(), server)
    nolog = [tm for tm in _maps(files["nolog"]) if not named(tm)]
    for tm in nolog + nolog:
        assert _facts(catalog.columns(tm)) == _facts(full_maps[(tm.schema, tm.table)].columns), tm.table
    assert sorted(server.asked) == sorted({(tm.schema, tm.table) for tm in nolog})

    t_char = next(tm for tm in nolog if tm.table == "t_char")
    key = ("corpus_types", "t_char")
    truth = ddl.tables[key]
    full = _facts(full_maps[key].columns)
    # the DDL describes the table whole: the server is not asked
    server = _Server({key: truth})
    assert _facts(ColumnCatalog(ddl, server).columns(t_char)) == full and server.asked == []
    # the DDL the stream saw left the charsets unknown (a --schema file without them): the server gives them
    unknown = SchemaTracker({key: replace(truth, columns=tuple(replace(c, charset=None) for c in truth.columns))})
    assert not any(c.is_text for c in ColumnCatalog(unknown).columns(t_char))
    assert _facts(ColumnCatalog(unknown, server).columns(t_char)) == full and server.asked == [key]
    # unless the server names the columns otherwise (its definition is newer than the stream): nothing from it
    other = replace(truth, columns=(truth.columns[0], replace(truth.columns[1], name="x"), *truth.columns[2:]))
    cols = ColumnCatalog(unknown, _Server({key: other})).columns(t_char)
    assert cols[1].name == "c0" and not any(c.is_text for c in cols)


def test_a_charset_the_map_length_refutes_is_not_taken(full_maps: dict[tuple[str, str], TableMapEvent]) -> None:
    """A VARCHAR(10) column whose map holds 40 bytes is not latin1 (whatever a DDL says): its values stay bytes."""
    tracker = SchemaTracker()
    tracker.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10) CHARACTER SET latin1)", "d")
    cols = (Column.build(0, 3, b""), Column.build(1, 15, (40).to_bytes(2, "little")))
    tm = replace(full_maps[("corpus_types", "t_int")], schema="d", table="t", columns=cols)
    described = ColumnCatalog(tracker).columns(tm)
    assert [c.name for c in described] == ["id", "v"] and described[1].charset is None and not described[1].is_text
    tracker.execute("ALTER TABLE d.t MODIFY v VARCHAR(10) CHARACTER SET utf8mb4")
    assert ColumnCatalog(tracker).columns(tm)[1].is_text
