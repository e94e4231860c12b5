"""How the fault matrix runs a command and holds its end to the one table of exit statuses
(:class:`binlake.errors.ExitStatus`, the README's "Exit status").

Every case runs ``binlake`` as a user does: a process (``python -m binlake ...``, :func:`binlake`), or, for the
ingest's many cases, :func:`binlake.cli.main` in this process on the suite's one Spark session (:func:`in_process`:
the same code from the argument list to the exit status, without a JVM start per case).  Each has a time bound: a
run past it is a hang, killed, and the case fails (pytest-timeout is not installed: the bound is the process'
timeout, or the thread's join).  :meth:`Case.expect` then asserts the one outcome the case documents: its exit
status, its one line (``binlake COMMAND: ...``, every line of stderr so prefixed), no traceback and no py4j or JVM
output, and records the outcome for the matrix's figures (``tests/faults/conftest.py`` prints them).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from binlake.errors import ExitStatus

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "example-bin.000001"
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), "SPARK_LOCAL_IP": "127.0.0.1"}
# a traceback (of any type), py4j's or the JVM's own lines, a terminal's colour codes: none may reach stderr
NOISE = re.compile(r"Traceback|py4j|Py4J|Exception in thread|^\d\d/\d\d/\d\d \d\d:\d\d:\d\d |\x1b\[", re.MULTILINE)

OUTCOMES = {
    ExitStatus.OK: "done",
    ExitStatus.ERROR: "error",
    ExitStatus.TEMPORARY: "temporary",
    ExitStatus.INTERRUPTED: "interrupted",
}


@dataclass
class Ran:
    """One run of a command: its arguments, exit status, output, stderr and wall time."""

    args: list[str]
    status: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def command(self) -> str:
        """The subcommand (``ingest``), as its stderr lines name it."""
        return next(a for a in self.args if not a.startswith("-"))

    def __str__(self) -> str:
        return f"binlake {' '.join(self.args)}: exit {self.status} in {self.seconds:.1f} s; stderr:\n{self.stderr}"


def binlake(
    *args: str,
    bound: float,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
    cwd: Path | None = None,
    stdout: int | None = None,
) -> Ran:
    """``python -m binlake ARGS`` as a process of its own (under ``prefix``, e.g. ``unshare``), its output
    captured (or sent to the file descriptor ``stdout``); past ``bound`` seconds it is killed (its whole process
    group: Spark's JVM too) and the case fails as a hang."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "binlake", *args],
        env=ENV if env is None else env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"hang: binlake {' '.join(args)} ran past its bound of {bound:g} s; stderr:\n{_text(err)[-3000:]}")
    return Ran(list(args), proc.returncode, _text(out), _text(err), time.monotonic() - t0)


def started(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``python -m binlake ARGS`` started in a session of its own with SIGINT's default disposition (as a terminal
    starts it), its stdout and stderr piped: for a case that signals it (:func:`ended` collects it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "binlake", *args],
        env=ENV if env is None else env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def ended(proc: subprocess.Popen[bytes], args: Sequence[str], t0: float, *, bound: float, err: bytes = b"") -> Ran:
    """The end of a :func:`started` command (``err``: stderr already read from it), within ``bound`` seconds of
    ``t0``, else it is killed and the case fails as a hang."""
    try:
        out, rest = proc.communicate(timeout=max(1.0, bound - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"hang: binlake {' '.join(args)} ran past its bound of {bound:g} s")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what it left running (Spark's Python workers, a JVM)
    return Ran(list(args), proc.returncode, _text(out), _text(err + rest), time.monotonic() - t0)


def in_process(*args: str, bound: float, on_stderr: Callable[[str], None] | None = None) -> Ran:
    """``binlake.cli.main(ARGS)`` in this process (for the ingest: on the suite's Spark session, ``spark``), its
    stdout and stderr captured; an exception it lets out is what a process prints and exits with (a traceback,
    1); past ``bound`` seconds the case fails as a hang (the run is left in its thread).  ``on_stderr`` is called
    with each text the command writes on stderr, as it writes it: a case changes the world at a given moment of
    the run (``"batch 1: "``: planned, not decoded yet)."""
    from binlake.cli import main

    raw = io.BytesIO()  # (dump writes to sys.stdout.buffer)
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", write_through=True)
    err = _Stderr(on_stderr)
    status: list[int] = []

    def run() -> None:
        try:
            status.append(main(list(args)))
        except SystemExit as e:  # argparse
            status.append(e.code if isinstance(e.code, int) else ExitStatus.ERROR)
        except BaseException:
            err.write(traceback.format_exc())
            status.append(ExitStatus.FAILED)

    t0 = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        thread = threading.Thread(target=run, name="binlake-case", daemon=True)
        thread.start()
        thread.join(bound)
    if thread.is_alive():
        pytest.fail(f"hang: binlake {' '.join(args)} ran past its bound of {bound:g} s; stderr:\n{err.getvalue()}")
    return Ran(list(args), status[0], _text(raw.getvalue()), err.getvalue(), time.monotonic() - t0)


class _Stderr(io.StringIO):
    """A captured stderr that hands each write to ``hook`` too."""

    def __init__(self, hook: Callable[[str], None] | None) -> None:
        super().__init__()
        self.hook = hook

    def write(self, s: str) -> int:
        n = super().write(s)
        if self.hook is not None:
            self.hook(s)
        return n


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "replace")


class Case:
    """One case of the matrix (the ``case`` fixture): :meth:`expect` holds a run to its documented outcome and
    records it (``outcome``, ``bound`` and ``seconds`` in the test's user properties) for the figures."""

    def __init__(self, node: pytest.Item) -> None:
        self.node = node

    def expect(
        self, ran: Ran, status: int, says: str | None = None, *, bound: float, retried: bool = False, note: str = ""
    ) -> Ran:
        """``ran`` ended with ``status`` within ``bound`` seconds, its stderr free of tracebacks and foreign lines
        (each starts ``binlake COMMAND: ``), and its last line holds ``says`` (for status 0: a line does);
        ``retried``: it logged a retry with
        backoff first; ``note``: what the outcome adds (a skip the command says, the lake a re-run leaves)."""
        label = OUTCOMES.get(ExitStatus(status) if status in ExitStatus._value2member_map_ else status, "?")
        label = f"{label} ({status})" + (" after retries" if retried else "") + (f", {note}" if note else "")
        self.node.user_properties.extend([("outcome", label), ("bound", bound), ("seconds", round(ran.seconds, 2))])
        assert ran.status == status, str(ran)
        assert not NOISE.search(ran.stderr), f"a traceback or a foreign line on stderr: {ran}"
        prefix = f"binlake {ran.command}: "
        lines = ran.stderr.splitlines()
        assert all(line.startswith(prefix) for line in lines), f"a line without {prefix!r}: {ran}"
        if says is not None and status != ExitStatus.OK:  # the one line that says why it stopped
            assert lines and says in lines[-1], f"the last line does not say {says!r}: {ran}"
        elif says is not None:
            assert says in ran.stderr, f"no line says {says!r}: {ran}"
        if retried:
            assert any("reconnecting in" in line or "retry" in line for line in lines), f"no retry logged: {ran}"
        assert ran.seconds < bound, f"{ran.seconds:.1f} s, past its bound of {bound:g} s: {ran}"
        return ran


def assert_same_lake(
    lake: object, clean: object, ignore: frozenset[str] = frozenset({"batch"}), skip: frozenset[str] = frozenset()
) -> None:
    """The lake at ``lake`` holds what the one at ``clean`` holds, table by table and row by row (``ignore``: columns
    left out; ``_schema_history``'s batch numbers by default: a lake landed in more runs has more batches; ``skip``:
    tables left out); where it does not, the message names the tables and the rows one has and the other lacks."""
    from tests.spark.test_spark import _lake_snapshot

    got, want = ({k: v for k, v in _lake_snapshot(x, ignore=ignore).items() if str(k) not in skip}  # type: ignore[arg-type]
                 for x in (lake, clean))  # fmt: skip
    if got == want:
        return
    lines = [f"tables only in the lake: {sorted(set(got) - set(want))}, only in the clean one: "
             f"{sorted(set(want) - set(got))}"]  # fmt: skip
    for table in sorted(set(got) & set(want), key=str):
        extra = [r for r in got[table] if r not in want[table]]
        lacking = [r for r in want[table] if r not in got[table]]
        if extra or lacking:
            lines.append(f"{table}: {len(extra)} rows not in the clean lake, {len(lacking)} missing, e.g.")
            lines.extend(f"  + {dict(r)}" for r in extra[:1])
            lines.extend(f"  - {dict(r)}" for r in lacking[:1])
    raise AssertionError("\n".join(lines))


def mirrored(folder: Path) -> dict[str, bytes]:
    """The binlog files in ``folder`` (a mirror's copy), by name."""
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*-bin.[0-9]*"))}


def follower_commands(command: str, options: Sequence[str], tmp_path: Path) -> tuple[list[str], list[str]]:
    """The following command and the same command ending at the server's end (``--no-follow``), for ``tail``
    (``--from-start --format debezium --output out.txt --state state`` under ``tmp_path``) or ``mirror``
    (``--from-start`` into ``tmp_path/mirror``): the two followers the server and signal cases interrupt."""
    if command == "tail":
        args = ["tail", *options, "--from-start", "--format", "debezium", "--output", str(tmp_path / "out.txt"),
                "--state", str(tmp_path / "state")]  # fmt: skip
        return args, [*args, "--no-follow"]
    args = ["mirror", *options, "--from-start", str(tmp_path / "mirror")]
    return [*args, "--follow"], args
