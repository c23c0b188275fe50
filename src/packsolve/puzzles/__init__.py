"""The registry of puzzle kinds: name -> PuzzleKind, imported on first use."""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Iterator, Mapping

from packsolve.api import PuzzleKind
from packsolve.errors import UnknownKind

# Explicit: a kind exists when it is listed here. Modules are imported lazily so
# that a command touching one kind does not pay for the others' start-up.
_MODULES = {
    "onestroke": "packsolve.puzzles.onestroke",
    "knights_tour": "packsolve.puzzles.knights_tour",
    "sudoku": "packsolve.puzzles.sudoku",
    "sliding": "packsolve.puzzles.sliding",
    "tictactoe": "packsolve.puzzles.tictactoe",
    "coins": "packsolve.puzzles.coins",
    "floodfill": "packsolve.puzzles.floodfill",
    "euler": "packsolve.puzzles.euler",
}


def _modules() -> dict[str, str]:
    """Return the listed kinds plus PACKSOLVE_EXTRA_KINDS ("name:module,..."), e.g. test-only kinds.

    The hook lets a plug-in kind (or the chaos tests' misbehaving solvers) reach
    real workers without editing this list; listed names cannot be overridden.
    """
    extra = {}
    for entry in os.environ.get("PACKSOLVE_EXTRA_KINDS", "").split(","):
        name, sep, module = entry.strip().partition(":")
        if sep and name and module:
            extra[name] = module
    return {**extra, **_MODULES}


class _Registry(Mapping[str, PuzzleKind]):
    """A read-only mapping of the kinds whose module is present."""

    def __init__(self) -> None:
        self._loaded: dict[str, PuzzleKind] = {}

    def _available(self) -> list[str]:
        names = []
        for name, module in _modules().items():
            if importlib.util.find_spec(module) is not None:
                names.append(name)
        return names

    def __getitem__(self, name: str) -> PuzzleKind:
        if name not in self._loaded:
            modules = _modules()
            if name not in modules:
                raise KeyError(name)
            try:
                module = importlib.import_module(modules[name])
            except ModuleNotFoundError as exc:
                if exc.name == modules[name]:
                    raise KeyError(name) from None
                raise
            self._loaded[name] = module.KIND
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._available())

    def __len__(self) -> int:
        return len(self._available())


KINDS: Mapping[str, PuzzleKind] = _Registry()


def get_kind(name: str) -> PuzzleKind:
    """Return the kind called name; raise UnknownKind with the known kinds listed."""
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(KINDS)
        raise UnknownKind(f"unknown kind {name!r} (known: {known})") from None


__all__ = ["KINDS", "PuzzleKind", "get_kind"]
