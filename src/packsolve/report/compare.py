"""`report compare`: one row per level, one column group per run, a footer, provenance warnings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.errors import ReportError
from packsolve.figures.compare_pairs import SHOWN, Figures, combined, compare_figures, compare_rows
from packsolve.figures.par2 import par2, par2_limit
from packsolve.outcome import SUCCESS_VALUES, Status
from packsolve.report.columns import name_cell
from packsolve.report.metrics import host_of, rounded
from packsolve.report.provenance import comparison_warnings
from packsolve.report.summary import run_workers
from packsolve.report.text import short_message, short_name
from packsolve.request import HeuristicMatrix


# A level's result in one run, as compare_runs has it (None: the run did not have the level).
class Result(TypedDict):
    """One run's result on one level."""

    status: str
    wall_s: float | None
    nodes: int | None
    par2_s: float | None
    peak_rss_mb: float | None
    message: str | None


Cell = Result | None


class ComparedRow(TypedDict):
    """One level, with one cell per compared run (None where that run did not have it)."""

    level: str
    level_hash: str
    kind: str
    results: list[Cell]


class ComparedRun(TypedDict):
    """A compared run as the comparison names it."""

    run: int
    label: str | None
    heuristic: str
    time_limit: float | None
    cpu_limit: float | None


class Footer(TypedDict):
    """A compared run's totals, PAR-2 and speedups over the first run."""

    run: int
    levels: int
    solved: int
    decided: int
    par2_s: float
    peak_rss_mb: float | None  # the largest of its attempts', None if none was measured
    both_decided: int
    speedup: float | None
    speedup_levels: int
    speedup_why_not: str | None
    par2_speedup: float | None
    common_levels: int
    common_par2_s: float | None  # None when no level was run by every run
    common_speedup: float | None


class Comparison(TypedDict):
    """`report compare`: the runs, a row per level, a footer per run, and what makes them incomparable."""

    runs: list[ComparedRun]
    rows: list[ComparedRow]
    footer: list[Footer]
    warnings: list[str]


# Provenance that makes two runs' times incomparable when it differs.
PROVENANCE = (
    "host",
    "version",
    "time_limit",
    "cpu_limit",
    "node_limit",
    "memory_limit_mb",
    "concurrency",
    "mode",
)


def _cell(row: Any, time_limit: float | None) -> Result:
    """Return one run's result on one level from its attempt's row (status, wall_s, nodes, peak, message)."""
    return Result(
        status=row.status,
        wall_s=rounded(row.wall_s),
        nodes=row.nodes,
        par2_s=rounded(par2(row.status, row.wall_s, time_limit)),
        peak_rss_mb=rounded(row.peak_rss_mb, 1),
        message=row.message,
    )


def _hosts(session: Session, run_id: int) -> list[str]:
    # Its workers one index step each (summary's): a DISTINCT over 1,000,000 attempts takes 0.4 s.
    return sorted({h for w in run_workers(session.connection(), run_id) if (h := host_of(w))})


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
) -> Comparison:
    """Return {runs, rows, footer, warnings} comparing runs level by level (by content hash).

    A row's `results` hold one cell per run, in the order given (None where the
    level was not in that run). `differs` keeps rows whose statuses are not all
    equal among levels every run attempted (with_missing: levels some run did
    not attempt too); `only_solved_by` keeps rows decided by that run and by no
    other. The footer is computed over every level, before the filters.
    """
    for run in runs:
        if HeuristicMatrix.parse(run.heuristic).is_matrix:  # its rows keep one result per level
            raise ReportError(
                f"run {run.id} tried each level with several heuristics ({run.heuristic}): "
                f"`packsolve report matrix {run.id}` sets them side by side"
            )
    ids = [r.id for r in runs]
    table: dict[str, ComparedRow] = {}
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
                Attempt.peak_rss_mb,
                Attempt.message,
                Attempt.time_limit,
                Attempt.cpu_limit,
            )
            .where(Attempt.run_id == run.id)
            .order_by(Attempt.seq)
        )
        if kind:
            q = q.where(Attempt.kind == kind)
        for found in session.connection().execute(q):
            row = table.get(found.level_hash)
            if row is None:
                row = table[found.level_hash] = ComparedRow(
                    level=found.name, level_hash=found.level_hash, kind=found.kind, results=[None] * len(runs)
                )
            row["results"][col] = _cell(found, par2_limit(run, found))  # its own limit, if it had one
    rows = list(table.values())
    footer = footers(runs, combined(compare_figures(session, runs), kind))
    if differs:
        rows = [
            r
            for r in rows
            if len({c["status"] if c else None for c in r["results"]}) > 1
            and (with_missing or all(c is not None for c in r["results"]))
        ]
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
        "runs": _named(runs),
        "rows": rows,
        "footer": footer,
        "warnings": provenance_warnings(session, runs) + comparison_warnings(session, runs),
    }


class ComparePage(Comparison):
    """A page of a comparison's rows, with the footer over every row and how many rows match.

    figures_age_s: how many seconds old the footer's figures are, when they were read earlier
    (the dashboard's, for a run still going); None when read now or kept for finished runs.
    """

    matching: int
    figures_age_s: float | None


@dataclass(frozen=True)
class Slice:
    """Which rows of a comparison a page shows: compare_runs' filters, then offset..offset+limit."""

    differs: bool
    kind: str | None
    offset: int
    limit: int


def compare_page(
    session: Session, runs: list[Run], differs: bool, kind: str | None, offset: int, limit: int
) -> ComparePage:
    """Return compare_runs' runs, footer and warnings with rows offset..offset+limit, paged in SQL.

    The rows are compare_runs' (differs: levels every run has, statuses not all equal), in its
    order; matching counts them all, from the same figures as the footer.
    """
    return page_of(session, runs, compare_figures(session, runs), Slice(differs, kind, offset, limit))


def page_of(
    session: Session,
    runs: list[Run],
    figures: dict[str, Figures],
    rows: Slice,
    figures_age_s: float | None = None,
) -> ComparePage:
    """Return compare_page's page with the footer from figures (compare_figures' of the runs).

    figures_age_s says how old they are when the caller read them earlier (None: read now).
    """
    f = combined(figures, rows.kind)
    found = compare_rows(session, runs, rows.kind, rows.differs, rows.offset, rows.limit)
    return {
        "runs": _named(runs),
        "rows": [
            ComparedRow(
                level=r["name"],
                level_hash=r["level_hash"],
                kind=r["kind"],
                results=[
                    None if r[f"status{j}"] is None else _cell(_Stored(r, j), par2_limit(run))
                    for j, run in enumerate(runs)
                ],
            )
            for r in found
        ],
        "footer": footers(runs, f),
        "warnings": provenance_warnings(session, runs) + comparison_warnings(session, runs),
        "matching": int(f.get("differs" if rows.differs else "rows", 0)),
        "figures_age_s": figures_age_s,
    }


class _Stored:
    """Run j's columns of a compare_rows row, under the attempt's own names (as _cell reads them)."""

    def __init__(self, row: dict[str, Any], j: int) -> None:
        for name in SHOWN:
            setattr(self, name, row[f"{name}{j}"])


def _named(runs: list[Run]) -> list[ComparedRun]:
    return [
        {
            "run": r.id,
            "label": r.label,
            "heuristic": r.heuristic,
            "time_limit": r.time_limit,
            "cpu_limit": r.cpu_limit,
        }
        for r in runs
    ]


def _decided(cell: Cell) -> bool:
    return cell is not None and cell["status"] in SUCCESS_VALUES


# The limits under which two runs' times compare: under others, a level's time means another thing.
LIMITS = (
    ("time_limit", "time limit", " s"),
    ("cpu_limit", "CPU limit", " s"),
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
    """Return how two runs' limits differ (their times then do not compare), or None if they are equal.

    A relative run's (--time-limit 3x) limits are each level's own: its times compare with no other run's.
    """
    for run in (base, other):
        relative = (getattr(run, "options", None) or {}).get("relative")
        if relative:
            given = ", ".join(f"{name.replace('_', ' ')} {spec}" for name, spec in sorted(relative.items()))
            return (
                f"run {run.id}'s limits are relative ({given}: each level's own, from its history): "
                "compare under equal limits"
            )
    for field, name, unit in LIMITS:
        x, y = getattr(base, field), getattr(other, field)
        if x != y:
            a, b = (f"{v:g}{unit}" if v is not None else "none" for v in (x, y))
            return f"{name}s differ (run {base.id}: {a}, run {other.id}: {b}): compare under equal limits"
    return None


def speedup(base: Any, other: Any, pairs: Iterable[tuple[Cell, Cell]]) -> Speedup:
    """Return other's speedup over base from (base's cell, other's cell) per level (see speedup_of)."""
    both = [(a, b) for a, b in pairs if a is not None and b is not None and _decided(a) and _decided(b)]
    base_t = sum(float(a["wall_s"] or 0.0) for a, _ in both)
    return speedup_of(base, other, len(both), base_t, sum(float(b["wall_s"] or 0.0) for _, b in both))


def speedup_of(base: Any, other: Any, levels: int, base_t: float, this_t: float) -> Speedup:
    """Return other's speedup over base: base's wall time over other's, on the levels both decided.

    levels is how many levels both decided, base_t and this_t the two runs' wall times summed over
    them. Shown only under equal limits (a time under another limit means another thing) and when
    both decided a level in measurable time; otherwise value is None and why_not says why. The one
    speedup every report shows (>1: other is faster).
    """
    differ = limits_differ(base, other)
    if differ:
        return Speedup(None, levels, differ)
    if not levels:
        return Speedup(None, 0, f"no level decided by both run {base.id} and run {other.id}")
    if this_t <= 0 or base_t <= 0:
        return Speedup(None, levels, "their times on the levels both decided are too short to measure")
    return Speedup(round(base_t / this_t, 3), levels)


def _ratio(base: float, this: float, n: float, comparable: bool) -> float | None:
    return round(base / this, 3) if comparable and this > 0 and n else None


def footers(runs: Sequence[Any], f: Figures) -> list[Footer]:
    """Return each run's footer from the runs' figures (figures.compare_pairs): the one place rounding them.

    Solved counts and PAR-2 over its own levels, its speedup over the first run (see speedup_of),
    PAR-2 over the levels both ran and over the levels every run ran (common); PAR-2 ratios are
    given only under equal limits too (a penalty is twice the limit).
    """
    out = []
    for j, run in enumerate(runs):
        s = speedup_of(
            runs[0],
            run,
            int(f.get(f"both{j}", 0)),
            f.get(f"both_base_wall{j}", 0.0),
            f.get(f"both_wall{j}", 0.0),
        )
        if j and not f.get(f"shared{j}", 0):
            s = Speedup(None, 0, no_level_in_common(runs[0], run))
        comparable = limits_differ(runs[0], run) is None
        common = f.get("common", 0.0)
        common_this = f.get(f"common_par2{j}", 0.0)
        peak = f.get(f"peak{j}")
        out.append(
            Footer(
                run=run.id,
                levels=int(f.get(f"levels{j}", 0)),
                solved=int(f.get(f"solved{j}", 0)),
                decided=int(f.get(f"decided{j}", 0)),
                par2_s=round(f.get(f"par2_{j}", 0.0), 3),
                peak_rss_mb=None if peak is None else round(peak, 1),
                both_decided=s.levels,
                speedup=s.value,
                speedup_levels=s.levels,
                speedup_why_not=s.why_not,
                par2_speedup=_ratio(
                    f.get(f"shared_base_par2{j}", 0.0),
                    f.get(f"shared_par2{j}", 0.0),
                    f.get(f"shared{j}", 0.0),
                    comparable,
                ),
                common_levels=int(common),
                common_par2_s=round(common_this, 3) if common else None,
                common_speedup=_ratio(f.get(f"common_base_par2{j}", 0.0), common_this, common, comparable),
            )
        )
    return out


def no_level_in_common(base: Any, other: Any) -> str:
    """Return why two runs that share no scored level show no speedup: that first, then any other reason."""
    why = f"no level in common: none has a result in both run {base.id} and run {other.id}"
    differ = limits_differ(base, other)
    return f"{why}; also {differ}" if differ else why


def speedup_text(foot: Footer, base_id: int) -> str:
    """Return a footer's speedup for people: '×1.30 over 12 levels both decided', or why it is not shown."""
    if foot["speedup"] is None:
        return f"no speedup: {foot['speedup_why_not']}"
    return f"×{foot['speedup']:.2f} over {foot['speedup_levels']:,} level(s) both decided (vs run {base_id})"


def flat_rows(data: Comparison) -> list[dict[str, Any]]:
    """Return compare rows as flat dicts for CSV: run<ID>_status, run<ID>_wall_s, ..."""
    out = []
    for r in data["rows"]:
        flat: dict[str, Any] = {"level": r["level"], "level_hash": r["level_hash"], "kind": r["kind"]}
        for run, cell in zip(data["runs"], r["results"], strict=True):
            for f in ("status", "wall_s", "nodes", "par2_s", "peak_rss_mb", "message"):
                flat[f"run{run['run']}_{f}"] = cell[f] if cell else None
        out.append(flat)
    return out


# Columns a run's cells keep on any terminal: "12,345 (12,345) of 12,345" wraps at its spaces.
RUN_WIDTH = 14


def render_compare(data: Comparison, width: int = 100) -> Any:
    """Return a rich renderable: one column per run (status, wall s, nodes; why it failed), the footer.

    The footer gives each run's solved counts over its own levels, then PAR-2
    over the levels every run ran; each run's speedup over the first (or why
    none is shown) and the provenance warnings follow the table.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    t = Table(
        title="comparison", title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False
    )
    # Level names shortened to what a quarter of the terminal holds; the column as wide as they need
    # while each run keeps RUN_WIDTH (the table wider than the terminal would be cropped).
    most = max(20, width // 4)
    names = [short_name(r["level"], most) for r in data["rows"]]
    kind_width = max([4] + [len(r["kind"]) for r in data["rows"]])
    # Each column also takes 3 columns of rules and padding; the edges 2.
    free = width - (kind_width + 3) - len(data["runs"]) * (RUN_WIDTH + 3) - 5
    longest = max(map(len, names), default=5)
    level_width = max(8, min(longest, free))
    # A name never wraps: each cell shortens it from the left to the width its column gets.
    t.add_column("level", min_width=level_width, max_width=max(level_width, most))
    t.add_column("kind", no_wrap=True)
    # Each run's column at most its share of what is left: rich would otherwise give the runs their
    # whole cells and crop the table's right edge, cutting the last column's figures.
    share = (width - (level_width + 3) - (kind_width + 3) - 2) // max(1, len(data["runs"])) - 3
    for run in data["runs"]:
        name = f"run {run['run']}" + (f" {run['label']}" if run["label"] else "") + f"\n{run['heuristic']}"
        t.add_column(Text(name), overflow="fold", min_width=RUN_WIDTH, max_width=max(RUN_WIDTH, share))
    # A message may take two lines of its cell.
    message_width = 2 * max(18, (width - 34) // max(1, len(data["runs"])) - 1)
    for r in data["rows"]:
        cells = []
        for c in r["results"]:
            if c is None:
                cells.append(Text("— (not run)", style="dim"))
                continue
            wall = "" if c["wall_s"] is None else f" {c['wall_s']:.3f}s"
            nodes = "" if c["nodes"] is None or c["status"] == Status.INVALID else f" {c['nodes']:,}n"
            style = (
                "green"
                if c["status"] in SUCCESS_VALUES
                else ("red" if c["status"] != Status.INVALID else "dim")
            )
            cell = Text(f"{c['status']}{wall}{nodes}", style=style)
            if c["message"] and c["status"] not in SUCCESS_VALUES:
                cell.append("\n" + short_message(c["message"], r["level"], message_width), style="dim")
            cells.append(cell)
        t.add_row(name_cell(r["level"]), r["kind"], *cells)
    _add_footer(t, data)
    base = data["runs"][0]["run"] if data["runs"] else 0
    # Under the table, whole: a reason cut in a footer cell would mislead as much as a wrong figure.
    speeds = [Text(f"run {f['run']}: {speedup_text(f, base)}") for f in data["footer"][1:]]
    warnings = [Text(f"warning: {w}", style="yellow") for w in data["warnings"]]
    return Group(t, *speeds, *warnings)


def _add_footer(t: Any, data: Comparison) -> None:
    """Add the footer as rows of their own: each figure on its label's row, however the cells wrap.

    (A footer of lines stacked in one cell per column put figures beside the wrong label as soon
    as a label wrapped on a narrow terminal.)
    """
    if not data["footer"]:
        return
    common = data["footer"][0]["common_levels"]
    feet = data["footer"]
    rows = [
        ("solved (decided) of N", [f"{f['solved']:,} ({f['decided']:,}) of {f['levels']:,}" for f in feet]),
        (f"PAR-2 s on the {common:,} levels all ran", [_figure(f["common_par2_s"]) for f in feet]),
        ("peak memory", ["—" if f["peak_rss_mb"] is None else f"{f['peak_rss_mb']:,.0f} MB" for f in feet]),
    ]
    t.add_section()  # a rule between the levels and the footer
    for label, values in rows:
        t.add_row(label, "", *values, style="bold")
    # A footer value is one figure ("147 (153) of 300"): its run's column holds it on one line.
    for j, column in enumerate(t.columns[2:]):
        need = max(len(values[j]) for _, values in rows)
        column.min_width = max(column.min_width or 0, need)
        column.max_width = max(column.max_width or 0, need)


def _figure(x: float | None) -> str:
    return "—" if x is None else f"{x:,.2f}"
