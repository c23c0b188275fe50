"""A split level's parts handed out round by round, and their answers made the level's one answer.

The pure core of running a split level as attempts of its own (issue 38): no processes, database
or broker. A run's executor (the local pool) asks ``hand_out`` for the parts to run now, runs
each as an attempt of the part (``execution.PartSpec``: its index, the iteration window of a
best-of-all round, the best length known), and gives each part's Outcome back to ``took``; once
``outcome`` is set the level is decided (``splitting.solve_split`` runs its parts by the same rules):

- first found: every part at once; the first with an answer decides the level (the others are
  not needed: the executor drops those not started); no part with one: no solution; a part that
  ended otherwise (a timeout, an error) and no answer anywhere: the level ends as that part did.
- best of all: one round at a time, round B running every part whose next iteration bound is B
  (round 0 costs each part its first bound), so no part searches deeper than the unsplit search
  would; an answer found in round B is optimal, and the shortest of the round's answers is the
  level's. After a round that cost next to nothing (CHEAP_ROUND_S) a round's window spans one bound
  more: a part then stops at its first answer, and the shortest answer of the round is still
  optimal (every part searched every bound below it), the parts past it stopped by the shared best.
  While a round's last parts still run, a part that ended it without an answer may already search
  its next bound (``Handout.ahead``: within AHEAD of the round's window, in a round of single bounds):
  the executor runs such a part only where a process would wait idle for the round's end, gives
  back (``give_back``) those it has not started when the next round begins, and that round leaves
  out the parts that ran ahead. An answer found ahead counts as any: the level is
  decided once every part searched every bound below the best answer.
  A part that ends otherwise (a timeout, an error) ends the level so.

A part's answer is the whole level's (the part's prefix and its own answer, made so where the part
ran, and verified there by the kind's ``verify`` as every answer is).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from packsolve.api import Combine, PuzzleKind, Split
from packsolve.outcome import Outcome, SearchStats, Status


def answer_length(kind: PuzzleKind) -> Callable[[Any], int]:
    """Return how long a whole-level answer of the kind is, as best of all compares them: by the kind's
    ``length`` (the export's); an answer it cannot measure counts 0, and ``verify`` judges it."""

    def length(answer: Any) -> int:
        try:
            return int(kind.length(answer) or 0)
        except Exception:
            return 0

    return length


# Best of all: a round whose parts spent less CPU than this in all is followed by one whose window
# reaches WIDER past its first bound (two iterations of the sliding puzzle's IDA*, whose bounds go
# by 2): the first bounds of an iterative-deepening search cost next to nothing, and each part handed
# out costs a few milliseconds of its own. A costlier round is followed by single bounds again.
CHEAP_ROUND_S = 0.01
WIDER = 2
# Best of all: how far past a round's window a part that ended the round may search ahead (one
# iteration of the sliding puzzle's IDA*, the built-in best-of-all search, whose bounds go by 2).
AHEAD = 2


@dataclass(frozen=True)
class Handout:
    """A part to run now: its index, the round, its window (best of all: the iteration bounds to
    search; None: the part whole) and the best whole-level length known (None: none yet)."""

    index: int
    round: int
    window: tuple[int, int] | None = None
    best: int | None = None
    ahead: bool = False  # the next round's, handed out while this one still runs: run it only where idle


@dataclass
class Combination:
    """The state of one split level: what is running, what each part left, the answer so far.

    length: how long a whole-level answer is (best of all compares them). started: the monotonic
    time the level began (its wall time is counted from it).
    """

    split: Split
    length: Callable[[Any], int] = len
    started: float = field(default_factory=time.monotonic)
    rounds: int = 0
    running: set[int] = field(default_factory=set)
    outcome: Outcome | None = None  # the level's, once decided
    nodes: int = 0
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    _resume: dict[int, int] = field(default_factory=dict)  # best of all: part -> its next bound
    _best: tuple[int, int, Any] | None = None  # (length, part, the whole-level answer)
    _unsettled: tuple[int, Outcome] | None = None  # first found: a part that ended neither way
    _width: int = 0  # best of all: how many iteration bounds past the round's first its window spans
    _window: tuple[int, int] = (0, 0)  # best of all: the window of the round running
    _round_cpu: float = 0.0  # best of all: the CPU seconds of the round running
    _ahead: set[int] = field(default_factory=set)  # best of all: parts handed out for the next round
    before: str = ""  # what the level's message says came before its parts (of_plan), or nothing

    def __post_init__(self) -> None:
        self.nodes = self.split.nodes
        if self.best_of_all:
            self._resume = {i: 0 for i in range(self.count)}

    @property
    def count(self) -> int:
        return len(self.split.parts)

    @property
    def best_of_all(self) -> bool:
        return self.split.combine == Combine.BEST_OF_ALL

    def hand_out(self) -> list[Handout]:
        """Return the parts to run now: none while a best-of-all round runs, or once decided."""
        if self.outcome is not None:
            return []
        if self.best_of_all and self._round_running():
            return self._hand_out_ahead()
        if self.running and not self.best_of_all:
            return []
        if not self.best_of_all:
            if self.rounds:
                return []
            self.rounds = 1
            self.running = set(range(self.count))
            return [Handout(i, 1) for i in range(self.count)]
        if self._decided_best():
            return []
        level_bound = min(self._resume.values())
        # A round this cheap costs more to hand out than to search: the next spans one bound more
        # (never more: an iteration costs several times the one before, and a part searches its
        # window through unless another part's answer, offered, stops it).
        # Not after parts ran ahead: they searched the single bound the round then has.
        cheap = self.rounds and self._round_cpu < CHEAP_ROUND_S and not self._ahead
        self._width = WIDER if cheap else 0
        window = (level_bound, level_bound + self._width) if self.rounds else (0, 0)
        self._window = window
        # In the parts' order, the order of the whole search's first moves: the last round then meets
        # its answer about where the whole search would (handing the costliest first searched more).
        indices = sorted(i for i, b in self._resume.items() if b <= window[1] and i not in self._ahead)
        self._round_cpu = 0.0
        self.rounds += 1
        self.running |= set(indices)  # beside the parts that ran ahead into this round and still run
        self._ahead = set()
        best = self._best[0] if self._best is not None else None
        return [Handout(i, self.rounds, window, best) for i in indices]

    def _round_running(self) -> bool:
        """Best of all: whether a part of the round (not one that ran ahead into the next) still runs."""
        return bool(self.running - self._ahead)

    def _hand_out_ahead(self) -> list[Handout]:
        """Best of all, while the round runs: the parts that ended it without an answer and may search
        their next bound now (within AHEAD of a round of single bounds, before any answer is known)."""
        lo, hi = self._window
        if self._best is not None or self.rounds < 2 or hi != lo:
            return []
        ready = sorted(
            i
            for i, b in self._resume.items()
            if i not in self.running and i not in self._ahead and hi < b <= hi + AHEAD
        )
        self._ahead |= set(ready)
        self.running |= set(ready)
        return [
            Handout(i, self.rounds + 1, (self._resume[i], self._resume[i]), None, ahead=True) for i in ready
        ]

    def give_back(self, index: int) -> None:
        """Best of all: take back a part handed out ahead that the executor has not started: it is
        handed out again by a later hand_out, in the parts' order (ahead again, or in its round).

        An executor that queues parts ahead runs them in the order they ended the round before; once
        their round begins, the ones not started belong in it, in order: an answer's part run late in
        the last round leaves every part queued before it searched in full."""
        if index in self._ahead:
            self._ahead.discard(index)
            self.running.discard(index)

    def took(self, index: int, outcome: Outcome) -> None:
        """Take a part's Outcome (its answer the whole level's); decide the level if it can be."""
        self.running.discard(index)
        self.nodes += outcome.nodes
        self.cpu_s += outcome.stats.cpu_s
        self._round_cpu += outcome.stats.cpu_s
        self.peak_rss_mb = max(self.peak_rss_mb, outcome.stats.peak_rss_mb)
        if self.outcome is not None:
            return  # a part still running when the level was decided: its effort counts, nothing else
        if self.best_of_all:
            self._took_best(index, outcome)
        else:
            self._took_first(index, outcome)

    def left(
        self, time_limit: float | None, node_limit: int | None, cpu_limit: float | None
    ) -> tuple[float | None, int | None, float | None] | None:
        """Return what the level's limits leave a part handed out now, (wall s, nodes, CPU s): the wall
        time from the level's start, the nodes and CPU its parts have not spent (None: no such limit);
        None when one of them is spent."""
        wall = None if time_limit is None else time_limit - (time.monotonic() - self.started)
        nodes = None if node_limit is None else node_limit - self.nodes
        cpu = None if cpu_limit is None else cpu_limit - self.cpu_s
        if any(v is not None and v <= 0 for v in (wall, nodes, cpu)):
            return None
        return wall, nodes, cpu

    def timed_out(self) -> None:
        """The level's limits were spent before its parts decided it: it ends as a timeout."""
        if self.outcome is None:
            self._decide(Status.TIMEOUT, message="the level's limits were spent before its parts finished")

    def _took_first(self, index: int, outcome: Outcome) -> None:
        if outcome.status == Status.SOLVED:
            self._decide(Status.SOLVED, outcome.solution, f"part {index + 1} of {self.count}")
            return
        if outcome.status != Status.NO_SOLUTION and self._unsettled is None:
            self._unsettled = (index, outcome)
        if self.running:
            return
        if self._unsettled is not None:
            i, out = self._unsettled
            self._decide(out.status, message=f"part {i + 1} ended {out.status}: {out.message}")
        else:
            self._decide(Status.NO_SOLUTION, message=f"none of the {self.count} parts has an answer")

    def _took_best(self, index: int, outcome: Outcome) -> None:
        if outcome.status == Status.SOLVED:
            length = self.length(outcome.solution)
            if self._best is None or length < self._best[0]:
                self._best = (length, index, outcome.solution)
            self._resume.pop(index, None)
        elif outcome.status == Status.NO_SOLUTION:
            if outcome.resume is None:
                self._resume.pop(index, None)
            else:
                self._resume[index] = outcome.resume
        else:
            self._decide(
                outcome.status, message=f"part {index + 1} ended {outcome.status}: {outcome.message}"
            )
            return
        if not self._round_running():
            self._decided_best()

    def _decided_best(self) -> bool:
        """Decide a best-of-all level between rounds if it can be; return whether it is decided."""
        if self.outcome is not None:
            return True
        if self._resume and (self._best is None or min(self._resume.values()) < self._best[0]):
            return False
        if self._best is None:
            self._decide(Status.NO_SOLUTION, message=f"none of the {self.count} parts has an answer")
        else:
            length, i, answer = self._best
            rounds = f"in {self.rounds} rounds"
            message = f"the shortest of {self.count} parts' answers ({length}), part {i + 1}, {rounds}"
            self._decide(Status.SOLVED, answer, message)
        return True

    def _decide(self, status: Status, solution: Any = None, message: str = "") -> None:
        stats = SearchStats(
            nodes=self.nodes,
            wall_s=time.monotonic() - self.started,
            cpu_s=self.cpu_s,
            peak_rss_mb=self.peak_rss_mb,
        )
        if self.before:
            message = f"{message}; {self.before}" if message else self.before
        self.outcome = Outcome(status, solution if status == Status.SOLVED else None, stats, message)
