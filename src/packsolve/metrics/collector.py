"""What /metrics shows: a Prometheus collector reading the database and the broker on each scrape.

Nothing is kept between scrapes but the solve-time histograms of finished runs (a finished run's
attempts do not change while its finished_at stays; one resumed and finished again is read again):
a scrape reads the run_figures counts the triggers keep, the pending attempts of unfinished runs,
the workers' leases, the counters of events no row keeps (db.counters) and the broker's queue
depth, a few aggregate statements in all, so it stays cheap at a million attempts
(benchmarks/metrics_scrape.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import Engine, case, func, select
from sqlalchemy.orm import Session

from packsolve.db import counters
from packsolve.db.models import RUN_FIGURES, Attempt, Run
from packsolve.db.session import session_scope
from packsolve.db.tables import BATCH, PENDING_VALUES
from packsolve.db.workers import (
    WORKERS,
    BufferedKey,
    buffered_attempt,
    db_now,
    lost_rows,
    pending_of,
    published_buffered,
)
from packsolve.outcome import Status
from packsolve.queue.app import Cluster

# The upper bounds of the solve-time histograms' buckets, in seconds (+Inf is added).
SOLVE_BUCKETS = (0.001, 0.01, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


@dataclass
class _Histogram:
    """A kind's solve times: how many fell in each bucket (not cumulative), how many in all, their sum."""

    buckets: list[int]
    count: int = 0
    total: float = 0.0

    def add(self, other: _Histogram) -> None:
        self.buckets = [a + b for a, b in zip(self.buckets, other.buckets, strict=True)]
        self.count += other.count
        self.total += other.total


def _empty() -> _Histogram:
    return _Histogram([0] * len(SOLVE_BUCKETS))


class PacksolveCollector(Collector):
    """The deployment's metrics (see docs/operations.md#metrics), read on each collect().

    cluster: the broker whose queue depth is shown (None: none shown). A broker that cannot be
    asked is shown as packsolve_broker_up 0; a database that cannot be read raises (the scrape
    fails: Prometheus shows the target down).
    """

    def __init__(self, engine: Engine, cluster: Cluster | None = None) -> None:
        self.engine = engine
        self.cluster = cluster
        # Finished runs' solve-time histograms by run id: (its finished_at, {kind: histogram}).
        self._finished: dict[int, tuple[datetime, dict[str, _Histogram]]] = {}
        self._lock = threading.Lock()

    def describe(self) -> Iterable[Metric]:
        return ()  # read on scrape: nothing to describe before (the registry then does not collect)

    def collect(self) -> Iterator[Metric]:
        began = time.perf_counter()
        with self._lock, session_scope(self.engine) as session:
            metrics = [*self._database(session)]
        metrics += self._broker()
        scrape = GaugeMetricFamily(
            "packsolve_scrape_seconds", "Seconds this scrape took to read the database and the broker"
        )
        scrape.add_metric([], time.perf_counter() - began)
        yield from metrics
        yield scrape

    # --- the database -------------------------------------------------------------------------

    def _database(self, session: Session) -> Iterator[Metric]:
        now = db_now(session)
        runs = session.execute(select(Run.id, Run.state, Run.finished_at)).all()
        unfinished = [r for r, _, finished in runs if finished is None]
        yield from _runs(runs)
        yield _attempts(session)
        yield from _pending(session, unfinished, now)
        yield from _workers(session, now)
        yield from _counted(counters.read_all(session))
        yield self._solve_times(session, [(r, f) for r, _, f in runs])

    def _solve_times(self, session: Session, runs: Sequence[tuple[int, datetime | None]]) -> Metric:
        """Return the per-kind solve-time histograms: finished runs' from the cache, the others read."""
        kept = {r: f for r, f in runs}
        for run_id in [r for r in self._finished if r not in kept]:  # deleted since
            del self._finished[run_id]
        fresh: list[int] = []
        for run_id, finished in runs:
            held = self._finished.get(run_id)
            if finished is None or held is None or held[0] != finished:
                fresh.append(run_id)
        read = _read_solve_times(session, fresh)
        for run_id, finished in runs:
            if finished is not None and run_id in fresh:
                self._finished[run_id] = (finished, read.get(run_id, {}))
        by_kind: dict[str, _Histogram] = {}
        for run_id, _ in runs:
            per_kind = self._finished[run_id][1] if run_id in self._finished else read.get(run_id, {})
            for kind, hist in per_kind.items():
                by_kind.setdefault(kind, _empty()).add(hist)
        family = HistogramMetricFamily(
            "packsolve_solve_seconds",
            "Wall seconds of the attempts that ran a solver, by kind",
            labels=["kind"],
        )
        for kind, hist in sorted(by_kind.items()):
            cumulative, seen = [], 0
            for bound, n in zip(SOLVE_BUCKETS, hist.buckets, strict=True):
                seen += n
                cumulative.append((_bound(bound), seen))
            cumulative.append(("+Inf", hist.count))
            family.add_metric([kind], cumulative, hist.total)
        return family

    # --- the broker ---------------------------------------------------------------------------

    def _broker(self) -> list[Metric]:
        if self.cluster is None:
            return []
        up = GaugeMetricFamily("packsolve_broker_up", "1 if the broker answered this scrape, else 0")
        depth = GaugeMetricFamily(
            "packsolve_queue_depth", "Tasks waiting in the broker's queue", labels=["queue", "broker"]
        )
        scheme = str(self.cluster.settings.broker_url).split(":", 1)[0]
        try:
            waiting = self.cluster.depth()
        except Exception:  # BrokerUnreadable, BrokerError: the broker is down, the database's figures stand
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        depth.add_metric([self.cluster.queue, scheme], waiting)
        return [up, depth]


def _bound(x: float) -> str:
    """Return a bucket's upper bound as Prometheus writes it (1.0, 0.001)."""
    return repr(float(x))


def _runs(runs: Sequence[Any]) -> Iterator[Metric]:
    family = GaugeMetricFamily("packsolve_runs", "Runs in the database, by state", labels=["state"])
    by_state: dict[str, int] = {}
    for _, state, _ in runs:
        by_state[str(state)] = by_state.get(str(state), 0) + 1
    for state, n in sorted(by_state.items()):
        family.add_metric([state], n)
    yield family


def _attempts(session: Session) -> Metric:
    """Attempts by run, kind, heuristic and status: the counts run_figures keeps (one grouped read)."""
    f = RUN_FIGURES.c
    rows = session.execute(
        select(f.run_id, f.kind, f.heuristic, f.status, func.sum(f.attempts))
        .group_by(f.run_id, f.kind, f.heuristic, f.status)
        .having(func.sum(f.attempts) > 0)
        .order_by(f.run_id, f.kind, f.heuristic, f.status)
    )
    family = GaugeMetricFamily(
        "packsolve_attempts",
        "Attempts by run, kind, heuristic and status",
        labels=["run", "kind", "heuristic", "status"],
    )
    for run_id, kind, heuristic, status, n in rows:
        family.add_metric([str(run_id), kind, heuristic, status], int(n))
    return family


def _pending(session: Session, unfinished: list[int], now: datetime) -> Iterator[Metric]:
    """Pending attempts of unfinished runs by where they stand, and those in workers' write buffers.

    queued: waiting for a worker; held: queued in a chunk a worker process holds; claimed: running,
    its solver not started yet; running: started. buffered: computed by a live worker process and
    not written yet (db.workers.buffered_in; counted under the status the database still shows).
    """
    states = dict.fromkeys(("queued", "held", "claimed", "running"), 0)
    for i in range(0, len(unfinished), BATCH):
        rows = session.execute(
            select(
                Attempt.status,
                Attempt.holder.is_not(None),
                Attempt.started_at.is_not(None),
                func.count(),
            )
            .where(Attempt.run_id.in_(unfinished[i : i + BATCH]), Attempt.status.in_(PENDING_VALUES))
            .group_by(Attempt.status, Attempt.holder.is_not(None), Attempt.started_at.is_not(None))
        )
        for status, held, started, n in rows:
            if status == Status.QUEUED:
                states["held" if held else "queued"] += int(n)
            else:
                states["running" if started else "claimed"] += int(n)
    family = GaugeMetricFamily(
        "packsolve_attempts_pending",
        "Pending attempts of unfinished runs: queued, held (in a worker's chunk), claimed, running",
        labels=["state"],
    )
    for state, n in states.items():
        family.add_metric([state], n)
    yield family
    buffered = GaugeMetricFamily(
        "packsolve_attempts_buffered", "Results computed by live workers and not written to the database yet"
    )
    buffered.add_metric([], _buffered(session, now))
    yield buffered


def _buffered(session: Session, now: datetime) -> int:
    """Return how many pending attempts live worker processes hold results of, not yet written.

    As db.workers.buffered_in counts them for one run, for every run at once: a result a live lease
    published counts while its attempt is queued, or running under that lease's claim. One read
    per run and BATCH hashes, whatever the number of leases.
    """
    published = session.execute(
        select(WORKERS.c.name, WORKERS.c.buffered).where(
            WORKERS.c.lease_until >= now, WORKERS.c.buffered.is_not(None)
        )
    )
    wanted: dict[int, list[tuple[str, BufferedKey]]] = {}  # run id: [(lease, (level hash, heuristic))]
    for name, text in published:
        for run, keys in published_buffered(text).items():
            wanted.setdefault(run, []).extend((name, key) for key in keys)
    total = 0
    for run_id, pairs in sorted(wanted.items()):
        pending = pending_of(session, run_id, [key for _, key in pairs])
        total += sum(buffered_attempt(key, name, pending) is not None for name, key in pairs)
    return total


def _workers(session: Session, now: datetime) -> Iterator[Metric]:
    """Live workers (hosts) and worker processes (leases ahead), and lost ones (lapsed, never stopped)."""
    live = WORKERS.c.lease_until >= now
    hosts, processes, lapsed = session.execute(
        select(
            func.count(func.distinct(case((live, WORKERS.c.host)))),
            func.count(case((live, 1))),
            func.count(case((lost_rows(now), 1))),
        )
    ).one()
    for name, text, n in (
        ("packsolve_workers_live", "Workers (Celery hostnames) with a live worker process", hosts),
        ("packsolve_worker_processes_live", "Worker processes whose lease lies ahead", processes),
        ("packsolve_leases_lapsed", "Worker processes lost: lease lapsed, not stopped (kept 7 days)", lapsed),
    ):
        family = GaugeMetricFamily(name, text)
        family.add_metric([], int(n or 0))
        yield family


def _counted(values: dict[tuple[str, str], float]) -> Iterator[Metric]:
    """The counters of events no other row keeps (db.counters)."""
    taken = CounterMetricFamily(
        "packsolve_claims_taken_back",
        "Attempts the scheduler took back from a lost worker or task: requeued, lost or cancelled",
        labels=["outcome"],
    )
    for outcome in ("requeued", "lost", "cancelled"):
        taken.add_metric([outcome], values.get((counters.TAKEN_BACK, outcome), 0.0))
    yield taken
    stale = CounterMetricFamily(
        "packsolve_stale_results_refused", "Results refused because their claim had been taken back"
    )
    stale.add_metric([], values.get((counters.STALE_RESULTS, ""), 0.0))
    yield stale
    refused = CounterMetricFamily(
        "packsolve_tasks_refused",
        "Tasks workers refused (each delivery refused), by reason",
        labels=["reason"],
    )
    reasons = set(counters.REFUSAL_REASONS) | {
        label for name, label in values if name == counters.TASKS_REFUSED
    }
    for reason in sorted(reasons):
        refused.add_metric([reason], values.get((counters.TASKS_REFUSED, reason), 0.0))
    yield refused
    passes = values.get((counters.SCHEDULER_PASSES, ""), 0.0)
    pass_seconds = values.get((counters.SCHEDULER_PASS_SECONDS, ""), 0.0)
    summary = CounterMetricFamily("packsolve_scheduler_passes", "Scheduler passes made")
    summary.add_metric([], passes)
    yield summary
    total = CounterMetricFamily(
        "packsolve_scheduler_pass_seconds", "Seconds the scheduler's passes took in all"
    )
    total.add_metric([], pass_seconds)
    yield total
    last = GaugeMetricFamily(
        "packsolve_scheduler_last_pass_seconds", "Seconds the scheduler's last pass took"
    )
    if (counters.SCHEDULER_PASS_SECONDS, "last") in values:
        last.add_metric([], values[(counters.SCHEDULER_PASS_SECONDS, "last")])
    yield last


def _read_solve_times(session: Session, run_ids: list[int]) -> dict[int, dict[str, _Histogram]]:
    """Return these runs' solve-time histograms by kind, from the attempts with a wall time.

    One grouped read per BATCH runs, in the order of the (run, kind, wall) index that covers it.
    """
    wall = Attempt.wall_s
    columns = [func.sum(case((wall <= bound, 1), else_=0)) for bound in SOLVE_BUCKETS]
    out: dict[int, dict[str, _Histogram]] = {}
    for i in range(0, len(run_ids), BATCH):
        rows = session.execute(
            select(Attempt.run_id, Attempt.kind, func.count(wall), func.sum(wall), *columns)
            .where(Attempt.run_id.in_(run_ids[i : i + BATCH]), wall.is_not(None))
            .group_by(Attempt.run_id, Attempt.kind)
        )
        for run_id, kind, n, total, *at_most in rows:
            below = [int(x or 0) for x in at_most]
            per_bucket = [below[0]] + [below[k] - below[k - 1] for k in range(1, len(below))]
            out.setdefault(int(run_id), {})[kind] = _Histogram(per_bucket, int(n), float(total or 0.0))
    return out


def registry_of(engine: Engine, cluster: Cluster | None) -> CollectorRegistry:
    """Return a registry holding only the deployment's collector (no process or platform metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PacksolveCollector(engine, cluster))
    return registry
