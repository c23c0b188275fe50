"""The pruned depth-first search for Hamiltonian paths in pure Python: the twin of the C code.

``packsolve.native.hamilton`` runs the same algorithm, node for node (same
tests, same order, same node counts); this one runs when the extension is not
built, and the tests cross-check the two. Every state (head h, unvisited set
U) is tested against necessary conditions for a Hamiltonian path of
G' = U + {h} that starts at h:

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
  its degree loses the others, and an edge joining the two ends of one forced
  chain is dropped (the path would close a cycle); at the fixpoint a forced
  cycle, an overfull vertex or a forced chain from h to the end that misses
  vertices prunes;
- probing (PRUNE_PROBE, at the root of an end's search in the ends' root checks
  only, up to the first end that survives): each open edge is tried removed and forced; when forced edges, the
  connectivity of the edges left or the degree test fail one way, the other
  is a fact for the following tries, pass after pass until nothing is
  learned; a contradiction refutes the end.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from packsolve.puzzles.hamilton.graph import HamiltonProblem

# Neighbours by vertex: the graph's tuples, or the edges forced-edge propagation left open.
Adjacency = Sequence[Collection[int]] | Mapping[int, Collection[int]]

# One bit per test above (connectivity is always on); the C module uses the same values.
PRUNE_DEAD, PRUNE_CUT, PRUNE_PARITY, PRUNE_DEGREE, PRUNE_FORCED, PRUNE_PROBE = 1, 2, 4, 8, 16, 32
PRUNE_ALL = PRUNE_DEAD | PRUNE_CUT | PRUNE_PARITY | PRUNE_DEGREE | PRUNE_FORCED | PRUNE_PROBE


def segment_ok(ca: int, cb: int, n0: int, n1: int) -> bool:
    """Return True if a path from colour ca over n0 + n1 vertices can end on colour cb (-1: anywhere)."""
    diff = n0 - n1 if ca == 0 else n1 - n0
    if cb < 0:
        return diff in (0, 1)
    return diff == 1 if cb == ca else diff == 0


class PrunedSearch:
    """The pure-Python twin of the C search (same tests, same order, same node counts)."""

    def __init__(
        self,
        p: HamiltonProblem,
        colour: list[int] | None,
        warnsdorff: bool,
        prune: int,
        probe_root: bool = False,
    ) -> None:
        """probe_root: probe the root state (PRUNE_PROBE; as the C module's root_ends, not its search)."""
        self.p, self.adj, self.n = p, p.adj, p.n
        self.colour, self.warnsdorff, self.prune = colour, warnsdorff, prune
        self.probe_root = probe_root and bool(prune & PRUNE_PROBE)
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

    def feasible(self, h: int) -> bool:
        """Whether the state with head h passes the tests the prune bits switch on, in the C code's order."""
        rem = self.n - len(self.path)
        if rem == 0 or not self.prune:
            return True
        tree = _search_tree(self.adj, self.vis, self.colour, h, bool(self.prune & PRUNE_CUT))
        if tree is None or len(tree.order) != rem + 1:
            return False  # two components below one cut vertex, or part of U out of reach
        dead = self._lone_dead_end(tree.order, h, rem)
        if dead is None:
            return False
        endv = self.end if self.end >= 0 else dead
        if self.p.closed and endv >= 0 and endv not in self.adjstart:
            return False
        if not tree.chain_ok(endv):
            return False
        colour = self.colour
        if colour is None:
            return True
        if self.prune & PRUNE_PARITY and not tree.parity_ok(colour, h, endv):
            return False
        return not self.prune & PRUNE_DEGREE or _degree_ok(self.adj, colour, tree.order, h, endv)

    def _lone_dead_end(self, order: list[int], h: int, rem: int) -> int | None:
        """Return the one vertex after h with a single usable neighbour (-1: none), or None to prune."""
        dead = -1
        if self.prune & PRUNE_DEAD:
            near_h = set(self.adj[h])
            for v in order[1:]:
                avail = self.deg[v] + (v in near_h)
                if avail <= 1:
                    if (avail == 0 and rem > 1) or dead >= 0 or (self.end >= 0 and v != self.end):
                        return None
                    dead = v
        return dead

    def feasible_all(self, h: int) -> bool:
        """feasible(), then (end known) forced-edge propagation and the degree test on what it left."""
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
        if endv < 0:
            return True
        left = _forced_ok(self.adj, verts, h, endv)
        if left is None:
            return False
        if self.colour is None or not self.prune & PRUNE_DEGREE or self.end < 0:
            return True
        # The path is the forced edges plus a degree-constrained subgraph of the open ones; only
        # with the end given, as in C (a second matching per node did not pay on typical levels).
        live, forced = left
        open_adj = {v: live[v] - forced[v] for v in verts}
        if not _degree_ok(open_adj, self.colour, verts, h, endv, forced):
            return False
        return not self.probe_root or len(self.path) != 1 or _probe_ok(self.adj, self.colour, verts, h, endv)

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


@dataclass
class _Tree:
    """A depth-first search tree of the unvisited vertices and the head h, with Tarjan's low-links.

    hang lists (cut vertex, child) for each cut vertex with a component hanging below it, innermost first.
    """

    order: list[int]  # vertices in discovery order, h first
    disc: dict[int, int]  # a vertex's index in order
    last: dict[int, int]  # the last index in order of a vertex's subtree (a subtree is contiguous)
    c0: dict[int, int]  # vertices of colour 0 in a vertex's subtree
    c1: dict[int, int]  # vertices of colour 1 in a vertex's subtree
    hang: list[tuple[int, int]]

    def chain_ok(self, endv: int) -> bool:
        """Whether the hanging components nest in one chain, the end (endv, if known) in the innermost."""
        disc, last, hang = self.disc, self.last, self.hang
        for (_, inner), (_, outer) in zip(hang, hang[1:], strict=False):
            if not (disc[outer] <= disc[inner] and last[inner] <= last[outer]):
                return False
        if hang and endv >= 0:
            inner = hang[0][1]
            if endv not in disc or not disc[inner] <= disc[endv] <= last[inner]:
                return False
        return True

    def parity_ok(self, colour: list[int], h: int, endv: int) -> bool:
        """Whether each segment of the chain (between cut vertices) holds a path's colour counts."""
        c0, c1 = self.c0, self.c1
        ce = colour[endv] if endv >= 0 else -1
        a, t0, t1 = h, c0[h], c1[h]
        for c, child in reversed(self.hang):
            if not segment_ok(colour[a], colour[c], t0 - c0[child], t1 - c1[child]):
                return False
            a, t0, t1 = c, c0[child] + (colour[c] == 0), c1[child] + (colour[c] == 1)
        return segment_ok(colour[a], ce, t0, t1)


def _search_tree(
    adj: tuple[tuple[int, ...], ...], vis: list[bool], colour: list[int] | None, h: int, cut: bool
) -> _Tree | None:
    """Return the depth-first search tree from h over the unvisited vertices, or None to prune.

    None when, with cut, a cut vertex has two components hanging below it: the
    path crosses a cut vertex once and could not come back to the second.
    """
    tree = _Tree([], {}, {}, {}, {}, [])
    order, disc, last, c0, c1, hang = tree.order, tree.disc, tree.last, tree.c0, tree.c1, tree.hang
    low: dict[int, int] = {}
    parent: dict[int, int] = {}
    cutmark: set[int] = set()

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
                    return None
                cutmark.add(q)
                hang.append((q, v))
    return tree


def _degree_ok(
    adj: Adjacency,
    colour: list[int],
    verts: list[int],
    h: int,
    endv: int,
    taken: Mapping[int, Collection[int]] | None = None,
) -> bool:
    """Whether verts span a subgraph of degree 1 at h and the end (endv; any vertex if -1), else 2.

    With taken (each vertex's edges already in the path), a vertex's degree is less its taken edges.
    """
    cap = {v: (1 if v in (h, endv) else 2) - (len(taken[v]) if taken else 0) for v in verts}
    side = _flow_side(colour, cap, endv)
    if side is None:
        return False
    # Max flow from the `side` colour to the other, unit capacity per edge (augmenting paths).
    flow = _DegreeFlow(adj, cap)
    for v in verts:
        if colour[v] != side:
            continue
        while flow.load[v] < cap[v]:
            if not flow.augment(v):
                return False
    return True


def _flow_side(colour: list[int], cap: dict[int, int], endv: int) -> int | None:
    """Return the colour the degree flow starts from, or None when the colours' degree sums cannot match."""
    total = [0, 0]
    for v, c in cap.items():
        total[colour[v]] += c
    if endv >= 0:
        return 0 if total[0] == total[1] else None
    if total[1] == total[0] + 1:  # an unknown end leaves its colour one unit of slack
        return 0
    if total[0] - total[1] == 1:
        return 1
    return None


class _DegreeFlow:
    """A unit-capacity flow between the colours, each vertex carrying at most cap of it."""

    def __init__(self, adj: Adjacency, cap: dict[int, int]) -> None:
        self.adj, self.cap = adj, cap
        self.load = dict.fromkeys(cap, 0)
        self.mate: set[tuple[int, int]] = set()  # used edges as (side vertex, other vertex)

    def augment(self, v: int) -> bool:
        """Push one more unit out of v along an augmenting path; False when there is none."""
        found, prev = self._augmenting_path(v)
        if found is None:
            return False
        load, mate = self.load, self.mate
        load[found] += 1
        load[v] += 1
        node = found
        while True:  # flip the alternating path back to v
            x, w = prev[node]
            mate.add((x, w))
            if x == v:
                return True
            _, e = prev[x]
            mate.discard((x, e))
            node = e

    def _augmenting_path(self, v: int) -> tuple[int | None, dict[int, tuple[int, int]]]:
        """Return (a vertex with spare capacity reached from v, the edge into each vertex reached)."""
        adj, cap, load, mate = self.adj, self.cap, self.load, self.mate
        prev: dict[int, tuple[int, int]] = {}
        seen = {v}
        queue = deque([v])
        while queue:
            x = queue.popleft()
            for w in adj[x]:
                if w not in cap or (x, w) in mate or w in seen:
                    continue
                seen.add(w)
                prev[w] = (x, w)
                if load[w] < cap[w]:
                    return w, prev
                for x2 in adj[w]:
                    if (x2, w) in mate and x2 not in seen:
                        seen.add(x2)
                        prev[x2] = (x2, w)
                        queue.append(x2)
        return None, prev


def _far_end(ends: tuple[int, int], v: int) -> int:
    """Return the end of a chain with ends `ends` that is not v (v itself for a lone vertex)."""
    return ends[1] if ends[0] == v else ends[0]


class _Chains:
    """The forced edges of _forced_ok: chains kept in a union-find, each with its two ends at its root."""

    def __init__(self, live: dict[int, set[int]], verts: list[int], h: int, endv: int) -> None:
        self.live, self.h, self.endv, self.nverts = live, h, endv, len(verts)
        self.forced: dict[int, set[int]] = {v: set() for v in verts}
        self.root = {v: v for v in verts}
        self.size = dict.fromkeys(verts, 1)
        self.ends = {v: (v, v) for v in verts}  # each forced chain's two ends, kept at its root
        self.work = list(verts)  # vertices to recheck

    def find(self, v: int) -> int:
        root = self.root
        while root[v] != v:
            root[v] = root[root[v]]
            v = root[v]
        return v

    def join(self, v: int, w: int) -> bool:
        """Force the edge v-w; False on a forced cycle or a forced chain h .. end that misses vertices."""
        rv, rw = self.find(v), self.find(w)
        if rv == rw:
            return False  # a forced cycle
        # the joined chain runs from the far end of v's piece to the far end of w's
        x, y = _far_end(self.ends[rv], v), _far_end(self.ends[rw], w)
        if self.size[rv] < self.size[rw]:
            rv, rw = rw, rv
        self.root[rw] = rv
        self.size[rv] += self.size[rw]
        self.ends[rv] = (x, y)
        if self.find(self.h) == self.find(self.endv) and self.size[rv] < self.nverts:
            return False  # the forced chain h .. end misses vertices
        live, forced = self.live, self.forced
        forced[v].add(w)
        forced[w].add(v)
        if y in live[x] and y not in forced[x]:  # the path cannot close the chain into a cycle
            live[x].discard(y)
            live[y].discard(x)
            self.work += (x, y)
        return True

    def force_facts(self, adj: tuple[tuple[int, ...], ...], fixed: Mapping[tuple[int, int], int]) -> bool:
        """Force the edges fixed puts in the path (before any propagation, as C does); False on a
        contradiction."""
        for v in self.forced:
            for w in adj[v]:
                if w <= v or w not in self.forced or fixed.get((v, w)) != 1 or w in self.forced[v]:
                    continue
                if w not in self.live[v] or not self.join(v, w):
                    return False  # an earlier join dropped it (it would close a cycle), or this one fails
                self.work += (v, w)
        return True


def _forced_ok(
    adj: tuple[tuple[int, ...], ...],
    verts: list[int],
    h: int,
    endv: int,
    fixed: Mapping[tuple[int, int], int] | None = None,
) -> tuple[dict[int, set[int]], dict[int, set[int]]] | None:
    """Propagate forced edges on the vertices verts (path h .. endv): None on a contradiction, else
    (each vertex's edges still usable, each vertex's forced edges) at the fixpoint.

    Forced edges form chains (a cycle or an overfull vertex is a contradiction); an edge joining
    the two ends of one chain is dropped, as the path cannot close it into a cycle. fixed (the
    probing) maps edges (v, w), v < w, to facts proved before: 1 in the path, 2 not.
    """
    members = set(verts)
    fixed = fixed or {}
    live = {v: {w for w in adj[v] if w in members and fixed.get((min(v, w), max(v, w))) != 2} for v in verts}
    chains = _Chains(live, verts, h, endv)
    forced, work = chains.forced, chains.work
    if not chains.force_facts(adj, fixed):
        return None
    while work:
        v = work.pop()
        b = 1 if v in (h, endv) else 2
        if len(live[v]) < b or len(forced[v]) > b:
            return None
        if len(live[v]) == len(forced[v]) or (len(live[v]) > b and len(forced[v]) < b):
            continue
        force = len(live[v]) == b  # else its forced edges fill its degree: drop the others
        for w in sorted(live[v] - forced[v]):
            if force:
                if not chains.join(v, w):
                    return None
            else:
                live[v].discard(w)
                live[w].discard(v)
            work.append(w)
        work.append(v)
    return live, forced


def _fixed_ok(
    adj: tuple[tuple[int, ...], ...],
    colour: list[int],
    verts: list[int],
    h: int,
    endv: int,
    fixed: Mapping[tuple[int, int], int],
) -> tuple[dict[int, set[int]], dict[int, set[int]]] | None:
    """The C module's fixed_ok: forced edges under the facts fixed, G' connected along the edges
    still usable, and the degree test on the open ones; the fixpoint's (live, forced) or None."""
    left = _forced_ok(adj, verts, h, endv, fixed)
    if left is None:
        return None
    live, forced = left
    seen = {h}
    stack = [h]
    while stack:
        for w in live[stack.pop()]:
            if w not in seen:
                seen.add(w)
                stack.append(w)
    if len(seen) != len(verts):
        return None
    open_adj = {v: live[v] - forced[v] for v in verts}
    return left if _degree_ok(open_adj, colour, verts, h, endv, forced) else None


def _probe_ok(
    adj: tuple[tuple[int, ...], ...], colour: list[int], verts: list[int], h: int, endv: int
) -> bool:
    """The C module's probe_ok (see there): whether failed-literal probing on the open edges, pass
    after pass until nothing is learned, leaves the state without a contradiction."""
    fixed: dict[tuple[int, int], int] = {}
    learned = True
    while learned:
        learned = False
        left = _fixed_ok(adj, colour, verts, h, endv, fixed)
        if left is None:
            return False
        live, forced = left
        edges = [(v, w) for v in verts for w in sorted(live[v] - forced[v]) if w > v]
        for e in edges:
            if e in fixed:
                continue
            proved = 0
            for f in (2, 1):  # try it removed, then forced
                if _fixed_ok(adj, colour, verts, h, endv, {**fixed, e: f}) is None:
                    proved = 3 - f  # the other way holds
                    break
            if proved:
                fixed[e] = proved
                learned = True
                if _fixed_ok(adj, colour, verts, h, endv, fixed) is None:
                    return False
    return True
