"""binlake's version: the one place it is written (``pyproject.toml`` reads it from here, ``binlake.__version__``
and every record or line that names binlake's version take it from here)."""

__version__ = "0.1.0"
