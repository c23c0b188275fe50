"""Work a heuristic needs once per machine (PuzzleKind.preparation), done outside every attempt's limits.

The process that hands attempts to solver children (a local solve's planning process, a worker's
pool process) prepares what they need before they start, so an attempt's time and memory are
its search's alone. This process remembers what it prepared, and what it could not: an attempt
whose preparation failed ends at once as an error saying why (never a timeout in the solver
child, which would try the same work again under the attempt's limits).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from packsolve.api import Preparation
from packsolve.errors import UnknownHeuristic, UnknownKind
from packsolve.execution.spec import AttemptSpec
from packsolve.puzzles import get_kind

# A preparation that failed is tried again by a process that lives on (a worker's pool process) after
# this long: the disk may have been freed meanwhile; until then its attempts end at once.
RETRY_S = 600.0

# What this process prepared (keys), and why the preparations it could not do failed (key -> message),
# and when (monotonic).
_done: set[str] = set()
_failed: dict[str, str] = {}
_failed_at: dict[str, float] = {}


@dataclass(frozen=True)
class Prepared:
    """One preparation this process did: its key, how long it took, and why it failed (None: it worked)."""

    preparation: Preparation
    seconds: float
    problem: str | None


def preparation_of(spec: AttemptSpec) -> Preparation | None:
    """Return what the spec's heuristic needs prepared for its level; None if nothing (or no such kind,
    heuristic or readable level: the attempt ends for that reason instead)."""
    if spec.program is not None:
        return None
    try:
        kind = get_kind(spec.kind)
        name, _ = kind.solver(spec.heuristic)
    except (UnknownKind, UnknownHeuristic):
        return None
    if kind.preparation is None:
        return None
    try:
        return kind.preparation(name, kind.parse(spec.level))
    except Exception:  # a bad level (or a kind's bug) is the attempt's to report, not this
        return None


def needed(specs: Iterable[AttemptSpec]) -> list[tuple[AttemptSpec, Preparation]]:
    """Return the preparations the specs need that this process has not done yet, each once, with
    the first spec that needs it."""
    found: dict[str, tuple[AttemptSpec, Preparation]] = {}
    for spec in specs:
        prep = preparation_of(spec)
        if prep is not None and prep.key not in _done and prep.key not in found:
            found[prep.key] = (spec, prep)
    return list(found.values())


def prepare(specs: Iterable[AttemptSpec], say: Callable[[str], None] | None = None) -> list[Prepared]:
    """Do what the specs' heuristics need prepared, not done here yet; return what was done.

    say(line) is told before work that is not ready yet starts ("building ... once (cost; kept in
    DIR)") and when it ends, with its time or why it failed. A failure is remembered: the
    attempts that need it end as errors with that message (failure), and it is tried again
    only after RETRY_S.
    """
    done = []
    for spec, prep in needed(specs):
        if prep.key in _failed and time.monotonic() - _failed_at.get(prep.key, 0.0) < RETRY_S:
            continue
        ready = _ready(prep)
        if not ready and say is not None:
            say(f"building {prep.what} once ({prep.cost}; kept in {prep.where})")
        began = time.monotonic()
        problem = None
        try:
            prep.run()
            if not _ready(prep):
                # Done in this process's memory only (its cache could not be written): every solver
                # child would do it again, under its attempt's limits.
                raise OSError(f"{prep.where} could not be written")
        except (Exception, MemoryError) as exc:
            problem = _problem(spec, prep, exc)
            _failed[prep.key] = problem
            _failed_at[prep.key] = time.monotonic()
        else:
            _done.add(prep.key)
            _failed.pop(prep.key, None)
        seconds = time.monotonic() - began
        if say is not None and (problem or not ready):
            say(problem or f"built {prep.what} in {seconds:.1f} s")
        done.append(Prepared(prep, seconds, problem))
    return done


def _ready(prep: Preparation) -> bool:
    try:
        return bool(prep.ready())
    except Exception:
        return False


def _problem(spec: AttemptSpec, prep: Preparation, exc: BaseException) -> str:
    """Return the one line an attempt that needed prep ends with, saying what would work."""
    if isinstance(exc, MemoryError):
        why = "out of memory"
    elif isinstance(exc, OSError) and not exc.errno:
        why = str(exc)
    else:
        why = f"{type(exc).__name__}: {exc}"
    size = f" --size {prep.size}" if prep.size else ""
    return (
        f"could not prepare {prep.what} ({why}): it takes {prep.cost} and a writable "
        f"{prep.where} (PACKSOLVE_CACHE_DIR moves it); prepare it ahead where those are at hand with "
        f"`packsolve kinds --prepare {spec.kind} {spec.heuristic}{size}`"
    )


def failure(key: str) -> str | None:
    """Return why the preparation of this key failed in this process, or None (done, or not tried)."""
    return _failed.get(key)


def failures() -> dict[str, str]:
    """Return the preparations that failed in this process: key -> message (for the processes it starts)."""
    return dict(_failed)


def remember_failures(failed: Mapping[str, str]) -> None:
    """Take over the failures of the process that started this one (a local pool process)."""
    _failed.update(failed)
    _failed_at.update(dict.fromkeys(failed, time.monotonic()))
