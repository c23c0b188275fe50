"""Hardest first from the database on SQLite and PostgreSQL: the history of other runs orders a submit."""

from __future__ import annotations

from sqlalchemy import update

from packsolve.db.models import Attempt
from packsolve.db.runs import RunOptions, create_run
from packsolve.db.session import get_engine, session_scope
from packsolve.execution import Limits
from packsolve.levels import make_level
from packsolve.planning import hardest_first, plan_levels

# Coins levels of 2 to 7 notes (size = notes): distinct, small, sizes known.
LEVELS = [
    make_level(f"c{n}", {"kind": "coins", "notes": [*range(1, n + 1)], "target": n}) for n in range(2, 8)
]


def test_a_submit_is_ordered_by_other_runs_times_with_sizes_given_or_read(db_url):
    engine = get_engine(db_url)
    with session_scope(engine) as s:
        before = create_run(s, plan_levels(LEVELS[:3], None).attempts, RunOptions(mode="distributed"))
        # The 3-note level took longest before, the 2-note one least; 4 notes only timed out.
        for level, status, wall in (
            (LEVELS[0], "solved", 0.5),
            (LEVELS[1], "solved", 3.0),
            (LEVELS[2], "timeout", 1.0),
        ):
            s.execute(
                update(Attempt)
                .where(Attempt.run_id == before, Attempt.level_hash == level.hash)
                .values(status=status, wall_s=wall)
            )
    plan = plan_levels(LEVELS, None)
    with session_scope(engine) as s:
        run_id = create_run(s, plan.attempts, RunOptions(mode="distributed"))
    specs = plan.pending(Limits(10))
    sizes = {p.level.hash: p.level.size for p in plan.attempts}
    with session_scope(engine) as s:
        read = hardest_first(s, run_id, specs)
        given = hardest_first(s, run_id, specs, sizes)
    assert read == given
    # 3 notes (3 s); 5 to 7 notes, never run, nearest to 4 notes (1 s): biggest first, then 4 notes;
    # 2 notes (0.5 s) last. This run's own attempts (queued, no time) count for nothing.
    assert [p.name for p in given.attempts] == ["c3", "c7", "c6", "c5", "c4", "c2"]
