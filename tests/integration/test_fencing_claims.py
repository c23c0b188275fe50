"""Claims whose answer was lost, leases that say what their process runs, cancelled runs, and tries
counted only for attempts that started.

The database-level tests drive db.attempts and queue.lease directly (two "workers" are two holder
names), on SQLite and PostgreSQL; test_fencing_workers.py does the same with real workers on both brokers.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from packsolve.attempt import ClaimVerdict, Result
from packsolve.db.attempts import ClaimBy, record, start
from packsolve.db.models import Attempt, Run, utcnow
from packsolve.db.reconcile import stale_attempts, take_stale
from packsolve.db.runs import cancel_pending
from packsolve.db.session import session_scope
from packsolve.levels import make_level
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.runstate import RunState
from tests.support.fencing import claim_levels, hold_levels, lease, level_keys, sent_run_of

LEVELS = [make_level(f"l{i}", {"kind": "coins", "notes": [1, 5, 10], "target": 7 + i}) for i in range(4)]
SOLVED = Outcome(Status.SOLVED, [5, 1, 1], SearchStats(3, 0.01, 0.01, 1.0))


@pytest.fixture
def engine(either_engine):
    """Each test here on SQLite, then on PostgreSQL (tests.support.fencing.either_engine)."""
    return either_engine


def sent_run(engine, max_tries: int = 3) -> tuple[int, list[str]]:
    """Create a distributed run of LEVELS, sent in full; return its id and level hashes."""
    return sent_run_of(engine, LEVELS, max_tries)


def reconcile_db(engine, max_tries: int = 3) -> list:
    with session_scope(engine) as s:
        now = utcnow()
        return take_stale(s, stale_attempts(s, now, now - timedelta(seconds=60)), max_tries)


def rows(engine, run_id: int) -> dict[str, Attempt]:
    with session_scope(engine) as s:
        return {a.level_hash: a for a in s.scalars(select(Attempt).where(Attempt.run_id == run_id))}


def test_a_retried_claim_whose_answer_was_lost_reads_back_what_it_holds_and_runs_it(engine):
    """Item 9: the claim committed, its answer never came; the retry gets the claim, not a skip."""
    run_id, (h, *_) = sent_run(engine)
    lease(engine, "a@host/1", 30)
    with engine.begin() as c:
        first = claim_levels(c, run_id, [h], ClaimBy("a@host", 3, None, "a@host/1"))
    assert first.verdicts == {h: ClaimVerdict.RUN}
    with engine.begin() as c:  # the same claim again, as db.retry.in_transaction sends it after a lost answer
        retried = claim_levels(c, run_id, [h], ClaimBy("a@host", 3, None, "a@host/1"))
    assert retried == first  # the same claim: its token, not a new try
    assert rows(engine, run_id)[h].tries == 1
    with engine.begin() as c:  # another live worker still cannot take it
        assert claim_levels(c, run_id, [h], ClaimBy("b@host", 3, None, "b@host/2")).verdicts == {
            h: ClaimVerdict.SKIP
        }
    with engine.begin() as c:
        assert record(c, [Result(run_id, h, SOLVED, 3, "a@host", token=retried.tokens[h])]) == 1
    assert rows(engine, run_id)[h].status == "solved"


def test_a_lease_renewal_gives_back_at_once_the_claims_its_process_does_not_run(engine):
    """Items 9 and 10: what the database holds for a live process that does not run it goes back."""
    from packsolve.queue.claiming import ClaimConnection
    from packsolve.queue.lease import Lease

    run_id, (h1, h2, h3, h4) = sent_run(engine)
    mine = Lease(ClaimConnection(engine), "a@host", ttl_s=30)
    mine.start()
    try:
        with engine.connect() as c:
            mine.own(run_id, level_keys(c, run_id, [h1]))  # what the process works on now
        with engine.begin() as c:
            claim_levels(c, run_id, [h1], ClaimBy("a@host", 3, None, mine.name))
            claim_levels(c, run_id, [h2], ClaimBy("a@host", 3, None, mine.name))  # a task that failed midway
            hold_levels(c, run_id, [h3], mine.name)  # the rest of that task's chunk
        assert reconcile_db(engine) == []  # the lease is alive: nothing taken yet
        mine.renew()
        taken = {t.level_hash: t.lost for t in reconcile_db(engine)}
        assert taken == {h2: False, h3: False}
        after = rows(engine, run_id)
        assert [after[h].status for h in (h1, h2, h3, h4)] == ["running", "queued", "queued", "queued"]
        assert after[h1].holder == mine.name
    finally:
        mine.retire()


def test_a_claim_of_an_attempt_of_a_cancelled_run_fails_and_the_attempt_becomes_cancelled(engine):
    """Item 11: a pool process killed after `cancel`: its redelivered task must not solve the attempt."""
    run_id, (h1, h2, *_) = sent_run(engine)
    lease(engine, "a@host/1", 30)
    with engine.begin() as c:
        claim_levels(c, run_id, [h1], ClaimBy("a@host", 3, None, "a@host/1"))
    with session_scope(engine) as s:
        cancel_pending(s, run_id, "cancelled by the user before it ran")
    lease(engine, "a@host/1", -1)  # the pool process is killed; its task comes back at once
    lease(engine, "a@host/2", 30)
    with engine.begin() as c:
        assert claim_levels(c, run_id, [h1, h2], ClaimBy("a@host", 3, None, "a@host/2")).verdicts == {
            h1: ClaimVerdict.CANCELLED,
            h2: ClaimVerdict.SKIP,
        }
    after = rows(engine, run_id)
    assert after[h1].status == "cancelled" and after[h1].tries == 1
    with session_scope(engine) as s:
        run = s.get(Run, run_id)
        assert run.state == RunState.CANCELLED and run.finished_at is not None


def test_only_an_attempt_that_started_counts_a_try_when_its_worker_dies_holding_a_group(engine):
    """Item 12: a group claimed together runs one after the other; those that never started are
    not charged, so with --max-tries 1 they come back instead of being lost."""
    run_id, (h1, h2, h3, h4) = sent_run(engine, max_tries=1)
    lease(engine, "a@host/1", 30)
    with engine.begin() as c:
        claimed = claim_levels(c, run_id, [h1, h2, h3, h4], ClaimBy("a@host", 1, 10, "a@host/1"))
    assert set(claimed.verdicts.values()) == {ClaimVerdict.RUN}
    tokens = claimed.tokens
    # h1 ran; when it ended h2 started (its start is written); then the worker dies in h2.
    with engine.begin() as c:
        start(c, [(run_id, *level_keys(c, run_id, [h2]), tokens[h2])])
        assert record(c, [Result(run_id, h1, SOLVED, 3, "a@host", token=tokens[h1])]) == 1
    assert [rows(engine, run_id)[h].tries for h in (h1, h2, h3, h4)] == [1, 1, 0, 0]
    lease(engine, "a@host/1", -1)
    taken = {t.level_hash: t.lost for t in reconcile_db(engine, max_tries=1)}
    assert taken == {h2: True, h3: False, h4: False}
    after = rows(engine, run_id)
    assert "started 1 times" in after[h2].message
    assert [(after[h].status, after[h].tries) for h in (h3, h4)] == [("queued", 0), ("queued", 0)]
    # A stale claim's result stays refused though its attempt's try count did not move.
    lease(engine, "b@host/2", 30)
    with engine.begin() as c:
        again = claim_levels(c, run_id, [h3], ClaimBy("b@host", 1, 10, "b@host/2"))
        assert again.verdicts == {h3: ClaimVerdict.RUN}
        assert record(c, [Result(run_id, h3, SOLVED, 3, "a@host", token=tokens[h3])]) == 0
        assert record(c, [Result(run_id, h3, SOLVED, 3, "b@host", token=again.tokens[h3])]) == 1
    assert (rows(engine, run_id)[h3].status, rows(engine, run_id)[h3].tries) == ("solved", 1)


def test_the_claim_path_answers_each_verdict_run_skip_lost_and_cancelled(engine):
    """Every ClaimVerdict is an answer claim_many gives: to run, to skip (final), lost, cancelled."""
    run_id, (h_run, h_skip, h_lost, _) = sent_run(engine, max_tries=1)
    lease(engine, "a@host/1", 30)
    with engine.begin() as c:
        first = claim_levels(c, run_id, [h_skip], ClaimBy("a@host", 1, None, "a@host/1"))
        assert record(c, [Result(run_id, h_skip, SOLVED, 3, "a@host", token=first.tokens[h_skip])]) == 1
        claim_levels(c, run_id, [h_lost], ClaimBy("a@host", 1, None, "a@host/1"))
    lease(engine, "a@host/1", -1)  # its process died running h_lost, whose one try is spent
    lease(engine, "b@host/2", 30)
    by_b = ClaimBy("b@host", 1, None, "b@host/2")
    with engine.begin() as c:
        answer = claim_levels(c, run_id, [h_run, h_skip, h_lost], by_b)
    assert answer.verdicts == {h_run: ClaimVerdict.RUN, h_skip: ClaimVerdict.SKIP, h_lost: ClaimVerdict.LOST}
    assert answer.runs(h_run) and not answer.runs(h_skip) and set(answer.tokens) == {h_run}
    assert rows(engine, run_id)[h_lost].status == Status.LOST
    cancelled_id, (h, *_) = sent_run(engine)
    lease(engine, "a@host/3", 30)
    with engine.begin() as c:  # running when its run is cancelled: left to its worker, which dies
        claim_levels(c, cancelled_id, [h], ClaimBy("a@host", 3, None, "a@host/3"))
    with session_scope(engine) as s:
        cancel_pending(s, cancelled_id, "cancelled by the user before it ran")
    lease(engine, "a@host/3", -1)
    with engine.begin() as c:
        late = claim_levels(c, cancelled_id, [h], by_b)
    assert late.verdicts == {h: ClaimVerdict.CANCELLED} and not late.runs(h)
    seen = {*answer.verdicts.values(), *late.verdicts.values()}
    assert seen == set(ClaimVerdict)
