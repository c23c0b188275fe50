"""Numbers from outside are bounded by what the database can store: one line giving the range, exit 2.

One case per kind of option (a run's limits and tries, processes, counts of rows or levels,
seconds of a service) and the fields of a task, each past what a 32-bit Integer column (or a
64-bit BigInteger one) holds: no driver's OverflowError, no traceback, nothing created.
"""

from __future__ import annotations

import pytest

from packsolve.bounds import INT32_MAX, INT64_MAX
from packsolve.execution import AttemptSpec, Limits
from packsolve.execution.spec import PendingAttempt
from packsolve.queue.protocol import decode, encode
from tests.support.inprocess import invoke
from tests.support.services import run_cli

HUGE = "99999999999999999999"
INT32 = f"1 to {INT32_MAX}"
NO_BROKER = "redis://127.0.0.1:1/0"  # the check comes before the broker is tried
SERVICES = ("worker", "scheduler")  # commands that run until stopped once started


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """A directory with a pack and a database holding one solved run of it."""
    where = tmp_path_factory.mktemp("bounds")
    (where / "pack").mkdir()
    (where / "pack" / "a.json").write_text('{"kind": "coins", "notes": [1, 2], "target": 3}')
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{where / 'runs.db'}"}
    res = invoke("solve", "pack", "-q", "-j", "1", env=env, cwd=where)
    assert res.returncode == 0, res.stderr
    return where, env


CASES = [
    # A run's limits and tries: through the one request check of solve, submit, check and rerun.
    (["submit", "pack", "--max-tries", "3000000000", "--broker-url", NO_BROKER], "--max-tries", INT32),
    (["check", "pack", "--memory-limit", "3000000000"], "--memory-limit", INT32),
    (["check", "pack", "--node-limit", HUGE], "--node-limit", f"1 to {INT64_MAX}"),
    (["check", "pack", "--time-limit", "1e300"], "--time-limit", f"0 to {INT32_MAX}"),
    (["solve", "pack", "--time-limit", "1e300"], "--time-limit", f"0 to {INT32_MAX}"),
    (["rerun", "1", "--status", "timeout", "--max-tries", "3000000000"], "--max-tries", INT32),
    (["rerun", "1", "--status", "timeout", "--node-limit", HUGE], "--node-limit", f"1 to {INT64_MAX}"),
    # Processes.
    (["solve", "pack", "--jobs", "3000000000"], "--jobs", INT32),
    (["worker", "--concurrency", "3000000000"], "--concurrency", f"0 to {INT32_MAX}"),
    # Counts: levels per task, rows shown.
    (["check", "pack", "--chunk-size", "3000000000"], "--chunk-size", f"0 to {INT32_MAX}"),
    (["runs", "--limit", HUGE], "--limit", INT32),
    (["report", "hardest", "--top", HUGE], "--top", INT32),
    # Seconds of a service.
    (["worker", "--visibility-timeout", "3000000000"], "--visibility-timeout", INT32),
    (["scheduler", "--interval", "1e300"], "--interval", f"{INT32_MAX}"),
]


@pytest.mark.parametrize(("args", "option", "span"), CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_a_number_past_what_the_database_stores_is_refused_in_one_line_giving_the_range(
    solved, args, option, span
):
    where, env = solved
    # A service's refusal in a process of its own: one that wrongly started would serve until the timeout.
    if args[0] in SERVICES:
        res = run_cli(*args, env=env, cwd=where, timeout=60)
    else:
        res = invoke(*args, env=env, cwd=where)
    # One error line (click puts its usage hint above those it finds itself), no traceback.
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert res.returncode == 2 and len(errors) == 1, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and option in errors[0] and span in errors[0], errors[0]


def test_a_visibility_timeout_from_the_environment_past_the_range_is_refused_in_one_line(solved):
    where, env = solved
    env = {**env, "PACKSOLVE_VISIBILITY_TIMEOUT": "3000000000", "PACKSOLVE_BROKER_URL": NO_BROKER}
    res = invoke("submit", "pack", env=env, cwd=where)
    errors = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(errors) == 1, res.stderr[-2000:]
    assert "PACKSOLVE_VISIBILITY_TIMEOUT" in errors[0] and INT32 in errors[0], errors[0]


def task(**fields):
    spec = AttemptSpec("coins", "dp", {"kind": "coins", "notes": [1], "target": 1}, Limits(5.0, 100, 64))
    body = encode(7, [PendingAttempt("h" * 64, spec)], 5, "deployment")
    for key, value in fields.items():
        if key in ("run", "max_tries"):
            body[key] = value
        else:
            body["items"][0]["spec"][key] = value
    return body


def test_a_task_within_the_ranges_decodes():
    decoded = decode(task())
    assert (decoded.run_id, decoded.max_tries) == (7, 5)
    assert decoded.items[0].spec.limits == Limits(5.0, 100, 64)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run", 2**31),
        ("run", 0),
        ("run", "7"),
        ("max_tries", 3_000_000_000),
        ("max_tries", True),
        ("time_limit", 1e300),
        ("time_limit", -1.0),
        ("time_limit", float("nan")),
        ("node_limit", 2**63),
        ("node_limit", 0),
        ("node_limit", 1.5),
        ("memory_limit_mb", 2**31),
        ("memory_limit_mb", "64"),
    ],
)
def test_a_task_field_out_of_range_is_not_a_task_and_the_error_gives_the_range(field, value):
    with pytest.raises(ValueError, match=f"{field}.* to "):
        decode(task(**{field: value}))
