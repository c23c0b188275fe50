"""The entry points, and what an attempt needs around the solving: parse before, verify after."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from packsolve.errors import LevelError, UnknownHeuristic, UnknownKind
from packsolve.execution.programs import ProgramJob, ProgramMissing, resolve
from packsolve.execution.spec import AttemptSpec, Work
from packsolve.execution.supervisor import Abandoned, JobResult, run_batch
from packsolve.levels import canonical_json
from packsolve.outcome import Outcome, SearchStats, Status
from packsolve.puzzles import PuzzleKind, get_kind
from packsolve.solvers import ProgramRef


def execute_attempts(specs: Sequence[AttemptSpec]) -> Iterator[Outcome]:
    """Yield one Outcome per spec, in order; never raise for anything a level or its solver does.

    For a batch whose results the caller records as they come (the local pool's
    chunks, a worker's claimed group). The solvable attempts run one after the
    other in this process's kept solver child, so tiny levels pay for no fork.
    Every attempt still gets its own budget, rlimits, hard kill and its own wall,
    CPU and peak RSS; a child that dies or is killed costs only the attempt it
    was running, and a fresh child takes the rest. A bad level is ``invalid``, an
    unknown kind or heuristic and a crash ``error``, a kill at the hard limit
    ``timeout``, an answer that the kind's ``verify`` rejects ``wrong``.
    """
    prepared = [_prepare(spec) for spec in specs]
    results = run_batch(
        [(p.work, spec.limits) for p, spec in zip(prepared, specs, strict=True) if isinstance(p, _Prepared)]
    )
    try:
        for p in prepared:
            yield _finish(p, next(results)) if isinstance(p, _Prepared) else p
    finally:
        results.close()  # a consumer that stops early must leave no child behind


def execute_claimed(spec: AttemptSpec, claim: Callable[[], bool], claim_after: float = 0.0) -> Outcome | None:
    """Run one attempt while claim() runs alongside; return its Outcome, or None if claim() said no.

    For a worker's lone (likely tiny) attempt, whose claim in the database should
    cost it no time. claim is called once the solver child has the attempt, so the
    caller's bookkeeping overlaps the solving instead of preceding it. With claim_after > 0
    it is called only if the attempt has not ended within that many seconds: an
    attempt that ends sooner comes back unclaimed, and the caller does the claim's
    bookkeeping with its result. When claim returns False the result is not
    wanted: a child that finishes within ABANDON_GRACE_S is kept, a busier one
    killed. Outcomes are as execute_attempts gives them.
    """
    prepared = _prepare(spec)
    if isinstance(prepared, Outcome):
        return prepared if claim_after > 0 or claim() else None
    results = run_batch([(prepared.work, spec.limits)], claim, claim_after)
    try:
        return _finish(prepared, next(results))
    except Abandoned:
        return None
    finally:
        results.close()


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


def _prepare(spec: AttemptSpec) -> _Prepared | Outcome:
    """Return the spec ready to solve, or the Outcome it ends with at once (unknown name, bad level).

    An external solver's program is resolved here, on the machine that runs it; one that
    is missing, or named but not bound to this machine's declaration, ends the attempt as an
    error (a worker refuses such a task before this).
    """
    try:
        kind = get_kind(spec.kind)
        if spec.program is None:
            _, solve = kind.solver(spec.heuristic)
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
    if spec.program is not None:
        return _Prepared(kind, level, ProgramJob(program, canonical_json(dict(spec.level)), spec.limits))
    return _Prepared(kind, level, functools.partial(solve, level))


def _finish(prepared: _Prepared, result: JobResult) -> Outcome:
    """Turn what the child reported into the attempt's Outcome; a solution verify rejects is ``wrong``."""
    payload, stats, forced = result
    if forced is not None:
        return Outcome(forced[0], stats=stats, message=forced[1])
    status = Status(payload["status"])
    stats = SearchStats(int(payload.get("nodes", 0)), stats.wall_s, stats.cpu_s, stats.peak_rss_mb)
    solution = payload.get("solution")
    message = payload.get("message", "")
    if status is Status.SOLVED:
        try:
            problem = prepared.kind.verify(prepared.level, solution)
        except Exception as exc:
            problem = f"verify failed on this solution: {type(exc).__name__}: {exc}"
        if problem:
            return Outcome(Status.WRONG, solution, stats, f"verify rejected the solution: {problem}")
    return Outcome(status, solution if status is Status.SOLVED else None, stats, message)
