"""--on-error on the command line: damaged logs are read past the damage, and every skip is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.cli import main


def _relay(corpus_dir: Path) -> Path:
    # damaged on purpose: the QUERY event at 91204 (171 bytes) is broken (mysql-INDEX.md)
    return corpus_dir / "mysql" / "rust_mysql_common" / "corrupt-relay-bin.000624"


def test_events_stops_at_the_damage_by_default(corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["events", str(_relay(corpus_dir))]) == 2
    err = capsys.readouterr().err
    assert "at 91204" in err


@pytest.mark.parametrize("mode", ["skip-event", "skip-transaction"])
def test_events_and_stats_skip_and_report(corpus_dir: Path, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    path = str(_relay(corpus_dir))
    assert main(["events", "--on-error", mode, "--json", path]) == 0
    out, err = capsys.readouterr()
    positions = [int(line.split('"pos": ')[1].split(",")[0]) for line in out.splitlines()]
    assert 91204 not in positions and max(positions) > 91204
    assert "skipped" in err and "91204" in err
    assert main(["stats", "--on-error", mode, path]) == 0
    assert "91204" in capsys.readouterr().err


def test_dump_skips_too(corpus_dir: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["dump", "--on-error", "skip-event", str(_relay(corpus_dir))]) == 0
    out, err = capsysbinary.readouterr()
    assert b"# at 91204\n" not in out and b"# at 91375\n" in out
    assert b"91204" in err
