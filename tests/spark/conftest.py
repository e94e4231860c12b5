"""The one SparkSession of the Spark tests: local[2], no UI, 2 shuffle partitions, UTC (binlake.spark.session)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession with the ``binlake`` data source registered (skips when pyspark is missing)."""
    pytest.importorskip("pyspark", reason="pyspark not installed: pip install -e '.[spark]'")
    pytest.importorskip("deltalake", reason="deltalake not installed: pip install -e '.[spark]'")
    from binlake.spark.session import build_session

    session = build_session("local[2]", shuffle_partitions=2, app_name="binlake-tests")
    yield session
    session.stop()
