"""`--time-limit Nx` / `Nx,FLOOR`: parsing, the expected time, and bad values refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from packsolve.cli import cli
from packsolve.execution import Limits
from packsolve.execution.relative import (
    DEFAULT_FLOOR_S,
    Relative,
    RelativeLimits,
    expected_seconds,
    parse_relative,
    spread,
)
from packsolve.request import GivenOptions, RerunRequest, request_from_options

PACK = str(Path(__file__).resolve().parents[2] / "examples" / "packs" / "coins")


@pytest.mark.parametrize(
    "text, factor, floor",
    [
        ("3x", 3.0, DEFAULT_FLOOR_S),
        ("1.5x", 1.5, DEFAULT_FLOOR_S),
        (" 2X ", 2.0, DEFAULT_FLOOR_S),
        ("3x,10s", 3.0, 10.0),
        ("3x, 500ms", 3.0, 0.5),
        ("0.5x,2", 0.5, 2.0),
        ("3x,1m", 3.0, 60.0),
    ],
)
def test_a_relative_limit_is_read_with_its_floor(text, factor, floor):
    assert parse_relative(text) == Relative(factor, floor)


@pytest.mark.parametrize("text", ["3", "2s", "500ms", "0", "1h"])
def test_a_duration_is_not_a_relative_limit(text):
    assert parse_relative(text) is None


@pytest.mark.parametrize(
    "text, said",
    [
        ("0x", "factor must be a number > 0"),
        ("-2x", "factor must be a number > 0"),
        ("nanx", "factor must be a number > 0"),
        ("infx", "factor must be a number > 0"),
        ("x", "factor as a number"),
        ("abcx", "factor as a number"),
        ("3x,", "floor as a duration"),
        ("3x,abc", "floor as a duration"),
        ("3x,0s", "floor must be a duration > 0"),
        ("3x,-1s", "floor must be a duration > 0"),
        ("3x,nan", "floor as a duration"),
        ("10s,3x", "follows a factor"),
    ],
)
def test_a_bad_relative_limit_says_what_would_work(text, said):
    with pytest.raises(ValueError, match=said):
        parse_relative(text)


def test_the_limit_is_the_factor_times_the_expected_time_never_below_the_floor():
    assert Relative(3.0).limit(0.1) == 1.0  # the default floor
    assert Relative(3.0).limit(2.0) == 6.0
    assert Relative(3.0, 10.0).limit(2.0) == 10.0
    assert Relative(1e9).limit(1e9) == 2**31 - 1  # no more than the database stores


def test_the_expected_time_is_the_median_decided_else_the_largest_limit_timed_out_at():
    assert expected_seconds([1.0, 5.0, 2.0], [30.0]) == 2.0
    assert expected_seconds([1.0, 2.0], []) == 1.5
    assert expected_seconds([], [0.5, 2.0]) == 2.0
    assert expected_seconds([], []) is None


def test_relative_limits_travel_through_a_runs_options_and_read_back():
    given = RelativeLimits(Relative(3.0, 10.0), Relative(1.5))
    assert given.to_options() == {"time_limit": "3x,10s", "cpu_limit": "1.5x,1s"}
    assert RelativeLimits.from_options(given.to_options()) == given
    assert not RelativeLimits.from_options(None) and not RelativeLimits.from_options({"time_limit": "9"})
    assert spread(Relative(3.0), [1.0, 42.0]) == "3x expected, 1–42 s"
    assert spread(Relative(3.0), [2.0, 2.0]) == "3x expected, 2 s"


def test_a_request_keeps_the_relative_limit_apart_from_its_absolute_limits():
    request = request_from_options(GivenOptions(time_limit=Relative(3.0), cpu_limit=5.0))
    assert request.limits == Limits(None, None, None, 5.0)
    assert request.relative == RelativeLimits(Relative(3.0), None)


def test_a_rerun_takes_the_parents_relative_limit_unless_a_limit_is_given():
    parent = RelativeLimits(Relative(3.0))
    assert RerunRequest("1").relative(parent) == parent
    assert not RerunRequest("1", time_limit=10.0).relative(parent)  # a duration replaces the parent's Nx
    assert RerunRequest("1", time_limit=Relative(2.0)).relative(RelativeLimits()).time == Relative(2.0)
    assert RerunRequest("1", time_limit=Relative(2.0)).limits(Limits(7.0)).time_limit is None


def test_widest_limits_are_what_a_task_of_several_attempts_may_take():
    assert Limits.widest([Limits(1.0), Limits(3.0), Limits(2.0)]) == Limits(3.0)
    assert Limits.widest([Limits(1.0), Limits(None)]).time_limit is None
    assert Limits.widest([Limits(None, cpu_limit=1.0), Limits(None, cpu_limit=4.0)]).cpu_limit == 4.0
    assert Limits(5.0, 10, 20, 6.0).with_own(1.5, None) == Limits(1.5, 10, 20, 6.0)


@pytest.mark.parametrize("given", ["3x", "1.5x,10s"])
def test_check_says_a_relative_limit_comes_from_history(given, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["check", PACK, "--time-limit", given, "--format", "json"])
    assert res.exit_code == 0, res.output
    limits = json.loads(res.stdout)["limits"]
    assert limits["relative"]["time_limit"] == str(parse_relative(given).spelled())
    assert limits["time_limit"] is None


@pytest.mark.parametrize("option", ["--time-limit", "--cpu-limit"])
def test_a_bad_relative_option_is_a_one_line_usage_error(option, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["check", PACK, option, "0x"])
    assert res.exit_code == 2
    assert "factor must be a number > 0" in res.output and "Traceback" not in res.output


def test_the_dashboards_rerun_form_takes_a_relative_limit_and_refuses_a_bad_one():
    from packsolve.errors import OptionError
    from packsolve.web.actions import rerun_request

    request, argv = rerun_request(7, {"status": "timeout", "time_limit": "2x", "cpu_limit": "3x,5s"})
    assert request.time_limit == Relative(2.0) and request.cpu_limit == Relative(3.0, 5.0)
    assert "--time-limit=2x" in argv and "--cpu-limit=3x,5s" in argv
    with pytest.raises(OptionError, match="factor must be a number > 0"):
        rerun_request(7, {"time_limit": "0x"})
