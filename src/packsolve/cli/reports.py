"""`packsolve report`: summary, failures, hardest, compare, matrix, cactus, curve, html, from the database."""

from __future__ import annotations

from typing import Any

import click

from packsolve.bounds import COUNT
from packsolve.cli.group import Invocation
from packsolve.cli.options import (
    emit,
    err_console,
    format_option,
    out_console,
    output_file,
    print_summary,
    with_database,
    within,
)
from packsolve.errors import OptionError, ReportError


@click.group()
def report() -> None:
    """Reports computed from the database."""


@report.command("summary")
@click.argument("run", required=False)
@click.option(
    "--with-reruns",
    is_flag=True,
    help="Merge RUN with its reruns: each level's best result across them, and which run got it.",
)
@format_option
@with_database("read")
def report_summary(invocation: Invocation, run: str | None, with_reruns: bool, fmt: str):
    """Solved X of Y, counts per status (with a message), CPU and wall time of RUN (default: latest)."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope

    engine = invocation.engine
    with session_scope(engine) as session:
        target = resolve_run(session, run)
        if with_reruns:
            from packsolve.report.merged import merged_view, render_merged

            merged = merged_view(session, target)
    if not with_reruns:
        print_summary(engine, target.id, fmt)
    elif fmt == "csv":
        emit(merged["levels"], fmt, lambda d: d)
    else:
        emit(merged, fmt, lambda m: render_merged(m, out_console.width))


@report.command("failures")
@click.argument("run", required=False)
@click.option("--examples", type=within(COUNT), default=3, show_default=True, help="Levels named per group.")
@format_option
@with_database("read")
def report_failures(invocation: Invocation, run: str | None, examples: int, fmt: str):
    """Why RUN's levels failed: grouped by status and message, with counts, examples and a rerun command."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.failures import failure_groups, flat_groups, render_failures

    with session_scope(invocation.engine) as session:
        data = failure_groups(session, resolve_run(session, run), examples)
    if fmt == "csv":
        emit(flat_groups(data), fmt, lambda d: d)
    else:
        emit(data, fmt, render_failures)


def _runs(session: Any, refs: tuple[str, ...]) -> list[Any]:
    """Return the runs named by id, label or 'latest', in order; raise ReportError if one repeats."""
    from packsolve.db.runs import resolve_run

    runs = [resolve_run(session, ref) for ref in refs or ("latest",)]
    if len({r.id for r in runs}) != len(runs):
        raise ReportError("a run is named twice")
    return runs


@report.command("hardest")
@click.option("--run", "run_ref", default=None, help="One run (id or label) [default: the latest].")
@click.option("--all", "all_runs", is_flag=True, help="Across every run: each level (content hash) once.")
@click.option("--kind", default=None, help="Only levels of this kind.")
@click.option("--by", type=click.Choice(["par2", "time", "nodes"]), default="par2", show_default=True)
@click.option("--top", type=within(COUNT, low=1), default=20, show_default=True)
@format_option
@with_database("read")
def report_hardest(
    invocation: Invocation,
    run_ref: str | None,
    all_runs: bool,
    kind: str | None,
    by: str,
    top: int,
    fmt: str,
):
    """The hardest levels: unsolved first (by PAR-2, ties by CPU time spent), then solved ones by --by."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.hardest import HardestRows, hardest_in_run, hardest_overall, render_hardest

    if all_runs and run_ref:
        raise click.UsageError("give --run or --all, not both")
    rows: HardestRows
    with session_scope(invocation.engine) as session:
        if all_runs:
            resolve_run(session, "latest")  # no run at all: say so, as every report does
            rows, title = hardest_overall(session, by, top, kind), "hardest levels across all runs"
        else:
            run = resolve_run(session, run_ref)
            rows, title = hardest_in_run(session, run, by, top, kind), f"hardest levels of run {run.id}"
    emit(rows, fmt, lambda r: render_hardest(r, title, out_console.width))


@report.command("compare")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "--differs", is_flag=True, help="Only levels every run attempted whose status is not the same in all."
)
@click.option(
    "--with-missing", is_flag=True, help="With --differs: also levels some of the runs did not attempt."
)
@click.option(
    "--only-solved-by", default=None, metavar="RUN", help="Only levels decided by RUN and no other."
)
@click.option("--kind", default=None, help="Only levels of this kind.")
@format_option
@with_database("read")
def report_compare(
    invocation: Invocation,
    runs: tuple[str, ...],
    differs: bool,
    with_missing: bool,
    only_solved_by: str | None,
    kind: str | None,
    fmt: str,
):
    """One row per level, one column group per run (and why it failed); footer: PAR-2 and speedup.

    The footer's PAR-2 is over the levels every run attempted, so a rerun of a
    few levels compares fairly with its parent.
    """
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.compare import compare_runs, flat_rows, render_compare

    if len(runs) < 2:
        raise click.UsageError("compare needs at least two runs")
    with session_scope(invocation.engine) as session:
        selected = _runs(session, runs)
        only = resolve_run(session, only_solved_by) if only_solved_by else None
        data = compare_runs(session, selected, differs, only, kind, with_missing)
    if fmt != "table":  # the table prints them itself; scripts still get them, apart from the data
        for w in data["warnings"]:
            err_console.print(f"warning: {w}", markup=False, highlight=False, style="yellow")
    if fmt == "csv":
        emit(flat_rows(data), fmt, lambda d: d)
    else:
        emit(data, fmt, lambda d: render_compare(d, out_console.width))


@report.command("matrix")
@click.argument("runs", nargs=-1)
@click.option(
    "--sort",
    default="level",
    show_default=True,
    help="level (pack order), best (longest best time first), or a column's label (by its PAR-2).",
)
@click.option("--kind", default=None, help="Only levels of this kind.")
@click.option(
    "--scatter",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also plot two columns' per-level times against each other to this .png/.svg/.pdf.",
)
@click.option(
    "--pair", default=None, metavar="X,Y", help="The two columns --scatter plots [default: the first two]."
)
@format_option
@with_database("read")
def report_matrix(
    invocation: Invocation,
    runs: tuple[str, ...],
    sort: str,
    kind: str | None,
    scatter: str | None,
    pair: str | None,
    fmt: str,
):
    """Levels × heuristics of RUNS (default: latest), the best per level marked, and the virtual best solver.

    A column is a run, or a place in the --heuristic text of a run of several heuristics
    side by side; the virtual best solver takes each level's best column, against the best single one.
    """
    from packsolve.db.session import session_scope
    from packsolve.report.cactus import save, scatter_figure
    from packsolve.report.matrix import flat_rows, matrix_data, pair_scatter, render_matrix

    if scatter:
        _plot_file(scatter, "--scatter")
    with session_scope(invocation.engine) as session:
        data = matrix_data(session, _runs(session, runs), sort, kind)
    if scatter:
        save(scatter_figure(pair_scatter(data, pair)), scatter)
        err_console.print(f"scatter plot written to {scatter}")
    if fmt == "csv":
        emit(flat_rows(data), fmt, lambda d: d)
    else:
        emit(data, fmt, lambda d: render_matrix(d, out_console.width))


@report.command("cactus")
@click.argument("runs", nargs=-1)
@click.option(
    "--output",
    "-o",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also plot it to this .png or .svg (without: the table, or its JSON or CSV, alone).",
)
@click.option(
    "--scatter",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also plot two runs' per-level times against each other to this .png/.svg.",
)
@format_option
@with_database("read")
def report_cactus(
    invocation: Invocation, runs: tuple[str, ...], output: str | None, scatter: str | None, fmt: str
):
    """Cactus of RUNS (default: latest): levels decided within a time, one line per run (per heuristic of
    a run of several side by side); -o plots it."""
    from packsolve.db.session import session_scope
    from packsolve.report.cactus import cactus_data, cactus_figure, save, scatter_data, scatter_figure

    for path, option in ((output, "--output"), (scatter, "--scatter")):
        if path:
            _plot_file(path, option)
    with session_scope(invocation.engine) as session:
        selected = _runs(session, runs)
        if scatter and len(selected) != 2:
            raise click.UsageError("--scatter needs exactly two runs")
        data = cactus_data(session, selected)
        points = scatter_data(session, *selected) if scatter else None
    written = []
    if output:
        save(cactus_figure(data), output)
        written.append(f"cactus plot written to {output}")
    if scatter and points is not None:
        save(scatter_figure(points), scatter)
        written.append(f"scatter plot to {scatter}")
    if written:
        err_console.print(", ".join(written))
    if fmt == "csv":
        rows = [
            {"run": d["run"], "heuristic": d["heuristic"], "decided": i, "wall_s": t}
            for d in data
            for i, t in enumerate(d["times"], 1)
        ]
        emit(rows, fmt, lambda r: r)
    elif fmt == "json":
        emit({"cactus": data, "scatter": points}, fmt, lambda d: d)
    else:
        from rich.table import Table

        from packsolve.report.cactus import time_text
        from packsolve.report.columns import keep_figures_whole

        t = Table("run")
        for name in ("decided", "fastest s", "slowest s"):
            t.add_column(name, justify="right")
        for d in data:
            ends = [time_text(x) for x in d["times"][:1] + d["times"][-1:]] or ["—", "—"]
            t.add_row(d["label"], f"{d['decided']:,}", ends[0], ends[-1])
        out_console.print(keep_figures_whole(t))


@report.command("curve")
@click.argument("run", required=False)
@click.option("--kind", default=None, help="Only levels of this kind.")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also plot it, per kind, to this .png, .svg or .pdf.",
)
@format_option
@with_database("read")
def report_curve(invocation: Invocation, run: str | None, kind: str | None, output: str | None, fmt: str):
    """Time and nodes against level size, per kind, for RUN (default: latest): the difficulty curve."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.cactus import save
    from packsolve.report.curve import curve_figure, size_curve

    if output:
        _plot_file(output, "--output")
    with session_scope(invocation.engine) as session:
        curve = size_curve(session, resolve_run(session, run), kind)
    if output:
        save(curve_figure(curve), output)
        err_console.print(f"size curve plotted to {output}")
    if fmt == "json":
        emit(curve.as_json(), fmt, lambda d: d)
    elif fmt == "csv":
        emit(curve.as_json()["points"], fmt, lambda d: d)
    else:
        emit(curve, fmt, _curve_table)


def _plot_file(path: str, option: str) -> None:
    """Refuse, before anything is read, a plot file that cannot be written or has no plot format."""
    from packsolve.report.cactus import FORMATS

    output_file(path, option)
    if not path.lower().endswith(FORMATS):
        raise OptionError(option, f"{path}: a plot file ends in {', '.join(FORMATS)}")


def _curve_table(curve: Any) -> Any:
    """Return the rich table of a size curve (one row per kind and size)."""
    from rich import box
    from rich.table import Table

    from packsolve.report.cactus import time_text
    from packsolve.report.columns import keep_figures_whole

    def seconds(x: float | None) -> str:
        return "—" if x is None else time_text(x)

    def count(x: float | None) -> str:
        return "—" if x is None else f"{x:,.0f}"

    # Light rules: 80 columns hold eight columns of numbers as long as 123,456,789 without wrapping one.
    t = Table(
        title=f"{curve.label}: time and nodes against level size",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    t.add_column("kind", no_wrap=True)  # whole: kinds are told apart by their names
    for name in ("size", "levels", "decided", "median s", "max s", "median nodes", "max nodes"):
        t.add_column(name, justify="right")
    for p in curve.points:
        t.add_row(
            p.kind,
            f"{p.size:,}",
            f"{p.levels:,}",
            f"{p.decided:,}",
            seconds(p.wall_s_median),
            seconds(p.wall_s_max),
            count(p.nodes_median),
            count(p.nodes_max),
        )
    if not curve.points:
        t.caption = "no attempt of this run has run yet"
    return keep_figures_whole(t)  # a number is never split across lines


@report.command("html")
@click.argument("runs", nargs=-1)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default="report.html", show_default=True)
@click.option(
    "--top", type=within(COUNT, low=1), default=20, show_default=True, help="Rows of the hardest table."
)
@click.option(
    "--max-pictures",
    type=within(COUNT),
    default=40,
    show_default=True,
    help="Levels pictured (SVG with the best solution), the hardest first.",
)
@with_database("read")
def report_html(invocation: Invocation, runs: tuple[str, ...], output: str, top: int, max_pictures: int):
    """One self-contained HTML file for RUNS (default: latest): summary, plots, hardest, every level."""
    from pathlib import Path

    from packsolve.db.session import session_scope
    from packsolve.report.html import html_report

    output_file(output)
    if not output.lower().endswith((".html", ".htm")):
        raise OptionError("--output", f"{output}: the report is an HTML page; name it .html")
    with session_scope(invocation.engine) as session:
        page = html_report(session, _runs(session, runs), top, max_pictures)
    Path(output).write_text(page, encoding="utf-8")
    err_console.print(f"report written to {output} ({len(page) / 1024:.0f} KiB)")
