"""``storage``, which runs a module's tests on a local disk and on S3 (the one SparkSession, ``spark``, is
``tests/conftest.py``'s: the fault matrix shares it).

Fixtures
    ``storage``  module-scoped, parametrized ``local`` and ``s3``: where a test puts its binlogs and its lake
                 (:class:`Storage`).  For ``s3`` it starts (once) the ``s3_server`` of ``tests/conftest.py``, makes a
                 bucket for the module, and puts that server's ``AWS_*`` variables in the environment for the
                 module's S3 tests only: in this process (pyarrow, deltalake, subprocesses) and in the Spark
                 session's Python workers (``SparkContext.environment``, as a cluster's executors get them from
                 their machines; binlake's data sources are registered again, since the Python processes that
                 plan a data source's reads get the environment of its registration), taking them away after.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


class Storage:
    """Where a module's tests keep binlogs and lakes: ``name`` is ``local`` or ``s3``; :meth:`uri` gives a new
    location, :meth:`sources` a folder holding copies (local: links) of binlog files."""

    def __init__(self, name: str, base: str, tmp: pytest.TempPathFactory) -> None:
        self.name, self.base, self._tmp = name, base, tmp
        self._n = 0

    def uri(self, name: str) -> str:
        """A location nothing is at yet (a folder path, or an S3 prefix)."""
        self._n += 1
        if self.name == "local":
            return str(self._tmp.mktemp(name) / name)
        return f"{self.base}/{name}-{self._n}"

    def sources(self, files: list[Path], name: str = "binlogs") -> str:
        """A folder holding ``files`` under their own names."""
        folder = self.uri(name)
        if self.name == "local":
            Path(folder).mkdir(parents=True)
            for f in files:
                (Path(folder) / f.name).symlink_to(f)
            return folder
        from binlake.storage import locate

        for f in files:
            (locate(folder) / f.name).write_bytes(f.read_bytes())
        return folder


@pytest.fixture(scope="module", params=["local", "s3"])
def storage(request: pytest.FixtureRequest, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Storage]:
    """The module's tests on a local disk, then on S3 (see the module docstring)."""
    if request.param == "local":
        yield Storage("local", "", tmp_path_factory)
        return
    server = request.getfixturevalue("s3_server")
    env = server.env()
    bucket = server.bucket()
    context = spark.sparkContext
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        context.environment.update(env)
        _register_data_sources(spark)
        try:
            yield Storage("s3", f"s3://{bucket}", tmp_path_factory)
        finally:
            for k in env:
                context.environment.pop(k, None)
            _register_data_sources(spark)


def _register_data_sources(spark: Any) -> None:
    from binlake.spark.datasource import BinlakeDataSource
    from binlake.spark.lakesource import LakeDataSource

    spark.dataSource.register(BinlakeDataSource)
    spark.dataSource.register(LakeDataSource)
