"""Compare in SQL: the footer's counts and sums from one aggregate query, the rows a page at a time.

Runs are joined level by level on (run_id, level_hash), the attempts' unique index: the rows of the
first run, then those of each next run at levels no earlier run had (a full outer join of any number
of runs, without sorting them all). The aggregate groups the joined cells by kind and status per run
(a few hundred groups), and the figures are added up from those groups. Finished runs with level
vectors (figures.run_vectors) have the same groups computed from those, in memory. Two finished runs
never change: their figures are kept as a snapshot of the second run (figures.snapshots) named after
the first and its finished_at, so it holds while neither run changed; a rerun's pair with its parent
is kept once it finished, off the finishing transaction (figures.finished).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, select, text
from sqlalchemy.orm import Session

from packsolve.db.models import Run, RunSnapshot
from packsolve.figures import snapshots
from packsolve.figures.par2 import par2_limit, par2_sum
from packsolve.figures.run_vectors import make_missing, vector_cells
from packsolve.outcome import SUCCESS_VALUES, Status

Figures = dict[str, float]
# The row columns a page shows of each run, as attempts names them.
SHOWN = ("status", "wall_s", "nodes", "peak_rss_mb", "message")


def _joined(runs: Sequence[Any], part: int, columns: Sequence[str], kind: str | None = None) -> str:
    """Return the rows of runs[part] at levels no earlier run had, each joined to the later runs'."""
    picked = [f"a{part}.kind AS kind", f"a{part}.level_hash AS level_hash"]
    joins = []
    for j in range(len(runs)):
        for c in columns:
            picked.append(f"a{j}.{c} AS {c}{j}" if j >= part else f"NULL AS {c}{j}")
        if j > part:
            joins.append(
                f"LEFT JOIN attempts a{j} ON a{j}.run_id = :r{j} AND a{j}.level_hash = a{part}.level_hash"
            )
    absent = [
        f"NOT EXISTS (SELECT 1 FROM attempts x WHERE x.run_id = :r{j} AND x.level_hash = a{part}.level_hash)"
        for j in range(part)
    ]
    of_kind = [f"a{part}.kind = :kind"] if kind is not None else []
    where = " AND ".join([f"a{part}.run_id = :r{part}", *absent, *of_kind])
    return (
        f"SELECT {', '.join(picked)}, a{part}.name AS name, a{part}.seq AS seq, a{part}.id AS id "
        f"FROM attempts a{part} {' '.join(joins)} WHERE {where}"
    )


def _params(runs: Sequence[Any], kind: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {f"r{j}": r.id for j, r in enumerate(runs)}
    for j, r in enumerate(runs):  # the runs' limits, under their attempts' own (_cells' l{j})
        out[f"t{j}"], out[f"c{j}"] = r.time_limit, getattr(r, "cpu_limit", None)
    if kind is not None:
        out["kind"] = kind
    return out


def _cells(runs: Sequence[Any]) -> str:
    """Return the aggregate's query: one row per kind and combination of the runs' statuses.

    Each row counts its levels (n) and sums each run's wall time (w0, ...) and takes its largest
    peak (p0, ...): the few values every figure adds up, so the database does one grouping over
    the joined attempts instead of some fifty conditional sums per row (figures() does the rest).
    With a relative run among them, each run's PAR-2 limits are summed too (l0, ...: each attempt's
    own limit, else its run's, in par2_limit's order), which its undecided attempts score twice.
    """
    n = len(runs)
    columns = ("status", "wall_s", "peak_rss_mb") + (
        ("time_limit", "cpu_limit") if _any_relative(runs) else ()
    )
    parts = " UNION ALL ".join(_joined(runs, i, columns) for i in range(n))
    statuses = ", ".join(f"status{j}" for j in range(n))
    sums = ", ".join(f"SUM(COALESCE(wall_s{j}, 0)) AS w{j}, MAX(peak_rss_mb{j}) AS p{j}" for j in range(n))
    if _any_relative(runs):
        limit = "COALESCE(time_limit{j}, CAST(:t{j} AS FLOAT), cpu_limit{j}, CAST(:c{j} AS FLOAT))"
        sums += "".join(f", SUM({limit.format(j=j)}) AS l{j}" for j in range(n))
    return f"SELECT kind, {statuses}, COUNT(*) AS n, {sums} FROM ({parts}) joined GROUP BY kind, {statuses}"


def _any_relative(runs: Sequence[Any]) -> bool:
    """Return whether a run was given relative limits (--time-limit 3x): its attempts have their own."""
    return any((getattr(r, "options", None) or {}).get("relative") for r in runs)


def _add(out: Figures, name: str, value: float) -> None:
    out[name] = out.get(name, 0.0) + value


def _fold(runs: Sequence[Any], out: Figures, row: Any) -> None:
    """Add one group of cells (same kind, same status per run) to its kind's figures."""
    n = len(runs)
    status = [row[f"status{j}"] for j in range(n)]
    count = float(row["n"])
    wall = [float(row[f"w{j}"]) for j in range(n)]
    par2 = [par2_sum(status[j], count, wall[j], par2_limit(runs[j])) for j in range(n)]
    for j in range(n):  # a relative run's undecided attempts score twice their own limits (_cells' l{j})
        own = row.get(f"l{j}")
        if own is not None and par2[j] is not None and status[j] not in SUCCESS_VALUES:
            par2[j] = 2.0 * float(own)
    decided = [s in SUCCESS_VALUES for s in status]
    common = all(p is not None for p in par2)
    _add(out, "rows", count)
    present = all(s is not None for s in status)
    _add(out, "differs", count if present and any(s != status[0] for s in status) else 0.0)
    _add(out, "common", count if common else 0.0)
    for j in range(n):
        both = decided[0] and decided[j]
        shared = par2[0] is not None and par2[j] is not None
        _add(out, f"levels{j}", count if status[j] is not None else 0.0)
        _add(out, f"solved{j}", count if status[j] == Status.SOLVED.value else 0.0)
        _add(out, f"decided{j}", count if decided[j] else 0.0)
        if par2[j] is not None:  # a sum over no cell is absent, as SQL's SUM of nothing is NULL
            _add(out, f"par2_{j}", par2[j] or 0.0)
        if row[f"p{j}"] is not None:
            out[f"peak{j}"] = max(out.get(f"peak{j}", float(row[f"p{j}"])), float(row[f"p{j}"]))
        _add(out, f"both{j}", count if both else 0.0)
        _add(out, f"both_base_wall{j}", wall[0] if both else 0.0)
        _add(out, f"both_wall{j}", wall[j] if both else 0.0)
        _add(out, f"shared{j}", count if shared else 0.0)
        _add(out, f"shared_base_par2{j}", (par2[0] or 0.0) if shared else 0.0)
        _add(out, f"shared_par2{j}", (par2[j] or 0.0) if shared else 0.0)
        _add(out, f"common_par2{j}", (par2[j] or 0.0) if common else 0.0)
        _add(out, f"common_base_par2{j}", (par2[0] or 0.0) if common else 0.0)


def read_figures(db: Session | Connection, runs: Sequence[Any]) -> dict[str, Figures]:
    """Return {kind: {figure: value}} over the runs' attempts: their grouped cells, then a fold.

    The cells come from the runs' level vectors when every run is finished with one (figures.run_vectors),
    else from one aggregate query over their attempts: the same groups either way.

    Per kind: rows, differs (levels every run has, statuses not all equal), common (levels every
    run scored); per run j: levels, solved, decided, par2_ (absent if no cell scored), peak (absent
    if none measured), and against the first run both/shared (decided/scored by both, with their
    wall and PAR-2 sums) and common_par2/common_base_par2.
    """
    # A run's vector holds no attempt's own limit: a relative run's cells are aggregated in SQL.
    cells = None if _any_relative(runs) else vector_cells(db, runs)
    rows: Iterable[Any] = (
        cells if cells is not None else db.execute(text(_cells(runs)), _params(runs, None)).mappings()
    )
    out: dict[str, Figures] = {}
    for row in rows:
        _fold(runs, out.setdefault(row["kind"], {}), row)
    return out


def combined(by_kind: dict[str, Figures], kind: str | None) -> Figures:
    """Return the figures of one kind (None: of every kind): counts and sums add, peaks take the largest."""
    out: Figures = {}
    for k, figures in by_kind.items():
        if kind is not None and k != kind:
            continue
        for name, value in figures.items():
            if name.startswith("peak"):
                out[name] = max(out.get(name, value), value)
            else:
                out[name] = out.get(name, 0.0) + value
    return out


def pair_name(a: Any) -> str:
    """Return the name of the snapshot of a pair (a, b) kept with run b: run a and its finished_at then."""
    return f"compare/{a.id}@{a.finished_at.isoformat()}"


def _kept(db: Session | Connection, a: Any, b: Any) -> dict[str, Figures] | None:
    """Return the pair's kept figures if both runs are still finished as they were then, else None."""
    return snapshots.kept(db, b.id, pair_name(a))  # type: ignore[no-any-return]


def _keep(db: Session | Connection, a: Any, b: Any, by_kind: dict[str, Figures]) -> None:
    """Keep the pair's figures with run b, replacing any kept with an earlier finish of run a."""
    earlier = RunSnapshot.name.startswith(f"compare/{a.id}@", autoescape=True)
    snapshots.keep(db, b.id, pair_name(a), by_kind, replaces=earlier)


def compare_figures(db: Session | Connection, runs: Sequence[Any]) -> dict[str, Figures]:
    """Return {kind: figures} of the runs: kept for two finished runs, read (and kept) otherwise.

    Only a pair of finished runs is kept: a run going changes, and more runs make too many sets.
    """
    pair = len(runs) == 2 and all(r.finished_at is not None for r in runs)
    if pair:
        kept = _kept(db, runs[0], runs[1])
        if kept is not None:
            return kept
    make_missing(db, runs)  # the first compare of a finished run packs its vector, for the next ones
    by_kind = read_figures(db, runs)
    if pair and by_kind:  # a read-only reader computes them each time
        _keep(db, runs[0], runs[1], by_kind)
    return by_kind


def keep_rerun_pairs(db: Session | Connection, run_id: int) -> int:
    """Read and keep the figures of a finished run against its parent, and of its finished reruns.

    The pairs the run page links to compare (parent first), so that their first compare reads kept
    figures. Return how many pairs.
    """
    fields = (Run.id, Run.time_limit, Run.cpu_limit, Run.finished_at, Run.options)
    this = db.execute(select(*fields, Run.parent_id).where(Run.id == run_id)).one()
    if this.finished_at is None:
        return 0
    pairs: list[tuple[Any, Any]] = []
    if this.parent_id is not None:
        parent = db.execute(select(*fields).where(Run.id == this.parent_id)).one_or_none()
        if parent is not None and parent.finished_at is not None:
            pairs.append((parent, this))
    reruns = select(*fields).where(Run.parent_id == run_id, Run.finished_at.is_not(None), Run.id != run_id)
    pairs += [(this, rerun) for rerun in db.execute(reruns.order_by(Run.id))]
    for pair in pairs:
        if _kept(db, *pair) is None:
            make_missing(db, pair)
            _keep(db, *pair, read_figures(db, pair))
    return len(pairs)


def _part_count(db: Session | Connection, runs: Sequence[Any], part: int, kind: str | None) -> int:
    sql = f"SELECT COUNT(*) FROM ({_joined(runs, part, ('status',), kind)}) p"
    return int(db.execute(text(sql), _params(runs, kind)).scalar() or 0)


def compare_rows(
    db: Session | Connection,
    runs: Sequence[Any],
    kind: str | None,
    differs: bool,
    offset: int,
    limit: int,
) -> list[dict[str, Any]]:
    """Return a page of rows in compare_runs' order: the first run's levels by seq, then the others'.

    Each row: level, level_hash, kind and {status0, wall_s0, ...} per run (None where it lacks the
    level). differs keeps levels every run has whose statuses are not all equal: the first run's only.
    """
    n = len(runs)
    unequal = " OR ".join(f"status{j} <> status0" for j in range(1, n)) or "1 = 0"  # one run: none differ
    every = " AND ".join(f"status{j} IS NOT NULL" for j in range(n))
    rows: list[dict[str, Any]] = []
    skip = offset
    for part in range(1 if differs else n):
        sql = f"SELECT * FROM ({_joined(runs, part, SHOWN, kind)}) p"
        if differs:
            sql += f" WHERE {every} AND ({unequal})"
        sql += " ORDER BY seq, id LIMIT :lim OFFSET :off"
        got = db.execute(text(sql), _params(runs, kind) | {"lim": limit - len(rows), "off": skip}).mappings()
        found = [dict(r) for r in got]
        rows += found
        if len(rows) >= limit:
            break
        # This part ended within the page: the next starts at its first row, else past what it skipped.
        skip = 0 if found else max(0, skip - _part_count(db, runs, part, kind))
    return rows
