"""binlake's Spark settings (``binlake.spark.session``), without a JVM: what the quick-start driver and a
cluster's executors are told."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pyspark not installed: pip install pyspark")

from binlake.spark import session


def test_a_quick_start_tells_a_cluster_s_executors_to_start_quickly_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """C1 only and the mapped archive for the executors; never the first run's writing of the archive (only the
    driver writes it); a user's own executor options win."""
    for sharing in (["-XX:SharedArchiveFile=/a.jsa", "-XX:+VerifySharedSpaces"], ["-XX:ArchiveClassesAtExit=/a.tmp"]):
        monkeypatch.setattr(session, "_class_sharing", lambda s=sharing: list(s))
        conf = session._conf("spark://127.0.0.1:7077", "binlake", True, None)
        executor = conf.get("spark.executor.extraJavaOptions")
        assert executor.split()[0] == "-XX:TieredStopAtLevel=1"
        assert "ArchiveClassesAtExit" not in executor and ("SharedArchiveFile" in executor) == (len(sharing) == 2)
        assert sharing[0] in conf.get("spark.driver.extraJavaOptions")
    assert (
        session._conf("spark://127.0.0.1:7077", "binlake", False, None).get("spark.executor.extraJavaOptions") is None
    )


def test_a_user_s_executor_options_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import SparkConf

    monkeypatch.setattr(session, "_class_sharing", lambda: [])
    monkeypatch.setattr(SparkConf, "__init__", _with_user_option(SparkConf.__init__))
    conf = session._conf("spark://127.0.0.1:7077", "binlake", True, None)
    assert conf.get("spark.executor.extraJavaOptions") == "-Dmine=1"


def _with_user_option(init):  # type: ignore[no-untyped-def]
    def wrapped(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        init(self, *args, **kwargs)
        self.set("spark.executor.extraJavaOptions", "-Dmine=1")  # as spark-submit --conf puts it in the defaults

    return wrapped
