"""Commands about the puzzle kinds: list them and their sources, check one's contract, generate levels."""

from __future__ import annotations

from typing import Any

import click

from packsolve.bounds import COUNT, TIME_LIMIT_S
from packsolve.cli.durations import duration_within
from packsolve.cli.options import emit, err_console, format_option, output_file, within


@click.command()
@click.option(
    "--solvers",
    "solvers_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML file of external solver programs to list too [default: ./packsolve.toml if there is one].",
)
@click.option(
    "--prepare",
    nargs=2,
    metavar="KIND HEURISTIC",
    default=None,
    help="Instead of listing: do now, on this machine, what HEURISTIC of KIND needs once "
    "(sliding pdb, pdb-663, pdb-6666: build the pattern tables) for levels of --size.",
)
@click.option("--size", default=None, help="With --prepare: the size of the levels, as generate's --size.")
@format_option
def kinds(solvers_file: str | None, prepare: tuple[str, str] | None, size: str | None, fmt: str) -> None:
    """List the puzzle kinds: heuristics, default, formats, and where each comes from.

    Plug-in kinds come from installed distributions (entry-point group packsolve.kinds);
    one that cannot be loaded is listed with the reason and leaves the others usable.
    External solver programs declared in TOML are listed as their kind's `programs`.

    With --prepare KIND HEURISTIC --size SIZE, do instead what the heuristic needs once per
    machine before it solves levels of that size (solve and workers do it themselves before
    the first attempt that needs it, outside its limits; this does it ahead, e.g. on a worker
    machine before it takes tasks). Exit 1 if it fails.
    """
    from packsolve.external.declaration import for_kind, load_solvers
    from packsolve.puzzles import KINDS

    if prepare is not None:
        _prepare(prepare[0], prepare[1], size)
        return
    if size is not None:
        raise click.BadParameter("--size goes with --prepare KIND HEURISTIC", param_hint="--size")

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


def _prepare(name: str, heuristic: str, size: str | None) -> None:
    """Do what the heuristic of kind name needs once for levels of size; ClickException if it fails."""
    from packsolve.errors import LevelError, UnknownHeuristic, UnknownKind
    from packsolve.execution import AttemptSpec, preparing
    from packsolve.puzzles import get_kind

    try:
        kind = get_kind(name)
    except UnknownKind as exc:
        raise click.BadParameter(str(exc), param_hint="--prepare") from None
    try:
        resolved, _ = kind.solver(heuristic)
    except UnknownHeuristic as exc:
        raise click.BadParameter(str(exc), param_hint="--prepare") from None
    if kind.generate is None:
        levels = [dict(e) for e in kind.examples]
    elif size is None:
        raise click.BadParameter(
            f"give the size of the levels to prepare for ({name}: {_size_form(kind)})", param_hint="--size"
        )
    else:
        try:
            levels = kind.generate(size, 1, 0)
        except (ValueError, LevelError) as exc:
            raise click.BadParameter(f"{exc} ({name}: {_size_form(kind)})", param_hint="--size") from None
    specs = [AttemptSpec(kind.name, resolved, level) for level in levels]
    if not preparing.needed(specs):
        _say(f"{name} {resolved}: nothing to prepare")
        return
    done = preparing.prepare(specs, _say)
    if any(d.problem for d in done):
        raise click.exceptions.Exit(1)  # its line is said
    for d in done:
        _say(f"{d.preparation.what}: ready ({d.preparation.where})")


def _say(line: str) -> None:
    err_console.print(line, highlight=False, markup=False, soft_wrap=True)


def _kinds_table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table
    from rich.text import Text

    t = Table(title="puzzle kinds", title_justify="left")
    t.add_column("kind", no_wrap=True)
    # One heuristic a line and never cut: a user types these names into --heuristic.
    t.add_column("heuristics", no_wrap=True)
    t.add_column("files", no_wrap=True)
    # Where a kind comes from goes under its description rather than in a column of its own: five
    # columns left a plug-in's distribution name too narrow a column on an 80-column terminal, cut.
    t.add_column("what it is, from where", ratio=1, overflow="fold")
    for r in rows:
        source = Text(f"source: {r['source']}", style="dim")
        if r["error"]:
            t.add_row(
                r["kind"],
                "",
                "",
                Text.assemble(Text(f"cannot be used: {r['error']}", style="red"), "\n", source),
            )
            continue
        heuristics = Text()
        for i, h in enumerate(r["heuristics"] + r["programs"]):
            heuristics.append(("\n" if i else "") + h, style="bold" if h == r["default"] else "")
            if h == r["default"]:
                heuristics.append(" (default)", style="dim")
            elif h in r["programs"]:
                heuristics.append(" (program)", style="dim")
        files = "\n".join(r["formats"]) or "json"
        what = Text.assemble(r["description"], "\n", source) if r["description"] else source
        t.add_row(r["kind"], heuristics, files, what, end_section=True)
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
    "--time-limit",
    type=duration_within(TIME_LIMIT_S),
    default=10.0,
    show_default=True,
    help="Seconds per heuristic per level (2.5, 500ms, 2s, 1m, 1h).",
)
@format_option
def check_kind(name: str, levels_file: str | None, time_limit: float, fmt: str) -> None:
    """Check kind NAME against packsolve's contract; exit 1 if a check fails, 2 if --levels is unreadable.

    On the kind's example levels: parse/canonical round trip and a stable hash, every
    heuristic's answer passes verify, verify rejects corrupted answers, bad input raises
    LevelError with a message, render and svg produce output, and a kind's preparation (when it has
    one) leaves its work done and runs again harmlessly. The same checks as
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


# Rounds of fresh draws (from seeds derived from --seed) to top up levels drawn twice.
TOP_UP_ROUNDS = 20


class _GenerateCommand(click.Command):
    """generate, whose help lists what --size means for each kind with a generator, plug-ins included.

    The list is read from the registry when help is asked for, not when the CLI is imported:
    loading every kind (and every installed plug-in) would slow every other command.
    """

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from packsolve.puzzles import KINDS

        super().format_help_text(ctx, formatter)
        rows = [(f"{name}:", _size_form(kind)) for name, kind in KINDS.items() if kind.generate is not None]
        with formatter.section("--size per kind"):
            formatter.write_dl(rows)


def _size_form(kind: Any) -> str:
    """Return what --size means for kind, in its own words (a plug-in may give none)."""
    return kind.size_help or "the kind does not say (see its documentation)"


@click.command(
    cls=_GenerateCommand,
    help="Generate COUNT distinct levels of KIND as JSON lines (the same ones for a seed).",
)
@click.argument("kind")
@click.option("--size", required=True, help="Size of the levels; what it means depends on KIND (see above).")
@click.option("--count", type=within(COUNT, low=1), default=10, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), default="-", help="JSONL file [default: stdout]."
)
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
            raise click.BadParameter(f"{exc} ({kind}: {_size_form(k)})", param_hint="--size") from None
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
            "a bigger --size has more",
            highlight=False,
            markup=False,
        )
