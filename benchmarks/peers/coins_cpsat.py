"""Peer for the coins benchmark: the fewest notes by OR-Tools CP-SAT (0/1 variables, one equation)."""

from __future__ import annotations

from ortools.sat.python import cp_model


def fewest_notes(notes: list[int], target: int, time_limit: float) -> int | None:
    """Return the fewest notes summing to target, None if none do; raise TimeoutError past the limit."""
    model = cp_model.CpModel()
    take = [model.NewBoolVar(f"n{i}") for i in range(len(notes))]
    model.Add(sum(a * x for a, x in zip(notes, take, strict=True)) == target)
    model.Minimize(sum(take))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1  # one core, like the solvers it is compared with
    status = solver.Solve(model)
    if status == cp_model.OPTIMAL:
        return round(solver.ObjectiveValue())
    if status == cp_model.INFEASIBLE:
        return None
    raise TimeoutError(f"CP-SAT stopped with {solver.StatusName(status)}")
