"""Resume points, start points, connection options, the password's sources and where it must never show."""

from __future__ import annotations

import argparse
import contextlib
import json
import pickle
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.cli.connection import add_connection_arguments, connection_from_args
from binlake.errors import BinlogError, ReplicationError
from binlake.reader import binlog_order
from binlake.replication import options as opt
from binlake.replication.options import ConnectionOptions, RetryPolicy, Secret, TlsOptions
from binlake.replication.position import ResumePoint, StartAt


def test_resume_point_round_trips_through_json() -> None:
    for point in (
        ResumePoint("binlog.000003", 4),
        ResumePoint("mysql-bin.001234", 2**40, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", "mysql"),
        ResumePoint("x.000001", 1234, "0-1-5,1-2-3", "mariadb"),
    ):
        text = point.to_json()
        assert json.loads(text)["version"] == 1
        assert ResumePoint.from_json(text) == point
        assert ResumePoint.from_json(text.encode()) == point


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"version":1,"file":"b.000001","position":4,"gtid":null}',
        '{"version":2,"file":"b.000001","position":4,"gtid":null,"flavor":null}',
        '{"version":1,"file":"b.000001","position":3,"gtid":null,"flavor":null}',
        '{"version":1,"file":"b.000001","position":"4","gtid":null,"flavor":null}',
        '{"version":1,"file":"b.000001","position":true,"gtid":null,"flavor":null}',
        '{"version":1,"file":"../b.000001","position":4,"gtid":null,"flavor":null}',
        '{"version":1,"file":7,"position":4,"gtid":null,"flavor":null}',
        '{"version":1,"file":"b.000001","position":4,"gtid":5,"flavor":null}',
        '{"version":1,"file":"b.000001","position":4,"gtid":null,"flavor":"oracle"}',
        '{"version":1,"file":"b.000001","position":4,"gtid":null,"flavor":null,"password":"x"}',
    ],
)
def test_resume_point_refuses_anything_else(text: str) -> None:
    with pytest.raises(ReplicationError):
        ResumePoint.from_json(text)


@given(st.text(max_size=80) | st.binary(max_size=80))
def test_resume_point_parsing_raises_only_binlake_errors(text: str | bytes) -> None:
    with contextlib.suppress(BinlogError):
        ResumePoint.from_json(text)


def test_start_points() -> None:
    point = ResumePoint("b.000002", 900, "0-1-4", "mariadb")
    assert StartAt.resume(point) == StartAt("position", "b.000002", 900)
    assert StartAt.resume(point, by="gtid") == StartAt("gtid", "b.000002", 900, "0-1-4")
    with pytest.raises(ReplicationError):
        StartAt.resume(ResumePoint("b.000002", 900), by="gtid")
    with pytest.raises(ReplicationError):
        StartAt.at("b.000001", 3)
    assert sorted(["b.1000000", "b.999999", "a.000001"], key=binlog_order) == ["a.000001", "b.999999", "b.1000000"]


def test_server_id_is_required_and_never_zero() -> None:
    with pytest.raises(ReplicationError, match="server id 0"):
        ConnectionOptions("db", "repl", server_id=0)
    with pytest.raises(ReplicationError):
        ConnectionOptions("db", "repl", server_id=2**32)
    with pytest.raises(TypeError):
        ConnectionOptions("db", "repl")  # type: ignore[call-arg]
    with pytest.raises(ReplicationError, match="heartbeat"):
        ConnectionOptions("db", "repl", server_id=1, heartbeat=30, timeout=20)


def test_the_password_never_shows() -> None:
    o = ConnectionOptions("db", "repl", server_id=9, password=Secret("hunter2"))
    assert "hunter2" not in repr(o) and "hunter2" not in str(o) and "hunter2" not in o.address
    assert o.password.reveal() == b"hunter2" and "hunter2" not in repr(o.password)
    with pytest.raises(TypeError):
        pickle.dumps(o)
    with pytest.raises(TypeError):
        pickle.dumps(o.password)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    return parser.parse_args(argv)


BASE = ["--host", "db1", "--user", "repl", "--server-id", "42"]


def test_password_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(opt.PASSWORD_ENV, raising=False)
    monkeypatch.setattr("sys.stdin", None)
    assert connection_from_args(_parse(BASE)).password == Secret("")
    monkeypatch.setenv(opt.PASSWORD_ENV, "from-env")
    assert connection_from_args(_parse(BASE)).password.reveal() == b"from-env"
    pw = tmp_path / "pw"
    pw.write_text("from-file\nsecond line\n")
    assert connection_from_args(_parse([*BASE, "--password-file", str(pw)])).password.reveal() == b"from-file"
    with pytest.raises(ReplicationError, match="password file"):
        connection_from_args(_parse([*BASE, "--password-file", str(tmp_path / "missing")]))

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv(opt.PASSWORD_ENV)
    monkeypatch.setattr("sys.stdin", Tty())
    monkeypatch.setattr("getpass.getpass", lambda prompt: "typed" if "repl@db1" in prompt else "?")
    assert connection_from_args(_parse(BASE)).password.reveal() == b"typed"


@pytest.mark.parametrize("flag", ["--password", "--passwd", "--pass", "--password=s3cret-pw"])
def test_a_password_on_the_command_line_is_refused_and_not_echoed(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        _parse([*BASE, flag, "s3cret-pw"])
    assert "s3cret-pw" not in capsys.readouterr().err


def test_flags_to_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", None)
    monkeypatch.delenv(opt.PASSWORD_ENV, raising=False)
    o = connection_from_args(_parse([*BASE, "--port", "3307", "--heartbeat", "2", "--timeout", "9"]), follow=False)
    assert (o.host, o.port, o.user, o.server_id, o.heartbeat, o.timeout) == ("db1", 3307, "repl", 42, 2, 9)
    assert o.tls == TlsOptions("preferred") and o.retry.retries == 5
    assert connection_from_args(_parse(BASE), follow=True).retry.retries is None
    ca = tmp_path / "ca.pem"
    assert connection_from_args(_parse([*BASE, "--ssl-ca", str(ca)])).tls == TlsOptions("verify_ca", ca)
    assert connection_from_args(_parse([*BASE, "--ssl-mode", "disabled"])).tls.mode == "disabled"
    with pytest.raises(ReplicationError, match="ssl-ca"):
        connection_from_args(_parse([*BASE, "--ssl-mode", "VERIFY_IDENTITY"]))
    with pytest.raises(SystemExit):
        _parse(["--host", "db1", "--user", "repl"])  # no --server-id: no silent default


def test_backoff_is_capped_exponential_with_jitter() -> None:
    policy = RetryPolicy(initial=0.5, maximum=8.0)
    rng = random.Random(1)
    for attempt, cap in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 8.0), (60, 8.0), (500, 8.0)]:
        waits = [policy.delay(attempt, rng) for _ in range(200)]
        assert all(cap / 2 <= w <= cap for w in waits)
        assert max(waits) - min(waits) > cap / 4  # jittered, not fixed


def test_a_first_question_is_asked_again_after_a_lost_connection_then_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """``connected``: a closed port is tried ``retries + 1`` times with the policy's growing waits between (no real
    sleep here), then its ConnectionLostError; a question whose connection is lost once is answered on the next."""
    import socket

    import binlake.replication.client as client
    from binlake.errors import ConnectionLostError

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = ConnectionOptions("127.0.0.1", "u", port=port, server_id=7, retry=RetryPolicy(2, initial=1.0))
    waits: list[float] = []
    with pytest.raises(ConnectionLostError, match="refused"):
        client.connected(options, lambda conn: "never", sleep=waits.append)
    assert len(waits) == 2 and 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0

    monkeypatch.setattr(client.ReplicationConnection, "open", lambda self: None)
    asked: list[object] = []

    def ask(conn: object) -> str:
        asked.append(conn)
        if len(asked) == 1:
            raise ConnectionLostError("the server went away")
        return "answered"

    assert client.connected(options, ask, sleep=waits.append) == "answered"
    assert len(asked) == 2 and asked[0] is not asked[1] and len(waits) == 3
