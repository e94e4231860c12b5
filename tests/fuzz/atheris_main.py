"""Coverage-guided fuzzing of one target with atheris (libFuzzer), for long runs outside the test suite.

The hypothesis tests (``test_fuzz.py``) run the same targets in every test run on a small budget; this driver is for
hunting: ``pip install atheris``, then from the repository root::

    PYTHONPATH=src python -m tests.fuzz.atheris_main rows -max_total_time=600

The first argument names a target of :data:`tests.fuzz.targets.TARGETS`; the rest go to libFuzzer.  The corpus is
found as in ``tests/conftest.py`` (``$BINLAKE_CORPUS``, else ``../shared/corpus`` beside the checkout).  A crash
prints the input; add it to ``test_regressions.py`` with the fix.
"""

from __future__ import annotations

import os
import sys
import tracemalloc
from pathlib import Path


def main() -> None:
    import atheris  # type: ignore[import-not-found,import-untyped,unused-ignore]

    with atheris.instrument_imports(include=["binlake"]):  # coverage of binlake's code guides the mutations
        from tests.fuzz.targets import TARGETS, guarded, load_seeds

    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: python -m tests.fuzz.atheris_main {{{','.join(TARGETS)}}} [libFuzzer options]")
    target = TARGETS[sys.argv[1]]
    corpus = Path(os.environ.get("BINLAKE_CORPUS") or Path(__file__).resolve().parents[3] / "shared" / "corpus")
    seeds = load_seeds(corpus)
    tracemalloc.start()

    def one(data: bytes) -> None:
        guarded(target, seeds, data)

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
