"""``binlake explain`` on rows events: the row images field by field, against the servers' own ``-vv`` text.

References: ``mariadb-binlog -vv`` of the MariaDB corpus (``mariadb/reference/*.decode-rows-meta.txt.gz``) and of
MySQL files (``mysql-reference/mariadb-binlog-10.11/**.vv.txt``): every ``###   @N=value /* TYPE meta=M ... */``
line is compared whole with the value field explain shows (``@N=...`` as ``binlake dump -vv`` prints it), NULLs
with the null bitmap's field.  The tools print the images of a statement of several rows events under its last
(STMT_END_F) event's ``# at POS``, so images are compared statement by statement.  PARTIAL_UPDATE_ROWS (which
mariadb-binlog does not read) is checked against the SQL that wrote it (mysql-INDEX.md, tests/corpus).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.corpus.test_corpus_rows import reference_images

from binlake.cli import main
from binlake.errors import TruncatedError
from binlake.events.context import DecodeContext, DecodeOptions
from binlake.events.format import FormatDescriptionEvent
from binlake.events.rows import RowsEvent
from binlake.reader import read_events
from binlake.render.explain import Explanation, Row, event_at, explain_event, render_json, render_text
from binlake.render.explain_rows import UNCOMPRESSED

pytestmark = pytest.mark.corpus

MARIADB = "mariadb/binlogs/corpus-bin.{:06d}"
JAVA = "mysql/mysql-binlog-connector-java/mysql-bin.checksum-crc32"  # 8.0, v2 insert/update/delete
ENUM_SET = "mysql/rust_mysql_common/mysql-enum-string-set.000001"  # 8.0.28, v2, column names logged
JSON_PARTIAL = "mysql/rust_mysql_common/json.binlog.000001"  # 8.0.22, PARTIAL_UPDATE_ROWS at 3750
COMPRESSED = MARIADB.format(9)  # log_bin_compress=ON: UPDATE_ROWS_COMPRESSED_EVENT_V1 at 1625 (3 row changes)


def reference_of(corpus: Path, name: str) -> Path:
    if name.startswith("mariadb/"):
        return corpus / "mariadb" / "reference" / f"{Path(name).name}.decode-rows-meta.txt.gz"
    tool = corpus / "mysql-reference" / "mariadb-binlog-10.11"
    return tool / Path(name).parent.name / f"{Path(name).name}.vv.txt"


def vv_text(field: str) -> str:
    """A value's ``-vv`` field as explain shows it: whole, but a NULL is shown by the null bitmap, not by a
    value field."""
    return "NULL" if re.fullmatch(r"@\d+=NULL /\* .* is_null=1 \*/", field) else field


def explained_images(ex: Explanation) -> list[dict[int, str]]:
    """The images explain shows: each null bitmap field opens one (its NULL columns), each value field adds its
    ``-vv`` text."""
    out: list[dict[int, str]] = []
    for r in ex.rows + ex.uncompressed:
        if r.name.endswith("null bitmap"):
            assert isinstance(r.value, list)
            out.append(dict.fromkeys(r.value, "NULL"))
        elif isinstance(r.value, dict) and "column" in r.value:
            column, text = r.value["column"], r.value["text"]
            assert isinstance(column, int) and isinstance(text, str)
            assert column not in out[-1]
            out[-1][column] = text
    return out


def explained_rows_events(corpus: Path, name: str, row_limit: int | None) -> Iterator[tuple[RowsEvent, Explanation]]:
    """Every rows event of the file (not inside a transaction payload), explained under the context in force
    there: the format description before it and its table map (as ``event_at`` finds them, without decoding the
    file again for each event)."""
    data = (corpus / name).read_bytes()
    fde: FormatDescriptionEvent | None = None
    for ev in read_events(corpus / name):
        if isinstance(ev, FormatDescriptionEvent):
            fde = ev
        if not isinstance(ev, RowsEvent) or ev.header.in_payload is not None:
            continue
        h = ev.header
        tables = {ev.table_id: ev.table_map} if ev.table_map is not None else {}
        ctx = DecodeContext(DecodeOptions(), fde=fde, table_maps=tables)
        yield ev, explain_event(data[h.pos : h.end_pos], h.pos, ctx, row_limit=row_limit)


def statements(corpus: Path, name: str) -> Iterator[tuple[list[tuple[RowsEvent, Explanation]], int]]:
    """The rows events of each statement, explained in full, with the position the tools print its images at."""
    pending: list[tuple[RowsEvent, Explanation]] = []
    for ev, ex in explained_rows_events(corpus, name, None):
        pending.append((ev, ex))
        if ev.stmt_end:
            yield pending, ev.header.pos
            pending = []


# --- values against the reference ------------------------------------------------------------------------------

# (file, statements compared per kind: None = all of them)
REFERENCE_FILES = [
    (MARIADB.format(2), None),  # every column type, v1 events
    (MARIADB.format(4), 25),  # PK-changing and NULL updates, deletes, multi-event statements
    (MARIADB.format(8), None),  # MINIMAL and NOBLOB images: columns absent from an image
    (COMPRESSED, None),  # compressed rows events
    (MARIADB.format(10), None),  # no checksum
    (MARIADB.format(12), None),  # no column names logged
    (JAVA, None),  # MySQL 8 v2 events
    (ENUM_SET, None),
]


@pytest.mark.parametrize(("name", "per_kind"), REFERENCE_FILES)
def test_explained_values_equal_the_reference(corpus_dir: Path, name: str, per_kind: int | None) -> None:
    expected, last = reference_images(reference_of(corpus_dir, name), vv_text)
    compared: dict[str, int] = defaultdict(int)
    nulls = values = 0
    kinds: set[tuple[str, int, bool]] = set()
    for events, pos in statements(corpus_dir, name):
        if pos > last:
            break
        kind = events[-1][0].kind
        if per_kind is not None and compared[kind] >= per_kind:
            continue
        got = [image for _, ex in events for image in explained_images(ex)]
        assert got == expected.get(pos, []), f"{name} at {pos}"
        for ev, ex in events:
            assert ex.error is None, ex.error
            kinds.add((ev.kind, ev.version, ev.compressed))
        compared[kind] += 1
        nulls += sum(text == "NULL" for image in got for text in image.values())
        values += sum(len(image) for image in got)
    assert compared and values
    if name in (MARIADB.format(2), MARIADB.format(4)):  # the samples hold every kind and NULLs
        assert {k for k, _, _ in kinds} == {"insert", "update", "delete"} and nulls > 0
    if name == COMPRESSED:
        assert {(k, c) for k, _, c in kinds} >= {("insert", True), ("update", True), ("delete", True)}
    if name == JAVA:
        assert {(k, v) for k, v, _ in kinds} == {("insert", 2), ("update", 2), ("delete", 2)}


@pytest.mark.parametrize("name", [MARIADB.format(4), COMPRESSED, JSON_PARTIAL, JAVA, MARIADB.format(8)])
def test_every_byte_of_every_rows_event_is_explained(corpus_dir: Path, name: str) -> None:
    """The fields tile the event (compressed events: the uncompressed fields tile the rows), with the default
    limit of 3 row changes, beyond which one field covers the rest."""
    more = 0
    for ev, ex in explained_rows_events(corpus_dir, name, 3):
        assert ex.error is None and ex.decode_error is None, ex.error
        assert b"".join(r.raw for r in ex.rows) == ex.raw
        assert not [r for r in ex.rows if r.name == "(not read)"]
        changes = len(ev.rows())
        if ev.compressed:
            assert b"".join(r.raw for r in ex.uncompressed) == ev.rows_data
            assert {r.section for r in ex.uncompressed} == {UNCOMPRESSED}
            assert [r.name for r in ex.rows if r.section == "body"][-3:] == [
                "compression header",
                "uncompressed length",
                "compressed rows",
            ]
        else:
            assert not ex.uncompressed
        fields = ex.rows + ex.uncompressed
        # one null bitmap per image shown
        bitmaps = [r for r in fields if r.name.endswith("null bitmap")]
        assert len(bitmaps) == min(changes, 3) * (2 if ev.kind == "update" else 1)
        rest = [r for r in fields if r.name.startswith("… ")]
        if changes > 3:
            (r,) = rest
            assert r.value == changes - 3
            assert r.name == f"… {changes - 3} more rows ({r.size} bytes)"
            more += 1
        else:
            assert not rest
    if name == MARIADB.format(4):
        assert more  # the 5000-row statements


def test_offsets_name_the_bytes(corpus_dir: Path) -> None:
    """Each value field's offset is where its bytes are in the event (uncompressed events), and a length prefix
    holds the length of the value after it."""
    data = (corpus_dir / JAVA).read_bytes()
    checked = 0
    for ev, ex in explained_rows_events(corpus_dir, JAVA, None):
        fields = list(ex.rows)
        for r in fields:
            assert ex.raw[r.offset : r.offset + r.size] == r.raw
            assert data[ev.header.pos + r.offset : ev.header.pos + r.offset + r.size] == r.raw
        for prefix, value in itertools.pairwise(fields):
            if prefix.name.endswith(" length") and prefix.name.startswith("row "):
                assert value.name == prefix.name.removesuffix(" length")
                assert int.from_bytes(prefix.raw, "little") == value.size == prefix.value
                checked += 1
    assert checked > 50


# --- one event of each kind, value by value ----------------------------------------------------------------------


def _explain(corpus: Path, name: str, pos: int, rows: int | None = None) -> Explanation:
    raw, ctx = event_at(str(corpus / name), pos, DecodeOptions())
    return explain_event(raw, pos, ctx, row_limit=rows)


def _field(ex: Explanation, name: str) -> Row:
    (r,) = [r for r in ex.rows + ex.uncompressed if r.name == name and r.section != "header"]
    return r


def test_write_rows_v1_value_by_value(corpus_dir: Path) -> None:
    """corpus-bin.000009 at 1370: INSERT INTO comp VALUES (3, 3, 'tiny', 'x'), id INT, a INT, txt TEXT,
    pad VARCHAR(400) utf8mb4."""
    ex = _explain(corpus_dir, COMPRESSED, 1370)
    assert ex.type == "WRITE_ROWS_EVENT_V1"
    assert _field(ex, "flags").meaning == "0x0001 = STMT_END_F"
    assert _field(ex, "table_id").meaning == "96: `corpus_dml`.`comp`"
    bitmap = _field(ex, "row 1 null bitmap")
    assert (bitmap.offset, bitmap.raw, bitmap.value) == (29, b"\xf0", [])
    one = _field(ex, "row 1 @1 `id`")
    assert (one.offset, one.raw) == (30, (3).to_bytes(4, "little"))
    assert one.value == {
        "column": 1,
        "name": "id",
        "type": "LONG",
        "meta": 0,
        "text": "@1=3 /* INT meta=0 nullable=0 is_null=0 */",
        "typed": 3,
        "python": "3",
    }
    prefix, txt = _field(ex, "row 1 @3 `txt` length"), _field(ex, "row 1 @3 `txt`")
    assert (prefix.offset, prefix.raw, prefix.value) == (38, b"\x04\x00", 4)
    assert prefix.meaning == "4 bytes of value follow (2-byte length prefix)"
    assert (txt.offset, txt.raw) == (40, b"tiny")
    assert isinstance(txt.value, dict) and (txt.value["typed"], txt.value["python"]) == ("tiny", "'tiny'")
    assert txt.meaning.startswith("@3='tiny' /* BLOB/TEXT meta=2 nullable=1 is_null=0 */ — column 3 `txt` (BLOB)")
    pad = _field(ex, "row 1 @4 `pad`")
    assert (pad.offset, pad.raw, pad.section) == (46, b"x", "body")
    assert _field(ex, "checksum").offset == 47


def test_null_columns_come_from_the_null_bitmap(corpus_dir: Path) -> None:
    """corpus-bin.000004's NULL updates: every NULL the reference prints is a set bit of the explained bitmap, and
    no value field is shown for it."""
    expected, _ = reference_images(reference_of(corpus_dir, MARIADB.format(4)), vv_text)
    seen = 0
    for events, pos in statements(corpus_dir, MARIADB.format(4)):
        want = expected.get(pos, [])
        if not any("NULL" in image.values() for image in want) or len(events) > 1:
            continue
        (_, ex) = events[0]
        bitmaps = [r for r in ex.rows if r.name.endswith("null bitmap")]
        assert len(bitmaps) == len(want)
        for bitmap, image in zip(bitmaps, want, strict=True):
            nulls = [n for n, text in image.items() if text == "NULL"]
            assert bitmap.value == nulls
            listed = bitmap.meaning.split(": ", 1)[1]
            assert [int(n) for n in re.findall(r"@(\d+)", listed)] == nulls
            assert listed.startswith("NULL @") if nulls else listed == "none NULL"
            # the bit of each column, by its place among the present columns: set exactly for the NULL ones
            bits = [bool(bitmap.raw[k // 8] >> (k % 8) & 1) for k in range(len(image))]
            assert bits == [image[n] == "NULL" for n in sorted(image)]
        assert explained_images(ex) == want  # no value field for a NULL column
        seen += 1
    assert seen >= 3


def test_update_images_are_labelled_before_and_after(corpus_dir: Path) -> None:
    """corpus-bin.000009 at 2010 (an uncompressed UPDATE_ROWS_EVENT_V1): UPDATE comp SET txt = 'small now' WHERE
    id = 3, from (3, 4, 'tiny', 'x')."""
    ex = _explain(corpus_dir, COMPRESSED, 2010)
    texts = {
        r.name: r.value["text"] for r in ex.rows if isinstance(r.value, dict) and isinstance(r.value.get("text"), str)
    }
    assert texts["row 1 before @3 `txt`"] == "@3='tiny' /* BLOB/TEXT meta=2 nullable=1 is_null=0 */"
    assert texts["row 1 after @3 `txt`"] == "@3='small now' /* BLOB/TEXT meta=2 nullable=1 is_null=0 */"
    assert texts["row 1 before @2 `a`"] == texts["row 1 after @2 `a`"] == "@2=4 /* INT meta=0 nullable=1 is_null=0 */"
    names = [r.name for r in ex.rows if r.name.startswith("row 1")]
    assert names.index("row 1 before null bitmap") < names.index("row 1 before @4 `pad`")
    assert names.index("row 1 before @4 `pad`") < names.index("row 1 after null bitmap")
    assert _field(ex, "after-image columns-present bitmap").meaning == "columns in the after image: all 4"


def test_compressed_rows_event(corpus_dir: Path) -> None:
    """corpus-bin.000009 at 1625: UPDATE comp SET a = a + 1 over 3 rows, compressed (0x82: zlib, 2-byte length)."""
    ex = _explain(corpus_dir, COMPRESSED, 1625, rows=1)
    assert ex.type == "UPDATE_ROWS_COMPRESSED_EVENT_V1" and ex.event is not None
    head, length, stream = (_field(ex, n) for n in ("compression header", "uncompressed length", "compressed rows"))
    assert (head.offset, head.raw) == (30, b"\x82")
    assert "algorithm 0 (zlib), 2 bytes of uncompressed length follow" in head.meaning
    assert (length.raw, length.value) == ((6288).to_bytes(2, "big"), 6288)
    assert (stream.offset, stream.section, stream.size) == (33, "body", len(ex.raw) - 4 - 33)
    # the images: offsets in the uncompressed rows, row 1 only, then the rest
    assert ex.uncompressed[0].name == "row 1 before null bitmap" and ex.uncompressed[0].offset == 0
    a_before, a_after = _field(ex, "row 1 before @2 `a`"), _field(ex, "row 1 after @2 `a`")
    assert a_before.section == UNCOMPRESSED
    assert isinstance(a_before.value, dict) and isinstance(a_after.value, dict)
    assert (a_before.value["typed"], a_after.value["typed"]) == (1, 2)
    rest = ex.uncompressed[-1]
    assert rest.name == f"… 2 more rows ({rest.size} bytes)" and rest.offset + rest.size == 6288
    text = render_text(ex)
    assert "ROW IMAGES, UNCOMPRESSED (6288 bytes; offsets in the uncompressed rows)" in text
    doc = render_json(ex)
    fields = doc["uncompressed_fields"]
    assert isinstance(fields, list) and fields[0]["name"] == "row 1 before null bitmap"
    json.dumps(doc)


def test_partial_update_rows_value_options_and_diffs(corpus_dir: Path) -> None:
    """json.binlog.000001 at 3750: JSON_REPLACE(doc, '$.age', age + 1) on 6 rows (MINIMAL images: the before
    image is the id only), logged as diffs: ages 24/32/40 bumped twice (a full UPDATE came first)."""
    ex = _explain(corpus_dir, JSON_PARTIAL, 3750, rows=3)
    assert ex.type == "PARTIAL_UPDATE_ROWS_EVENT"
    people = {1: ("Joe", 24), 2: ("Sue", 32), 3: ("Pete", 40)}
    for k in (1, 2, 3):
        options = _field(ex, f"row {k} after value options")
        assert (options.raw, options.value, options.meaning) == (b"\x01", 1, "0x1 = PARTIAL_JSON_UPDATES")
        bits = _field(ex, f"row {k} after partial JSON bits")
        assert (bits.raw, bits.value, bits.meaning) == (b"\x01", [2], "one bit per JSON column: @2 diffs")
        name, age = people[k]
        texts = {
            r.name: r.value["text"]
            for r in ex.rows
            if r.name.startswith(f"row {k} ") and isinstance(r.value, dict) and "text" in r.value
        }
        assert texts == {
            f"row {k} before @1": f"@1={k} /* INT meta=0 nullable=0 is_null=0 */",
            f"row {k} after @2": f"@2=JSON_REPLACE(@2, '$.age', {age + 2}) /* JSON meta=4 nullable=1 is_null=0 */",
            f"row {k} after @3": f"@3='{name}' /* VARSTRING(400) meta=400 nullable=1 is_null=0 */",
            f"row {k} after @4": f"@4={age + 2} /* INT meta=0 nullable=1 is_null=0 */",
        }
        # the after image starts after the options and bits
        assert _field(ex, f"row {k} after null bitmap").offset == bits.offset + 1 == options.offset + 2
        diffs = _field(ex, f"row {k} after @2")
        assert isinstance(diffs.value, dict) and "path='$.age'" in str(diffs.value["python"])
        assert "column 2 (JSON), 4-byte length prefix: JSON diffs" in diffs.meaning
    rest = ex.rows[-2]  # rows 4-6 (Joe, Sue, Pete again), before the checksum
    assert (rest.name, rest.value) == ("… 3 more rows (97 bytes)", 3)
    assert rest.offset + rest.size == len(ex.raw) - 4


# --- the subcommand ----------------------------------------------------------------------------------------------


def test_rows_option(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(corpus_dir / COMPRESSED)
    assert main(["explain", path, "--at", "1625"]) == 0  # default: 3 row changes, all of this event's
    out = capsys.readouterr().out
    assert "row 3 after @4 `pad`" in out and "more rows" not in out
    assert main(["explain", path, "--at", "1625", "--rows", "2"]) == 0
    out = capsys.readouterr().out
    assert "row 2 after @4 `pad`" in out and "row 3 " not in out and "… 1 more rows (" in out
    assert main(["explain", path, "--at", "1625", "--rows", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = [f["name"] for f in doc["uncompressed_fields"]]
    assert names == ["… 3 more rows (6288 bytes)"]
    assert main(["explain", path, "--at", "1625", "--rows", "all", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    values = [f["value"] for f in doc["uncompressed_fields"] if isinstance(f["value"], dict)]
    assert [v["typed"] for v in values if v["column"] == 2] == [1, 2, 2, 3, 3, 4]
    with pytest.raises(SystemExit) as exit_:
        main(["explain", path, "--at", "1625", "--rows", "some"])
    assert exit_.value.code == 2
    assert "expected a number of rows or 'all'" in capsys.readouterr().err


def test_rows_limit_of_a_big_event(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 5000-row statement of corpus-bin.000004: three rows in full, then one field for the rest."""
    name = MARIADB.format(4)
    ev, ex = next((ev, ex) for ev, ex in explained_rows_events(corpus_dir, name, 3) if len(ev.rows()) > 100)
    rest = ex.rows[-2]  # before the checksum
    assert rest.name == f"… {len(ev.rows()) - 3} more rows ({rest.size} bytes)"
    assert rest.offset + rest.size == len(ex.raw) - 4
    assert main(["explain", str(corpus_dir / name), "--at", str(ev.header.pos)]) == 0
    out = capsys.readouterr().out
    assert rest.name in out and "row 3 " in out and "row 4 " not in out


def test_a_damaged_row_image_is_explained_up_to_the_damage(corpus_dir: Path) -> None:
    """corpus-bin.000009 at 1370 with the length of `txt` (offset 38) raised from 4 to 255: the value runs past
    the rows; the fields before it are shown, one field covers the rest, and the error names the offset."""
    raw, ctx = event_at(str(corpus_dir / COMPRESSED), 1370, DecodeOptions(verify_checksum=False))
    damaged = raw[:38] + b"\xff" + raw[39:]
    ex = explain_event(damaged, 1370, ctx)
    assert b"".join(r.raw for r in ex.rows) == damaged
    names = [r.name for r in ex.rows if r.section == "body"]
    assert names[-3:] == ["row 1 @1 `id`", "row 1 @2 `a`", "(not decoded)"]
    bad = ex.rows[-2]
    assert (bad.offset, bad.raw) == (38, damaged[38:47])
    assert bad.meaning.startswith("row 1: column 3 `txt` (BLOB) at byte 9 of the rows: ")
    assert isinstance(ex.error, TruncatedError) and (ex.error.pos, ex.error.offset) == (1370, 38)
