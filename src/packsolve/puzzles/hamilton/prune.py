"""Pruned Hamiltonian-path search: complete pruned searches under node caps, restarted and split by end.

Each single search is a depth-first search (in Warnsdorff order by default) that
tests every expanded state against necessary conditions (connectivity, dead ends,
articulation points, colour parity, degree relaxation, forced edges: see
``python_search``). Its hot loop lives in the C module
``packsolve.native.hamilton``; the pure-Python ``PrunedSearch`` is the same
algorithm, node for node, used when the extension is not built and by the
tests to cross-check the C code. This module runs those searches as a
portfolio (``pruned_search``) against one Budget.
"""

from __future__ import annotations

import importlib
import itertools
import random
from collections import deque
from typing import Any

from packsolve.api import Budget, BudgetExhausted
from packsolve.puzzles.hamilton.graph import HamiltonProblem
from packsolve.puzzles.hamilton.python_search import (
    PRUNE_ALL,
    PRUNE_CUT,
    PRUNE_DEAD,
    PRUNE_DEGREE,
    PRUNE_FORCED,
    PRUNE_PARITY,
    PRUNE_PROBE,
    PrunedSearch,
    segment_ok,
)

__all__ = [
    "PRUNE_ALL",
    "PRUNE_CUT",
    "PRUNE_DEAD",
    "PRUNE_DEGREE",
    "PRUNE_FORCED",
    "PRUNE_PARITY",
    "PRUNE_PROBE",
    "bipartite_colouring",
    "pruned_search",
]

# Node cap of the first run (at least 4 nodes per vertex), and how many doubling restarts
# run before the search also splits on the end vertex. One: a level the first run cannot settle
# is hard, and the ends' root checks refute most impossible ones at once (on the hardest levels
# found, a second restart first cost 2,000 more nodes on every level it touched and settled none).
RESTART_CAP, RESTARTS_BEFORE_ENDS = 1000, 1
# Node cap per vertex of each end's first search after its root check. A path takes one node per
# vertex at least, so a smaller cap could only refute; with the end known most ends on the
# hardest levels found are settled within two nodes per vertex (a path in 95-298 nodes).
FIRST_END_CAP_PER_CELL = 2

_native: Any
try:  # the C accelerator; absent in a source tree that was never built
    _native = importlib.import_module("packsolve.native.hamilton")
except ImportError:  # pragma: no cover - depends on the build
    _native = None


def bipartite_colouring(p: HamiltonProblem) -> list[int] | None:
    """Return a 0/1 colour per vertex with every edge joining two colours, or None if odd cycles exist."""
    colour = [-1] * p.n
    for root in range(p.n):
        if colour[root] >= 0:
            continue
        colour[root] = 0
        queue = deque([root])
        while queue:
            v = queue.popleft()
            for w in p.adj[v]:
                if colour[w] < 0:
                    colour[w] = 1 - colour[v]
                    queue.append(w)
                elif colour[w] == colour[v]:
                    return None
    return colour


def pruned_search(
    p: HamiltonProblem,
    budget: Budget,
    prune: int = PRUNE_ALL,
    warnsdorff: bool = True,
    native: bool = True,
    restarts: bool = True,
) -> list[int] | None:
    """Return a Hamiltonian path of p, or None when none exists; raise BudgetExhausted at the limit.

    One node is one vertex appended to the path, as in ``depth_first``.
    Without ``restarts`` this is one complete depth-first search. With them
    (the default) it is a portfolio of complete searches under node caps:

    1. restarts: the search runs again with freshly shuffled tie-breaks under
       a cap that doubles each time. Depth-first search is heavy-tailed (one
       early mistake can cost millions of nodes); a new order usually avoids it.
    2. end splitting, for open paths whose end is free, once the restarts have
       spent a while: one search per possible end vertex (the end's colour is
       fixed by parity), round-robin under doubling caps, beside the free-end
       search. Knowing the end switches on the forced-edge test and exact
       parity, so on a level with no path each end is usually refuted at its
       root (the root checks also probe: each open edge tried removed and forced, the
       failures kept as facts; once one end falls to probing, the rest are probed jointly,
       through a new last vertex next to each); the level is proved impossible once every end
       is. Each end is also searched backwards (from the end to the start), often much easier.
       Ends that survive their root check are narrowed by a 2-vertex-cut parity test,
       then each gets room for a path (FIRST_END_CAP_PER_CELL nodes per vertex) before
       the free-end search runs again.

    Every run is complete below its cap, so one that ends without a path is a proof.
    """
    colour = bipartite_colouring(p) if prune & (PRUNE_PARITY | PRUNE_DEGREE) else None
    runner = _Runner(p, budget, colour, warnsdorff, prune, native)
    if not restarts:
        return runner.attempt(p, 0)[1]
    runs = _FreeEndRuns(runner, p)
    no_end_to_split = p.end is not None or p.closed or p.n < 3
    for _ in itertools.count() if no_end_to_split else range(RESTARTS_BEFORE_ENDS):
        status, path = runs.attempt()
        if status != 2:
            return path
        runs.reshuffle(runs.cap * 2)
    return _split_on_ends(runs, colour, native)


class _FreeEndRuns:
    """The search with the end left free, rerun with freshly shuffled tie-breaks under a growing cap."""

    def __init__(self, runner: _Runner, p: HamiltonProblem) -> None:
        self.runner, self.p = runner, p
        self.rng = random.Random(p.n)  # reproducible: the same level takes the same runs
        self.q, self.cap = p, max(RESTART_CAP, 4 * p.n)

    def attempt(self) -> tuple[int, list[int] | None]:
        return self.runner.attempt(self.q, self.cap)

    def reshuffle(self, cap: int) -> None:
        """Make the next run's tie-breaks new and its cap cap."""
        self.q, self.cap = _shuffled(self.p, self.rng), cap


def _split_on_ends(runs: _FreeEndRuns, colour: list[int] | None, native: bool) -> list[int] | None:
    """Search each possible end round-robin under doubling caps, the free-end runs beside them."""
    p = runs.p
    ends = _possible_ends(p, colour)
    end_cap = 1
    while True:
        path, ends = _end_round(runs.runner, runs.q, ends, end_cap)
        if path is not None:
            return path
        if end_cap == 1 and ends and colour is not None:
            # The root checks were cheap; the cut test costs O(n (n + m)), so it only
            # filters the ends that survived them.
            allowed = _allowed_ends(p, colour, runs.runner.budget, native)
            ends = ends if allowed is None else [v for v in ends if v in allowed]
        if not ends:
            return None  # every possible end refuted
        if end_cap > 1:  # the free-end search keeps its share once the ends have had theirs
            status, path = runs.attempt()
            if status != 2:
                return path
        end_cap = FIRST_END_CAP_PER_CELL * p.n if end_cap == 1 else end_cap * 2
        # About as many nodes as the end searches get.
        runs.reshuffle(max(runs.cap, end_cap * len(ends)))


def _possible_ends(p: HamiltonProblem, colour: list[int] | None) -> list[int]:
    """Return the vertices that may end an open path from p.start, likely ends first."""
    if colour is None:
        ends = [v for v in range(p.n) if v != p.start]
    else:  # a path alternates colours, so its length fixes the end's colour
        end_colour = colour[p.start] ^ (1 - p.n % 2)
        ends = [v for v in range(p.n) if v != p.start and colour[v] == end_colour]
    ends.sort(key=lambda v: (len(p.adj[v]), v))  # corners and dead ends first: likely ends
    return ends


def _end_round(
    runner: _Runner, q: HamiltonProblem, ends: list[int], end_cap: int
) -> tuple[list[int] | None, list[int]]:
    """Search q with each end under end_cap; return (a path found, else None; the ends still open)."""
    if end_cap == 1:
        return None, runner.root_survivors(q, ends)
    still_open: list[int] = []
    for e in ends:
        status, path = runner.attempt(HamiltonProblem(q.adj, q.start, e), end_cap)
        if status == 2 and end_cap > 1:
            # The same question asked from the other end: growing the path from e
            # is often far easier (a corridor near e is forced from that side).
            status, path = runner.attempt(HamiltonProblem(q.adj, e, q.start), end_cap)
            path = path[::-1] if path else path
        if status == 0:
            return path, still_open
        if status == 2:
            still_open.append(e)
    return None, still_open


def _allowed_ends(p: HamiltonProblem, colour: list[int], budget: Budget, native: bool) -> set[int] | None:
    """Return the vertices the 2-vertex-cut parity test allows to end the path (None: all), in C if built."""
    if not native or _native is None:
        return _two_cut_ends(p, colour, budget)
    offsets, flat = _flat(p)
    allowed = _native.two_cut_ends(offsets, flat, p.start, colour)
    return None if allowed is None else set(allowed)


def _flat(p: HamiltonProblem) -> tuple[list[int], list[int]]:
    """Return p's adjacency as (offsets, neighbours), the form the C module reads."""
    offsets = [0]
    flat: list[int] = []
    for nbrs in p.adj:
        flat.extend(nbrs)
        offsets.append(len(flat))
    return offsets, flat


def _two_cut_ends(p: HamiltonProblem, colour: list[int], budget: Budget) -> set[int] | None:
    """Return the vertices that can end a path from p.start by the 2-vertex-cut parity test (None: all).

    If removing vertices a and b cuts off a piece C that holds neither the
    start nor the end, the path runs through C in one go between a and b
    (each of a, b has only two path neighbours, and every run inside C needs
    one on each side), so C + {a, b} must hold the colour counts of a path
    from a to b. When it does not, the end must lie in C. Pieces hanging on a
    single cut vertex b need the end inside them too. O(n (n + m)): run once
    per hard level, checking the clock between vertices.
    """
    allowed: set[int] | None = None
    adj = p.adj
    for a in range(p.n):
        if a == p.start:
            continue
        budget.check_clock()
        tree = _tree_without(p, colour, a)
        if tree is None:
            continue  # a is a cut vertex itself: the other tests cover it
        order, disc, count, hanging = tree
        for b, c in hanging:
            first, size = disc[c], count[c][0] + count[c][1]
            piece = order[first : first + size]  # a DFS subtree is contiguous in discovery order
            if a in (w for v in piece for w in adj[v]):
                n0 = count[c][0] + (colour[a] == 0) + (colour[b] == 0)
                n1 = count[c][1] + (colour[a] == 1) + (colour[b] == 1)
                if segment_ok(colour[a], colour[b], n0, n1):
                    continue
            allowed = set(piece) if allowed is None else allowed & set(piece)
    return allowed


def _tree_without(
    p: HamiltonProblem, colour: list[int], a: int
) -> tuple[list[int], list[int], list[list[int]], list[tuple[int, int]]] | None:
    """Return the depth-first search of p without vertex a from the start, or None if it misses a vertex.

    The search is (discovery order, each vertex's index in it, colour counts of each vertex's subtree,
    the (b, child c) pairs whose subtree of c hangs on b, and maybe a), with Tarjan's low-links.
    """
    start, n, adj = p.start, p.n, p.adj
    disc, low, parent, count = [-1] * n, [0] * n, [-1] * n, [[0, 0] for _ in range(n)]
    order: list[int] = []
    disc[a] = -2  # removed
    disc[start] = low[start] = 0
    order.append(start)
    count[start][colour[start]] = 1
    stack = [(start, iter(adj[start]))]
    hanging: list[tuple[int, int]] = []
    while stack:
        v, it = stack[-1]
        w = next(it, None)
        if w is not None:
            if disc[w] == -1:
                disc[w] = low[w] = len(order)
                parent[w] = v
                order.append(w)
                count[w][colour[w]] = 1
                stack.append((w, iter(adj[w])))
            elif disc[w] >= 0 and w != parent[v]:
                low[v] = min(low[v], disc[w])
            continue
        stack.pop()
        q = parent[v]
        if q >= 0:
            low[q] = min(low[q], low[v])
            count[q][0] += count[v][0]
            count[q][1] += count[v][1]
            if q != start and low[v] >= disc[q]:
                hanging.append((q, v))
    return (order, disc, count, hanging) if len(order) == n - 1 else None


def _shuffled(p: HamiltonProblem, rng: random.Random) -> HamiltonProblem:
    """Return p with every neighbour list shuffled: new tie-breaks for the next run."""
    return HamiltonProblem(tuple(tuple(rng.sample(a, len(a))) for a in p.adj), p.start, p.end, p.closed)


def _jointly_refuted(runner: _Runner, q: HamiltonProblem, colour: list[int], ends: list[int]) -> bool:
    """Whether probing refutes every one of ends (none q's start) at once.

    A Hamiltonian path from the start to one of ends is one from the start to a new vertex t
    joined to each of them (t last), so the root check of t with probing refutes them all. t
    takes the colour opposite the ends' so the graph stays bipartite, which the degree test
    needs: ends of both colours are not probed jointly (False).
    """
    if len({colour[e] for e in ends}) != 1:
        return False
    t, members = len(q.adj), set(ends)
    adj = tuple((*nbrs, t) if v in members else nbrs for v, nbrs in enumerate(q.adj))
    joined = HamiltonProblem((*adj, tuple(ends)), q.start)
    return not runner._roots(joined, [*colour, 1 - colour[ends[0]]], [t], runner.prune)


class _Runner:
    """Runs capped searches against one Budget; only the budget's own limits raise."""

    def __init__(
        self,
        p: HamiltonProblem,
        budget: Budget,
        colour: list[int] | None,
        warnsdorff: bool,
        prune: int,
        native: bool,
    ) -> None:
        self.budget, self.colour, self.warnsdorff, self.prune = budget, colour, warnsdorff, prune
        self.run = _native_run if native and _native is not None else _python_run

    def root_survivors(self, q: HamiltonProblem, ends: list[int]) -> list[int]:
        """Return the ends e whose search of q to e is not refuted at its root (attempt with cap 1).

        The nodes are those of the attempts: one per end, two per survivor. The roots are also
        probed (PRUNE_PROBE), see root_checks. Close to the node limit the ends are checked one
        attempt at a time (probing up to the first survivor), so the budget stops at its limit.
        """
        budget = self.budget
        if budget.node_limit is not None and budget.node_limit - budget.nodes <= 2 * len(ends):
            alive: list[int] = []
            for e in ends:
                if self.attempt(HamiltonProblem(q.adj, q.start, e), 1, not alive)[0] == 2:
                    alive.append(e)
            return alive
        alive = self.root_checks(q, ends)
        budget.nodes += len(ends) + len(alive)
        budget.check_clock()
        return alive

    def root_checks(self, q: HamiltonProblem, ends: list[int]) -> list[int]:
        """Return the ends whose root survives the tests of one state and probing; no nodes counted.

        Probing costs whole passes over the edges per end, so it stops at the first end it does
        not refute (on a level with a path most ends survive it). Once it has refuted one, the
        level is likely impossible and the other survivors of the tests of one state are probed
        jointly (_jointly_refuted): one probe instead of one per end. Only if that fails does
        probing go on end by end, as before.
        """
        colour, prune = self.colour, self.prune
        if not prune & PRUNE_PROBE or colour is None:
            return self._roots(q, colour, ends, prune)
        alive = self._roots(q, colour, ends, prune & ~PRUNE_PROBE)
        if not alive or self._roots(q, colour, alive[:1], prune):
            return alive  # none to probe, or the first survives probing: the others go unprobed
        rest = alive[1:]
        if not rest or _jointly_refuted(self, q, colour, rest):
            return []
        return self._roots(q, colour, rest, prune)

    def _roots(self, q: HamiltonProblem, colour: list[int] | None, ends: list[int], prune: int) -> list[int]:
        """The ends whose root state passes the tests of prune, probing up to the first survivor:
        in C one call for all (the graph read once), else one Python search per end."""
        if self.run is _native_run:
            assert _native is not None
            offsets, flat = _flat(q)
            return list(_native.root_ends(offsets, flat, q.start, colour, ends, prune))
        alive: list[int] = []
        for e in ends:  # probing up to the first survivor, as root_ends does
            end_q = HamiltonProblem(q.adj, q.start, e)
            if PrunedSearch(end_q, colour, self.warnsdorff, prune, not alive).run(1, -1.0)[0] == 2:
                alive.append(e)
        return alive

    def attempt(self, q: HamiltonProblem, cap: int, probe_root: bool = False) -> tuple[int, list[int] | None]:
        """Return (0, path), (1, None) when none exists, or (2, None) when the cap (> 0) stopped it.

        probe_root (a root check: cap 1, q's end given) also probes the root state (PRUNE_PROBE).
        """
        budget = self.budget
        node_limit = -1 if budget.node_limit is None else max(0, budget.node_limit - budget.nodes)
        capped = cap > 0 and (node_limit < 0 or cap < node_limit)
        if capped:
            node_limit = cap
        remaining = budget.remaining()
        time_limit = -1.0 if remaining is None else remaining
        if probe_root:
            status, path, nodes = self._probed_root(q)
        else:
            run = self.run
            status, path, nodes = run(q, self.colour, self.warnsdorff, self.prune, node_limit, time_limit)
        # Counted in the search, so added without charge(): a found path must not be lost to the clock.
        budget.nodes += nodes
        if status == 2 and not capped:
            raise BudgetExhausted(f"node limit {budget.node_limit} reached")
        if status == 3:
            raise BudgetExhausted(budget.wall_message())
        return status, path

    def _probed_root(self, q: HamiltonProblem) -> Run:
        """The root check of q's end with probing: what a search of q capped at one node returns
        (one node when the root is refuted, two when it survives), probing the root as well.

        Only the C module's root_ends probes (its search() never does), so it answers for one end.
        """
        assert q.end is not None and not q.closed
        if self.run is _native_run:
            assert _native is not None
            offsets, flat = _flat(q)
            alive = _native.root_ends(offsets, flat, q.start, self.colour, [q.end], self.prune)
            return (2, None, 2) if alive else (1, None, 1)
        return PrunedSearch(q, self.colour, self.warnsdorff, self.prune, probe_root=True).run(1, -1.0)


Run = tuple[int, "list[int] | None", int]


def _native_run(
    p: HamiltonProblem,
    colour: list[int] | None,
    warnsdorff: bool,
    prune: int,
    node_limit: int,
    time_limit: float,
) -> Run:
    offsets, flat = _flat(p)
    end = -1 if p.end is None else p.end
    assert _native is not None
    return _native.search(
        offsets, flat, p.start, end, p.closed, colour, int(warnsdorff), prune, node_limit, time_limit
    )


def _python_run(
    p: HamiltonProblem,
    colour: list[int] | None,
    warnsdorff: bool,
    prune: int,
    node_limit: int,
    time_limit: float,
) -> Run:
    return PrunedSearch(p, colour, warnsdorff, prune).run(node_limit, time_limit)
