"""Every row of every corpus binlog decodes, and the values equal what the servers' own tools printed.

References: ``mariadb-binlog -vv`` (``mariadb/reference/*.decode-rows-meta.txt.gz``, and
``mysql-reference/mariadb-binlog-10.11/**.vv.txt`` for the MySQL files up to the first event it does not know),
MySQL's ``mysqlbinlog -v`` (``mysql-reference/binlog-parser/plaintext-*``): each ``###   @N=value`` line is compared
with the stored value rendered by the value families' ``RENDER`` (the text ``mariadb-binlog`` prints).  Both tools
print the rows of a multi-event statement under its last (STMT_END_F) event, so images are grouped by statement.
Values of MySQL-only types and events (JSON, PARTIAL_UPDATE_ROWS, VECTOR, TRANSACTION_PAYLOAD) are asserted from
the SQL that wrote them (``mysql-INDEX.md`` notes).
"""

from __future__ import annotations

import datetime as dt
import gzip
import re
import struct
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from binlake.coltypes import Column
from binlake.errors import BinlogError
from binlake.events.base import Event
from binlake.events.rows import RowsEvent
from binlake.reader import read_events
from binlake.values import decimal, enum_set, json_binary, numeric, spatial, strings, temporal, vector
from binlake.values.row import ABSENT

pytestmark = pytest.mark.corpus

RENDER: dict[int, Callable[[Column, object], str]] = {}
for _family in (numeric, decimal, temporal, strings, json_binary, spatial, enum_set, vector):
    RENDER.update(_family.RENDER)

# Files whose event stream ends in an error by design (mysql-INDEX.md / MANIFEST.tsv): damaged or encrypted.
UNREADABLE = {
    "mariadb/binlogs/corpus-bin.000022": "encrypted (read through its decrypted copy instead)",
    "mysql/canal/tsdb_mysql-bin.000001": "DAMAGED COPY: not a binlog",
    "mysql/rust_mysql_common/binlog_truncated_event.000001": "CORRUPT ON PURPOSE: 14 bytes",
    "mysql/rust_mysql_common/binlog_truncated_prev_gtid_event.000001": "CORRUPT ON PURPOSE: truncated",
    "mysql/rust_mysql_common/corrupt-relay-bin.000624": "CORRUPT ON PURPOSE: broken QUERY event",
}


def binlogs(corpus: Path) -> Iterator[Path]:
    yield from sorted((corpus / "mariadb" / "binlogs").glob("corpus-bin.*"))
    yield corpus / "mariadb" / "reference" / "remote-raw-corpus-bin.000022"
    yield from sorted(p for p in (corpus / "mysql").glob("*/*") if p.is_file())


def rel(corpus: Path, path: Path) -> str:
    return path.relative_to(corpus).as_posix()


def rows_events(path: Path) -> Iterator[RowsEvent]:
    for ev in read_events(path):
        if isinstance(ev, RowsEvent):
            yield ev


def test_every_row_of_every_file_decodes(corpus_dir: Path) -> None:
    """Every rows event, MariaDB 5.3 fractional TIME/DATETIME/TIMESTAMP (types 11/12/7) included: those log no fsp,
    which mariadb-binlog fails on, but binlake takes it from the CREATE TABLE earlier in the file (binlake.schema;
    corpus-bin.000003 and tiflow's MariaDB 10.0.17 log, values checked below)."""
    failures: list[str] = []
    total = 0
    for path in binlogs(corpus_dir):
        name = rel(corpus_dir, path)
        try:
            events: list[Event] = list(read_events(path))
        except BinlogError as e:
            if name not in UNREADABLE:
                failures.append(f"{name}: {e}")
            continue
        if name in UNREADABLE:
            failures.append(f"{name}: read to the end, but listed as unreadable")
        for ev in events:
            if not isinstance(ev, RowsEvent):
                continue
            for typed in (True, False):
                try:
                    changes = ev.rows(typed)
                except BinlogError as e:
                    assert e.pos == ev.header.pos, e
                    failures.append(f"{name}: {e}")
                    continue
                total += len(changes) if typed else 0
    assert not failures, "\n".join(failures)
    assert total > 58_000  # row changes


# -- values against the tools' text -----------------------------------------------------------------------------

_VALUE = re.compile(r"^###   @(\d+)=(.*)$")


def reference_images(
    path: Path, text: Callable[[str], str] | None = None
) -> tuple[dict[int, list[dict[int, str]]], int]:
    """Images printed under each ``# at POS`` (one dict ``{N: text}`` per SET/WHERE), and the last POS printed.

    ``text`` makes each value's entry from its field, ``@N=value /* TYPE meta=... */``; by default the value
    without the ``-vv`` type comment."""
    images: dict[int, list[dict[int, str]]] = defaultdict(list)
    pos = 0
    current: dict[int, str] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# at "):
                pos = int(line[5:])
            elif line in ("### SET", "### WHERE"):
                current = {}
                images[pos].append(current)
            elif m := _VALUE.match(line):
                current[int(m[1])] = text(line[6:]) if text is not None else _without_comment(m[2])
    return images, pos


def _without_comment(value: str) -> str:
    return value.rsplit(" /* ", 1)[0] if " /* " in value else value  # -vv type comment


def render(col: Column, value: object) -> str:
    return "NULL" if value is None else RENDER[col.real_type_code](col, value)


def compare(binlog: Path, reference: Path) -> tuple[int, list[str]]:
    """Values checked and mismatches of ``binlog`` against a ``-v``/``-vv`` text, statement by statement."""
    expected, last = reference_images(reference)
    pending: list[tuple[tuple[Column, ...], tuple[object, ...]]] = []
    checked, errors = 0, []
    for ev in rows_events(binlog):
        if ev.header.pos >= last or ev.header.in_payload is not None:  # the tool stopped before this event
            break
        assert ev.table_map is not None
        for change in ev.rows(typed=False):
            pending += [(ev.table_map.columns, image) for image in change if image is not None]
        if not ev.stmt_end:
            continue
        want = expected.get(ev.header.pos, [])
        if len(want) != len(pending):
            errors.append(f"at {ev.header.pos}: {len(pending)} images, the reference has {len(want)}")
        for (cols, image), ref in zip(pending, want, strict=False):
            got = {i + 1: render(cols[i], v) for i, v in enumerate(image) if v is not ABSENT}
            if got != ref:
                errors.append(f"at {ev.header.pos}: {got} != {ref}")
            checked += len(ref)
        pending = []
    return checked, errors


def mariadb_pairs(corpus: Path) -> Iterator[tuple[Path, Path]]:
    for ref in sorted((corpus / "mariadb" / "reference").glob("corpus-bin.*.decode-rows-meta.txt.gz")):
        yield corpus / "mariadb" / "binlogs" / ref.name.split(".decode")[0], ref


def mysql_pairs(corpus: Path) -> Iterator[tuple[Path, Path]]:
    refs = corpus / "mysql-reference"
    for path in sorted(p for p in (corpus / "mysql").glob("*/*") if p.is_file()):
        name = rel(corpus, path)
        vv = refs / "mariadb-binlog-10.11" / path.parent.name / f"{path.name}.vv.txt"
        if vv.is_file() and name not in UNREADABLE:
            yield path, vv
    parser = refs / "binlog-parser"
    for plain in [*sorted(parser.glob("plaintext-mysql-bin.*")), parser / "gtid-fixtures" / "plaintext-mysql-bin.01"]:
        prefix = "gtid-fixtures_" if plain.parent.name == "gtid-fixtures" else ""
        yield corpus / "mysql" / "binlog-parser" / (prefix + plain.name.removeprefix("plaintext-")), plain


@pytest.mark.parametrize("which", ["mariadb", "mysql"])
def test_values_equal_the_reference_decodings(corpus_dir: Path, which: str) -> None:
    pairs = mariadb_pairs(corpus_dir) if which == "mariadb" else mysql_pairs(corpus_dir)
    checked, errors = 0, []
    for binlog, ref in pairs:
        n, errs = compare(binlog, ref)
        checked += n
        errors += [f"{rel(corpus_dir, binlog)} {e}" for e in errs[:5]]
    assert not errors, "\n".join(errors[:40])
    assert checked > (50_000 if which == "mariadb" else 290_000)


def test_multi_event_statement_is_compared_whole(corpus_dir: Path) -> None:
    """The 5000-row statements of corpus-bin.000004 span several events; the tool prints them at the last one."""
    events = list(rows_events(corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000004"))
    assert any(not ev.stmt_end for ev in events)
    assert sum(len(ev.rows()) for ev in events) == 10107


# -- MySQL-only values ------------------------------------------------------------------------------------------


def rows_of(corpus: Path, name: str) -> list[RowsEvent]:
    return list(rows_events(corpus / "mysql" / name))


def test_json_documents_and_partial_json_diffs(corpus_dir: Path) -> None:
    """json.binlog.000001 (8.0.22, binlog_row_value_options=PARTIAL_JSON, MINIMAL image): six rows, ``age``
    bumped by a full UPDATE, then by JSON_REPLACE logged as diffs in a PARTIAL_UPDATE_ROWS_EVENT."""
    events = rows_of(corpus_dir, "rust_mysql_common/json.binlog.000001")
    people = {1: ("Joe", 24, "x"), 2: ("Sue", 32, "y"), 3: ("Pete", 40, "z")}
    state: dict[object, object] = {}  # id -> the JSON document as of the last change
    for ev in events:
        if ev.kind == "insert":
            for _, after in ev.rows():
                assert after is not None
                pk, doc, name, age = after
                assert isinstance(pk, int)
                base_name, base_age, fill = people[(pk - 1) % 3 + 1]
                assert (name, age) == (base_name, base_age)
                assert doc == f'{{"age": {base_age}, "data": "{fill * 10}", "name": "{base_name}"}}'
                state[pk] = doc
    update = next(ev for ev in events if ev.kind == "update" and not ev.partial)
    for before, after in update.rows():
        assert before is not None and after is not None
        assert before[1] == state[before[0]]
        assert isinstance(after[3], int) and isinstance(before[3], int) and after[3] == before[3] + 1
        state[after[0]] = after[1]
    [partial] = [ev for ev in events if ev.partial]
    changes = partial.rows()
    assert len(changes) == 6
    for before, after in changes:
        assert before is not None and after is not None
        assert before[1:] == (ABSENT, ABSENT, ABSENT) and after[0] is ABSENT
        diffs, age, old = after[1], after[3], state[before[0]]
        assert isinstance(diffs, list)  # MINIMAL before image: no document to apply to, so the diffs themselves
        assert [(d.operation.name, d.path) for d in diffs] == [("REPLACE", "$.age")]
        assert isinstance(old, str) and isinstance(age, int)
        assert json_binary.apply_json_diffs(old, diffs) == old.replace(f'"age": {age - 1}', f'"age": {age}')


def test_json_opaque_values(corpus_dir: Path) -> None:
    images = [after for ev in rows_of(corpus_dir, "rust_mysql_common/json-opaque.binlog") for _, after in ev.rows()]
    docs = [image[0] for image in images if image is not None]
    assert docs == [
        '{"a": "base64:type15:VQ=="}',
        '{"b": "2012-03-18"}',
        '{"c": "2012-03-18 11:30:45.000000"}',
        '{"c": "87:31:46.654321"}',
        '{"d": 123.456}',
        '{"e": 9.00}',
        '{"e": [0, 1, true, false]}',
        '{"e": null}',
    ]


def f32(*values: float) -> tuple[float, ...]:
    return struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values))


def test_vector_columns(corpus_dir: Path) -> None:
    events = rows_of(corpus_dir, "rust_mysql_common/vector.binlog")
    assert events[0].row_dicts() == [
        (None, {"id": 1, "vector_column": f32(1.1, 2.2, 3.3)}),
        (None, {"id": 2, "vector_column": f32(1.0, -1.0, 0.0)}),
    ]
    assert events[-1].row_dicts() == [
        (
            None,
            {"id": 3, "vector_column": f32(2.01, -2.01), "foo": None, "vector_column2": f32(42.1, 43.2, 44.3, 45.4)},
        )
    ]
    delete = next(ev for ev in events if ev.kind == "delete")
    assert delete.rows()[0][0] == (2, f32(1.01, -1.01), "bar", f32(42, 43, 44, 45))


def test_negative_time_beyond_a_day(corpus_dir: Path) -> None:
    """time_issue.000001: TIME '-507:48:27' (rust_mysql_common expects negative, 21 days, 03:48:27)."""
    [ev] = rows_of(corpus_dir, "rust_mysql_common/time_issue.000001")
    assert ev.rows() == [(None, (-dt.timedelta(days=21, hours=3, minutes=48, seconds=27),))]


def test_bit_enum_set_and_invisible_columns(corpus_dir: Path) -> None:
    [bits] = rows_of(corpus_dir, "rust_mysql_common/mysql_type_bit.000001")
    assert bits.row_dicts() == [(None, {"a": 4, "b": "foo", "c": 32})]
    enum_set_events = rows_of(corpus_dir, "rust_mysql_common/mysql-enum-string-set.000001")
    deleted = enum_set_events[-1].row_dicts()[0][0]
    assert deleted is not None and (deleted["f3"], deleted["f4"]) == ("variant2", frozenset({"two", "four"}))
    invisible = rows_of(corpus_dir, "rust_mysql_common/binlog-invisible-columns.000001")
    tm = invisible[0].table_map
    assert tm is not None and [c.visible for c in tm.columns] == [False, False, True, True, True, False]
    assert invisible[-1].row_dicts() == [
        (
            {"f1": None, "f2": None, "f3": -33, "f4": "44", "f5": b"U", "f6": None},
            {"f1": 111, "f2": 222, "f3": -333, "f4": "444", "f5": b"U", "f6": None},
        )
    ]


def test_rows_inside_transaction_payloads(corpus_dir: Path) -> None:
    [ev] = rows_of(corpus_dir, "rust_mysql_common/transaction_compression.000001")
    assert ev.header.in_payload is not None and ev.rows() == [(None, (1,))]
    [upd] = rows_of(corpus_dir, "mysql-binlog-connector-java/mysql-bin.compressed")
    [(before, after)] = upd.rows()
    assert before is not None and after is not None
    assert (before[4], after[4]) == ("Western", "Western|Action") and before[:4] == after[:4]


def test_decrypted_mariadb_log(corpus_dir: Path) -> None:
    events = list(rows_events(corpus_dir / "mariadb" / "reference" / "remote-raw-corpus-bin.000022"))
    assert [ev.row_dicts() for ev in events] == [
        [
            (None, {"id": 1, "v": "encrypted row 😀", "d": dt.datetime(2024, 1, 1, 0, 0, 0, 500000)}),
            (None, {"id": 2, "v": None, "d": None}),
        ],
        [({"id": 2, "v": None, "d": None}, {"id": 2, "v": "changed", "d": None})],
        [({"id": 1, "v": "encrypted row 😀", "d": dt.datetime(2024, 1, 1, 0, 0, 0, 500000)}, None)],
    ]


# -- MariaDB 5.3 fractional temporal columns: sized from the CREATE TABLE (binlake.schema) ---------------------


def _utc(*parts: int) -> dt.datetime:
    return dt.datetime(*parts).replace(tzinfo=dt.UTC)  # type: ignore[arg-type]


def test_mariadb_53_temporal_values_equal_the_workload(corpus_dir: Path) -> None:
    """corpus-bin.000003 (workload.sql, section temporal_old): the rows as inserted, updated and deleted.

    mariadb-binlog stops at the first rows event of ``t_temporal_old`` (byte 3237): its TIME(3)/TIME(6),
    DATETIME(3)/(6), TIMESTAMP(3)/(6) columns are logged as types 11/12/7 with no fsp.  binlake reads the fsp from
    the ``CREATE TABLE`` at byte 1778 and decodes MariaDB's hires layouts.
    """
    td, zero = dt.timedelta, temporal.InvalidDatetime(0, 0, 0, 0, 0, 0, 0)
    old0 = {
        1: (1, -td(hours=838, minutes=59, seconds=59), dt.datetime(1000, 1, 1), _utc(1970, 1, 1, 0, 0, 1)),
        2: (
            2,
            td(hours=838, minutes=59, seconds=59),
            dt.datetime(9999, 12, 31, 23, 59, 59),
            _utc(2038, 1, 19, 3, 14, 7),
        ),
        3: (3, -td(seconds=1), zero, zero),
        4: (4, None, None, None),
    }
    hms = td(hours=838, minutes=59, seconds=59)
    old = {
        1: (1, -hms, -(hms + td(milliseconds=999)), -(hms + td(microseconds=999999)),
            dt.datetime(1000, 1, 1), dt.datetime(1000, 1, 1, 0, 0, 0, 1000), dt.datetime(1000, 1, 1, 0, 0, 0, 1),
            _utc(1970, 1, 1, 0, 0, 1), _utc(1970, 1, 1, 0, 0, 1, 1000), _utc(1970, 1, 1, 0, 0, 1, 1)),
        2: (2, hms, hms + td(milliseconds=999), hms + td(microseconds=999999),
            dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
            dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            _utc(2038, 1, 19, 3, 14, 7), _utc(2038, 1, 19, 3, 14, 7, 999000), _utc(2038, 1, 19, 3, 14, 7, 999999)),
        3: (3, -td(seconds=1), -td(milliseconds=1), -td(microseconds=1), zero, zero, zero, zero, zero, zero),
        4: (4, td(hours=12, minutes=34, seconds=56), td(hours=12, minutes=34, seconds=56, milliseconds=789),
            -td(hours=12, minutes=34, seconds=56, microseconds=789012),
            dt.datetime(2024, 2, 29, 12, 34, 56), dt.datetime(2024, 2, 29, 12, 34, 56, 789000),
            dt.datetime(2024, 2, 29, 12, 34, 56, 789012),
            _utc(2024, 2, 29, 12, 34, 56), _utc(2024, 2, 29, 12, 34, 56, 789000),
            _utc(2024, 2, 29, 12, 34, 56, 789012)),
        5: (5, *[None] * 9),
    }  # fmt: skip
    updated = (*old[4][:3], td(hours=1, milliseconds=500), *old[4][4:6], None, *old[4][7:])
    events = list(rows_events(corpus_dir / "mariadb" / "binlogs" / "corpus-bin.000003"))
    assert [(ev.header.pos, ev.rows()) for ev in events] == [
        (1036, [(None, old0[i]) for i in (1, 2, 3, 4)]),
        (1377, [(old0[4], (4, td(hours=12), None, None))]),
        (1652, [(old0[3], None)]),
        (3237, [(None, old[i]) for i in (1, 2, 3, 4, 5)]),
        (3804, [(old[4], updated)]),
        (4209, [(old[5], None)]),
    ]
    fsps = [[c.fsp for c in ev.table_map.columns] for ev in events if ev.table_map is not None]
    # fsp 0 keeps the classic layouts (left unset); 3 and 6 come from the CREATE TABLE
    assert fsps == [[None] * 4] * 3 + [[None, None, 3, 6, None, 3, 6, None, 3, 6]] * 3


def test_mariadb_10_0_timestamp_n_values(corpus_dir: Path) -> None:
    """tiflow's MariaDB 10.0.17 log: TIMESTAMP(3)/(4)/(1) columns (type 7, no fsp logged) of rows inserted with
    the current time, so each value is the rows event's own timestamp (a wrong size would misread them)."""
    seen = []
    for ev in rows_events(corpus_dir / "mysql" / "tiflow" / "mysql-bin.000001"):
        tm = ev.table_map
        assert tm is not None
        if tm.schema != "steven":
            continue
        [(before, after)] = ev.rows()
        assert before is None and after is not None
        assert after[1] == _utc(1970, 1, 1) + dt.timedelta(seconds=ev.header.timestamp)
        seen.append((tm.table, tm.columns[1].fsp, after[0]))
    assert seen == [("t", 3, 1), ("t1", None, 1), ("t2", 4, 1), ("t3", None, 1), ("t3", None, 2), ("t5", 1, 1),
                    ("t6", 4, 1)]  # fmt: skip
