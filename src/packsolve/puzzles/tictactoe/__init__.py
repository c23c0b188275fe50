"""Tic-tac-toe levels (m x n, k in a row): the kind in ``kind``, its game-tree searches in ``search``."""

from __future__ import annotations

from packsolve.puzzles.tictactoe.kind import KIND

__all__ = ["KIND"]
