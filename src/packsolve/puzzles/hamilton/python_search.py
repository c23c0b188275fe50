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
  its degree loses the others; at the fixpoint a forced cycle, an overfull
  vertex or a forced chain from h to the end that misses vertices prunes.
"""

from __future__ import annotations

import time
from collections import deque

from packsolve.puzzles.hamilton.graph import HamiltonProblem

# One bit per test above (connectivity is always on); the C module uses the same values.
PRUNE_DEAD, PRUNE_CUT, PRUNE_PARITY, PRUNE_DEGREE, PRUNE_FORCED = 1, 2, 4, 8, 16
PRUNE_ALL = PRUNE_DEAD | PRUNE_CUT | PRUNE_PARITY | PRUNE_DEGREE | PRUNE_FORCED


def segment_ok(ca: int, cb: int, n0: int, n1: int) -> bool:
    """Return True if a path from colour ca over n0 + n1 vertices can end on colour cb (-1: anywhere)."""
    diff = n0 - n1 if ca == 0 else n1 - n0
    if cb < 0:
        return diff in (0, 1)
    return diff == 1 if cb == ca else diff == 0


class PrunedSearch:
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
                if not segment_ok(colour[a], colour[c], t0 - c0[child], t1 - c1[child]):
                    return False
                a, t0, t1 = c, c0[child] + (colour[c] == 0), c1[child] + (colour[c] == 1)
            if not segment_ok(colour[a], ce, t0, t1):
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
