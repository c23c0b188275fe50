"""Re-export the query functions under their old module name while callers move to db.runs, db.attempts, …"""

# TEMPORARY: removed when the restructure branches merge

from __future__ import annotations

from packsolve.db.attempts import Result, claim_many, record
from packsolve.db.history import level_facts, recent_wall_times
from packsolve.db.reconcile import attempts_with_levels, stale_attempts, take_stale
from packsolve.db.runs import (
    PlannedAttempt,
    RunOptions,
    attempts_to_rerun,
    cancel_pending,
    create_run,
    finish_run_if_done,
    mark_sent,
    pending_of,
    resolve_run,
    status_counts,
    unfinished_runs,
)

__all__ = [
    "PlannedAttempt",
    "Result",
    "RunOptions",
    "attempts_to_rerun",
    "attempts_with_levels",
    "cancel_pending",
    "claim_many",
    "create_run",
    "finish_run_if_done",
    "level_facts",
    "mark_sent",
    "pending_of",
    "recent_wall_times",
    "record",
    "resolve_run",
    "stale_attempts",
    "status_counts",
    "take_stale",
    "unfinished_runs",
]
