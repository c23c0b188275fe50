"""CLI commands for reading results: report hardest/compare/cactus/html, show."""

from __future__ import annotations

from packsolve.cli import cli, report  # noqa: F401  (the groups commands attach to)
