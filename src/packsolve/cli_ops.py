"""CLI commands for operating runs: scheduler (reconcile), rerun."""

from __future__ import annotations

from packsolve.cli import cli  # noqa: F401  (the group commands attach to)
