"""Pure-Python sliding-tile searches: the write-up's breadth-first search and A* with Manhattan distance."""

from __future__ import annotations

import heapq
from collections import deque

from packsolve.api import Budget
from packsolve.puzzles.sliding.board import Board, neighbours


def _path(
    parent: dict[tuple[int, ...], tuple[tuple[int, ...], int] | None], end: tuple[int, ...]
) -> list[int]:
    moves = []
    state = end
    while (link := parent[state]) is not None:
        state, tile = link
        moves.append(tile)
    moves.reverse()
    return moves


def breadth_first(board: Board, budget: Budget) -> list[int] | None:
    """Return the fewest tiles to move, by BFS over states with a visited map; None if unreachable.

    As in the write-up: a FIFO queue of boards, each expanded once, its
    unvisited successors queued; the first time the goal is met its path is shortest.
    """
    goal = board.goal
    near = neighbours(board.n)
    start = board.tiles
    parent: dict[tuple[int, ...], tuple[tuple[int, ...], int] | None] = {start: None}
    queue = deque([(start, start.index(0))])
    while queue:
        state, blank = queue.popleft()
        if state == goal:
            return _path(parent, state)
        budget.charge()
        for p in near[blank]:
            nxt = list(state)
            nxt[blank], nxt[p] = nxt[p], 0
            key = tuple(nxt)
            if key not in parent:
                parent[key] = (state, state[p])
                queue.append((key, p))
    return None


def manhattan(tiles: tuple[int, ...], n: int) -> int:
    """Return the sum over tiles (not the blank) of their row and column distance to home."""
    total = 0
    for p, t in enumerate(tiles):
        if t:
            total += abs(p // n - t // n) + abs(p % n - t % n)
    return total


def a_star(board: Board, budget: Budget) -> list[int] | None:
    """Return an optimal move list by A* with Manhattan distance; None if the goal is unreachable.

    Ties on f are broken towards deeper nodes (larger g), which reaches the
    goal sooner without giving up optimality; Manhattan is consistent, so a
    state is expanded at most once.
    """
    n = board.n
    near = neighbours(n)
    # md[t][p]: distance of tile t from home when it sits at p; an incremental h is one lookup.
    md = [
        [0 if t == 0 else abs(p // n - t // n) + abs(p % n - t % n) for p in range(n * n)]
        for t in range(n * n)
    ]
    start = board.tiles
    g_of = {start: 0}
    parent: dict[tuple[int, ...], tuple[tuple[int, ...], int] | None] = {start: None}
    h0 = manhattan(start, n)
    heap = [(h0, 0, h0, start, start.index(0))]
    closed: set[tuple[int, ...]] = set()
    while heap:
        _, neg_g, h, state, blank = heapq.heappop(heap)
        if state in closed:
            continue
        if h == 0:
            return _path(parent, state)
        closed.add(state)
        budget.charge()
        g = -neg_g + 1
        for p in near[blank]:
            t = state[p]
            nxt = list(state)
            nxt[blank], nxt[p] = t, 0
            key = tuple(nxt)
            if key in closed or g_of.get(key, g + 1) <= g:
                continue
            g_of[key] = g
            parent[key] = (state, t)
            nh = h + md[t][blank] - md[t][p]
            heapq.heappush(heap, (g + nh, -g, nh, key, p))
    return None
