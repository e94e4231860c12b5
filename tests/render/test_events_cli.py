"""``binlake events`` and the command-line entry point (``binlake.cli:main``, ``python -m binlake``)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tomllib
import zlib
from pathlib import Path

import pytest

from binlake.cli import COMMANDS, main
from binlake.render.events import parse_types

MINIMAL = "mysql/rust_mysql_common/minimal_row_metadata.000001"
PAYLOAD = "mysql/rust_mysql_common/transaction_compression.000001"
TRUNCATED = "mysql/rust_mysql_common/binlog_truncated_prev_gtid_event.000001"

# MINIMAL per mariadb-binlog -vv (mysql-reference/.../minimal_row_metadata.000001.vv.txt): "# at" and end_log_pos
MINIMAL_EVENTS = [
    (4, 126, "FORMAT_DESCRIPTION_EVENT"),
    (126, 157, "PREVIOUS_GTIDS_LOG_EVENT"),
    (157, 236, "ANONYMOUS_GTID_LOG_EVENT"),
    (236, 312, "QUERY_EVENT"),
    (312, 374, "TABLE_MAP_EVENT"),
    (374, 420, "WRITE_ROWS_EVENT"),
    (420, 451, "XID_EVENT"),
    (451, 495, "ROTATE_EVENT"),
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.corpus
def test_events_text(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "events", str(corpus_dir / MINIMAL))
    assert (status, err) == (0, "")
    rows = [line.split(None, 3) for line in out.splitlines()]
    assert [(int(r[0]), r[1], int(r[2])) for r in rows] == [(p, t, e - p) for p, e, t in MINIMAL_EVENTS]
    assert rows[4][3] == "table_id 111: `noria`.`t1` (5 columns)"


@pytest.mark.corpus
def test_events_json(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(corpus_dir / MINIMAL)
    status, out, _ = run(capsys, "events", "--json", path)
    docs = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert [(d["pos"], d["end_pos"], d["type"]) for d in docs] == MINIMAL_EVENTS
    tm = docs[4]
    # "#250418 13:50:58 server id 1  end_log_pos 374 ... Table_map: `noria`.`t1` mapped to number 111"
    assert tm == {
        "file": path,
        "pos": 312,
        "end_pos": 374,
        "size": 62,
        "type": "TABLE_MAP_EVENT",
        "type_code": 19,
        "server_id": 1,
        "timestamp": 1744984258,
        "log_pos": 374,
        "flags": 0,
        "in_payload": None,
        "summary": "table_id 111: `noria`.`t1` (5 columns)",
    }


@pytest.mark.corpus
def test_events_filters(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(corpus_dir / MINIMAL)
    _, out, _ = run(capsys, "events", "--json", "--type", "TABLE_MAP_EVENT", "--type", "16", path)
    assert [json.loads(line)["pos"] for line in out.splitlines()] == [312, 420]
    _, out, _ = run(capsys, "events", "--json", "--start-position", "312", "--stop-position", "420", path)
    assert [json.loads(line)["pos"] for line in out.splitlines()] == [312, 374]
    status, out, err = run(capsys, "events", "--type", "NO_SUCH", path)
    assert (status, out) == (2, "")
    assert err.startswith("binlake events: unknown event type 'NO_SUCH'")


def test_parse_types() -> None:
    assert parse_types(["table_map", "WRITE_ROWS_EVENT,16", "previous_gtids"]) == {19, 30, 16, 35}
    with pytest.raises(ValueError, match="'bogus'"):
        parse_types(["bogus"])


@pytest.mark.corpus
def test_events_inside_a_transaction_payload(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(corpus_dir / PAYLOAD)
    _, out, _ = run(capsys, "events", "--json", path)
    docs = [json.loads(line) for line in out.splitlines()]
    inner = [(d["pos"], d["type"], d["in_payload"]) for d in docs if d["in_payload"] is not None]
    # the INDEX: one ZSTD TRANSACTION_PAYLOAD carrying QUERY, TABLE_MAP, WRITE_ROWS_V2, XID
    assert [t for _, t, _ in inner] == ["QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]
    payload = next(d for d in docs if d["type"] == "TRANSACTION_PAYLOAD_EVENT")
    assert {p for _, _, p in inner} == {payload["pos"]}
    assert inner[0][0] == 0
    order = [d["type"] for d in docs]
    assert order.index("TRANSACTION_PAYLOAD_EVENT") == order.index("QUERY_EVENT") - 1
    _, out, _ = run(capsys, "events", "--type", "TABLE_MAP_EVENT", path)
    assert out.split()[:2] == [f"{payload['pos']}+{inner[1][0]}", "TABLE_MAP_EVENT"]


@pytest.mark.corpus
def test_events_error_is_one_line_and_status_2(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(corpus_dir / TRUNCATED)
    status, out, err = run(capsys, "events", path)
    assert status == 2
    assert out.split()[:2] == ["4", "FORMAT_DESCRIPTION_EVENT"]
    assert err == (
        f"binlake events: {path}: at 120: the input ends inside an event header (9 bytes present) (--on-error "
        "skip-event or skip-transaction reads on past it)\n"
    )


def test_events_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = str(tmp_path / "nofile")
    assert run(capsys, "events", path) == (2, "", f"binlake events: {path}: cannot read: No such file or directory\n")


@pytest.mark.corpus
def test_events_checksum_mismatch(corpus_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = bytearray((corpus_dir / MINIMAL).read_bytes())
    data[312 + 28] = ord("m")  # `noria` -> `moria` inside the TABLE_MAP_EVENT: its CRC no longer matches
    damaged = tmp_path / "damaged.000001"
    damaged.write_bytes(bytes(data))
    status, out, err = run(capsys, "events", str(damaged))
    assert status == 2 and len(out.splitlines()) == 4
    assert err.startswith(f"binlake events: {damaged}: at 312: CRC32 mismatch in TABLE_MAP_EVENT: stored 0x08e46868,")
    assert err.endswith(" (--on-error skip-event or skip-transaction reads on past it)\n")
    status, out, err = run(capsys, "events", "--no-verify-checksum", str(damaged))
    assert (status, err) == (0, "")
    assert "`moria`.`t1`" in out


@pytest.mark.corpus
def test_events_unknown_types(corpus_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fde = (corpus_dir / MINIMAL).read_bytes()[4:126]
    body = b"xyz"
    header = struct.pack("<IBIIIH", 1744984258, 99, 1, 19 + len(body) + 4, 126 + 26, 0)
    event = header + body
    event += struct.pack("<I", zlib.crc32(event))
    path = tmp_path / "unknown.000001"
    path.write_bytes(b"\xfebin" + fde + event)
    status, out, _ = run(capsys, "events", str(path))
    assert status == 0
    assert out.splitlines()[1].split() == ["126", "UNKNOWN_EVENT_99", "26", "3", "bytes", "not", "decoded"]
    status, _, err = run(capsys, "events", "--unknown-events", "error", str(path))
    assert status == 2
    assert err == f"binlake events: {path}: at 126: unknown event type 99\n"  # (no --on-error: --unknown-events asked)


@pytest.mark.corpus
def test_events_several_files(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = str(corpus_dir / MINIMAL), str(corpus_dir / PAYLOAD)
    _, out, _ = run(capsys, "events", "--type", "ROTATE_EVENT", a, b)
    lines = out.splitlines()
    assert [lines[0], lines[2]] == [f"# {a}", f"# {b}"]
    _, out, _ = run(capsys, "events", "--json", "--type", "ROTATE_EVENT", a, b)
    assert [json.loads(line)["file"] for line in out.splitlines()] == [a, b]


# --- the entry point ---------------------------------------------------------------------------------------------


def _env(repo_root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(repo_root / "src")}


@pytest.mark.corpus
def test_python_dash_m(corpus_dir: Path, repo_root: Path) -> None:
    cmd = [sys.executable, "-m", "binlake", "events", "--type", "19", str(corpus_dir / MINIMAL)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(repo_root), timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.split()[:3] == ["312", "TABLE_MAP_EVENT", "62"]


def test_python_dash_m_explain_seed_hex_from_stdin(repo_root: Path) -> None:
    # seed 001 as printed: explain prints the whole event, shows the CRC mismatch and exits 2
    dump = (
        "# at 892d4 e5 27 5a 13 8c 27 00 00 2d 00 00 00 7c 03 00 ..'Z..'..-...|..\n"
        "00 00 00 21 00 00 00 00 00 01 00 04 74 65 73 74 ...!........test\n"
        "00 02 74 34 00 01 03 01 01 05 6b 3c be ..t4......k<.\n"
    )
    cmd = [sys.executable, "-m", "binlake", "explain", "--hex", "-"]
    done = subprocess.run(cmd, input=dump, capture_output=True, text=True, env=_env(repo_root), timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout.startswith("Position 847: TABLE_MAP_EVENT, 45 bytes")
    assert "CRC32 stored 0xbe3c6b05, computed 0xa7275a44: MISMATCH" in done.stdout
    assert (
        done.stderr
        == "binlake explain: at 847: CRC32 mismatch in TABLE_MAP_EVENT: stored 0xbe3c6b05, computed 0xa7275a44\n"
    )


def test_console_script_points_at_main(repo_root: Path) -> None:
    scripts = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"binlake": "binlake.cli:main"}


@pytest.mark.corpus
def test_closed_pipe_is_not_an_error(corpus_dir: Path, repo_root: Path) -> None:
    # ~170 KiB of output: more than a pipe holds, so the writer meets the closed pipe
    cmd = [sys.executable, "-m", "binlake", "events", "--json", str(corpus_dir / "mariadb/binlogs/corpus-bin.000002")]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(repo_root)) as p:
        assert p.stdout is not None and p.stderr is not None
        assert json.loads(p.stdout.readline())["type"] == "FORMAT_DESCRIPTION_EVENT"
        p.stdout.close()
        err = p.stderr.read()
        assert p.wait(timeout=60) == 0
    assert err == b""


def test_unavailable_subcommand_fails_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(COMMANDS, "ingest", COMMANDS["ingest"].__class__("binlake.no_such_module", "help"))
    status, _, err = run(capsys, "ingest", "x")
    assert status == 2
    assert err == "binlake: ingest is not available here: No module named 'binlake.no_such_module'\n"
    assert run(capsys, "explain")[0] == 2  # the others still work
