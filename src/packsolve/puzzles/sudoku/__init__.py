"""Sudoku levels: the kind in ``kind``, its searches in ``search`` and ``dlx``, its pictures in ``render``."""

from __future__ import annotations

from packsolve.puzzles.sudoku.kind import KIND

__all__ = ["KIND"]
