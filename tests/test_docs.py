"""The documentation: ``mkdocs build --strict`` is green (every page in the navigation, every link and anchor
found, the API pages generated from the docstrings), each command's page shows what its ``--help`` prints (the
pages are generated from the parsers at build time: they cannot drift), the lake page lists the record versions
this binlake writes, and the README stays a README (under 20 KB, its two commands first).

The build needs the ``docs`` extra (``pip install -e '.[docs]'``); without it the build's tests skip saying so,
which CI (``BINLAKE_STRICT_SKIPS=1``) turns into a failure.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.cli import COMMANDS, command_parser

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
WIDTH = 100  # the width the command pages show --help at (docs/hooks.py)


def _help(command: str | None) -> str:
    parser = command_parser(command)
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=WIDTH)
    return parser.format_help()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strictly into a temporary folder (about 20 s)."""
    missing = [
        m for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers") if not importlib.util.find_spec(m)
    ]
    if missing:
        pytest.skip(f"mkdocs not installed ({', '.join(missing)} missing: pip install -e '.[docs]'): docs not built")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def _text(page: Path) -> str:
    """A built page's text: tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_each_command_page_shows_its_help(site: Path, command: str | None) -> None:
    page = site / "commands" / (command or "") / "index.html"
    text = _text(page)
    for line in _help(command).splitlines():
        assert line.rstrip() in text, f"{page}: {line!r} of binlake {command or ''} --help is not on the page"


def test_every_command_has_a_page() -> None:
    assert sorted(p.stem for p in (DOCS / "commands").glob("*.md") if p.stem != "index") == sorted(COMMANDS)
    for name in COMMANDS:
        assert f"<!-- binlake:help {name} -->" in (DOCS / "commands" / f"{name}.md").read_text(encoding="utf-8")


def test_the_lake_page_lists_the_record_versions(site: Path) -> None:
    from binlake.lake.records import BatchDone, BatchManifest
    from binlake.render.changes.tail import TAIL_STATE_VERSION

    text = _text(site / "formats" / "lake" / "index.html")
    for name, version in (("BatchManifest", BatchManifest.VERSION), ("BatchDone", BatchDone.VERSION),
                          ("TailState", TAIL_STATE_VERSION)):  # fmt: skip
        assert re.search(rf"{name}\s.*?\s{version}\s", text, re.DOTALL), name


def test_the_api_pages_are_generated_from_the_docstrings(site: Path) -> None:
    text = _text(site / "api" / "index.html")
    assert "read_events" in text and "Yield the events of the binlog at" in text  # read_events' own docstring


def test_the_readme_is_a_readme() -> None:
    """Under 20 KB, its first lines the two commands that set up and test a fresh checkout, and every link into the
    documentation points at a page that exists."""
    data = README.read_bytes()
    assert len(data) < 20_000, f"README.md is {len(data)} bytes: move the detail into docs/"
    text = data.decode("utf-8")
    first = text.split("```sh\n", 1)[1].split("```", 1)[0]
    assert "pip install -e '.[spark]' && binlake ingest examples/ --lake lake && binlake tables lake" in first
    assert "pip install -e '.[test,spark,bench,docs]' && python -m pytest" in first
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links, "the README links into docs/"
    for link in links:
        assert (REPO / link).is_file(), link


def test_the_license_changelog_and_contributing_files() -> None:
    """The licence pyproject names, in full; a changelog in Keep a Changelog's shape; the contributor's guide."""
    assert 'license = { text = "Apache-2.0" }' in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence and "END OF TERMS" in licence
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    from binlake.version import __version__

    assert "## [Unreleased]" in changelog and f"## [{__version__}] - " in changelog
    contributing = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "python -m pytest" in contributing and "BINLAKE_STRICT_SKIPS" in contributing
