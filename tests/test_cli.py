"""The habits every ``binlake`` command shares: one table of exit statuses (``binlake.errors.ExitStatus``, the
README's "Exit status"), one prefix on stderr (``binlake COMMAND: ``), one data error exiting alike in every command
that reads files, ``--version``, every ``--help`` whole, ``dump`` taking ``mariadb-binlog``'s habitual options, and
Ctrl-C as one line and status 130 (``binlake.cli.run``, the one place a command's end becomes its status).  The
ingest's share (Spark) is in ``tests/spark/test_cli.py``."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from binlake.cli import COMMANDS, build_parser, main, run
from binlake.errors import BinlogError, ExitStatus, Interrupted
from binlake.reader import walk_headers

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "example-bin.000001"
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def _damaged(tmp_path: Path) -> tuple[Path, int]:
    """The example with the CRC32 of its fourth XID_EVENT broken: a data error in the middle of a file."""
    data = bytearray(EXAMPLE.read_bytes())
    xid = [h for h in walk_headers(EXAMPLE) if h.type_code == 16][3]
    data[xid.pos + xid.size - 1] ^= 0xFF
    path = tmp_path / "damaged-bin.000001"
    path.write_bytes(bytes(data))
    return path, xid.pos


# -- exit statuses and the prefix -------------------------------------------------------------------------------------


def test_the_docs_document_the_one_table_of_exit_statuses() -> None:
    page = (REPO / "docs" / "reference" / "exit-status.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (\d+) \| `(\w+)` \|", page, re.MULTILINE))
    assert rows == {str(s.value): s.name for s in ExitStatus}


@pytest.mark.parametrize("command", ["events", "dump", "stats", "changes"])
def test_a_damaged_event_exits_alike_in_every_command(
    command: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``binlake stats`` and ``dump`` exited 1 (``dump`` with ``ERROR: ``), ``events`` and ``ingest`` 2 (``binlake:``),
    and none said that ``--on-error`` reads on past the event."""
    path, pos = _damaged(tmp_path)
    assert main([command, str(path)]) == ExitStatus.ERROR
    err = capfd.readouterr().err
    assert re.fullmatch(
        rf"binlake {command}: \S*{path.name}: at {pos}: CRC32 mismatch in XID_EVENT: stored 0x\w+, computed 0x\w+ "
        r"\(--on-error skip-event or skip-transaction reads on past it\)\n",
        err,
    ), err
    assert main([command, str(path), "--on-error", "skip-event"]) == ExitStatus.OK
    err = capfd.readouterr().err
    assert f"binlake {command}: skipped " in err and all(
        line.startswith(f"binlake {command}: ") for line in err.splitlines()
    )


def test_usage_errors_show_the_commands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown option is the subcommand's (its usage, not the top level's)."""
    with pytest.raises(SystemExit) as e:
        main(["stats", str(EXAMPLE), "--no-such-option"])
    assert e.value.code == ExitStatus.ERROR
    err = capsys.readouterr().err
    assert err.startswith("usage: binlake stats ") and err.endswith(
        "binlake stats: error: unrecognized arguments: --no-such-option\n"
    )


def test_version_comes_from_the_package_metadata() -> None:
    done = subprocess.run([sys.executable, "-m", "binlake", "--version"], capture_output=True, text=True, env=ENV)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"binlake {version('binlake')}\n", "")


def _helps(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    out = [("description", parser.description or ""), ("epilog", parser.epilog or "")]
    out += [(f"group {g.title}", g.description or "") for g in parser._action_groups]
    for action in parser._actions:
        out.append(("/".join(action.option_strings) or action.dest, action.help or ""))
        if isinstance(action, argparse._SubParsersAction):
            out += [(f"command {a.dest}", a.help or "") for a in action._choices_actions]
    return [(where, text) for where, text in out if text and text != argparse.SUPPRESS]


# words a clause does not end with (a cut sentence does); "on" and "from" do ("default: on", "read from")
_DANGLING = {"a", "an", "the", "of", "to", "for", "with", "and", "or", "by", "in", "at", "that", "its", "their", "as"}


def _cut(text: str) -> str | None:
    """What shows that ``text`` was cut mid-sentence, if anything."""
    last = re.findall(r"[\w'’]+", text)[-1]
    if text.count("(") != text.count(")") or text.count("[") != text.count("]") or text.count("`") % 2:
        return "an unclosed bracket or quote"
    if text.rstrip()[-1] in ",:;(-/":
        return f"it ends with {text.rstrip()[-1]!r}"
    if last.lower() in _DANGLING or re.search(r"['’]s$", last):
        return f"it ends with {last!r}"
    return None


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_help_is_whole(command: str | None) -> None:
    """Each description and option help of every subcommand ends in a whole clause (``--ssl-ca``'s ended in "the
    server's"), and the help renders."""
    parser = build_parser([command] if command else [])
    if command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[command]
    cut = {where: f"{why}: {text!r}" for where, text in _helps(parser) if (why := _cut(text))}
    assert cut == {}
    assert parser.format_help()


# -- dump takes mariadb-binlog's habits -------------------------------------------------------------------------------


def test_dump_takes_the_tools_habitual_options(capfd: pytest.CaptureFixture[bytes]) -> None:
    """``dump`` is what ``mariadb-binlog --base64-output=DECODE-ROWS -vv`` prints: those options change nothing; the
    ones it does not offer are refused saying what to use instead (they were unknown arguments, with the top level's
    usage)."""
    assert main(["dump", str(EXAMPLE)]) == 0
    plain = capfd.readouterr().out
    for habit in (
        ["-vv"],
        ["--base64-output=DECODE-ROWS"],
        ["--base64-output=decode-rows", "-vv", "--print-table-metadata"],
    ):
        assert main(["dump", *habit, str(EXAMPLE)]) == 0
        assert capfd.readouterr().out == plain
    assert main(["dump", "-v", str(EXAMPLE)]) == ExitStatus.ERROR
    assert capfd.readouterr().err == (
        "binlake dump: -v prints values without their types, which binlake dump does not offer: give -vv, its text, "
        "or nothing\n"
    )
    refused = {
        "--base64-output=AUTO": "argument --base64-output: 'AUTO': binlake dump prints rows decoded and no BINLOG",
        "--hexdump": "-H/--hexdump is not offered: binlake explain FILE --at POS",
        "-R": "-R/--read-from-remote-server is not offered: binlake tail --host H",
        "--force-read": "-f/--force-read is not offered: --on-error skip-event",
    }
    for option, said in refused.items():
        with pytest.raises(SystemExit) as e:
            main(["dump", option, str(EXAMPLE)])
        assert e.value.code == ExitStatus.ERROR
        err = capfd.readouterr().err
        assert err.startswith("usage: binlake dump ") and f"\nbinlake dump: error: {said}" in err


# -- Ctrl-C -----------------------------------------------------------------------------------------------------------


def test_run_turns_each_ending_into_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    def raising(e: BaseException) -> object:
        def fn(_: argparse.Namespace) -> int:
            raise e

        return fn

    args = argparse.Namespace()
    assert run("x", raising(KeyboardInterrupt()), args) == 130
    assert capsys.readouterr().err == "binlake x: interrupted\n"
    assert run("x", raising(Interrupted("batch 3 is not finished; the next run finishes it")), args) == 130
    assert capsys.readouterr().err == "binlake x: interrupted: batch 3 is not finished; the next run finishes it\n"
    assert run("x", raising(BinlogError("bad", file="f", pos=4)), args) == 2
    assert capsys.readouterr().err == "binlake x: f: at 4: bad\n"

    def unwinding(_: argparse.Namespace) -> int:  # a library failing again on its way out of a Ctrl-C (py4j)
        try:
            raise KeyboardInterrupt
        finally:
            raise ConnectionError("Answer from Java side is empty")

    assert run("x", unwinding, args) == 130
    assert capsys.readouterr().err == "binlake x: interrupted\n"
    with pytest.raises(ConnectionError):  # the same error without a Ctrl-C behind it is a bug's traceback
        run("x", raising(ConnectionError("Answer from Java side is empty")), args)


def test_ctrl_c_on_a_following_command_is_one_line_and_130(tmp_path: Path) -> None:
    """SIGINT to the process group of ``binlake events --follow`` (what a terminal's Ctrl-C sends) while it waits
    for more bytes: no traceback, one line, status 130."""
    log = tmp_path / "live-bin.000001"
    log.write_bytes(EXAMPLE.read_bytes())
    command = [sys.executable, "-m", "binlake", "events", "--follow", str(log)]
    proc = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split()[:2] == ["4", "FORMAT_DESCRIPTION_EVENT"]
        time.sleep(1.0)  # at the end of the file, waiting
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (130, "binlake events: interrupted\n")
    assert out.splitlines()[-1].split()[:2] == ["58681", "STOP_EVENT"]  # every event listed before the interrupt
