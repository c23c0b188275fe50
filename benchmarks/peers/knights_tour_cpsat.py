"""Peer: a knight's tour as one OR-Tools CP-SAT AddCircuit constraint (our own model).

Open tours from a start: a dummy node closes the path (dummy -> start is forced,
every square may return to the dummy). Closed tours: the circuit over the squares.
"""

from __future__ import annotations

MOVES = ((1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1))


def cpsat_tour(
    rows: int, cols: int, start: tuple[int, int], closed: bool, time_limit: float, workers: int = 1
) -> tuple[str, list[list[int]] | None]:
    """Return (CP-SAT status name, tour from start or None)."""
    from ortools.sat.python import cp_model

    n = rows * cols
    model = cp_model.CpModel()
    arcs = []
    succ: dict[int, list[tuple[int, object]]] = {}
    for r in range(rows):
        for c in range(cols):
            u = r * cols + c
            for dr, dc in MOVES:
                a, b = r + dr, c + dc
                if 0 <= a < rows and 0 <= b < cols:
                    lit = model.NewBoolVar("")
                    arcs.append((u, a * cols + b, lit))
                    succ.setdefault(u, []).append((a * cols + b, lit))
    s = start[0] * cols + start[1]
    if not closed:
        dummy = n
        into = model.NewBoolVar("")
        model.Add(into == 1)
        arcs.append((dummy, s, into))
        for u in range(n):
            lit = model.NewBoolVar("")
            arcs.append((u, dummy, lit))
            succ.setdefault(u, []).append((dummy, lit))
    model.AddCircuit(arcs)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.Solve(model)
    name = solver.StatusName(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return name, None
    tour = [s]
    while len(tour) < n:
        nxt = next(v for v, lit in succ[tour[-1]] if solver.Value(lit))
        tour.append(nxt)
    return name, [[v // cols, v % cols] for v in tour]
