"""Time a worker process spent frozen is not the solver's time.

The lease thread records each stretch the process was stopped; an attempt that
ran over one has it taken out of its wall time, and a timeout it overlapped is
run again (the solver never had its time).
"""

from __future__ import annotations

import pytest

from packsolve.execution import AttemptSpec, Limits
from packsolve.execution.output import DEFAULT_OUTPUT_KEEP as KEEP
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.queue.consumer import _without_freezes
from packsolve.queue.lease import Lease

pytestmark = pytest.mark.usefixtures("chaos_env")


def lease_frozen(*stretches: tuple[float, float]) -> Lease:
    """A lease that saw these frozen stretches (no database: only its bookkeeping is used)."""
    lease = Lease(connection=None, host="w@test", ttl_s=30)
    lease.frozen.extend(stretches)
    return lease


def test_frozen_during_counts_only_the_overlap():
    lease = lease_frozen((10.0, 15.0), (30.0, 31.0))
    assert lease.frozen_during(12.0, 20.0) == pytest.approx(3.0)
    assert lease.frozen_during(0.0, 100.0) == pytest.approx(6.0)
    assert lease.frozen_during(16.0, 29.0) == 0.0


def test_a_solved_attempt_loses_the_frozen_stretch_from_its_wall_time():
    spec = AttemptSpec("chaos", "default", {"kind": "chaos", "id": 1, "ms": 5}, Limits(5.0))
    solved = Outcome(Status.SOLVED, [5], SearchStats(1, 45.2, 0.1, 10.0))
    out = _without_freezes(lease_frozen((100.0, 145.0)), spec, solved, (99.0, 146.0), KEEP)
    assert out.status is Status.SOLVED and out.stats.wall_s == pytest.approx(0.2)
    assert _without_freezes(lease_frozen(), spec, solved, (99.0, 146.0), KEEP) is solved


def test_a_timeout_that_a_freeze_overlapped_is_run_again_and_solved():
    """A 45 s freeze under a 20 s limit used to record a level solvable in milliseconds as a timeout."""
    spec = AttemptSpec("chaos", "default", {"kind": "chaos", "id": 1, "ms": 5}, Limits(20.0))
    timed_out = Outcome(Status.TIMEOUT, None, SearchStats(0, 45.1, 0.1, 10.0), "time limit 20 s reached")
    out = _without_freezes(lease_frozen((100.0, 145.0)), spec, timed_out, (99.0, 146.0), KEEP)
    assert out.status is Status.SOLVED and out.stats.wall_s < 5
