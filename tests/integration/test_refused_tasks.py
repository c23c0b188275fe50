"""A task every worker refuses never stops the tasks behind it, nor the scheduler's repairs.

Real `packsolve worker` processes on Redis and RabbitMQ, a real scheduler. The refused tasks are
those of a run sent with another key than the workers' (they look tampered with, and are refused
by every worker) or with no key at all, and those of a kind no worker has.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from sqlalchemy import func, select

from packsolve.db.models import Refusal
from packsolve.db.session import get_engine, session_scope
from tests.support.chaos_pack import write_pack
from tests.support.dashboard import serving
from tests.support.fencing import attempts, scheduler_loop, submit
from tests.support.inprocess import invoke
from tests.support.services import child_env, packsolve_cmd, run_cli, wait_for_run
from tests.support.waiting import wait_for, wait_until

pytestmark = pytest.mark.usefixtures("chaos_env")

KEY = "the-clusters-key"
LEVELS = 24
MS = 250  # each level sleeps this long: a run of 24 on 2 processes takes seconds, not milliseconds
# Slack of the run behind refused tasks against its control: 20 %, and at least this many seconds,
# since a control of a few seconds moves by that much on a busy machine whatever the code does.
SLACK_S = 2.0


def refusals(db: str, run_id: int) -> int:
    with session_scope(get_engine(db)) as s:
        total = s.scalar(select(func.sum(Refusal.count)).where(Refusal.run_id == run_id))
        return int(total or 0)


def timed_run(env: dict[str, str], db: str, pack, timeout: float) -> float:
    """Submit a pack (one level per task) and return the seconds from its submit's end to its last result."""
    run_id = submit(env, str(pack), "--time-limit", "10", "--chunk-size", "1")
    started = time.monotonic()
    wait_for_run(db, run_id, timeout=timeout)
    return time.monotonic() - started


def test_eight_refused_tasks_queued_before_a_run_cost_it_no_more_than_its_control_time(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """Eight tasks signed with another key sit at the head of the queue: the run behind them
    finishes within its control's time + 20 % (at least SLACK_S), on both brokers. Before, RabbitMQ
    redelivered each refused task at once from the head (0/24 after minutes) and a Redis worker
    slept up to 5 s per refusal holding its pool process."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    signed = {**env, "PACKSOLVE_TASK_KEY": KEY}
    start_worker(any_broker.url, sqlite_url, "w1@test", concurrency=2, env={"PACKSOLVE_TASK_KEY": KEY})
    pack = write_pack(tmp_path / "run", LEVELS, ms=MS)
    control = timed_run(signed, sqlite_url, pack, timeout=120)
    # Eight tasks at the head of the queue that every worker refuses, then the same run again.
    other = {**env, "PACKSOLVE_TASK_KEY": "another-key"}
    refused = submit(other, str(write_pack(tmp_path / "refused", 8, ms=1, seed=7)), "--chunk-size", "1")
    behind = timed_run(signed, sqlite_url, pack, timeout=control * 1.2 + SLACK_S + 60)
    print(f"control {control:.1f} s, behind 8 refused tasks {behind:.1f} s")
    assert behind <= max(control * 1.2, control + SLACK_S), (control, behind)
    # The refused run's levels wait, and `status` says why.
    assert {a.status for a in attempts(sqlite_url, refused)} == {"queued"}
    assert refusals(sqlite_url, refused) >= 8
    res = invoke("status", str(refused), env=signed)
    assert res.returncode == 0, res.stderr
    shown = " ".join(res.stdout.split())  # rich wraps lines at the terminal's width
    assert "8 level(s) wait, refused by every live worker: a task whose signature matches none" in shown


def test_tasks_the_broker_lost_are_sent_again_while_refused_tasks_come_and_go(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """A run's 24 tasks are lost (the queue purged) while 8 refused tasks of another run cycle: the
    scheduler sends the lost ones again and the run finishes. Before, it resent only when the queue
    was empty, which refused tasks put back at once never let it be."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    signed = {**env, "PACKSOLVE_TASK_KEY": KEY}
    run_id = submit(signed, str(write_pack(tmp_path / "run", LEVELS, ms=5)), "--time-limit", "10")
    any_broker.lose()
    other = {**env, "PACKSOLVE_TASK_KEY": "another-key"}
    refused = submit(other, str(write_pack(tmp_path / "refused", 8, ms=1, seed=7)), "--chunk-size", "1")
    start_worker(any_broker.url, sqlite_url, "w1@test", concurrency=2, env={"PACKSOLVE_TASK_KEY": KEY})
    with scheduler_loop(signed, grace=1, interval=1):
        wait_for_run(sqlite_url, run_id, timeout=90)
    assert {a.status for a in attempts(sqlite_url, run_id)} == {"solved"}
    assert {a.status for a in attempts(sqlite_url, refused)} == {"queued"}  # never given up: not authentic
    assert all(a.requeues == 0 for a in attempts(sqlite_url, refused))  # refused lately: not lost


def test_a_keyless_scheduler_or_submit_on_a_signed_cluster_refuses_to_start_and_status_names_the_refusal(
    tmp_path, broker, sqlite_url, start_worker
):
    """Item 7: a scheduler without the key would send unsigned tasks every worker refuses."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": broker, "PACKSOLVE_TASK_KEY": ""}
    # Sent before any worker was up: unsigned, so refused by the worker that comes.
    unsigned = submit(env, str(write_pack(tmp_path / "a", 3, ms=1)), "--chunk-size", "1")
    start_worker(broker, sqlite_url, "w1@test", env={"PACKSOLVE_TASK_KEY": KEY})
    wait_until(lambda: refusals(sqlite_url, unsigned) >= 3, 60)
    res = invoke("status", str(unsigned), env={**env, "PACKSOLVE_TASK_KEY": KEY})
    assert res.returncode == 0, res.stderr
    shown = " ".join(res.stdout.split())
    assert "3 level(s) wait, refused by every live worker: an unsigned task" in shown
    assert "0/3 final (0%) · waiting ·" in shown  # not "running" with an ETA: nothing runs them
    with serving(sqlite_url, log_dir=tmp_path) as served:  # the run's page says it too
        code, body = served.get(f"/runs/{unsigned}/live")
    assert code == 200 and "3 level(s) wait, refused by every live worker: an unsigned task" in body, body
    for command in (("scheduler", "--once"), ("scheduler", "--interval", "1")):
        res = run_cli(*command, env=env, timeout=60)
        assert res.returncode == 2, res.stderr
        [line] = [x for x in res.stderr.splitlines() if x.startswith("Error:")]  # one line, no traceback
        assert "Traceback" not in res.stderr, res.stderr
        assert "no PACKSOLVE_TASK_KEY here, but this deployment's workers (w1@test) run only signed" in line
    res = invoke("submit", str(write_pack(tmp_path / "b", 2, ms=1)), env=env)
    assert res.returncode == 2 and "set PACKSOLVE_TASK_KEY to the workers' key" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_submit_wait_says_its_tasks_are_refused_and_why_while_it_waits(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """Issue 37, item 3: an unsigned submit to a signing worker is told why nothing starts, as it waits."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    env["PACKSOLVE_TASK_KEY"] = ""  # sent unsigned, before the signing worker is up
    out, err = tmp_path / "submit.out", tmp_path / "submit.err"
    pack = write_pack(tmp_path / "a", 3, ms=1)
    with out.open("w") as stdout, err.open("w") as stderr:
        waiting = subprocess.Popen(
            packsolve_cmd("submit", str(pack), "--chunk-size", "1", "--wait"),
            env=child_env(env),
            stdout=stdout,
            stderr=stderr,
        )
    try:
        run_id = int(wait_for(lambda: out.read_text().strip(), 60, what="the run id on stdout"))
        start_worker(any_broker.url, sqlite_url, "w1@test", env={"PACKSOLVE_TASK_KEY": KEY})
        wait_for(
            lambda: "3 level(s) wait, refused by every live worker: an unsigned task" in err.read_text(),
            60,
            what="the refusal on submit --wait's stderr",
        )
        said = [line for line in err.read_text().splitlines() if "refused by every live worker" in line]
        assert len(said) == 1 and said[0].startswith(f"run {run_id}: "), err.read_text()
        assert "PACKSOLVE_TASK_KEY" in said[0]
        assert invoke("cancel", str(run_id), env=env).returncode == 0
        assert waiting.wait(60) == 0, err.read_text()  # cancelled is not a failure of the tool
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait(10)
    assert "Traceback" not in err.read_text()


@pytest.mark.slow
def test_levels_every_live_worker_refuses_are_given_up_by_the_scheduler_saying_why(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """A kind no worker has: its levels end `error` once every live worker refused them GIVE_UP_AFTER
    times, the message naming the workers and the reason; the run finishes."""
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    run_id = submit(env, str(write_pack(tmp_path, 2, ms=1)), "--chunk-size", "1")
    start_worker(any_broker.url, sqlite_url, "lacking@test", env={"PACKSOLVE_EXTRA_KINDS": ""})
    with scheduler_loop(env, grace=1, interval=1):
        wait_for_run(sqlite_url, run_id, timeout=120)
    rows = attempts(sqlite_url, run_id)
    assert {a.status for a in rows} == {"error"}
    for a in rows:
        assert "given up: refused by every live worker (lacking@test)" in a.message
        assert "unknown kind 'chaos'" in a.message


def test_a_runs_lost_tasks_are_sent_again_while_a_later_runs_tasks_keep_the_queue_busy(
    tmp_path, any_broker, sqlite_url, start_worker
):
    """Lost tasks are found per run, not by an empty queue: a run's tasks are lost, then a long run
    is sent; once workers start the later run's attempts, the first run's queued attempts (sent
    before it) are sent again, while the later run's tasks still wait. Before, they waited for
    the queue to empty."""
    from packsolve.db.runs import status_counts

    env = {"PACKSOLVE_DATABASE_URL": sqlite_url, "PACKSOLVE_BROKER_URL": any_broker.url}
    lost = submit(env, str(write_pack(tmp_path / "lost", 6, ms=5)), "--time-limit", "10")
    any_broker.lose()
    # The later run must be sent the scheduler's send_settle after the lost one: a second here (default 5 s).
    time.sleep(1.5)
    later = submit(env, str(write_pack(tmp_path / "later", 60, ms=300, seed=3)), "--chunk-size", "1")
    start_worker(any_broker.url, sqlite_url, "w1@test")
    with scheduler_loop({**env, "PACKSOLVE_SEND_SETTLE": "1"}, grace=1, interval=1):
        sent_again = wait_until(lambda: all(a.requeues == 1 for a in attempts(sqlite_url, lost)), 60)
        assert sent_again, "the lost run's tasks were not sent again"
        with session_scope(get_engine(sqlite_url)) as s:
            waiting_then = status_counts(s, later).get("queued", 0)
        wait_for_run(sqlite_url, lost, timeout=120)
    assert waiting_then >= 10, waiting_then  # sent again while the later run's tasks kept the queue busy
    assert {a.status for a in attempts(sqlite_url, lost)} == {"solved"}
