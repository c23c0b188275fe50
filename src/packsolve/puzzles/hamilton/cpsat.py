"""Hamiltonian paths handed to OR-Tools CP-SAT: one add_circuit over the graph plus a dummy vertex.

The dummy vertex closes the path into a circuit: its only outgoing arc enters
the start and every possible end has an arc into it. OR-Tools is an optional
extra (``pip install packsolve[cpsat]``) and is imported only when used.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

from packsolve.api import Budget, BudgetExhausted
from packsolve.puzzles.hamilton.graph import HamiltonProblem

INSTALL_HINT = "the cpsat heuristic needs OR-Tools: pip install packsolve[cpsat]"


@functools.cache
def cpsat_available() -> bool:
    """Return True if OR-Tools is installed (found, not imported: importing it costs a third of a second)."""
    try:
        return importlib.util.find_spec("ortools.sat.python.cp_model") is not None
    except ImportError:
        return False


def cpsat_search(p: HamiltonProblem, budget: Budget, workers: int = 1) -> list[int] | None:
    """Return a Hamiltonian path of p, or None when CP-SAT proves none exists.

    Raise BudgetExhausted when the time limit ends the solve, ImportError
    (with the install hint) when OR-Tools is missing. Nodes are CP-SAT's
    branches, the closest thing it has to expanded states.
    """
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    n = p.n
    if n == 1:
        budget.charge()
        return [p.start] if not p.closed and p.end in (None, p.start) else None
    model, succ = _circuit_model(cp_model, p)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    remaining = budget.remaining()
    if remaining is not None:
        solver.parameters.max_time_in_seconds = max(0.01, remaining)
    status = solver.solve(model)
    budget.nodes += max(1, solver.num_branches)
    if status == cp_model.INFEASIBLE:
        return None
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise BudgetExhausted(f"{budget.wall_message()} (CP-SAT {solver.status_name(status)})")
    nxt = {u: v for (u, v), lit in succ.items() if solver.boolean_value(lit)}
    path = [p.start]
    while len(path) < n:
        path.append(nxt[path[-1]])
    return path


def _circuit_model(cp_model: Any, p: HamiltonProblem) -> tuple[Any, dict[tuple[int, int], Any]]:
    """Return a CP-SAT model whose circuit is p's path closed through a dummy vertex, and its arc literals.

    The dummy (vertex n) enters the start and leaves from every vertex that may end the path.
    """
    n, dummy = p.n, p.n
    model = cp_model.CpModel()
    arcs = []
    succ: dict[tuple[int, int], Any] = {}
    for u in range(n):
        for v in p.adj[u]:
            if v == p.start:
                continue  # the start is entered from the dummy only
            lit = model.new_bool_var(f"x{u}_{v}")
            succ[u, v] = lit
            arcs.append((u, v, lit))
    arcs.append((dummy, p.start, model.new_constant(1)))
    near_start = set(p.adj[p.start])
    for v in range(n):
        if p.end is not None and v != p.end:
            continue
        if p.closed and v not in near_start:
            continue  # a closed path ends next to its start
        lit = model.new_bool_var(f"end{v}")
        succ[v, dummy] = lit
        arcs.append((v, dummy, lit))
    model.add_circuit(arcs)
    return model, succ
