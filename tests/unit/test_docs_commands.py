"""The README and docs/night.md stay true when tried literally: every packsolve command in them parses,
their level examples are valid levels, and --help says what they say."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from pathlib import Path

import click
import pytest

from packsolve.cli import cli
from packsolve.levels import make_level
from packsolve.puzzles.knights_tour.kind import read_knights
from packsolve.puzzles.sliding.board import read_slide

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
NIGHT = (ROOT / "docs" / "night.md").read_text()


def blocks(text: str, lang: str | None = None) -> list[str]:
    """Return the fenced code blocks of a markdown text (of one language, if given)."""
    pattern = r"```(\w*)\n(.*?)```"
    return [body for tag, body in re.findall(pattern, text, re.S) if lang is None or tag == lang]


def commands(text: str) -> list[list[str]]:
    """Return every packsolve command in the text's sh blocks and `$ ` lines, as argument lists."""
    found = []
    lines = [line for body in blocks(text, "sh") for line in body.splitlines()]
    lines += [line for body in blocks(text, "") for line in body.splitlines() if line.startswith("$ ")]
    for line in lines:
        line = line.strip().removeprefix("$ ")
        # Keep the command only: drop comments, redirections, pipes and what follows &&.
        line = re.split(r"\s+#|\s+2?>|\s+\||\s+&&|\s+&$|;", line)[0].strip()
        if line.startswith("packsolve "):
            found.append(shlex.split(line)[1:])
    return found


def _rest(ctx: click.Context) -> list[str]:
    # click 8 keeps a group's subcommand apart in protected_args (deprecated, folded into args in 9).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*getattr(ctx, "protected_args", []), *ctx.args]


def parse(args: list[str]) -> None:
    """Parse args as the CLI would (options, types, arguments) without running anything."""
    group: click.Group = cli
    ctx = group.make_context("packsolve", list(args))
    while True:
        name, command, rest = group.resolve_command(ctx, _rest(ctx))
        assert command is not None, args
        ctx = command.make_context(name, rest, parent=ctx)
        if not isinstance(command, click.Group) or not _rest(ctx):
            return
        group = command


DOC_COMMANDS = [*commands(README), *commands(NIGHT)]


def test_the_docs_show_the_commands_of_a_night():
    names = {args[0] for args in DOC_COMMANDS}
    assert {"check", "solve", "submit", "status", "report", "rerun", "resume", "cancel", "runs"} <= names
    assert len(DOC_COMMANDS) > 40


@pytest.mark.parametrize("args", DOC_COMMANDS, ids=lambda a: " ".join(a)[:60])
def test_every_command_in_the_readme_and_the_night_parses(args):
    parse(args)


def test_the_json_level_examples_of_the_readme_are_valid_levels():
    [examples] = [b for b in blocks(README, "json") if '"kind"' in b]
    levels = [make_level(f"readme:{i}", json.loads(line)) for i, line in enumerate(examples.splitlines(), 1)]
    assert len(levels) == 4 and [lv.error for lv in levels] == [None] * 4
    assert {lv.kind for lv in levels} == {"onestroke", "sudoku", "sliding", "knights_tour"}


def test_the_native_format_examples_of_the_readme_read_as_they_say():
    slide = re.search(r"`\.slide`: .*?: (`[^`]+`), (`[^`]+`),\s+(`[^`]+`)", README, re.S)
    assert slide, "the README gives .slide examples"
    lines = [g.strip("`") for g in slide.groups()]
    read = list(read_slide("\n".join(lines)))
    assert [tiles for _, tiles in read] == [
        {"tiles": [[1, 2, 5], [3, 4, 0], [6, 7, 8]]},
        {"tiles": [[3, 0, 2], [4, 1, 7], [6, 8, 5]], "id": "writeup"},
        {"tiles": [[3, 0, 2], [4, 1, 7], [6, 8, 5]], "id": "writeup", "optimal": 7},
    ]
    knights = re.search(r"`\.knights`: .*?: `([^`]+)`, `([^`]+)`", README, re.S)
    assert knights, "the README gives .knights examples"
    read_k = [level for _, level in read_knights("\n".join(knights.groups()))]
    assert read_k == [
        {"rows": 8, "cols": 8, "start": [2, 4]},
        {"rows": 6, "cols": 6, "start": [0, 0], "closed": True},
    ]


def test_help_tells_what_the_readme_tells():
    from click.testing import CliRunner

    runner = CliRunner()
    for args, words in (
        (["--help"], ["check", "resume", "runs", "cancel"]),
        (["solve", "--help"], ["--skip-solved", "--progress-every", "--move-label", "0: no limit"]),
        (["report", "--help"], ["failures"]),
        (["report", "summary", "--help"], ["--with-reruns"]),
        (["report", "compare", "--help"], ["--with-missing"]),
        (["export", "--help"], ["json", ".csv"]),
        (["runs", "--help"], ["delete", "label"]),
        (["rerun", "--help"], ["--message"]),
    ):
        out = runner.invoke(cli, args).output
        for word in words:
            assert word in out, (args, word)
