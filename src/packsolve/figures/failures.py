"""A run's failed attempts grouped by (status, message pattern): grouped once it finished, and kept.

Grouping reads every failed attempt of the run (the pattern of a message is a Python regular
expression, not SQL): 2 to 4 seconds for a run of a million attempts. A finished run's attempts no
longer change, so its groups are made once, off the finishing transaction (the scheduler, a local
solve's end, or the first reader), and kept as its FAILURES snapshot (figures.snapshots) with
KEPT_EXAMPLES levels each; `report failures`, its JSON and the dashboard read them from there. A run
still going, or asked for more examples than were kept, is grouped at each call.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import TypedDict

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.db.tables import PENDING_VALUES
from packsolve.figures import snapshots
from packsolve.outcome import SUCCESS_VALUES

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
NOT_FAILED = (*SUCCESS_VALUES, *PENDING_VALUES)
# Levels kept per group: the dashboard's default (`report failures` names 3).
KEPT_EXAMPLES = 20


def pattern(message: str | None, name: str | None = None) -> str:
    """Return the shape of a message: its level name dropped, every number as N (what groups share)."""
    text = message or ""
    if name and text.startswith(f"{name}: "):
        text = text[len(name) + 2 :]
    return _NUMBER.sub("N", text.strip())


def group_key(status: str, pattern_text: str) -> str:
    """Return a failure group's identity: its status and a digest of its pattern (`timeout:3f2a9c1e`).

    Stable across runs and versions (the pattern is the group); `rerun --group KEY` picks by it.
    """
    digest = hashlib.sha256(pattern_text.encode("utf-8")).hexdigest()[:8]
    return f"{status}:{digest}"


def in_group(key: str, status: str, message: str | None, name: str) -> bool:
    """Return whether an attempt (status, message, level name) belongs to the group of key."""
    return group_key(status, pattern(message, name)) == key


class Group(TypedDict):
    """Failed attempts of one status whose messages share a pattern."""

    key: str  # group_key: what `rerun --group` takes
    status: str
    message: str  # the first one as written, in pack order
    pattern: str
    count: int
    kinds: dict[str, int]  # attempts per kind, by kind
    examples: list[str]  # the first levels' names, in pack order


def read_groups(db: Session | Connection, run_id: int, examples: int) -> list[Group]:
    """Return the run's failed attempts grouped by (status, pattern), read now: largest group first."""
    q = (
        select(Attempt.name, Attempt.kind, Attempt.status, Attempt.message)
        .where(Attempt.run_id == run_id, Attempt.status.not_in(NOT_FAILED))
        .order_by(Attempt.seq)
    )
    found: dict[tuple[str, str], Group] = {}
    kinds: dict[tuple[str, str], Counter[str]] = {}
    for name, kind, status, message in db.execute(q):
        key = (str(status), pattern(message, name))
        g = found.get(key)
        if g is None:
            g = found[key] = {
                "key": group_key(*key),
                "status": key[0],
                "message": message or "",
                "pattern": key[1],
                "count": 0,
                "kinds": {},
                "examples": [],
            }
            kinds[key] = Counter()
        g["count"] += 1
        kinds[key][kind] += 1
        if len(g["examples"]) < examples:
            g["examples"].append(name)
    for key, g in found.items():
        g["kinds"] = dict(sorted(kinds[key].items()))
    return sorted(found.values(), key=lambda g: (-g["count"], g["status"], g["pattern"]))


def store_groups(db: Session | Connection, run_id: int) -> list[Group]:
    """Group the finished run's failed attempts, keep them as its FAILURES snapshot and return them."""
    found = read_groups(db, run_id, KEPT_EXAMPLES)
    snapshots.keep(db, run_id, snapshots.FAILURES, {"examples": KEPT_EXAMPLES, "groups": found})
    return found


def kept_groups(db: Session | Connection, run_id: int, examples: int) -> list[Group] | None:
    """Return the groups kept for the run as finished now, each with up to `examples` levels.

    None if none are kept (a run going, or resumed since), or if more examples are asked for
    than were kept and a group has more levels than it kept.
    """
    payload = snapshots.kept(db, run_id, snapshots.FAILURES)
    if payload is None:
        return None
    kept, found = payload["examples"], payload["groups"]
    if examples > kept and any(g["count"] > len(g["examples"]) for g in found):
        return None
    for g in found:
        g["examples"] = g["examples"][:examples]
    return found  # type: ignore[no-any-return]


def failure_groups_of(db: Session | Connection, run: Run, examples: int) -> list[Group]:
    """Return the run's groups: kept ones when they hold, else read now (kept by a finished run's reader)."""
    if run.finished_at is None:
        return read_groups(db, run.id, examples)
    found = kept_groups(db, run.id, examples)
    if found is not None:
        return found
    if examples <= KEPT_EXAMPLES and snapshots.kept(db, run.id, snapshots.FAILURES) is None:
        return [{**g, "examples": g["examples"][:examples]} for g in store_groups(db, run.id)]
    return read_groups(db, run.id, examples)
