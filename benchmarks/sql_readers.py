"""binlake's statement reader (binlake.sql) against sqlglot's MySQL dialect, on every statement the corpus logs.

Speed: the shapes binlake reads from each statement (first keyword, transaction control, emptied tables, renames),
binlake's full tokenization, ``sqlglot.parse(read="mysql")`` and ``sqlglot.tokenize``; best of 3 passes.
Correctness: what sqlglot makes of the statements binlake must read right (executable comments, XA, RENAME,
SAVEPOINT, ANSI_QUOTES), and how many corpus statements it cannot parse or leaves as an unparsed ``Command``.

    pip install sqlglot   # benchmark-only: binlake does not depend on it
    python benchmarks/sql_readers.py [CORPUS_DIR]      # default ../shared/corpus
"""

from __future__ import annotations

import collections
import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from binlake.errors import BinlogError
from binlake.events.query import QueryEvent
from binlake.reader import read_events
from binlake.sql import statements
from binlake.sql.lexer import first_keyword, tokens
from binlake.sql.statements import control, emptied, renames

CASES = [
    ("DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `t`", "temporary: a TEMPORARY inside an executable comment"),
    ("CREATE /*M!100100 OR REPLACE */ TABLE t (a INT)", "or replace: MariaDB's executable comment"),
    ("XA COMMIT X'01',X'02',3", "an XA outcome"),
    ("RENAME TABLE a TO b, c TO d", "two renames"),
    ("SAVEPOINT `a b`", "a savepoint"),
    ('DROP TABLE "a b"', "under sql_mode ANSI_QUOTES a name, else a string (the server refuses it)"),
]


def corpus_statements(corpus: Path) -> list[tuple[str, str, int]]:
    out = []
    files = sorted((corpus / "mysql").rglob("*")) + sorted((corpus / "mariadb" / "binlogs").glob("corpus-bin.*"))
    for path in files:
        if not path.is_file():
            continue
        try:
            for ev in read_events(path):
                if type(ev) is QueryEvent:
                    mode = ev.status("SQL_MODE")
                    out.append((ev.query, ev.db or "", mode if isinstance(mode, int) else 0))
        except BinlogError:
            continue
    return out


def best_of(stmts: list[tuple[str, str, int]], fn: Callable[[tuple[str, str, int]], Any]) -> float:
    best = float("inf")
    for _ in range(3):
        statements._control.cache_clear()
        t0 = time.perf_counter()
        for s in stmts:
            with contextlib.suppress(Exception):  # sqlglot's parse errors: counted below
                fn(s)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    try:
        import sqlglot
    except ImportError:
        print("pip install sqlglot (benchmark-only)", file=sys.stderr)
        return 2
    import logging

    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to a Command" warnings
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "corpus"
    stmts = corpus_statements(corpus)
    print(f"{len(stmts)} statements ({len({s for s, _, _ in stmts})} distinct), sqlglot {sqlglot.__version__}")
    timed: list[tuple[str, Callable[[tuple[str, str, int]], Any]]] = [
        ("binlake.sql shapes", lambda s: (first_keyword(s[0], s[2]), control(s[0], s[2]), emptied(*s), renames(*s))),
        ("binlake.sql tokens", lambda s: sum(1 for _ in tokens(s[0], s[2]))),
        ("sqlglot.parse(read='mysql')", lambda s: sqlglot.parse(s[0], read="mysql")),
        ("sqlglot.tokenize(read='mysql')", lambda s: sqlglot.tokenize(s[0], read="mysql")),
    ]
    for name, fn in timed:
        t = best_of(stmts, fn)
        print(f"  {name:32} {t * 1000:8.1f} ms  {t / len(stmts) * 1e6:7.1f} us/statement")
    failed: collections.Counter[str] = collections.Counter()
    unparsed: collections.Counter[str] = collections.Counter()
    for q, _, mode in stmts:
        try:
            tree = sqlglot.parse_one(q, read="mysql")
        except Exception:
            failed[first_keyword(q, mode)] += 1
            continue
        if isinstance(tree, sqlglot.exp.Command):
            unparsed[first_keyword(q, mode)] += 1
    print(f"  sqlglot parse errors by first keyword: {dict(failed)}")
    print(f"  sqlglot unparsed Commands by first keyword: {dict(unparsed)}")
    for q, what in CASES:
        try:
            tree = sqlglot.parse_one(q, read="mysql")
            said = f"{type(tree).__name__} temporary={tree.args.get('temporary')} replace={tree.args.get('replace')}"
        except Exception as e:
            said = type(e).__name__
        print(f"  {q!r:52} ({what}): sqlglot {said}; binlake control={control(q)} emptied={emptied(q, 'd')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
