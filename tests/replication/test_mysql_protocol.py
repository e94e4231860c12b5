"""The MySQL-only parts no private server here can run, against a protocol-level MySQL 8 (tests/replication/
_fake_mysql.py, written from MySQL's protocol documentation): caching_sha2_password as PyMySQL does it (the fast
path's scramble, then the full authentication with the RSA public key request on a connection without TLS),
COM_BINLOG_DUMP_GTID with MySQL's binary GTID set (tagged GTIDs of 8.4+ too), MySQL 8 TRANSACTION_PAYLOAD events
and heartbeats v2 over the wire, and a resumption by GTID inside a transaction."""

from __future__ import annotations

import contextlib
import random
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.replication import _dump as d
from tests.replication._fake_mysql import FakeMySQL

from binlake.errors import BinlogError, ReplicationError
from binlake.events.control import HeartbeatEvent
from binlake.reader import read_events
from binlake.replication import ConnectionOptions, ReplicationClient, RetryPolicy, Secret, StartAt, TlsOptions
from binlake.replication.protocol import BINLOG_DUMP_NON_BLOCK, BINLOG_THROUGH_GTID, register_slave

RUST = "mysql/rust_mysql_common"


@pytest.fixture
def fake(request: pytest.FixtureRequest, corpus_dir: Path) -> Iterator[FakeMySQL]:
    name, drops = request.param
    server = FakeMySQL(corpus_dir / RUST / name, b"repl", b"sha2 secret", drops=drops)
    yield server
    server.close()


def options(fake: FakeMySQL, password: str = "sha2 secret") -> ConnectionOptions:
    return ConnectionOptions(
        "127.0.0.1",
        "repl",
        server_id=99,
        port=fake.port,
        password=Secret(password),
        tls=TlsOptions("preferred"),
        heartbeat=1.0,
        timeout=5.0,
        retry=RetryPolicy(3, 0.01, 0.02),
    )


@pytest.mark.parametrize("fake", [("transaction_compression.000001", ())], indirect=True)
def test_caching_sha2_and_a_gtid_dump_of_compressed_transactions(fake: FakeMySQL) -> None:
    gtid = "357df524-4139-11ee-9979-b033ee13919e:1"
    client = ReplicationClient(options(fake), StartAt.after_gtid(gtid), follow=False)
    got = list(client)
    assert fake.fast_scrambles_ok == [True] and fake.rsa_passwords == [b"sha2 secret\0"]
    assert client.server is not None and client.server.flavor == "mysql" and not client.server.tls
    (dump,) = fake.dumps
    assert (dump.flags, dump.server_id, dump.name, dump.position) == (
        BINLOG_DUMP_NON_BLOCK | BINLOG_THROUGH_GTID,
        99,
        b"",
        4,
    )
    assert str(dump.gtid_set) == gtid
    assert fake.registered == [register_slave(99)[1:]]
    assert (
        "SET @master_binlog_checksum = @@global.binlog_checksum, @source_binlog_checksum = @@global.binlog_checksum"
        in fake.queries
    )
    assert "SET @master_heartbeat_period = 1000000000, @source_heartbeat_period = 1000000000" in fake.queries
    theirs = list(read_events(fake.binlog))
    mine = [se.event for se in got if se.in_file]
    assert [e.type for e in mine] == [e.type for e in theirs]
    assert sum(e.header.in_payload is not None for e in mine) == 4  # QUERY, TABLE_MAP, WRITE_ROWS, XID inside
    for x, y in zip(mine, theirs, strict=True):
        assert x == y or (x.type == "FORMAT_DESCRIPTION_EVENT" and x.header.flags == y.header.flags & ~1)
    beats = [se.event for se in got if isinstance(se.event, HeartbeatEvent)]
    assert len(beats) == 1 and beats[0].type == "HEARTBEAT_LOG_EVENT_V2"
    assert beats[0].log_file == fake.binlog.name and beats[0].position == 197


@pytest.mark.parametrize("fake", [("binlog_transaction_with_GTID_TAG.000001", (5, 6))], indirect=True)
def test_a_tagged_gtid_resumption_inside_a_transaction(fake: FakeMySQL) -> None:
    """The first dump ends after the transaction's TABLE_MAP, the second after its rows: each time the client asks
    again with the GTID set before the transaction and drops what it already delivered."""
    start = "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2"
    sleeps: list[float] = []
    client = ReplicationClient(options(fake), StartAt.after_gtid(start), follow=False, sleep=sleeps.append)
    got = [se for se in client if se.in_file]
    assert len(fake.dumps) == 3 and len(sleeps) == 2
    assert [str(dump.gtid_set) for dump in fake.dumps] == [start] * 3
    assert [(se.start, se.event.type) for se in got] == [(e.header.pos, e.type) for e in read_events(fake.binlog)]
    assert client.gtid_state == "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-3"
    point = client.resume_point
    assert point is not None and point.flavor == "mysql" and point.gtid == start
    assert (point.file, point.position) == ("binlog.000005", 4)


@pytest.mark.parametrize("fake", [("transaction_compression.000001", ())], indirect=True)
def test_a_wrong_password_is_refused_once(fake: FakeMySQL) -> None:
    sleeps: list[float] = []
    with pytest.raises(ReplicationError, match="Access denied") as info:
        list(ReplicationClient(options(fake, "not it"), StartAt.after_gtid(""), sleep=sleeps.append))
    assert sleeps == [] and "not it" not in str(info.value)
    assert fake.rsa_passwords == [b"not it\0"]


@pytest.mark.parametrize(
    "answer",
    [
        b"",  # the server closes at once
        d.frame(b"\x0a5.7\0", 0),  # a cut handshake
        d.frame(random.Random(3).randbytes(90), 0),
        d.frame(b"\x0a8.0.36\0" + bytes(4) + bytes(8) + b"\0" + b"\xff\xff\x21\x02\x00\xff\xff\x15" + bytes(23), 0)
        + d.frame(b"\xfeno_such_plugin\0xx", 2),  # a switch to an unknown authentication plugin
        d.frame(random.Random(4).randbytes(3000), 0)[:1500],  # a packet that never ends: the timeout
    ],
)
def test_garbage_from_the_server_is_a_binlake_error(answer: bytes) -> None:
    """Whatever a server (or something else on its port) answers, only binlake errors come out."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)

        def serve() -> None:
            for _ in range(2):
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.sendall(answer)
                    with contextlib.suppress(OSError):
                        conn.recv(65536)

        threading.Thread(target=serve, daemon=True).start()
        options = ConnectionOptions(
            "127.0.0.1",
            "repl",
            server_id=99,
            port=listener.getsockname()[1],
            password=Secret("x"),
            heartbeat=0.5,
            timeout=1.0,
            retry=RetryPolicy(1, 0.01, 0.02),
        )
        with pytest.raises(BinlogError):
            list(ReplicationClient(options, StartAt.oldest(), sleep=lambda _: None))
