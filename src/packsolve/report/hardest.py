"""`report hardest`: the levels that cost the most, in one run or across every run (by content hash)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from sqlalchemy import case, select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, LevelRow, LevelStats, Run
from packsolve.db.parts import attempt_seconds, split_attempt
from packsolve.figures import level_stats
from packsolve.figures.par2 import par2_limit_sql, par2_sql
from packsolve.outcome import NOT_RUN_VALUES, SUCCESS_VALUES
from packsolve.report.columns import name_cell
from packsolve.report.metrics import rounded
from packsolve.report.text import short_message
from packsolve.request import HeuristicMatrix

BY = ("par2", "time", "nodes")
# The attempt was split into parts (their runs are kept: models.Part).
_SPLIT = split_attempt()
# An attempt's columns a ranking shows (with its PAR-2 after them).
_COLUMNS = (
    Attempt.name,
    Attempt.level_hash,
    Attempt.kind,
    Attempt.run_id,
    Attempt.heuristic,
    Attempt.status,
    Attempt.wall_s,
    Attempt.cpu_s,
    Attempt.nodes,
    Attempt.message,
)


class HardAttempt(TypedDict):
    """One of a run's hardest attempts, ranked."""

    rank: int
    level: str
    level_hash: str
    kind: str
    run: int
    heuristic: str
    status: str
    wall_s: float | None
    cpu_s: float | None
    nodes: int | None
    par2_s: float | None
    message: str | None


class HardLevel(TypedDict):
    """One of the hardest levels across every run (each level once), ranked, with its figures over them."""

    rank: int
    level: str | None
    level_hash: str
    kind: str
    attempts: int
    decided: int
    solved: int
    best_wall_s: float | None
    best_nodes: int | None
    max_par2_s: float | None
    max_nodes: int | None
    last_run: int | None


# Either shape, as the table and the pages take them.
HardestRows = Sequence[Mapping[str, Any]]


def hardest_in_run(
    session: Session, run: Run, by: str = "par2", top: int = 20, kind: str | None = None
) -> list[HardAttempt]:
    """Return the top attempts of run, unsolved first (by PAR-2), then solved ones by `by`.

    Ties (all timeouts have the same PAR-2) go to the attempt that spent more CPU time: seconds mean
    the same thing in every kind, where a node of one kind is not a node of another. A decided level
    split into parts counts, by par2 or time, its parts' CPU summed (what it cost), not its wall time.

    A run that tried levels with several heuristics (a matrix) ranks each level once, by its best
    attempt: decided before undecided, then the lowest PAR-2 (_best_per_level).
    """
    if HeuristicMatrix.parse(run.heuristic).is_matrix:
        return _best_per_level(session, run, by, top, kind)
    par2 = par2_sql(Attempt.status, Attempt.wall_s, par2_limit_sql(Run, Attempt))
    unsolved = Attempt.status.not_in(SUCCESS_VALUES)
    spent = attempt_seconds()
    key = {"par2": spent, "time": spent, "nodes": Attempt.nodes}[by]
    q = (
        select(*_COLUMNS, par2.label("par2"))
        .join(Run, Run.id == Attempt.run_id)
        .where(Attempt.run_id == run.id, Attempt.status.not_in(NOT_RUN_VALUES))
        .order_by(
            case((unsolved, 1), else_=0).desc(),
            case((unsolved, par2), else_=key).desc().nulls_last(),
            Attempt.cpu_s.desc().nulls_last(),
            Attempt.seq,
        )
        .limit(top)
    )
    if kind:
        q = q.where(Attempt.kind == kind)
    return _ranked(session.execute(q))


def _best_per_level(session: Session, run: Run, by: str, top: int, kind: str | None) -> list[HardAttempt]:
    """Return hardest_in_run's ranking of a matrix run, each level once: its best attempt's figures."""
    par2 = par2_sql(Attempt.status, Attempt.wall_s, par2_limit_sql(Run, Attempt))
    q = (
        select(*_COLUMNS, par2.label("par2"), Attempt.seq, _SPLIT.label("split"))
        .join(Run, Run.id == Attempt.run_id)
        .where(Attempt.run_id == run.id, Attempt.status.not_in(NOT_RUN_VALUES))
    )
    if kind:
        q = q.where(Attempt.kind == kind)
    best: dict[str, Any] = {}
    for row in session.execute(q):
        held = best.get(row.level_hash)
        if held is None or _goodness(row) < _goodness(held):
            best[row.level_hash] = row

    def hardness(row: Any) -> tuple[Any, ...]:
        # hardest_in_run's order: undecided first by PAR-2, then by `by`; more CPU time; pack order.
        unsolved = row.status not in SUCCESS_VALUES
        spent = row.cpu_s if row.split else row.wall_s  # a split level: its parts' CPU (hardest_in_run)
        figure = row.par2 if unsolved else (row.nodes if by == "nodes" else spent)
        return (not unsolved, figure is None, -(figure or 0), -(row.cpu_s or 0), row.seq)

    ranked = sorted(best.values(), key=hardness)[:top]
    return _ranked(tuple(row)[: len(_COLUMNS) + 1] for row in ranked)


def _goodness(row: Any) -> tuple[Any, ...]:
    """How good an attempt of a level is, least first: decided, then the lowest PAR-2, then pack order."""
    return (row.status not in SUCCESS_VALUES, row.par2 if row.par2 is not None else float("inf"), row.seq)


def _ranked(rows: Any) -> list[HardAttempt]:
    """Return the attempts (rows of _COLUMNS and their PAR-2), in order, ranked from 1."""
    out: list[HardAttempt] = []
    for rank, (name, h, k, run_id, heuristic, status, wall, cpu, nodes, message, score) in enumerate(rows, 1):
        out.append(
            {
                "rank": rank,
                "level": name,
                "level_hash": h,
                "kind": k,
                "run": run_id,
                "heuristic": heuristic,
                "status": status,
                "wall_s": rounded(wall),
                "cpu_s": rounded(cpu),
                "nodes": nodes,
                "par2_s": rounded(score),
                "message": message,
            }
        )
    return out


def _key(row: dict[str, Any], by: str) -> tuple:
    """Sort key (ascending = hardest first) of one level's figures across runs.

    Never-decided levels tie on PAR-2 when every attempt timed out: the one tried more often comes
    first, then by hash (nodes are not compared across kinds). The SQL of hardest_overall agrees.
    """
    if not row["decided"]:
        return (0, -(row["max_par2_s"] or 0.0), -row["attempts"], row["level_hash"])
    if by == "nodes":
        return (1, -(row["best_nodes"] or 0), -(row["best_wall_s"] or 0.0))
    return (1, -(row["best_wall_s"] or 0.0), -(row["best_nodes"] or 0))


def hardest_overall(
    session: Session, by: str = "par2", top: int = 20, kind: str | None = None
) -> list[HardLevel]:
    """Return the top levels over every run, each level once: never-decided first, then by best effort.

    A level's figures across runs: attempts, decided/solved counts, its best
    (fastest, fewest nodes) decided attempt and its largest PAR-2 and nodes.
    """
    level_stats.refresh(session)
    live = level_stats.live_rows(session, kind)
    for row in level_stats.stats_rows(session, list(live)):
        level_stats.merge(live, row)
    s = LevelStats
    never = case((s.decided == 0, 1), else_=0)
    solved_key = s.best_nodes if by == "nodes" else s.best_wall_s
    q = select(s).order_by(
        never.desc(),
        case((s.decided == 0, s.max_par2_s), else_=solved_key).desc().nulls_last(),
        case((s.decided == 0, s.attempts), else_=s.best_nodes).desc().nulls_last(),
        s.level_hash,
    )
    if kind:
        q = q.where(s.kind == kind)
    # Levels also met in running runs are merged above; fetch enough to replace them.
    candidates = {r.level_hash: level_stats.row_of(r) for r in session.scalars(q.limit(top + len(live)))}
    candidates.update(live)
    ranked = sorted(candidates.values(), key=lambda r: _key(r, by))[:top]
    hashes = [r["level_hash"] for r in ranked]
    names = {
        h: n
        for h, n in session.execute(select(LevelRow.hash, LevelRow.name).where(LevelRow.hash.in_(hashes)))
    }
    return [
        HardLevel(
            rank=i,
            level=names.get(r["level_hash"]),
            level_hash=r["level_hash"],
            kind=r["kind"],
            attempts=r["attempts"],
            decided=r["decided"],
            solved=r["solved"],
            best_wall_s=rounded(r["best_wall_s"]),
            best_nodes=r["best_nodes"],
            max_par2_s=rounded(r["max_par2_s"]),
            max_nodes=r["max_nodes"],
            last_run=r["last_run_id"],
        )
        for i, r in enumerate(ranked, 1)
    ]


HEADERS = {
    "rank": "#",
    "best_wall_s": "best s",
    "best_nodes": "best nodes",
    "max_par2_s": "max PAR-2",
    "wall_s": "wall s",
    "par2_s": "PAR-2",
    "attempts": "tries",
}


def render_hardest(rows: Sequence[Mapping[str, Any]], title: str = "hardest levels", width: int = 100) -> Any:
    """Return a rich table of hardest rows (either shape): names shortened from the left, why they failed."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    if rows and "attempts" in rows[0]:
        cols = ["rank", "level", "kind", "attempts", "solved", "best_wall_s", "best_nodes", "max_par2_s"]
    else:
        cols = ["rank", "level", "kind", "heuristic", "status", "wall_s", "nodes", "par2_s"]
    for c in cols:
        if c == "level":
            t.add_column("level / why it failed" if "status" in cols else "level", ratio=1)
        else:
            left = c in ("kind", "heuristic", "status")
            t.add_column(HEADERS.get(c, c), justify="left" if left else "right", no_wrap=True)
    shown = [{c: _cell(r[c], c) for c in cols if c != "level"} for r in rows]
    # What the other columns (never wrapped) leave for the names, two spaces between columns.
    others = sum(max([len(HEADERS.get(c, c))] + [len(s[c]) for s in shown]) for c in cols if c != "level")
    name_width = max(12, width - others - 2 * (len(cols) - 1) - 1)
    for r, s in zip(rows, shown, strict=True):
        # Text, not markup: a level name is whatever the pack's author wrote.
        why = None
        if r.get("message") and r.get("status") not in SUCCESS_VALUES:
            why = Text(short_message(r["message"], r["level"], 2 * name_width), style="dim")
        name = name_cell(r["level"], why)  # on one line, shortened from the left to its column
        t.add_row(*[name if c == "level" else Text(s[c]) for c in cols])
    return t


def _cell(value: Any, column: str) -> str:
    """Return a figure of a hardest row as the table shows it."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, int) and column != "rank":
        return f"{value:,}"  # node counts run to millions: separated, for people
    return str(value)
