"""The Markdown table the per-kind scaling benchmarks share: one row per (size, heuristic) beside a peer."""

from __future__ import annotations

import statistics


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
