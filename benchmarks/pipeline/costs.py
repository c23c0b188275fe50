"""Where a one-level task's time goes: the timed worker's totals (benchmarks/cost_hooks.py) as a table."""

from __future__ import annotations

import json
from pathlib import Path

# The figures of the strict part the table and the ratios read.
BARE_STEADY = "bare Celery, counting no-op, steady state"
PK_STEADY = "packsolve, solved sudokus, steady state"
PK_LOOSE = "packsolve, first message to last result"


def read_totals(folder: Path) -> tuple[dict[str, float], float, float, set[str]]:
    """Return the timed worker's seconds per stage, its pool processes' span and task seconds, and
    the stages it could not time (summed over the pool processes' files in folder)."""
    totals: dict[str, float] = {}
    span = task = 0.0
    missing: set[str] = set()
    for f in folder.glob("*.json"):
        data = json.loads(f.read_text())
        missing.update(data["missing"])
        for stage, (seconds, _calls) in data["totals"].items():
            totals[stage] = totals.get(stage, 0.0) + seconds
        if data["span"]:
            span += data["span"][1] - data["span"][0]
        task += data["totals"].get("task", [0.0])[0]
    return totals, span, task, missing


def cost_table(
    folder: Path, levels: int, main_cpu: float, bare_main_cpu: float, best: dict[str, float]
) -> str:
    """Return the per-level cost table (Markdown) from the timed worker's totals in folder."""
    totals, span, task, missing = read_totals(folder)

    def ms(seconds: float) -> str:
        return f"{1000 * seconds / levels:.3f}"

    inside = sum(totals.get(s, 0.0) for s in ("claim", "parse", "child", "verify"))
    bare_rate = best[BARE_STEADY]
    rows = [
        ("claim (a lone tiny level is claimed by its result's write instead)", totals.get("claim", 0)),
        ("parse the level, look up the solver", totals.get("parse", 0)),
        ("solver child: send the job, solve, read the result back (the IPC)", totals.get("child", 0)),
        ("verify (and the Outcome)", totals.get("verify", 0)),
        ("rest of packsolve's task (decode, provenance, result buffered)", task - inside),
        ("result write, batched (a timer thread of the pool process)", totals.get("write", 0)),
        ("Celery's own in the pool processes (between tasks: ack, next message)", span - task),
    ]
    lines = [
        "| where (pool processes, process-ms per level) | ms |",
        "| --- | ---: |",
        *(f"| {what} | {ms(sec)} |" for what, sec in rows),
        f"| **pool processes in all** (first task to last, both processes) | **{ms(span)}** |",
        f"| Celery's main process, CPU per level | {1000 * main_cpu:.3f} |",
        f"| bare Celery for comparison: pool processes per task (2 / rate) | {2000 / bare_rate:.3f} |",
        f"| bare Celery: main process, CPU per task | {1000 * bare_main_cpu:.3f} |",
    ]
    if missing:
        lines.append(f"\n(not timed, no longer in the code: {', '.join(sorted(missing))})")
    return "\n".join(lines)
