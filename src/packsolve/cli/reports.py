"""Commands that read results: status, report (summary, hardest, compare, cactus, html), export, show."""

from __future__ import annotations

import csv
import json
import sys
import time
from typing import Any

import click

from packsolve.cli.options import (
    database_option,
    emit,
    err_console,
    format_of,
    format_option,
    handle_errors,
    out_console,
    output_file,
    print_summary,
    read_engine,
)
from packsolve.errors import OptionError, ReportError


@click.command()
@click.argument("run", required=False)
@click.option("--watch", "-w", is_flag=True, help="Refresh until the run is finished.")
@click.option("--interval", type=float, default=2.0, show_default=True)
@format_option
@database_option
@handle_errors
def status(run: str | None, watch: bool, interval: float, fmt: str, database_url: str | None):
    """Show the progress of a run (default: the latest): counts, rate, ETA from the median time so far.

    With --watch the table refreshes until the run is finished; with --format
    json it prints one JSON object per line at every refresh.
    """
    from packsolve.report.progress import PROGRESS_COLUMNS, progress_row, render_progress

    engine = read_engine(database_url)
    if fmt != "table":
        # One JSON object (or CSV row, stable columns) per refresh: a script can follow the run.
        writer = csv.DictWriter(sys.stdout, fieldnames=PROGRESS_COLUMNS) if fmt == "csv" else None
        if writer:
            writer.writeheader()
        while True:
            p = _progress(engine, run)
            if writer:
                writer.writerow(progress_row(p))
                sys.stdout.flush()
            else:
                click.echo(json.dumps(p, indent=None if watch else 2))
            if not watch or p["finished"]:
                return
            time.sleep(interval)
    if not watch:
        out_console.print(render_progress(_progress(engine, run)))
        return
    from rich.live import Live

    with Live(render_progress(_progress(engine, run)), console=out_console, auto_refresh=False) as live:
        while True:
            p = _progress(engine, run)
            live.update(render_progress(p), refresh=True)
            if p["finished"]:
                break
            time.sleep(interval)


def _progress(engine: Any, ref: str | None) -> dict[str, Any]:
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.progress import run_progress

    with session_scope(engine) as session:
        return run_progress(session, resolve_run(session, ref))


@click.group()
def report() -> None:
    """Reports computed from the database."""


@report.command("summary")
@click.argument("run", required=False)
@format_option
@database_option
@handle_errors
def report_summary(run: str | None, fmt: str, database_url: str | None):
    """Solved X of Y, counts per status, CPU and wall time of RUN (default: latest)."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope

    engine = read_engine(database_url)
    with session_scope(engine) as session:
        run_id = resolve_run(session, run).id
    print_summary(engine, run_id, fmt)


EXPORT_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}


@click.command()
@click.argument("run", default="latest")
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "json", "csv"]), default=None,
    help="jsonl (one object a line), json (one array) or csv [default: from -o's extension, else jsonl].",
)  # fmt: skip
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), default="-",
    help="File; .jsonl, .json or .csv picks the format [default: stdout].",
)  # fmt: skip
@database_option
@handle_errors
def export(run: str, fmt: str | None, output: str, database_url: str | None):
    """Write one record per attempt of RUN ('latest' by default) as JSON lines, a JSON array or CSV."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.export import WRITERS, export_records

    fmt = format_of(output_file(output), fmt, EXPORT_SUFFIXES, "jsonl")
    engine = read_engine(database_url)
    with session_scope(engine) as session:
        run_id = resolve_run(session, run).id
        records = export_records(session, run_id)
        with click.open_file(output, "w", encoding="utf-8") as out:
            n = WRITERS[fmt](records, out)
    if output != "-":
        err_console.print(f"{n} record(s) of run {run_id} written to {output} ({fmt})", highlight=False)


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
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True)
@format_option
@database_option
@handle_errors
def report_hardest(run_ref: str | None, all_runs: bool, kind: str | None, by: str, top: int, fmt: str,
                   database_url: str | None):  # fmt: skip
    """The hardest levels: unsolved first (by PAR-2, then nodes), then solved ones by --by."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.hardest import hardest_in_run, hardest_overall, render_hardest

    if all_runs and run_ref:
        raise click.UsageError("give --run or --all, not both")
    with session_scope(read_engine(database_url)) as session:
        if all_runs:
            rows, title = hardest_overall(session, by, top, kind), "hardest levels across all runs"
        else:
            run = resolve_run(session, run_ref)
            rows, title = hardest_in_run(session, run, by, top, kind), f"hardest levels of run {run.id}"
    emit(rows, fmt, lambda r: render_hardest(r, title))


@report.command("compare")
@click.argument("runs", nargs=-1, required=True)
@click.option("--differs", is_flag=True, help="Only levels whose status is not the same in every run.")
@click.option(
    "--only-solved-by", default=None, metavar="RUN", help="Only levels decided by RUN and no other."
)
@click.option("--kind", default=None, help="Only levels of this kind.")
@format_option
@database_option
@handle_errors
def report_compare(runs: tuple[str, ...], differs: bool, only_solved_by: str | None, kind: str | None,
                   fmt: str, database_url: str | None):  # fmt: skip
    """One row per level, one column group per run; footer of solved counts, PAR-2 and speedup."""
    from packsolve.db.runs import resolve_run
    from packsolve.db.session import session_scope
    from packsolve.report.compare import compare_runs, flat_rows, render_compare

    if len(runs) < 2:
        raise click.UsageError("compare needs at least two runs")
    with session_scope(read_engine(database_url)) as session:
        selected = _runs(session, runs)
        only = resolve_run(session, only_solved_by) if only_solved_by else None
        data = compare_runs(session, selected, differs, only, kind)
    if fmt != "table":  # the table prints them itself; scripts still get them, apart from the data
        for w in data["warnings"]:
            err_console.print(f"warning: {w}", markup=False, highlight=False, style="yellow")
    if fmt == "csv":
        emit(flat_rows(data), fmt, lambda d: d)
    else:
        emit(data, fmt, render_compare)


@report.command("cactus")
@click.argument("runs", nargs=-1)
@click.option(
    "--output", "-o", required=True, type=click.Path(dir_okay=False), help="Plot file, .png or .svg."
)
@click.option("--scatter", type=click.Path(dir_okay=False), default=None,
              help="Also plot two runs' per-level times against each other to this .png/.svg.")  # fmt: skip
@format_option
@database_option
@handle_errors
def report_cactus(
    runs: tuple[str, ...], output: str, scatter: str | None, fmt: str, database_url: str | None
):
    """Cactus plot of RUNS (default: latest): levels decided within a time, one line per run."""
    from packsolve.db.session import session_scope
    from packsolve.report.cactus import (
        FORMATS,
        cactus_data,
        cactus_figure,
        save,
        scatter_data,
        scatter_figure,
    )

    for path, option in ((output, "--output"), (scatter, "--scatter")):
        if path:
            output_file(path, option)
            if not path.lower().endswith(FORMATS):
                raise OptionError(option, f"{path}: a plot file ends in {', '.join(FORMATS)}")
    with session_scope(read_engine(database_url)) as session:
        selected = _runs(session, runs)
        if scatter and len(selected) != 2:
            raise click.UsageError("--scatter needs exactly two runs")
        data = cactus_data(session, selected)
        points = scatter_data(session, *selected) if scatter else None
    save(cactus_figure(data), output)
    if scatter and points is not None:
        save(scatter_figure(points), scatter)
    err_console.print(
        f"cactus plot written to {output}" + (f", scatter plot to {scatter}" if scatter else "")
    )
    if fmt == "csv":
        rows = [
            {"run": d["run"], "decided": i, "wall_s": t} for d in data for i, t in enumerate(d["times"], 1)
        ]
        emit(rows, fmt, lambda r: r)
    elif fmt == "json":
        emit({"cactus": data, "scatter": points}, fmt, lambda d: d)
    else:
        from rich.table import Table

        t = Table("run", "decided", "fastest s", "slowest s")
        for d in data:
            times = d["times"]
            t.add_row(
                d["label"], str(d["decided"]), *(str(x) for x in (times[:1] or ["—"]) + (times[-1:] or ["—"]))
            )
        out_console.print(t)


@report.command("html")
@click.argument("runs", nargs=-1)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default="report.html", show_default=True)
@click.option(
    "--top", type=click.IntRange(min=1), default=20, show_default=True, help="Rows of the hardest table."
)
@click.option("--max-pictures", type=click.IntRange(min=0), default=300, show_default=True,
              help="Levels pictured (SVG with the best solution), in pack order.")  # fmt: skip
@database_option
@handle_errors
def report_html(runs: tuple[str, ...], output: str, top: int, max_pictures: int, database_url: str | None):
    """One self-contained HTML file for RUNS (default: latest): summary, plots, hardest, every level."""
    from pathlib import Path

    from packsolve.db.session import session_scope
    from packsolve.report.html import html_report

    output_file(output)
    if not output.lower().endswith((".html", ".htm")):
        raise OptionError("--output", f"{output}: the report is an HTML page; name it .html")
    with session_scope(read_engine(database_url)) as session:
        page = html_report(session, _runs(session, runs), top, max_pictures)
    Path(output).write_text(page, encoding="utf-8")
    err_console.print(f"report written to {output} ({len(page) / 1024:.0f} KiB)")


@click.command()
@click.argument("level")
@format_option
@database_option
@handle_errors
def show(level: str, fmt: str, database_url: str | None):
    """Show LEVEL (a level file, PATH:LINE, a name from a report, or a hash or its prefix).

    Draws it with its best known solution and lists every attempt at it across runs.
    """
    from packsolve.db.session import session_scope
    from packsolve.report.show import level_report, render_level

    with session_scope(read_engine(database_url)) as session:
        rep = level_report(session, level)
    if fmt == "csv":
        emit(rep["history"], fmt, lambda r: r)
    elif fmt == "json":
        click.echo(json.dumps(rep, indent=2, ensure_ascii=False))
    else:
        out_console.print(render_level(rep))
