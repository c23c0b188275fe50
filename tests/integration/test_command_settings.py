"""Every command line resolves one Settings, its own flags first (flag > environment > the [settings] of
./packsolve.toml > default), and hands it down: nothing below a command reads the settings on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from packsolve import settings
from packsolve.cli import cli
from tests.support.report_runs import Planned, build_run, strip_level

# Commands that only read the database (never create one), with what they need besides it. A URL that
# names no database is refused in one line naming the file it looked for.
READERS = [
    ["status"],
    ["status", "--wait"],
    ["export", "1", "--output", "-"],
    ["runs"],
    ["runs", "label", "1", "monday"],
    ["runs", "delete", "1", "--yes"],
    ["report", "summary"],
    ["report", "failures"],
    ["report", "hardest"],
    ["report", "compare", "1", "2"],
    ["report", "curve"],
    ["report", "matrix", "1", "2"],
    ["cancel", "1"],
    ["resume", "1"],
    ["rerun", "1"],
]


def invoke(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run the CLI in this process; return (exit code, stdout, stderr)."""
    res = CliRunner().invoke(cli, args, env=env)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def here(clean_cwd: Path) -> Path:
    """An empty working directory of the test's own: no packsolve.toml but the test's."""
    return clean_cwd


@pytest.mark.parametrize("args", READERS, ids=[" ".join(a) for a in READERS])
def test_a_database_url_flag_wins_over_the_environment_in_every_command(here, args):
    flag, env = here / "flag.db", here / "env.db"
    code, _, err = invoke(
        [*args, "--database-url", f"sqlite:///{flag}"], env={"PACKSOLVE_DATABASE_URL": f"sqlite:///{env}"}
    )
    assert code == 2 and err.startswith(f"Error: no database at {flag}:") and err.count("\n") == 1, err
    assert not flag.exists() and not env.exists()


def test_a_database_url_given_to_the_runs_group_holds_for_its_subcommand(here):
    url = f"sqlite:///{here / 'results.db'}"
    build_run(url, [Planned(strip_level(0), "solved", 0.1)])
    code, out, err = invoke(["runs", "--database-url", url, "label", "1", "monday"])
    assert code == 0, err
    code, out, err = invoke(["runs", "--database-url", url, "--format", "json"])
    assert code == 0 and json.loads(out)[0]["label"] == "monday", err


def test_the_settings_of_packsolve_toml_reach_status_report_and_runs(here):
    url = f"sqlite:///{here.parent / 'elsewhere.db'}"
    run = build_run(url, [Planned(strip_level(0), "solved", 0.1), Planned(strip_level(1), "timeout", 10)])
    (here / "packsolve.toml").write_text(f'[settings]\ndatabase_url = "{url}"\n')
    code, out, err = invoke(["status", "--format", "json"])
    assert code == 0 and json.loads(out)["run"] == run, err
    code, out, err = invoke(["report", "summary", "--format", "json"])
    assert code == 0 and json.loads(out)["counts"]["solved"] == 1, err
    code, out, err = invoke(["runs", "--format", "json"])
    assert code == 0 and [r["run"] for r in json.loads(out)] == [run], err
    assert not (here / "packsolve.db").exists()  # the default database was never made


def test_below_the_command_nothing_reads_the_settings_on_its_own(here, monkeypatch):
    url = f"sqlite:///{here / 'results.db'}"
    run = build_run(url, [Planned(strip_level(0), "solved", 0.1)])

    def behind_the_commands_back() -> settings.Settings:
        raise AssertionError("settings.current() read below a command that has its Settings")

    monkeypatch.setattr(settings, "current", behind_the_commands_back)
    env = {"PACKSOLVE_DATABASE_URL": url}  # from the environment, through the command's Settings
    for args in (
        ["status", "--format", "json"],
        ["report", "summary", "--format", "json"],
        ["report", "failures", "--format", "json"],
        ["runs", "--format", "json"],
        ["export", str(run), "--format", "json", "--output", "-"],
        ["config"],
        ["db", "upgrade"],
        ["cancel", str(run)],
    ):
        code, _, err = invoke(args, env=env)
        assert code == 0, (args, err)


def test_one_bad_setting_stops_every_command_in_one_line_before_it_touches_anything(here):
    env = {"PACKSOLVE_LEASE_TTL": "soon", "PACKSOLVE_DATABASE_URL": f"sqlite:///{here / 'a.db'}"}
    for args in [
        *READERS,
        ["config"],
        ["db", "upgrade"],
        ["solve", "pack"],
        ["submit", "pack"],
        ["check", "pack"],
    ]:
        code, out, err = invoke(args, env=env)
        assert code == 2 and out == "", (args, out, err)
        assert (
            err
            == "Error: PACKSOLVE_LEASE_TTL='soon' must be a number of seconds above 0, up to "
            + (err.split("up to ", 1)[1])
            and err.count("\n") == 1
        ), (args, err)
    assert not (here / "a.db").exists()


def test_every_command_with_a_setting_flag_receives_the_resolved_settings():
    """A command with --database-url (or another flag that is a setting) must take its Settings from the
    command line's Invocation (@pass_invocation, or invocation_of for a group that runs on its own), never
    read its own."""
    from packsolve.cli.group import pass_invocation, setting_flag

    passes = pass_invocation(lambda: None).__code__
    found = []

    def walk(command, path):
        flags = [p for p in command.params if p.callback is setting_flag]
        if flags:
            found.append(path)
            assert _receives_settings(command.callback, passes), (
                f"{path} has {flags[0].opts[0]} but does not receive the Settings"
            )
            assert all(not p.expose_value for p in flags), path  # the value is the Settings', not the flag's
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(cli, "packsolve")
    assert "packsolve status" in found and "packsolve report summary" in found and "packsolve worker" in found


def _receives_settings(callback, passes) -> bool:
    """Whether callback, or a function it wraps, is pass_invocation's wrapper or calls invocation_of."""
    while callback is not None:
        if callback.__code__ is passes or "invocation_of" in callback.__code__.co_names:
            return True
        callback = getattr(callback, "__wrapped__", None)
    return False
