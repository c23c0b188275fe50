"""Lights Out as a packsolve plug-in kind: press lights until every light is off.

Pressing a light toggles it and its four neighbours. A level is a grid of lights, a
solution the list of lights to press (each once; the order does not matter), as few as
possible. Everything here comes from ``packsolve.api``, the stable interface for kinds.
"""

from __future__ import annotations

from packsolve_lightsout.kind import KIND

__all__ = ["KIND"]
