"""Refused tasks: what workers record when they cannot serve a queued attempt's task, and what it decides.

A worker that refuses a task records the refusal against the run's queued attempts it names whose
kind and heuristic are the task's (a forged task naming other levels or another heuristic records
nothing), one row per (run, level, heuristic, worker host): a run may try a level with several
heuristics, and one refused (a program some machines lack) says nothing of the others. The
scheduler gives up a queued attempt that
every live worker refused GIVE_UP_AFTER times in all for an authentic reason (a kind, heuristic or
program it lacks, of a task it may trust): the attempt becomes `error`, its message saying why.
A refusal of a task a worker may not trust (unsigned, or signed with another key) is only shown:
a broker writer must not be able to end a level. `status` names what recent refusals keep waiting,
and the scheduler does not take an attempt refused lately for one whose task the broker lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Connection, Table, and_, exists, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Refusal
from packsolve.db.runs import finish_run_if_done
from packsolve.db.tables import BATCH, rowcount
from packsolve.db.workers import now_sql
from packsolve.outcome import Status

REFUSALS = cast(Table, Refusal.__table__)
# Refusals by every live worker, counted over them all, before the scheduler gives an attempt up.
GIVE_UP_AFTER = 5
# A refusal this recent means the attempt's task is on its way back to the queue (a worker waits at
# most queue.admission.REFUSE_MAX_S before it comes back): not lost, and shown by `status`.
FRESH = timedelta(seconds=120)


def record_refusal(
    connection: Connection,
    run_id: int,
    kinds: Mapping[tuple[str, str], str],
    host: str,
    refusal: tuple[str, bool],
) -> int:
    """Record a refusal by host against the run's queued attempts named; return how many it concerned.

    kinds: each attempt the task names (level hash, heuristic), with the kind it names; an attempt
    of the run is concerned if it is queued, of that kind and heuristic (a run may try a level with
    several); the others are left alone. refusal: (the reason, whether authentic: see the module).
    0 means nothing the task names waits for it: drop it.
    """
    reason, authentic = refusal
    hashes = sorted({h for h, _ in kinds})
    matching: list[tuple[str, str]] = []
    for i in range(0, len(hashes), BATCH):
        rows = connection.execute(
            select(Attempt.level_hash, Attempt.kind, Attempt.heuristic).where(
                Attempt.run_id == run_id,
                Attempt.level_hash.in_(hashes[i : i + BATCH]),
                Attempt.status == Status.QUEUED.value,
            )
        )
        matching.extend((h, heuristic) for h, kind, heuristic in rows if kinds.get((h, heuristic)) == kind)
    matching = sorted(set(matching))  # one row per attempt and host
    if not matching:
        return 0
    now = now_sql(connection)
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    for i in range(0, len(matching), BATCH):
        values = [
            {
                "run_id": run_id,
                "level_hash": h,
                "heuristic": heuristic,
                "host": host,
                "reason": reason,
                "authentic": authentic,
                "count": 1,
                "first_at": now,
                "last_at": now,
            }
            for h, heuristic in matching[i : i + BATCH]
        ]
        statement = dialect.insert(REFUSALS).values(values)
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["run_id", "level_hash", "heuristic", "host"],
                set_={
                    "reason": statement.excluded.reason,
                    "authentic": statement.excluded.authentic,
                    "count": REFUSALS.c.count + 1,
                    "last_at": statement.excluded.last_at,
                },
            )
        )
    return len(matching)


# A refusal row's attempt.
_OF_ATTEMPT = and_(
    Attempt.run_id == REFUSALS.c.run_id,
    Attempt.level_hash == REFUSALS.c.level_hash,
    Attempt.heuristic == REFUSALS.c.heuristic,
)


def refused_lately(since: datetime) -> Any:
    """Return a condition on Attempt: some worker refused its task at or after since."""
    return exists().where(
        REFUSALS.c.run_id == Attempt.run_id,
        REFUSALS.c.level_hash == Attempt.level_hash,
        REFUSALS.c.heuristic == Attempt.heuristic,
        REFUSALS.c.last_at >= since,
    )


@dataclass(frozen=True)
class Waiting:
    """Queued attempts of a run whose tasks workers refused lately for one reason: how many, and by whom."""

    reason: str
    levels: int  # attempts: a level per heuristic it is tried with (one, but in a matrix run)
    hosts: tuple[str, ...]


def waiting_refused(session: Session, run_id: int, now: datetime) -> list[Waiting]:
    """Return the run's queued attempts refused lately, by the last reason given; most levels first."""
    rows = session.execute(
        select(REFUSALS.c.level_hash, REFUSALS.c.heuristic, REFUSALS.c.host, REFUSALS.c.reason)
        .join(Attempt, _OF_ATTEMPT)
        .where(REFUSALS.c.run_id == run_id, Attempt.status == Status.QUEUED.value)
        .where(REFUSALS.c.last_at >= now - FRESH)
        .order_by(REFUSALS.c.last_at)
    )
    last: dict[tuple[str, str], str] = {}
    hosts: dict[str, set[str]] = {}
    for h, heuristic, host, reason in rows:
        last[h, heuristic] = reason  # ordered by time: the latest reason wins
        hosts.setdefault(reason, set()).add(host)
    counts: dict[str, int] = {}
    for reason in last.values():
        counts[reason] = counts.get(reason, 0) + 1
    waiting = [Waiting(r, n, tuple(sorted(hosts[r]))) for r, n in counts.items()]
    return sorted(waiting, key=lambda w: (-w.levels, w.reason))


def give_up(session: Session, now: datetime, live_hosts: set[str]) -> int:
    """Mark `error` the queued attempts every live worker host refused, authentically, GIVE_UP_AFTER
    times in all; return how many. Nothing is given up while no worker is live."""
    if not live_hosts:
        return 0
    rows = session.execute(
        select(
            REFUSALS.c.run_id,
            REFUSALS.c.level_hash,
            REFUSALS.c.heuristic,
            REFUSALS.c.host,
            REFUSALS.c.reason,
            REFUSALS.c.count,
        )
        .join(Attempt, _OF_ATTEMPT)
        .where(Attempt.status == Status.QUEUED.value, REFUSALS.c.authentic.is_(True))
        .where(REFUSALS.c.last_at >= now - FRESH)
    )
    seen: dict[tuple[int, str, str], tuple[set[str], int, str]] = {}
    for run_id, h, heuristic, host, reason, count in rows:
        hosts, total, _ = seen.get((run_id, h, heuristic), (set(), 0, reason))
        seen[run_id, h, heuristic] = (hosts | {host}, total + count, reason)
    given_up = 0
    finished_runs: set[int] = set()
    stamp = now_sql(session)
    for (run_id, h, heuristic), (hosts, total, reason) in sorted(seen.items()):
        if total < GIVE_UP_AFTER or not live_hosts <= hosts:
            continue
        who = ", ".join(sorted(hosts))
        message = f"given up: refused by every live worker ({who}), {total} times: {reason}"
        res = session.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.level_hash == h, Attempt.heuristic == heuristic)
            .where(Attempt.status == Status.QUEUED.value)
            .values(status=Status.ERROR.value, message=message, finished_at=stamp, holder=None, deadline=None)
        )
        if rowcount(res):
            given_up += 1
            finished_runs.add(run_id)
    for run_id in sorted(finished_runs):
        finish_run_if_done(session, run_id)
    return given_up
