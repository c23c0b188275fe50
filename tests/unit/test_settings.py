"""Settings: one parser per value, one line per bad value naming where it was set, and the order of
the sources (flag, environment, ./packsolve.toml's [settings], default); `packsolve config` shows them."""

from __future__ import annotations

import json

import pytest

from packsolve.settings import (
    CONFIG_FILE,
    DEFAULT,
    DEFAULT_LEASE_TTL_S,
    ENVIRONMENT,
    FLAG,
    SettingsError,
    current,
    resolve,
)
from tests.support.inprocess import invoke
from tests.support.services import run_cli

BAD = [
    ("PACKSOLVE_LEASE_TTL", "soon", "seconds above 0"),
    ("PACKSOLVE_LEASE_TTL", "-3", "seconds above 0"),
    ("PACKSOLVE_LEASE_TTL", "0", "seconds above 0"),
    ("PACKSOLVE_VISIBILITY_TIMEOUT", "3000000000", "whole number of seconds from 1 to 2147483647"),
    ("PACKSOLVE_VISIBILITY_TIMEOUT", "1.5", "whole number of seconds"),
    ("PACKSOLVE_CONCURRENCY", "many", "whole number from 0"),
    ("PACKSOLVE_BROKER_URL", "redis//localhost:6379/0", "is not a broker URL: write redis://HOST"),
    (
        "PACKSOLVE_BROKER_URL",
        "redsi://localhost",
        "no broker scheme packsolve speaks (redsi://): write redis://",
    ),
    ("PACKSOLVE_EXTRA_KINDS", "chaos", "write NAME:MODULE"),
    ("PACKSOLVE_WORKER_REMOTE_CONTROL", "maybe", "must be on or off: write 1, true, yes or on"),
    ("PACKSOLVE_CGROUPS", "v3", "must be auto (v1 where it works, else v2), v1, v2 or off"),
]


def no_file(tmp_path):
    """A path where no settings file is."""
    return tmp_path / "nowhere" / "packsolve.toml"


@pytest.mark.parametrize(("variable", "value", "says"), BAD, ids=[f"{v}={x}" for v, x, _ in BAD])
def test_each_bad_value_is_one_line_naming_the_variable_and_what_would_work(tmp_path, variable, value, says):
    with pytest.raises(SettingsError) as caught:
        resolve(environ={variable: value}, path=no_file(tmp_path))
    message = str(caught.value)
    assert message.count("\n") == 0 and message.startswith(f"{variable}={value!r}") and says in message


def test_several_bad_values_are_one_line_each_and_a_secret_is_never_shown(tmp_path):
    environ = {"PACKSOLVE_LEASE_TTL": "x", "PACKSOLVE_CONCURRENCY": "-1", "PACKSOLVE_TASK_KEY": "s3cret"}
    environ["PACKSOLVE_BROKER_URL"] = "redis//:pw@host"
    with pytest.raises(SettingsError) as caught:
        resolve(environ=environ, path=no_file(tmp_path))
    lines = str(caught.value).splitlines()
    named = ["PACKSOLVE_BROKER_URL", "PACKSOLVE_LEASE_TTL", "PACKSOLVE_CONCURRENCY"]
    assert len(lines) == 3 and [line.split("=")[0] for line in lines] == named


def test_a_bad_value_in_the_file_names_the_file_and_its_key(tmp_path):
    path = tmp_path / "packsolve.toml"
    path.write_text('[settings]\nlease_ttl = "later"\n')
    with pytest.raises(SettingsError) as caught:
        resolve(environ={}, path=path)
    assert str(caught.value).startswith(f"{path} [settings] lease_ttl='later' must be a number of seconds")


def test_an_unknown_key_in_the_file_is_an_error_listing_the_settings(tmp_path):
    path = tmp_path / "packsolve.toml"
    path.write_text("[settings]\nlease_tll = 4\n")
    with pytest.raises(SettingsError, match="has no setting 'lease_tll'; the settings are .*lease_ttl"):
        resolve(environ={}, path=path)


def test_a_flag_wins_over_the_environment_which_wins_over_the_file_which_wins_over_the_default(tmp_path):
    path = tmp_path / "packsolve.toml"
    path.write_text(
        '[settings]\nqueue = "from-file"\nlease_ttl = 7\nvisibility_timeout = 600\n'
        'task_keys_old = ["a", "b"]\n\n[solvers.mine]\nkind = "coins"\ncommand = ["./x"]\n'
    )
    environ = {"PACKSOLVE_QUEUE": "from-env", "PACKSOLVE_LEASE_TTL": "9"}
    got = resolve({"queue": "from-flag", "broker_url": None}, environ=environ, path=path)
    assert (got.queue, got.source("queue")) == ("from-flag", FLAG)
    assert (got.lease_ttl, got.source("lease_ttl")) == (9.0, ENVIRONMENT)
    assert (got.visibility_timeout, got.source("visibility_timeout")) == (600, CONFIG_FILE)
    assert got.task_keys_old == ("a", "b")
    assert (got.broker_url, got.source("broker_url")) == ("redis://localhost:6379/0", DEFAULT)
    assert (got.concurrency, got.source("concurrency")) == (None, DEFAULT)
    assert resolve(environ={}, path=no_file(tmp_path)).lease_ttl == DEFAULT_LEASE_TTL_S


def test_a_flag_given_as_text_goes_through_the_same_parser_and_names_the_flag(tmp_path):
    with pytest.raises(SettingsError, match=r"^--broker-url='redis//h' is not a broker URL"):
        resolve({"broker_url": "redis//h"}, environ={}, path=no_file(tmp_path))


def test_current_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PACKSOLVE_QUEUE", "one")
    assert current().queue == "one"
    monkeypatch.setenv("PACKSOLVE_QUEUE", "two")
    assert current().queue == "two"


def test_config_prints_each_setting_and_its_source_with_passwords_hidden(tmp_path):
    (tmp_path / "packsolve.toml").write_text('[settings]\nqueue = "nightly"\n')
    env = {
        "PACKSOLVE_DATABASE_URL": "postgresql://alice:pg-s3cret@db/results",
        "PACKSOLVE_TASK_KEY": "key-s3cret",
        "PACKSOLVE_LEASE_TTL": "",
        "PACKSOLVE_QUEUE": "",
    }
    url = "redis://:redis-s3cret@broker:6379/0"
    res = invoke("config", "--format", "json", "--broker-url", url, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    shown = json.loads(res.stdout)  # exactly one JSON document
    assert "s3cret" not in res.stdout + res.stderr
    assert shown["database_url"] == {"value": "postgresql://alice:***@db/results", "source": "environment"}
    assert shown["broker_url"] == {"value": "redis://:***@broker:6379/0", "source": "flag"}
    assert shown["task_key"] == {"value": "***", "source": "environment"}
    assert shown["queue"] == {"value": "nightly", "source": "file"}
    assert shown["lease_ttl"] == {"value": 30.0, "source": "default"}
    table = invoke("config", env=env, cwd=tmp_path)
    assert table.returncode == 0 and "s3cret" not in table.stdout
    assert "nightly" in table.stdout and "postgresql://alice:***@db/results" in table.stdout


def test_config_refuses_a_bad_value_in_one_line_with_the_usage_exit_code(tmp_path):
    res = invoke("config", env={"PACKSOLVE_LEASE_TTL": "abc"}, cwd=tmp_path)
    errors = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(errors) == 1 and "Traceback" not in res.stderr
    assert "PACKSOLVE_LEASE_TTL='abc' must be a number of seconds above 0" in errors[0]


def test_a_worker_given_a_bad_lease_ttl_refuses_to_start_in_one_line(tmp_path):
    env = {"PACKSOLVE_LEASE_TTL": "30s", "PACKSOLVE_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    res = run_cli("worker", env=env, cwd=tmp_path, timeout=60)
    errors = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "PACKSOLVE_LEASE_TTL='30s' must be a number of seconds above 0" in errors[0]
    assert not (tmp_path / "a.db").exists()  # refused before it touched anything


def test_remote_control_is_off_unless_the_environment_or_the_file_turns_it_on(tmp_path):
    from packsolve.queue.app import make_app

    assert resolve(environ={}, path=no_file(tmp_path)).worker_remote_control is False
    assert resolve(
        environ={"PACKSOLVE_WORKER_REMOTE_CONTROL": "1"}, path=no_file(tmp_path)
    ).worker_remote_control
    path = tmp_path / "packsolve.toml"
    path.write_text("[settings]\nworker_remote_control = true\n")
    on = resolve(environ={}, path=path)
    assert on.worker_remote_control and on.source("worker_remote_control") == CONFIG_FILE
    off = resolve(environ={"PACKSOLVE_WORKER_REMOTE_CONTROL": "off"}, path=path)
    assert make_app(settings=off).conf.worker_enable_remote_control is False
    assert make_app(settings=on).conf.worker_enable_remote_control is True


WAITS = {
    "db_patience": 120.0,
    "send_settle": 5.0,
    "result_settle": 1.0,
    "scheduler_patience": 10.0,
    "unsent_patience": 30.0,
    "refusal_patience": 5.0,
}


def test_every_wait_is_a_setting_with_its_old_default_its_variable_and_a_checked_value(tmp_path):
    """The patience and settle times are settings (tests set them to a second): defaults as the constants
    they were, each from PACKSOLVE_ + its name, shown by `packsolve config`, a bad one refused in a line."""
    defaults = resolve(environ={}, path=no_file(tmp_path))
    assert {name: getattr(defaults, name) for name in WAITS} == WAITS
    short = resolve(environ={f"PACKSOLVE_{name.upper()}": "1" for name in WAITS}, path=no_file(tmp_path))
    assert {(getattr(short, name), short.source(name)) for name in WAITS} == {(1.0, ENVIRONMENT)}
    shown = defaults.shown()
    assert {name: shown[name]["value"] for name in WAITS} == WAITS
    with pytest.raises(SettingsError, match=r"PACKSOLVE_SEND_SETTLE='0' must be a number of seconds above 0"):
        resolve(environ={"PACKSOLVE_SEND_SETTLE": "0"}, path=no_file(tmp_path))


def test_a_cluster_carries_its_settings_to_its_celery_app_and_to_what_it_sends(tmp_path):
    """Cluster.of(settings): the queue, visibility timeout and task key are the settings'; a task's Celery
    hard limit leaves room for two of the db_patience waits; nothing rides in the app's configuration."""
    from packsolve.execution import Limits
    from packsolve.queue.app import Cluster
    from packsolve.queue.protocol import CELERY_HARD_MARGIN_S, PREPARE_MARGIN_S, celery_limits

    settings = resolve(
        environ={
            "PACKSOLVE_QUEUE": "nightly",
            "PACKSOLVE_VISIBILITY_TIMEOUT": "600",
            "PACKSOLVE_TASK_KEY": "k",
            "PACKSOLVE_DB_PATIENCE": "2",
        },
        path=no_file(tmp_path),
    )
    cluster = Cluster.of(settings)
    assert (cluster.queue, cluster.visibility_timeout, cluster.task_key) == ("nightly", 600, b"k")
    assert cluster.app.conf.task_default_queue == "nightly"
    assert cluster.app.conf.broker_transport_options == {"visibility_timeout": 600}
    assert "packsolve_settings" not in cluster.app.conf
    hard = Limits(10.0).hard_time()
    assert hard is not None
    assert celery_limits(Limits(10.0), 1, settings.db_patience) == (None, hard + CELERY_HARD_MARGIN_S + 4)
    # A task whose heuristic may first build its tables on the worker (execution.preparing) gets room for it.
    assert celery_limits(Limits(10.0), 1, settings.db_patience, prepares=True) == (
        None,
        hard + CELERY_HARD_MARGIN_S + PREPARE_MARGIN_S + 4,
    )
    moved = Cluster.of(settings, broker="redis://elsewhere:6379/3")
    assert moved.settings.broker_url == "redis://elsewhere:6379/3" and moved.queue == "nightly"
