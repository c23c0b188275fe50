"""Pruned Hamiltonian-path search: Warnsdorff order plus connectivity, dead-end,
articulation-point and colour-parity tests on every expanded state.

The hot loop lives in the C module ``packsolve.native.hamilton``; the pure
Python ``_search`` below is the same algorithm, node for node, used when the
extension is not built and by the tests to cross-check the C code.

Every state (head h, unvisited set U) is tested against necessary conditions
for a Hamiltonian path of G' = U + {h} that starts at h:

- connectivity: one depth-first search from h must reach all of U;
- dead ends: a vertex with one usable neighbour can only be the end, so two
  of them (or one that is not the required end) prune;
- articulation points (Tarjan's low-links, same search): the path crosses a
  cut vertex once and never comes back, so a cut vertex may have only one
  component hanging below it, those components must nest in a single chain,
  and the end lies in the innermost one;
- colour parity (bipartite graphs such as grids): a path alternates colours,
  so each segment of that chain, between consecutive cut vertices, must hold
  the colour counts a path between its two ends can have;
- degree relaxation (bipartite graphs): the path is a subgraph of G' with
  degree 1 at h and at the end and 2 elsewhere, so such a degree-constrained
  subgraph (a bipartite b-matching, found by augmenting paths) must exist.
  Its failure is Hall's condition failing on some region: more colour
  imbalance than the edges around the region can feed;
- forced edges (once the end is known): a vertex with exactly as many usable
  edges as its degree in the path uses them all, one whose forced edges fill
  its degree loses the others; at the fixpoint a forced cycle, an overfull
  vertex or a forced chain from h to the end that misses vertices prunes.
"""

from __future__ import annotations

import importlib
import random
import time
from collections import deque
from typing import Any

from packsolve.api import Budget, BudgetExhausted
from packsolve.puzzles.hamilton.graph import HamiltonProblem

PRUNE_DEAD, PRUNE_CUT, PRUNE_PARITY, PRUNE_DEGREE, PRUNE_FORCED = 1, 2, 4, 8, 16
PRUNE_ALL = PRUNE_DEAD | PRUNE_CUT | PRUNE_PARITY | PRUNE_DEGREE | PRUNE_FORCED
# Node cap of the first run (at least 4 nodes per vertex), and how many doubling restarts
# run before the search also splits on the end vertex.
RESTART_CAP, RESTARTS_BEFORE_ENDS = 1000, 2

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
       root; the level is proved impossible once every end is. Each end is also
       searched backwards (from the end to the start), often much easier.
       Ends that survive their root check are narrowed by a 2-vertex-cut parity test.

    Every run is complete below its cap, so one that ends without a path is a proof.
    """
    colour = bipartite_colouring(p) if prune & (PRUNE_PARITY | PRUNE_DEGREE) else None
    runner = _Runner(p, budget, colour, warnsdorff, prune, native)
    if not restarts:
        return runner.attempt(p, 0)[1]
    rng = random.Random(p.n)  # reproducible: the same level takes the same runs
    q, cap = p, max(RESTART_CAP, 4 * p.n)
    for _ in range(RESTARTS_BEFORE_ENDS):
        status, path = runner.attempt(q, cap)
        if status != 2:
            return path
        q, cap = _shuffled(p, rng), cap * 2
    if p.end is not None or p.closed or p.n < 3:
        while True:  # no end to split on: restarts only
            status, path = runner.attempt(q, cap)
            if status != 2:
                return path
            q, cap = _shuffled(p, rng), cap * 2
    if colour is None:
        ends = [v for v in range(p.n) if v != p.start]
    else:  # a path alternates colours, so its length fixes the end's colour
        end_colour = colour[p.start] ^ (1 - p.n % 2)
        ends = [v for v in range(p.n) if v != p.start and colour[v] == end_colour]
    ends.sort(key=lambda v: (len(p.adj[v]), v))  # corners and dead ends first: likely ends
    end_cap = 1
    while True:
        still_open = []
        for e in ends:
            status, path = runner.attempt(HamiltonProblem(q.adj, p.start, e), end_cap)
            if status == 2 and end_cap > 1:
                # The same question asked from the other end: growing the path from e
                # is often far easier (a corridor near e is forced from that side).
                status, path = runner.attempt(HamiltonProblem(q.adj, e, p.start), end_cap)
                path = path[::-1] if path else path
            if status == 0:
                return path
            if status == 2:
                still_open.append(e)
        ends = still_open
        if end_cap == 1 and ends and colour is not None:
            # The root checks were cheap; the cut test costs O(n (n + m)), so it only
            # filters the ends that survived them.
            allowed = _two_cut_ends(p, colour, budget)
            ends = ends if allowed is None else [v for v in ends if v in allowed]
        if not ends:
            return None  # every possible end refuted
        status, path = runner.attempt(q, cap)  # the free-end search keeps its share
        if status != 2:
            return path
        end_cap = 64 if end_cap == 1 else end_cap * 2
        cap = max(cap, end_cap * len(ends))  # about as many nodes as the end searches get
        q = _shuffled(p, rng)


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
    start, n, adj = p.start, p.n, p.adj
    for a in range(n):
        if a == start:
            continue
        budget.check_clock()
        # Iterative DFS of G - a from the start, with low-links and subtree colour counts.
        disc, low, parent, count = [-1] * n, [0] * n, [-1] * n, [[0, 0] for _ in range(n)]
        order: list[int] = []
        disc[a] = -2  # removed
        disc[start] = low[start] = 0
        order.append(start)
        count[start][colour[start]] = 1
        stack = [(start, iter(adj[start]))]
        hanging: list[tuple[int, int]] = []  # (b, child c): the subtree of c hangs on b (and maybe a)
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
        if len(order) != n - 1:
            continue  # a is a cut vertex itself: the other tests cover it
        for b, c in hanging:
            first, size = disc[c], count[c][0] + count[c][1]
            piece = order[first : first + size]  # a DFS subtree is contiguous in discovery order
            if a in (w for v in piece for w in adj[v]):
                n0 = count[c][0] + (colour[a] == 0) + (colour[b] == 0)
                n1 = count[c][1] + (colour[a] == 1) + (colour[b] == 1)
                if _segment_ok(colour[a], colour[b], n0, n1):
                    continue
            allowed = set(piece) if allowed is None else allowed & set(piece)
    return allowed


def _shuffled(p: HamiltonProblem, rng: random.Random) -> HamiltonProblem:
    """Return p with every neighbour list shuffled: new tie-breaks for the next run."""
    return HamiltonProblem(tuple(tuple(rng.sample(a, len(a))) for a in p.adj), p.start, p.end, p.closed)


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

    def attempt(self, q: HamiltonProblem, cap: int) -> tuple[int, list[int] | None]:
        """Return (0, path), (1, None) when none exists, or (2, None) when the cap (> 0) stopped it."""
        budget = self.budget
        node_limit = -1 if budget.node_limit is None else max(0, budget.node_limit - budget.nodes)
        capped = cap > 0 and (node_limit < 0 or cap < node_limit)
        if capped:
            node_limit = cap
        remaining = budget.remaining()
        status, path, nodes = self.run(
            q, self.colour, self.warnsdorff, self.prune, node_limit, -1.0 if remaining is None else remaining
        )
        # Counted in the search, so added without charge(): a found path must not be lost to the clock.
        budget.nodes += nodes
        if status == 2 and not capped:
            raise BudgetExhausted(f"node limit {budget.node_limit} reached")
        if status == 3:
            raise BudgetExhausted(f"time limit {budget.time_limit:g} s reached")
        return status, path


Run = tuple[int, "list[int] | None", int]


def _native_run(
    p: HamiltonProblem,
    colour: list[int] | None,
    warnsdorff: bool,
    prune: int,
    node_limit: int,
    time_limit: float,
) -> Run:
    offsets = [0]
    flat: list[int] = []
    for nbrs in p.adj:
        flat.extend(nbrs)
        offsets.append(len(flat))
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
    return _Search(p, colour, warnsdorff, prune).run(node_limit, time_limit)


def _segment_ok(ca: int, cb: int, n0: int, n1: int) -> bool:
    """Whether a path from colour ca over n0 + n1 vertices can end on colour cb (-1: anywhere)."""
    diff = n0 - n1 if ca == 0 else n1 - n0
    if cb < 0:
        return diff in (0, 1)
    return diff == 1 if cb == ca else diff == 0


class _Search:
    """The pure-Python twin of the C search (same tests, same order, same node counts)."""

    def __init__(self, p: HamiltonProblem, colour: list[int] | None, warnsdorff: bool, prune: int) -> None:
        self.p, self.adj, self.n = p, p.adj, p.n
        self.colour, self.warnsdorff, self.prune = colour, warnsdorff, prune
        self.end = -1 if p.end is None else p.end
        self.vis = [False] * p.n
        self.deg = [len(a) for a in p.adj]
        self.path: list[int] = []
        self.adjstart = set(p.adj[p.start])

    def visit(self, v: int) -> None:
        self.vis[v] = True
        self.path.append(v)
        for w in self.adj[v]:
            self.deg[w] -= 1

    def unvisit(self) -> None:
        v = self.path.pop()
        self.vis[v] = False
        for w in self.adj[v]:
            self.deg[w] += 1

    def candidates(self, h: int) -> list[int]:
        cands = [
            w for w in self.adj[h] if not self.vis[w] and (w != self.end or len(self.path) == self.n - 1)
        ]
        if self.warnsdorff:
            cands.sort(key=self.deg.__getitem__)  # stable: ties keep the natural order
        return cands

    def complete(self) -> bool:
        last = self.path[-1]
        if self.end >= 0 and last != self.end:
            return False
        return not (self.p.closed and self.n > 1 and self.p.start not in self.adj[last])

    def feasible(self, h: int) -> bool:  # noqa: C901 - one pass, mirrors the C code
        rem = self.n - len(self.path)
        if rem == 0 or not self.prune:
            return True
        adj, vis, colour = self.adj, self.vis, self.colour
        disc, low, last, parent, c0, c1 = {}, {}, {}, {}, {}, {}
        near_h = set(adj[h])
        order: list[int] = []
        hang: list[tuple[int, int]] = []
        cutmark: set[int] = set()
        cut = bool(self.prune & PRUNE_CUT)

        def enter(w: int, par: int) -> None:
            disc[w] = low[w] = len(order)
            parent[w] = par
            c0[w] = int(colour is not None and colour[w] == 0)
            c1[w] = int(colour is not None and colour[w] == 1)
            order.append(w)

        enter(h, -1)
        stack = [(h, iter(adj[h]))]
        while stack:
            v, it = stack[-1]
            w = next(it, None)
            if w is not None:
                if vis[w] and w != h:
                    continue
                if w not in disc:
                    enter(w, v)
                    stack.append((w, iter(adj[w])))
                elif w != parent[v] and disc[w] < low[v]:
                    low[v] = disc[w]
                continue
            stack.pop()
            last[v] = len(order) - 1
            q = parent[v]
            if q >= 0:
                low[q] = min(low[q], low[v])
                c0[q] += c0[v]
                c1[q] += c1[v]
                if cut and q != h and low[v] >= disc[q]:
                    if q in cutmark:
                        return False
                    cutmark.add(q)
                    hang.append((q, v))
        if len(order) != rem + 1:
            return False
        dead = -1
        if self.prune & PRUNE_DEAD:
            for v in order[1:]:
                avail = self.deg[v] + (v in near_h)
                if avail <= 1:
                    if (avail == 0 and rem > 1) or dead >= 0 or (self.end >= 0 and v != self.end):
                        return False
                    dead = v
        endv = self.end if self.end >= 0 else dead
        if self.p.closed and endv >= 0 and endv not in self.adjstart:
            return False
        for (_, inner), (_, outer) in zip(hang, hang[1:], strict=False):
            if not (disc[outer] <= disc[inner] and last[inner] <= last[outer]):
                return False
        if hang and endv >= 0:
            inner = hang[0][1]
            if endv not in disc or not disc[inner] <= disc[endv] <= last[inner]:
                return False
        if colour is None:
            return True
        if self.prune & PRUNE_PARITY:
            ce = colour[endv] if endv >= 0 else -1
            a, t0, t1 = h, c0[h], c1[h]
            for c, child in reversed(hang):
                if not _segment_ok(colour[a], colour[c], t0 - c0[child], t1 - c1[child]):
                    return False
                a, t0, t1 = c, c0[child] + (colour[c] == 0), c1[child] + (colour[c] == 1)
            if not _segment_ok(colour[a], ce, t0, t1):
                return False
        return not self.prune & PRUNE_DEGREE or _degree_ok(adj, colour, order, h, endv)

    def feasible_all(self, h: int) -> bool:
        """feasible(), then forced-edge propagation when the end is known."""
        if not self.feasible(h):
            return False
        rem = self.n - len(self.path)
        if not self.prune & PRUNE_FORCED or rem == 0:
            return True
        verts = [v for v in range(self.n) if not self.vis[v]] + [h]
        near_h = set(self.adj[h])
        endv = self.end
        if endv < 0:
            dead = [v for v in verts if v != h and self.deg[v] + (v in near_h) <= 1]
            endv = dead[-1] if dead else -1
        return endv < 0 or _forced_ok(self.adj, verts, h, endv)

    def run(self, node_limit: int, time_limit: float) -> tuple[int, list[int] | None, int]:
        """Return (status, path, nodes) with the C module's status codes."""
        deadline = time.monotonic() + time_limit if time_limit >= 0 else None
        self.visit(self.p.start)
        nodes = 1
        if self.n == 1:
            return (0, list(self.path), 1) if self.complete() else (1, None, 1)
        if not self.feasible_all(self.p.start):
            return 1, None, 1
        stack = [iter(self.candidates(self.p.start))]
        while stack:
            u = next(stack[-1], None)
            if u is None:
                stack.pop()
                if stack:
                    self.unvisit()
                continue
            nodes += 1
            if node_limit >= 0 and nodes > node_limit:
                return 2, None, nodes
            if deadline is not None and nodes % 256 == 0 and time.monotonic() >= deadline:
                return 3, None, nodes
            self.visit(u)
            if len(self.path) == self.n:
                if self.complete():
                    return 0, list(self.path), nodes
                self.unvisit()
                continue
            if not self.feasible_all(u):
                self.unvisit()
                continue
            stack.append(iter(self.candidates(u)))
        return 1, None, nodes


def _degree_ok(
    adj: tuple[tuple[int, ...], ...], colour: list[int], verts: list[int], h: int, endv: int
) -> bool:
    """Whether verts span a subgraph of degree 1 at h and the end (endv; any vertex if -1), else 2."""
    members = set(verts)
    cap = {v: 1 if v in (h, endv) else 2 for v in verts}
    total = [0, 0]
    for v in verts:
        total[colour[v]] += cap[v]
    if endv >= 0:
        if total[0] != total[1]:
            return False
        side = 0
    elif total[1] == total[0] + 1:  # an unknown end leaves its colour one unit of slack
        side = 0
    elif total[0] - total[1] == 1:
        side = 1
    else:
        return False
    # Max flow from the `side` colour to the other, unit capacity per edge (augmenting paths).
    load = dict.fromkeys(verts, 0)
    mate: set[tuple[int, int]] = set()  # used edges as (side vertex, other vertex)
    for v in verts:
        if colour[v] != side:
            continue
        while load[v] < cap[v]:
            prev: dict[int, tuple[int, int]] = {}
            seen = {v}
            queue = deque([v])
            found = None
            while queue and found is None:
                x = queue.popleft()
                for w in adj[x]:
                    if w not in members or (x, w) in mate or w in seen:
                        continue
                    seen.add(w)
                    prev[w] = (x, w)
                    if load[w] < cap[w]:
                        found = w
                        break
                    for x2 in adj[w]:
                        if (x2, w) in mate and x2 not in seen:
                            seen.add(x2)
                            prev[x2] = (x2, w)
                            queue.append(x2)
            if found is None:
                return False
            load[found] += 1
            load[v] += 1
            node = found
            while True:  # flip the alternating path back to v
                x, w = prev[node]
                mate.add((x, w))
                if x == v:
                    break
                _, e = prev[x]
                mate.discard((x, e))
                node = e
    return True


def _forced_ok(adj: tuple[tuple[int, ...], ...], verts: list[int], h: int, endv: int) -> bool:
    """Whether forced-edge propagation on the vertices verts (path h .. endv) meets no contradiction."""
    members = set(verts)
    live = {v: {w for w in adj[v] if w in members} for v in verts}
    forced: dict[int, set[int]] = {v: set() for v in verts}
    root = {v: v for v in verts}
    size = dict.fromkeys(verts, 1)

    def find(v: int) -> int:
        while root[v] != v:
            root[v] = root[root[v]]
            v = root[v]
        return v

    work = list(verts)
    while work:
        v = work.pop()
        b = 1 if v in (h, endv) else 2
        if len(live[v]) < b or len(forced[v]) > b:
            return False
        if len(live[v]) == len(forced[v]) or (len(live[v]) > b and len(forced[v]) < b):
            continue
        force = len(live[v]) == b  # else its forced edges fill its degree: drop the others
        for w in sorted(live[v] - forced[v]):
            if force:
                rv, rw = find(v), find(w)
                if rv == rw:
                    return False  # a forced cycle
                if size[rv] < size[rw]:
                    rv, rw = rw, rv
                root[rw] = rv
                size[rv] += size[rw]
                if find(h) == find(endv) and size[rv] < len(verts):
                    return False  # the forced chain h .. end misses vertices
                forced[v].add(w)
                forced[w].add(v)
            else:
                live[v].discard(w)
                live[w].discard(v)
            work.append(w)
        work.append(v)
    return True
