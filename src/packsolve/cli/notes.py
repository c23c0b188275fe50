"""The lines solve, submit, rerun and check print about what was read and planned: names, not just counts."""

from __future__ import annotations

from typing import Any

from packsolve.cli.options import err_console

# Names listed per line; the rest are counted (`packsolve check PACK` lists every one).
SHOWN = 5


def reading_lines(reading: Any, listed: int | None = SHOWN) -> list[str]:
    """Return the lines about files skipped, duplicates and levels of other kinds (listed: None for all)."""
    lines = []
    if reading.skipped_files:
        names = [f"{s.path} ({s.reason})" for s in reading.skipped_files]
        lines.append(f"{len(names)} file(s) skipped, no level in them: {_listed(names, listed)}")
    if reading.duplicates:
        names = [f"{name} (same level as {first})" for name, first in reading.duplicates]
        lines.append(
            f"{len(names)} duplicate level(s) skipped, each level runs once: {_listed(names, listed)}"
        )
    if reading.other_kinds:
        n = sum(reading.other_kinds.values())
        kinds = ", ".join(f"{k} {v}" for k, v in reading.other_kinds.items())
        lines.append(f"{n} level(s) of other kinds skipped (--kind {reading.kind}): {kinds}")
    return lines


def _listed(names: list[str], listed: int | None) -> str:
    if listed is None or len(names) <= listed:
        return ", ".join(names)
    return ", ".join(names[:listed]) + f", and {len(names) - listed} more (`packsolve check` lists them all)"


def print_plan_notes(run: Any) -> None:
    """Print what the user should know about how a new run was read and planned."""
    for line in reading_lines(run.reading):
        err_console.print(line, style="dim", highlight=False, markup=False, soft_wrap=True)
    carried = run.carried
    if carried.levels:
        runs = ", ".join(str(r) for r in carried.runs)
        err_console.print(
            f"{carried.counted} carried over: decided with the same heuristic in run(s) {runs}, "
            "not run again (--skip-solved)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if run.label_moved_from is not None:
        err_console.print(f"label moved from run {run.label_moved_from} to run {run.id}", highlight=False)
    for note in run.notes:
        err_console.print(f"[yellow]note:[/] {note}", highlight=False, soft_wrap=True)
    if run.invalid:
        err_console.print(
            f"{run.invalid} level(s) cannot be read and are recorded as invalid: "
            f"`packsolve report failures {run.id}` says why",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
