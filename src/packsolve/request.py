"""What a user asks of a run, checked once for every command: option values and the --heuristic choice.

solve, submit, rerun and check all go through these checks before anything is
read or created, so a limit means the same thing whichever command gave it and a
typo never turns into "no limit" overnight.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from packsolve import bounds
from packsolve.errors import OptionError
from packsolve.execution import Limits
from packsolve.execution.cores import PinningError, cpu_sets, most_processes, physical_cores, usable_cpus
from packsolve.execution.relative import Relative, RelativeLimits
from packsolve.external.declaration import ExternalSolver
from packsolve.levels import DEFAULT_MAX_BYTES
from packsolve.outcome import Status
from packsolve.puzzles import KINDS


@dataclass(frozen=True)
class Request:
    """What the user asked of a run, validated: the same for solve, submit and rerun."""

    kind: str | None = None
    heuristic: str | None = None  # None or "default": each kind's default
    limits: Limits = field(default_factory=Limits)
    label: str | None = None
    max_tries: int | None = None
    max_file_bytes: int = DEFAULT_MAX_BYTES
    move_label: bool = False  # take the label from the run that has it
    solvers: Mapping[str, ExternalSolver] = field(default_factory=dict)  # declared external programs
    follow_links: bool = False  # read links that lead out of the pack (--follow-links)
    # --time-limit / --cpu-limit given as Nx: each attempt's own limit comes from its level's history
    # (planning.relative_limits), and limits then holds the largest of them.
    relative: RelativeLimits = field(default_factory=RelativeLimits)


def limits_from_options(
    time_limit: float | Relative | None,
    node_limit: int | None,
    memory_limit: int | None,
    cpu_limit: float | Relative | None = None,
) -> Limits:
    """Return the Limits of these option values (a time None or 0: none); raise OptionError if one is bad.

    The one check of limits for solve, submit, rerun and check: a negative or
    non-finite time, or a node or memory limit below 1, is refused, never read as no limit;
    so is one past what the database stores (bounds). --cpu-limit takes what --time-limit takes.
    A relative time (Nx, checked when parsed) is left out here (None): relative_of has it.
    """
    time_limit, cpu_limit = _absolute(time_limit), _absolute(cpu_limit)
    for option, seconds in (("--time-limit", time_limit), ("--cpu-limit", cpu_limit)):
        if seconds is not None and (not math.isfinite(seconds) or seconds < 0):
            raise OptionError(
                option,
                f"{seconds:g} is not a duration: give seconds > 0 (2.5, or 500ms, 2s, 1m, 1h), or 0 for none",
            )
        _check_at_most(option, seconds, bounds.TIME_LIMIT_S)
    for name, value, span in (
        ("--node-limit", node_limit, bounds.NODE_LIMIT),
        ("--memory-limit", memory_limit, bounds.MEMORY_LIMIT_MB),
    ):
        if value is not None and value <= 0:
            raise OptionError(name, f"{value} is not a limit; give a whole number of at least 1")
        _check_at_most(name, value, span)
    return Limits(time_limit or None, node_limit, memory_limit, cpu_limit or None)


def _absolute(value: float | Relative | None) -> float | None:
    """Return a limit option's value in seconds; None if none was given or it is relative (Nx)."""
    return None if isinstance(value, Relative) else value


def relative_of(time_limit: float | Relative | None, cpu_limit: float | Relative | None) -> RelativeLimits:
    """Return the relative limits (Nx) among these option values (none if both are durations)."""
    return RelativeLimits(
        time_limit if isinstance(time_limit, Relative) else None,
        cpu_limit if isinstance(cpu_limit, Relative) else None,
    )


def _check_at_most(option: str, value: float | None, span: bounds.Range) -> None:
    """Raise OptionError giving span if value is above it (one below has a message of its own)."""
    if value is not None and value > span.high:
        raise OptionError(option, f"{value:g} is more than can be stored; give {span}")


# --split-after share: split a level expected to take longer than each process's share of the night
# (its expected time over the processes), worked out when the run is made (runs: split_plans.night_share).
SHARE = "share"
# --split-after: seconds, or SHARE.
SplitAfter = float | Literal["share"]


@dataclass(frozen=True)
class LocalPool:
    """The processes of a local run (check_jobs's), and the CPUs of its own each is pinned to (None: not)."""

    processes: int
    cpus_per_attempt: int | None = None
    # Split a level expected to take longer than this (seconds, or SHARE) into parts the processes share.
    split_after: SplitAfter | None = None

    @classmethod
    def checked(
        cls, jobs: int | None, cpus_per_attempt: int | None, split_after: SplitAfter | None = None
    ) -> LocalPool:
        """Return the pool these options ask for; raise OptionError as check_jobs does."""
        return cls(check_jobs(jobs, cpus_per_attempt), cpus_per_attempt, split_after)


def check_jobs(jobs: int | None, cpus_per_attempt: int | None = None, option: str = "--jobs") -> int:
    """Return the local processes to use; raise OptionError below 1, or past the CPUs pinning needs.

    None: one per core, or with cpus_per_attempt (`--cpus-per-attempt`) as many processes as
    can each have that many CPUs of their own (execution.cores).
    """
    if cpus_per_attempt is not None:
        return _check_pinned(jobs, cpus_per_attempt, option)
    if jobs is None:
        return os.cpu_count() or 1
    if jobs < 1:
        raise OptionError(
            option, f"{jobs} processes cannot run anything; give at least 1 (default: one per core)"
        )
    _check_at_most(option, jobs, bounds.PROCESSES)
    return jobs


def _check_pinned(jobs: int | None, per: int, option: str) -> int:
    """Return the processes to pin to per CPUs of their own each; raise OptionError if they do not fit."""
    cores = physical_cores(usable_cpus())
    most = most_processes(per, cores)
    if most == 0:
        usable = sum(len(core) for core in cores)
        raise OptionError(
            "--cpus-per-attempt",
            f"{per} CPUs per attempt, but this machine lets packsolve use {usable}: give at most {usable}",
        )
    processes = most if jobs is None else check_jobs(jobs, option=option)
    try:
        cpu_sets(per, processes, cores)
    except PinningError as exc:
        raise OptionError(option, str(exc)) from None
    return processes


def check_max_file_bytes(max_file_mb: float) -> int:
    """Return the file size cap in bytes of --max-file-mb; raise OptionError unless it is positive."""
    if not math.isfinite(max_file_mb) or max_file_mb <= 0:
        raise OptionError("--max-file-mb", f"{max_file_mb:g} MB would refuse every file; give a size > 0")
    return int(max_file_mb * 2**20)


def check_max_tries(max_tries: int | None) -> int | None:
    """Return max_tries (None: the default); raise OptionError below 1."""
    if max_tries is not None and max_tries < 1:
        raise OptionError("--max-tries", f"{max_tries}: a task needs at least 1 delivery to run")
    _check_at_most("--max-tries", max_tries, bounds.MAX_TRIES)
    return max_tries


def check_label(label: str | None) -> str | None:
    """Return the label (None: none); raise OptionError for one that could not name its run."""
    if label is None:
        return None
    if not label.strip() or label != label.strip():
        raise OptionError("--label", f"{label!r}: a label is a name without leading or trailing spaces")
    if label.isdigit() or label == "latest":
        raise OptionError(
            "--label", f"{label!r} would read as a run id or 'latest'; add a letter (run-{label})"
        )
    if len(label) > 200:
        raise OptionError("--label", "at most 200 characters")
    return label


@dataclass(frozen=True)
class GivenOptions:
    """A run's options as a command was given them, not checked yet (None: not given)."""

    kind: str | None = None
    heuristic: str | None = None
    time_limit: float | Relative | None = None
    node_limit: int | None = None
    memory_limit: int | None = None
    cpu_limit: float | Relative | None = None
    label: str | None = None
    max_file_mb: float = DEFAULT_MAX_BYTES / 2**20
    max_tries: int | None = None
    move_label: bool = False


def request_from_options(given: GivenOptions) -> Request:
    """Return the Request of a command's run options; raise OptionError or PlanError naming a bad one.

    Everything that can be checked without reading the pack or a database is
    checked here, before anything is created.
    """
    if given.kind is not None and given.kind not in KINDS:
        raise OptionError("--kind", f"unknown kind {given.kind!r} (known: {', '.join(KINDS)})")
    HeuristicMatrix.parse(given.heuristic)
    return Request(
        kind=given.kind,
        heuristic=given.heuristic,
        limits=limits_from_options(given.time_limit, given.node_limit, given.memory_limit, given.cpu_limit),
        label=check_label(given.label),
        max_tries=check_max_tries(given.max_tries),
        max_file_bytes=check_max_file_bytes(given.max_file_mb),
        move_label=given.move_label,
        relative=relative_of(given.time_limit, given.cpu_limit),
    )


@dataclass(frozen=True)
class HeuristicChoice:
    """What --heuristic asked for: one name for every kind that has it, and names for given kinds.

    "dlx" applies to the kinds that have a heuristic dlx, the others keep their
    default (with a note); "sudoku=dlx,sliding=idastar" names one per kind; the
    two mix ("astar,sudoku=dlx"). Empty or "default": every kind's default.
    """

    common: str | None = None
    per_kind: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> HeuristicChoice:
        """Return the choice written as text; raise OptionError for an item that cannot be read."""
        common: str | None = None
        per_kind: dict[str, str] = {}
        for item in (text or "").split(","):
            item = item.strip()
            if "=" in item:
                kind, _, name = (part.strip() for part in item.partition("="))
                if not kind or not name:
                    raise OptionError("--heuristic", f"{item!r}: write KIND=HEURISTIC, e.g. sudoku=dlx")
                if per_kind.get(kind, name) != name:
                    raise OptionError(
                        "--heuristic", f"two heuristics for {kind}: {per_kind[kind]!r} and {name!r}"
                    )
                per_kind[kind] = name
            elif item and item != "default":
                if common not in (None, item):
                    twice = f"two heuristics for every kind, {common!r} and {item!r}"
                    raise OptionError("--heuristic", f"{twice}; name the kind of one: KIND=HEURISTIC")
                common = item
        return cls(common, tuple(sorted(per_kind.items())))

    def __str__(self) -> str:
        parts = ([self.common] if self.common else []) + [f"{k}={h}" for k, h in self.per_kind]
        return ",".join(parts) or "default"

    def name_for(self, kind: str) -> str | None:
        """Return the heuristic asked for kind (None: its default)."""
        return dict(self.per_kind).get(kind, self.common)


@dataclass(frozen=True)
class HeuristicMatrix:
    """What --heuristic asks for when it may name several heuristics: each level runs with each of its kind's.

    "dlx,astar" gives every kind both common names (a kind lacking one follows
    HeuristicChoice's rules for it); "sudoku=propagate+dlx" gives sudoku two, the
    kinds not named keep the common names, or their default. "default" among common
    names stands for each kind's default (None). A single name per kind is exactly
    a HeuristicChoice (single()).
    """

    common: tuple[str | None, ...] = ()
    per_kind: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> HeuristicMatrix:
        """Return the heuristics written as text; raise OptionError for a form that cannot be read."""
        common: list[str | None] = []
        per_kind: dict[str, tuple[str, ...]] = {}
        items = [item.strip() for item in (text or "").split(",")]
        for item in items:
            if "=" in item:
                kind, _, names = (part.strip() for part in item.partition("="))
                alternatives = tuple(name.strip() for name in names.split("+"))
                if not kind or not all(alternatives):
                    raise OptionError(
                        "--heuristic",
                        f"{item!r}: write KIND=HEURISTIC or KIND=H1+H2, e.g. sudoku=propagate+dlx",
                    )
                if kind in per_kind:
                    joined = "+".join((*per_kind[kind], *alternatives))
                    raise OptionError(
                        "--heuristic", f"{kind} is named twice: name its heuristics once, {kind}={joined}"
                    )
                _no_repeat(alternatives, f"{kind}={names}")
                per_kind[kind] = alternatives
            elif "+" in item:
                spelled = ",".join(name.strip() for name in item.split("+"))
                raise OptionError(
                    "--heuristic",
                    f"{item!r}: '+' joins one kind's heuristics (sudoku=a+b); for every kind write {spelled}",
                )
            elif item:
                common.append(None if item == "default" else item)
        _no_repeat(common, text or "")
        if common == [None]:
            common = []
        return cls(tuple(common), tuple(sorted(per_kind.items())))

    def __str__(self) -> str:
        parts = [name or "default" for name in self.common]
        parts += [f"{kind}={'+'.join(names)}" for kind, names in self.per_kind]
        return ",".join(parts) or "default"

    def names_for(self, kind: str) -> tuple[str | None, ...]:
        """Return the heuristics asked for kind, in the order given (None: its default)."""
        return dict(self.per_kind).get(kind) or self.common or (None,)

    @property
    def is_matrix(self) -> bool:
        """Return whether some kind is given more than one heuristic."""
        return len(self.common) > 1 or any(len(names) > 1 for _, names in self.per_kind)

    def single(self) -> HeuristicChoice | None:
        """Return the one-heuristic choice this is (None: a matrix)."""
        if self.is_matrix:
            return None
        common = self.common[0] if self.common else None
        return HeuristicChoice(common, tuple((kind, names[0]) for kind, names in self.per_kind))


def _no_repeat(names: Sequence[str | None], given: str) -> None:
    """Raise OptionError naming a heuristic listed twice in names (given: the text they came from)."""
    seen: set[str | None] = set()
    for name in names:
        if name in seen:
            raise OptionError(
                "--heuristic", f"{given!r} names {name or 'default'!r} twice: name each heuristic once"
            )
        seen.add(name)


# Statuses a rerun takes when neither --status nor --group says.
RERUN_DEFAULT_STATUSES = tuple(s.value for s in (Status.TIMEOUT, Status.ERROR, Status.LOST, Status.MEMOUT))
# A failure group's key as figures.failures.group_key makes it: its status and 8 hex digits.
_GROUP_KEY = re.compile(r"([a-z_]+):[0-9a-f]{8}")


@dataclass(frozen=True)
class RerunRequest:
    """A rerun as asked: which parent attempts, and the options given (None: the parent's)."""

    parent: str
    statuses: tuple[str, ...] = ()  # (): the group's status, or RERUN_DEFAULT_STATUSES
    kind: str | None = None
    heuristic: str | None = None
    time_limit: float | Relative | None = None  # 0: none; Nx: relative to each level's history
    node_limit: int | None = None
    memory_limit: int | None = None
    cpu_limit: float | Relative | None = None  # 0: none
    label: str | None = None
    max_tries: int | None = None
    local: bool | None = None  # None: where the parent ran
    jobs: int | None = None
    cpus_per_attempt: int | None = None  # a local child's processes pinned (--cpus-per-attempt)
    split_after: SplitAfter | None = (
        None  # the child splits a level expected to take longer (seconds, or SHARE)
    )
    message: str | None = None  # only attempts whose message holds this text
    group: str | None = None  # only the attempts of this failure group (its key, `report failures`)
    move_label: bool = False
    solvers: Mapping[str, ExternalSolver] = field(default_factory=dict)  # declared now (over the parent's)

    def check(self) -> list[str]:
        """Check every option before anything is read (OptionError naming a bad one); return the statuses."""
        wanted = self.checked_statuses()
        self.limits(Limits())
        if self.jobs is not None or (self.cpus_per_attempt is not None and self.local is not False):
            check_jobs(self.jobs, self.cpus_per_attempt)
        check_max_tries(self.max_tries)
        check_label(self.label)
        HeuristicMatrix.parse(self.heuristic)
        return wanted

    def checked_statuses(self) -> list[str]:
        """Return the statuses asked for; raise OptionError for none, one not final, or a bad --group."""
        valid = {s.value for s in Status if s.final}
        of_group = self._group_status(valid) if self.group is not None else None
        given = self.statuses or ((of_group,) if of_group else RERUN_DEFAULT_STATUSES)
        wanted = [s.strip() for s in given if s.strip()]
        bad = [s for s in wanted if s not in valid]
        if not wanted or bad:
            choices = ", ".join(sorted(valid))
            raise OptionError(
                "--status", f"unknown final status {', '.join(bad) or '(none)'}; choose from {choices}"
            )
        if of_group and of_group not in wanted:
            raise OptionError("--group", f"{self.group} is a group of {of_group}, which --status leaves out")
        return wanted

    def _group_status(self, valid: set[str]) -> str:
        """Return the status a --group key names; raise OptionError if it is not a group's key."""
        found = _GROUP_KEY.fullmatch(self.group or "")
        if found is None or found.group(1) not in valid:
            raise OptionError(
                "--group",
                f"{self.group!r} is not a failure group's key: give one as `packsolve report failures RUN` "
                "prints it (STATUS:8 hex digits, e.g. timeout:3f2a9c1e)",
            )
        return found.group(1)

    def limits(self, parent: Limits) -> Limits:
        """Return the given limits over the parent's; raise OptionError as solve and submit would."""
        given = limits_from_options(self.time_limit, self.node_limit, self.memory_limit, self.cpu_limit)
        return Limits(
            parent.time_limit if self.time_limit is None else given.time_limit,
            parent.node_limit if self.node_limit is None else given.node_limit,
            parent.memory_limit_mb if self.memory_limit is None else given.memory_limit_mb,
            parent.cpu_limit if self.cpu_limit is None else given.cpu_limit,
        )

    def relative(self, parent: RelativeLimits) -> RelativeLimits:
        """Return the relative limits of the child: those given (Nx), else the parent's where that
        limit was not given at all (a duration given replaces the parent's Nx)."""
        given = relative_of(self.time_limit, self.cpu_limit)
        return RelativeLimits(
            given.time if self.time_limit is not None else parent.time,
            given.cpu if self.cpu_limit is not None else parent.cpu,
        )
