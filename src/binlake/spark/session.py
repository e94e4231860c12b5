"""The one way binlake builds a SparkSession (the CLI and the test fixture share it).

Settings follow the measured facts the documentation's Architecture page lists (``docs/architecture.md``, "Spark:
the measured facts behind the session's settings"): loopback networking, no UI or console progress,
UTC, Parquet timestamps as TIMESTAMP_MICROS (readable by delta-rs, DuckDB, pyiceberg), Arrow batches in Python
data sources, and the ``binlake`` data source registered.  Executors import ``binlake`` by name, so the package's
parent folder is put on the workers' ``PYTHONPATH`` when it is not installed.

Example::

    spark = build_session("local[2]", shuffle_partitions=2)
    spark.read.format("binlake").option("view", "events").load("binlogs/").show()
"""

from __future__ import annotations

import os
import re
import sys
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

__all__ = [
    "JAVA_HINT",
    "build_context",
    "build_session",
    "context_of",
    "finish_class_sharing",
    "java_missing",
    "java_path",
    "java_problem",
    "local_cores",
    "resolved_master",
]

JAVA_HINT = "install a JRE 17 (Debian: openjdk-17-jre-headless) or set JAVA_HOME"
"""What a user without a Java that Spark 4 runs on does about it."""


def _worker_pythonpath() -> None:
    """Let Python workers (started by the JVM with this process' environment) import ``binlake``."""
    import binlake

    root = str(Path(binlake.__file__).resolve().parent.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])


def java_path() -> Path | None:
    """The ``java`` Spark's launcher runs (``bin/spark-class``: ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set,
    else ``java`` on ``PATH``), or ``None`` when it is not there."""
    import shutil

    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home, "bin", "java")
        return java if java.is_file() and os.access(java, os.X_OK) else None
    found = shutil.which("java")
    return None if found is None else Path(found)


def java_missing() -> str | None:
    """What to say when there is no ``java`` for Spark's launcher (:func:`java_path`), without running anything: a
    command asks before it starts, so that it changes nothing where Spark cannot run."""
    if java_path() is not None:
        return None
    where = f"JAVA_HOME={os.environ['JAVA_HOME']} holds no bin/java" if os.environ.get("JAVA_HOME") else "PATH"
    return f"Java not found ({where}): {JAVA_HINT}"


def java_problem() -> str | None:
    """Why Spark's JVM cannot start here when Java is the reason (none found, or one older than 17, which Spark 4
    needs), said with what to do; ``None`` when Java is fine.  Asked after a failed start only: it runs
    ``java -version``."""
    import subprocess

    java = java_path()
    if java is None:
        return java_missing()
    try:
        said = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.SubprocessError) as e:
        return f"Java at {java} does not run ({e}): {JAVA_HINT}"
    found = re.search(r'version "(?:1\.)?(\d+)', said)
    if found is not None and int(found[1]) < 17:
        return f"Java {found[1]} at {java}: Spark 4 needs 17 or later: {JAVA_HINT} to one"
    return None


_PENDING: list[tuple[Path, Path]] = []  # (temporary, final) class-sharing archives our JVM writes at its exit


def _class_sharing() -> list[str]:
    """JVM options that load Spark's classes from a class-data sharing archive (AppCDS, JDK 13+).

    The first run writes it as its JVM exits (``-XX:ArchiveClassesAtExit``, to a temporary file that
    :func:`finish_class_sharing` moves in place; once per user, Spark and Java install; a lock file keeps
    concurrent first runs from writing it together); later runs map it (``-XX:SharedArchiveFile``, checked with
    ``-XX:+VerifySharedSpaces``; the JVM ignores an archive that does not match it).  Loading and verifying
    Spark's ~10,000 classes was half of a short ingest's JVM time (7 -> 3.5 CPU-s).  ``BINLAKE_SPARK_CDS=0`` turns
    it off; the archive lives in ``$XDG_CACHE_HOME/binlake`` (``~/.cache/binlake``).
    """
    if os.environ.get("BINLAKE_SPARK_CDS", "1") == "0":
        return []
    import hashlib

    import pyspark

    spark_home = Path(pyspark.__file__).resolve().parent
    try:
        java = (java_path() or Path("java")).resolve()
        parts = [str(java), str(java.stat().st_mtime_ns), str(spark_home), pyspark.__version__]
        parts += sorted(p.name for p in (spark_home / "jars").iterdir())
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "binlake"
        archive = cache / f"spark-{hashlib.sha1('|'.join(parts).encode()).hexdigest()[:16]}.jsa"
        if archive.is_file():
            return [f"-XX:SharedArchiveFile={archive}", "-XX:+VerifySharedSpaces"]
        if _PENDING:
            return []  # this process' first JVM writes it
        cache.mkdir(parents=True, exist_ok=True)
        lock = archive.with_suffix(".lock")
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if time.time() - lock.stat().st_mtime < 600:
                return []  # another run is writing it
            lock.unlink()  # a first run that died before its JVM wrote the archive
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
    except OSError:
        return []
    tmp = archive.with_suffix(f".{os.getpid()}.tmp")
    _PENDING.append((tmp, archive))
    return [f"-XX:ArchiveClassesAtExit={tmp}"]


def finish_class_sharing(spark: Any, timeout: float = 120.0) -> None:
    """When ``spark``'s JVM writes the class-sharing archive (:func:`_class_sharing`: a first run), stop it, let
    the JVM exit, wait for it (writing takes a few seconds, once) and move the archive in place; else nothing."""
    if not _PENDING:
        return
    import subprocess

    from pyspark import SparkContext

    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is not None and proc is not None:
        gateway.shutdown()
        if proc.stdin is not None:
            proc.stdin.close()  # the gateway JVM exits at the end of its stdin (PythonGatewayServer)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:  # still writing: leave it the temporary file, never the archive
            _PENDING.clear()
            return
        SparkContext._gateway = None
        SparkContext._jvm = None
    for tmp, archive in _PENDING:
        if tmp.is_file() and tmp.stat().st_size:
            os.replace(tmp, archive)
        tmp.unlink(missing_ok=True)
        archive.with_suffix(".lock").unlink(missing_ok=True)
    _PENDING.clear()


def build_session(
    master: str | None = "local[*]",
    *,
    shuffle_partitions: int | None = None,
    app_name: str = "binlake",
    quick_start: bool = False,
    data_source: bool = True,
    jvm_log: str | None = None,
) -> Any:
    """A SparkSession on ``master`` with binlake's settings and data source (``getOrCreate``: reuses a live one).

    ``quick_start``: a driver JVM for a short run that only schedules Python tasks and passes their small reports:
    see :func:`build_context`.  Applies only when this call starts the JVM.
    ``data_source=False`` leaves the ``binlake`` and ``binlake-lake`` data sources unregistered: registering makes
    Spark start Python processes that look for installed data sources (~1 CPU-s).
    ``jvm_log``: see :func:`build_context`.
    """
    from pyspark.sql import SparkSession

    conf = _conf(master, app_name, quick_start, shuffle_partitions)
    _launch(conf, jvm_log)
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if data_source:
        from binlake.spark.datasource import BinlakeDataSource
        from binlake.spark.lakesource import LakeDataSource

        spark.dataSource.register(BinlakeDataSource)
        spark.dataSource.register(LakeDataSource)
    return spark


def build_context(master: str | None = "local[*]", *, app_name: str = "binlake", jvm_log: str | None = None) -> Any:
    """A SparkContext alone on ``master`` (``getOrCreate``), for ``binlake ingest``, which runs Python tasks and
    nothing of Spark SQL: 0.4-0.5 s less to its first job than a SparkSession (2.6-3.2 s against 3.0-3.7 here).

    Its driver JVM is made to start quickly: C1 compiles only (``-XX:TieredStopAtLevel=1``; C2's compiler threads
    were half of the JVM's CPU: 15-19 CPU-s to start a session and run a first job on 2 cores, 8-10 with C1 only),
    Spark's classes come from a class-data sharing archive (:func:`_class_sharing`), and the JVM's own warnings go
    to stderr (not into the command's output).  A cluster's executors start the same way unless
    ``spark.executor.extraJavaOptions`` is set (figures in docs/performance.md, "--ingest-on").
    Queries that process rows in the JVM are better off without it.

    ``jvm_log``: a file that takes the driver JVM's own output (its warnings, the class-sharing archive's notes,
    log4j's banner, Spark's log lines, its Python workers' stderr), so that a command shows only its own lines;
    ``None`` leaves it on this process' stdout and stderr.  Applies only when this call starts the JVM.
    """
    from pyspark import SparkContext

    conf = _conf(master, app_name, True, None)
    _launch(conf, jvm_log)
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("ERROR")
    return sc


def _launch(conf: Any, jvm_log: str | None) -> None:
    """Start the driver JVM (py4j gateway) with its output in ``jvm_log``, where a log is asked for and no JVM runs
    yet; ``getOrCreate`` then uses it (else it starts one itself, its output on this process' own)."""
    from pyspark import SparkContext

    if jvm_log is None or SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    from pyspark.java_gateway import launch_gateway

    with open(jvm_log, "ab") as log:  # the JVM keeps its own copy of the descriptor
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})  # type: ignore[no-untyped-call]
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def resolved_master(master: str | None) -> str | None:
    """The master a run uses: ``master``; for ``None`` the one ``spark-submit`` gave (``None``: the driver runs
    under spark-submit, which set it), else ``local[*]``.

    >>> resolved_master("spark://h:7077"), resolved_master(None) in ("local[*]", None)
    ('spark://h:7077', True)
    """
    if master is not None:
        return master
    return None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[*]"


def _conf(master: str | None, app_name: str, quick_start: bool, shuffle_partitions: int | None) -> Any:
    """binlake's Spark settings (and the environment its Python workers need) as a SparkConf; ``master`` as
    :func:`resolved_master` takes it.

    A local master runs on the loopback address (this machine's name may resolve to an address Spark cannot
    bind); a cluster's driver keeps Spark's own choice (``SPARK_LOCAL_IP``, else this machine's address), which
    the executors on other machines must reach."""
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    _worker_pythonpath()
    master = resolved_master(master)
    local = master is not None and master.strip().startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # The Python workers of a local master run this interpreter (its packages: pyarrow, binlake), not the
        # `python3` first on PATH, which is another one when binlake runs from an unactivated virtual environment.
        # PySpark reads PYSPARK_PYTHON (a user's own setting wins); spark.pyspark.python says the same to the JVM.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf

    conf = (
        SparkConf()
        .setAppName(app_name)
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.session.timeZone", "UTC")
        .set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .set("spark.sql.execution.arrow.pyspark.enabled", "true")
        .set("spark.python.worker.reuse", "true")
    )
    if master is not None:
        conf = conf.setMaster(master)
    if local:
        conf = conf.set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
        conf = conf.set("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    if quick_start:
        sharing = _class_sharing()
        opts = ["-XX:TieredStopAtLevel=1", "-Xlog:disable", "-Xlog:all=warning:stderr", *sharing]
        conf = conf.set("spark.driver.extraJavaOptions", " ".join(opts))
        # a cluster's executors likewise (a local master's run in the driver's JVM): C1 only, and the archive where
        # it is (their class path is the driver's on a machine with the same install; elsewhere the JVM finds no
        # file and loads the classes itself); only the driver writes a first archive
        mapped = [o for o in sharing if not o.startswith("-XX:ArchiveClassesAtExit")]
        conf = conf.setIfMissing("spark.executor.extraJavaOptions", " ".join(["-XX:TieredStopAtLevel=1", *mapped]))
    if shuffle_partitions is not None:
        conf = conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    return conf


def local_cores(master: str | None) -> int | None:
    """The task slots of a local master URL (what ``defaultParallelism`` will be), ``None`` for a cluster's: lets
    ``binlake ingest`` size its splits while the session is still starting.

    >>> local_cores("local[2]"), local_cores("local"), local_cores("local[3,4]"), local_cores("spark://h:7077")
    (2, 1, 3, None)
    """
    master = resolved_master(master)
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", (master or "").strip())
    if m is None:
        return None
    if m.group(1) == "*":
        return os.cpu_count() or 1
    return int(m.group(1) or 1)


def context_of(spark: Any) -> Any:
    """The SparkContext of ``spark``: a SparkSession, a SparkContext, or a :class:`~concurrent.futures.Future` of
    either (waiting for it: ``binlake ingest`` starts its JVM in a thread while it plans)."""
    if isinstance(spark, Future):
        spark = spark.result()
    return getattr(spark, "sparkContext", spark)
