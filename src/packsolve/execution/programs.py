"""External solver programs on the execution path: the command resolved here, the job a solver child runs.

``resolve`` finds the program a declaration names on this machine (the worker that runs it)
and the SHA-256 of that file, which the run's provenance records. ``ProgramJob`` is what a
solver child runs for one attempt: the level written to a file (``{level}``) and sent on
standard input, the program run under the attempt's limits (spawn.py), its answer read by
the protocol (answer.py). The kind's ``verify`` then judges the answer like any other
(attempts.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass

from packsolve.budget import Budget
from packsolve.execution import answer, spawn
from packsolve.execution.spec import Limits
from packsolve.outcome import Outcome, Status
from packsolve.solvers import LEVEL_PLACEHOLDER, ExternalSolver


class ProgramMissing(Exception):
    """The declared command cannot be run on this machine; the message says where it looked."""


@dataclass(frozen=True)
class Resolved:
    """A declaration as this machine runs it: the executable's path and digest, argv, directory."""

    solver: ExternalSolver
    executable: str
    sha256: str
    argv: tuple[str, ...]
    cwd: str

    def provenance(self) -> dict[str, str]:
        """Return what a run records about the program a worker ran."""
        return {"command": " ".join(self.argv), "executable": self.executable, "sha256": self.sha256}


# SHA-256 by (path, inode, size, mtime): a binary rebuilt in place is hashed again.
_digests: dict[tuple[str, int, int, int], str] = {}


def resolve(solver: ExternalSolver) -> Resolved:
    """Return the program solver names, as found on this machine; raise ProgramMissing if it is not here.

    A relative path is looked for in the declaring file's directory, then in the current
    directory (where that directory does not exist, or the program is not in it); the program
    runs in the directory it was found from.
    """
    first = solver.command[0]
    here = os.getcwd()
    bases = [b for b in (solver.base, here) if b and os.path.isdir(b)]
    bases = list(dict.fromkeys(bases))  # once each, the declaring file's first
    if "/" in first:
        candidates = [(os.path.normpath(os.path.join(b, first)), b) for b in bases]
        found = next(((p, b) for p, b in candidates if os.path.isfile(p)), None)
        if found is None:
            where = " or ".join(p for p, _ in candidates)
            raise ProgramMissing(f"solver {solver.name!r}: no program at {where}")
        path, base = found
    else:
        which = shutil.which(first)
        if which is None:
            raise ProgramMissing(f"solver {solver.name!r}: command {first!r} is not on this machine's PATH")
        path, base = which, bases[0] if bases else here
    if not os.access(path, os.X_OK):
        raise ProgramMissing(f"solver {solver.name!r}: {path} is not executable (chmod +x it)")
    real = os.path.realpath(path)
    return Resolved(solver, real, _sha256(real), (path, *solver.command[1:]), base)


def _sha256(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    digest = _digests.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = _digests[key] = h.hexdigest()
    return digest


# Where level files go: memory (tmpfs) where there is one. On a disk a directory made and removed
# per level cost milliseconds on a busy machine, more than starting the program.
_RAM_DIRS = ("/dev/shm",)


def _level_dir() -> str | None:
    """Return a writable tmpfs directory for level files, or None (the system's temporary directory)."""
    for folder in _RAM_DIRS:
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            return folder
    return None


def _level_prefix(pid: int) -> str:
    # Named by the solver child that makes it: should that child die, its parent finds what it left.
    return f"packsolve-level-{pid}-"


def remove_level_dirs(pid: int) -> None:
    """Remove the level directories solver child pid made and did not remove (it died mid-attempt)."""
    folder = _level_dir() or tempfile.gettempdir()
    prefix = _level_prefix(pid)
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)


@dataclass(frozen=True)
class ProgramJob:
    """One attempt of an external solver, as a solver child runs it: called with the attempt's Budget."""

    program: Resolved
    level_json: str
    limits: Limits

    def __call__(self, budget: Budget) -> Outcome:
        """Run the program on the level under the limits; return its Outcome (unverified), never raise."""
        folder = tempfile.mkdtemp(prefix=_level_prefix(os.getpid()), dir=_level_dir())
        try:
            level_file = os.path.join(folder, "level.json")
            data = self.level_json.encode()
            with open(level_file, "wb") as f:
                f.write(data)
            argv = [word.replace(LEVEL_PLACEHOLDER, level_file) for word in self.program.argv]
            env = self._environment(level_file)
            stdin = data if self.program.solver.stdin else None
            try:
                # Told to die mid-program (its worker was killed), the solver child removes the folder itself.
                remove = functools.partial(shutil.rmtree, folder, ignore_errors=True)
                raw = spawn.run(argv, self.program.cwd, env, stdin, self.limits, remove)
            except OSError as exc:  # exec refused it: no interpreter line, a directory, no permission
                return Outcome(Status.ERROR, message=f"cannot start {argv[0]}: {exc.strerror or exc}")
            return answer.outcome_of(raw, self.limits)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _environment(self, level_file: str) -> dict[str, str]:
        """Return the program's environment: packsolve's own settings out, the attempt's limits in."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PACKSOLVE_")}
        env["PACKSOLVE_LEVEL"] = level_file
        env["PACKSOLVE_KIND"] = self.program.solver.kind
        for name, value in (
            ("PACKSOLVE_TIME_LIMIT", self.limits.time_limit),
            ("PACKSOLVE_NODE_LIMIT", self.limits.node_limit),
            ("PACKSOLVE_MEMORY_LIMIT_MB", self.limits.memory_limit_mb),
        ):
            if value is not None:
                env[name] = f"{value:g}" if isinstance(value, float) else str(value)
        return env
