"""The CLI maps a user's error once, for every command: one line on stderr, the exit code of its class."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from packsolve import errors
from packsolve.cli import COMMANDS, cli
from packsolve.cli.group import PacksolveGroup
from packsolve.cli.options import database_option


def _group_raising(exc: Exception) -> click.Group:
    group = PacksolveGroup()

    @group.command()
    @database_option
    def fail() -> None:
        raise exc

    return group


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (errors.UsageError("no such thing; give another"), 2),
        (errors.RunNotFound("no run 7; `packsolve runs` lists them"), 2),
        (errors.OptionError("--top", "must be at least 1"), 2),
        (errors.ServiceError("the broker is away"), 1),
        (errors.BrokerError("the broker is away"), 1),
        (errors.DatabaseError("the database is away"), 1),
    ],
)
def test_a_user_error_is_one_line_on_stderr_with_the_exit_code_of_its_class(exc: Exception, code: int):
    res = CliRunner().invoke(_group_raising(exc), ["fail"])
    assert res.exit_code == code
    assert res.stderr == f"Error: {exc}\n" and res.stdout == ""


def test_every_error_class_has_the_exit_code_of_usage_or_service():
    classes = [
        c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.PacksolveError)
    ]
    for c in classes:
        if c is not errors.PacksolveError:
            assert issubclass(c, errors.UsageError | errors.ServiceError), c
            assert c.exit_code == (2 if issubclass(c, errors.UsageError) else 1), c


def test_an_unreachable_database_is_one_line_naming_it_as_given():
    from sqlalchemy import create_engine

    def connect() -> None:
        create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none").connect()

    group = PacksolveGroup()
    group.command("fail")(database_option(connect))
    res = CliRunner().invoke(
        group, ["fail", "--database-url", "postgresql+psycopg://nobody@127.0.0.1:1/none"]
    )
    assert res.exit_code == 1
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith(
        "Error: database error at postgresql+psycopg://nobody@127.0.0.1:1/none"
    )
    assert line.endswith("(is it running, and is the URL right?)")


def test_a_bug_keeps_its_traceback():
    res = CliRunner().invoke(_group_raising(ZeroDivisionError("bug")), ["fail"])
    assert isinstance(res.exception, ZeroDivisionError)


def test_the_packsolve_group_is_the_one_every_command_runs_in():
    assert isinstance(cli, PacksolveGroup)
    assert all(cli.commands[c.name] is c for c in COMMANDS if c.name)
