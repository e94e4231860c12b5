"""``binlake ingest --master spark://...`` on a real Spark standalone cluster the test starts: a master and two
workers of one core each, every one its own JVM process (:class:`binlake.testing.sparkcluster.StandaloneCluster`).
The whole MariaDB corpus (16 files, the encrypted one with its key file) lands as the same lake as on ``local[2]``,
and both workers ran its tasks."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.testing.sparkcluster import StandaloneCluster, spark_class
from spark.test_corpus_all import ENCRYPTED, FILES  # tests/ is on sys.path
from spark.test_spark import _lake_snapshot

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[StandaloneCluster]:
    if spark_class() is None:
        pytest.skip("pyspark not installed: its bin/spark-class starts the standalone cluster")
    with StandaloneCluster(workers=2, cores=1, memory="1g") as c:
        yield c


def test_the_corpus_ingest_on_a_standalone_cluster_equals_local(
    spark: Any, cluster: StandaloneCluster, corpus_dir: Path, tmp_path: Path
) -> None:
    from binlake.crypto import load_key_file, mariadb_decryptor
    from binlake.spark.ingest import ingest
    from binlake.spark.statements import ReadSpec

    binlogs = tmp_path / "binlogs"
    binlogs.mkdir()
    for n in (*FILES, ENCRYPTED):
        (binlogs / n).symlink_to(corpus_dir / "mariadb" / "binlogs" / n)
    keys = corpus_dir / "workloads" / "keys.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYSPARK_PYTHON": sys.executable}
    cmd = [sys.executable, "-m", "binlake", "ingest", str(binlogs), "--lake", str(tmp_path / "cluster"),
           "--master", cluster.url, "--key-file", str(keys)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"ingested 1 batch: {len(FILES) + 1} files" in done.stdout
    apps = cluster.applications()
    assert [a["cores"] for a in apps] == [2]  # its executors had both workers' cores
    local = tmp_path / "local"
    read = ReadSpec(decryptor=mariadb_decryptor(load_key_file(keys)))
    ingest(spark, [str(binlogs)], str(local), read=read)  # the session's local[2]
    assert _lake_snapshot(tmp_path / "cluster") == _lake_snapshot(local)
