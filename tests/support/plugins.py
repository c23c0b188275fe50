"""Installed-looking distributions for plug-in tests: a module plus a .dist-info with entry points.

importlib.metadata finds a distribution by its .dist-info directory on sys.path, exactly as
pip leaves it in site-packages, so a directory made here and put on sys.path (or PYTHONPATH
for a subprocess) is found through the real entry-point machinery, not a stand-in.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from packsolve.puzzles import KINDS

# A minimal, correct plug-in kind: a row of coins, flip them all heads up (solution: indices flipped).
FLIP_KIND = """
from packsolve.api import LevelError, PuzzleKind, no_solution, solved, solver


def parse(data):
    if not isinstance(data, dict):
        raise LevelError("a flip level must be a JSON object")
    coins = data.get("coins")
    if not isinstance(coins, str) or not coins or set(coins) - set("HT"):
        raise LevelError('a flip level needs "coins": a string of H and T')
    return coins


@solver
def each(coins, budget):
    budget.charge(len(coins))
    return solved([i for i, c in enumerate(coins) if c == "T"])


def verify(coins, solution):
    if not isinstance(solution, list) or not all(type(i) is int for i in solution):
        return "a solution is a list of coin indices"
    if len(set(solution)) != len(solution) or not all(0 <= i < len(coins) for i in solution):
        return "indices must be distinct and on the row"
    flipped = set(solution)
    if any((c == "T") != (i in flipped) for i, c in enumerate(coins)):
        return "some coin is still tails"
    return None


KIND = PuzzleKind(
    name="{name}", parse=parse, canonical=lambda coins: {{"coins": coins}}, solvers={{"each": each}},
    default="each", verify=verify, render=lambda c, s: c, svg=lambda c, s: "<svg></svg>", size=len,
    description="flip every coin heads up (version {version})", examples=({{"coins": "HTT"}},),
)
"""


def make_distribution(
    root: Path,
    dist: str,
    version: str,
    entry_points: dict[str, str],
    modules: dict[str, str],
) -> Path:
    """Write modules and a dist-info declaring entry_points (name -> "module:OBJECT") under root."""
    root.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = ["[packsolve.kinds]"] + [f"{name} = {value}" for name, value in entry_points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return root


def flip_distribution(
    root: Path, version: str = "1.0", name: str = "flip", dist: str = "packsolve-flip"
) -> Path:
    """Write a distribution with the flip kind under root (module name unique per kind name)."""
    module = f"{name}_kind"
    return make_distribution(
        root, dist, version, {name: f"{module}:KIND"}, {module: FLIP_KIND.format(name=name, version=version)}
    )


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    """Return install(root): put a directory of distributions on sys.path and let the registry see it.

    At the end the registry forgets them and their modules are unloaded, so tests do not leak kinds.
    """
    from packsolve.levels import level_suffixes

    roots: list[Path] = []

    def install(root: Path) -> None:
        roots.append(root)
        monkeypatch.syspath_prepend(str(root))
        KINDS.refresh()
        level_suffixes.cache_clear()

    yield install
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if any(path.startswith(str(root)) for root in roots):
            del sys.modules[name]
    monkeypatch.undo()
    KINDS.refresh()
    level_suffixes.cache_clear()
