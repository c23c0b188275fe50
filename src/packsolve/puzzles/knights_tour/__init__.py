"""Knight's tours: ``kind``, ``rules`` (board facts), searches ``search``, ``blocks``, pictures ``draw``."""

from __future__ import annotations

from packsolve.puzzles.knights_tour.kind import KIND

__all__ = ["KIND"]
