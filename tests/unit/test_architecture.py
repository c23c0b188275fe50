"""The layout holds: import-linter's contracts, ruff's complexity bounds, every listed kind present."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "packsolve"
# ruff's complexity rules, bounded in pyproject.toml ([tool.ruff.lint.mccabe], [tool.ruff.lint.pylint]).
COMPLEXITY_RULES = "C901,PLR0912,PLR0913,PLR0915"


def test_import_contracts_hold():
    """Layers (cli → runs/scheduler/worker → … → core), a pure core, no circle between modules."""
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint), "--no-cache"], capture_output=True, text=True, cwd=SRC.parents[1], check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_no_function_in_src_is_over_the_complexity_bounds():
    """No function in src has too many branches, statements or arguments (per-line `noqa` not counted).

    `make lint` checks this too; here `make test` does, and a `# noqa` cannot silence it.
    """
    ruff = Path(sys.executable).with_name("ruff")
    command = [
        str(ruff),
        "check",
        "--select",
        COMPLEXITY_RULES,
        "--ignore-noqa",
        "--output-format=concise",
        "src",
    ]
    out = subprocess.run(command, capture_output=True, text=True, cwd=SRC.parents[1], check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_listed_kind_is_present():
    from packsolve.puzzles import _MODULES, KINDS

    # Installed plug-ins (examples/plugin in CI) come after the built-ins.
    assert list(KINDS)[: len(_MODULES)] == list(_MODULES)
