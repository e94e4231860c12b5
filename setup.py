"""Builds the optional compiled row decoder ``binlake._speedups`` (everything else is in ``pyproject.toml``).

The extension is optional: without a C compiler or Python headers the build warns and installs the pure-Python
package, which decodes the same values, only slower (``binlake.rowdecoder.ACCELERATED`` tells which one runs).

    pip install -e '.[test]'        # builds src/binlake/_speedups*.so in place when a compiler is there
"""

from __future__ import annotations

import warnings

from setuptools import Extension, setup  # type: ignore[import-untyped]
from setuptools.command.build_ext import build_ext  # type: ignore[import-untyped]


class OptionalBuildExt(build_ext):  # type: ignore[misc]
    """``build_ext`` that turns a failed compilation into a warning instead of a failed install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all (DistutilsPlatformError), broken toolchain
            self._skip(e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # CompileError, LinkError, missing Python.h
            self._skip(e)

    @staticmethod
    def _skip(error: Exception) -> None:
        warnings.warn(
            f"binlake._speedups was not built ({error}); binlake works without it, decoding rows more slowly",
            stacklevel=1,
        )


setup(
    ext_modules=[Extension("binlake._speedups", ["src/binlake/_speedups.c"], extra_compile_args=["-O2"])],
    cmdclass={"build_ext": OptionalBuildExt},
)
