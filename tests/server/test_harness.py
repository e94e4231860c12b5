"""The private-MariaDB harness: servers start and stop cleanly, the workloads write the binlogs the tests rely
on, ``mariadb-binlog`` reads them, ``query()`` returns values exactly, and BINLAKE_STRICT_SKIPS works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import binlake.testing.mariadb as mariadb_mod
from binlake.testing.mariadb import MariaDBError, MariaDBServer, WorkloadBinlogs, available

pytestmark = pytest.mark.server

BINLOG_MAGIC = b"\xfebin"
# workload name -> number of binlog files it writes (its FLUSH / checksum-change points)
EXPECTED_FILES = {
    "types": 1,
    "temporal_old": 1,
    "dml": 1,
    "ddl": 2,
    "stmt_mixed": 1,
    "row_image": 1,
    "compressed": 1,
    "nochecksum": 2,
    "meta_minimal": 1,
    "meta_nolog": 1,
    "tail": 2,
}
needs_mariadb = pytest.mark.skipif(not available(), reason="MariaDB server not installed")


def _decode(server: MariaDBServer, path: Path, *args: str) -> str:
    rc, out, err = server.mariadb_binlog(list(args), path)
    assert rc == 0, f"mariadb-binlog {' '.join(args)} {path.name} failed: {err}"
    return out.decode("utf-8", "replace")


def test_workloads_write_the_expected_files(workload_binlogs: WorkloadBinlogs) -> None:
    counts = {name: len(files) for name, files in workload_binlogs.by_workload.items()}
    assert counts == EXPECTED_FILES
    assert workload_binlogs.files == [f for files in workload_binlogs.by_workload.values() for f in files]
    names = [f.name for f in workload_binlogs.files]
    assert names == sorted(names) and len(set(names)) == len(names)
    for path in workload_binlogs.files:
        assert path.read_bytes()[:4] == BINLOG_MAGIC
    # the types workload holds the ~4 MiB row, the empty rotation is header events only
    assert workload_binlogs.by_workload["types"][0].stat().st_size > 4 * 1024 * 1024
    assert workload_binlogs.by_workload["tail"][0].stat().st_size < 1024


def test_mariadb_binlog_decodes_every_file(workload_binlogs: WorkloadBinlogs) -> None:
    server = workload_binlogs.server
    for path in workload_binlogs.files:
        text = _decode(server, path)
        # every file is closed: the fixture's last FLUSH rotated away from the last one
        assert f"Rotate to {server.binlog_basename}." in text.rsplit("# at ", 1)[-1], path.name
        if path not in workload_binlogs.by_workload["temporal_old"]:  # mariadb-binlog -v fails on those types
            _decode(server, path, "--base64-output=DECODE-ROWS", "-vv")


def test_files_have_the_event_kinds_their_workload_promises(workload_binlogs: WorkloadBinlogs) -> None:
    server, by = workload_binlogs.server, workload_binlogs.by_workload
    compressed = _decode(server, by["compressed"][0], "--base64-output=DECODE-ROWS", "-vv")
    for kind in ("Query_compressed", "Write_compressed_rows", "Update_compressed_rows", "Delete_compressed_rows"):
        assert kind in compressed
    nochecksum, after = (_decode(server, p) for p in by["nochecksum"])
    assert "CRC32 0x" not in nochecksum and "Xid = " in nochecksum and "XA PREPARE" in nochecksum
    assert "CRC32 0x" in after
    stmt = _decode(server, by["stmt_mixed"][0])
    for kind in ("Intvar", "Rand", "User_var", "Begin_load_query", "Execute_load_query", "Write_rows"):
        assert kind in stmt, kind
    dml = _decode(server, by["dml"][0], "--base64-output=DECODE-ROWS", "-vv", "--print-table-metadata")
    assert "XA END X'0102ff',X'627175616c2d78',42" in dml and "XA ROLLBACK" in dml
    assert "# Columns(`id` INT NOT NULL" in dml  # FULL metadata: column names
    meta_min = _decode(server, by["meta_minimal"][0], "--base64-output=DECODE-ROWS", "-vv")
    assert "@2=-5" in meta_min and "`ti`" not in meta_min


def test_tables_hold_the_workload_result(workload_binlogs: WorkloadBinlogs) -> None:
    query = workload_binlogs.server.query
    accounts = {row[0]: row[1:] for row in query("SELECT id, owner, balance, note FROM corpus_dml.accounts")}
    assert accounts["101"] == ("alice", "85.00", "first")  # PK changed 1 -> 101, +10 %, -25 in a transaction
    assert accounts["102"] == ("bob", "80.55", None)
    assert accounts["4"] == ("dave", "1.00", "multi-upd")  # re-inserted by IODKU, then multi-table UPDATE
    assert accounts["401"][1] == "0.00" and accounts["402"][1] == "-1.00"  # UPDATE ... ORDER BY id DESC LIMIT 2
    for gone in ("9", "11", "201", "204", "301", "600", "997", "998", "999"):
        assert gone not in accounts  # deleted, rolled back, rolled back to a savepoint, XA ROLLBACK
    assert accounts["700"] == ("last before shutdown", "7.00", "stop event follows")
    assert query("SELECT id, name, amount FROM corpus_dml.loaded ORDER BY id") == [
        ("1", "alpha", "10.50"),
        ("2", "beta", "-3.25"),
        ("3", "gamma", None),
        ("4", "délta 😀", "0.00"),
    ]
    assert query("SELECT bi, biu, tz, iz FROM corpus_types.t_int WHERE id = 2") == [
        (None, "9223372036854775807", "255", "4294967295")
    ]
    assert query("SELECT COUNT(*), SUM(id) FROM corpus_dml.bulk") == [("2500", "6247500")]
    assert query("SELECT LENGTH(lb), MD5(lb) FROM corpus_types.t_blob WHERE id = 5") == [
        ("4194304", "61533c28901ffa4ec2c9f942646a411c")
    ]
    # global settings the workloads change are restored
    assert query("SELECT @@binlog_checksum, @@log_bin_compress, @@binlog_row_metadata") == [("CRC32", "0", "FULL")]


def test_query_returns_values_exactly(mariadb_server: MariaDBServer) -> None:
    rows = mariadb_server.query(
        "SELECT 'a\\tb', 'x\\ny', 'back\\\\slash', NULL, '', _binary 0x00090A5CFF80, '😀'; SELECT 2"
    )
    assert rows == [("a\tb", "x\ny", "back\\slash", None, "", "\x00\t\n\\\udcff\udc80", "😀"), ("2",)]
    assert rows[0][5] is not None and rows[0][5].encode("utf-8", "surrogateescape") == bytes.fromhex("00090A5CFF80")
    with pytest.raises(MariaDBError, match="doesn't exist"):
        mariadb_server.query("SELECT * FROM no_such_db.no_such_table")


@needs_mariadb
def test_extra_args_and_stop_event() -> None:
    with MariaDBServer(["--binlog-checksum=NONE"], binlog_basename="stop-bin") as server:
        base = server.base_dir
        server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); INSERT INTO d.t VALUES (1)")
        assert server.query("SELECT @@binlog_checksum, @@port") == [("NONE", str(server.port))]
        (path,) = server.binlog_files()
        assert path.name == "stop-bin.000001"
        pid = int(server.pid_file.read_text())
        server.stop()
        assert not server.running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        text = _decode(server, path)
        last_event = text.rsplit("# at ", 1)[-1]
        assert "\tStop" in last_event and "CRC32 0x" not in text
        server.stop()  # a second stop is a no-op
    assert not base.exists()


@needs_mariadb
def test_failed_start_says_why_and_leaves_nothing_behind() -> None:
    server = MariaDBServer(["--no-such-option-for-binlake"], start_timeout=30)
    with pytest.raises(MariaDBError, match="no-such-option-for-binlake"), server:
        pass
    assert not server.running and not server.base_dir.exists()


def test_missing_binaries_give_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mariadb_mod, "find_tool", lambda name: None)
    assert not mariadb_mod.available()
    server = MariaDBServer()
    with pytest.raises(mariadb_mod.MariaDBUnavailable, match="apt-get install -y mariadb-server"), server:
        pass
    assert not server.base_dir.exists()


def test_corpus_dir_is_the_shared_corpus(corpus_dir: Path) -> None:
    manifest = (corpus_dir / "mariadb" / "binlogs" / "MANIFEST.tsv").read_text("utf-8")
    assert manifest.startswith("corpus-bin.000001\tstartup\t")


STRICT_TESTS = """
import pytest

def test_corpus_missing(corpus_dir):
    pass

def test_server_missing():
    pytest.skip("MariaDB server not installed")

def test_other_skip():
    pytest.skip("needs a GPU")

@pytest.mark.xfail(reason="a corpus quirk")
def test_expected_failure():
    assert False

def test_passes():
    pass
"""


@pytest.fixture
def strict_pytester(pytester: pytest.Pytester, repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A scratch pytest project using our conftest, run in a subprocess that can import binlake."""
    pytester.makeconftest((repo_root / "tests" / "conftest.py").read_text("utf-8"))
    src = Path(mariadb_mod.__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("BINLAKE_CORPUS", str(pytester.path / "no-corpus-here"))
    return pytester


def test_strict_skips_fail_only_corpus_and_server_skips(
    strict_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    strict_pytester.makepyfile(test_strict=STRICT_TESTS)
    monkeypatch.delenv("BINLAKE_STRICT_SKIPS", raising=False)
    relaxed = strict_pytester.runpytest_subprocess("-p", "no:cacheprovider")
    relaxed.assert_outcomes(passed=1, skipped=3, xfailed=1)
    assert relaxed.ret == pytest.ExitCode.OK

    monkeypatch.setenv("BINLAKE_STRICT_SKIPS", "1")
    strict = strict_pytester.runpytest_subprocess("-p", "no:cacheprovider")
    strict.assert_outcomes(passed=1, skipped=1, xfailed=1, errors=1, failed=1)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["*BINLAKE_STRICT_SKIPS=1: this skip is a failure in CI*corpus*"])


def test_strict_skips_fail_a_module_skipped_at_collection(
    strict_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    strict_pytester.makepyfile(
        test_module_skip='import pytest\npytest.skip("corpus absent", allow_module_level=True)\n',
        test_fine="def test_ok():\n    pass\n",
    )
    monkeypatch.delenv("BINLAKE_STRICT_SKIPS", raising=False)
    assert strict_pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == pytest.ExitCode.OK
    monkeypatch.setenv("BINLAKE_STRICT_SKIPS", "1")
    strict = strict_pytester.runpytest_subprocess("-p", "no:cacheprovider")
    strict.assert_outcomes(passed=1, skipped=1)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["*modules skipped at collection (failure)*", "*test_module_skip.py*corpus absent*"])


@pytest.mark.skipif(mariadb_mod.find_tool("mariadb-binlog") is None, reason="mariadb-binlog (MariaDB) not installed")
def test_bundled_example_is_a_complete_small_binlog(repo_root: Path) -> None:
    path = repo_root / "examples" / "example-bin.000001"
    assert path.read_bytes()[:4] == BINLOG_MAGIC and path.stat().st_size < 300 * 1024
    rc, out, err = mariadb_mod.run_mariadb_binlog(["-vv", "--base64-output=DECODE-ROWS"], path)
    assert rc == 0, err
    text = out.decode("utf-8")
    assert "\tStop" in text.rsplit("# at ", 1)[-1]
    # the row changes examples/README.md promises
    for change, count in {
        "INSERT INTO `shop`.`customers`": 121,
        "INSERT INTO `shop`.`orders`": 302,
        "UPDATE `shop`.`customers`": 122,
        "UPDATE `shop`.`orders`": 309,
        "DELETE FROM `shop`.`customers`": 2,
        "DELETE FROM `shop`.`orders`": 10,
    }.items():
        assert text.count(f"### {change}\n") == count, change
    assert "ADD COLUMN loyalty_points" in text and "'first order 🎉'" in text
