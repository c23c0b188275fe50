"""Time `report summary`, `report hardest` and friends on a seeded database, with EXPLAIN of their queries.

    python -m benchmarks.seed_attempts sqlite:///bench.db          # 1,000,000 attempts
    python -m benchmarks.reports sqlite:///bench.db postgresql://postgres@127.0.0.1/bench \
        [--reps 7] [--markdown benchmarks/results/reports.md]

Each figure is the median of --reps calls, each in a new session, as a CLI call
makes them (engine and migration check excluded: they are paid once per process).
`hardest --all` is also timed cold: its first call folds every finished run into
level_stats; later calls only read that table.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import event, func, select, text

from benchmarks.harness import parser
from packsolve.db.models import Attempt, LevelRow, Run
from packsolve.db.session import database_url, get_engine, session_scope
from packsolve.figures.level_stats import fold_runs
from packsolve.masking import mask_url
from packsolve.report.compare import compare_runs
from packsolve.report.hardest import hardest_in_run, hardest_overall
from packsolve.report.progress import run_progress
from packsolve.report.show import level_report
from packsolve.report.summary import run_summary

TARGET_MS = 200.0


def timed(engine, fn: Callable, reps: int) -> tuple[float, float, float]:
    """Return (median wall ms, best wall ms, median CPU ms) of fn(session) over reps fresh sessions."""
    walls, cpus = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        with session_scope(engine) as session:
            fn(session)
        walls.append((time.perf_counter() - w0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    return statistics.median(walls), min(walls), statistics.median(cpus)


def captured(engine, fn: Callable) -> list[tuple[str, object]]:
    """Return the (SQL, parameters) fn(session) sends to the database."""
    seen: list[tuple[str, object]] = []

    def grab(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", grab)
    try:
        with session_scope(engine) as session:
            fn(session)
    finally:
        event.remove(engine, "before_cursor_execute", grab)
    return seen


def explain(engine, statement: str, params: object) -> str:
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if engine.dialect.name == "sqlite":
            cur.execute("EXPLAIN QUERY PLAN " + statement, params)
            return "\n".join(f"{'  ' * 0}{row[-1]}" for row in cur.fetchall())
        cur.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement, params)
        return "\n".join(row[0] for row in cur.fetchall())
    finally:
        raw.rollback()
        raw.close()


def bench(url: str, reps: int) -> list[str]:
    engine = get_engine(database_url(url))
    with session_scope(engine) as session:
        n_attempts = session.scalar(select(func.count()).select_from(Attempt))
        n_levels = session.scalar(select(func.count()).select_from(LevelRow))
        last, prev = session.scalars(select(Run.id).order_by(Run.id.desc()).limit(2)).all()
        run_size = session.scalar(select(func.count()).where(Attempt.run_id == last))
        some_hash = session.scalar(select(LevelRow.hash).limit(1))
    run = lambda s: s.get(Run, last)  # noqa: E731
    cases: list[tuple[str, Callable, bool]] = [
        ("report summary RUN", lambda s: run_summary(s, run(s)), True),
        ("report hardest --run RUN --top 20", lambda s: hardest_in_run(s, run(s), "par2", 20), True),
        ("report hardest --run RUN --by nodes", lambda s: hardest_in_run(s, run(s), "nodes", 20), False),
    ]
    lines = [f"### {engine.dialect.name}: {mask_url(str(engine.url))}", ""]
    lines.append(f"{n_attempts:,} attempts, {n_levels:,} levels; RUN = run {last} ({run_size:,} attempts)")
    lines.append("")

    # Cold: the first `hardest --all` folds every finished run not folded yet.
    def empty_stats() -> None:
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(text("TRUNCATE level_stats, level_stats_runs"))
            else:
                conn.execute(text("DELETE FROM level_stats"))
                conn.execute(text("DELETE FROM level_stats_runs"))

    def first_hardest_all() -> float:
        w0 = time.perf_counter()
        with session_scope(engine) as session:
            hardest_overall(session, "par2", 20)
        return (time.perf_counter() - w0) * 1000

    # Incremental: every run but the last is folded; the call after the last run finished folds it.
    empty_stats()
    with session_scope(engine) as session:
        fold_runs(session, list(session.scalars(select(Run.id).where(Run.id != last))))
    incremental = first_hardest_all()
    empty_stats()
    cold = first_hardest_all()
    # What autovacuum / a later ANALYZE does anyway: planner statistics for the new rows.
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE level_stats"))
    cases += [
        ("report hardest --all --top 20 (folded)", lambda s: hardest_overall(s, "par2", 20), True),
        ("report hardest --all --kind sudoku", lambda s: hardest_overall(s, "par2", 20, "sudoku"), False),
        (
            "report compare RUN RUN (2 x run size)",
            lambda s: compare_runs(s, [s.get(Run, prev), run(s)]),
            False,
        ),
        ("status RUN", lambda s: run_progress(s, run(s)), False),
        ("show HASH-PREFIX (100 attempts)", lambda s: level_report(s, some_hash[:8]), False),
    ]
    lines += ["| report | median ms | best ms | CPU ms | target |", "| --- | ---: | ---: | ---: | --- |"]
    lines.append(f"| report hardest --all, cold (folds every run once) | {cold:.0f} | | | one-off |")
    first = "report hardest --all, first call after RUN finished (folds RUN)"
    lines.append(f"| {first} | {incremental:.0f} | | | once per run |")
    for name, fn, targeted in cases:
        med, best, cpu = timed(engine, fn, reps)
        verdict = ("ok" if med < TARGET_MS else "MISSED") if targeted else ""
        lines.append(f"| {name} | {med:.1f} | {best:.1f} | {cpu:.1f} | {verdict} |")
        print(
            f"{engine.dialect.name:10} {name:45} median {med:7.1f} ms  best {best:7.1f} ms  cpu {cpu:7.1f} ms"
        )
    lines.append("")
    for name, fn, targeted in cases:
        if not targeted:
            continue
        lines += [f"#### EXPLAIN: {name}", "", "```"]
        for statement, params in captured(engine, fn):
            if statement.lstrip().upper().startswith("SELECT") and "level_stats_runs" not in statement:
                lines += [" ".join(statement.split()), "->", explain(engine, statement, params), ""]
        lines += ["```", ""]
    return lines


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("urls", nargs="+")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--markdown", type=Path, default=None, help="Write the tables and EXPLAIN output here.")
    args = ap.parse_args()
    import os
    import platform

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    out = [
        "# Report timings on a seeded database",
        "",
        f"Machine: {platform.node()}, {os.cpu_count()} cores, load average {load} at the start",
        "(other work was running: wall times include waiting for a core; CPU ms is this process's own time).",
        f"Median of {args.reps} calls, each in a new session. Target: under {TARGET_MS:.0f} ms for summary",
        "and hardest.",
        "",
    ]
    for url in args.urls:
        out += bench(url, args.reps)
    if args.markdown:
        args.markdown.write_text("\n".join(out) + "\n")
        print(f"written to {args.markdown}")


if __name__ == "__main__":
    main()
