"""The Markdown table the per-kind scaling benchmarks share: one row per (size, heuristic) beside a peer."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from packsolve.budget import Budget


def scaling_table(
    rows: list[dict],
    size_header: str,
    peer_header: str,
    digits: int = 4,
    size_align: str = "---",
    peer_limit: float | None = None,
) -> str:
    """Return the table of rows made by a benchmark's measure().

    Each row has size, heuristic and either gave_out, or solved, n, nodes, secs,
    statuses and peer: the peer's mean seconds, or (with peer_limit) the list of
    its times on the levels it finished within that limit.
    """
    out = [
        f"| {size_header} | heuristic | solved | mean nodes | mean s | max s | {peer_header} s "
        "| ratio | outcomes |",
        f"|{size_align}|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r.get("gave_out"):
            out.append(f"| {r['size']} | {r['heuristic']} | — | — | — | — | — | — | not run: gave out |")
            continue
        nodes = f"{statistics.mean(r['nodes']):,.0f}" if r["nodes"] else "—"
        mean = statistics.mean(r["secs"])
        if peer_limit is None:
            peer_mean, peer = r["peer"], f"{r['peer']:.{digits}f}"
            peer_ok = peer_mean > 0
        else:
            # The peer past its limit on some level: say how many it solved in time, and give no ratio.
            peer_ok = len(r["peer"]) == r["n"]
            peer_mean = statistics.mean(r["peer"]) if peer_ok else 0.0
            peer = f"{peer_mean:.{digits}f}" if peer_ok else f"{len(r['peer'])}/{r['n']} in {peer_limit:g}s"
        ratio = f"{mean / peer_mean:.2f}" if r["solved"] == r["n"] and peer_ok else "—"
        out.append(
            f"| {r['size']} | {r['heuristic']} | {r['solved']}/{r['n']} | {nodes} | {mean:.{digits}f} | "
            f"{max(r['secs']):.{digits}f} | {peer} | {ratio} | {', '.join(sorted(set(r['statuses'])))} |"
        )
    return "\n".join(out)


@dataclass
class Contest:
    """The heuristics of one kind run over sizes growing: their time limit, and which are still in.

    A heuristic that solves none of a size's levels is not run on larger sizes
    (alive loses it); the exceptions in errors are what the runner would record as
    `error` (plain's recursion limit, an over-large table), named by error_status.
    """

    kind: Any
    heuristics: list[str]
    time_limit: float
    errors: tuple[type[BaseException], ...] = (RuntimeError,)
    error_status: Callable[[BaseException], str] = lambda exc: "error (recursion limit)"
    alive: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.alive = set(self.heuristics)


def run_heuristics(
    contest: Contest, size: str, levels: list[Any], check: Callable[[int, Any, Any], None], peer: Any
) -> list[dict]:
    """Return one row per heuristic for the levels of one size, as scaling_table reads them.

    Each solved answer goes through check(index, level, solution), which asserts;
    peer is the peer's figure the rows carry (see scaling_table).
    """
    rows = []
    for h in contest.heuristics:
        if h not in contest.alive:
            rows.append({"size": size, "heuristic": h, "gave_out": True})
            continue
        nodes, secs, ok, statuses = [], [], 0, []
        for i, level in enumerate(levels):
            start = time.perf_counter()
            try:
                out = contest.kind.solvers[h](level, Budget(time_limit=contest.time_limit))
                status = str(out.status)
            except contest.errors as exc:
                status, out = contest.error_status(exc), None
            secs.append(time.perf_counter() - start)
            statuses.append(status)
            if out is not None and status == "solved":
                ok += 1
                nodes.append(out.nodes)
                check(i, level, out.solution)
        rows.append(
            {"size": size, "heuristic": h, "solved": ok, "n": len(levels), "nodes": nodes, "secs": secs}
            | {"statuses": statuses, "peer": peer}
        )
        if ok == 0:
            contest.alive.discard(h)
        print(size, h, ok, statuses, f"{max(secs):.3f}s", file=sys.stderr, flush=True)
    return rows
