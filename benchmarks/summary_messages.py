"""What the example messages cost `report summary`: the summary timed whole, and its message queries alone.

    python -m benchmarks.seed_attempts sqlite:///bench.db --runs 20
    python -m benchmarks.summary_messages sqlite:///bench.db postgresql://postgres@127.0.0.1/bench

The message queries are timed with the per-status count they need (which the summary
makes anyway), so their share is an upper bound. Median of --reps calls, alternating
the two, each in a new session, on the seeded runs in turn.
"""

from __future__ import annotations

import statistics
import time

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from benchmarks.harness import parser
from packsolve.db.models import Attempt, Run
from packsolve.db.session import get_engine, session_scope
from packsolve.masking import mask_url
from packsolve.report import summary


def message_queries(session: Session, run: Run) -> None:
    """Run the summary's example-message queries for run (after the status count they need)."""
    conn = session.connection()
    counts = select(Attempt.status, func.count()).where(Attempt.run_id == run.id).group_by(Attempt.status)
    for status, _n in conn.execute(counts).all():
        if status in summary.SUCCESS_VALUES or status in summary.PENDING_VALUES:
            continue
        example = select(Attempt.name, Attempt.message).where(
            Attempt.run_id == run.id, Attempt.status == status, Attempt.message.is_not(None)
        )
        conn.execute(example.limit(1)).first()


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("urls", nargs="+")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    for url in args.urls:
        engine = get_engine(url)
        with session_scope(engine) as session:
            run_ids = list(session.scalars(select(Run.id).order_by(Run.id)))
        whole: list[float] = []
        parts: list[float] = []
        for rep in range(args.reps):
            for times, fn in ((whole, summary.run_summary), (parts, message_queries)):
                with session_scope(engine) as session:
                    run = session.get(Run, run_ids[rep % len(run_ids)])
                    started = time.perf_counter()
                    fn(session, run)
                    times.append((time.perf_counter() - started) * 1000)
        w, p = statistics.median(whole), statistics.median(parts)
        print(f"{mask_url(url)}: summary {w:.1f} ms, its message queries at most {p:.1f} ms ({p / w:.0%})")


if __name__ == "__main__":
    main()
