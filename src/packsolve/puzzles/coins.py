"""Coin change levels: the fewest notes, each used at most once, that sum exactly to the target."""

from __future__ import annotations

import functools
import random
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from itertools import accumulate
from math import gcd
from typing import Any

# numpy comes with matplotlib (a dependency). Imported with the kind, before the runner forks, so
# each attempt's child does not pay the import again.
import numpy as np

from packsolve.api import Budget, LevelError, Outcome, PuzzleKind, field_of, no_solution, solved, solver

MAX_NOTES = 100_000
MAX_VALUE = 10**15
# The DP table keeps one bit per (note, sum) for reconstruction plus one int32 per sum;
# past this many cells the default switches to branch and bound instead of the table.
DP_MAX_CELLS = 1_000_000_000
DP_MAX_SUMS = 20_000_000
# verify proves optimality with Python big-int bitsets up to this many sums.
VERIFY_MAX_SUMS = 1 << 25
VERIFY_MAX_BITS = 1 << 29


@dataclass(frozen=True)
class Coins:
    """A coins level: note values (sorted, each usable once) and the exact target."""

    notes: tuple[int, ...]
    target: int


def _int(value: Any, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LevelError(f"{what} must be an integer, not {value!r}")
    if not low <= value <= MAX_VALUE:
        raise LevelError(f"{what} must be between {low} and {MAX_VALUE}, not {value}")
    return value


def parse(data: Mapping[str, Any]) -> Coins:
    notes = field_of(data, "notes", "coins")
    target = field_of(data, "target", "coins")
    if not isinstance(notes, list):
        raise LevelError("'notes' must be a list of positive integers")
    if len(notes) > MAX_NOTES:
        raise LevelError(f"{len(notes)} notes, more than the {MAX_NOTES} supported")
    values = tuple(sorted(_int(v, f"note {i + 1}", 1) for i, v in enumerate(notes)))
    return Coins(values, _int(target, "'target'", 0))


def canonical(level: Coins) -> dict[str, Any]:
    # Order does not change the problem, so sorted notes make one identity per multiset.
    return {"notes": list(level.notes), "target": level.target}


def _answer(chosen: list[int]) -> dict[str, Any]:
    return {"count": len(chosen), "notes": sorted(chosen, reverse=True)}


def _recursion_guard(name: str, n: int) -> RuntimeError:
    return RuntimeError(
        f"{name} recursion over {n} notes exceeded Python's recursion limit; use the default heuristic"
    )


def _take_or_skip(prune: bool, level: Coins, budget: Budget) -> Outcome:
    """The write-up's recursion: each note taken or skipped; with prune, stop once the sum passes s."""
    notes, target, n = level.notes, level.target, len(level.notes)
    best: list[int] | None = None
    chosen: list[int] = []

    def go(i: int, total: int) -> None:
        nonlocal best
        budget.charge()
        if prune and total > target:
            return
        if i == n:
            if total == target and (best is None or len(chosen) < len(best)):
                best = chosen[:]
            return
        chosen.append(notes[i])
        go(i + 1, total + notes[i])
        chosen.pop()
        go(i + 1, total)

    try:
        go(0, 0)
    except RecursionError:
        raise _recursion_guard("take-or-skip", n) from None
    if best is None:
        return no_solution(f"no subset of the {n} notes sums to {target}")
    return solved(_answer(best))


def _quick_no(level: Coins) -> tuple[str | None, int, list[int], int]:
    """Return (reason it is impossible or None, gcd, notes/gcd that fit, target/gcd)."""
    notes = [a for a in level.notes if a <= level.target]
    g = 0
    for a in notes:
        g = gcd(g, a)
    if level.target and not notes:
        return f"no note is at most the target {level.target}", 1, [], 0
    if g and level.target % g:
        return f"every usable note is a multiple of {g}, the target {level.target} is not", g, [], 0
    g = g or 1
    if sum(notes) < level.target:
        return f"the usable notes sum to {sum(notes)}, less than the target {level.target}", g, [], 0
    return None, g, [a // g for a in notes], level.target // g


def dynamic_programming(level: Coins, budget: Budget) -> Outcome:
    """Min-count 0/1 knapsack over sums 0..target, one bit per (note, sum) to rebuild the choice."""
    reason, g, notes, target = _quick_no(level)
    if reason:
        return no_solution(reason)
    if target == 0:
        return solved(_answer([]))
    if target + 1 > DP_MAX_SUMS or len(notes) * (target + 1) > DP_MAX_CELLS:
        raise MemoryError(
            f"DP table of {len(notes)} notes x {target + 1} sums is too large; use the 'bnb' heuristic"
        )
    inf = len(notes) + 1
    best = np.full(target + 1, inf, dtype=np.int32)
    best[0] = 0
    taken = []
    for a in notes:
        # One node per (note, sum) state relaxed, charged per note so time limits still hold.
        budget.charge(target + 1 - a)
        cand = best[: target + 1 - a] + 1
        better = cand < best[a:]
        np.minimum(best[a:], cand, out=best[a:])
        taken.append(np.packbits(better))
    if best[target] >= inf:
        return no_solution(f"no subset of the {len(level.notes)} notes sums to {level.target}")
    chosen, s = [], target
    for a, bits in zip(reversed(notes), reversed(taken), strict=True):
        if s >= a and (bits[(s - a) >> 3] >> (7 - ((s - a) & 7))) & 1:
            chosen.append(a * g)
            s -= a
    if s != 0:  # the table is consistent by construction; a failure here is a bug, not an answer
        raise RuntimeError("DP reconstruction did not reach sum 0")
    return solved(_answer(chosen))


class _GiveUp(Exception):
    """Branch and bound passed its node cap (inside auto)."""


def branch_and_bound(level: Coins, budget: Budget, cap: int | None = None) -> Outcome:
    """Depth-first over notes in decreasing order; prune by the fewest notes that could still reach.

    With cap, raise _GiveUp after that many nodes so auto can switch to the DP.
    """
    reason, g, usable, target = _quick_no(level)
    if reason:
        return no_solution(reason)
    notes = sorted(usable, reverse=True)
    n = len(notes)
    prefix = [0, *accumulate(notes)]
    best: list[int] | None = None
    chosen: list[int] = []
    stop = budget.nodes + cap if cap is not None else None

    def go(i: int, rem: int) -> None:
        nonlocal best
        budget.charge()
        if stop is not None and budget.nodes > stop:
            raise _GiveUp
        if rem == 0:
            best = chosen[:]
            return
        if prefix[n] - prefix[i] < rem:
            return
        # The largest remaining notes reach rem fastest: no choice can use fewer than this many.
        need = bisect_left(prefix, prefix[i] + rem) - i
        if best is not None and len(chosen) + need >= len(best):
            return
        a = notes[i]
        if a <= rem:
            chosen.append(a)
            go(i + 1, rem - a)
            chosen.pop()
        # Skipping a value skips its equal copies too: taking a later copy would repeat this branch.
        j = i + 1
        while j < n and notes[j] == a:
            j += 1
        if j < n:
            go(j, rem)

    try:
        go(0, target)
    except RecursionError:
        raise _recursion_guard("branch-and-bound", n) from None
    if best is None:
        return no_solution(f"no subset of the {len(level.notes)} notes sums to {level.target}")
    return solved(_answer([a * g for a in best]))


def auto(level: Coins, budget: Budget) -> Outcome:
    """Branch and bound for about as long as the DP would take, then the DP; bnb alone if no table fits."""
    _, _, notes, target = _quick_no(level)
    cells = len(notes) * (target + 1)
    if target + 1 > DP_MAX_SUMS or cells > DP_MAX_CELLS:
        return branch_and_bound(level, budget)
    # A bnb node costs about a microsecond, a DP cell about a nanosecond: equal time, at most twice
    # the DP. Small tables still cost ~10 us a note in numpy calls, hence the floor.
    try:
        return branch_and_bound(level, budget, cap=max(20_000, cells // 1000))
    except (_GiveUp, RuntimeError):  # RuntimeError: bnb recursed past Python's limit (1000+ notes)
        return dynamic_programming(level, budget)


def fewest_notes_at_most(notes: tuple[int, ...], target: int, limit: int) -> int | None:
    """Return the fewest notes summing to target if at most limit, by big-int bitset layers; else None."""
    mask = (1 << (target + 1)) - 1
    layers = [1]  # layers[k]: bit s set when some k distinct notes sum to s
    for a in notes:
        if a > target:
            continue
        top = min(len(layers), limit)
        if top == len(layers):
            layers.append(0)
        for k in range(top, 0, -1):
            layers[k] |= (layers[k - 1] << a) & mask
    for k, bits in enumerate(layers):
        if bits >> target & 1:
            return k
    return None


def verify(level: Coins, solution: Any) -> str | None:
    """Return why solution is not a fewest-notes answer for level, or None if it is."""
    if not isinstance(solution, Mapping) or set(solution) != {"count", "notes"}:
        return 'solution must be {"count": k, "notes": [values...]}'
    count, notes = solution["count"], solution["notes"]
    if not isinstance(notes, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in notes):
        return "'notes' must be a list of integers"
    if count != len(notes):
        return f"count {count!r} is not the number of notes listed ({len(notes)})"
    extra = Counter(notes) - Counter(level.notes)
    if extra:
        return f"uses notes the level does not have (or too many copies): {sorted(extra.elements())}"
    if sum(notes) != level.target:
        return f"notes sum to {sum(notes)}, not the target {level.target}"
    # One big int of target bits per layer, count layers: keep the proof within ~64 MB.
    if count and level.target < VERIFY_MAX_SUMS and count * (level.target + 1) <= VERIFY_MAX_BITS:
        fewer = fewest_notes_at_most(level.notes, level.target, count - 1)
        if fewer is not None:
            return f"not the fewest: {fewer} notes reach {level.target}, the answer uses {count}"
    return None


def render(level: Coins, solution: Any = None) -> str:
    """Return the notes and target as text; with a solution, the chosen notes marked."""
    listed = " ".join(str(a) for a in sorted(level.notes, reverse=True))
    lines = [f"target {level.target}", f"notes  {listed}"]
    if solution:
        picked = solution["notes"]
        sum_text = " + ".join(str(a) for a in picked) or "nothing"
        lines.append(f"fewest: {solution['count']} note(s): {sum_text} = {sum(picked)}")
    return "\n".join(lines)


def svg(level: Coins, solution: Any = None, width: int = 24) -> str:
    """Return an SVG bar chart of the notes, the chosen ones filled."""
    notes = sorted(level.notes, reverse=True)[:400]  # a picture of 400 bars is already unreadable
    left = Counter(solution["notes"]) if solution else Counter()
    top = max(notes, default=1)
    h = 160
    w = max(1, len(notes)) * width
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 40}" viewBox="0 0 {w} {h + 40}">',
        '<text x="4" y="16" font-family="monospace" font-size="14">'
        f"{escape(f'target {level.target}')}</text>",
    ]
    for i, a in enumerate(notes):
        bar = max(2.0, h * a / top * 0.8)
        chosen = left[a] > 0
        if chosen:
            left[a] -= 1
        fill = "#1e88e5" if chosen else "#ccc"
        parts.append(
            f'<rect x="{i * width + 2}" y="{h + 20 - bar:.1f}" width="{width - 4}" height="{bar:.1f}" '
            f'fill="{fill}"><title>{a}</title></rect>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def generate(size: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count levels of N notes ('N' or 'N:MAXVALUE', default values up to 10000)."""
    n_text, _, max_text = str(size).partition(":")
    try:
        n, top = int(n_text), int(max_text or 10_000)
    except ValueError:
        raise ValueError(f"coins size must be N or N:MAXVALUE, not {size!r}") from None
    if n < 1 or top < 1:
        raise ValueError("coins size needs at least one note and a positive maximum value")
    rng = random.Random(seed)
    levels = []
    for _ in range(count):
        notes = [rng.randint(1, top) for _ in range(n)]
        # The target is a random subset's sum: always reachable, usually by fewer notes than the subset.
        subset = rng.sample(notes, rng.randint(1, max(1, n // 3)))
        levels.append({"kind": "coins", "notes": notes, "target": sum(subset)})
    return levels


KIND = PuzzleKind(
    name="coins",
    parse=parse,
    canonical=canonical,
    solvers={
        "plain": solver(functools.partial(_take_or_skip, False)),
        "prune": solver(functools.partial(_take_or_skip, True)),
        "dp": solver(dynamic_programming),
        "bnb": solver(branch_and_bound),
        "auto": solver(auto),
    },
    default="auto",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda level: len(level.notes),
    length=lambda solution: solution["count"] if isinstance(solution, Mapping) else None,
    description="fewest notes, each used once, summing exactly to a target (0/1 coin change)",
    generate=generate,
    size_help="N or N:MAX, N notes of values up to MAX (default 10000), e.g. 30:1000",
    examples=({"notes": [9, 1, 6, 3], "target": 10}, {"notes": [4, 6, 10, 20], "target": 33}),
)
