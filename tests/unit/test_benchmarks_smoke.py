"""Every benchmark imports as part of the benchmarks package and answers --help with its docstring.

The benchmarks are run as ``python -m benchmarks.NAME`` from the repository root; this
runs each entry module the same way, in this process, with ``--help``: nothing is
measured, no server is needed, and a broken import, a stray ``sys.path`` dependency or
a script that starts measuring whatever its arguments shows up here.
"""

from __future__ import annotations

import ast
import runpy
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# Peers of the `bench` extra, not installed by `dev`: a benchmark needing one is skipped without it.
PEERS = {"networkx", "scipy", "pysat", "slidingpuzzle", "ortools", "matplotlib"}
# Run by path, not as benchmarks.NAME: cost_hooks is the timed worker the pipeline starts (its
# argument is a pool size, not options); the sudoku benchmarks import public_data as a top-level module.
BY_PATH = {"cost_hooks", "sudoku_bench", "sudoku_tdoku"}


def entry_modules() -> dict[str, Path]:
    """Return the benchmark modules that run as a program: dotted name -> the file run."""
    names = {}
    for path in sorted(BENCHMARKS.rglob("*.py")):
        if 'if __name__ == "__main__":' not in path.read_text() and path.name != "__main__.py":
            continue
        parts = path.relative_to(BENCHMARKS.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            parts = parts[:-1]
        if parts[-1] not in BY_PATH:
            names[".".join(parts)] = path
    return names


def test_every_benchmark_is_found() -> None:
    names = entry_modules()
    assert "benchmarks.pipeline" in names and "benchmarks.spine" in names and len(names) >= 25


@pytest.mark.parametrize("module", entry_modules())
def test_help_prints_the_docstring(
    module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    monkeypatch.delitem(sys.modules, module, raising=False)  # imported by another benchmark: run afresh
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except ModuleNotFoundError as exc:
        if exc.name not in PEERS:
            raise
        pytest.skip(f"peer {exc.name} not installed (pip install -e '.[bench]')")
    except SystemExit as exc:
        assert exc.code == 0
    else:
        pytest.fail(f"{module} --help did not exit")
    out = capsys.readouterr().out
    doc = ast.get_docstring(ast.parse(entry_modules()[module].read_text()))
    assert out.startswith("usage:")
    assert doc is not None
    assert " ".join(doc.splitlines()[0].split()) in " ".join(out.split())  # as argparse may wrap it
