"""Old home of the execution path, now packsolve.execution; re-exports what other modules still import."""

# TEMPORARY: removed when the restructure branches merge

from __future__ import annotations

from packsolve.execution import AttemptSpec, Limits, execute_attempts, execute_claimed, solution_length

__all__ = ["AttemptSpec", "Limits", "execute_attempts", "execute_claimed", "solution_length"]
