"""`packsolve check PACK`: what solve or submit would do with a pack, before the night; nothing is created."""

from __future__ import annotations

from typing import Any

import click

from packsolve.bounds import COUNT
from packsolve.cli.group import Invocation
from packsolve.cli.options import (
    cpus_per_attempt_option,
    emit,
    format_option,
    run_options,
    run_request,
    with_database,
    within,
)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@run_options
@click.option(
    "--jobs", "-j", type=int, default=None, help="Processes solve would use [default: one per core]."
)
@cpus_per_attempt_option
@click.option("--chunk-size", type=within(COUNT), default=0, help="Levels per task, as submit's (0: chosen).")
@format_option
@with_database("read")
def check(
    invocation: Invocation, paths: tuple[str, ...], jobs: int | None, chunk_size: int, fmt: str, **opts: Any
) -> None:
    """Read PATHS as solve and submit would and say what they would do; create nothing.

    Levels per kind with the heuristic each would run, files skipped and why,
    duplicates by name, levels that cannot be read with their messages (an
    oversized file names the option that lifts the cap), the limits, and how
    submit would cut the run into tasks. Exits 2 where solve would refuse.
    """
    from packsolve.check import as_json, check_pack
    from packsolve.db.migrate import current_revision
    from packsolve.db.session import get_engine
    from packsolve.errors import NoDatabase
    from packsolve.request import LocalPool

    request = run_request(opts)
    settings = invocation.settings
    pool = LocalPool.checked(jobs, settings.cpus_per_attempt)  # refused as solve would refuse it
    engine: Any
    try:
        # Past runs, if there is a database, size tasks as submit would; nothing is migrated or created
        # (not the Invocation's engine: an old database is read as it is, and none is no error).
        engine = get_engine(settings.database_url, migrate=False, create=False)
        if current_revision(engine) is None:
            engine = None  # a database with no schema yet: no history either
    except NoDatabase:
        engine = None
    result = check_pack(engine, paths, request, pool, chunk_size, settings.visibility_timeout)
    emit(as_json(result), fmt, render_check)


def render_check(c: dict[str, Any]) -> Any:
    """Return a rich renderable of a check: levels and heuristics per kind, then each thing left out."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from packsolve.report.text import short_name, visible

    out: list[Any] = [Text(f"{c['levels']} level(s) would run (nothing was created)", style="bold")]
    t = Table("kind", "levels", "heuristic", title_justify="left")
    for kind, entry in c["kinds"].items():
        t.add_row(
            kind,
            str(entry["levels"]),
            ", ".join(
                f"{h} ({n})" if len(entry["heuristics"]) > 1 else h for h, n in entry["heuristics"].items()
            ),
        )
    out.append(t)
    lists = (
        (
            "file(s) skipped, no level in them",
            [f"{short_name(s['path'], 56)}: {visible(s['reason'])}" for s in c["skipped_files"]],
        ),
        (
            "duplicate level(s), each runs once",
            [
                f"{short_name(d['level'], 36)}: same level as {short_name(d['same_as'], 36)}"
                for d in c["duplicates"]
            ],
        ),
        ("level(s) of other kinds left out (--kind)", [f"{k}: {n}" for k, n in c["other_kinds"].items()]),
    )
    for title, items in lists:
        if items:
            out.append(Text(f"{len(items)} {title}:"))
            out += [Text(f"  {item}", style="dim") for item in items]
    out += _problems(c)
    out += _plan_lines(c)
    return Group(*out)


def _problems(c: dict[str, Any]) -> list[Any]:
    """Return the lines of a check about what would go wrong: declared programs, notes, invalid levels."""
    from rich.text import Text

    from packsolve.report.text import short_name, visible

    out: list[Any] = []
    for name, program in c["solvers"].items():
        out.append(Text(f"{name}: declared program `{' '.join(program['command'])}` ({program['kind']})"))
        if program["problem"]:
            out.append(Text(f"  {program['problem']}: every level it solves would be an error", style="red"))
    out += [Text(f"note: {note}", style="yellow") for note in c["notes"]]
    for p in c.get("prepare", []):
        if p["ready"]:
            out.append(Text(f"{p['what']}: built on this machine ({p['where']})"))
        else:
            out.append(
                Text(
                    f"{p['what']}: not built on this machine yet: solve, or a worker, builds them once "
                    f"before the attempts, outside their limits ({p['cost']}; kept in {p['where']})",
                    style="yellow",
                )
            )
    if c["invalid"]:
        out.append(Text(f"{len(c['invalid'])} level(s) cannot be read and would be recorded as invalid:"))
        for bad in c["invalid"]:
            message = bad["message"]
            if message.startswith(f"{bad['level']}: "):
                message = message[len(bad["level"]) + 2 :]
            out.append(Text(f"  {short_name(bad['level'], 36)}: {visible(message)}", style="red"))
    return out


def _plan_lines(c: dict[str, Any]) -> list[Any]:
    """Return the lines of a check about how the run would go: its limits, locally and distributed."""
    from rich.text import Text

    limits = c["limits"]
    relative = limits.get("relative") or {}
    parts = [f"{limits['time_limit']:g} s per level" if limits["time_limit"] else "no time limit"]
    for name, what in (("time_limit", "wall"), ("cpu_limit", "CPU")):
        if name in relative:  # each level's own, read from the database when the run is made
            if name == "time_limit":
                parts = []
            parts.append(f"{relative[name]} ({what}: N times each level's expected time from history)")
    if limits.get("cpu_limit"):
        parts.append(
            f"{limits['cpu_limit']:g} s CPU per level (wall backstop {limits['wall_backstop']:g} s)"
            if limits.get("wall_backstop")
            else f"{limits['cpu_limit']:g} s CPU per level"
        )
    if limits["node_limit"]:
        parts.append(f"{limits['node_limit']} nodes")
    if limits["memory_limit_mb"]:
        parts.append(f"{limits['memory_limit_mb']} MB")
    local = c["local"]
    solve = f"solve: {local['processes']} process(es)"
    if local.get("cpus_per_attempt"):
        solve += f", each pinned to {local['cpus_per_attempt']} CPU(s) of its own"
    out = [Text("limits: " + ", ".join(parts)), Text(solve)]
    d = c["distributed"]
    source = "past runs' times" if d["from_history"] else "the levels' sizes (no database here yet)"
    if d["problem"]:
        out.append(Text(f"submit: would refuse: {d['problem']}", style="red"))
    else:
        out.append(
            Text(f"submit: {d['tasks']} task(s) of up to {d['chunk_size']} level(s), sized from {source}")
        )
    return out
