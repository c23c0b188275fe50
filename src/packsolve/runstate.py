"""How a run is carried out and where it stands: the values the runs table stores, as enums."""

from __future__ import annotations

from enum import StrEnum


class RunMode(StrEnum):
    """Where a run's attempts are solved: this machine's process pool, or Celery workers."""

    LOCAL = "local"
    DISTRIBUTED = "distributed"


class RunState(StrEnum):
    """Where a run stands: running until no attempt is pending, then finished, or cancelled by a user."""

    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
