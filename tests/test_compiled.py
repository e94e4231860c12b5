"""The three C extensions: built wherever CI runs, and their contract with the Python side.

``pip install`` builds ``binlake._speedups`` (rows), ``binlake._columnar`` (Arrow columns) and ``binlake._framing``
(event framing, header walk); without a compiler it installs the pure-Python package, which gives the same values.
CI (``BINLAKE_STRICT_SKIPS=1``) must not pass on such an install by accident: there an extension that is missing
fails, unless ``BINLAKE_PURE_PYTHON=1`` says the run is the pure-Python one on purpose.

The extensions export the kinds of their plans (``K_*``, ``A_*``, ``V_*``): the Python side reads them from there,
so the numbers are written once, in C.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

import pytest

from binlake._compiled import PURE_PYTHON_ENV, compiled

EXTENSIONS = ("_speedups", "_columnar", "_framing")


@pytest.mark.parametrize("name", EXTENSIONS)
def test_every_extension_is_built_where_ci_runs(name: str) -> None:
    built = importlib.util.find_spec(f"binlake.{name}") is not None
    if os.environ.get("BINLAKE_STRICT_SKIPS") == "1" and not os.environ.get(PURE_PYTHON_ENV):
        assert built, f"binlake.{name} was not built by pip install: see the compiler warning of the install"
    if not built:
        pytest.skip(f"binlake.{name} was not built (no C compiler at install)")
    assert (compiled(name) is None) == bool(os.environ.get(PURE_PYTHON_ENV))


@pytest.mark.parametrize(
    ("name", "prefixes", "count"),
    [("_speedups", ("K_", "MODE_"), 17), ("_columnar", ("A_", "V_"), 18)],
)
def test_the_kinds_are_exported_once_and_distinct(name: str, prefixes: tuple[str, ...], count: int) -> None:
    if importlib.util.find_spec(f"binlake.{name}") is None:
        pytest.skip(f"binlake.{name} was not built (no C compiler at install)")
    module = importlib.import_module(f"binlake.{name}")
    exported = {k: getattr(module, k) for k in dir(module) if k.startswith(prefixes)}
    assert len(exported) == count
    for prefix in prefixes:
        values = [v for k, v in exported.items() if k.startswith(prefix)]
        assert all(isinstance(v, int) for v in values) and len(set(values)) == len(values), prefix


def test_the_framing_packet_bytes_are_the_protocol_modules() -> None:
    """``_framing.text_rows`` stops at the end-of-rows and ERR packets by their first byte: the same numbers as the
    Python side's (written in C too, exported, and checked equal here)."""
    if importlib.util.find_spec("binlake._framing") is None:
        pytest.skip("binlake._framing was not built (no C compiler at install)")
    from binlake import _framing
    from binlake.replication import protocol

    assert (_framing.EOF_PACKET, _framing.ERR_PACKET) == (protocol.EOF_PACKET, protocol.ERR_PACKET) == (0xFE, 0xFF)
