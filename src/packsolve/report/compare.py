"""`report compare`: one row per level, one column group per run, a footer, provenance warnings."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.errors import ReportError
from packsolve.report.metrics import SUCCESS_VALUES, host_of, par2, rounded
from packsolve.report.provenance import comparison_warnings
from packsolve.report.text import short_message, short_name

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
    footer = [_footer(rows, col, run, common) for col, run in enumerate(runs)]
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


def _decided(cell: dict[str, Any] | None) -> bool:
    return cell is not None and cell["status"] in SUCCESS_VALUES


def _footer(rows: list[dict[str, Any]], col: int, run: Run, common: list[list[Any]]) -> dict[str, Any]:
    """Return a run's solved counts and PAR-2, and its speedup over the first run on shared levels.

    common holds the results of the levels every run ran: PAR-2 over them is
    comparable from run to run, and common_speedup is the first run's over this one's.
    """
    cells = [r["results"][col] for r in rows if r["results"][col] is not None]
    scores = [c["par2_s"] for c in cells if c["par2_s"] is not None]
    # Speedup: the first run's wall time over this run's, on levels both runs decided.
    both = [r["results"] for r in rows if _decided(r["results"][0]) and _decided(r["results"][col])]
    base_t = sum(c[0]["wall_s"] or 0.0 for c in both)
    this_t = sum(c[col]["wall_s"] or 0.0 for c in both)
    # PAR-2 speedup: the same ratio over levels both runs attempted, unsolved ones penalised.
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
        "both_decided": len(both),
        "speedup": round(base_t / this_t, 3) if this_t > 0 and both else None,
        "par2_speedup": round(base_p / this_p, 3) if this_p > 0 and shared else None,
        "common_levels": len(common),
        "common_par2_s": round(common_this, 3),
        "common_speedup": round(common_base / common_this, 3) if common_this > 0 and common else None,
    }


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
    over the levels every run ran and the speedup over the first run there.
    Provenance warnings follow the table.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    common = data["footer"][0]["common_levels"] if data["footer"] else 0
    t = Table(title="comparison", title_justify="left", show_footer=True, box=box.SIMPLE_HEAD,
              collapse_padding=True, pad_edge=False)  # fmt: skip
    t.add_column(
        "level", footer=f"solved (decided) of N\nPAR-2 s · speedup, on\nthe {common} levels all ran",
        overflow="fold", ratio=1,
    )  # fmt: skip
    t.add_column("kind", no_wrap=True)
    for run, foot in zip(data["runs"], data["footer"], strict=True):
        name = f"run {run['run']}" + (f" {run['label']}" if run["label"] else "") + f"\n{run['heuristic']}"
        speed = "" if foot["common_speedup"] is None else f" · ×{foot['common_speedup']:.2f}"
        footer = (
            f"{foot['solved']} ({foot['decided']}) of {foot['levels']}\n{foot['common_par2_s']:.2f}{speed}"
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
            nodes = "" if c["nodes"] is None or c["status"] == "invalid" else f" {c['nodes']}n"
            style = (
                "green" if c["status"] in SUCCESS_VALUES else ("red" if c["status"] != "invalid" else "dim")
            )
            cell = Text(f"{c['status']}{wall}{nodes}", style=style)
            if c["message"] and c["status"] not in SUCCESS_VALUES:
                cell.append("\n" + short_message(c["message"], r["level"], message_width), style="dim")
            cells.append(cell)
        t.add_row(Text(short_name(r["level"], max(20, width // 4))), r["kind"], *cells, end_section=False)
    warnings = [Text(f"warning: {w}", style="yellow") for w in data["warnings"]]
    return Group(t, *warnings)
