"""Damage to the containers of a compose stack mid-run, judged by the cluster scenarios' audit.

Each scenario submits a pack of chaos levels (1 to 2.5 s each, all solvable within the limit) from
the host, waits for a drawn share of it to be final with a worker running an attempt, damages the
stack (a worker container killed, paused, cut from the network; redis or postgres restarted; the
workers scaled down then up), undoes it, waits for the run, and judges it as the network scenarios
do (cluster_audit.judge): exactly one final result per level, none lost or duplicated, no stale
result over another worker's claim, the run finished only after its last result.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from sqlalchemy import create_engine

from tests.support.chaos_pack import export_records, write_pack
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
from tests.support.compose_stack import GRACE_S, LEASE_TTL_S, Stack
from tests.support.waiting import wait_until

LEVELS = 42  # ~12 s on the stack's processes: a loaded machine still looks at it mid-run
MS = (1000, 2500)
TIME_LIMIT_S = 5.0
INTERVAL_S = 1.0  # the scheduler's --interval (ci.override.yml)
LONGEST_DAMAGE_S = 45.0
RUN_TIMEOUT_S = 240.0


@dataclass
class Damage:
    """One scenario in progress on the stack."""

    stack: Stack
    name: str
    engine: Any
    rng: random.Random
    f: Figures
    run_id: int = 0
    submitted: float = 0.0
    victim: str | None = None  # the worker's Celery name (celery@<container hostname>)
    container: str | None = None  # its container id
    held: list[int] = field(default_factory=list)
    damage_start: float | None = None
    damage_end: float | None = None
    watch: DeadlineWatch | None = None
    # {Celery name: container id} of the workers, read before the run: docker commands take seconds
    # on a loaded machine, and the victim must be damaged while it still runs what it held.
    containers: dict[str, str] = field(default_factory=dict)
    after: list[Callable[[Damage], None]] = field(default_factory=list)  # checks once the run is over

    def moment(self) -> None:
        """Wait until a drawn share of the run is final and a worker runs an attempt; pick it."""
        share = self.rng.uniform(0.1, 0.35)
        picked: list[tuple[int, str | None]] = []

        def due() -> bool:
            final = final_count(self.engine, self.run_id)
            if final < share * LEVELS:
                return False
            picked[:] = running(self.engine, self.run_id)
            if not picked and final == LEVELS:
                raise AssertionError(f"the run ended before a look found an attempt running past {share:.0%}")
            return bool(picked)

        # Patient: on a loaded machine the workers may take long to reach the share.
        if not wait_until(due, 180, every=0.1):
            final = final_count(self.engine, self.run_id)
            raise AssertionError(
                f"no attempt running once {share:.0%} of the run was final "
                f"({final} of {LEVELS} final, running now: {running(self.engine, self.run_id)})"
            )
        self.victim = self.rng.choice(sorted({w for _, w in picked if w}))
        self.held = [i for i, w in picked if w == self.victim]
        self.container = self.containers[self.victim]

    def begin(self, what: str) -> None:
        self.damage_start = time.time()
        self.f.damage = what

    def end(self) -> None:
        self.damage_end = time.time()
        assert self.damage_start is not None
        self.f.damage += f" {self.damage_end - self.damage_start:.0f} s"

    def hold_until_taken(self) -> None:
        """Keep the damage until the victim's attempts were taken from it (past lease and interval)."""
        assert self.damage_start is not None and self.victim is not None
        time.sleep(0.5)  # a result in flight when the damage began has landed by now
        # What the victim held at the moment, less what it finished itself (a docker command takes
        # seconds on a loaded machine: the victim's own results can land before it is damaged).
        own = {
            e.attempt_id
            for e in events(self.engine, self.run_id)
            if e.event == "final" and e.old_worker == self.victim
        }
        self.held = [i for i in self.held if i not in own]
        if not self.held:
            self.f.notes.append("the victim held no attempt once the damage began: no take-over to judge")
        least = LEASE_TTL_S + INTERVAL_S + GRACE_S
        start = self.damage_start

        def taken() -> bool:
            if time.time() - start < least:
                return False
            evts = events(self.engine, self.run_id)
            return taken_from(evts, self.held, self.victim or "", start).keys() >= set(self.held)

        wait_until(taken, LONGEST_DAMAGE_S, every=0.25)


def _docker(d: Damage, *args: str) -> None:
    d.stack.engine.docker(*args, timeout=180)


def kill_worker(d: Damage) -> None:
    """`docker kill` of a worker container mid-run; started again once its attempts were taken."""
    assert d.container is not None
    d.begin(f"docker kill {d.container[:12]}")
    _docker(d, "kill", d.container)
    d.hold_until_taken()
    if d.stack.inspect(d.container, "{{.State.Running}}") != "true":
        _docker(d, "start", d.container)
    d.end()


def pause_worker(d: Damage) -> None:
    """`docker pause` of a worker past its lease, then `unpause`: its late results must be refused."""
    assert d.container is not None
    d.begin(f"docker pause {d.container[:12]}")
    # The cgroup freezer can fail to freeze a busy container in time ("unable to freeze"): try again.
    for _ in range(3):
        if d.stack.engine.docker("pause", d.container, check=False, timeout=180).returncode == 0:
            break
    else:
        _docker(d, "pause", d.container)
    d.hold_until_taken()
    _docker(d, "unpause", d.container)
    d.end()


def disconnect_worker(d: Damage) -> None:
    """`docker network disconnect` of a worker for longer than its lease, then reconnect."""
    assert d.container is not None
    network = f"{d.stack.project}_default"
    d.begin(f"network disconnect {d.container[:12]}")
    _docker(d, "network", "disconnect", network, d.container)
    d.hold_until_taken()
    _docker(d, "network", "connect", network, d.container)
    d.end()


def restart_redis(d: Damage) -> None:
    """`docker restart` of the redis container mid-run: the append-only file keeps the queued tasks.

    Had the restart emptied the queue, the scheduler would send the lost tasks again ("requeued N"
    in its log once the queue is seen empty): it must requeue none.
    """
    r = redis.Redis.from_url(d.stack.broker_url, socket_timeout=5)
    before = int(r.llen("packsolve"))  # type: ignore[arg-type]
    (cid,) = d.stack.containers("redis")
    d.victim = None  # the whole stack is damaged: recovery is the first result once it is back
    d.begin("docker restart redis")
    _docker(d, "restart", "--time", "10", cid)
    d.end()
    d.f.notes.append(f"tasks queued in Redis before the restart: {before}")
    d.after.append(_no_resend)


def _no_resend(d: Damage) -> None:
    """Fail the scenario if the scheduler sent tasks again after the damage (the queue was lost)."""
    (cid,) = d.stack.containers("scheduler")
    since = str(int(d.damage_start or d.submitted))
    log = d.stack.engine.docker("logs", "--since", since, cid, check=False)
    resent = sum(int(n) for n in re.findall(r"requeued (\d+),", log.stdout + log.stderr))
    d.f.notes.append(f"tasks the scheduler sent again after the restart: {resent}")
    if resent:
        d.f.violations.append(f"the scheduler sent {resent} tasks again: the restart lost queued tasks")


def restart_postgres(d: Damage) -> None:
    """`docker restart` of the postgres container mid-run."""
    (cid,) = d.stack.containers("postgres")
    d.victim = None  # the whole stack is damaged: recovery is the first result once it is back
    d.begin("docker restart postgres")
    _docker(d, "restart", "--time", "10", cid)
    d.end()


def scale_workers(d: Damage) -> None:
    """`docker-compose up --scale worker=1` mid-run (warm shutdown of two), then `--scale worker=4`."""
    d.victim = None  # the whole stack is damaged: recovery is the first result once it is back
    d.begin("scale worker=1, then =4")
    d.stack.compose("up", "-d", "--no-recreate", "--scale", "worker=1", "worker", timeout=300)
    time.sleep(3)
    d.stack.compose("up", "-d", "--no-recreate", "--scale", "worker=4", "worker", timeout=300)
    d.end()


SCENARIOS: dict[str, Callable[[Damage], None]] = {
    "kill": kill_worker,
    "pause": pause_worker,
    "disconnect": disconnect_worker,
    "redis-restart": restart_redis,
    "postgres-restart": restart_postgres,
    "scale-1-then-4": scale_workers,
}


def run_damage(stack: Stack, name: str, workdir: Path, seed: int = 27) -> Figures:
    """Run one scenario on the stack; return its figures and the invariants it broke."""
    f = Figures(name, "redis", LEVELS)
    rng = random.Random(f"{seed}/{name}")
    engine = create_engine(stack.pg_url, pool_pre_ping=True)
    d = Damage(stack, name, engine, rng, f)
    d.containers = {celery: cid for cid, celery in stack.worker_names().items()}
    pack = write_pack(workdir, LEVELS, ms=MS, seed=rng.randrange(10**6), name=f"{name}.jsonl")
    from packsolve.execution import Limits

    hard = Limits(TIME_LIMIT_S, None, None).hard_time()
    try:
        d.submitted = time.time()
        d.run_id = stack.submit(pack, "--time-limit", f"{TIME_LIMIT_S:g}", "--chunk-size", "1")
        d.watch = DeadlineWatch(engine, d.run_id, GRACE_S, INTERVAL_S + 2.0, hard).__enter__()
        d.moment()
        SCENARIOS[name](d)
        done = stack.wait_finished(d.run_id, RUN_TIMEOUT_S)
        time.sleep(3)  # late results of a damaged worker land (and must be refused) before the audit
        _collect(d, done)
    finally:
        if d.watch is not None:
            d.watch.__exit__()
        engine.dispose()
    return f


def _collect(d: Damage, done: bool) -> None:
    f = d.f
    assert d.watch is not None
    records = export_records(d.stack.pg_url, d.run_id)
    evts = events(d.engine, d.run_id)
    finishes = run_finishes(d.engine, d.run_id)
    judge(f, records, evts, finishes, d.watch)
    for check in d.after:
        check(d)
    if not done:
        f.violations.insert(0, f"the run did not finish within {RUN_TIMEOUT_S:.0f} s")
    if f.violations:  # what the scheduler saw, for the post-mortem
        f.notes.append(
            "scheduler log (last lines):\n" + "\n".join(d.stack.logs("scheduler").splitlines()[-40:])
        )
    if finishes:
        f.run_s = round(finishes[0][0] - d.submitted, 1)
    if d.victim is not None and d.damage_start is not None:
        f.lease_bound_s = lease_bound(evts, d.held, d.victim, d.damage_start)
    f.recover_s = recovered_after(d, evts)
    # What every worker logged during this run: a late result it refused as stale.
    since = str(int(d.submitted))
    logs = [
        d.stack.engine.docker("logs", "--since", since, c, check=False) for c in d.stack.containers("worker")
    ]
    f.stale_refused = sum(stale_refusals(res.stdout + res.stderr) for res in logs)


def recovered_after(d: Damage, evts: list[Any]) -> float | None:
    """Return the seconds from the damage until the run was whole again.

    A damaged worker: until the last attempt it held was taken from it (the lease bound). A restarted
    service: until the first final result written once it was back.
    """
    if d.damage_start is None or d.damage_end is None:
        return None
    if d.victim is not None and d.held:
        return lease_bound(evts, d.held, d.victim, d.damage_start)
    after = [e.at for e in evts if e.event == "final" and e.at >= d.damage_end]
    return round(min(after) - d.damage_start, 1) if after else None
