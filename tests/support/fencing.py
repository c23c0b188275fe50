"""Helpers for the fencing tests: a broker of the test's own on Redis or RabbitMQ, a scheduler
loop, and reading a run's attempts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

import pytest
import redis
from sqlalchemy import select

from packsolve.db.attempts import ClaimBy, Claimed, claim_many, hold
from packsolve.db.models import Attempt, Worker, utcnow
from packsolve.db.runs import RunOptions, create_run, mark_sent
from packsolve.db.session import get_engine, session_scope
from packsolve.levels import Level
from packsolve.planning import plan_levels
from tests.support.inprocess import invoke
from tests.support.services import (
    amqp_depth,
    child_env,
    packsolve_cmd,
    purge_amqp_queue,
    rabbitmq_vhost,
)


def _queue() -> str:
    return os.environ.get("PACKSOLVE_QUEUE") or "packsolve"


class Broker:
    """A broker URL of this test's own, how many tasks wait in its queue, and how to lose them."""

    def __init__(self, url: str, kind: str) -> None:
        self.url, self.kind = url, kind

    def depth(self) -> int:
        if self.kind == "redis":
            return int(redis.Redis.from_url(self.url).llen(_queue()))
        return amqp_depth(self.url, _queue())

    def lose(self) -> None:
        if self.kind == "redis":
            redis.Redis.from_url(self.url).delete(_queue())
        else:
            purge_amqp_queue(self.url, _queue())


@pytest.fixture(params=["redis", pytest.param("rabbitmq", marks=pytest.mark.rabbitmq)])
def any_broker(request) -> Iterator[Broker]:
    """Redis (a queue of this test's own) or a RabbitMQ vhost of this test's own."""
    if request.param == "redis":
        yield Broker(request.getfixturevalue("broker"), "redis")
    else:
        request.getfixturevalue("broker")  # a queue name of this test's own, on either broker
        with rabbitmq_vhost() as url:
            yield Broker(url, "rabbitmq")


def submit(env: dict[str, str], *args: str) -> int:
    res = invoke("submit", *args, env=env)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.strip().splitlines()[-1])


@contextmanager
def scheduler_loop(env: dict[str, str], grace: float = 1, interval: float = 1) -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(
        packsolve_cmd("scheduler", "--grace", str(grace), "--interval", str(interval)),
        env=child_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(20)


def attempts(db: str, run_id: int) -> list[Attempt]:
    with session_scope(get_engine(db)) as s:
        return list(s.scalars(select(Attempt).where(Attempt.run_id == run_id).order_by(Attempt.seq)))


def running_count(db: str, run_id: int) -> int:
    """Return how many of the run's attempts are running (one cheap query: for tight polling)."""
    from packsolve.db.runs import status_counts

    with session_scope(get_engine(db)) as s:
        return status_counts(s, run_id).get("running", 0)


def final_count(db: str, run_id: int) -> int:
    return sum(1 for a in attempts(db, run_id) if a.status not in ("queued", "running"))


@pytest.fixture
def either_engine(db_url: str):
    """An engine on the test's own database (db_url: its SQLite file, then its own PostgreSQL database)."""
    return get_engine(db_url)


def sent_run_of(engine, levels: Sequence[Level], max_tries: int = 3) -> tuple[int, list[str]]:
    """Create a distributed run of levels, sent in full; return its id and level hashes."""
    with session_scope(engine) as s:
        run_id = create_run(
            s, plan_levels(list(levels), None).attempts, RunOptions("distributed", max_tries=max_tries)
        )
        mark_sent(s, run_id)
    return run_id, [lv.hash for lv in levels]


def lease(engine, name: str, seconds: float) -> None:
    """Give holder name a lease ending seconds from now (negative: lapsed)."""
    with session_scope(engine) as s:
        row = s.get(Worker, name) or Worker(name=name, host=name.split("/")[0])
        row.lease_until = utcnow() + timedelta(seconds=seconds)
        s.add(row)


def level_keys(connection, run_id: int, hashes: Sequence[str]) -> list[tuple[str, str]]:
    """Return the attempt (level hash, heuristic) of each level of a run that tries each level once."""
    rows = connection.execute(
        select(Attempt.level_hash, Attempt.heuristic).where(
            Attempt.run_id == run_id, Attempt.level_hash.in_(list(hashes))
        )
    ).all()
    heuristics = dict(rows)
    assert len(heuristics) == len(rows), "a run of one heuristic per level"
    return [(h, heuristics.get(h, "")) for h in hashes]


def claim_levels(
    connection, run_id: int, hashes: Sequence[str], by: ClaimBy, start_first: bool = True
) -> Claimed:
    """Return claim_many of these levels' attempts (a run of one heuristic per level), keyed by level hash."""
    got = claim_many(connection, run_id, level_keys(connection, run_id, hashes), by, start_first)
    return Claimed({h: v for (h, _), v in got.verdicts.items()}, {h: t for (h, _), t in got.tokens.items()})


def hold_levels(connection, run_id: int, hashes: Sequence[str], holder: str) -> None:
    """Hold these levels' queued attempts (a run of one heuristic per level) for holder (db.attempts.hold)."""
    hold(connection, run_id, level_keys(connection, run_id, hashes), holder)
