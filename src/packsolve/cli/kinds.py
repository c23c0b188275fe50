"""Commands about the puzzle kinds: list them, generate levels."""

from __future__ import annotations

import click

from packsolve.cli.options import out_console


@click.command()
def kinds() -> None:
    """List the puzzle kinds, their heuristics and defaults."""
    from rich.table import Table
    from rich.text import Text

    from packsolve.puzzles import KINDS

    t = Table(title="puzzle kinds", title_justify="left")
    t.add_column("kind", no_wrap=True)
    # One heuristic a line and never cut: a user types these names into --heuristic.
    t.add_column("heuristics", no_wrap=True)
    t.add_column("files", no_wrap=True)
    t.add_column("what it is", ratio=1)
    for name, kind in KINDS.items():
        heuristics = Text()
        for i, h in enumerate(kind.solvers):
            heuristics.append(("\n" if i else "") + h, style="bold" if h == kind.default else "")
            if h == kind.default:
                heuristics.append(" (default)", style="dim")
        t.add_row(name, heuristics, "\n".join(kind.formats) or "json", kind.description, end_section=True)
    out_console.print(t)


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
