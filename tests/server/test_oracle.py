"""The server is the oracle: random tables of every MariaDB column type, random row changes, and binlake's typed
values from the Python API compared cell by cell with what ``SELECT`` returns (``tests/server/_oracle.py`` has the
generator and the comparison; ``tests/spark/test_oracle_lake.py`` does the same for the lake).

``BINLAKE_ORACLE_EXAMPLES`` sets the number of tables (default 150, CI's bound: about 15 s); a long run::

    BINLAKE_ORACLE_EXAMPLES=3000 python -m pytest -q -s tests/server/test_oracle.py

prints its figures (tables, columns and values compared, differences).  Every binlog the run writes is also printed
by ``binlake dump``, which must give ``mariadb-binlog -vv --print-table-metadata``'s text byte for byte.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest
from hypothesis import given, settings

from . import _oracle

pytestmark = pytest.mark.server

EXAMPLES = int(os.environ.get("BINLAKE_ORACLE_EXAMPLES", "150"))


@pytest.fixture(scope="module")
def oracle() -> Iterator[_oracle.Oracle]:
    with _oracle.private_oracle() as o:
        yield o


def test_python_api_values_equal_select(oracle: _oracle.Oracle) -> None:
    tally = _oracle.Tally()
    differences: list[_oracle.Difference] = []
    names = (f"t{i:05d}" for i in itertools.count(1))

    @settings(_oracle.SETTINGS, max_examples=EXAMPLES)
    @given(data=_oracle.st.data())
    def check(data: _oracle.st.DataObject) -> None:
        table = data.draw(_oracle.tables(next(names)))
        run = oracle.run(table)
        tally.add_table(table)
        found = _oracle.api_differences(run, tally)
        _oracle.check_dump(oracle.server, run.binlog, tally)
        differences.extend(found)
        assert not found, "\n".join(map(str, found[:30]))

    check()
    print("\noracle:", _oracle.summary(tally, differences))
    assert tally.values > 1000 * min(EXAMPLES, 100) // 100
