"""The replication client against a private MariaDB 10.11: every event it streams equals, byte for byte and
decoded, what the file reader reads from the server's own binlog files, for each way of authenticating (a native
password, ed25519, TLS with certificates the test made); what each privilege allows; heartbeats; semi-sync
acknowledgements the server counts."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from tests.replication.conftest import PASSWORD, ReplServer, file_events, idle, keys, streamed, until

from binlake.errors import BinlogError, ReplicationError
from binlake.events.control import HeartbeatEvent
from binlake.events.format import FormatDescriptionEvent
from binlake.reader import read_events
from binlake.replication import ReplicationClient, RetryPolicy, StartAt, StreamEvent, TlsOptions

pytestmark = pytest.mark.server


@pytest.mark.parametrize(
    ("user", "tls_mode", "encrypted"),
    [
        ("repl_native", "disabled", False),
        ("repl_native", "preferred", True),
        ("repl_ed25519", "required", True),
        ("repl_tls", "verify_identity", True),  # REQUIRE X509: a client certificate signed by the test's CA
    ],
)
def test_every_event_equals_the_servers_file(
    repl_server: ReplServer, user: str, tls_mode: str, encrypted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tls = repl_server.options(user).tls if tls_mode == "verify_identity" else TlsOptions(tls_mode)  # type: ignore[arg-type]
    client = ReplicationClient(repl_server.options(user, tls=tls), StartAt.oldest(), follow=False, keep_raw=True)
    got = list(client)
    assert client.server is not None and client.server.tls is encrypted and client.server.flavor == "mariadb"
    ours = streamed(got)
    ref = file_events(repl_server.server)
    assert len(ref) > 1000
    assert keys(ours) == keys(ref[: len(ours)]) and len(ours) >= len(ref) - 2  # the last file may have grown since
    active = ref[-1].file
    for a, b in zip(ours, ref, strict=False):
        if a.file == active and a.type == "FORMAT_DESCRIPTION_EVENT":  # the dump thread clears the in-use flag
            assert a.raw[:17] + a.raw[18:] == b.raw[:17] + b.raw[18:] and a.raw[17] == b.raw[17] & 0xFE
        else:
            assert a.raw == b.raw, (a.file, a.start, a.type)
    # decoded equal too, the events inside transaction payloads included
    by_file: dict[str, list[StreamEvent]] = {}
    for se in got:
        if se.in_file:
            by_file.setdefault(se.file, []).append(se)
    for path in repl_server.server.binlog_files()[:-1]:
        mine = [se.event for se in by_file[path.name]]
        theirs = list(read_events(path))
        assert len(mine) == len(theirs), path.name
        for x, y in zip(mine, theirs, strict=True):
            assert x == y or (isinstance(x, FormatDescriptionEvent) and x.header.flags == y.header.flags & ~1)
    assert [se.event.type for se in got if not se.in_file].count("ROTATE_EVENT") == len(by_file)
    assert PASSWORD not in caplog.text


def test_privileges(repl_server: ReplServer) -> None:
    """REPLICATION SLAVE suffices to stream; the server's current end needs BINLOG MONITOR (REPLICATION CLIENT);
    without REPLICATION SLAVE the error says so; none of these is retried."""
    sleeps: list[float] = []
    only = ReplicationClient(
        repl_server.options("repl_slave_only"), StartAt.oldest(), follow=False, sleep=sleeps.append
    )
    assert len(streamed(only)) > 1000
    with pytest.raises(ReplicationError, match="BINLOG MONITOR"):
        list(ReplicationClient(repl_server.options("repl_slave_only"), StartAt.current(), sleep=sleeps.append))
    # REPLICATION CLIENT (granted to repl_ed25519) is BINLOG MONITOR's old name in MariaDB 10.5+
    assert any("BINLOG MONITOR" in g for (g,) in repl_server.server.query("SHOW GRANTS FOR repl_ed25519@'127.0.0.1'"))
    current = ReplicationClient(repl_server.options("repl_ed25519"), StartAt.current(), follow=False)
    assert streamed(current) == [] and current.resume_point is not None
    with pytest.raises(ReplicationError, match="lacks REPLICATION SLAVE"):
        list(ReplicationClient(repl_server.options("no_repl"), StartAt.oldest(), sleep=sleeps.append))
    bad = repl_server.options("repl_native")
    object.__setattr__(bad, "password", type(bad.password)("wrong"))
    with pytest.raises(ReplicationError, match="Access denied") as info:
        list(ReplicationClient(bad, StartAt.oldest(), sleep=sleeps.append))
    assert "wrong" not in str(info.value) and PASSWORD not in str(info.value)
    tls_user = repl_server.options("repl_tls", tls=TlsOptions("preferred"))  # REQUIRE X509 without a certificate
    with pytest.raises(ReplicationError):
        list(ReplicationClient(tls_user, StartAt.oldest(), sleep=sleeps.append))
    assert sleeps == []


def test_a_second_replica_with_the_same_server_id_cuts_the_first_off(repl_server: ReplServer) -> None:
    sleeps: list[float] = []
    first = iter(ReplicationClient(repl_server.options(server_id=77), StartAt.current(), sleep=sleeps.append))
    until(first, idle, [])
    second = iter(ReplicationClient(repl_server.options(server_id=77), StartAt.current()))
    until(second, idle, [])
    with pytest.raises(ReplicationError, match="server id") as info:
        until(first, lambda se: False, [], timeout=20)
    assert "--server-id" in str(info.value) and sleeps == []


def test_heartbeats_while_idle(repl_server: ReplServer) -> None:
    client = ReplicationClient(repl_server.options(heartbeat=0.2, timeout=2.0), StartAt.current())
    events = iter(client)
    seen: list[StreamEvent] = []
    t0 = time.monotonic()
    beats = [until(events, idle, seen) for _ in range(5)]
    assert time.monotonic() - t0 < 5
    point = client.resume_point
    assert point is not None
    for se in beats:
        hb = se.event
        assert isinstance(hb, HeartbeatEvent) and not se.in_file
        assert (hb.log_file, hb.position) == (point.file, point.position)
    client.close()


def test_semi_sync_acknowledgements_release_commits(fresh_server: ReplServer) -> None:
    server = fresh_server.server
    server.execute("SET GLOBAL rpl_semi_sync_master_enabled = 1, GLOBAL rpl_semi_sync_master_timeout = 30000")
    client = ReplicationClient(fresh_server.options(semi_sync=True), StartAt.current())
    events = iter(client)
    until(events, idle, [])
    assert server.query("SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'") == [("Rpl_semi_sync_master_clients", "1")]
    took: list[float] = []

    def commit() -> None:
        t0 = time.monotonic()
        server.execute("INSERT INTO r.t VALUES (1, 1, 'semi-sync')")
        took.append(time.monotonic() - t0)

    writer = threading.Thread(target=commit)
    writer.start()
    acked = until(events, lambda se: se.ack, [], timeout=20)
    assert acked.event.type == "XID_EVENT"
    until(events, lambda se: not writer.is_alive(), [], timeout=20)
    writer.join()
    status = dict(server.query("SHOW STATUS LIKE 'Rpl_semi_sync_master_%_tx'"))
    assert took[0] < 10 and status == {"Rpl_semi_sync_master_no_tx": "0", "Rpl_semi_sync_master_yes_tx": "1"}
    client.close()


def test_errors_of_a_closed_port_are_retried_then_raised(repl_server: ReplServer) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = repl_server.options(retry=RetryPolicy(2, 0.01, 0.02))
    object.__setattr__(options, "port", port)
    sleeps: list[float] = []
    with pytest.raises(BinlogError, match="Connection refused"):
        list(ReplicationClient(options, StartAt.oldest(), sleep=sleeps.append))
    assert len(sleeps) == 2
