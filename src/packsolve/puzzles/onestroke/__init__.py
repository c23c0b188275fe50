"""One-stroke levels: the kind in ``kind``, the level generator in ``generate``."""

from __future__ import annotations

from packsolve.puzzles.onestroke.kind import KIND

__all__ = ["KIND"]
