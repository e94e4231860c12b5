"""Credentials stay in the environment: an ingest from S3 into S3 (with Spark's own output shown, ``--verbose``)
prints neither the access key nor the secret, writes neither into any object of the lake (manifests, Delta logs,
Parquet, the lease), and a Spark plan reading the lake holds neither."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from binlake.storage import locate

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


def test_credentials_are_never_logged_stored_or_planned(
    spark: Any, s3_server: Any, corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = s3_server.env()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    root = locate(f"s3://{s3_server.bucket()}")
    for n in ("corpus-bin.000004", "corpus-bin.000022"):
        (root / "binlogs" / n).write_bytes((corpus_dir / "mariadb" / "binlogs" / n).read_bytes())
    keys = corpus_dir / "workloads" / "keys.txt"
    cmd = [sys.executable, "-m", "binlake", "ingest", (root / "binlogs").uri, "--lake", (root / "lake").uri,
           "--master", "local[1]", "--verbose", "--key-file", str(keys)]  # fmt: skip
    done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ingested 1 batch: 2 files" in done.stdout
    secrets = [s3_server.secret_key.encode(), s3_server.access_key.encode()]
    output = (done.stdout + done.stderr).encode()
    assert len(output) > 1000  # Spark's own log lines were there to look through
    assert not [s for s in secrets if s in output]
    objects = [e.location for e in (root / "lake").list(recursive=True) if not e.is_dir]
    assert any(o.name.endswith(".parquet") for o in objects) and any("/_binlake/batches/" in o.uri for o in objects)
    assert any("/_binlake/lease/_delta_log/" in o.uri for o in objects)
    leaked = [o.uri for o in objects for s in secrets if s in o.read_bytes()]
    assert not leaked
    context = spark.sparkContext
    context.environment.update(env)
    try:
        from binlake.spark.lakesource import LakeDataSource

        spark.dataSource.register(LakeDataSource)  # (its planning processes get the environment of registration)
        df = spark.read.format("binlake-lake").option("table", "corpus_enc.secret").load((root / "lake").uri)
        plan = df._jdf.queryExecution().toString()
        assert "BatchScan binlake-lake" in plan and df.count() == 1  # (2, "changed")
        assert not [s for s in secrets if s.decode() in plan]
    finally:
        for k in env:
            context.environment.pop(k, None)
        spark.dataSource.register(LakeDataSource)


@pytest.mark.server
def test_a_live_ingest_keeps_the_password_out_of_output_lake_and_plans(spark: Any, tmp_path: Path) -> None:
    """``binlake ingest --host`` (Spark's own output shown): the replication password is in no output line, no
    object of the lake (manifests, Delta logs, Parquet, the lease, the mirrored binlogs) and no Spark plan of the
    lake; it was given only as ``BINLAKE_PASSWORD`` (``--password`` on the command line is refused)."""
    from tests.replication.conftest import PASSWORD, add_users, batch

    from binlake.testing.mariadb import MariaDBServer, missing_tools

    if missing_tools():
        pytest.skip(f"MariaDB server not installed ({', '.join(missing_tools())} not found)")
    with MariaDBServer() as server:
        add_users(server)
        server.execute("CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY, batch INT, v LONGTEXT);"
                       " CREATE TABLE r.m (id INT PRIMARY KEY, v TEXT); CREATE DATABASE seq")  # fmt: skip
        batch(server, 1)
        lake = tmp_path / "lake"
        base = [sys.executable, "-m", "binlake", "ingest", "--host", "127.0.0.1", "--port", str(server.port),
                "--user", "repl_native", "--server-id", "5151", "--lake", str(lake),
                "--master", "local[1]"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        refused = subprocess.run([*base, "--password", PASSWORD], env=env, capture_output=True, text=True)
        assert refused.returncode == 2 and PASSWORD not in refused.stdout + refused.stderr
        done = subprocess.run([*base, "--no-snapshot", "--from-start", "--verbose"],
                              env={**env, "BINLAKE_PASSWORD": PASSWORD}, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "ingested 1 batch from" in output and len(output) > 1000 and PASSWORD not in output
    secret = PASSWORD.encode()
    objects = [p for p in lake.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in objects) and any(p.parent.name == "_binlogs" for p in objects)
    assert not [p for p in objects if secret in p.read_bytes()]
    from binlake.spark.lakesource import LakeDataSource

    spark.dataSource.register(LakeDataSource)
    df = spark.read.format("binlake-lake").option("table", "r.t").load(str(lake))
    plan = df._jdf.queryExecution().toString()
    assert df.count() == 40 - 8 and PASSWORD not in plan
