"""A fast backtracking knight's-path search on a rectangle, with a required end region.

Warnsdorff's rule orders the moves (fewest onward exits first), a static
tie-break key per square settles ties, and two cuts keep the tree small: a
square left with no way in or out ends the branch, and so do two squares left
with a single way each (only one of them can be the path's end). The end may be
confined to a set of squares: that is how blocks hand over to their neighbour
and how a closed tour comes back next to its start.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from packsolve.api import Budget

# The C++ write-up's move order, (row delta, column delta) = (dy, dx).
MOVES = ((1, -2), (2, -1), (2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2))


class NodeLimit(Exception):
    """Raised when one attempt of the search spends its own node allowance."""


def knight_adjacency(h: int, w: int) -> list[tuple[int, ...]]:
    """Return each square's knight moves on an h x w board (square index r * w + c)."""
    return [
        tuple((r + dr) * w + c + dc for dr, dc in MOVES if 0 <= r + dr < h and 0 <= c + dc < w)
        for r in range(h)
        for c in range(w)
    ]


def roth_key(h: int, w: int) -> list[float]:
    """Return Roth's tie-break: farther from the centre sorts first."""
    cy, cx = (h - 1) / 2, (w - 1) / 2
    return [-math.hypot(r - cy, c - cx) for r in range(h) for c in range(w)]


def toward_key(h: int, w: int, targets: Collection[int]) -> list[float]:
    """Return a tie-break that visits squares far from the targets first, so the path ends near them.

    Roth's distance from the centre breaks the remaining ties.
    """
    roth = roth_key(h, w)
    pts = [divmod(t, w) for t in targets]
    key = []
    for r in range(h):
        for c in range(w):
            d = min(math.hypot(r - tr, c - tc) for tr, tc in pts)
            key.append(-d + roth[r * w + c] * 1e-3)
    return key


@dataclass(frozen=True)
class PathProblem:
    """A knight's path to find over every square of an h x w board.

    adj holds each square's moves (knight_adjacency); key is the static tie-break
    (lower first) among moves with as few onward exits; the path must end in ends
    (None: anywhere). step_rule(x, y, i), when given, says whether the path's
    square number i (x) may be followed by y: a board's known structure, such as
    four_wide_rule.
    """

    h: int
    w: int
    adj: list[tuple[int, ...]]
    key: Sequence[float]
    ends: frozenset[int] | None = None
    step_rule: Callable[[int, int, int], bool] | None = None


@dataclass(frozen=True)
class Restarts:
    """How knight_path_restarts runs its tries: how many, the first one's node allowance, the noise's seed.

    With complete, the last try has no allowance, so None means "searched to the
    end: no such path"; without, None may also mean "gave up".
    """

    tries: int = 200
    first_limit: int = 2000
    seed: int = 0
    complete: bool = True


RESTARTS = Restarts()


class _Walk:
    """The search's state along the current path: visited squares, ways left, dead ends, ends left.

    The steps that change and read it (_visit_step, _unvisit_step, _choices_step) are
    closures over its lists: they run once per node, and a closure reads its variables
    faster than a method reads attributes (measured: methods cost about 10% more).
    """

    __slots__ = ("problem", "n", "deg", "visited", "ones", "ends_left")

    def __init__(self, problem: PathProblem) -> None:
        self.problem = problem
        self.n = n = problem.h * problem.w
        self.deg = deg = [len(a) for a in problem.adj]
        self.visited = [False] * n
        # Unvisited squares with a single way left: each must be the path's end.
        self.ones = {v for v in range(n) if deg[v] == 1}
        self.ends_left = n if problem.ends is None else len(problem.ends)


def _visit_step(walk: _Walk) -> Callable[[int], None]:
    """Return the step that appends x to the path: one way fewer into each unvisited neighbour."""
    adj, ends = walk.problem.adj, walk.problem.ends
    deg, visited, ones = walk.deg, walk.visited, walk.ones

    def visit(x: int) -> None:
        visited[x] = True
        ones.discard(x)
        if ends is not None and x in ends:
            walk.ends_left -= 1
        for y in adj[x]:
            if not visited[y]:
                d = deg[y] = deg[y] - 1
                if d == 1:
                    ones.add(y)
                elif d == 0:
                    ones.discard(y)

    return visit


def _unvisit_step(walk: _Walk) -> Callable[[int], None]:
    """Return the step that takes x, the path's last square, back off it."""
    adj, ends = walk.problem.adj, walk.problem.ends
    deg, visited, ones = walk.deg, walk.visited, walk.ones

    def unvisit(x: int) -> None:
        if ends is not None and x in ends:
            walk.ends_left += 1
        for y in adj[x]:
            if not visited[y]:
                d = deg[y] = deg[y] + 1
                if d == 1:
                    ones.add(y)
                elif d == 2:
                    ones.discard(y)
        visited[x] = False
        if deg[x] == 1:
            ones.add(x)

    return unvisit


def _choices_step(walk: _Walk) -> Callable[[int, int], list[int]]:
    """Return the step that orders x's moves with `left` squares to go; [] when the position is lost."""
    adj, ends, key, step_rule = walk.problem.adj, walk.problem.ends, walk.problem.key, walk.problem.step_rule
    n, deg, visited, ones = walk.n, walk.deg, walk.visited, walk.ones

    def choices(x: int, left: int) -> list[int]:
        cands = [y for y in adj[x] if not visited[y]]
        if step_rule is not None:
            cands = [y for y in cands if step_rule(x, y, n - left - 1)]
        if left == 1:
            return [y for y in cands if ends is None or y in ends]
        if walk.ends_left == 0:
            return []  # every allowed end is used up before the last square
        near_ones = 0
        for y in cands:
            if deg[y] == 0:
                return []  # y could only be the last square, and it is not
            if deg[y] == 1:
                near_ones += 1
        far = len(ones) - near_ones
        if far > 1:
            return []
        # A lone far dead end must be the path's end, so it must be an allowed end.
        if far == 1 and ends is not None and not any(v in ends for v in ones if v not in cands):
            return []
        cands.sort(key=lambda y: (deg[y], key[y]))
        return cands

    return choices


def knight_path(
    problem: PathProblem, start: int, budget: Budget, node_limit: int | None = None
) -> list[int] | None:
    """Return a knight's path of problem from start, or None when the whole tree was searched (no path).

    Raise NodeLimit when node_limit nodes were spent in this call. One node is
    one square appended to the path, charged to budget.
    """
    n, ends = problem.h * problem.w, problem.ends
    if ends is not None and not ends:
        return None
    if n == 1:
        return [start] if ends is None or start in ends else None
    walk = _Walk(problem)
    visit, unvisit, choices = _visit_step(walk), _unvisit_step(walk), _choices_step(walk)
    spent = 0
    path = [start]
    budget.charge()
    visit(start)
    stack = [iter(choices(start, n - 1))]
    while stack:
        y = next(stack[-1], None)
        if y is None:
            stack.pop()
            if len(path) > 1:
                unvisit(path.pop())
            continue
        budget.charge()
        spent += 1
        if node_limit is not None and spent > node_limit:
            raise NodeLimit
        path.append(y)
        if len(path) == n:
            return path
        visit(y)
        stack.append(iter(choices(y, n - len(path))))
    return None


def knight_path_restarts(
    problem: PathProblem, start: int, budget: Budget, restarts: Restarts = RESTARTS
) -> list[int] | None:
    """Return a path as knight_path, restarting with noisier tie-breaks and growing node allowances.

    Backtracking times are heavy-tailed: a search that is lost deep in a bad
    subtree is better abandoned for a fresh one with other ties (the noise grows
    with the first tries until the order among equals is random) than waited
    for: on 3 x n and 4 x n boards short random restarts win by orders of magnitude.
    The budget is what stops the last, complete try on hopeless boards.
    """
    rng = random.Random(restarts.seed)
    key = problem.key
    # An attempt must at least be able to lay the whole path, plus room to backtrack.
    limit = float(restarts.first_limit + 2 * problem.h * problem.w)
    spread = (max(key) - min(key)) + 1.0
    attempt = replace(problem, key=list(key))
    tries = restarts.tries
    for t in range(1, tries + 1):
        try:
            last = restarts.complete and t == tries
            return knight_path(attempt, start, budget, None if last else int(limit))
        except NodeLimit:
            noise = spread * min(2.0, t / 4)
            attempt = replace(problem, key=[x + rng.random() * noise for x in key])
            limit *= 1.02
    return None


def four_wide_rule(h: int, w: int) -> Callable[[int, int, int], bool]:
    """Return the step rule every open tour of a 4-wide board obeys (tours start on an edge line).

    Edge-line squares only reach middle-line squares, and the two colours are
    equally split on both kinds of line, so a tour of 4 x n squares alternates
    edge, middle, edge... with exactly one middle-to-middle step, from square
    number 2n - 1 to 2n: before it all edge squares of the start's colour,
    after it those of the other colour.
    """
    n = max(h, w)

    def middle(v: int) -> bool:
        return (v // w if h == 4 else v % w) in (1, 2)

    def rule(x: int, y: int, i: int) -> bool:
        if not middle(x):
            return True
        return middle(y) == (i == 2 * n - 1)

    return rule
