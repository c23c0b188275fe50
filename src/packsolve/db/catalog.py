"""Runs as a user keeps them: one label names one run, and a run can be deleted without touching others."""

from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.db.tables import rowcount
from packsolve.errors import OptionError


def claim_label(session: Session, label: str | None, move: bool = False) -> int | None:
    """Make label free for a new run; return the run it was taken from (None if it was free).

    Raise OptionError if another run has it and move is False: a label is
    never reused silently, since every command names runs by it.
    """
    if label is None:
        return None
    holder = session.scalar(select(Run.id).where(Run.label == label))
    if holder is None:
        return None
    if not move:
        raise OptionError(
            "--label", f"{label!r} already names run {holder}; choose another, or add --move-label to take it"
        )
    session.execute(update(Run).where(Run.id == holder).values(label=None))
    session.flush()
    return holder


def relabel(session: Session, run_id: int, label: str | None, move: bool = False) -> int | None:
    """Give run_id the label (None: remove it); return the run it was taken from, as claim_label does."""
    current = session.scalar(select(Run.label).where(Run.id == run_id))
    if label is not None and label == current:
        return None
    taken_from = claim_label(session, label, move)
    session.execute(update(Run).where(Run.id == run_id).values(label=label))
    return taken_from


def delete_run(session: Session, run_id: int) -> int:
    """Delete a run and its attempts; return how many attempts went.

    Levels stay (their history in other runs is untouched); reruns of the run
    stay too, unlinked from it. `report hardest --all` rebuilds its table when
    it finds a folded run gone.
    """
    session.execute(update(Run).where(Run.parent_id == run_id).values(parent_id=None))
    gone = rowcount(session.execute(delete(Attempt).where(Attempt.run_id == run_id)))
    session.execute(delete(Run).where(Run.id == run_id))
    return gone
