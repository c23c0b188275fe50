"""`report matrix`: levels × heuristics side by side, the best per level marked, and the virtual best solver.

A column is a run, or, for a run that tried some kind with several heuristics, one column per
heuristic of that run; so three one-heuristic runs of a pack and one run of three heuristics
give the same matrix. Levels are matched by content hash, as `report compare` matches them.
"""

from __future__ import annotations

from typing import Any, TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Attempt, Run
from packsolve.errors import OptionError
from packsolve.figures.matrix import Cell, best_of, column_totals, run_columns, virtual_best
from packsolve.figures.par2 import par2, par2_limit
from packsolve.report.cactus import Scatter, ScatterPoint
from packsolve.report.metrics import rounded

# --sort besides a column's label: pack order, or the levels the best heuristic took longest on first.
SORTS = ("level", "best")


class MatrixColumn(TypedDict):
    """One column: a run, or one heuristic of a run; its totals over the levels every column has."""

    run: int
    heuristic: str
    label: str
    decided: int
    par2_s: float
    best_on: int  # levels on which this column was the best


class MatrixCell(TypedDict):
    """One column's result on one level."""

    status: str
    wall_s: float | None
    nodes: int | None
    par2_s: float | None


class MatrixRow(TypedDict):
    """One level: a cell per column (None where the column did not attempt it), the best column's index."""

    level: str
    level_hash: str
    kind: str
    cells: list[MatrixCell | None]
    best: int | None


class VirtualBestFigures(TypedDict):
    """The virtual best solver (the best column per level) against the best single column."""

    levels: int
    decided: int
    par2_s: float
    single: str | None
    single_decided: int
    single_par2_s: float
    saves_s: float
    saves_pct: float | None


class Matrix(TypedDict):
    """`report matrix`: its columns, a row per level, and the virtual best solver."""

    columns: list[MatrixColumn]
    rows: list[MatrixRow]
    virtual_best: VirtualBestFigures


def matrix_data(session: Session, runs: list[Run], sort: str = "level", kind: str | None = None) -> Matrix:
    """Return the matrix of runs' attempts (only kind's with kind), rows ordered by sort.

    sort: "level" (pack order of the first run having the level), "best" (the longest
    best PAR-2 first), or a column's label (that column's PAR-2, longest first; levels it
    lacks last). Raise OptionError for another sort, naming the ones there are.
    """
    keys: list[tuple[int, str | None]] = []  # (run, heuristic or #slot, or None for the whole run)
    names: dict[tuple[int, str | None], str] = {}  # a matrix run's columns' names
    found: list[tuple[int, Any, Run]] = []
    for run in runs:
        found += _placed(session, run, kind, keys, names)
    table: dict[str, MatrixRow] = {}
    cells: dict[str, list[Cell | None]] = {}
    for col, a, run in found:
        row = table.get(a.level_hash)
        if row is None:
            row = table[a.level_hash] = MatrixRow(
                level=a.name, level_hash=a.level_hash, kind=a.kind, cells=[None] * len(keys), best=None
            )
            cells[a.level_hash] = [None] * len(keys)
        score = par2(a.status, a.wall_s, par2_limit(run, a))
        cells[a.level_hash][col] = Cell(a.status, a.wall_s, a.nodes, score)
        row["cells"][col] = MatrixCell(
            status=a.status, wall_s=rounded(a.wall_s), nodes=a.nodes, par2_s=rounded(score)
        )
    for h, row in table.items():
        row["best"] = best_of(cells[h])
    columns = _columns(runs, keys, names)
    grid = list(cells.values())
    for column, totals in zip(columns, column_totals(grid, len(keys)), strict=True):
        column["decided"], column["par2_s"], column["best_on"] = (
            totals.decided,
            round(totals.par2_s, 4),
            totals.best_on,
        )
    vbs = virtual_best(grid, len(keys))
    figures = VirtualBestFigures(
        levels=vbs.levels,
        decided=vbs.decided,
        par2_s=round(vbs.par2_s, 4),
        single=None if vbs.single is None else columns[vbs.single]["label"],
        single_decided=vbs.single_decided,
        single_par2_s=round(vbs.single_par2_s, 4),
        saves_s=round(vbs.saves_s, 4),
        saves_pct=rounded(vbs.saves_pct, 1),
    )
    return Matrix(columns=columns, rows=_sorted(list(table.values()), columns, sort), virtual_best=figures)


def _placed(
    session: Session,
    run: Run,
    kind: str | None,
    keys: list[tuple[int, str | None]],
    names: dict[tuple[int, str | None], str],
) -> list[tuple[int, Any, Run]]:
    """Return the run's attempts (of kind, if given), each with its column; add the columns to keys
    (and a column's name to names where a run of several heuristics has several columns)."""
    out: list[tuple[int, Any, Run]] = []
    q = select(
        Attempt.level_hash,
        Attempt.name,
        Attempt.kind,
        Attempt.heuristic,
        Attempt.status,
        Attempt.wall_s,
        Attempt.nodes,
        Attempt.time_limit,
        Attempt.cpu_limit,
    )
    q = q.where(Attempt.run_id == run.id).order_by(Attempt.seq, Attempt.id)
    if kind:
        q = q.where(Attempt.kind == kind)
    attempts = session.connection().execute(q).all()
    split = run_columns(run.heuristic, list(dict.fromkeys((a.kind, a.heuristic) for a in attempts)))
    for a in attempts:
        key: tuple[int, str | None] = (run.id, None)
        if split is not None:
            place = split.of[a.kind, a.heuristic]
            key = (run.id, f"#{place}")
            names[key] = split.names[place]
        if key not in keys:
            keys.append(key)
        out.append((keys.index(key), a, run))
    return out


def _columns(
    runs: list[Run], keys: list[tuple[int, str | None]], names: dict[tuple[int, str | None], str]
) -> list[MatrixColumn]:
    """Return the columns named: by heuristic (a matrix run's place: its heuristics, kinds' apart by |)
    when that tells them apart, else by run and heuristic."""
    by_id = {run.id: run for run in runs}
    shown = [names.get(key, by_id[key[0]].heuristic) for key in keys]
    distinct = len(set(shown)) == len(shown)
    return [
        MatrixColumn(
            run=r,
            heuristic=name,
            label=name if distinct else f"run {r} {name}",
            decided=0,
            par2_s=0.0,
            best_on=0,
        )
        for (r, _), name in zip(keys, shown, strict=True)
    ]


def _sorted(rows: list[MatrixRow], columns: list[MatrixColumn], sort: str) -> list[MatrixRow]:
    """Return rows in the order --sort asks for; raise OptionError for a sort there is not."""
    labels = [c["label"] for c in columns]
    if sort == "level":
        return rows
    if sort == "best":
        return sorted(rows, key=lambda r: -_best_par2(r))
    if sort not in labels:
        raise OptionError(
            "--sort", f"{sort!r} is not a sort here; choose from {', '.join([*SORTS, *labels])}"
        )
    col = labels.index(sort)
    return sorted(rows, key=lambda r: _descending(r["cells"][col]))


def _best_par2(row: MatrixRow) -> float:
    scores = [c["par2_s"] for c in row["cells"] if c is not None and c["par2_s"] is not None]
    return min(scores, default=0.0)


def _descending(cell: MatrixCell | None) -> tuple[int, float]:
    """Sort key: the longest PAR-2 first, then cells without one."""
    if cell is None or cell["par2_s"] is None:
        return (1, 0.0)
    return (0, -cell["par2_s"])


def render_matrix(data: Matrix, width: int = 80) -> Any:
    """Return the rich renderable of a matrix: the table, best cells marked, then the VBS line.

    A cell is its status and wall time on one line where the table then fits width, else on two (status
    over time): four or five heuristics hold in 80 columns, every figure whole, names cut from the left.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from packsolve.report.columns import NAME_MIN_WIDTH, name_cell

    rows = [
        [_cell_lines(cell, row["best"] == i) for i, cell in enumerate(row["cells"])] for row in data["rows"]
    ]
    feet = _footer(data["columns"])
    columns = range(len(data["columns"]))

    def need(lines_of: Any) -> list[int]:
        return [
            max([*(len(line) for r in rows for line in lines_of(r[i])), *(len(f[i]) for _, f in feet), 1])
            for i in columns
        ]

    one = need(lambda lines: [" ".join(lines)])
    # Each column takes 3 more (padding, rule), the edges 2.
    split = sum(one) + 3 * (len(one) + 1) + 2 + NAME_MIN_WIDTH > width
    widths = need(lambda lines: lines) if split else one
    t = Table(box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, title_justify="left")
    t.title = "levels × heuristics (* the best per level)"
    t.add_column("level")
    for column, w in zip(data["columns"], widths, strict=True):
        # A label longer than its figures folds (at a | between kinds' heuristics where it can).
        t.add_column(
            Text(column["label"].replace("|", "|\n") if split else column["label"], overflow="fold"),
            justify="right",
            min_width=w,
        )
    for row, cells in zip(data["rows"], rows, strict=True):
        t.add_row(name_cell(row["level"]), *("\n".join(c) if split else " ".join(c) for c in cells))
    t.add_section()
    for label, values in feet:
        t.add_row(label, *values)
    return Group(t, Text(vbs_line(data["virtual_best"])))


def _cell_lines(cell: MatrixCell | None, best: bool) -> list[str]:
    """Return a cell's text as its status and its wall time (the best marked *), or a dash."""
    from packsolve.report.cactus import time_text

    if cell is None:
        return ["—"]
    status = f"*{cell['status']}" if best else cell["status"]
    return [status] if cell["wall_s"] is None else [status, time_text(cell["wall_s"])]


def _footer(columns: list[MatrixColumn]) -> list[tuple[str, list[str]]]:
    from packsolve.report.cactus import time_text

    return [
        ("decided", [f"{c['decided']:,}" for c in columns]),
        ("PAR-2 s", [time_text(c["par2_s"]) for c in columns]),
        ("best on", [f"{c['best_on']:,}" for c in columns]),
    ]


def pair_scatter(data: Matrix, pair: str | None) -> Scatter:
    """Return the per-level PAR-2 of two columns against each other (pair: "X,Y", their labels; None: the
    first two), as `report cactus --scatter` plots two runs'; raise OptionError for a pair there is not."""
    labels = [c["label"] for c in data["columns"]]
    chosen = pair.split(",") if pair is not None else labels[:2]
    if len(chosen) != 2 or len(set(chosen)) != 2 or not set(chosen) <= set(labels):
        raise OptionError("--pair", f"{pair or '(none)'}: name two columns as X,Y, from {', '.join(labels)}")
    x, y = (labels.index(label) for label in chosen)
    points: list[ScatterPoint] = []
    for row in data["rows"]:
        a, b = row["cells"][x], row["cells"][y]
        if a is not None and b is not None and a["par2_s"] is not None and b["par2_s"] is not None:
            points.append(
                ScatterPoint(
                    level=row["level"],
                    level_hash=row["level_hash"],
                    x=a["par2_s"],
                    y=b["par2_s"],
                    x_status=a["status"],
                    y_status=b["status"],
                )
            )
    xc, yc = data["columns"][x], data["columns"][y]
    return Scatter(x_run=xc["run"], x_label=chosen[0], y_run=yc["run"], y_label=chosen[1], points=points)


def flat_rows(data: Matrix) -> list[dict[str, Any]]:
    """Return one flat dict per (level, column) for CSV: the cell, and whether it was the level's best."""
    out: list[dict[str, Any]] = []
    for row in data["rows"]:
        for i, (column, cell) in enumerate(zip(data["columns"], row["cells"], strict=True)):
            if cell is not None:
                out.append(
                    {"level": row["level"], "level_hash": row["level_hash"], "kind": row["kind"]}
                    | {
                        "run": column["run"],
                        "heuristic": column["heuristic"],
                        **cell,
                        "best": row["best"] == i,
                    }
                )
    return out


def vbs_line(v: VirtualBestFigures) -> str:
    """Return the virtual best solver's figures in one sentence."""
    if v["single"] is None:
        return "virtual best solver: no level was attempted by every column"
    pct = "" if v["saves_pct"] is None else f" ({v['saves_pct']:g} %)"
    return (
        f"virtual best solver over the {v['levels']:,} levels every column ran: {v['decided']:,} decided, "
        f"PAR-2 {v['par2_s']:g} s; best single {v['single']}: {v['single_decided']:,} decided, "
        f"PAR-2 {v['single_par2_s']:g} s; choosing per level would save {v['saves_s']:g} s{pct}"
    )
