"""Planning a run, once for every way to start one: read, resolve heuristics, order, chunk.

solve, submit, rerun and check all go through here (via runs.py), so a heuristic
or a chunk size means the same thing whichever command gave it; the options
themselves are checked in request.py.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_left
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from packsolve.db.history import PastTimes, level_facts, past_attempts, past_times, recent_wall_times
from packsolve.db.reconcile import attempts_with_levels
from packsolve.db.runs import PlannedAttempt, Provenance
from packsolve.errors import OptionError, PlanError, UnknownHeuristic, UnknownKind
from packsolve.execution import AttemptSpec, Limits
from packsolve.execution.relative import expected_seconds
from packsolve.execution.spec import PendingAttempt
from packsolve.external.declaration import (
    ExternalSolver,
    Solvers,
    declared_in,
    for_kind,
    heuristic_of,
    program_for,
)
from packsolve.levels import (
    DEFAULT_MAX_BYTES,
    Level,
    SkippedFile,
    broken_kinds_note,
    file_type,
    is_level_file,
    level_file_suffixes,
    read_levels,
)
from packsolve.puzzles import KINDS, get_kind, kind_provenance
from packsolve.request import HeuristicMatrix, Request
from packsolve.settings import DEFAULT_VISIBILITY_TIMEOUT


def check_distributed(limits: Limits, visibility_timeout: int, chunk_size: int = 0) -> None:
    """Raise OptionError if a task under these limits could outlive the broker's visibility timeout
    (seconds, the settings' visibility_timeout)."""
    hard = limits.hard_time()
    if hard is not None and hard > visibility_timeout / 2:
        hours = visibility_timeout / 2 / 3600
        if limits.wall_is_backstop():  # the CPU limit's wall backstop is what a task may take
            raise OptionError(
                "--cpu-limit",
                f"its wall backstop (10x it + 5s) must stay below {hours:g} hours "
                "(Redis visibility timeout); give a --time-limit below that too",
            )
        raise OptionError("--time-limit", f"must stay below {hours:g} hours (Redis visibility timeout)")
    most = max_chunk_for(limits, visibility_timeout)
    if chunk_size > most:
        raise OptionError("--chunk-size", f"at most {most} per task under this time limit")


@dataclass(frozen=True)
class Reading:
    """What reading a pack found besides the levels to run: each printed by solve, submit and check."""

    skipped_files: list[SkippedFile] = field(default_factory=list)  # unknown extension, empty
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (name, the name first met by)
    other_kinds: dict[str, int] = field(default_factory=dict)  # levels left out by --kind, per kind
    kind: str | None = None  # the --kind asked for


@dataclass(frozen=True)
class Plan:
    """The attempts a run will make, one per distinct level, and how many levels were met twice."""

    attempts: list[PlannedAttempt]
    duplicates: int  # levels met again under another name, attempted once
    notes: list[str] = field(default_factory=list)  # what a user should know (a heuristic not applied)
    reading: Reading = field(default_factory=Reading)
    programs: Mapping[str, ExternalSolver] = field(default_factory=dict)  # the external solvers it uses
    paths: tuple[str, ...] = ()  # the paths read, as given (none for a rerun's plan)

    @property
    def matrix(self) -> bool:
        """Return whether some level is tried with several heuristics (--heuristic a,b)."""
        hashes = [p.level.hash for p in self.attempts]
        return len(set(hashes)) < len(hashes)

    def pending(self, limits: Limits) -> list[PendingAttempt]:
        """Return the attempts of the valid levels, in pack order: a new run's pending."""
        valid = [p for p in self.attempts if p.level.valid]
        return [PendingAttempt(p.level.hash, self.spec(p, limits), p.level.name) for p in valid]

    def spec(self, p: PlannedAttempt, limits: Limits) -> AttemptSpec:
        """Return the spec of one planned attempt; an external solver's declaration travels with it."""
        own = limits.with_own(p.time_limit, p.cpu_limit)
        return attempt_spec(p.level.kind, p.heuristic, p.level.data, own, self.programs)

    def provenance(self) -> Provenance:
        """Return what the run records of what it used: its kinds' sources and versions, its programs."""
        kinds = {p.level.kind for p in self.attempts if p.level.valid}
        return Provenance(kind_provenance(kinds), declarations(self.programs))


def check_paths(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Return the paths as given; raise PlanError naming one that does not exist or is no level file.

    A directory may hold anything (what is not a level file is skipped and listed);
    a file named on its own must be a level file.
    """
    out = []
    for path in paths:
        p = Path(path)
        if not p.exists():
            where = "" if p.is_absolute() else f" (looked in {Path.cwd()})"
            raise PlanError(f"{path} does not exist{where}: give a pack directory or level files")
        if not p.is_dir() and not p.is_file():
            what = file_type(p.stat().st_mode)
            raise PlanError(f"{path} is {what}, not a regular file: give a pack directory or level files")
        if p.is_file() and not is_level_file(p):
            suffixes = ", ".join(level_file_suffixes())
            raise PlanError(
                f"{path} is not a level file: level files end in {suffixes} (or give a folder)"
                f"{broken_kinds_note()}"
            )
        out.append(str(path))
    return out


def plan_run(
    paths: Iterable[str | os.PathLike[str]],
    kind: str | None = None,
    heuristic: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    solvers: Solvers | None = None,
    follow_links: bool = False,
) -> Plan:
    """Read every level under paths once (first name wins) and resolve the heuristic per kind.

    With kind, levels of other kinds are left out (counted in the plan's reading);
    links out of the pack are read only with follow_links. Raise PlanError when nothing
    can be run: a path that does not exist, no level found, an unknown kind, or a
    heuristic that none of the pack's kinds has.
    """
    if kind is not None and kind not in KINDS:
        raise OptionError("--kind", f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    given = check_paths(paths)
    first: dict[str, str] = {}
    levels: list[Level] = []
    duplicates: list[tuple[str, str]] = []
    skipped: list[SkippedFile] = []
    other_kinds: Counter[str] = Counter()
    for level in read_levels(given, kind, max_bytes, skipped, follow_links):
        if kind is not None and level.kind != kind:
            other_kinds[level.kind] += 1
            continue
        if level.hash in first:
            duplicates.append((level.name, first[level.hash]))
            continue
        first[level.hash] = level.name
        levels.append(level)
    reading = Reading(skipped, duplicates, dict(sorted(other_kinds.items())), kind)
    if not levels:
        raise PlanError(_nothing_to_run(given, reading))
    return replace(
        plan_levels(levels, heuristic, len(duplicates), solvers), reading=reading, paths=tuple(given)
    )


def plan_request(paths: Iterable[str | os.PathLike[str]], request: Request) -> Plan:
    """Return plan_run of paths with the request's kind, heuristic, file size cap, programs and links rule."""
    return plan_run(
        paths, request.kind, request.heuristic, request.max_file_bytes, request.solvers, request.follow_links
    )


def _nothing_to_run(paths: list[str], reading: Reading) -> str:
    """Return why paths gave no level to run, and what would."""
    where = ", ".join(paths)
    if reading.other_kinds:
        kinds = ", ".join(f"{k} {n}" for k, n in reading.other_kinds.items())
        return f"no {reading.kind} level under {where} (other kinds: {kinds}); drop --kind or give another"
    suffixes = ", ".join(level_file_suffixes())
    message = f"no level files found under {where} (level files end in {suffixes})"
    if reading.skipped_files:
        first = reading.skipped_files[0]
        message += f"; {len(reading.skipped_files)} file(s) skipped, e.g. {first.path} ({first.reason})"
    return message


def plan_levels(
    levels: Sequence[Level], heuristic: str | None, duplicates: int = 0, solvers: Solvers | None = None
) -> Plan:
    """Pair each level with its kind's solver(s) for the --heuristic text; return the plan with its notes.

    A heuristic named for a kind must exist (else OptionError); a common one
    applies to the kinds that have it and the others keep their default, each
    with a note. Raise PlanError if no level of the pack has a common one.
    Heuristics are the kinds' own and the external programs declared in solvers.

    Several heuristics (request.HeuristicMatrix: "a,b", "sudoku=a+b") make a matrix:
    each valid level gets one attempt per heuristic of its kind, the heuristics of a level
    next to each other in the order given (level 1: a, b; level 2: a, b; ...), so that a
    run cut short has every heuristic on the same levels. A kind whose names resolve to the
    same solver (two common names it lacks, both its default) runs it once. An invalid
    level is one attempt: it runs nothing.
    """
    solvers = solvers or {}
    matrix = HeuristicMatrix.parse(heuristic)
    for kind, names in matrix.per_kind:
        for name in names:
            try:
                heuristic_of(get_kind(kind), name, solvers)
            except (UnknownKind, UnknownHeuristic) as exc:
                raise OptionError("--heuristic", str(exc)) from None
    planned: list[PlannedAttempt] = []
    notes: dict[tuple[str, str | None], str] = {}
    usable: set[str | None] = set()
    # The same for every level of a kind: resolved once per kind, not once per level.
    resolved: dict[str, list[str]] = {}
    for level in levels:
        if not level.valid:
            planned.append(PlannedAttempt(level, matrix.names_for(level.kind)[0] or "default", len(planned)))
            continue
        if level.kind not in resolved:
            resolved[level.kind] = _resolve(get_kind(level.kind), matrix, solvers, notes, usable)
        for name in resolved[level.kind]:
            planned.append(PlannedAttempt(level, name, len(planned)))
    missing = [name for name in matrix.common if name is not None and name not in usable]
    if missing and notes:
        kinds = sorted({k for k, _ in notes})
        choices = "; ".join(f"{k}: {', '.join([*get_kind(k).solvers, *for_kind(solvers, k)])}" for k in kinds)
        raise PlanError(f"no level in the pack has a heuristic {missing[0]!r} ({choices})")
    used = {p.heuristic for p in planned if p.level.valid}
    programs = {n: s for n, s in solvers.items() if n in used}
    return Plan(planned, duplicates, [notes[k] for k in sorted(notes, key=_note_order)], programs=programs)


def plan_cells(levels: Sequence[Level], heuristics: Sequence[str], solvers: Solvers | None = None) -> Plan:
    """Return the plan of these (level, heuristic) cells, in the order given: a matrix run's rerun of
    the cells that failed, each with the heuristic it failed with (a declared program among solvers)."""
    planned = [PlannedAttempt(lv, h, seq) for seq, (lv, h) in enumerate(zip(levels, heuristics, strict=True))]
    used = {p.heuristic for p in planned if p.level.valid}
    return Plan(planned, 0, programs={n: s for n, s in (solvers or {}).items() if n in used})


def _resolve(
    puzzle: Any,
    matrix: HeuristicMatrix,
    solvers: Solvers,
    notes: dict[tuple[str, str | None], str],
    usable: set[str | None],
) -> list[str]:
    """Return the solvers a kind runs for the matrix, each once, in the order asked.

    A common name the kind lacks becomes its default, with a note (in notes, by kind and
    name); the common names it has are added to usable.
    """
    out: list[str] = []
    for asked in matrix.names_for(puzzle.name):
        try:
            name = heuristic_of(puzzle, asked, solvers)
            if asked in matrix.common:
                usable.add(asked)
        except UnknownHeuristic:
            name = puzzle.default
            notes[puzzle.name, asked] = f"{puzzle.name} has no heuristic {asked!r}: its default {name!r} runs"
        if name not in out:
            out.append(name)
    return out


def _note_order(key: tuple[str, str | None]) -> tuple[str, str]:
    return key[0], key[1] or ""


# --- chunking: how many attempts one task carries ------------------------------------------

# A task should carry about this much work: enough to share the per-task cost (a Celery
# message, a claim, a fork), little enough that workers stay evenly loaded and a lost
# task costs little.
TARGET_TASK_S = 0.5
MAX_CHUNK = 500
# A small run is still cut into at least this many tasks, so many workers share it.
MIN_TASKS = 16
# What one attempt costs a worker beyond its solver's own time (verify, pipe, claim, record).
ATTEMPT_OVERHEAD_S = 0.001
# With no history for a kind, a level is guessed to take this long per unit of its size
# (cells, blanks, squares...); the first run's times replace the guess.
SECONDS_PER_SIZE_UNIT = 2.5e-4
# Past attempts of a kind and heuristic read to estimate its median time.
HISTORY = 1000
SAMPLE = 200


def choose_chunk_size(
    session: Session,
    pending: Sequence[PendingAttempt],
    sizes: Mapping[str, int] | None = None,
    visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT,
) -> int:
    """Return attempts per task so that a task takes about TARGET_TASK_S; 1 for an empty run.

    Each (kind, heuristic) is estimated from the median wall time of its last
    HISTORY final attempts, or from its levels' sizes when it has none (sizes:
    by level hash, for levels not in the database yet, as `check` has them); the
    pack's mean estimate sets the chunk size, capped so the run still makes at
    least MIN_TASKS tasks, and a task's hard limits within half the broker's
    visibility_timeout (the settings'; a local run has no broker: the default).
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for p in pending:
        groups.setdefault((p.spec.kind, p.spec.heuristic), []).append(p.level_hash)
    if not groups:
        return 1
    total = 0.0
    for (kind, heuristic), hashes in groups.items():
        times = sorted(recent_wall_times(session, kind, heuristic, HISTORY))
        if len(times) >= 5:
            per_level = times[len(times) // 2]
        else:
            step = max(1, len(hashes) // SAMPLE)
            sample = hashes[::step][:SAMPLE]
            if sizes is not None:
                known = sorted(sizes.get(h, 0) for h in sample)
            else:
                known = sorted(size for size, _ in level_facts(session, sample).values())
            per_level = SECONDS_PER_SIZE_UNIT * (known[len(known) // 2] if known else 0)
        total += len(hashes) * (per_level + ATTEMPT_OVERHEAD_S)
    mean = total / len(pending)
    # The largest limit of any attempt (a relative run's attempts each have their own).
    most = max_chunk_for(Limits.widest(p.spec.limits for p in pending), visibility_timeout)
    chunk = max(1, min(MAX_CHUNK, round(TARGET_TASK_S / mean), most))
    return max(1, min(chunk, len(pending) // MIN_TASKS))


# A local run's last chunks hold at most the attempts left over this many per process: the chunk
# size was guessed from a median (or from sizes, on a first night), and a chunk's attempts run one
# after another in one process, so two long levels in the run's last chunk would end it on one
# process while the others wait. Tapered, the last tasks hold one attempt each (guided
# self-scheduling).
TAPER = 2


def tapered_chunks(
    items: Sequence[PendingAttempt], size: int, processes: int, alone: Collection[tuple[str, str]] = ()
) -> list[list[PendingAttempt]]:
    """Return items in order in chunks of at most size, each at most the items left over TAPER x
    processes: full chunks first, then smaller ones down to one attempt each at the end; an attempt
    whose key is in alone (expected long: Ordered) in a chunk of its own."""
    chunks: list[list[PendingAttempt]] = []
    i = 0
    while i < len(items):
        take = max(1, min(size, (len(items) - i) // (TAPER * max(1, processes))))
        chunk = [items[i]]
        if items[i].key not in alone:
            for p in items[i + 1 : i + take]:
                if p.key in alone:
                    break
                chunk.append(p)
        chunks.append(chunk)
        i += len(chunk)
    return chunks


def max_chunk_for(limits: Limits, visibility_timeout: int) -> int:
    """Return the most attempts one task may carry: all at their hard limit within half the visibility
    timeout (seconds, the settings').

    Past the broker's visibility timeout the still-running task would be handed to another worker.
    """
    hard = limits.hard_time()
    return MAX_CHUNK if hard is None else max(1, int(visibility_timeout / 2 // hard))


# --- ordering: longest processing time first -------------------------------------------------

# Expected times under this are equal for the ordering: so short a level cannot lengthen the
# makespan, and such levels then go in pack order, the order a worker's check of its tasks reads
# ahead in (db.task_match.KnownAttempts: out of pack order, each one-level task cost two reads).
LPT_FLOOR_S = 0.05


@dataclass(frozen=True)
class Ordered:
    """A run's attempts longest expected first, and those expected to take a task's worth or more
    (TARGET_TASK_S): each goes in a task of its own (queue.app.chunks_of). Chunked by count, the
    longest levels, first in the order, would share the first task and run one after another in
    one process while the others finished the rest."""

    attempts: list[PendingAttempt]
    alone: frozenset[tuple[str, str]] = frozenset()
    by_history: bool = True  # False: no level has history, the order is by size alone


def hardest_first(
    session: Session, run_id: int, pending: list[PendingAttempt], sizes: Mapping[str, int] | None = None
) -> Ordered:
    """Return the attempts ordered longest-expected-first (LPT shortens the makespan of a run).

    The levels' history in other runs is read from the database (their sizes
    too, unless given by hash); longest_first says how it is used.
    """
    if sizes is None:
        facts = level_facts(session, [p.level_hash for p in pending], exclude_run=run_id)
    else:
        times = past_times(session, run_id)
        facts = {p.level_hash: (sizes.get(p.level_hash, 0), times.get(p.level_hash)) for p in pending}
    return longest_first(pending, facts)


def longest_first(pending: list[PendingAttempt], facts: Mapping[str, tuple[int, float | None]]) -> Ordered:
    """Return the attempts ordered longest-expected-first from facts ({hash: (size, past seconds or None)}).

    A level's expected time is its best past time (fastest solved or proved
    attempt in any other run; a level that only ever ran out of time or memory
    counts as its longest such attempt). A level never seen gets the expected
    time of the known level of its kind nearest in size, so it goes in between;
    with no history for its kind, the median of all known times. Times under
    LPT_FLOOR_S count as equal. Ties: bigger first, then pack order. Those expected to take
    TARGET_TASK_S or more go alone (Ordered); with no history, none does.
    """
    known = {h: t for h, (_, t) in facts.items() if t is not None}
    sizes = {h: size for h, (size, _) in facts.items()}
    if not known:
        return Ordered(sorted(pending, key=lambda p: -sizes.get(p.level_hash, 0)), by_history=False)
    # Per kind, the longest known time at each size: of known levels equally near in size, the
    # longest wins. Sorted by size, the nearest sizes of an unseen level are found by bisection.
    longest: dict[str, dict[int, float]] = {}
    for p in pending:
        if p.level_hash in known:
            at = longest.setdefault(p.spec.kind, {})
            size = sizes.get(p.level_hash, 0)
            at[size] = max(at.get(size, known[p.level_hash]), known[p.level_hash])
    points = {kind: sorted(at.items()) for kind, at in longest.items()}
    median = sorted(known.values())[len(known) // 2]
    guesses: dict[tuple[str, int], float] = {}

    def guess(kind: str, size: int) -> float:
        if kind not in points:
            return median
        if (kind, size) not in guesses:
            guesses[kind, size] = _nearest(points[kind], size)
        return guesses[kind, size]

    def expected(p: PendingAttempt) -> float:
        h = p.level_hash
        return known[h] if h in known else guess(p.spec.kind, sizes.get(h, 0))

    times = [expected(p) for p in pending]
    keyed = [
        (-max(t, LPT_FLOOR_S), -sizes.get(p.level_hash, 0), i)
        for i, (p, t) in enumerate(zip(pending, times, strict=True))
    ]
    keyed.sort()
    alone = frozenset(p.key for p, t in zip(pending, times, strict=True) if t >= TARGET_TASK_S)
    return Ordered([pending[i] for _, _, i in keyed], alone)


def _nearest(points: list[tuple[int, float]], size: int) -> float:
    """Return the time of the point nearest to size (points sorted by size, sizes distinct); ties: longest."""
    i = bisect_left(points, size, key=lambda p: p[0])
    if i < len(points) and points[i][0] == size:
        return points[i][1]
    below = points[i - 1] if i > 0 else None
    above = points[i] if i < len(points) else None
    if below is None or (above is not None and above[0] - size < size - below[0]):
        assert above is not None
        return above[1]
    if above is None or size - below[0] < above[0] - size:
        return below[1]
    return max(below[1], above[1])


def attempt_spec(kind: str, heuristic: str, data: Any, limits: Limits, programs: Solvers) -> AttemptSpec:
    """Return the spec of one attempt: the one place a spec is built (new runs, rerun, resume, scheduler).

    A heuristic that is a declared program of the kind carries its declaration.
    """
    return AttemptSpec(kind, heuristic, data, limits, program_for(programs, kind, heuristic))


def run_programs(run: Any, declared: Solvers | None = None) -> dict[str, ExternalSolver]:
    """Return the programs a stored run uses: those it recorded, each overridden by one declared now."""
    return {**declared_in(Provenance.of(run).solvers), **(declared or {})}


def declarations(programs: Mapping[str, ExternalSolver]) -> dict[str, Any]:
    """Return the programs' declarations as a run records them (by name, JSON-ready)."""
    return {name: program.to_json() for name, program in sorted(programs.items())}


def stored_pending(
    session: Session, run: Any, hashes: Sequence[str], declared: Solvers | None = None
) -> list[PendingAttempt]:
    """Return some attempts of a stored run, to make again (its limits, its levels), in pack order.

    What resume runs and the scheduler sends again: an external solver's
    declaration, recorded with the run (or declared again now), travels again.
    """
    limits = Limits.of_run(run)
    programs = run_programs(run, declared)
    return [
        PendingAttempt(
            a.level_hash,
            attempt_spec(
                a.kind, a.heuristic, json.loads(lv.data), limits.with_own(a.time_limit, a.cpu_limit), programs
            ),
            a.name,
        )
        for a, lv in attempts_with_levels(session, run.id, list(hashes))
    ]


def relative_limits(session: Session, plan: Plan, request: Request) -> tuple[Plan, Request]:
    """Return the plan with each valid attempt's own limits of the request's relative ones (Nx), and the
    request whose limits hold the largest of them (the run's row, and what a task may take, say that).

    A level's expected time is read from its earlier attempts of the same kind and heuristic
    (db.history.past_attempts; execution.relative.expected_seconds): wall time for --time-limit,
    CPU time for --cpu-limit. Raise OptionError, before anything is created, if any level has none.
    Without relative limits, both are returned as they are.
    """
    relative = request.relative
    if not relative:
        return plan, request
    valid = [p for p in plan.attempts if p.level.valid]
    past = past_attempts(session, [(p.level.hash, p.level.kind, p.heuristic) for p in valid])
    own: dict[str, dict[tuple[str, str], float]] = {}
    for option, rel, clock in (("--time-limit", relative.time, "wall"), ("--cpu-limit", relative.cpu, "cpu")):
        if rel is None:
            continue
        got: dict[tuple[str, str], float] = {}
        for p in valid:
            times = past.get(p.key)
            expected = None if times is None else expected_seconds(*_clock(times, clock))
            if expected is not None:
                got[p.key] = rel.limit(expected)
        missing = [p for p in valid if p.key not in got]
        if missing:
            raise OptionError(option, _no_history(rel.spelled(), clock, missing, valid))
        own[clock] = got
    walls, cpus = own.get("wall", {}), own.get("cpu", {})
    attempts = [
        replace(p, time_limit=walls.get(p.key), cpu_limit=cpus.get(p.key)) if p.level.valid else p
        for p in plan.attempts
    ]
    limits = request.limits
    widest = Limits(
        max(walls.values(), default=None) if walls else limits.time_limit,
        limits.node_limit,
        limits.memory_limit_mb,
        max(cpus.values(), default=None) if cpus else limits.cpu_limit,
    )
    return replace(plan, attempts=attempts), replace(request, limits=widest)


def _no_history(
    limit: str, clock: str, missing: Sequence[PlannedAttempt], asked: Sequence[PlannedAttempt]
) -> str:
    """Return why a relative limit cannot be set: so many attempts asked have no past of their clock."""
    if len({p.level.hash for p in asked}) == len(asked):
        what = f"{len(missing)} of {len(asked)} level(s) have none"
    else:  # a matrix: a level may lack the past of one of its heuristics only
        levels = len({p.level.hash for p in missing})
        what = f"{len(missing)} of {len(asked)} attempt(s) ({levels} level(s)) have none"
    return (
        f"{limit} needs each level's earlier {clock} time with its heuristic, and {what}: "
        "give a duration instead (e.g. 10s), or run those levels once first"
    )


def _clock(times: PastTimes, clock: str) -> tuple[list[float], list[float]]:
    """Return (decided times, timed-out-at limits) of one clock (wall or cpu) of a level's past."""
    if clock == "wall":
        return times.decided_wall, times.timed_out_wall
    return times.decided_cpu, times.timed_out_cpu


def check_runnable(run_id: int, pending: Sequence[PendingAttempt]) -> None:
    """Raise PlanError naming a heuristic of pending that this machine runs neither built in nor declared."""
    specs = [p.spec for p in pending]
    # Only a declaration with its command runs here; a bare reference (name and digest) does not.
    programs = {s.program.name: s.program for s in specs if isinstance(s.program, ExternalSolver)}
    for kind, heuristic in sorted({(s.kind, s.heuristic) for s in specs}):
        try:
            heuristic_of(get_kind(kind), heuristic, programs)
        except (UnknownKind, UnknownHeuristic) as exc:
            raise PlanError(
                f"run {run_id}: {exc}; declare its program again with --solvers FILE or ./packsolve.toml"
            ) from None
