"""Exactly one final result per level, whatever breaks: fencing tokens, leases, try counts, cancel.

These drive the database layer directly (two "workers" are two holder names),
on SQLite and PostgreSQL; the network scenarios (test_cluster_scenarios.py)
do the same with real workers frozen, partitioned and killed.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from packsolve.attempt import ClaimVerdict, Result
from packsolve.db.attempts import ClaimBy, record, stale_of
from packsolve.db.models import Attempt, Run, utcnow
from packsolve.db.reconcile import stale_attempts, take_stale
from packsolve.db.runs import RunOptions, cancel_pending, create_run, mark_sent
from packsolve.db.session import session_scope
from packsolve.levels import make_level
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.planning import plan_levels
from packsolve.runstate import RunState
from tests.support.fencing import claim_levels, hold_levels, lease, sent_run_of

LEVELS = [make_level(f"l{i}", {"kind": "coins", "notes": [1, 5, 10], "target": 7 + i}) for i in range(3)]
SOLVED = Outcome(Status.SOLVED, [5, 1, 1], SearchStats(3, 0.01, 0.01, 1.0))
LATE = Outcome(Status.TIMEOUT, None, SearchStats(10**6, 45.1, 2.0, 1.0), "time limit 20 s reached")


@pytest.fixture
def engine(either_engine):
    """Each test here on SQLite, then on PostgreSQL (tests.support.fencing.either_engine)."""
    return either_engine


def sent_run(engine, max_tries: int = 3) -> tuple[int, list[str]]:
    """Create a distributed run of LEVELS, sent in full; return its id and level hashes."""
    return sent_run_of(engine, LEVELS, max_tries)


def reconcile_db(engine) -> list:
    """One database-side reconcile pass (no broker): take back what lapsed holders held."""
    with session_scope(engine) as s:
        now = utcnow()
        return take_stale(s, stale_attempts(s, now, now - timedelta(seconds=60)), 3)


def row(engine, run_id: int, level_hash: str) -> Attempt:
    with session_scope(engine) as s:
        return s.scalars(
            select(Attempt).where(Attempt.run_id == run_id, Attempt.level_hash == level_hash)
        ).one()


def test_a_stale_claims_result_is_refused_and_the_current_claims_result_lands(engine):
    """Defect 1: a frozen worker thawed after its claim was taken back writes nothing over the new claim."""
    run_id, (h, *_) = sent_run(engine)
    lease(engine, "a@host/1", 30)
    lease(engine, "b@host/2", 30)
    with engine.begin() as c:
        claimed_a = claim_levels(c, run_id, [h], ClaimBy("a@host", 3, 20, "a@host/1"))
    assert claimed_a.verdicts == {h: ClaimVerdict.RUN}
    tokens_a = claimed_a.tokens
    with engine.begin() as c:  # a live holder's claim is its own: nobody takes it over
        assert claim_levels(c, run_id, [h], ClaimBy("b@host", 3, 20, "b@host/2")).verdicts == {
            h: ClaimVerdict.SKIP
        }
    lease(engine, "a@host/1", -1)  # a is frozen past its lease
    assert [t.level_hash for t in reconcile_db(engine)] == [h]
    with engine.begin() as c:
        claimed_b = claim_levels(c, run_id, [h], ClaimBy("b@host", 3, 20, "b@host/2"))
    assert claimed_b.verdicts == {h: ClaimVerdict.RUN}
    tokens_b = claimed_b.tokens
    assert tokens_b[h] == tokens_a[h] + 1
    stale = Result(run_id, h, LATE, None, "a@host", token=tokens_a[h])  # a thaws and reports
    with engine.begin() as c:
        assert record(c, [stale]) == 0
        assert [why for _, why in stale_of(c, [stale])] == [
            f"its claim (token {tokens_a[h]}) is stale: now running, claim {tokens_b[h]} (b@host/2)"
        ]
    assert row(engine, run_id, h).status == "running"
    with engine.begin() as c:
        assert record(c, [Result(run_id, h, SOLVED, 3, "b@host", token=tokens_b[h])]) == 1
    final = row(engine, run_id, h)
    assert (final.status, final.worker, final.tries) == ("solved", "b@host", 2)


def test_a_dead_holders_claim_without_a_time_limit_and_its_waiting_chunk_come_back(engine):
    """Defects 2 and 8: no deadline needed; the queued rest of its chunk is taken back too."""

    run_id, (h1, h2, h3) = sent_run(engine)
    lease(engine, "a@host/1", 30)
    with engine.begin() as c:
        assert claim_levels(c, run_id, [h1], ClaimBy("a@host", 3, None, "a@host/1")).verdicts == {
            h1: ClaimVerdict.RUN
        }
        hold_levels(c, run_id, [h2], "a@host/1")
    assert reconcile_db(engine) == []  # alive: nothing to take
    lease(engine, "a@host/1", -1)
    taken = reconcile_db(engine)
    assert sorted(t.level_hash for t in taken) == sorted([h1, h2]) and not any(t.lost for t in taken)
    assert [row(engine, run_id, h).status for h in (h1, h2, h3)] == ["queued"] * 3
    assert row(engine, run_id, h1).holder is None


def test_a_level_that_never_started_is_never_lost_for_the_brokers_sake(engine):
    """Defect 5: requeues after broker restarts do not count; starts do."""
    run_id, (h1, h2, _) = sent_run(engine, max_tries=3)
    lease(engine, "a@host/1", -1)
    with session_scope(engine) as s:
        s.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.level_hash == h1)
            .values(requeues=7, holder="a@host/1")  # sent again 7 times, never started
        )
        s.execute(
            update(Attempt)
            .where(Attempt.run_id == run_id, Attempt.level_hash == h2)
            .values(status="running", tries=3, holder="a@host/1")  # started 3 times: the cap
        )
    taken = {t.level_hash: t.lost for t in reconcile_db(engine)}
    assert taken == {h1: False, h2: True}
    assert row(engine, run_id, h1).status == "queued" and row(engine, run_id, h1).requeues == 8
    assert "started 3 times (cap 3)" in row(engine, run_id, h2).message


def test_cancel_holds_when_the_worker_of_a_running_attempt_dies(engine):
    """Defect 7: an attempt of a cancelled run whose worker died is cancelled, never run again."""
    run_id, (h1, *_) = sent_run(engine)
    lease(engine, "a@host/1", 30)
    with engine.begin() as c:
        claim_levels(c, run_id, [h1], ClaimBy("a@host", 3, 20, "a@host/1"))
    with session_scope(engine) as s:
        assert cancel_pending(s, run_id, "cancelled by the user before it ran") == 2
    lease(engine, "a@host/1", -1)  # killed right after the cancel
    taken = reconcile_db(engine)
    assert [(t.level_hash, t.cancelled) for t in taken] == [(h1, True)]
    assert row(engine, run_id, h1).status == "cancelled"
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        assert run.state == RunState.CANCELLED and run.finished_at is not None


def test_a_run_whose_submit_has_not_finished_sending_is_left_alone(engine):
    """Defect 3: however long the submit takes, the scheduler never sends its attempts a second time."""
    with session_scope(engine) as s:
        run_id = create_run(s, plan_levels(LEVELS, None).attempts, RunOptions("distributed"))
        s.execute(
            update(Attempt).where(Attempt.run_id == run_id).values(queued_at=utcnow() - timedelta(hours=1))
        )
    with session_scope(engine) as s:
        now = utcnow()
        assert stale_attempts(s, now, now, orphans_sent_before=now) == []
        mark_sent(s, run_id)
    with session_scope(engine) as s:
        later = utcnow() + timedelta(seconds=10)
        assert len(stale_attempts(s, later, later, orphans_sent_before=later)) == 3
