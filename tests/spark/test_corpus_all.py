"""Every MariaDB corpus file in one ``binlake ingest`` run: the change tables hold exactly the row changes that
``mariadb-binlog --base64-output=DECODE-ROWS -vv --print-table-metadata`` printed, file by file, per (database,
table, op); and a few typed values of the types workload equal the reference's ``@N=`` text.

An UPDATE block of the reference is one update; the lake writes it as an ``update_preimage`` and an
``update_postimage`` row, so only the post-images are counted.
"""

from __future__ import annotations

import datetime as dt
import gzip
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from spark.test_spark import _OPS, _delta, _lake_tables  # pytest's name for tests/spark/test_spark.py (rootdir tests/)

pytestmark = pytest.mark.spark

FILES = tuple(f"corpus-bin.{i:06d}" for i in range(1, 16))
ENCRYPTED = "corpus-bin.000022"
# a quoted name as mariadb-binlog prints it: a backtick inside is doubled (`table ``with`` backticks`)
_NAME = r"`((?:[^`]|``)*)`"
_REF_ROW = re.compile(
    rb"^### (INSERT INTO|UPDATE|DELETE FROM) " + _NAME.encode() + rb"\." + _NAME.encode() + rb"$", re.M
)
_AT = re.compile(rb"^# at (\d+)$", re.M)
_REF_COMMAND = "mariadb-binlog --base64-output=DECODE-ROWS -vv --print-table-metadata"

Key = tuple[str, str, str]


def _unquote(name: bytes) -> str:
    return name.replace(b"``", b"`").decode()


def _reference(corpus: Path, name: str) -> tuple[Counter[Key], int | None]:
    """(database, table, op) -> ``###`` blocks of ``name``'s reference, and where the reference stops when
    mariadb-binlog failed on the file (STATUS.tsv exit code != 0: the position of the event it could not print,
    its last ``# at``), else None."""
    ref = corpus / "mariadb" / "reference"
    text = gzip.decompress((ref / f"{name}.decode-rows-meta.txt.gz").read_bytes())
    counts: Counter[Key] = Counter()
    for m in _REF_ROW.finditer(text):
        counts[(_unquote(m.group(2)), _unquote(m.group(3)), _OPS[m.group(1)])] += 1
    status = [
        line.split("\t")
        for line in (ref / "STATUS.tsv").read_text().splitlines()
        if line.startswith(f"{name}\t{_REF_COMMAND}\t")
    ]
    assert len(status) == 1, f"STATUS.tsv has no single {_REF_COMMAND!r} line for {name}"
    stop = None if status[0][2] == "0" else int(_AT.findall(text)[-1])
    return counts, stop


@pytest.fixture(scope="module")
def all_lake(spark: Any, corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ingest of corpus-bin.000001 ... 000015 and the encrypted 000022 (with the corpus' key file)."""
    from binlake.crypto import load_key_file, mariadb_decryptor
    from binlake.ingest.run import ingest
    from binlake.ingest.statements import ReadSpec
    from binlake.spark.runner import SparkRunner

    links = tmp_path_factory.mktemp("all-links")
    for n in (*FILES, ENCRYPTED):
        (links / n).symlink_to(corpus_dir / "mariadb" / "binlogs" / n)
    lake = tmp_path_factory.mktemp("all-lake") / "lake"
    keys = load_key_file(corpus_dir / "workloads" / "keys.txt")
    result = ingest(
        SparkRunner(spark),
        [str(links)],
        str(lake),
        split_bytes=256 << 10,
        read=ReadSpec(decryptor=mariadb_decryptor(keys)),
    )
    assert result.batches == 1 and result.files == len(FILES) + 1
    return lake


def _lake_counts(lake: Path) -> dict[str, list[tuple[Key, int]]]:
    """file -> [((database, table, op), _pos)] of every change row (one per update: its post-image)."""
    out: dict[str, list[tuple[Key, int]]] = {}
    for db, table, d in _lake_tables(lake):
        if not (d / "changes").is_dir():
            continue
        t = _delta(d / "changes").select(["_file", "_pos", "_op"]).to_pydict()
        for file, pos, op in zip(t["_file"], t["_pos"], t["_op"], strict=True):
            if op != "update_preimage":
                out.setdefault(file, []).append(((db, table, "update" if op == "update_postimage" else op), pos))
    return out


def test_every_file_holds_exactly_the_reference_row_changes(corpus_dir: Path, all_lake: Path) -> None:
    by_file = _lake_counts(all_lake)
    assert set(by_file) <= {*FILES, ENCRYPTED}
    beyond: Counter[Key] = Counter()
    for name in FILES:
        want, stop = _reference(corpus_dir, name)
        rows = by_file.get(name, [])
        got = Counter(k for k, pos in rows if stop is None or pos < stop)
        assert got == want, f"{name}: lake - reference {got - want}, reference - lake {want - got}"
        if stop is not None:
            beyond.update(Counter(k for k, pos in rows if pos >= stop) + Counter({("file", name, "stop"): stop}))
    # mariadb-binlog stops at the first rows event of MariaDB 5.3 temporal columns (types 7/11/12: "INVALID_TYPE")
    # in corpus-bin.000003; from there the lake holds what tests/workloads' t_temporal_old section wrote (insert
    # ids 1-5, UPDATE ... WHERE id = 4, DELETE ... WHERE id = 5); test_spark.py checks those rows' values.
    assert beyond == Counter(
        {
            ("file", "corpus-bin.000003", "stop"): 3237,
            ("corpus_types", "t_temporal_old", "insert"): 5,
            ("corpus_types", "t_temporal_old", "update"): 1,
            ("corpus_types", "t_temporal_old", "delete"): 1,
        }
    )
    # corpus-bin.000022 has no stored text decoding (offline mariadb-binlog cannot decrypt it); these are the blocks
    # `mariadb-binlog -vv --base64-output=DECODE-ROWS` prints for reference/remote-raw-corpus-bin.000022 (the server's
    # decrypted copy of the same log)
    assert Counter(k for k, _ in by_file[ENCRYPTED]) == Counter(
        {
            ("corpus_enc", "secret", "insert"): 2,
            ("corpus_enc", "secret", "update"): 1,
            ("corpus_enc", "secret", "delete"): 1,
        }
    )


_SET = re.compile(r"^###   @(\d+)=(.*?) /\* (.*) \*/$", re.M)
_ENUM_MEMBERS = re.compile(r"ENUM(?: NOT NULL)?\(((?:'(?:[^'\\]|\\.)*',?)*)\)")


def _inserts(text: str, table: str, types: dict[int, str]) -> dict[int, dict[int, str]]:
    """id (``@1``) -> {N: the ``@N=`` text} of the reference's ``### INSERT INTO `corpus_types`.`table``` blocks,
    checking that column N's type comment starts with ``types[N]``."""
    out: dict[int, dict[int, str]] = {}
    for block in text.split("### INSERT INTO `corpus_types`.`" + table + "`\n")[1:]:
        found = list(_SET.finditer(re.split(r"\n(?:# at |### [IUD])", block)[0]))
        for m in found:
            assert int(m[1]) not in types or m[3].startswith(types[int(m[1])]), (table, m[0])
        values = {int(m[1]): m[2] for m in found}
        out[int(values[1])] = values
    return out


def _dec(v: Any) -> str | None:
    return None if v is None else format(Decimal(v), "f")


def _datetime6(v: dt.datetime | None) -> str | None:
    return None if v is None else v.isoformat(sep=" ", timespec="microseconds")


def test_typed_values_equal_the_reference_text(corpus_dir: Path, all_lake: Path) -> None:
    """VARCHAR, DECIMAL, DATETIME(6) and ENUM values of corpus-bin.000002's inserts against ``@N=``."""
    path = corpus_dir / "mariadb" / "reference" / "corpus-bin.000002.decode-rows-meta.txt.gz"
    text = gzip.decompress(path.read_bytes()).decode("utf-8", "surrogateescape")

    def lake_inserts(table: str) -> dict[int, dict[str, Any]]:
        rows = _delta(all_lake / "corpus_types" / table / "changes").to_pylist()
        return {r["id"]: r for r in rows if r["_op"] == "insert" and r["_file"] == "corpus-bin.000002"}

    def quoted(v: str | None) -> str:
        return "NULL" if v is None else "'" + v + "'"

    # t_varchar: @3 VARCHAR(1) latin1, @4 VARCHAR(255) latin1, @7 VARCHAR(64) utf8mb4, @10 VARCHAR(2000) utf8mb4
    ref, lake = (
        _inserts(
            text, "t_varchar", {3: "VARSTRING(1)", 4: "VARSTRING(255)", 7: "VARSTRING(256)", 10: "VARSTRING(8000)"}
        ),
        lake_inserts("t_varchar"),
    )
    assert sorted(ref) == sorted(lake) == [1, 2, 3, 4]
    for i, r in ref.items():
        for n, col in ((3, "v1_l1"), (4, "v255_l1"), (7, "v64_u4"), (10, "v2000_u4")):
            assert quoted(lake[i][col]) == r[n], (i, col)
    assert lake[4]["v2000_u4"] == "short 😀"

    # t_decimal: DECIMAL(5,2), DECIMAL(38,38) (decimal128 in the lake) and DECIMAL(65,30) (text in the lake)
    ref, lake = (
        _inserts(text, "t_decimal", {3: "DECIMAL(5,2)", 11: "DECIMAL(38,38)", 13: "DECIMAL(65,30)"}),
        lake_inserts("t_decimal"),
    )
    assert sorted(ref) == sorted(lake) == list(range(1, 8))
    for i, r in ref.items():
        for n, col in ((3, "d5_2"), (11, "d38_38"), (13, "d65_30")):
            assert (_dec(lake[i][col]) or "NULL") == r[n], (i, col)
    assert lake[2]["d65_30"] == "99999999999999999999999999999999999.999999999999999999999999999999"

    # t_temporal: @17 DATETIME(6); the zero date is null in the lake
    ref, lake = _inserts(text, "t_temporal", {17: "DATETIME(6)"}), lake_inserts("t_temporal")
    assert sorted(ref) == sorted(lake) and len(ref) == 7
    zero = 0
    for i, r in ref.items():
        if r[17].startswith("'0000-00-00"):
            zero += 1
            assert lake[i]["dtm6"] is None
        else:
            assert quoted(_datetime6(lake[i]["dtm6"])) == r[17], i
    assert zero == 1 and _datetime6(lake[2]["dtm6"]) == "9999-12-31 23:59:59.999999"

    # t_enum_set: @2 ENUM('a','b','c'): mariadb-binlog prints the 1-based index, the lake the member
    members = _ENUM_MEMBERS.search(text[text.index("`e_small` ENUM") :])
    assert members is not None
    labels = re.findall(r"'((?:[^'\\]|\\.)*)'", members[1])
    assert labels == ["a", "b", "c"]
    ref, lake = _inserts(text, "t_enum_set", {2: "ENUM"}), lake_inserts("t_enum_set")
    assert sorted(ref) == sorted(lake) and len(ref) == 5
    for i, r in ref.items():
        assert lake[i]["e_small"] == (None if r[2] == "NULL" else labels[int(r[2]) - 1]), i
