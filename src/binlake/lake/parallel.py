"""Work side by side in threads, one pool for the whole process.

The lake reads and writes many small things whose cost is latency: an object store's requests, a Parquet file's
footer and one row group, a table's log files.  :func:`each` runs them in threads (Parquet and the object stores'
clients release the GIL).  The threads are made once and kept: starting eight threads for each batch's lookup cost
about as much as a 10-change batch's lookup itself (0.5 ms a thread).

A function that runs on the pool and calls :func:`each` again runs that inner work in the thread it is in (a
pool waiting on itself could deadlock); a process forked from one that used the pool (Spark's Python workers) starts a
pool of its own.

>>> each(lambda n: n * n, [1, 2, 3, 4])
[1, 4, 9, 16]
>>> each(lambda n: each(str, [n, n + 1]), [1, 3])
[['1', '2'], ['3', '4']]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

THREADS = 8
"""Threads of the pool: enough to cover an object store's latency, few enough for a small machine's memory."""

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_local = threading.local()


def _forget() -> None:
    """In a forked child: the parent's threads are not there, nor is its lock's holder."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget)


def _mark() -> None:
    _local.in_pool = True


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="binlake-lake", initializer=_mark)
        return _pool


def each(fn: Callable[[T], R], items: Sequence[T], *, inline: int = 1) -> list[R]:
    """``fn`` of each of ``items``, in their order: in this thread for up to ``inline`` items (a handful is
    quicker than a hand-over), side by side on the pool otherwise.  The first failure is raised once the calls
    already running have finished; those not started are cancelled."""
    if len(items) <= inline or getattr(_local, "in_pool", False):
        return [fn(i) for i in items]
    pool = _executor()
    futures: list[Future[R]] = [pool.submit(fn, i) for i in items]
    try:
        return [f.result() for f in futures]
    finally:
        for f in futures:
            f.cancel()
        wait(futures)
