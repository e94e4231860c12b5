"""The Delta readers a user points at a lake, other than binlake's own, each reading one table into Arrow with the
table's own column types, so tests and benchmarks can check that they all see the same rows:

* ``deltalake``: delta-rs' SQL engine (``QueryBuilder``), which applies deletion vectors (its
  ``to_pyarrow_table`` refuses a table that has them);
* ``polars``: ``pl.read_delta`` (through delta-rs);
* ``duckdb``: DuckDB's own Delta extension (delta-kernel-rs), loaded from the ``duckdb-ext-delta`` package (it
  carries the extension binary for ``duckdb==1.4.4``; DuckDB would otherwise download it).  Local tables only.

Example::

    for name in available():
        assert read_with(name, loc).num_rows == 10
"""

from __future__ import annotations

import glob
import importlib.util
import os
from typing import Any

import pyarrow as pa

from binlake.storage import Location

__all__ = ["READERS", "available", "duckdb_delta", "read_with"]

READERS = ("deltalake", "polars", "duckdb")


def _duckdb_extension() -> str | None:
    """The Delta extension file of the installed ``duckdb-ext-delta`` for this DuckDB, or ``None``."""
    try:
        import duckdb
        import duckdb_ext  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return None
    for root in list(duckdb_ext.__path__):
        hits = glob.glob(os.path.join(root, "extensions", f"v{duckdb.__version__}", "*", "delta.duckdb_extension"))
        if hits:
            return hits[0]
    return None


def available() -> list[str]:
    """The readers installed here (``deltalake`` always is, with binlake's lake)."""
    out = ["deltalake"]
    if importlib.util.find_spec("polars") is not None:
        out.append("polars")
    if _duckdb_extension() is not None:
        out.append("duckdb")
    return out


def duckdb_delta() -> Any:
    """A DuckDB connection with the Delta extension of ``duckdb-ext-delta`` loaded (an unsigned local file)."""
    import duckdb

    path = _duckdb_extension()
    if path is None:
        raise RuntimeError("DuckDB's Delta extension is not installed: pip install duckdb==1.4.4 duckdb-ext-delta")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"})
    con.execute("LOAD '" + path.replace("'", "''") + "'")
    return con


def read_with(reader: str, loc: Location, version: int | None = None) -> pa.Table:
    """The table at ``loc`` (as of ``version``) as ``reader`` reads it, cast to the table's Arrow schema (the
    readers return string views, large strings ...)."""
    from deltalake import DeltaTable, QueryBuilder

    dt = DeltaTable(loc.delta_uri, version=version, storage_options=loc.delta_options())
    schema = pa.schema(dt.schema().to_arrow())
    if reader == "deltalake":
        data = pa.table(QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
    elif reader == "polars":
        import polars as pl

        data = pl.read_delta(loc.delta_uri, version=version, storage_options=loc.delta_options() or None).to_arrow()
    elif reader == "duckdb":
        if not loc.is_local or version is not None:
            raise ValueError("read_with('duckdb', ...) reads the newest version of local tables only")
        quoted = loc.uri.replace("'", "''")
        data = duckdb_delta().execute(f"SELECT * FROM delta_scan('{quoted}')").fetch_arrow_table()
    else:
        raise ValueError(f"unknown reader {reader!r} (known: {', '.join(READERS)})")
    return data.select(schema.names).cast(schema)
