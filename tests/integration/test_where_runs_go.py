"""submit and status say which broker and database a run went to, and when a default was used."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis

from packsolve.settings import DEFAULT_BROKER_URL
from tests.support.inprocess import invoke

PACK = Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins"


@pytest.mark.redis
def test_submit_and_status_name_the_broker_and_database_and_say_when_the_default_was_used(
    tmp_path, broker, monkeypatch
):
    monkeypatch.delenv("PACKSOLVE_BROKER_URL", raising=False)
    monkeypatch.delenv("PACKSOLVE_DATABASE_URL", raising=False)
    try:
        res = invoke("submit", str(PACK), cwd=tmp_path)
    finally:  # the default broker is the shared Redis's database 0: leave nothing of ours in it
        queue = os.environ["PACKSOLVE_QUEUE"]
        redis.Redis.from_url(DEFAULT_BROKER_URL).delete(queue, f"_kombu.binding.{queue}")
    assert res.returncode == 0, res.stderr
    assert f"broker {DEFAULT_BROKER_URL} (the default: PACKSOLVE_BROKER_URL is not set)" in res.stderr
    database = tmp_path / "packsolve.db"
    assert f"database {database} (the default: PACKSOLVE_DATABASE_URL is not set)" in res.stderr
    res = invoke("status", cwd=tmp_path)
    assert f"database {database}" in res.stdout and f"broker {DEFAULT_BROKER_URL}" in res.stdout
    p = json.loads(invoke("status", "--format", "json", cwd=tmp_path).stdout)
    assert (p["database"], p["broker"]) == (str(database), DEFAULT_BROKER_URL)


@pytest.mark.redis
def test_a_broker_password_is_hidden_and_a_url_without_a_scheme_is_named_as_a_broker_url(tmp_path, broker):
    url = broker.replace("redis://", "redis://:s3cret@")
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    res = invoke("submit", str(PACK), "--broker-url", url, env=env)
    assert "s3cret" not in res.stdout + res.stderr
    res = invoke("submit", str(PACK), "--broker-url", "redis//localhost:6379/0", env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "'redis//localhost:6379/0' is not a broker URL" in res.stderr and "redis://HOST" in res.stderr
    assert "database URL" not in res.stderr


@pytest.mark.parametrize("command", [["submit", str(PACK)], ["worker"], ["scheduler"], ["status"]])
def test_a_broker_scheme_typo_is_a_usage_error_of_one_line_and_creates_no_database(tmp_path, command):
    """redsi://: exit 2 naming the schemes that work, before a database or a broker is touched."""
    env = {
        "PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}",
        "PACKSOLVE_BROKER_URL": "redsi://localhost",
    }
    res = invoke(*command, env=env)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert "(redsi://): write redis://, rediss://, amqp:// or amqps://" in res.stderr
    assert not (tmp_path / "a.db").exists()


def test_a_solve_refused_for_a_heuristic_typo_creates_no_database(tmp_path):
    res = invoke("solve", str(PACK), "--heuristic", "nope", cwd=tmp_path, env={"PACKSOLVE_DATABASE_URL": ""})
    assert res.returncode == 2 and "no level in the pack has a heuristic 'nope'" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_hardest_across_all_runs_of_an_empty_database_says_no_runs_yet(tmp_path):
    env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    invoke("db", "upgrade", env=env)
    res = invoke("report", "hardest", "--all", env=env)
    summary = invoke("report", "summary", env=env)
    assert "no runs yet" in summary.stderr + summary.stdout
    assert (res.returncode, "no runs yet" in res.stderr + res.stdout) == (summary.returncode, True)
