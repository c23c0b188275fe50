"""How a run is carried out and where it stands: the values the runs table stores, as enums."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Protocol


class RunMode(StrEnum):
    """Where a run's attempts are solved: this machine's process pool, or Celery workers."""

    LOCAL = "local"
    DISTRIBUTED = "distributed"


class RunState(StrEnum):
    """Where a run stands: running until no attempt is pending, then finished, or cancelled by a user."""

    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class ShownState(StrEnum):
    """A run's state as it is shown (`status`, `runs`, `report summary`, the dashboard).

    The stored RunState, told apart further where a user must act: a distributed run
    whose submit has not sent every task is `unsent` (its submit failed: resume or
    delete it) or `sending` (its submit is at work, or was killed); a local run whose
    solve process on this machine is gone (killed, crashed) is `interrupted`.
    """

    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    UNSENT = "unsent"
    SENDING = "sending"

    @property
    def going(self) -> bool:
        """Return whether the run may still change by itself (its rows are read again while shown)."""
        return self in (ShownState.RUNNING, ShownState.SENDING, ShownState.UNSENT)


class RunFacts(Protocol):
    """What a run's shown state is computed from (a runs row has all of them)."""

    @property
    def mode(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def sent_at(self) -> datetime | None: ...
    @property
    def send_error(self) -> str | None: ...


def shown(run: RunFacts, solver_alive: bool | None) -> ShownState:
    """Return the state run is shown in; solver_alive says whether its local solve process lives.

    solver_alive is None where it cannot be told (a distributed run, another machine). In order:
    a finished run not cancelled is finished; an unfinished one whose solve process is gone is
    interrupted; a distributed run still running that was not sent in full is unsent when its
    submit recorded why it stopped, else sending; otherwise the stored state. The same answer
    for every reader: `status` once showed an unsent run `running` while `runs` showed it
    `unsent`.
    """
    if run.finished_at is not None and run.state != RunState.CANCELLED:
        return ShownState.FINISHED
    if run.finished_at is None and solver_alive is False:
        return ShownState.INTERRUPTED
    if run.mode == RunMode.DISTRIBUTED and run.sent_at is None and run.state == RunState.RUNNING:
        return ShownState.UNSENT if run.send_error else ShownState.SENDING
    return ShownState(str(run.state))
