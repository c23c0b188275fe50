"""Does every invariant hold under each network scenario on each broker, on a cluster of namespaces?

    sudo .venv/bin/python -m benchmarks.cluster_scenarios                     # all six, both brokers
    sudo .venv/bin/python -m benchmarks.cluster_scenarios --only freeze --brokers rabbitmq --reps 3
    sudo .venv/bin/python -m benchmarks.cluster_scenarios --out benchmarks/results/cluster_scenarios.md

Builds the cluster of tests/support/cluster.py once (root, ip, nft, iptables, redis-server,
PostgreSQL 15 and rabbitmq-server needed), runs each scenario of tests/support/cluster_scenarios.py
in a fresh deployment and prints one Markdown row per run: levels, damage, lost, duplicated,
stale results accepted (written over another worker's claim, from the audit trigger) and refused
(worker log lines saying so), seconds from the end of the damage to the run's end, the lease bound
measured (seconds from a worker's death, partition or freeze, until its last attempt was taken
from it), the run's seconds, and the invariants each run broke. Exits non-zero if any run broke one.
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import time
from pathlib import Path

from benchmarks.harness import ROOT, parser
from tests.support.cluster import BROKERS, cluster
from tests.support.cluster_audit import Figures, table
from tests.support.cluster_scenarios import SCENARIOS, Profile, run_scenario


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    ap.add_argument("--brokers", default=",".join(BROKERS))
    ap.add_argument("--reps", type=int, default=1, help="runs of each scenario on each broker")
    ap.add_argument("--seed", type=int, default=Profile.seed, help="draws the damage's moments and victims")
    ap.add_argument("--out", type=Path, help="also write the table (with its command and date) here")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario {unknown}; choose from {', '.join(SCENARIOS)}")
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    rows: list[Figures] = []
    started = time.monotonic()
    with cluster() as c:
        print(f"cluster built in {c.built_s:.1f} s", file=sys.stderr)  # type: ignore[attr-defined]
        for rep in range(args.reps):
            for name in names:
                for broker in args.brokers.split(","):
                    t = time.monotonic()
                    f = run_scenario(c, name, broker, Profile(seed=args.seed + rep))
                    rows.append(f)
                    verdict = "ok" if not f.violations else "; ".join(f.violations)
                    print(
                        f"{name} / {broker}: {time.monotonic() - t:.0f} s, {verdict}",
                        file=sys.stderr,
                        flush=True,
                    )
    load = os.getloadavg()[0]
    head = (
        f"`{' '.join(['python -m benchmarks.cluster_scenarios', *(argv or sys.argv[1:])])}` on "
        f"{datetime.date.today()}, {platform.node()} ({os.cpu_count()} cores, load {load:.1f}), "
        f"{time.monotonic() - started:.0f} s in all"
    )
    text = f"{head}\n\n{table(rows)}\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 1 if any(f.violations for f in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
