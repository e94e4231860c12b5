"""``binlake tail`` against a private MariaDB: exactly once into ``--output`` across SIGKILLs of the tail and a
restart of the server (by position and by GTID; as the ed25519 user and over TLS), the row changes equal to what
``mariadb-binlog -vv`` and binlake's file decoding read from the server's own files and to ``SELECT``; ``--no-follow``
from the oldest binlog equal to ``binlake dump`` and ``binlake changes`` of the same files; the default start at the
server's end; a purged binlog; no password anywhere."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.replication.conftest import PASSWORD, ReplServer, batch

from binlake.changes import ChangeStream, FileSource, ServerSource
from binlake.errors import ReplicationError
from binlake.events.gtid import BinlogCheckpointEvent
from binlake.reader import read_events
from binlake.render.changes.debezium import LEGACY_MODES, DebeziumEncoder, ValueModes
from binlake.render.changes.tail import TailState, load_state, save_state
from binlake.replication import ReplicationClient, ResumePoint, StartAt
from binlake.testing.mariadb import MariaDBServer

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "BINLAKE_PASSWORD": PASSWORD}
BATCH0 = 40 + 14 + 8 + 1  # batch 0's row changes: 40 inserts, 14 updates (id % 3 = 0), 8 deletes, 1 MyISAM insert


def tail_cmd(rs: ReplServer, user: str, *args: str) -> list[str]:
    cmd = [sys.executable, "-m", "binlake", "tail", "--host", "127.0.0.1", "--port", str(rs.server.port)]
    cmd += ["--user", user, "--server-id", "6161", "--heartbeat", "0.5", "--timeout", "5"]
    if user == "repl_tls":
        t = rs.tls
        cmd += ["--ssl-mode", "VERIFY_IDENTITY", "--ssl-ca", str(t.ca), "--ssl-cert", str(t.client_cert)]
        cmd += ["--ssl-key", str(t.client_key)]
    return cmd + list(args)


def run_tail(rs: ReplServer, user: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(tail_cmd(rs, user, *args), env=ENV, capture_output=True, timeout=300, check=False)


def gtid_now(server: MariaDBServer) -> str:
    return str(server.query("SELECT @@global.gtid_binlog_pos")[0][0] or "")


# -- what the server's files hold ---------------------------------------------------------------------------------


def file_debezium(server: MariaDBServer) -> list[bytes]:
    """The Debezium lines of the server's binlog files, as ``binlake changes`` writes them from files."""
    encoder = DebeziumEncoder()
    files = [str(p) for p in server.binlog_files()]
    return b"".join(encoder.encode(trx) for trx in ChangeStream(FileSource(files))).splitlines(keepends=True)


_CHANGE = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`\.`([^`]*)`$")
_VALUE = re.compile(r"^###   @(\d+)=(.*) /\* .* \*/$")
_OP = {"INSERT INTO": "c", "UPDATE": "u", "DELETE FROM": "d"}
Change = tuple[str, str, str, tuple[str, ...] | None, tuple[str, ...] | None]


def vv_changes(server: MariaDBServer) -> list[Change]:
    """(db, table, op, before, after) of every row change ``mariadb-binlog -vv`` prints for the server's files,
    values as its text (``'x'``, ``5``, ``NULL``)."""
    out: list[Change] = []
    for path in server.binlog_files():
        rc, text, err = server.mariadb_binlog(["--base64-output=DECODE-ROWS", "-vv"], path)
        assert rc == 0, err
        cur: list[Any] | None = None
        section: list[str] | None = None
        for line in text.decode("utf-8", "surrogateescape").splitlines():
            m = _CHANGE.match(line)
            if m:
                if cur is not None:
                    out.append(tuple(cur))  # type: ignore[arg-type]
                cur = [m[2], m[3], _OP[m[1]], None, None]
            elif cur is not None and line == "### WHERE":
                section = cur[3] = []
            elif cur is not None and line == "### SET":
                section = cur[4] = []
            elif cur is not None and (v := _VALUE.match(line)):
                assert section is not None
                section.append(v[2])
            elif cur is not None and not line.startswith("###"):
                out.append(tuple(cur))  # type: ignore[arg-type]
                cur = None
        assert cur is None
    return [(db, t, op, tuple(b) if b is not None else None, tuple(a) if a is not None else None)
            for db, t, op, b, a in out]  # fmt: skip


def as_vv(image: dict[str, Any] | None) -> tuple[str, ...] | None:
    """A Debezium image's values as ``-vv`` prints them (the tables here hold integers and plain text)."""
    if image is None:
        return None
    return tuple("NULL" if v is None else str(v) if isinstance(v, int) else f"'{v}'" for v in image.values())


def table_state(lines: Sequence[bytes]) -> dict[str, dict[str, dict[str, Any]]]:
    """The tables the Debezium lines leave behind: table -> id -> row."""
    state: dict[str, dict[str, dict[str, Any]]] = {}
    for line in lines:
        r = json.loads(line)
        rows = state.setdefault(f"{r['source']['db']}.{r['source']['table']}", {})
        if r["before"] is not None:
            del rows[str(r["before"]["id"])]
        if r["after"] is not None:
            rows[str(r["after"]["id"])] = r["after"]
    return state


def selected(server: MariaDBServer, table: str) -> dict[str, dict[str, Any]]:
    db, name = table.split(".")
    where = f"table_schema = '{db}' AND table_name = '{name}' ORDER BY ordinal_position"
    cols = [c for (c,) in server.query(f"SELECT column_name FROM information_schema.columns WHERE {where}")]
    out = {}
    for row in server.query(f"SELECT * FROM {table}"):
        values = {c: (int(v) if v is not None and c in ("id", "batch") else v) for c, v in zip(cols, row, strict=True)}
        out[str(values["id"])] = values
    return out


# -- exactly once ---------------------------------------------------------------------------------------------


@pytest.mark.server
@pytest.mark.parametrize(("by", "user"), [("position", "repl_ed25519"), ("gtid", "repl_tls")])
def test_output_is_exactly_once_across_sigkills_and_a_server_restart(
    fresh_server: ReplServer, tmp_path: Path, by: str, user: str
) -> None:
    server = fresh_server.server
    batch(server, 0)
    start = ["--from-start"] if by == "position" else ["--gtid", gtid_now(server)]
    state, out = tmp_path / "tail.state", tmp_path / "changes.jsonl"
    args = ["--format", "debezium", "--state", str(state), "--output", str(out), *start]
    rng = random.Random(13)
    log = tmp_path / "stderr"

    def start_tail() -> subprocess.Popen[bytes]:
        """A following tail, once it is connected (its log says where it reads from)."""
        seen = log.read_bytes().count(b"reading from") if log.exists() else 0
        with log.open("ab") as err:
            proc = subprocess.Popen(tail_cmd(fresh_server, user, *args), env=ENV, stderr=err)
        deadline = time.monotonic() + 60
        while log.read_bytes().count(b"reading from") == seen:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        return proc

    for k in range(1, 5):
        proc = start_tail()
        batch(server, k, big=k % 2 == 1)
        if k == 3:  # the server restarts under a running tail: it reconnects and goes on
            server.restart()
            batch(server, 30)
            time.sleep(2.0)
        time.sleep(rng.uniform(0.0, 0.6))
        proc.send_signal(signal.SIGKILL)  # k = 1, 2 (and 4, before the catch-up): while the workload streams
        proc.wait()
        if k == 2:  # what a kill between a transaction's write and its state leaves: the restart cuts it off
            with out.open("ab") as f:
                f.write(b'{"before":null,"after":{"id":')
    server.flush_logs()
    batch(server, 9)
    done = run_tail(fresh_server, user, *args, "--no-follow")
    stderr = log.read_bytes() + done.stderr
    assert done.returncode == 0, done.stderr.decode()

    whole = out.read_bytes()
    with out.open("ab") as f:  # once more, with nothing new on the server: the file is cut back to the state's end
        f.write(b'{"before":null,')
    again = run_tail(fresh_server, user, *args, "--no-follow")
    assert again.returncode == 0 and out.read_bytes() == whole, again.stderr.decode()

    text = stderr.decode("utf-8", "replace")
    assert "reconnecting" in text  # the restart: one line per attempt
    assert "cut back" in text
    assert PASSWORD not in text and PASSWORD not in state.read_text()
    saved = load_state(state)
    assert saved is not None and saved.by == by and saved.output_offset == out.stat().st_size
    if by == "gtid":
        assert saved.resume.gtid == gtid_now(server)  # the state at the end of the last transaction

    got = out.read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in got]
    places = [(r["source"]["file"], r["source"]["pos"], r["source"]["row"]) for r in records]
    assert len(set(places)) == len(places), "a row change was written twice"

    # binlake's decoding of the server's files: the same lines, byte for byte, from where the tail started
    ref = file_debezium(server)
    skipped = 0 if by == "position" else len(ref) - len(got)
    assert skipped == (0 if by == "position" else BATCH0)
    assert got == ref[skipped:]

    # mariadb-binlog -vv on the server's files: the same changes, one for one
    vv = vv_changes(server)
    mine = [(r["source"]["db"], r["source"]["table"], r["op"], as_vv(r["before"]), as_vv(r["after"])) for r in records]
    assert len(vv) == len(ref)
    assert mine == vv[skipped:]

    # SELECT: the tables the changes leave behind (after batch 0's, which a GTID start leaves out)
    tables = table_state(ref[:skipped] + got)
    for name in ("r.t", "r.m"):
        assert tables[name] == selected(server, name)


# -- the same files, without following ---------------------------------------------------------------------------


def _in_use(text: bytes) -> bytes:
    """The server clears the in-use flag of the format description it sends (``send_format_descriptor_event``), so
    the open binlog's warning is the file's only."""
    return text.replace(b"# Warning: this binlog is either in use or was not closed properly.\n", b"")


def settled(server: MariaDBServer) -> None:
    """Wait for the BINLOG_CHECKPOINT naming the new binlog itself, which the server writes into it a moment after a
    rotation (once the transactions of the file before are durable in the engine)."""
    deadline = time.monotonic() + 30
    current = server.current_binlog()
    while time.monotonic() < deadline:
        if any(
            isinstance(ev, BinlogCheckpointEvent) and ev.binlog_file == current.name
            for ev in read_events(current, stop=1 << 20)
        ):
            return
        time.sleep(0.1)
    raise AssertionError("no binlog checkpoint")


@pytest.mark.server
def test_no_follow_from_the_start_equals_dump_and_changes_of_the_files(repl_server: ReplServer, tmp_path: Path) -> None:
    server = repl_server.server
    settled(server)
    files = [str(p) for p in server.binlog_files()]
    text = run_tail(repl_server, "repl_native", "--from-start", "--no-follow")
    assert text.returncode == 0, text.stderr.decode()
    dumped = subprocess.run([sys.executable, "-m", "binlake", "dump", *files], capture_output=True, check=True)
    assert _in_use(text.stdout) == _in_use(dumped.stdout)

    # into a file with a state: a second run (nothing new) cuts the closing lines off, reads on from the last
    # transaction and writes them again: the same text
    owned, text_state = tmp_path / "dump.txt", tmp_path / "text.state"
    for _ in range(2):
        again = run_tail(repl_server, "repl_native", "--from-start", "--no-follow", "--state", f"{text_state}",
                         "--output", f"{owned}")  # fmt: skip
        assert again.returncode == 0, again.stderr.decode()
        assert _in_use(owned.read_bytes()) == _in_use(dumped.stdout)
    assert b"cut back" in again.stderr

    state = tmp_path / "s"
    js = run_tail(
        repl_server, "repl_native", "--from-start", "--no-follow", "--format", "debezium", "--state", str(state)
    )
    assert js.returncode == 0, js.stderr.decode()
    changes = subprocess.run([sys.executable, "-m", "binlake", "changes", *files], capture_output=True, check=True)
    assert js.stdout == changes.stdout and js.stdout.count(b"\n") > 1000
    saved = load_state(state)
    assert saved is not None and saved.output_offset is None and saved.format == "debezium"
    assert PASSWORD not in state.read_text()

    only = ["-d", "corpus_types", "--table", "t_int*"]
    filtered = run_tail(repl_server, "repl_native", "--from-start", "--no-follow", *only)
    dumped = subprocess.run([sys.executable, "-m", "binlake", "dump", *only, *files], capture_output=True, check=True)
    assert _in_use(filtered.stdout) == _in_use(dumped.stdout)


@pytest.mark.server
def test_default_start_resume_and_purge(fresh_server: ReplServer, tmp_path: Path) -> None:
    server = fresh_server.server
    batch(server, 0)
    state, out = tmp_path / "s", tmp_path / "o.jsonl"
    args = ["--format", "debezium", "--state", str(state), "--output", str(out), "--no-follow"]
    first = run_tail(fresh_server, "repl_native", *args)  # the server's current end: nothing yet
    assert first.returncode == 0, first.stderr.decode()
    assert out.read_bytes() == b""
    saved = load_state(state)
    assert saved is not None and saved.output_offset == 0
    end = server.query("SHOW MASTER STATUS")[0]
    assert (saved.resume.file, str(saved.resume.position)) == (end[0], end[1])
    batch(server, 1)
    second = run_tail(fresh_server, "repl_native", *args)
    assert second.returncode == 0, second.stderr.decode()
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    ids = {(r["source"]["table"], (r["after"] or r["before"])["id"]) for r in records}
    assert {i // 1000 if t == "t" else i for t, i in ids} == {1}  # r.t: batch k's ids are k * 1000 + i; r.m: k
    assert len(records) == len(file_debezium(server)) - BATCH0  # batch 0's changes are not there

    # a text tail resumes too, and refuses a state of another format
    wrong = run_tail(fresh_server, "repl_native", "--format", "text", "--state", str(state), "--output", str(out))
    assert wrong.returncode == 2 and b"--format debezium" in wrong.stderr

    # the state keeps how values were written: other --debezium-option settings would mix two encodings in one file
    saved = load_state(state)
    assert saved is not None and saved.debezium == ValueModes().text()
    other = run_tail(fresh_server, "repl_native", *args, "--debezium-option", "decimal.handling.mode=string")
    assert other.returncode == 2 and f"--debezium-option {ValueModes().text()}".encode() in other.stderr
    # a state from before the settings were kept: its tail wrote the old encodings, which it must go on with
    save_state(state, TailState(saved.resume, saved.by, saved.format, saved.output_offset))
    old_state = json.loads(state.read_text())
    assert "debezium" not in old_state
    refused = run_tail(fresh_server, "repl_native", *args)
    assert refused.returncode == 2 and LEGACY_MODES.text().encode() in refused.stderr
    resumed = run_tail(fresh_server, "repl_native", *args, "--debezium-option", LEGACY_MODES.text())
    assert resumed.returncode == 0, resumed.stderr.decode()
    save_state(state, saved)

    # the state names a binlog the server purged: an error naming it, no retry, no jump ahead
    server.flush_logs()
    batch(server, 2)
    server.execute(f"PURGE BINARY LOGS TO '{server.current_binlog().name}'")
    purged = run_tail(fresh_server, "repl_native", *args)
    assert purged.returncode == 2  # (ExitStatus.ERROR: never retried, it needs a person)
    assert saved.resume.file.encode() in purged.stderr and b"purged" in purged.stderr
    assert b"reconnecting" not in purged.stderr and PASSWORD.encode() not in purged.stderr


# -- the GTID state of a resume point --------------------------------------------------------------------------


@pytest.mark.server
def test_a_transactions_resume_point_holds_its_gtid(fresh_server: ReplServer) -> None:
    """The change stream's resume point after a transaction read from a server has the GTID state at the
    transaction's end (it included); the client's own point, after the same event, leaves the group out (it
    resumes event for event by replaying that group and dropping what it delivered)."""
    server = fresh_server.server
    batch(server, 1)
    client = ReplicationClient(fresh_server.options(), StartAt.oldest(), follow=False)
    transactions = list(ChangeStream(ServerSource(client)))
    with_gtid = [trx for trx in transactions if trx.gtid is not None]
    assert len(with_gtid) >= 5
    for trx in with_gtid:
        assert trx.resume is not None and trx.resume.gtid == trx.gtid  # one domain, one server: the state is it
    last = client.resume_point
    assert last is not None and last.gtid is not None and last.gtid != with_gtid[-1].gtid
    assert with_gtid[-1].resume == ResumePoint(last.file, last.position, gtid_now(server), "mariadb")


# -- the state record ------------------------------------------------------------------------------------------


def test_the_state_round_trips_and_refuses_anything_else(tmp_path: Path) -> None:
    point = ResumePoint("binlog.000007", 1234, "0-1-9", "mariadb")
    state = TailState(point, "gtid", "debezium", 4096)
    path = tmp_path / "s"
    save_state(path, state)
    assert load_state(path) == state and TailState.from_json(state.to_json()) == state
    assert json.loads(path.read_text())["resume"] == json.loads(point.to_json())
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed
    assert load_state(tmp_path / "none") is None
    kept = TailState(point, "gtid", "debezium", 4096, debezium=LEGACY_MODES.text())
    assert TailState.from_json(kept.to_json()) == kept and json.loads(kept.to_json())["debezium"] == LEGACY_MODES.text()
    from binlake.render.dump.output import Session

    texts = TailState(point, "gtid", "text", 4096, session=Session(db="shop", charset=(33, 33, 8), sql_mode=0))
    assert TailState.from_json(texts.to_json()) == texts and json.loads(texts.to_json())["session"]["db"] == "shop"
    data = json.loads(state.to_json())
    session = json.loads(texts.to_json())["session"]
    for bad in (
        {**data, "session": {**session, "charset": "utf8"}},
        {**data, "session": {**session, "sql_mode": "x"}},
        {**data, "session": {k: v for k, v in session.items() if k != "db"}},
        {**data, "session": {**session, "auto_increment": [1]}},
        {**data, "version": 2},
        {**data, "by": "time"},
        {**data, "format": "sql"},
        {**data, "output_offset": -1},
        {**data, "extra": 1},
        {**data, "debezium": 1},
        {**data, "resume": {**data["resume"], "position": 2}},
        [1],
    ):
        with pytest.raises(ReplicationError):
            TailState.from_json(json.dumps(bad))
    with pytest.raises(ReplicationError):
        TailState.from_json(b"\xff")


def test_from_takes_a_file_and_a_position() -> None:
    assert StartAt.parse_at("binlog.000003") == StartAt.at("binlog.000003", 4)
    assert StartAt.parse_at("binlog.000003:1234") == StartAt.at("binlog.000003", 1234)
    for bad in ("", ":4", "binlog.000003:", "binlog.000003:x", "binlog.000003:2"):
        with pytest.raises(ReplicationError):
            StartAt.parse_at(bad)
