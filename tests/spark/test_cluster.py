"""``binlake ingest`` on a real Spark standalone cluster the test starts: a master and two workers of one core each,
every one its own JVM process (:class:`binlake.testing.sparkcluster.StandaloneCluster`).  The whole MariaDB corpus
(16 files, the encrypted one with its key file) lands as the same lake as on ``local[2]``, both workers running its
tasks, whether the driver is started by ``binlake ingest --master spark://...`` or by ``spark-submit`` (as the
README shows)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
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


@pytest.fixture(scope="module")
def binlogs(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("binlogs")
    for n in (*FILES, ENCRYPTED):
        (folder / n).symlink_to(corpus_dir / "mariadb" / "binlogs" / n)
    return folder


@pytest.fixture(scope="module")
def local_lake(spark: Any, binlogs: Path, corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The corpus ingested on the session's local[2], as a snapshot."""
    from binlake.crypto import load_key_file, mariadb_decryptor
    from binlake.ingest.run import ingest
    from binlake.ingest.statements import ReadSpec
    from binlake.spark.runner import SparkRunner

    lake = tmp_path_factory.mktemp("local") / "lake"
    read = ReadSpec(decryptor=mariadb_decryptor(load_key_file(corpus_dir / "workloads" / "keys.txt")))
    ingest(SparkRunner(spark), [str(binlogs)], str(lake), read=read)
    return _lake_snapshot(lake)


def _driver(cluster: StandaloneCluster, command: list[str], binlogs: Path, lake: Path, keys: Path) -> None:
    """Run a driver against the cluster; check it ingested every file and that the cluster gave it both workers."""
    before = len(cluster.applications())
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYSPARK_PYTHON": sys.executable}
    cmd = [*command, str(binlogs), "--lake", str(lake), "--key-file", str(keys)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"ingested 1 batch: {len(FILES) + 1} files" in done.stdout
    deadline = time.monotonic() + 30  # the master lists the application as completed once it sees the driver go
    while len(cluster.applications()) <= before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [a["cores"] for a in cluster.applications()[before:]] == [2]  # executors on both workers


def test_binlake_ingest_on_a_standalone_cluster(
    cluster: StandaloneCluster, binlogs: Path, local_lake: Any, corpus_dir: Path, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "binlake", "ingest", "--master", cluster.url]
    _driver(cluster, command, binlogs, tmp_path / "lake", corpus_dir / "workloads" / "keys.txt")
    assert _lake_snapshot(tmp_path / "lake") == local_lake
    # its executors started as quickly as its driver (C1 only: binlake.spark.session.build_context)
    assert cluster.base is not None
    app = max((p.parent for p in cluster.base.glob("work-*/app-*/*/stderr")), key=lambda p: p.parent.name)
    commands = [
        line
        for f in cluster.base.glob(f"work-*/{app.parent.name}/*/stderr")
        for line in f.read_text(errors="replace").splitlines()
        if line.startswith("Spark Executor Command")
    ]
    assert len(commands) == 2 and all("-XX:TieredStopAtLevel=1" in c for c in commands)


def test_spark_submit_on_a_standalone_cluster(
    cluster: StandaloneCluster, binlogs: Path, local_lake: Any, corpus_dir: Path, tmp_path: Path
) -> None:
    """``spark-submit --master spark://... binlake/cli/ingest.py SOURCE --lake LAKE``: the master is spark-submit's."""
    import binlake.cli.ingest

    submit = Path(str(spark_class())).parent / "spark-submit"
    command = [str(submit), "--master", cluster.url, binlake.cli.ingest.__file__]
    _driver(cluster, command, binlogs, tmp_path / "lake", corpus_dir / "workloads" / "keys.txt")
    assert _lake_snapshot(tmp_path / "lake") == local_lake
