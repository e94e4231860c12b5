"""The current-state step of one batch in a process of its own, so that a test can SIGKILL it at any moment.

Usage: ``python -m tests._current_child LAKE ARGS_PICKLE``: prints ``ready`` once the lake's lease is held, runs
:func:`tests.lakemodel.run` with the arguments pickled by the test, then prints the seconds it took.
"""

from __future__ import annotations

import pickle
import sys
import time


def main(argv: list[str]) -> int:
    from tests.lakemodel import run

    from binlake.lake import Lake

    lake = Lake(argv[0])
    args = pickle.loads(open(argv[1], "rb").read())  # noqa: SIM115 - the test's own file
    with lake.writing(wait=60):
        print("ready", flush=True)
        t0 = time.monotonic()
        run(lake, args)
        print(f"took {time.monotonic() - t0:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
