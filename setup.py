"""Build hook for the C accelerators: every src/packsolve/native/*.c becomes packsolve.native.<name>.

Everything else about the package lives in pyproject.toml.
"""

from pathlib import Path

from setuptools import Extension, setup

NATIVE = Path("src/packsolve/native")

setup(
    ext_modules=[
        Extension(
            f"packsolve.native.{c.stem}",
            sources=[str(c)],
            # shared headers (sudoku_common.h): a change rebuilds the modules, and the sdist carries them
            depends=[str(h) for h in sorted(NATIVE.glob("*.h"))],
            extra_compile_args=["-O3", "-std=c11"],
        )
        for c in sorted(NATIVE.glob("*.c"))
    ]
)
