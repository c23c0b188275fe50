"""Commands about the puzzle kinds: list them and their sources, check one's contract, generate levels."""

from __future__ import annotations

from typing import Any

import click

from packsolve.cli.options import emit, err_console, format_option, handle_errors


@click.command()
@click.option(
    "--solvers",
    "solvers_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML file of external solver programs to list too [default: ./packsolve.toml if there is one].",
)
@format_option
@handle_errors
def kinds(solvers_file: str | None, fmt: str) -> None:
    """List the puzzle kinds: heuristics, default, formats, and where each comes from.

    Plug-in kinds come from installed distributions (entry-point group packsolve.kinds);
    one that cannot be loaded is listed with the reason and leaves the others usable.
    External solver programs declared in TOML are listed as their kind's `programs`.
    """
    from packsolve.puzzles import KINDS
    from packsolve.solvers import for_kind, load_solvers

    declared = load_solvers(solvers_file)
    rows = []
    for source in KINDS.sources():
        kind = None if source.error else KINDS.get(source.name)
        rows.append(
            {
                "kind": source.name,
                "source": source.describe(),
                "distribution": source.distribution,
                "version": source.version,
                "heuristics": list(kind.solvers) if kind else [],
                "programs": for_kind(declared, source.name),
                "default": kind.default if kind else None,
                "formats": list(kind.formats) if kind else [],
                "description": kind.description if kind else "",
                "error": source.error,
            }
        )
    emit(rows, fmt, _kinds_table)


def _kinds_table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table
    from rich.text import Text

    t = Table("kind", "heuristics", "default", "native formats", "from", "what it is")
    for r in rows:
        if r["error"]:
            t.add_row(r["kind"], "", "", "", r["source"], Text(f"cannot be used: {r['error']}", style="red"))
        else:
            programs = [f"{p} (program)" for p in r["programs"]]
            t.add_row(
                r["kind"], ", ".join(r["heuristics"] + programs), r["default"], " ".join(r["formats"]),
                r["source"], r["description"],
            )  # fmt: skip
    return t


@click.command("check-kind")
@click.argument("name")
@click.option(
    "--levels",
    "levels_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="JSON or JSONL file of levels to check on [default: the kind's examples].",
)
@click.option(
    "--time-limit", type=float, default=10.0, show_default=True, help="Seconds per heuristic per level."
)
@format_option
@handle_errors
def check_kind(name: str, levels_file: str | None, time_limit: float, fmt: str) -> None:
    """Check kind NAME against packsolve's contract; exit 1 if a check fails.

    On the kind's example levels: parse/canonical round trip and a stable hash, every
    heuristic's answer passes verify, verify rejects corrupted answers, bad input raises
    LevelError with a message, render and svg produce output. The same checks as
    packsolve.testing.check_kind(KIND) in a plug-in's own tests.
    """
    from packsolve.errors import UnknownKind
    from packsolve.puzzles import get_kind
    from packsolve.testing import run_checks

    try:
        kind = get_kind(name)
    except UnknownKind as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from None
    levels = None if levels_file is None else _level_objects(levels_file)
    checks = run_checks(kind, levels, time_limit)
    emit([{"check": c.name, "ok": c.ok, "detail": c.detail} for c in checks], fmt, _checks_table)
    failed = sum(not c.ok for c in checks)
    if failed:
        raise click.ClickException(f"kind {name!r} fails {failed} of {len(checks)} checks")
    err_console.print(f"kind {name!r} passes all {len(checks)} checks")


def _level_objects(path: str) -> list[Any]:
    """Return the JSON objects of a .json (one or a list) or .jsonl file; raise PlanError if unreadable."""
    import json

    from packsolve.errors import PlanError

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if path.endswith((".jsonl", ".ndjson")):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PlanError(f"cannot read levels from {path}: {exc} (give a .json or .jsonl file)") from None
    return data if isinstance(data, list) else [data]


def _checks_table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table
    from rich.text import Text

    t = Table("check", "result")
    for r in rows:
        t.add_row(r["check"], Text("ok", style="green") if r["ok"] else Text(r["detail"], style="red"))
    return t


@click.command()
@click.argument("kind")
@click.option("--size", required=True, help="Size spec of the kind, e.g. 8x8 or 60.")
@click.option("--count", type=int, default=10, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), default="-", help="JSONL file [default: stdout]."
)
def generate(kind: str, size: str, count: int, seed: int, output: str) -> None:
    """Generate COUNT levels of KIND as JSON lines (reproducible for a seed)."""
    from packsolve.errors import UnknownKind
    from packsolve.levels import canonical_json
    from packsolve.puzzles import get_kind

    try:
        k = get_kind(kind)
    except UnknownKind as exc:
        raise click.BadParameter(str(exc), param_hint="KIND") from None
    if k.generate is None:
        raise click.BadParameter(f"kind {kind!r} has no generator", param_hint="KIND")
    try:
        levels = k.generate(size, count, seed)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--size") from None
    with click.open_file(output, "w", encoding="utf-8") as out:
        for level in levels:
            out.write(canonical_json({**level, "kind": k.name}) + "\n")
