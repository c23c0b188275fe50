"""Which attempts of a run are split into parts (issue 38): those whose level is expected to take longer
than --split-after (from the levels' history: split from the start), and those a first attempt of which
runs past it (probes: each runs whole under --split-after as its wall limit, and is split once it
passes that). Asked by a local run before it starts and by a worker process when it takes a task of a
run sent with --split-after."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from packsolve.api import Split
from packsolve.combining import Combination, answer_length
from packsolve.db.history import past_attempts
from packsolve.execution.relative import expected_seconds
from packsolve.execution.spec import AttemptSpec, PendingAttempt
from packsolve.outcome import Outcome, Status
from packsolve.puzzles import get_kind

# How many parts a split level is cut into per process that runs them: enough that the processes
# stay busy while parts of uneven size end (a round ends with its largest part), few enough that
# handing them out (a few milliseconds a part and round locally, a database round trip on workers)
# stays small: PARTS_PER_PROCESS for a level expected to take half a minute or less, one more per
# SECONDS_PER_PART of its expected time beyond, MAX_PARTS_PER_PROCESS at most (benchmarks/split_local:
# Korf-Felner #4, 425 s whole, gained 1.19x on 2 processes in 17 parts, 1.92x in the 240 this gives
# it: docs/benchmarks.md).
PARTS_PER_PROCESS = 8
SECONDS_PER_PART = 4.0
MAX_PARTS_PER_PROCESS = 64
# A probe's level (no history) still running at --split-after is cut as if it took this many times
# --split-after: such a level most often runs far longer (an iterative-deepening search's iteration
# costs several times all those before it), and a cut too coarse costs far more than one too fine:
# #4 in the 17 parts a 30 s expectation gives searched 1.63x its nodes on a night, where each part
# more costs a few milliseconds a round.
PROBE_EXPECTED = 4.0


def parts_for(processes: int, expected_s: float) -> int:
    """Return how many parts to ask a level's kind for, the level expected to take expected_s on
    processes processes' parts (2 at least)."""
    per_process = min(MAX_PARTS_PER_PROCESS, max(PARTS_PER_PROCESS, int(expected_s / SECONDS_PER_PART)))
    return max(2, processes * per_process)


def probe_expected(split_after: float, wall_limit: float | None) -> float:
    """Return how long a level whose first attempt ran past split_after is expected to take in all
    (PROBE_EXPECTED times split_after, its wall limit at most)."""
    expected = PROBE_EXPECTED * split_after
    return expected if wall_limit is None else min(expected, wall_limit)


@dataclass(frozen=True)
class PlannedSplit:
    """A pending attempt a run runs as parts: the Split its kind gave (asked for `of` parts)."""

    attempt: PendingAttempt
    split: Split
    of: int
    # Its expected wall time: from history, past --split-after; a probe's, probe_expected.
    expected_s: float
    # A first attempt that ran whole past --split-after (Probe), whose effort and time count as the
    # level's; None: split from the start.
    spent: Outcome | None = None

    def combination(self) -> Combination:
        """Return the Combination that runs this split: answers compared by the kind's length; a first
        attempt run whole before it was split (spent) counts in its nodes, CPU and wall time."""
        combination = Combination(self.split, length=answer_length(get_kind(self.attempt.spec.kind)))
        if self.spent is not None:
            combination.nodes += self.spent.nodes
            combination.cpu_s += self.spent.stats.cpu_s
            combination.peak_rss_mb = self.spent.stats.peak_rss_mb
            combination.started -= self.spent.stats.wall_s
            combination.before = f"split after a first attempt of {self.spent.stats.wall_s:.1f} s"
        return combination


def split_of(spec: AttemptSpec, of: int) -> Split | None:
    """Return the Split of an attempt's level into at least ``of`` parts by its kind's split for its
    heuristic; None where it is not split (no split, a program, a level it keeps whole, one that does
    not parse)."""
    kind = get_kind(spec.kind)
    if kind.split is None or spec.program is not None:
        return None
    name, _ = kind.solver(spec.heuristic)
    level: Any
    try:
        level = kind.parse(spec.level)
    except Exception:  # an invalid level is run whole and ends invalid there, as any
        return None
    return kind.split(level, name, of)


@dataclass(frozen=True)
class Splitting:
    """A run's attempts to split: from the start (by history, longest expected first), and probes (by
    attempt): those to split if their first attempt, run whole, passes --split-after."""

    splits: list[PlannedSplit]
    probes: dict[tuple[str, str], Probe]

    @property
    def split_keys(self) -> set[tuple[str, str]]:
        return {s.attempt.key for s in self.splits}


@dataclass(frozen=True)
class Probe:
    """An attempt run whole first, under --split-after as its wall limit, and split if it passes it: the
    split its kind gives (asked for `of` parts) and the limit."""

    split: PlannedSplit
    after_s: float

    def spec(self) -> AttemptSpec:
        """Return the spec to run the attempt whole with: its own, its wall limit --split-after."""
        spec = self.split.attempt.spec
        return replace(spec, limits=replace(spec.limits, time_limit=self.after_s))

    def passed(self, outcome: Outcome) -> bool:
        """Return whether the whole attempt ran past --split-after (its level is split now), not ended."""
        return outcome.status == Status.TIMEOUT and outcome.stats.wall_s >= PASSED * self.after_s

    def planned(self, outcome: Outcome) -> PlannedSplit:
        """Return the split of the attempt whose whole run (outcome) passed --split-after: it counts that
        run's effort and time as the level's."""
        return replace(self.split, spent=outcome)


# A probe's timeout at this share of --split-after or more is its wall limit's (not its node limit's).
PASSED = 0.9


def plan_splitting(
    session: Session, pending: Sequence[PendingAttempt], split_after: float, processes: int
) -> Splitting:
    """Return which pending attempts to split (choose_splits) and which to run as probes: every other
    attempt of a built-in heuristic whose kind splits its level, and whose wall limit (if any) is longer
    than split_after (one that ends sooner ends whole)."""
    splits = choose_splits(session, pending, split_after, processes)
    chosen = {s.attempt.key for s in splits}
    probes: dict[tuple[str, str], Probe] = {}
    for p in _splittable(pending):
        limit = p.spec.limits.wall_limit()
        if p.key in chosen or (limit is not None and limit <= split_after):
            continue
        expected = probe_expected(split_after, limit)
        of = parts_for(processes, expected)
        split = split_of(p.spec, of)
        if split is not None:
            probes[p.key] = Probe(PlannedSplit(p, split, of, expected), split_after)
    return Splitting(splits, probes)


def _splittable(pending: Sequence[PendingAttempt]) -> list[PendingAttempt]:
    """Return the attempts of a built-in heuristic whose kind has a split."""
    return [p for p in pending if p.spec.program is None and get_kind(p.spec.kind).split is not None]


def choose_splits(
    session: Session, pending: Sequence[PendingAttempt], split_after: float, processes: int
) -> list[PlannedSplit]:
    """Return the pending attempts to split: those whose level's expected wall time (db.history:
    its earlier attempts with the same kind and heuristic, decided or timed out) passes split_after,
    of a built-in heuristic whose kind splits that level; the longest expected first.

    A level without history, of a kind without split, or run by an external program is run whole.
    """
    builtin = _splittable(pending)
    if not builtin:
        return []
    past = past_attempts(session, [(p.level_hash, p.spec.kind, p.spec.heuristic) for p in builtin])
    chosen: list[PlannedSplit] = []
    for p in builtin:
        times = past.get(p.key)
        expected = None if times is None else expected_seconds(times.decided_wall, times.timed_out_wall)
        if expected is None or expected <= split_after:
            continue
        of = parts_for(processes, expected)
        split = split_of(p.spec, of)
        if split is not None:
            chosen.append(PlannedSplit(p, split, of, expected))
    return sorted(chosen, key=lambda s: -s.expected_s)


# --split-after share (request.SHARE): the least share a night splits at. A level of a few seconds
# gains little or nothing from its parts (benchmarks: 5 s fifteen-puzzles 1.06x locally, 0.95x on
# workers; 8-12 s ones about 1.5x).
SHARE_FLOOR_S = 10.0


@dataclass(frozen=True)
class NightShare:
    """--split-after share, worked out when a run is made: the night's expected time (of the attempts
    with history; each other counted as their median) over the processes that run it, SHARE_FLOOR_S
    at least."""

    seconds: float
    expected_s: float  # the night's, in all
    known: int  # attempts with history
    attempts: int
    processes: int

    def said(self) -> str:
        """Return the line that tells the user which levels the run splits, and why."""
        floor = " (the least it splits at)" if self.seconds == SHARE_FLOOR_S else ""
        return (
            f"--split-after share: levels expected past {self.seconds:.1f} s{floor} are split; the night's "
            f"expected {self.expected_s:.1f} s over {self.processes} process(es), from the history of "
            f"{self.known} of its {self.attempts} attempt(s) (the others counted as their median)"
        )

    def recorded(self) -> dict[str, float | int]:
        """Return how the run's options keep it (beside split_after: its seconds)."""
        return {
            "expected_s": round(self.expected_s, 3),
            "known": self.known,
            "attempts": self.attempts,
            "processes": self.processes,
        }


def night_share(
    session: Session, attempts: Sequence[tuple[str, str, str]], processes: int
) -> NightShare | None:
    """Return the night's share of each of processes for these (level hash, kind, heuristic) attempts,
    from their history (db.history, as choose_splits reads it); None if none of them has one."""
    past = past_attempts(session, attempts)
    expected = [
        e
        for h, _, heuristic in attempts
        if (times := past.get((h, heuristic))) is not None
        and (e := expected_seconds(times.decided_wall, times.timed_out_wall)) is not None
    ]
    if not expected:
        return None
    total = sum(expected) + (len(attempts) - len(expected)) * statistics.median(expected)
    seconds = max(SHARE_FLOOR_S, total / max(1, processes))
    return NightShare(seconds, total, len(expected), len(attempts), processes)
