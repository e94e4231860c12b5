"""``python -m binlake``: the same command as the ``binlake`` console script (see :mod:`binlake.cli`)."""

from binlake.cli import main

raise SystemExit(main())
