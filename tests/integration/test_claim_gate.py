"""A worker's lone tiny attempt starts solving at once and is claimed while it runs, through its
ClaimGate (queue.consumer.DatabaseClaim): asked exactly once, a granted claim runs the attempt once
and records it, a refused one kills the solver child at once and stores nothing.

Each test runs a real WorkerProcess here, in the test process, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from packsolve.db.attempts import ClaimBy
from packsolve.db.models import Attempt
from packsolve.db.runs import PlannedAttempt, RunOptions, create_run
from packsolve.db.session import session_scope
from packsolve.execution import AttemptSpec, Limits, processes
from packsolve.levels import make_level
from packsolve.queue import consumer
from packsolve.queue.consumer import TINY_S, WorkerProcess
from packsolve.queue.protocol import PendingAttempt, decode, encode
from packsolve.settings import resolve
from tests.support.fencing import claim_levels, lease

pytestmark = pytest.mark.usefixtures("chaos_env")

HEURISTIC = "mark"  # the chaos kind's sleep, after noting in CHAOS_STARTED that it started
LIMITS = Limits(10)


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file each solver start of a level is noted in (its id, one line per start).

    The kept solver child of an earlier test was forked without it in its environment: it goes.
    """
    path = tmp_path / "started"
    path.touch()
    monkeypatch.setenv("CHAOS_STARTED", str(path))
    kept, processes._kept = processes._kept, None
    if kept is not None:
        kept.discard()
    return path


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Each time a DatabaseClaim is asked: the pids of this process's children then (the solver child)."""
    calls: list[list[int]] = []
    claim = consumer.DatabaseClaim.claim

    def spy(gate: consumer.DatabaseClaim) -> bool:
        calls.append([p.pid for p in psutil.Process().children(recursive=True)])
        return claim(gate)

    monkeypatch.setattr(consumer.DatabaseClaim, "claim", spy)
    return calls


@pytest.fixture
def worker(either_engine):
    """A WorkerProcess on the test's database that has timed the chaos kind's `mark` as tiny."""
    url = either_engine.url.render_as_string(hide_password=False)
    process = WorkerProcess(resolve({"database_url": url}), "here@test")
    process.pace[("chaos", HEURISTIC)] = TINY_S / 10
    yield process
    process.stop()


def lone_task(engine, ms: int) -> tuple[int, PendingAttempt]:
    """Create a distributed run of one chaos level that works ms; return its id and its one attempt."""
    level = make_level("l0", {"kind": "chaos", "id": 7, "ms": ms})
    with session_scope(engine) as s:
        run_id = create_run(
            s,
            [PlannedAttempt(level, HEURISTIC, 0)],
            RunOptions(mode="distributed", time_limit=LIMITS.time_limit),
        )
    return run_id, PendingAttempt(level.hash, AttemptSpec("chaos", HEURISTIC, level.data, LIMITS))


def row(engine, run_id: int, level_hash: str) -> Attempt:
    with session_scope(engine) as s:
        return s.query(Attempt).filter_by(run_id=run_id, level_hash=level_hash).one()


def starts(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_a_refused_claim_kills_its_solver_child_at_once_and_stores_nothing(
    either_engine, worker, started, asked
):
    run_id, item = lone_task(either_engine, ms=5000)
    # Another live worker holds the attempt (a duplicate delivery): this worker's claim is refused.
    lease(either_engine, "other@host/1", 60)
    with either_engine.begin() as c:
        assert claim_levels(
            c, run_id, [item.level_hash], ClaimBy("other@host", 3, None, "other@host/1")
        ).verdicts == {item.level_hash: "run"}
    before = row(either_engine, run_id, item.level_hash)
    # This process adopts orphans of earlier tests (a solver's parent is a subreaper): not ours to watch.
    others = {p.pid for p in psutil.Process().children(recursive=True)}
    began = time.monotonic()
    worker.run_task(decode(encode(run_id, [item], 3)))
    took = time.monotonic() - began
    assert len(asked) == 1  # asked once, while the attempt was in its solver child
    solver = [pid for pid in asked[0] if pid not in others]
    assert solver, "no solver child was running when the claim was made"
    assert [pid for pid in solver if psutil.pid_exists(pid)] == []  # killed and reaped
    assert took < 3.0  # not left to solve its 5 s
    worker.stop()  # whatever the process buffered is written now
    after = row(either_engine, run_id, item.level_hash)
    assert (after.status, after.worker, after.tries, after.finished_at, after.solution) == (
        "running",
        "other@host",
        before.tries,
        None,
        None,
    )


def test_a_granted_claim_runs_the_attempt_once_and_records_it_under_that_claim(
    either_engine, worker, started, asked
):
    run_id, item = lone_task(either_engine, ms=400)
    worker.run_task(decode(encode(run_id, [item], 3)))
    assert len(asked) == 1  # once, while it ran (it outlasts TINY_S)
    worker.stop()
    got = row(either_engine, run_id, item.level_hash)
    assert (got.status, got.worker, got.tries, got.deadline is not None) == ("solved", "here@test", 1, True)
    assert starts(started) == 1


def test_a_redelivered_lone_attempt_asks_its_gate_at_once_and_only_once(
    either_engine, worker, started, asked
):
    run_id, item = lone_task(either_engine, ms=1)
    worker.run_task(decode(encode(run_id, [item], 3)), redelivered=True)
    assert len(asked) == 1  # claim_after 0: asked even though the attempt ends within TINY_S
    worker.stop()
    got = row(either_engine, run_id, item.level_hash)
    assert (got.status, got.tries) == ("solved", 1)
    assert starts(started) == 1


def test_a_tiny_attempt_that_ends_before_its_claim_is_due_never_asks_the_gate(
    either_engine, worker, started, asked, monkeypatch
):
    # Its claim is due TINY_S after the task began. Under a CPU hog, forking the solver child and
    # running 1 ms can take longer than the 50 ms a quiet machine needs well under: the claim is due
    # later here, so that the attempt surely ends before it (what happens then is the subject).
    monkeypatch.setattr(consumer, "TINY_S", 5.0)
    run_id, item = lone_task(either_engine, ms=1)
    worker.run_task(decode(encode(run_id, [item], 3)))
    assert asked == []
    worker.stop()
    got = row(either_engine, run_id, item.level_hash)
    assert (got.status, got.tries, got.worker) == (
        "solved",
        1,
        "here@test",
    )  # its result's write counted the try
    assert starts(started) == 1
