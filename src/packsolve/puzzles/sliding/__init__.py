"""Sliding-tile levels: ``kind``, ``board``, searches in ``search`` and ``ida``, pattern tables in ``pdb``."""

from __future__ import annotations

from packsolve.puzzles.sliding.kind import KIND

__all__ = ["KIND"]
