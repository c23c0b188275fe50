"""A level's past across runs: its size and expected time, the times and limits of its attempts with one
heuristic (relative limits), and recent wall times of a kind and heuristic."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import String, any_, bindparam, case, func, literal_column, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.db.tables import BATCH, FINAL_VALUES
from packsolve.outcome import Status


def level_facts(
    session: Session, hashes: Sequence[str], exclude_run: int | None = None
) -> dict[str, tuple[int, float | None]]:
    """Return {hash: (size, expected seconds or None)} from the levels' history in other runs.

    Expected seconds: the fastest solved/no_solution attempt; failing that the
    longest timeout/memout (it took at least that); None for a level never run.
    A hash with no level row gets size 0.
    """
    success = tuple(s.value for s in (Status.SOLVED, Status.NO_SOLUTION))
    spent = (Status.TIMEOUT.value, Status.MEMOUT.value)
    sizes: dict[str, int] = {}
    times: dict[str, float | None] = {}
    for is_one in _one_of(session, list(dict.fromkeys(hashes))):
        sizes.update(session.execute(select(LevelRow.hash, LevelRow.size).where(is_one(LevelRow.hash))).all())
        query = (
            select(
                Attempt.level_hash,
                func.min(case((Attempt.status.in_(success), Attempt.wall_s))),
                func.max(case((Attempt.status.in_(spent), Attempt.wall_s))),
            )
            .where(is_one(Attempt.level_hash))
            .group_by(Attempt.level_hash)
        )
        if exclude_run is not None:
            query = query.where(Attempt.run_id != exclude_run)
        times.update((h, best if best is not None else worst) for h, best, worst in session.execute(query))
    return {h: (sizes.get(h) or 0, times.get(h)) for h in hashes}


def past_times(session: Session, run_id: int) -> dict[str, float]:
    """Return {hash: expected seconds} for the levels of run_id's attempts that ran in other runs.

    Expected seconds as level_facts has them; levels never run elsewhere are left out.
    The run's levels are found in the database, not sent to it: a million-level
    submit would otherwise send a million hashes.
    """
    success = tuple(s.value for s in (Status.SOLVED, Status.NO_SOLUTION))
    spent = (Status.TIMEOUT.value, Status.MEMOUT.value)
    mine = select(Attempt.level_hash).where(Attempt.run_id == run_id)
    query = (
        select(
            Attempt.level_hash,
            func.min(case((Attempt.status.in_(success), Attempt.wall_s))),
            func.max(case((Attempt.status.in_(spent), Attempt.wall_s))),
        )
        .where(Attempt.level_hash.in_(mine), Attempt.run_id != run_id)
        .group_by(Attempt.level_hash)
    )
    out = {}
    for h, best, worst in session.execute(query):
        expected = best if best is not None else worst
        if expected is not None:
            out[h] = expected
    return out


@dataclass
class PastTimes:
    """A level's earlier attempts with one kind and heuristic: the wall and CPU seconds of those decided
    (solved, no_solution), and the wall and CPU limits of those that timed out (their own, else their
    run's; the time measured where that limit was none)."""

    decided_wall: list[float] = field(default_factory=list)
    decided_cpu: list[float] = field(default_factory=list)
    timed_out_wall: list[float] = field(default_factory=list)
    timed_out_cpu: list[float] = field(default_factory=list)


def past_attempts(session: Session, keys: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str], PastTimes]:
    """Return {(level hash, heuristic): PastTimes} of the (level hash, kind, heuristic) keys, from every run.

    What a relative limit (--time-limit 3x) reads; a level asked with several heuristics (a matrix)
    has each heuristic's past on its own. Keys with no decided or timed-out attempt of their kind
    and heuristic are left out. level_facts is for ordering and mixes heuristics, takes
    the fastest time and never a limit, so it cannot serve here.
    """
    wanted = set(keys)
    decided = (Status.SOLVED.value, Status.NO_SOLUTION.value)
    out: dict[tuple[str, str], PastTimes] = {}
    for is_one in _one_of(session, list(dict.fromkeys(h for h, _, _ in keys))):
        query = (
            select(
                Attempt.level_hash,
                Attempt.kind,
                Attempt.heuristic,
                Attempt.status,
                Attempt.wall_s,
                Attempt.cpu_s,
                func.coalesce(Attempt.time_limit, Run.time_limit, Attempt.wall_s),
                func.coalesce(Attempt.cpu_limit, Run.cpu_limit, Attempt.cpu_s),
            )
            .join(Run, Run.id == Attempt.run_id)
            .where(is_one(Attempt.level_hash), Attempt.status.in_((*decided, Status.TIMEOUT.value)))
        )
        for h, kind, heuristic, status, wall, cpu, wall_at, cpu_at in session.execute(query):
            if (h, kind, heuristic) not in wanted:
                continue
            past = out.setdefault((h, heuristic), PastTimes())
            if status in decided:
                _append(past.decided_wall, wall)
                _append(past.decided_cpu, cpu)
            else:
                _append(past.timed_out_wall, wall_at)
                _append(past.timed_out_cpu, cpu_at)
    return out


def _append(values: list[float], value: float | None) -> None:
    if value is not None:
        values.append(float(value))


def _one_of(session: Session, values: list[str]) -> Iterator[Callable[[Any], Any]]:
    """Yield conditions "column is one of values" that together cover values.

    One per statement: on PostgreSQL all values go as one array parameter, on
    SQLite as one JSON array read by json_each; elsewhere in lists of BATCH. A
    statement per 500 values cost a compile and a plan each, and on a table not
    yet analyzed (a submit's own fresh rows) a sequential scan each: 3 s for a
    50,000-level submit on PostgreSQL.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        array = bindparam("one_of", values, type_=postgresql.ARRAY(String))

        def in_array(column: Any) -> Any:
            return column == any_(array)

        yield in_array
    elif dialect == "sqlite":
        listed: Any = select(literal_column("value")).select_from(
            func.json_each(bindparam("one_of", json.dumps(values)))
        )

        def in_json(column: Any) -> Any:
            return column.in_(listed)

        yield in_json
    else:
        for i in range(0, len(values), BATCH):

            def in_list(column: Any, chunk: list[str] = values[i : i + BATCH]) -> Any:
                return column.in_(chunk)

            yield in_list


def recent_wall_times(session: Session, kind: str, heuristic: str, limit: int) -> list[float]:
    """Return the wall seconds of the last `limit` final attempts of kind with heuristic (any run).

    Empty if there are none.
    """
    rows = session.scalars(
        select(Attempt.wall_s)
        .where(Attempt.kind == kind, Attempt.heuristic == heuristic)
        .where(Attempt.status.in_(FINAL_VALUES), Attempt.wall_s.is_not(None))
        .order_by(Attempt.id.desc())
        .limit(limit)
    )
    return [float(t) for t in rows if t is not None]


def settled_before(session: Session, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Return {(hash, heuristic): run id} for the (hash, heuristic) pairs already decided in some run.

    Decided: solved, or proved to have no solution, with that very heuristic
    (the latest such run is named). Pairs never decided are left out; a level may be
    asked with several heuristics (a matrix), each answered on its own.
    """
    wanted = set(pairs)
    success = (Status.SOLVED.value, Status.NO_SOLUTION.value)
    found: dict[tuple[str, str], int] = {}
    for is_one in _one_of(session, list(dict.fromkeys(h for h, _ in pairs))):
        query = select(Attempt.level_hash, Attempt.heuristic, func.max(Attempt.run_id)).where(
            is_one(Attempt.level_hash), Attempt.status.in_(success)
        )
        for h, heuristic, run_id in session.execute(query.group_by(Attempt.level_hash, Attempt.heuristic)):
            if (h, heuristic) in wanted:
                found[h, heuristic] = run_id
    return found
