"""A private Spark standalone cluster for tests and benchmarks: a master and ``workers`` workers started from pyspark's
own ``bin/spark-class`` (``org.apache.spark.deploy.master.Master``, ``...worker.Worker``), each its own JVM
process on 127.0.0.1 with ``cores`` cores and ``memory`` of memory, on free ports, its logs and work folders in a
temporary folder.  A ``binlake ingest --master spark://...`` against it runs its tasks in executors the workers
start, as on a cluster of machines (here, machines sharing one disk).

Executors start the Python their driver names (``PYSPARK_PYTHON``, else ``python3`` on the workers' ``PATH``): run
the driver with ``PYSPARK_PYTHON`` set to an interpreter that has binlake installed.  The processes die with their
owner (``PR_SET_PDEATHSIG``), like :class:`binlake.testing.mariadb.MariaDBServer`.

Example::

    with StandaloneCluster(workers=2) as cluster:
        subprocess.run(["binlake", "ingest", "binlogs/", "--lake", "lake", "--master", cluster.url])
        cluster.applications()[-1]["cores"]     # 2: both workers ran its tasks
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from binlake.testing.mariadb import die_with_parent, free_port

__all__ = ["StandaloneCluster", "spark_class"]


def spark_class() -> Path | None:
    """pyspark's ``bin/spark-class``, or ``None`` when pyspark is not installed."""
    try:
        import pyspark
    except ImportError:
        return None
    path = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
    return path if path.is_file() else None


class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each (see the module docstring)."""

    def __init__(self, workers: int = 2, *, cores: int = 1, memory: str = "1g", start_timeout: float = 120.0) -> None:
        self.workers, self.cores, self.memory, self.start_timeout = workers, cores, memory, start_timeout
        self.port = self.ui_port = 0
        self.base: Path | None = None
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        """The master URL a driver connects to (``--master``)."""
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        assert self.base is not None
        env = dict(os.environ)
        env.update(
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(self.base / "logs"),
            SPARK_WORKER_DIR=str(self.base / "work"),
            SPARK_NO_DAEMONIZE="1",
        )
        env.setdefault("SPARK_HOME", str(Path(str(spark_class())).parent.parent))
        return env

    def _start(self, name: str, args: list[str]) -> None:
        assert self.base is not None
        log = open(self.base / f"{name}.log", "wb")  # noqa: SIM115 (kept by the child)
        proc = subprocess.Popen(
            [str(spark_class()), *args],
            env=self._env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
        log.close()
        self._procs.append(proc)

    def __enter__(self) -> StandaloneCluster:
        if spark_class() is None:
            raise RuntimeError("pyspark is not installed: its bin/spark-class starts the cluster")
        self.base = Path(tempfile.mkdtemp(prefix="binlake-spark-cluster-"))
        try:
            self.port, self.ui_port = free_port(), free_port()
            self._start(
                "master",
                ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                 "--webui-port", str(self.ui_port)],
            )  # fmt: skip
            self._wait(lambda: self.state() is not None, "the master")
            for i in range(self.workers):
                self._start(
                    f"worker-{i}",
                    ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(self.cores),
                     "--memory", self.memory, "--webui-port", str(free_port()), "--work-dir",
                     str(self.base / f"work-{i}"), self.url],
                )  # fmt: skip
            self._wait(lambda: len(self.alive_workers()) == self.workers, f"{self.workers} workers")
        except BaseException:
            self._stop()
            raise
        return self

    def _wait(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self._procs):
                break
            if ready():
                return
            time.sleep(0.25)
        raise RuntimeError(f"Spark standalone cluster: {what} did not start (logs in {self.base})")

    def state(self) -> dict[str, Any] | None:
        """The master's state (its web UI's ``/json/``: workers, applications), or ``None`` when it does not answer
        it yet (a master still starting serves its HTML page there until the JSON handler is attached)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                state: dict[str, Any] = json.loads(r.read())
                return state
        except (OSError, ValueError):  # ValueError: json.JSONDecodeError, UnicodeDecodeError
            return None

    def alive_workers(self) -> list[dict[str, Any]]:
        state = self.state() or {}
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def applications(self) -> list[dict[str, Any]]:
        """The applications that ran and finished on the cluster (each with the ``cores`` it was given)."""
        state = self.state() or {}
        return list(state.get("completedapps", []))

    def _stop(self) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                p.terminate()
        for p in self._procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self._procs.clear()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop()
        if self.base is not None and exc_type is None:
            shutil.rmtree(self.base, ignore_errors=True)
