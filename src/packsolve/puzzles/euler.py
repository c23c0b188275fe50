"""Euler path levels (Königsberg's bridges): walk every edge of a multigraph exactly once."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from math import cos, pi, sin
from typing import Any

from packsolve.api import Budget, LevelError, Outcome, PuzzleKind, field_of, no_solution, solved, solver

MAX_EDGES = 2_000_000
Vertex = int | str


def vertex_key(v: Vertex) -> tuple[int, Any]:
    """Return a sort key that orders ints before strings (JSON names may mix both)."""
    return (0, v) if isinstance(v, int) else (1, v)


@dataclass(frozen=True)
class Graph:
    """An euler level: edges as pairs of vertex names (repeats allowed), optional start and closed."""

    edges: tuple[tuple[Vertex, Vertex], ...]
    start: Vertex | None = None
    closed: bool = False

    def vertices(self) -> list[Vertex]:
        """Vertices in sorted order (ints before strings)."""
        return sorted({v for e in self.edges for v in e}, key=vertex_key)

    def degrees(self) -> Counter[Vertex]:
        deg: Counter[Vertex] = Counter()
        for u, v in self.edges:
            deg[u] += 1
            deg[v] += 1  # a loop [u, u] adds 2 to u, as it should
        return deg


def _vertex(value: Any, where: str) -> Vertex:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise LevelError(f"{where} must be a vertex name (a string or an integer), not {value!r}")
    return value


def parse(data: Mapping[str, Any]) -> Graph:
    edges = field_of(data, "edges", "euler")
    if not isinstance(edges, list) or not edges:
        raise LevelError("'edges' must be a non-empty list of [u, v] pairs")
    if len(edges) > MAX_EDGES:
        raise LevelError(f"{len(edges)} edges, more than the {MAX_EDGES} supported")
    raw = []
    for i, edge in enumerate(edges):
        if not isinstance(edge, list) or len(edge) != 2:
            raise LevelError(f"edge {i + 1} must be a pair [u, v], not {edge!r}")
        raw.append((_vertex(edge[0], f"edge {i + 1}: vertex"), _vertex(edge[1], f"edge {i + 1}: vertex")))
    # An edge has no direction: [u, v] and [v, u] spell the same edge. Names of one type compare
    # directly; only a mix of ints and strings needs the slower key.
    if len({type(x) for e in raw for x in e}) == 1:
        pairs = sorted((u, v) if u <= v else (v, u) for u, v in raw)  # type: ignore[operator]
    else:
        pairs = [(u, v) if vertex_key(u) <= vertex_key(v) else (v, u) for u, v in raw]
        pairs.sort(key=lambda e: (vertex_key(e[0]), vertex_key(e[1])))
    start = data.get("start")
    if start is not None:
        start = _vertex(start, "'start'")
        if not any(_same(start, u) or _same(start, v) for u, v in pairs):
            raise LevelError(f"'start' {start!r} is not an end of any edge")
    closed = data.get("closed", False)
    if not isinstance(closed, bool):
        raise LevelError(f"'closed' must be true or false, not {closed!r}")
    return Graph(tuple(pairs), start, closed)


def _same(a: Vertex, b: Vertex) -> bool:
    """Return whether two names are one vertex: 1 and "1" are different vertices."""
    return type(a) is type(b) and a == b


def canonical(g: Graph) -> dict[str, Any]:
    out: dict[str, Any] = {"edges": [list(e) for e in g.edges]}
    if g.start is not None:
        out["start"] = g.start
    if g.closed:
        out["closed"] = True
    return out


@dataclass(frozen=True)
class Indexed:
    """The graph as indices: names[i] for vertex i, adj[i] lists (neighbour, edge id)."""

    names: list[Vertex]
    index: dict[Vertex, int]
    adj: list[list[tuple[int, int]]]
    m: int

    @staticmethod
    def of(g: Graph) -> Indexed:
        names = g.vertices()
        # Plain dict keys tell 1 from "1" (bools are refused at parse time, so True never meets 1).
        index = {v: i for i, v in enumerate(names)}
        adj: list[list[tuple[int, int]]] = [[] for _ in names]
        for e, (u, v) in enumerate(g.edges):
            a, b = index[u], index[v]
            adj[a].append((b, e))
            adj[b].append((a, e))
        return Indexed(names, index, adj, len(g.edges))

    def find(self, v: Vertex) -> int:
        return self.index[v]


def obstacle(g: Graph, ix: Indexed | None = None) -> str | None:
    """Return why no Euler walk of g exists (as the level asks for one), or None if one does."""
    ix = ix or Indexed.of(g)
    names = ix.names
    seen = bytearray(len(names))
    seen[0] = 1
    todo = [0]
    while todo:  # breadth of the search does not matter, only what it reaches
        for w, _ in ix.adj[todo.pop()]:
            if not seen[w]:
                seen[w] = 1
                todo.append(w)
    if not all(seen):
        apart = next(v for v, s in zip(names, seen, strict=True) if not s)
        return (
            f"the edges fall into separate components ({names[0]!r} cannot reach {apart!r}); "
            "one stroke cannot draw them"
        )
    deg = {v: len(ix.adj[i]) for i, v in enumerate(names)}
    odd = [v for v in names if deg[v] % 2]
    listed = ", ".join(f"{v}: {deg[v]}" for v in odd[:8]) + (", ..." if len(odd) > 8 else "")
    if len(odd) > 2:
        return f"{len(odd)} vertices have odd degree ({listed}); an Euler path allows at most two"
    if g.closed and odd:
        return f"a closed walk needs every degree even, but {len(odd)} vertices have odd degree ({listed})"
    if g.start is not None and odd and not any(_same(g.start, v) for v in odd):
        return f"with two odd vertices ({listed}) the walk must start at one of them, not at {g.start!r}"
    return None


def _first_vertex(g: Graph, ix: Indexed) -> int:
    """Return where the walk must (or may) start: the given start, else an odd vertex, else vertex 0."""
    if g.start is not None:
        return ix.find(g.start)
    odd = [i for i, nbrs in enumerate(ix.adj) if len(nbrs) % 2]
    return odd[0] if odd else 0


def hierholzer(g: Graph, budget: Budget) -> Outcome:
    """Hierholzer's algorithm, iterative: follow unused edges, splice closed sub-walks on the way back."""
    ix = Indexed.of(g)
    reason = obstacle(g, ix)
    if reason:
        return no_solution(reason)
    used = bytearray(ix.m)
    nxt = [0] * len(ix.names)
    stack = [_first_vertex(g, ix)]
    walk = []
    while stack:
        v = stack[-1]
        nbrs, i = ix.adj[v], nxt[v]
        while i < len(nbrs) and used[nbrs[i][1]]:
            i += 1
        if i < len(nbrs):
            w, e = nbrs[i]
            nxt[v] = i + 1
            used[e] = 1
            stack.append(w)
            budget.charge()  # one node per edge walked
        else:
            nxt[v] = i
            walk.append(stack.pop())
    walk.reverse()
    return solved([ix.names[v] for v in walk])


def backtracking(g: Graph, budget: Budget) -> Outcome:
    """Naive depth-first search over unused edges from each start, undoing dead ends."""
    ix = Indexed.of(g)
    used = bytearray(ix.m)
    starts = [ix.find(g.start)] if g.start is not None else range(len(ix.names))
    walk: list[int] = []

    def go(v: int, depth: int) -> bool:
        budget.charge()
        if depth == ix.m:
            return not g.closed or v == walk[0]
        for w, e in ix.adj[v]:
            if not used[e]:
                used[e] = 1
                walk.append(w)
                if go(w, depth + 1):
                    return True
                walk.pop()
                used[e] = 0
        return False

    for s in starts:
        walk[:] = [s]
        try:
            if go(s, 0):
                return solved([ix.names[v] for v in walk])
        except RecursionError:
            raise RuntimeError(
                f"plain backtracking over {ix.m} edges exceeded Python's recursion limit; "
                "use the default heuristic"
            ) from None
    reason = obstacle(g, ix) or "no walk found"
    return no_solution(f"exhaustive search found no Euler walk: {reason}")


def verify(g: Graph, solution: Any) -> str | None:
    """Return why solution is not an Euler walk of g (every edge once, start, closed), or None."""
    if not isinstance(solution, list) or len(solution) != len(g.edges) + 1:
        return f"solution must list {len(g.edges) + 1} vertices (one more than the edges)"
    for i, v in enumerate(solution):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            return f"step {i} is not a vertex name: {v!r}"
    if g.start is not None and not _same(solution[0], g.start):
        return f"walk starts at {solution[0]!r}, not at the start {g.start!r}"
    if g.closed and not _same(solution[0], solution[-1]):
        return f"walk is not closed: it ends at {solution[-1]!r}, not at {solution[0]!r}"

    def edge(u: Vertex, v: Vertex) -> tuple[Any, Any]:
        a, b = vertex_key(u), vertex_key(v)
        return (a, b) if a <= b else (b, a)

    walked = Counter(edge(u, v) for u, v in zip(solution, solution[1:], strict=False))
    wanted = Counter(edge(u, v) for u, v in g.edges)
    # Both count len(edges) pairs, so no extra pair means no missing one either.
    extra = walked - wanted
    if extra:
        (a, b), _ = next(iter(extra.items()))
        return f"walks {a[1]!r}-{b[1]!r} more often than the level has such an edge"
    return None


def render(g: Graph, solution: Any = None) -> str:
    """Return the vertices with their degrees and, with a solution, the walk."""
    deg = g.degrees()
    names = g.vertices()
    # When ints and strings mix, quote the strings so 1 and "1" read differently.
    show = repr if len({type(v) for v in names}) > 1 else str
    lines = [
        f"{len(g.edges)} edges, {len(deg)} vertices" + (", closed walk asked" if g.closed else ""),
        "degrees: "
        + ", ".join(f"{show(v)}:{deg[v]}" for v in names[:60])
        + (" ..." if len(names) > 60 else ""),
    ]
    if g.start is not None:
        lines.append(f"start: {show(g.start)}")
    if solution:
        lines.append("walk: " + " → ".join(show(v) for v in solution))
    return "\n".join(lines)


def svg(g: Graph, solution: Any = None, size: int = 480) -> str:
    """Return an SVG of the graph, vertices on a circle; with a solution, edges numbered in walk order."""
    names = g.vertices()
    centre, radius = size / 2, size / 2 - 40
    pos = {
        vertex_key(v): (
            centre + radius * cos(2 * pi * i / len(names) - pi / 2),
            centre + radius * sin(2 * pi * i / len(names) - pi / 2),
        )
        for i, v in enumerate(names)
    }
    order: dict[tuple[Any, Any], list[int]] = {}
    if solution:
        for step, (u, v) in enumerate(zip(solution, solution[1:], strict=False), 1):
            a, b = sorted((vertex_key(u), vertex_key(v)))
            order.setdefault((a, b), []).append(step)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" viewBox="0 0 {size} {size}">'
    ]
    copies: Counter[tuple[Any, Any]] = Counter()
    for u, v in g.edges[:2000]:  # a picture of more edges is a blur anyway
        a, b = sorted((vertex_key(u), vertex_key(v)))
        k = copies[(a, b)]
        copies[(a, b)] += 1
        (x1, y1), (x2, y2) = pos[a], pos[b]
        # Parallel edges bend alternately left and right by growing amounts so each stays visible.
        bend = ((k + 1) // 2) * 28 * (1 if k % 2 else -1)
        dx, dy = x2 - x1, y2 - y1
        length = max(1.0, (dx * dx + dy * dy) ** 0.5)
        mx, my = (x1 + x2) / 2 - dy / length * bend, (y1 + y2) / 2 + dx / length * bend
        if a == b:  # a loop: a small circle beside the vertex
            r = 14 + 6 * k
            parts.append(f'<circle cx="{x1:.1f}" cy="{y1 - r:.1f}" r="{r}" fill="none" stroke="#555"/>')
            lx, ly = x1, y1 - 2 * r
        else:
            curve = f"M{x1:.1f},{y1:.1f} Q{mx:.1f},{my:.1f} {x2:.1f},{y2:.1f}"
            parts.append(f'<path d="{curve}" fill="none" stroke="#555"/>')
            lx, ly = (x1 + x2 + 2 * mx) / 4, (y1 + y2 + 2 * my) / 4  # the curve's midpoint
        steps = order.get((a, b))
        if steps:
            parts.append(
                f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="12" fill="#1e88e5" '
                f'font-family="sans-serif">{steps.pop(0)}</text>'
            )
    for v in names:
        x, y = pos[vertex_key(v)]
        colour = "#ffd54f" if g.start is not None and _same(v, g.start) else "#fff"
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="12" fill="{colour}" stroke="#333"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{y + 4:.1f}" font-size="11" text-anchor="middle" '
            f'font-family="sans-serif">{escape(str(v))}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def generate(size: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Return count graphs of E edges ('E', or 'VxE' for V vertices) drawn by one random walk."""
    text = str(size).lower()
    try:
        v_text, sep, e_text = text.partition("x")
        edges = int(e_text if sep else v_text)
        vertices = int(v_text) if sep else max(3, edges // 3)
    except ValueError:
        raise ValueError(f"euler size must be E or VxE, not {size!r}") from None
    if edges < 1 or vertices < 2:
        raise ValueError("euler size needs at least one edge and two vertices")
    rng = random.Random(seed)
    levels = []
    for _ in range(count):
        # A random walk is itself an Euler trail, so every generated level has an answer;
        # shuffling the edges hides it from the solvers.
        v = rng.randrange(vertices)
        pairs = []
        for _ in range(edges):
            w = rng.randrange(vertices - 1)
            w += w >= v
            pairs.append([v, w] if rng.random() < 0.5 else [w, v])
            v = w
        rng.shuffle(pairs)
        levels.append({"kind": "euler", "edges": pairs})
    return levels


KIND = PuzzleKind(
    name="euler",
    parse=parse,
    canonical=canonical,
    solvers={
        "plain": solver(backtracking),
        "hierholzer": solver(hierholzer),
    },
    default="hierholzer",
    verify=verify,
    render=render,
    svg=svg,
    size=lambda g: len(g.edges),
    length=lambda solution: len(solution) - 1 if isinstance(solution, list) else None,
    description="draw every edge once (Euler path or circuit); Königsberg's bridges have none",
    generate=generate,
    size_help="E or VxE, E edges among V vertices, e.g. 8x20",
    examples=(
        {"edges": [[1, 2], [2, 3], [3, 4], [4, 1], [1, 3], [2, 4], [3, 5], [4, 5]], "start": 1},
        {"edges": [["A", "K"], ["A", "K"], ["L", "K"], ["L", "K"], ["A", "M"], ["K", "M"], ["L", "M"]]},
    ),
)
