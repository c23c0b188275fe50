"""One Invocation per command line: its settings resolved once as the command starts, its engine opened
once, as the command declared, only when used."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner

from packsolve.cli.group import Invocation, PacksolveGroup
from packsolve.cli.options import with_database


def _group(seen: list[Invocation], use_engine: bool) -> click.Group:
    group = PacksolveGroup()

    @group.command()
    @with_database("create")
    def make(invocation: Invocation) -> None:
        seen.append(invocation)
        if use_engine:
            assert invocation.engine is invocation.engine  # opened once

    return group


def test_a_command_receives_the_command_lines_one_invocation_with_its_flags_resolved(tmp_path: Path):
    seen: list[Invocation] = []
    url = f"sqlite:///{tmp_path / 'a.db'}"
    res = CliRunner().invoke(_group(seen, use_engine=True), ["make", "--database-url", url])
    assert res.exit_code == 0, res.output
    (invocation,) = seen
    assert invocation.resolved is not None and invocation.settings.database_url == url
    assert invocation.access == "create" and (tmp_path / "a.db").is_file()


def test_a_command_that_does_not_use_its_database_opens_none(tmp_path: Path):
    seen: list[Invocation] = []
    res = CliRunner().invoke(
        _group(seen, use_engine=False), ["make", "--database-url", f"sqlite:///{tmp_path / 'a.db'}"]
    )
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "a.db").exists()


def test_a_bad_setting_stops_the_command_before_it_starts(tmp_path: Path):
    seen: list[Invocation] = []
    res = CliRunner().invoke(_group(seen, use_engine=False), ["make"], env={"PACKSOLVE_DB_PATIENCE": "-1"})
    assert res.exit_code == 2 and seen == []
    assert res.stderr.startswith("Error: PACKSOLVE_DB_PATIENCE='-1' must be a number of seconds above 0")
