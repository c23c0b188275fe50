"""The network and damage scenarios on the in-machine cluster, each returning its Figures.

Every scenario submits a pack of chaos levels (each sleeps 1 to 2.5 s, all solvable well within
the time limit) from the client host to three worker hosts, damages the cluster at a moment
drawn from a seed (once part of the run is done and the chosen worker holds a running attempt),
undoes the damage, waits for the run, and then judges it (cluster_audit.judge): exactly one final
result per level, none lost, none duplicated, no stale result over another worker's claim, the
run stamped finished only after its last result, no attempt running past its deadline plus grace.

    figures = run_scenario(cluster, "freeze", "rabbitmq", Profile())
    figures.violations     # [] when every invariant held

`python -m benchmarks.cluster_scenarios` runs them all and prints the closing table.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.chaos_pack import export_records, write_pack
from tests.support.cluster import ROOT, Cluster, Deployment
from tests.support.cluster_audit import (
    DeadlineWatch,
    Figures,
    events,
    final_count,
    judge,
    lease_bound,
    run_finishes,
    running,
    stale_refusals,
    taken_from,
)
from tests.support.waiting import wait_until


@dataclass(frozen=True)
class Profile:
    """The sizes and clocks of a scenario: small enough that all twelve fit in a few minutes."""

    levels: int = 36  # ~10 s on six processes: a loaded machine still looks at it mid-run
    ms: tuple[int, int] = (1000, 2500)
    time_limit: float = 5.0
    grace_s: float = 3.0  # the scheduler's --grace
    interval_s: float = 1.0  # the scheduler's --interval
    lease_ttl_s: float = 4.0  # PACKSOLVE_LEASE_TTL for workers and scheduler
    concurrency: int = 2
    delay_ms: float = 200.0  # each way, on every worker link (latency scenario)
    loss: float = 0.05  # each way
    longest_damage_s: float = 45.0  # a partition or freeze waiting for a takeover ends by then
    run_timeout_s: float = 150.0
    seed: int = 18

    @property
    def hard_s(self) -> float:
        """The hard limit of an attempt (what its deadline is made of)."""
        from packsolve.execution import Limits

        hard = Limits(self.time_limit, None, None).hard_time()
        assert hard is not None
        return hard

    def env(self) -> dict[str, str]:
        return {"PACKSOLVE_LEASE_TTL": f"{self.lease_ttl_s:g}"}


@dataclass
class Ctx:
    """One scenario in progress: what it submitted, whom it damaged and when."""

    cluster: Cluster
    d: Deployment
    p: Profile
    f: Figures
    rng: random.Random
    pack: Path
    run_id: int = 0
    submitted: float = 0.0
    victim: str | None = None  # a worker's hostname (w2@cluster) or a host's name
    held: list[int] = field(default_factory=list)
    damage_start: float | None = None
    damage_end: float | None = None
    settle_s: float = 3.0
    watch: DeadlineWatch | None = None

    def submit(self, time_limit: float | None = None) -> int:
        self.submitted = time.time()
        limit = self.p.time_limit if time_limit is None else time_limit
        self.run_id = self.d.submit(self.pack, "--time-limit", f"{limit:g}")
        self._watch(self.p.hard_s if limit > 0 else None)
        return self.run_id

    def _watch(self, hard_s: float | None) -> None:
        self.watch = DeadlineWatch(
            self.d.engine, self.run_id, self.p.grace_s, self.p.interval_s + 2.0, hard_s
        )
        self.watch.__enter__()

    def moment(self) -> None:
        """Wait for the damage's moment: a drawn share of the run final and a worker running an attempt.

        Sets victim (that worker) and held (its running attempts then).
        """
        share = self.rng.uniform(0.1, 0.4)
        picked: list[tuple[int, str | None]] = []

        def due() -> bool:
            final = final_count(self.d.engine, self.run_id)
            if final < share * self.p.levels:
                return False
            picked[:] = running(self.d.engine, self.run_id)
            if not picked and final == self.p.levels:
                raise RuntimeError(f"the run ended before a look found an attempt running past {share:.0%}")
            return bool(picked)

        # Patient: on a loaded machine the workers may take long to reach the share.
        if not wait_until(due, 180, every=0.1):
            final = final_count(self.d.engine, self.run_id)
            raise RuntimeError(
                f"no attempt running once {share:.0%} of the run was final "
                f"({final} of {self.p.levels} final, running now: {running(self.d.engine, self.run_id)})"
            )
        self.victim = self.rng.choice(sorted({w for _, w in picked if w}))
        self.held = [i for i, w in picked if w == self.victim]

    def victim_host(self) -> str:
        assert self.victim is not None
        return self.victim.split("@", 1)[0]

    def hold_until_taken(self, least_s: float) -> None:
        """Keep the damage until every held attempt was taken from the victim (at least least_s, at most
        the profile's longest_damage_s)."""
        assert self.damage_start is not None and self.victim is not None

        def taken() -> bool:
            if time.time() - self.damage_start < least_s:
                return False
            evts = events(self.d.engine, self.run_id)
            return taken_from(evts, self.held, self.victim, self.damage_start).keys() >= set(self.held)

        wait_until(taken, self.p.longest_damage_s, every=0.25)


def _until_taken(c: Ctx, damage: Callable[[str], object], undo: Callable[[str], object], what: str) -> None:
    """Damage the victim's host until its held attempts were taken over (past grace, lease and interval),
    then undo it; the figures say what was done and for how long."""
    host = c.victim_host()
    damage(host)
    c.damage_start = time.time()
    # What the victim still holds once the damage began (a result in flight then has landed within
    # half a second): an attempt it finished between the moment's look and the damage is its own
    # result, not one to be taken from it (a busy machine widens that gap).
    time.sleep(0.5)
    c.held = [i for i, w in running(c.d.engine, c.run_id) if w == c.victim]
    if not c.held:  # rare: said in the figures, so a run that exercised no take-over is seen as such
        c.f.notes.append("the victim held no attempt once the damage began: no take-over to judge")
    c.hold_until_taken(c.p.grace_s + c.p.lease_ttl_s + c.p.interval_s)
    undo(host)
    c.damage_end = time.time()
    c.f.damage = f"{host} {what} {c.damage_end - c.damage_start:.0f} s"


def partition_long(c: Ctx) -> None:
    """A worker host partitioned longer than the grace (until its attempts were taken over), then healed."""
    c.submit()
    c.moment()
    _until_taken(c, c.cluster.net.partition, c.cluster.net.heal, "cut")
    # Its connections retransmit with backoff: a write held since the cut lands up to ~13 s after.
    c.settle_s = 15.0


def partition_short(c: Ctx) -> None:
    """A worker host partitioned for half the grace, then healed."""
    c.submit()
    c.moment()
    host = c.victim_host()
    c.cluster.net.partition(host)
    c.damage_start = time.time()
    time.sleep(c.p.grace_s / 2)
    c.cluster.net.heal(host)
    c.damage_end = time.time()
    c.f.damage = f"{host} cut {c.damage_end - c.damage_start:.1f} s"
    c.victim = None  # not a death: no lease bound to measure
    c.settle_s = 5.0


def latency_loss(c: Ctx) -> None:
    """Every worker link delays each packet both ways and drops a share of them, for the whole run."""
    net = c.cluster.net
    hosts = [h.name for h in c.cluster.worker_hosts]
    for i, name in enumerate(hosts):
        net.shape(name, c.p.delay_ms, c.p.loss, seed=c.rng.randrange(10**6) + i)
    c.damage_start = time.time()
    c.submit()
    c.d.wait_finished(c.run_id, c.p.run_timeout_s)
    counts = [net.unshape(name) for name in hosts]
    c.damage_end = time.time()
    c.f.damage = f"{c.p.delay_ms:g} ms each way + {c.p.loss:.0%} loss on {len(hosts)} worker links, whole run"
    c.f.notes.append(f"shapers: {counts}")


def client_cut(c: Ctx) -> None:
    """The client host cut off the moment submit printed the run id; healed once the run is over."""
    client = c.cluster.client
    argv = [sys.executable, "-m", "packsolve", "submit", str(c.pack), "--time-limit", f"{c.p.time_limit:g}"]
    c.submitted = time.time()
    proc = subprocess.Popen(
        client.argv(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=c.d.host_env(),
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    c.cluster.net.partition(client.name)
    c.damage_start = time.time()
    if not line.strip().isdigit():
        proc.kill()
        raise RuntimeError(f"submit printed no run id: {line!r} {proc.communicate()[1][-2000:]}")
    c.run_id = int(line)
    c._watch(c.p.hard_s)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        c.f.notes.append("submit had not exited 30 s after printing its run id (cut off)")
    c.d.wait_finished(c.run_id, c.p.run_timeout_s)
    c.cluster.net.heal(client.name)
    c.damage_end = time.time()
    c.f.damage = f"client cut {c.damage_end - c.damage_start:.0f} s from its run id on"
    res = c.d.cli("status", str(c.run_id), "--format", "json", timeout=60)
    if res.returncode != 0:
        c.f.violations.append(
            f"status from the healed client failed ({res.returncode}): {res.stderr.strip()[-300:]}"
        )
    elif not json.loads(res.stdout).get("finished"):
        c.f.violations.append(
            f"status from the healed client does not show the run finished: {res.stdout[:300]}"
        )


def postgres_restart(c: Ctx) -> None:
    """PostgreSQL crashed (immediate shutdown) mid-run and started again 3 s later."""
    c.submit()
    c.moment()
    c.damage_start = time.time()
    c.cluster.pg.restart("immediate", down_s=3.0)
    c.damage_end = time.time()
    c.f.damage = f"postgres down {c.damage_end - c.damage_start:.1f} s (crash + recovery)"
    c.victim = None
    c.settle_s = 5.0


def freeze(c: Ctx) -> None:
    """A worker host's whole process tree stopped (SIGSTOP) until its attempts were taken over; thawed."""
    c.submit()
    c.moment()
    _until_taken(c, c.cluster.net.freeze, c.cluster.net.thaw, "frozen")
    c.settle_s = 5.0


def freeze_no_limit(c: Ctx) -> None:
    """As freeze, in a run with no time limit: only the worker's lease can tell it is gone (defect 2)."""
    c.submit(time_limit=0)
    c.moment()
    _until_taken(c, c.cluster.net.freeze, c.cluster.net.thaw, "frozen")
    c.f.damage += ", no time limit"
    c.settle_s = 5.0
    taken = taken_from(events(c.d.engine, c.run_id), c.held, c.victim or "", c.damage_start)
    if taken.keys() < set(c.held):
        c.f.violations.append(
            f"{len(set(c.held) - taken.keys())} attempts of the frozen worker were not taken from it within "
            f"{c.p.longest_damage_s:.0f} s (PACKSOLVE_LEASE_TTL={c.p.lease_ttl_s:g}, --grace {c.p.grace_s:g})"
        )


SCENARIOS: dict[str, Callable[[Ctx], None]] = {
    "partition-long": partition_long,
    "partition-short": partition_short,
    "latency-loss": latency_loss,
    "client-cut": client_cut,
    "postgres-restart": postgres_restart,
    "freeze": freeze,
    "freeze-no-limit": freeze_no_limit,
}


def run_scenario(cluster: Cluster, name: str, broker: str, profile: Profile | None = None) -> Figures:
    """Run one scenario on one broker in a fresh deployment; return its figures and broken invariants."""
    p = profile or Profile()
    f = Figures(name, broker, p.levels)
    rng = random.Random(f"{p.seed}/{name}/{broker}")
    with cluster.deployment(broker, name) as d:
        d.start_workers(p.concurrency, env=p.env())
        d.start_scheduler(p.grace_s, p.interval_s, env=p.env())
        pack = write_pack(d.logs, p.levels, ms=p.ms, seed=rng.randrange(10**6))
        c = Ctx(cluster, d, p, f, rng, pack)
        try:
            SCENARIOS[name](c)
            done = d.wait_finished(c.run_id, p.run_timeout_s)
            if c.damage_end is not None:
                time.sleep(max(0.0, c.damage_end + c.settle_s - time.time()))
        finally:
            if c.watch is not None:
                c.watch.__exit__()
        _collect(c, done)
    return f


def _collect(c: Ctx, done: bool) -> None:
    """Fill the figures from the export, the audit and the worker logs; judge the invariants."""
    f, d = c.f, c.d
    assert c.watch is not None
    records = export_records(d.observer_url, c.run_id)
    evts = events(d.engine, c.run_id)
    finishes = run_finishes(d.engine, c.run_id)
    judge(f, records, evts, finishes, c.watch)
    if not done:
        f.violations.insert(0, f"the run did not finish within {c.p.run_timeout_s:.0f} s")
    finished_at = finishes[0][0] if finishes else None
    if finished_at is not None:
        f.run_s = round(finished_at - c.submitted, 1)
        if c.damage_end is not None:
            f.recover_s = round(max(0.0, finished_at - c.damage_end), 1)
    if c.victim is not None and c.damage_start is not None:
        f.lease_bound_s = lease_bound(evts, c.held, c.victim, c.damage_start)
    f.stale_refused = sum(stale_refusals(w.log()) for w in d.workers)
    # The history of each attempt that broke an invariant, for the report (times from submit).
    bad = {e.attempt_id for e in evts if e.event in ("foreign_final", "overwrite")}
    bad |= set(c.watch.violations)
    for attempt_id in sorted(bad):
        steps = [
            f"{e.at - c.submitted:.1f}s {e.event} {e.old_status}>{e.new_status} {e.old_worker}>{e.new_worker}"
            for e in evts
            if e.attempt_id == attempt_id
        ]
        f.notes.append(f"attempt {attempt_id}: " + ", ".join(steps))
    if c.watch.blockers:
        f.notes.append(f"transactions left open while an attempt was overdue: {sorted(c.watch.blockers)}")
    if c.damage_start is not None:
        f.notes.append(
            f"damage from {c.damage_start - c.submitted:.1f}s to {(c.damage_end or 0) - c.submitted:.1f}s"
        )
