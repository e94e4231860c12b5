"""binlake: decode MySQL and MariaDB binary logs exactly, explain them, land them in a lake."""

__version__ = "0.1.0"
