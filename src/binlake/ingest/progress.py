"""What an ingest run shows while it runs (a progress bar on a terminal, log lines otherwise) and, with
``BINLAKE_PROFILE=DIR``, a cProfile of every driver stage and task.

Example::

    progress = Progress(runner)
    splits = progress.timed("plan", lambda: plan_splits(files))
    reports = progress.run("decode", lambda: runner.map(task, splits))
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Progress", "TaskCounter", "profiled"]

T = TypeVar("T")


@contextmanager
def profiled(label: str) -> Iterator[None]:
    """With ``BINLAKE_PROFILE=DIR`` in the environment, cProfile the block into ``DIR/<label>-<pid>.pstats``: tasks
    profile themselves (a Python worker's time is invisible to a profiler of the driver)."""
    out = os.environ.get("BINLAKE_PROFILE")
    if not out:
        yield
        return
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        os.makedirs(out, exist_ok=True)
        prof.dump_stats(os.path.join(out, f"{label}-{os.getpid()}.pstats"))


@runtime_checkable
class TaskCounter(Protocol):
    """What counts the tasks running (a runner on a cluster: :class:`binlake.spark.runner.SparkRunner`)."""

    def tasks(self) -> tuple[int, int]:
        """(completed, total) tasks of what runs now."""
        ...


class Progress:
    """What a run is doing, on ``stream`` (stderr): on a terminal one redrawn line per stage (a bar of the task counts
    of ``runner``, tasks done/total, seconds so far), otherwise plain log lines (a stage's start, each change of its
    task count at most every ``interval`` seconds, its end with the time it took).  A runner that counts no tasks
    (not a :class:`TaskCounter`: tasks run in this process), or none, shows a stage's start and end only.

    ``quiet``: a run that goes on for months (``ingest --follow``) is quiet while it has nothing to do: its
    :meth:`detail` lines (the stages' times, "nothing new") are held, shown before the next line that says something
    happens (a :meth:`log` line, a job of tasks starting), and dropped by :meth:`idle` when nothing did."""

    def __init__(
        self, runner: object = None, stream: Any = None, *, interval: float = 0.5, quiet: bool = False
    ) -> None:
        self.counter = runner if isinstance(runner, TaskCounter) else None
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval
        self.quiet = quiet
        self._held: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def log(self, text: str) -> None:
        """Show a line (after the :meth:`detail` lines held before it)."""
        held, self._held = self._held, []
        if self.tty:
            self.stream.write("\r\x1b[K")
        for line in [*held, text]:
            self.stream.write(f"binlake ingest: {line}\n")
        self.stream.flush()

    def detail(self, text: str) -> None:
        """A line worth showing only when the run does something: shown at once, or held while :attr:`quiet`."""
        if self.quiet:
            self._held.append(text)
        else:
            self.log(text)

    def idle(self) -> None:
        """The end of a step that did nothing: drop the :meth:`detail` lines held since the last shown line."""
        self._held.clear()

    def show(self, label: str, done: int, total: int, seconds: float) -> None:
        """Draw the state of a stage: the bar on a terminal, a log line otherwise."""
        if self.tty:
            width = 30
            fill = width * done // max(total, 1)
            self.stream.write(
                f"\r\x1b[K{label:<10} [{'#' * fill}{'.' * (width - fill)}] {done}/{total} tasks  {seconds:.0f} s"
            )
            self.stream.flush()
        else:
            self.log(f"{label}: {done}/{total} tasks, {seconds:.0f} s")

    def _poll(self, label: str, t0: float) -> None:
        last = (-1, -1)
        while not self._stop.wait(self.interval):
            if self.counter is None:
                continue
            now = self.counter.tasks()
            if now[1] and (self.tty or now != last):
                self.show(label, *now, time.monotonic() - t0)
                last = now

    def timed(self, label: str, fn: Callable[[], T]) -> T:
        """``fn()`` run on the driver, its time logged as ``label`` (the stages' times say where a run goes)."""
        t0 = time.monotonic()
        with profiled(f"driver-{label.replace(' ', '-')}"):
            out = fn()
        self.detail(f"{label}: done in {time.monotonic() - t0:.1f} s")
        return out

    def run(self, label: str, fn: Callable[[], T]) -> T:
        """``fn()`` (tasks run by a runner) with their progress shown as ``label``."""
        t0 = time.monotonic()
        if self._held:
            self.log(self._held.pop())  # a Spark job is something happening: the lines held before it show
        self._stop.clear()
        self._thread = threading.Thread(target=self._poll, args=(label, t0), daemon=True)
        self._thread.start()
        try:
            out = fn()
        finally:
            self._stop.set()
            self._thread.join()
            if self.tty:
                self.stream.write("\r\x1b[K")
        self.log(f"{label}: done in {time.monotonic() - t0:.1f} s")
        return out
