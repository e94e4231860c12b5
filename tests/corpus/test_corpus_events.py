"""Every corpus binlog read end to end: event count, types and positions equal the corpus index and references.

Expectations come from the corpus itself, never from binlake:

* ``mysql-INDEX.md``: per MySQL-corpus file its event count and type histogram (the payload's inner events are
  listed in the notes, ``inner: QUERY:1, ...``), and which files are damaged on purpose;
* ``mysql-reference/mariadb-binlog-10.11/<source>/<file>.vv.txt``: ``# at N`` for every event the tool read (it
  stops at MySQL-only events, so there its positions are a prefix of ours);
* ``mariadb/reference/histograms.txt.gz`` and ``<file>.decode-rows-meta.txt.gz`` for the MariaDB files.

The WL#2325 prototype logs are counted with the index's labels, which read their type codes with today's
numbering; binlake reads them through MySQL 5.1's permutation (``binlake.events.format``), so their labels are
translated with that table, copied here from ``event_type_permutation`` in MySQL 5.1's ``log_event.cc``.
"""

from __future__ import annotations

import gzip
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from binlake.errors import BinlogError, EncryptedError, MalformedError, TruncatedError
from binlake.events.base import Event, EventType
from binlake.reader import read_events

pytestmark = pytest.mark.corpus

# Damaged on purpose (mysql-INDEX.md notes "CORRUPT ON PURPOSE" / "DAMAGED COPY"; the encrypted MariaDB file):
# the error class and the position of the event binlake must name.
DAMAGED = {
    "mysql/canal/tsdb_mysql-bin.000001": (MalformedError, 0),  # not a binlog: no magic
    "mysql/rust_mysql_common/binlog_truncated_event.000001": (TruncatedError, 4),  # magic + 10 bytes
    "mysql/rust_mysql_common/binlog_truncated_prev_gtid_event.000001": (TruncatedError, 120),
    "mysql/rust_mysql_common/corrupt-relay-bin.000624": (MalformedError, 91204),  # "QUERY event @91204 is broken"
    "mariadb/binlogs/corpus-bin.000022": (EncryptedError, 296),  # the event after START_ENCRYPTION
}

# stored type code of a WL#2325 prototype log -> the released type it means (MySQL 5.1 event_type_permutation)
PROTOTYPE = {16: 19, 17: 20, 18: 21, 19: 22, 20: 16, 21: 17, 22: 18}
PROTOTYPE_FILES = {"ver_5_1-wl2325_r.001", "ver_5_1-wl2325_s.001"}

_AT = re.compile(r"^# at (\d+)$", re.MULTILINE)


def _code(label: str) -> int:
    """An index histogram label (``WRITE_ROWS_V2``, ``MARIA_GTID``, ``AURORA_PADDING(100,non-standard)``) -> code."""
    m = re.fullmatch(r"\w+\((\d+),non-standard\)", label)
    if m:
        return int(m[1])
    name = label.removeprefix("MARIA_")
    suffixes = ("_EVENT",) if label.startswith("MARIA_") else ("_LOG_EVENT", "_EVENT")  # MySQL's GTID is 33, not 162
    if name.endswith("_V2"):
        name = name[:-3] + "_EVENT"
    elif name.endswith("_V1"):
        name = name[:-3] + "_EVENT_V1"
    for candidate in (name, *(name + suffix for suffix in suffixes)):
        if candidate in EventType.__members__:
            return int(EventType[candidate])
    raise AssertionError(f"unknown histogram label {label}")


def _histogram(text: str) -> Counter[int]:
    out: Counter[int] = Counter()
    for item in filter(None, (s.strip() for s in re.split(r",\s*(?![^()]*\))", text))):
        label, count = item.rsplit(":", 1)
        out[_code(label)] += int(count)
    return out


def _mysql_index(corpus: Path) -> list[tuple[str, int, Counter[int], Counter[int], str]]:
    """(file, events, histogram, inner histogram, notes) of every row of mysql-INDEX.md."""
    rows = []
    for line in (corpus / "mysql-INDEX.md").read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 12 or not cells[1].isdigit():
            continue
        file, events, hist, notes = cells[2].strip("`"), int(cells[7]), cells[8], cells[10]
        inner = re.search(r"inner: ([^;|]*)", notes)
        rows.append((file, events, _histogram(hist), _histogram(inner[1]) if inner else Counter(), notes))
    return rows


def _read(path: Path) -> tuple[list[Event], BinlogError | None]:
    events: list[Event] = []
    try:
        events.extend(read_events(path))
    except BinlogError as e:
        return events, e
    return events, None


def _check_positions(events: list[Event], start: int = 4) -> None:
    """Top-level events are contiguous from ``start``; payload events are offsets inside their payload."""
    pos = start
    for ev in events:
        h = ev.header
        if h.in_payload is not None:
            continue
        assert h.pos == pos, f"event at {h.pos} where {pos} was expected"
        pos = h.end_pos


def _check_damaged(rel: str, events: list[Event], err: BinlogError | None, path: Path) -> None:
    cls, pos = DAMAGED[rel]
    assert isinstance(err, cls), f"{rel}: expected {cls.__name__}, got {err!r}"
    assert err.file == str(path) and err.pos == pos, str(err)
    assert str(path) in str(err) and f"at {pos}" in str(err)
    assert all(ev.header.pos < pos for ev in events)


def _corpus_guess() -> Path:
    """Where the ``corpus_dir`` fixture looks, for naming the parametrized cases at collection time."""
    return Path(os.environ.get("BINLAKE_CORPUS") or Path(__file__).resolve().parents[2].parent / "shared" / "corpus")


def _mysql_cases() -> list[str]:
    index = _corpus_guess() / "mysql-INDEX.md"
    if not index.exists():
        return ["(corpus missing)"]
    return [row[0] for row in _mysql_index(index.parent)]


@pytest.mark.parametrize("rel", _mysql_cases())
def test_mysql_corpus_file(corpus_dir: Path, rel: str) -> None:
    row = next(r for r in _mysql_index(corpus_dir) if r[0] == rel)
    _, count, hist, inner_hist, notes = row
    path = corpus_dir / rel
    events, err = _read(path)
    _check_positions(events)
    if rel in DAMAGED:
        assert "CORRUPT ON PURPOSE" in notes or "DAMAGED" in notes
        _check_damaged(rel, events, err, path)
        return
    assert "CORRUPT ON PURPOSE" not in notes and "DAMAGED" not in notes
    assert err is None, str(err)
    top = [ev for ev in events if ev.header.in_payload is None]
    inner = [ev for ev in events if ev.header.in_payload is not None]
    if path.name in PROTOTYPE_FILES:
        hist = Counter({PROTOTYPE.get(code, code): n for code, n in hist.items()})
    assert len(top) == count
    assert Counter(ev.type_code for ev in top) == hist
    assert Counter(ev.type_code for ev in inner) == inner_hist
    assert top[-1].header.end_pos == path.stat().st_size

    ref = corpus_dir / "mysql-reference" / "mariadb-binlog-10.11" / f"{rel.removeprefix('mysql/')}.vv.txt"
    if ref.exists():
        text = ref.read_text(errors="replace")
        at = [int(p) for p in _AT.findall(text)]
        ours = [ev.header.pos for ev in top]
        assert at == ours[: len(at)]  # the tool stops at events it does not know; up to there it agrees
        if "# exit: 0" in text:
            assert at == ours


def _mariadb_histograms(corpus: Path) -> dict[str, tuple[int, Counter[str]]]:
    out: dict[str, tuple[int, Counter[str]]] = {}
    name = ""
    with gzip.open(corpus / "mariadb" / "reference" / "histograms.txt.gz", "rt") as f:
        for line in f:
            if line.startswith("== "):
                name = line.split()[1]
                out[name] = (int(re.search(r"events=(\d+)", line)[1]), Counter())  # type: ignore[index]
            elif line.strip():
                label, count = line.split()[:2]
                out[name][1][label] = int(count)
    return out


_REF_COMMAND = "mariadb-binlog --base64-output=DECODE-ROWS -vv --print-table-metadata"


def _tool_exit(corpus: Path, name: str) -> int:
    """The exit code of the reference decoding of ``name`` (mariadb/reference/STATUS.tsv)."""
    for line in (corpus / "mariadb" / "reference" / "STATUS.tsv").read_text().splitlines():
        cells = line.split("\t")
        if cells[:2] == [name, _REF_COMMAND]:
            return int(cells[2])
    raise AssertionError(f"no reference status for {name}")


def _mariadb_cases() -> list[str]:
    d = _corpus_guess() / "mariadb" / "binlogs"
    return sorted(p.name for p in d.glob("corpus-bin.*")) if d.is_dir() else ["(corpus missing)"]


@pytest.mark.parametrize("name", _mariadb_cases())
def test_mariadb_corpus_file(corpus_dir: Path, name: str) -> None:
    path = corpus_dir / "mariadb" / "binlogs" / name
    count, hist = _mariadb_histograms(corpus_dir)[f"binlogs/{name}"]
    events, err = _read(path)
    _check_positions(events)
    rel = f"mariadb/binlogs/{name}"
    if rel in DAMAGED:
        _check_damaged(rel, events, err, path)
        assert [ev.type for ev in events] == ["FORMAT_DESCRIPTION_EVENT", "START_ENCRYPTION_EVENT"]
        assert hist["ENCRYPTED_EVENT"] == count - len(events)
        return
    assert err is None, str(err)
    assert len(events) == count
    assert Counter(ev.type for ev in events) == hist
    ref = corpus_dir / "mariadb" / "reference" / f"{name}.decode-rows-meta.txt.gz"
    with gzip.open(ref, "rt", errors="replace") as f:
        at = [int(p) for p in _AT.findall(f.read())]
    ours = [ev.header.pos for ev in events]
    assert at == ours[: len(at)]
    if _tool_exit(corpus_dir, name) == 0:  # where the tool gave up (STATUS.tsv), its positions are a prefix
        assert at == ours
    assert events[-1].header.end_pos == path.stat().st_size
