"""Where the benchmarks find the public data sets (sudoku/, sliding_puzzle/, onestroke/, ...).

The sets are not part of the repository: they live in ``../shared/benchmarks`` relative to the
repository root (``shared/`` beside the checkout), or wherever ``PACKSOLVE_BENCHMARK_DATA`` points.
Provenance and licences: ``SOURCES.md`` in that directory.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "PACKSOLVE_BENCHMARK_DATA"
DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"


def data_root() -> Path:
    """Return the directory of the public data sets; raise FileNotFoundError naming ENV if it is missing."""
    configured = os.environ.get(ENV)
    root = Path(configured).expanduser() if configured else DEFAULT
    if not root.is_dir():
        where = f"{ENV}={configured}" if configured else f"{DEFAULT} (../shared/benchmarks from the repo)"
        raise FileNotFoundError(
            f"benchmark data not found: {where} is not a directory; "
            f"set {ENV} to the directory that holds sudoku/, sliding_puzzle/ and onestroke/"
        )
    return root


def public_data(*parts: str) -> Path:
    """Return the path of a data set under data_root(); raise FileNotFoundError if it is absent."""
    path = data_root().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"benchmark data not found: {path} (the data directory comes from {ENV})")
    return path
