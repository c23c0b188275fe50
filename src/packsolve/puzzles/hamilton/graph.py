"""The shared Hamiltonian-path core: a graph with a start (optional end, optionally closed).

One-stroke levels and knight's tours are both "visit every vertex once" and
reduce to a HamiltonProblem; the searches here serve both kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from packsolve.api import Budget


@dataclass(frozen=True)
class HamiltonProblem:
    """Vertices 0..n-1; ``adj[v]`` lists v's neighbours in the kind's natural order."""

    adj: tuple[tuple[int, ...], ...]
    start: int
    end: int | None = None
    closed: bool = False

    @property
    def n(self) -> int:
        return len(self.adj)

    def is_path(self, path: Sequence[int]) -> str | None:
        """Return why path is not a Hamiltonian path of this problem, or None if it is."""
        if len(path) != self.n:
            return f"path has {len(path)} vertices, the graph {self.n}"
        if len(set(path)) != self.n or not all(0 <= v < self.n for v in path):
            return "path does not visit every vertex exactly once"
        if path[0] != self.start:
            return f"path starts at {path[0]}, not at the start {self.start}"
        if self.end is not None and path[-1] != self.end:
            return f"path ends at {path[-1]}, not at the required end {self.end}"
        for a, b in zip(path, path[1:], strict=False):
            if b not in self.adj[a]:
                return f"{a} -> {b} is not an edge"
        if self.closed and self.n > 1 and path[0] not in self.adj[path[-1]]:
            return "path is not closed: its last vertex is not adjacent to its first"
        return None


# Orders the unvisited candidates of the current vertex: (problem, visited, v, candidates) -> list.
Ordering = Callable[[HamiltonProblem, list[bool], int, list[int]], list[int]]


def natural_order(p: HamiltonProblem, visited: list[bool], v: int, cands: list[int]) -> list[int]:
    """Keep the kind's own order: the naive depth-first search of the write-ups."""
    return cands


def onward_exits(p: HamiltonProblem, visited: list[bool], u: int) -> int:
    return sum(1 for w in p.adj[u] if not visited[w])


def dead_end_allowed(visited: list[bool], cands: list[int]) -> bool:
    """Return True if a candidate with no onward exit may be entered: only as the very last vertex.

    Counting the unvisited vertices costs a pass over the graph, so it is done
    only when one candidate is left (otherwise the graph is not finished).
    """
    return len(cands) == 1 and visited.count(False) == 1


def warnsdorff_order(p: HamiltonProblem, visited: list[bool], v: int, cands: list[int]) -> list[int]:
    """Fewest onward exits first (Warnsdorff 1823), ties in natural order.

    As in the write-up, a candidate with no onward exit is dropped unless it
    would be the last vertex: stepping there strands the rest of the graph.
    """
    scored = []
    for u in cands:
        exits = onward_exits(p, visited, u)
        if exits == 0 and not dead_end_allowed(visited, cands):
            continue
        scored.append((exits, u))
    scored.sort(key=lambda t: t[0])
    return [u for _, u in scored]


def depth_first(
    p: HamiltonProblem, budget: Budget, order: Ordering = natural_order, prefix: Sequence[int] = ()
) -> list[int] | None:
    """Return the first Hamiltonian path found by backtracking in the given order, or None.

    None means the whole tree was searched: no path exists. One node is one
    vertex appended to the path. Iterative, so long paths do not hit Python's
    recursion limit. ``prefix``: a path from the start that every answer begins with (a part of
    a split level, see path_prefixes): the search continues from its last vertex.
    """
    n = p.n
    visited = [False] * n
    path = list(prefix) or [p.start]
    for v in path:
        visited[v] = True
    base = len(path)
    budget.charge()

    def complete() -> bool:
        if p.end is not None and path[-1] != p.end:
            return False
        return not (p.closed and n > 1 and p.start not in p.adj[path[-1]])

    if len(path) == n:
        return path if complete() else None

    def candidates(v: int) -> list[int]:
        cands = [u for u in p.adj[v] if not visited[u]]
        # A required end may only be entered as the last vertex.
        if p.end is not None and len(path) < n - 1:
            cands = [u for u in cands if u != p.end]
        return order(p, visited, v, cands)

    stack = [iter(candidates(path[-1]))]
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            if len(path) > base:
                visited[path.pop()] = False
            continue
        budget.charge()
        visited[nxt] = True
        path.append(nxt)
        if len(path) == n:
            if complete():
                return path
            visited[path.pop()] = False
            continue
        stack.append(iter(candidates(nxt)))
    return None


def path_prefixes(p: HamiltonProblem, count: int) -> tuple[list[list[int]], int] | None:
    """Return at least count paths from the start, all of the least length that gives that many,
    and the vertices expanded to find them; None when every path ends before (a small graph).

    Two paths that visit the same vertices and end at the same one leave the same rest to search:
    only the first is kept, so no two are one sub-level, and every Hamiltonian path begins with
    one of them up to the order of its first vertices (the parts cover the level).
    """
    layer: dict[tuple[frozenset[int], int], list[int]] = {(frozenset((p.start,)), p.start): [p.start]}
    expanded = 0
    while len(layer) < count:
        nxt: dict[tuple[frozenset[int], int], list[int]] = {}
        for (seen, end), path in layer.items():
            expanded += 1
            for u in p.adj[end]:
                if u in seen:
                    continue
                nxt.setdefault((seen | {u}, u), [*path, u])
        if not nxt:
            return None
        layer = nxt
    return list(layer.values()), expanded
