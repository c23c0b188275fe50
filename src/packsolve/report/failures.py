"""`report failures`: why levels failed, grouped by status and message, each with the command to rerun it."""

from __future__ import annotations

import json
import shlex
from typing import Any, TypedDict

from sqlalchemy import select
from sqlalchemy.orm import Session

from packsolve.db.models import Run
from packsolve.execution.relative import RelativeLimits
from packsolve.figures.failures import Group, failure_groups_of
from packsolve.outcome import Status
from packsolve.report.text import short_message, short_name
from packsolve.runstate import RunMode

# Examples named per group; the JSON carries them too, `export` has every level.
EXAMPLES = 3


class FailureGroup(Group):
    """Failed attempts of one status whose messages share a pattern, and a command that reruns them."""

    rerun: str


class Failures(TypedDict):
    """`report failures`: a run's failed attempts in groups, largest first."""

    run: int
    label: str | None
    failed: int
    total: int | None
    groups: list[FailureGroup]


def failure_groups(session: Session, run: Run, examples: int = EXAMPLES) -> Failures:
    """Return the run's failed attempts grouped by (status, message pattern), largest group first.

    Each group: status, count, its first message as written, the pattern, counts
    per kind, a few example levels, and a command that reruns that group (or
    what to do instead, for levels that cannot be read). A finished run's groups
    were made when it finished (figures.failures); a run going has them made now.
    """
    found = failure_groups_of(session.connection(), run, examples)
    ordered: list[FailureGroup] = [{**g, "rerun": _next_step(run, g)} for g in found]
    attempts = session.scalar(select(Run.total).where(Run.id == run.id))
    failed = sum(g["count"] for g in found)
    return {"run": run.id, "label": run.label, "failed": failed, "total": attempts, "groups": ordered}


def stopped_by_cpu(group: Group) -> bool:
    """Return whether the group's attempts were stopped by the CPU time limit (not the wall clock)."""
    return group["status"] == Status.TIMEOUT and group["pattern"].startswith("CPU time limit")


# What a relative run's timeouts are suggested: each level twice the limit it timed out at (its own).
TWICE_OWN = "2x"


def suggested_time_limit(run: Run, group: Group) -> float | str | None:
    """Return the wall limit suggested to rerun the group (twice the run's, for wall timeouts), else None.

    A relative run's attempts each had their own limit (the run's is only the largest): "2x", which
    gives each timed-out level twice the limit it timed out at.
    """
    if group["status"] == Status.TIMEOUT and run.time_limit and not stopped_by_cpu(group):
        return TWICE_OWN if _relative(run).time is not None else 2 * run.time_limit
    return None


def suggested_cpu_limit(run: Run, group: Group) -> float | str | None:
    """Return the CPU limit suggested to rerun the group (twice the run's, for CPU timeouts), else None;
    "2x" for a relative run's, as suggested_time_limit."""
    if run.cpu_limit and stopped_by_cpu(group):
        return TWICE_OWN if _relative(run).cpu is not None else 2 * run.cpu_limit
    return None


def _relative(run: Run) -> RelativeLimits:
    return RelativeLimits.from_options((run.options or {}).get("relative"))


def limit_shown(value: float | str | None) -> str:
    """Return a suggested limit as an option value ("" for none): seconds, or a relative one as is."""
    if value is None:
        return ""
    return value if isinstance(value, str) else f"{value:g}"


def _next_step(run: Run, group: Group) -> str:
    """Return the command that reruns exactly a group of failures, or what to do when a rerun cannot help."""
    status = group["status"]
    if status == Status.INVALID:
        return "fix the files as the message says; `packsolve check PATH` tells before a run"
    if status == Status.CANCELLED and run.mode == RunMode.LOCAL:
        return f"packsolve resume {run.id}"
    # The group's key, not a piece of its message: a piece can match other groups' messages too.
    words = ["packsolve", "rerun", str(run.id), "--group", group["key"]]
    time_limit = suggested_time_limit(run, group)
    if time_limit is not None:
        words += ["--time-limit", limit_shown(time_limit)]
    cpu_limit = suggested_cpu_limit(run, group)
    if cpu_limit is not None:
        words += ["--cpu-limit", limit_shown(cpu_limit)]
    if status == Status.MEMOUT and run.memory_limit_mb:
        words += ["--memory-limit", str(2 * run.memory_limit_mb)]
    return " ".join(shlex.quote(w) for w in words)


def render_failures(data: Failures) -> Any:
    """Return a rich renderable: one block per group (status × count, message, examples, the command)."""
    from rich.console import Group
    from rich.text import Text

    title = f"run {data['run']}" + (f" ({data['label']})" if data["label"] else "")
    if not data["groups"]:
        return Text(f"{title}: no failure among its {data['total']} level(s)")
    out = [Text(f"{title}: {data['failed']} of {data['total']} level(s) failed", style="bold")]
    for g in data["groups"]:
        kinds = ", ".join(f"{k} {n}" for k, n in g["kinds"].items())
        head = Text("\n")
        head.append(
            f"{g['status']} × {g['count']}", style="red" if g["status"] != Status.CANCELLED else "yellow"
        )
        head.append(f"  ({kinds})", style="dim")
        out.append(head)
        out.append(Text("  " + (short_message(g["message"], g["examples"][0], 76) or "(no message)")))
        more = g["count"] - len(g["examples"])
        for i, name in enumerate(g["examples"]):
            out.append(Text(("  e.g. " if i == 0 else "       ") + short_name(name, 70), style="dim"))
        if more > 0:
            out.append(Text(f"       and {more} more", style="dim"))
        out.append(Text(f"  {g['rerun']}", style="cyan", overflow="fold"))
    return Group(*out)


def flat_groups(data: Failures) -> list[dict[str, Any]]:
    """Return the groups as flat rows for CSV (kinds and examples as JSON text)."""
    return [
        {"run": data["run"], **g, "kinds": json.dumps(g["kinds"]), "examples": json.dumps(g["examples"])}
        for g in data["groups"]
    ]
