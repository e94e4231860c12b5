"""The one way binlake builds a SparkSession (the CLI and the test fixture share it).

Settings follow the measured facts of ``design/SPARK-NOTES.md``: loopback networking, no UI or console progress,
UTC, Parquet timestamps as TIMESTAMP_MICROS (readable by delta-rs, DuckDB, pyiceberg), Arrow batches in Python
data sources, and the ``binlake`` data source registered.  Executors import ``binlake`` by name, so the package's
parent folder is put on the workers' ``PYTHONPATH`` when it is not installed.

Example::

    spark = build_session("local[2]", shuffle_partitions=2)
    spark.read.format("binlake").option("view", "events").load("binlogs/").show()
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["build_session"]


def _worker_pythonpath() -> None:
    """Let Python workers (started by the JVM with this process' environment) import ``binlake``."""
    import binlake

    root = str(Path(binlake.__file__).resolve().parent.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])


def build_session(
    master: str = "local[*]",
    *,
    shuffle_partitions: int | None = None,
    app_name: str = "binlake",
    quick_jit: bool = False,
) -> Any:
    """A SparkSession on ``master`` with binlake's settings and data source (``getOrCreate``: reuses a live one).

    ``quick_jit``: the driver JVM compiles with C1 only (``-XX:TieredStopAtLevel=1``).  For ``binlake ingest``,
    whose JVM only schedules Python tasks and passes their small reports, C2's compiler threads were half of the
    JVM's CPU time (15-19 CPU-s to start a session and run a first job on 2 cores; 8-10 with C1 only).  Queries
    that process rows in the JVM are better off without it.  Applies only when this call starts the JVM.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    _worker_pythonpath()
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
    )
    if quick_jit:
        builder = builder.config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from binlake.spark.datasource import BinlakeDataSource

    spark.dataSource.register(BinlakeDataSource)
    return spark
