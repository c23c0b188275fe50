"""The one execution path of a solver: a forked child under limits, measured, every ending one Outcome.

Every attempt goes through ``supervisor.run_batch``: it hands the attempts' jobs to a
solver child (the kept one, or a fresh fork), kills the child at a job's hard limit and
turns each way a job ends into a result; nothing else runs a solver. The two public entry
points both funnel into it, with the level parsed before and a claimed solution verified
after (``attempts``):

- ``execute_attempts(specs)``: a batch, one Outcome per spec in order (the local pool's
  chunks, a worker's claimed groups);
- ``execute_overlapped(spec, gate, claim_after)``: one attempt that asks the caller's
  ``ClaimGate`` once, while it runs, whether it may proceed, or never if it ends first (a
  worker's lone tiny attempt, claimed in its database while it solves).

Modules: ``spec`` (Limits, AttemptSpec, PartSpec: the attempt as it travels), ``attempts`` (the entry
points, parse and verify), ``supervisor`` (the parent following a child job by job),
``processes`` (forking, the kept child, hand-over), ``wire`` (the pipes' format),
``child`` (what runs in the forked child), ``rlimits`` (its limits and memory readings),
``preparing`` (what a heuristic needs once per machine, done before its attempts, outside their limits).
"""

from __future__ import annotations

from packsolve.execution.attempts import execute_attempts, execute_overlapped, solution_length
from packsolve.execution.spec import AttemptSpec, Limits, PartSpec
from packsolve.execution.supervisor import ClaimGate

__all__ = [
    "AttemptSpec",
    "ClaimGate",
    "Limits",
    "PartSpec",
    "execute_attempts",
    "execute_overlapped",
    "solution_length",
]
