"""Commands about the puzzle kinds: list them, generate levels."""

from __future__ import annotations

import click

from packsolve.cli.options import err_console, handle_errors, out_console, output_file


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


# What --size means for each kind's generator (`packsolve generate --help` and the README say the same).
SIZE_HELP = {
    "onestroke": "WxH or N: the grid, e.g. 8x6 (about 80-100% of its cells open)",
    "knights_tour": "N or RxC, :closed for closed tours, e.g. 8 or 6x8:closed",
    "sudoku": "the number of givens to aim for, 17-81 (9x9: as few as stay unique), e.g. 24",
    "sliding": "N or NxN, N from 2 to 5, e.g. 4 (the 15-puzzle)",
    "tictactoe": "MxN or MxNkK (K in a row wins, default 3), e.g. 4x4k3",
    "coins": "N or N:MAX, N notes of values up to MAX (default 10000), e.g. 30:1000",
    "floodfill": "HxW or N, the image, e.g. 24x40",
    "euler": "E or VxE, E edges among V vertices, e.g. 8x20",
}
# Rounds of fresh draws (from seeds derived from --seed) to top up levels drawn twice.
TOP_UP_ROUNDS = 20


def _size_help() -> str:
    lines = "\n".join(f"  {kind}: {text}" for kind, text in SIZE_HELP.items())
    intro = "Generate COUNT distinct levels of KIND as JSON lines (the same ones for a seed)."
    return f"{intro}\n\n\b\n--size per kind:\n{lines}"


@click.command(help=_size_help())
@click.argument("kind")
@click.option("--size", required=True, help="Size of the levels; what it means depends on KIND (see above).")
@click.option("--count", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), default="-", help="JSONL file [default: stdout]."
)
@handle_errors
def generate(kind: str, size: str, count: int, seed: int, output: str) -> None:
    """Write COUNT distinct levels of KIND; fewer, with a note, when the size has no more."""
    from packsolve.errors import LevelError, UnknownKind
    from packsolve.levels import canonical_json, make_level
    from packsolve.puzzles import get_kind

    try:
        k = get_kind(kind)
    except UnknownKind as exc:
        raise click.BadParameter(str(exc), param_hint="KIND") from None
    if k.generate is None:
        raise click.BadParameter(f"kind {kind!r} has no generator", param_hint="KIND")
    output_file(output)
    distinct: dict[str, dict] = {}
    for round_ in range(TOP_UP_ROUNDS):
        need = count - len(distinct)
        if need <= 0:
            break
        try:
            # Round 0 is exactly what --seed always gave; later rounds only add levels not drawn yet.
            drawn = k.generate(
                size, count if round_ == 0 else 2 * need, seed if round_ == 0 else seed * 7919 + round_
            )
        except (ValueError, LevelError) as exc:
            raise click.BadParameter(
                f"{exc} ({kind}: {SIZE_HELP.get(kind, 'see the kind')})", param_hint="--size"
            ) from None
        for level in drawn:
            data = {**level, "kind": k.name}
            distinct.setdefault(make_level("generated", data).hash, data)
    levels = list(distinct.values())[:count]
    with click.open_file(output, "w", encoding="utf-8") as out:
        for level in levels:
            out.write(canonical_json(level) + "\n")
    if len(levels) < count:
        err_console.print(
            f"only {len(levels)} distinct {kind} level(s) of size {size} found (asked for {count}): "
            "a bigger --size has more", highlight=False, markup=False,
        )  # fmt: skip
