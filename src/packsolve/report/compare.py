"""`report compare`: one row per level, one column group per run, a footer, provenance warnings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.errors import ReportError
from packsolve.report.metrics import SUCCESS_VALUES, host_of, par2, rounded
from packsolve.report.provenance import comparison_warnings
from packsolve.report.text import short_message, short_name

# A level's result in one run, as compare_runs has it (None: the run did not have the level).
Cell = dict[str, Any] | None

# Provenance that makes two runs' times incomparable when it differs.
PROVENANCE = ("host", "version", "time_limit", "node_limit", "memory_limit_mb", "concurrency", "mode")


def _cell(
    status: str, wall_s: float | None, nodes: int | None, time_limit: float | None, message: str | None
) -> dict[str, Any]:
    return {
        "status": status,
        "wall_s": rounded(wall_s),
        "nodes": nodes,
        "par2_s": rounded(par2(status, wall_s, time_limit)),
        "message": message,
    }


def _hosts(session: Session, run_id: int) -> list[str]:
    q = select(Attempt.worker).where(Attempt.run_id == run_id, Attempt.worker.is_not(None)).distinct()
    return sorted({h for (w,) in session.execute(q) if (h := host_of(w))})


def provenance_warnings(session: Session, runs: list[Run]) -> list[str]:
    """Return one sentence per way a run's provenance differs from the first run's."""
    base = runs[0]
    base_hosts = _hosts(session, base.id)
    out = []
    for run in runs[1:]:
        for field in PROVENANCE:
            a, b = getattr(base, field), getattr(run, field)
            if a != b:
                out.append(f"run {run.id} differs from run {base.id} in {field}: {b!r} vs {a!r}")
        hosts = _hosts(session, run.id)
        if hosts and base_hosts and hosts != base_hosts:
            out.append(f"run {run.id} ran on {', '.join(hosts)}, run {base.id} on {', '.join(base_hosts)}")
    return out


def compare_runs(
    session: Session,
    runs: list[Run],
    differs: bool = False,
    only_solved_by: Run | None = None,
    kind: str | None = None,
    with_missing: bool = False,
) -> dict[str, Any]:
    """Return {runs, rows, footer, warnings} comparing runs level by level (by content hash).

    A row's `results` hold one cell per run, in the order given (None where the
    level was not in that run). `differs` keeps rows whose statuses are not all
    equal among levels every run attempted (with_missing: levels some run did
    not attempt too); `only_solved_by` keeps rows decided by that run and by no
    other. The footer is computed over every level, before the filters.
    """
    ids = [r.id for r in runs]
    table: dict[str, dict[str, Any]] = {}
    for col, run in enumerate(runs):
        # Core rows of the few columns shown: a 10,000-level run must not build ORM objects.
        q = (
            select(
                Attempt.level_hash,
                Attempt.name,
                Attempt.kind,
                Attempt.status,
                Attempt.wall_s,
                Attempt.nodes,
                Attempt.message,
            )
            .where(Attempt.run_id == run.id)
            .order_by(Attempt.seq)
        )
        if kind:
            q = q.where(Attempt.kind == kind)
        for h, name, k, status, wall, nodes, message in session.connection().execute(q):
            row = table.get(h)
            if row is None:
                row = table[h] = {"level": name, "level_hash": h, "kind": k, "results": [None] * len(runs)}
            row["results"][col] = _cell(status, wall, nodes, run.time_limit, message)
    rows = list(table.values())
    common = [
        r["results"] for r in rows if all(c is not None and c["par2_s"] is not None for c in r["results"])
    ]
    footer = [_footer(rows, col, runs, common) for col in range(len(runs))]
    if differs:
        rows = [
            r for r in rows
            if len({c["status"] if c else None for c in r["results"]}) > 1
            and (with_missing or all(c is not None for c in r["results"]))
        ]  # fmt: skip
    if only_solved_by is not None:
        if only_solved_by.id not in ids:
            raise ReportError(f"--only-solved-by run {only_solved_by.id} is not one of the compared runs")
        col = ids.index(only_solved_by.id)
        rows = [
            r
            for r in rows
            if _decided(r["results"][col])
            and not any(_decided(c) for i, c in enumerate(r["results"]) if i != col)
        ]
    return {
        "runs": [
            {"run": r.id, "label": r.label, "heuristic": r.heuristic, "time_limit": r.time_limit}
            for r in runs
        ],
        "rows": rows,
        "footer": footer,
        "warnings": provenance_warnings(session, runs) + comparison_warnings(session, runs),
    }


def _decided(cell: Cell) -> bool:
    return cell is not None and cell["status"] in SUCCESS_VALUES


# The limits under which two runs' times compare: under others, a level's time means another thing.
LIMITS = (
    ("time_limit", "time limit", " s"),
    ("node_limit", "node limit", ""),
    ("memory_limit_mb", "memory limit", " MB"),
)


@dataclass(frozen=True)
class Speedup:
    """One run's speedup over another: value (None when not shown), over how many levels, and why not."""

    value: float | None
    levels: int  # decided by both runs
    why_not: str | None = None


def limits_differ(base: Any, other: Any) -> str | None:
    """Return how two runs' limits differ (their times then do not compare), or None if they are equal."""
    for field, name, unit in LIMITS:
        x, y = getattr(base, field), getattr(other, field)
        if x != y:
            a, b = (f"{v:g}{unit}" if v is not None else "none" for v in (x, y))
            return f"{name}s differ (run {base.id}: {a}, run {other.id}: {b}): compare under equal limits"
    return None


def speedup(base: Any, other: Any, pairs: Iterable[tuple[Cell, Cell]]) -> Speedup:
    """Return other's speedup over base: base's wall time over other's, on the levels both decided.

    pairs are (base's cell, other's cell) per level (None where a run lacks it).
    Shown only under equal limits (a time under another limit means another
    thing) and when both decided a level in measurable time; otherwise value is
    None and why_not says why. The one speedup every report shows (>1: other is faster).
    """
    both = [(a, b) for a, b in pairs if a is not None and b is not None and _decided(a) and _decided(b)]
    differ = limits_differ(base, other)
    if differ:
        return Speedup(None, len(both), differ)
    if not both:
        return Speedup(None, 0, f"no level decided by both run {base.id} and run {other.id}")
    base_t = sum(float(a["wall_s"] or 0.0) for a, _ in both)
    this_t = sum(float(b["wall_s"] or 0.0) for _, b in both)
    if this_t <= 0 or base_t <= 0:
        return Speedup(None, len(both), "their times on the levels both decided are too short to measure")
    return Speedup(round(base_t / this_t, 3), len(both))


def _footer(rows: list[dict[str, Any]], col: int, runs: list[Run], common: list[list[Any]]) -> dict[str, Any]:
    """Return a run's solved counts and PAR-2, and its speedup over the first run (see speedup).

    common holds the results of the levels every run ran: PAR-2 over them is
    comparable from run to run; the PAR-2 ratios are given only under equal limits too.
    """
    run = runs[col]
    cells = [r["results"][col] for r in rows if r["results"][col] is not None]
    scores = [c["par2_s"] for c in cells if c["par2_s"] is not None]
    s = speedup(runs[0], run, [(r["results"][0], r["results"][col]) for r in rows])
    comparable = limits_differ(runs[0], run) is None  # PAR-2 ratios too: a penalty is twice the limit
    shared = [
        r["results"] for r in rows if r["results"][0] and r["results"][col]
        and r["results"][0]["par2_s"] is not None and r["results"][col]["par2_s"] is not None
    ]  # fmt: skip
    base_p = sum(c[0]["par2_s"] for c in shared)
    this_p = sum(c[col]["par2_s"] for c in shared)
    common_base = sum(c[0]["par2_s"] for c in common)
    common_this = sum(c[col]["par2_s"] for c in common)
    return {
        "run": run.id,
        "levels": len(cells),
        "solved": sum(c["status"] == "solved" for c in cells),
        "decided": sum(_decided(c) for c in cells),
        "par2_s": round(sum(scores), 3),
        "both_decided": s.levels,
        "speedup": s.value,
        "speedup_levels": s.levels,
        "speedup_why_not": s.why_not,
        "par2_speedup": round(base_p / this_p, 3) if comparable and this_p > 0 and shared else None,
        "common_levels": len(common),
        "common_par2_s": round(common_this, 3),
        "common_speedup": (
            round(common_base / common_this, 3) if comparable and common_this > 0 and common else None
        ),
    }


def speedup_text(foot: dict[str, Any], base_id: int) -> str:
    """Return a footer's speedup for people: '×1.30 over 12 levels both decided', or why it is not shown."""
    if foot["speedup"] is None:
        return f"no speedup: {foot['speedup_why_not']}"
    return f"×{foot['speedup']:.2f} over {foot['speedup_levels']:,} level(s) both decided (vs run {base_id})"


def flat_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Return compare rows as flat dicts for CSV: run<ID>_status, run<ID>_wall_s, ..."""
    out = []
    for r in data["rows"]:
        flat = {"level": r["level"], "level_hash": r["level_hash"], "kind": r["kind"]}
        for run, cell in zip(data["runs"], r["results"], strict=True):
            for f in ("status", "wall_s", "nodes", "par2_s", "message"):
                flat[f"run{run['run']}_{f}"] = cell[f] if cell else None
        out.append(flat)
    return out


def render_compare(data: dict[str, Any], width: int = 100) -> Any:
    """Return a rich renderable: one column per run (status, wall s, nodes; why it failed), the footer.

    The footer gives each run's solved counts over its own levels, then PAR-2
    over the levels every run ran; each run's speedup over the first (or why
    none is shown) and the provenance warnings follow the table.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    common = data["footer"][0]["common_levels"] if data["footer"] else 0
    t = Table(title="comparison", title_justify="left", show_footer=True, box=box.SIMPLE_HEAD,
              collapse_padding=True, pad_edge=False)  # fmt: skip
    t.add_column(
        "level", footer=f"solved (decided) of N\nPAR-2 s on the {common:,}\nlevels all ran",
        overflow="fold", ratio=1,
    )  # fmt: skip
    t.add_column("kind", no_wrap=True)
    for run, foot in zip(data["runs"], data["footer"], strict=True):
        name = f"run {run['run']}" + (f" {run['label']}" if run["label"] else "") + f"\n{run['heuristic']}"
        footer = (
            f"{foot['solved']:,} ({foot['decided']:,}) of {foot['levels']:,}\n{foot['common_par2_s']:,.2f}"
        )
        t.add_column(Text(name), footer=footer, overflow="fold", min_width=18)
    # A message may take two lines of its cell.
    message_width = 2 * max(18, (width - 34) // max(1, len(data["runs"])) - 1)
    for r in data["rows"]:
        cells = []
        for c in r["results"]:
            if c is None:
                cells.append(Text("— (not run)", style="dim"))
                continue
            wall = "" if c["wall_s"] is None else f" {c['wall_s']:.3f}s"
            nodes = "" if c["nodes"] is None or c["status"] == "invalid" else f" {c['nodes']:,}n"
            style = (
                "green" if c["status"] in SUCCESS_VALUES else ("red" if c["status"] != "invalid" else "dim")
            )
            cell = Text(f"{c['status']}{wall}{nodes}", style=style)
            if c["message"] and c["status"] not in SUCCESS_VALUES:
                cell.append("\n" + short_message(c["message"], r["level"], message_width), style="dim")
            cells.append(cell)
        t.add_row(Text(short_name(r["level"], max(20, width // 4))), r["kind"], *cells, end_section=False)
    base = data["runs"][0]["run"] if data["runs"] else 0
    # Under the table, whole: a reason cut in a footer cell would mislead as much as a wrong figure.
    speeds = [Text(f"run {f['run']}: {speedup_text(f, base)}") for f in data["footer"][1:]]
    warnings = [Text(f"warning: {w}", style="yellow") for w in data["warnings"]]
    return Group(t, *speeds, *warnings)
