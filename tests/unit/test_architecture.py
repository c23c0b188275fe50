"""The layout holds: import-linter's contracts (pyproject.toml), small modules, every listed kind present."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "packsolve"
# A module past this many lines is a sign that it holds two jobs (C sources aside).
MAX_MODULE_LINES = 450


def test_import_contracts_hold():
    """Layers (cli → runs/scheduler/worker → … → core), a pure core, no circle between modules."""
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint), "--no-cache"], capture_output=True, text=True, cwd=SRC.parents[1], check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_no_module_in_src_is_over_450_lines():
    sizes = {p.relative_to(SRC): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert {str(p): n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_every_listed_kind_is_present():
    from packsolve.puzzles import _MODULES, KINDS

    # Installed plug-ins (examples/plugin in CI) come after the built-ins.
    assert list(KINDS)[: len(_MODULES)] == list(_MODULES)
