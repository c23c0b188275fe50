"""The entry points, and what an attempt needs around the solving: parse before, verify after."""

from __future__ import annotations

import functools
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from packsolve.errors import LevelError, UnknownHeuristic, UnknownKind
from packsolve.execution import preparing
from packsolve.execution.output import DEFAULT_OUTPUT_KEEP, kept_log
from packsolve.execution.programs import ProgramJob
from packsolve.execution.spec import AttemptSpec, Work
from packsolve.execution.supervisor import ClaimGate, JobResult, run_batch
from packsolve.external.declaration import ProgramRef
from packsolve.external.resolution import ProgramMissing, resolve
from packsolve.levels import canonical_json, level_hash
from packsolve.outcome import Outcome, Status
from packsolve.puzzles import PuzzleKind, get_kind
from packsolve.splitting import part_work, shared_key


def execute_attempts(
    specs: Sequence[AttemptSpec], keep: int = DEFAULT_OUTPUT_KEEP
) -> Generator[Outcome, None, None]:
    """Yield one Outcome per spec, in order; never raise for anything a level or its solver does.

    For a batch whose results the caller records as they come (the local pool's
    chunks, a worker's claimed group). The solvable attempts run one after the
    other in this process's kept solver child, so tiny levels pay for no fork.
    Every attempt still gets its own budget, rlimits, hard kill and its own wall,
    CPU and peak RSS; a child that dies or is killed costs only the attempt it
    was running, and a fresh child takes the rest. A bad level is ``invalid``, an
    unknown kind or heuristic and a crash ``error``, a kill at the hard limit
    ``timeout``, an answer that the kind's ``verify`` rejects ``wrong``. Each Outcome keeps at
    most keep bytes of its solver's own output (stdout beyond the answer, stderr: output.py).
    """
    prepared = [_prepare(spec, keep) for spec in specs]
    results = run_batch(
        [(p.work, spec.limits) for p, spec in zip(prepared, specs, strict=True) if isinstance(p, _Prepared)]
    )
    try:
        for p in prepared:
            yield _finish(p, next(results), keep) if isinstance(p, _Prepared) else p
    finally:
        results.close()  # a consumer that stops early must leave no child behind


def execute_overlapped(
    spec: AttemptSpec, gate: ClaimGate, claim_after: float = 0.0, keep: int = DEFAULT_OUTPUT_KEEP
) -> Outcome | None:
    """Run one attempt, asking gate once whether it may proceed; return its Outcome, or None if not.

    For a worker's lone (likely tiny) attempt, whose claim in the database should cost it
    no time: the gate is asked once the solver child has the attempt, so the caller's
    bookkeeping overlaps the solving instead of preceding it. With claim_after > 0 it is
    asked only if the attempt has not ended within that many seconds: an attempt that ends
    sooner is returned with the gate never asked, and the caller does the claim's
    bookkeeping with its result. When the gate says no, None is returned: a child that
    finishes within ABANDON_GRACE_S is kept, a busier one killed. When the gate raises, the
    child is killed and the error propagates. Outcomes are as execute_attempts gives them.
    """
    prepared = _prepare(spec, keep)
    if isinstance(prepared, Outcome):
        return prepared if claim_after > 0 or gate.claim() else None
    results = run_batch([(prepared.work, spec.limits)], gate, claim_after)
    try:
        result = next(results, None)
    finally:
        results.close()
    return None if result is None else _finish(prepared, result, keep)


def solution_length(kind: str, outcome: Outcome) -> int | None:
    """Return the kind's length of the outcome's solution (the export's `length`), or None."""
    if outcome.solution is None:
        return None
    try:
        return get_kind(kind).length(outcome.solution)
    except Exception:
        return None


class _Prepared(NamedTuple):
    """A spec ready for a solver child: its kind, its parsed level, and the work the child runs."""

    kind: PuzzleKind
    level: Any
    work: Work


def _prepare(spec: AttemptSpec, keep: int) -> _Prepared | Outcome:
    """Return the spec ready to solve, or the Outcome it ends with at once (unknown name, bad level).

    An external solver's program is resolved here, on the machine that runs it; one that
    is missing, or named but not bound to this machine's declaration, ends the attempt as an
    error (a worker refuses such a task before this). A part of a split level (spec.part) is
    split here, outside the attempt's limits, and its work solves the one part
    (splitting.part_work); a part that cannot be had is an error saying why.
    """
    if spec.part is not None and spec.program is not None:
        name = spec.program.name
        return Outcome(
            Status.ERROR,
            message=f"program {name!r} searches levels whole: an external program's attempt has no parts",
        )
    try:
        kind = get_kind(spec.kind)
        if spec.program is None:
            name, solve = kind.solver(spec.heuristic)
        elif isinstance(spec.program, ProgramRef):
            return Outcome(Status.ERROR, message=f"program {spec.program.name!r} is not declared here")
        else:
            program = resolve(spec.program)
    except (UnknownKind, UnknownHeuristic, ProgramMissing) as exc:
        return Outcome(Status.ERROR, message=str(exc))
    try:
        level = kind.parse(spec.level)
    except LevelError as exc:
        return Outcome(Status.INVALID, message=str(exc))
    except Exception as exc:  # a parser bug must not take the worker down
        return Outcome(Status.INVALID, message=f"level could not be parsed: {type(exc).__name__}: {exc}")
    if spec.program is None and kind.preparation is not None:
        failed = _failed_preparation(spec, kind, level)
        if failed is not None:
            return Outcome(Status.ERROR, message=failed)
    if spec.program is not None:
        return _Prepared(
            kind, level, ProgramJob(program, canonical_json(dict(spec.level)), spec.limits, keep)
        )
    if spec.part is not None:
        work = part_work(kind, level, name, spec.part, shared_key(level_hash(spec.level), spec.heuristic))
        return Outcome(Status.ERROR, message=work) if isinstance(work, str) else _Prepared(kind, level, work)
    return _Prepared(kind, level, functools.partial(solve, level))


def _failed_preparation(spec: AttemptSpec, kind: PuzzleKind, level: Any) -> str | None:
    """Return why the work the attempt's heuristic needs once could not be done here, or None."""
    if not preparing.failures():
        return None
    try:
        name, _ = kind.solver(spec.heuristic)
        assert kind.preparation is not None
        needs = kind.preparation(name, level)
    except Exception:
        return None
    return preparing.failure(needs.key) if needs is not None else None


def verified(spec: AttemptSpec, outcome: Outcome) -> Outcome:
    """Return outcome, or its ``wrong`` version if its solution is not an answer to spec's level by the
    kind's ``verify``: for an answer made elsewhere (a split level's, from the part that found it, read
    back from the database) before it becomes the level's result."""
    if outcome.status is not Status.SOLVED:
        return outcome
    try:
        kind = get_kind(spec.kind)
        level = kind.parse(spec.level)
    except Exception as exc:
        return replace(outcome, status=Status.WRONG, message=f"its level cannot be read to verify: {exc}")
    problem = _rejection(kind, level, outcome.solution)
    if problem:
        return replace(outcome, status=Status.WRONG, message=f"verify rejected the solution: {problem}")
    return outcome


def _rejection(kind: PuzzleKind, level: Any, solution: Any) -> str | None:
    """Return why verify rejects solution as an answer to level (a crash of verify included), or None."""
    try:
        return kind.verify(level, solution) or None
    except Exception as exc:
        return f"verify failed on this solution: {type(exc).__name__}: {exc}"


def _finish(prepared: _Prepared, result: JobResult, keep: int = DEFAULT_OUTPUT_KEEP) -> Outcome:
    """Turn what the child reported into the attempt's Outcome; a solution verify rejects is ``wrong``."""
    payload, stats, forced = result
    stdout, stderr = payload.get("stdout") or "", payload.get("stderr") or ""
    if not isinstance(prepared.work, ProgramJob):
        # A program's output was kept within keep by its reader; a built-in solver's log lines are cut here.
        stdout, stderr = kept_log(stdout, stderr, keep)
    if forced is not None:
        return Outcome(forced[0], stats=stats, message=forced[1], stdout=stdout, stderr=stderr)
    status = Status(payload["status"])
    stats = replace(stats, nodes=int(payload.get("nodes", 0)))
    solution = payload.get("solution")
    message = payload.get("message", "")
    resume = payload.get("resume") if status is Status.NO_SOLUTION else None
    if status is Status.SOLVED:
        problem = _rejection(prepared.kind, prepared.level, solution)
        if problem:
            return Outcome(
                Status.WRONG,
                solution,
                stats,
                f"verify rejected the solution: {problem}",
                stdout=stdout,
                stderr=stderr,
            )
    return Outcome(
        status,
        solution if status is Status.SOLVED else None,
        stats,
        message,
        stdout=stdout,
        stderr=stderr,
        resume=resume,
    )
