"""Builds the optional compiled extensions (everything else is in ``pyproject.toml``): the row decoder
``binlake._speedups``, the Arrow column builder ``binlake._columnar`` and the event framing and header walk
``binlake._framing`` (its CRC32 is zlib's: it needs ``zlib.h``, Debian's ``zlib1g-dev``; it is a module of its own
so that a machine without it loses only that one).

The extensions are optional: without a C compiler or Python headers the build warns and installs the pure-Python
package, which decodes the same values, only slower (``binlake.rowdecoder.ACCELERATED``,
``binlake.ingest.columnar.AVAILABLE`` and ``binlake.decoder.FRAMING`` tell which ones run; CI fails where one is not
built: ``tests/test_compiled.py``).

    pip install -e '.[test]'        # builds src/binlake/_speedups*.so, _columnar*.so and _framing*.so in place
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
            self._skip(e, ext.name)

    @staticmethod
    def _skip(error: Exception, name: str = "binlake's C extensions") -> None:
        warnings.warn(
            f"{name}: not built ({error}); binlake works without compiled code, only more slowly",
            stacklevel=1,
        )


_SHARED = ["src/binlake/_layouts.h"]  # the stored-value arithmetic both extensions include (and the sdist carries)

setup(
    ext_modules=[
        Extension("binlake._speedups", ["src/binlake/_speedups.c"], depends=_SHARED, extra_compile_args=["-O2"]),
        Extension("binlake._columnar", ["src/binlake/_columnar.c"], depends=_SHARED, extra_compile_args=["-O2"]),
        Extension(
            "binlake._framing",
            ["src/binlake/_framing.c"],
            depends=_SHARED,
            libraries=["z"],
            extra_compile_args=["-O2"],
        ),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
