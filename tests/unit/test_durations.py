"""--time-limit takes a duration: seconds as a number, or with a unit (2s, 500ms, 1m, 1h)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from packsolve.cli import cli

PACK = str(Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins")


def check_limit(*args: str) -> object:
    res = CliRunner().invoke(cli, ["check", PACK, *args, "--format", "json"], catch_exceptions=False)
    return res


@pytest.mark.parametrize(
    "given, seconds", [("2s", 2.0), ("500ms", 0.5), ("1m", 60.0), ("1h", 3600.0), ("1.5", 1.5), ("0", 0.0)]
)
def test_a_time_limit_with_a_unit_is_read_as_seconds(given, seconds, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = check_limit("--time-limit", given)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["limits"]["time_limit"] == (seconds or None)


@pytest.mark.parametrize("given", ["2y", "s", "1m30", "nan", "2 days", "x2"])
def test_a_time_limit_that_is_no_duration_says_what_would_work(given, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = check_limit("--time-limit", given)
    assert res.exit_code == 2
    assert "not a valid float" not in res.output and "500ms" in res.output


def test_a_negative_time_limit_with_a_unit_meets_the_range_check(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = check_limit("--time-limit", "-2s")
    assert res.exit_code == 2 and "--time-limit" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    "args",
    [
        ["scheduler", "--once", "--interval", "nan"],
        ["scheduler", "--once", "--grace", "inf"],
        ["status", "--interval", "nan"],
        ["solve", PACK, "--progress-every", "nan"],
        ["check", PACK, "--time-limit", "-inf"],
    ],
)
def test_every_duration_option_refuses_nan_and_infinities_in_one_line(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, [*args, "--database-url", f"sqlite:///{tmp_path}/db.sqlite"])
    assert res.exit_code == 2, res.output
    error = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and args[-2] in error[0] and "500ms" in error[0], res.output
