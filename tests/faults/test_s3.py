"""A lake and binlogs on S3 whose connection drops: a TCP proxy (:class:`binlake.testing.proxy.CuttingProxy`) in
front of the suite's moto server cuts a connection at each kind of write an ingest makes (its writer lease, its
batch's manifest, a task's Parquet upload, a table's Delta commit, the completion mark), before the store takes it
or after (its answer lost), after N bytes, or for good (the store unreachable from then on); and the reads of the
commands that take ``s3://`` binlogs.

The outcome each gives is the matrix's (docs: reference/faults): the store's client retries with backoff and the
command ends as a clean run does, or it stops with one line naming the place and the reason, exit 3 (a store
unreachable through its client's retries: a reason that passes); never a hang.  Nothing is lost: the same command
once the store answers gives a clean run's lake, and a clean run's output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.faults._matrix import ENV, EXAMPLE, Case, binlake, in_process
from tests.spark.test_spark import _lake_snapshot

from binlake.storage import locate
from binlake.testing.objectstore import S3Server
from binlake.testing.proxy import CuttingProxy

pytestmark = pytest.mark.faults

BOUND = 120.0  # seconds: the example's ingest into S3 through every retry of the store's clients
READ_BOUND = 60.0
IGNORE = frozenset({"batch"})
WRITES = {  # each kind of write an ingest makes, as the request line that carries it
    "the writer lease": rb"PUT [^ ]*/_binlake/lease/_delta_log/\d+\.json HTTP",
    "the batch's manifest": rb"POST [^ ]*/_binlake/batches/\d+\.json\?uploads",
    "a task's Parquet upload": rb"PUT [^ ]*\.parquet\?partNumber",
    "a table's Delta commit": rb"PUT [^ ]*/changes/_delta_log/\d+\.json HTTP",
    "the completion mark": rb"POST [^ ]*/_binlake/batches/\d+\.done\?uploads",
}


class Store:
    """The moto server behind a cutting proxy, its environment for clients going through the proxy."""

    def __init__(self, server: S3Server, proxy: CuttingProxy) -> None:
        self.server, self.proxy = server, proxy
        self.env = {**server.env(), "AWS_ENDPOINT_URL": proxy.endpoint}

    def lake(self) -> str:
        return f"s3://{self.server.bucket()}/lake"


@pytest.fixture(scope="module")
def store(s3_server: S3Server, spark: Any) -> Iterator[Store]:
    """The store through the proxy, its environment in this process and in the Spark session's Python workers
    (taken away after the module)."""
    with CuttingProxy("127.0.0.1", s3_server.port) as proxy, pytest.MonkeyPatch.context() as mp:
        store = Store(s3_server, proxy)
        context = spark.sparkContext
        for k, v in store.env.items():
            mp.setenv(k, v)
        context.environment.update(store.env)
        try:
            yield store
        finally:
            for k in store.env:
                context.environment.pop(k, None)


@pytest.fixture(scope="module")
def clean_lake(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example's lake from a clean run (on a local disk: the S3 lakes hold the same rows)."""
    lake = tmp_path_factory.mktemp("clean") / "lake"
    assert in_process("ingest", str(EXAMPLE), "--lake", str(lake), bound=BOUND).status == 0
    return _lake_snapshot(lake, ignore=IGNORE)


def _again_clean(store: Store, lake: str, clean: dict[str, Any]) -> None:
    """Once the store answers, the same ingest leaves a clean run's lake."""
    store.proxy.up()
    again = in_process("ingest", str(EXAMPLE), "--lake", lake, bound=BOUND)
    assert again.status == 0, str(again)
    assert _lake_snapshot(lake, ignore=IGNORE) == clean


def _expect_dropped(case: Case, ran: Any, proxy_cuts: int, *, why: str) -> None:
    """A run whose connection was cut: it ended as a clean run does (the store's client retried), or stopped
    with one line naming the lake, exit 3."""
    assert proxy_cuts >= 1, f"the proxy cut nothing ({why})"
    if ran.status == 0:
        case.expect(ran, 0, bound=BOUND, note="retried by the store's client")
    else:
        case.expect(ran, 3, "s3://", bound=BOUND)


@pytest.mark.spark
@pytest.mark.parametrize("answered", [False, True], ids=["before the store takes it", "its answer lost"])
@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_cut_mid_ingest(
    case: Case, store: Store, clean_lake: dict[str, Any], write: str, answered: bool
) -> None:
    """``binlake ingest examples/... --lake s3://...`` while the connection carrying one write drops: retried
    (or one line, exit 3); once the store answers, a clean run's lake."""
    lake = store.lake()
    before = store.proxy.counts()["cuts"]
    store.proxy.cut_on(WRITES[write], times=1, answered=answered)
    ran = in_process("ingest", str(EXAMPLE), "--lake", lake, bound=BOUND)
    _expect_dropped(case, ran, store.proxy.counts()["cuts"] - before, why=write)
    _again_clean(store, lake, clean_lake)


@pytest.mark.spark
@pytest.mark.parametrize("at", [0.1, 0.3, 0.5, 0.7, 0.9], ids=lambda f: f"{int(f * 100)}%")
def test_a_connection_cut_after_n_bytes(case: Case, store: Store, clean_lake: dict[str, Any], at: float) -> None:
    """The connection that carries the byte at ``at`` of a clean ingest's traffic drops: retried (or one line, exit
    3); once the store answers, a clean run's lake."""
    lake = store.lake()
    before = store.proxy.counts()
    assert in_process("ingest", str(EXAMPLE), "--lake", store.lake(), bound=BOUND).status == 0
    after = store.proxy.counts()
    traffic = after["bytes_up"] + after["bytes_down"] - before["bytes_up"] - before["bytes_down"]
    store.proxy.cut_after(int(traffic * at))
    ran = in_process("ingest", str(EXAMPLE), "--lake", lake, bound=BOUND)
    _expect_dropped(case, ran, store.proxy.counts()["cuts"] - after["cuts"], why=f"at {at:.0%} of {traffic} bytes")
    _again_clean(store, lake, clean_lake)


@pytest.mark.spark
def test_the_store_gone_at_a_commit(case: Case, store: Store, clean_lake: dict[str, Any]) -> None:
    """The store becomes unreachable as a table's Delta commit is sent, and stays so: within the bound, one line
    naming the table and the reason, exit 3 (a later run goes on); once it answers, a clean run's lake."""
    lake = store.lake()
    store.proxy.cut_on(WRITES["a table's Delta commit"], times=1, then_down=True)
    ran = in_process("ingest", str(EXAMPLE), "--lake", lake, bound=BOUND)
    case.expect(ran, 3, f"{lake}/shop/", bound=BOUND, note="the store's client retried first")
    _again_clean(store, lake, clean_lake)


READERS = [["events"], ["dump"], ["stats"], ["changes"], ["explain", "--at", "22785"]]


@pytest.fixture(scope="module")
def s3_binlog(store: Store, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """The example in the store, and each reading command's output of it read from a local disk (the file names
    replaced)."""
    uri = f"s3://{store.server.bucket()}/binlogs/{EXAMPLE.name}"
    locate(uri).write_bytes(EXAMPLE.read_bytes())
    local = tmp_path_factory.mktemp("local") / EXAMPLE.name
    local.write_bytes(EXAMPLE.read_bytes())
    outputs = {}
    for command, *rest in READERS:
        ran = binlake(command, str(local), *rest, bound=READ_BOUND)
        outputs[command] = ran.stdout.replace(str(local), uri)
    return uri, outputs


@pytest.mark.parametrize("args", READERS, ids=[r[0] for r in READERS])
def test_reading_a_binlog_whose_connection_drops(
    case: Case, store: Store, s3_binlog: tuple[str, dict[str, str]], args: list[str]
) -> None:
    """``binlake COMMAND s3://.../example-bin.000001`` while the connection of its read drops once: the read is
    retried, the output is a clean run's; with the store gone: one line naming the binlog and the reason, exit 3;
    once it answers, a clean run's output."""
    uri, outputs = s3_binlog
    env = {**ENV, **store.env}
    command, *rest = args
    store.proxy.cut_on(rb"GET /[^ ]*/binlogs/example-bin\.000001 HTTP", times=1, answered=True)
    ran = binlake(command, uri, *rest, bound=READ_BOUND, env=env)
    case.expect(ran, 0, bound=READ_BOUND, note="retried by the store's client")
    assert ran.stdout == outputs[command]
    store.proxy.down()
    try:
        gone = binlake(command, uri, *rest, bound=READ_BOUND, env=env)
    finally:
        store.proxy.up()
    case.expect(gone, 3, f"binlake {command}: {uri}: storage error: ", bound=READ_BOUND)
    assert binlake(command, uri, *rest, bound=READ_BOUND, env=env).stdout == outputs[command]


def test_the_proxy_cuts_what_it_is_told(tmp_path: Path, s3_server: S3Server) -> None:
    """The proxy itself: it forwards, cuts a request before or after the store takes it, and refuses while down
    (a test of the tool the cases above rest on)."""
    import urllib.error
    import urllib.request

    with CuttingProxy("127.0.0.1", s3_server.port) as proxy:
        url = f"{proxy.endpoint}/moto-api/"
        assert urllib.request.urlopen(url, timeout=10).status == 200
        for answered in (False, True):
            proxy.cut_on(rb"GET /moto-api/ HTTP", times=1, answered=answered)
            with pytest.raises((urllib.error.URLError, ConnectionError)):
                urllib.request.urlopen(url, timeout=10)
            assert urllib.request.urlopen(url, timeout=10).status == 200  # once only
        proxy.down()
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(url, timeout=10)
        proxy.up()
        assert urllib.request.urlopen(url, timeout=10).status == 200
        counts = proxy.counts()
        assert counts["cuts"] >= 3 and counts["bytes_down"] > 0
        assert proxy.requests().count("GET /moto-api/ HTTP/1.1") == 6  # (the one refused while down sent nothing)
