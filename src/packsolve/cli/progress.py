"""What a local run prints while it solves: a bar on a terminal, a line every few seconds in a log."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from packsolve.cli.options import err_console

if TYPE_CHECKING:
    from packsolve.settings import Settings

# Seconds between two progress lines when stderr is not a terminal (`solve ... 2> log; tail -f log`).
DEFAULT_EVERY_S = 5.0


def solve_showing_progress(
    engine: Any, run: Any, jobs: int, settings: Settings, quiet: bool, every: float
) -> None:
    """Solve a local run: a bar on a terminal, a line every `every` seconds otherwise, none if quiet."""
    from packsolve import runs

    runs.prepare_local(engine, run, _say)
    if quiet or not run.pending:
        runs.solve_local(engine, run, jobs, settings)
    elif err_console.is_terminal:
        _with_bar(engine, run, jobs, settings)
    else:
        _with_lines(engine, run, jobs, settings, every)


def _say(line: str) -> None:
    err_console.print(line, highlight=False, markup=False, soft_wrap=True)


class _Tally:
    """Counts of a local run's results as they arrive (the pool's callback and a printer share it)."""

    def __init__(self, run: Any) -> None:
        self.run_id = run.id
        self.total = run.total
        self.counts: Counter[str] = Counter()
        self.before = run.total - len(run.pending)  # invalid levels, or results of an earlier session
        self.counts["invalid"] = run.invalid
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def add(self, status: str) -> None:
        with self.lock:
            self.counts[status] += 1

    def line(self) -> str:
        from packsolve.report.progress import progress_line

        with self.lock:
            solved_now = sum(self.counts.values()) - self.counts["invalid"]
            counts = dict(self.counts)
        done = self.before + solved_now
        elapsed = time.monotonic() - self.started
        rate = solved_now / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate else None
        return progress_line(self.run_id, done, self.total, counts, rate, eta)


def _with_lines(engine: Any, run: Any, jobs: int, settings: Settings, every: float) -> None:
    """Solve, printing one progress line every `every` seconds and one at the end."""
    from packsolve import runs

    tally = _Tally(run)
    stop = threading.Event()

    def printer() -> None:
        while not stop.wait(every):
            err_console.print(tally.line(), highlight=False, soft_wrap=True)

    thread = threading.Thread(target=printer, name="progress-lines", daemon=True)
    thread.start()
    try:
        runs.solve_local(engine, run, jobs, settings, lambda _h, outcome: tally.add(outcome.status.value))
    finally:
        stop.set()
        thread.join()
        err_console.print(tally.line(), highlight=False, soft_wrap=True)


def _with_bar(engine: Any, run: Any, jobs: int, settings: Settings) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from packsolve import runs

    counts: Counter[str] = Counter()
    counts["invalid"] = run.invalid

    def describe() -> str:
        return "  ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v) or "starting"

    with Progress(
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=err_console,
        transient=False,
    ) as progress:
        task = progress.add_task(describe(), total=run.total, completed=run.total - len(run.pending))

        def on_result(_hash: str, outcome: Any) -> None:
            counts[outcome.status.value] += 1
            progress.update(task, advance=1, description=describe())

        runs.solve_local(engine, run, jobs, settings, on_result)
