"""External solver programs on the execution path: the job a solver child runs.

The program is resolved on this machine first (external/resolution.py). ``ProgramJob`` is what a
solver child runs for one attempt: the level written to a file (``{level}``) and sent on
standard input, the program run under the attempt's limits (spawn.py), its answer read by
the protocol (answer.py). The kind's ``verify`` then judges the answer like any other
(attempts.py).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from dataclasses import dataclass

from packsolve.budget import Budget
from packsolve.execution import answer, spawn
from packsolve.execution.output import DEFAULT_OUTPUT_KEEP
from packsolve.execution.spec import Limits
from packsolve.external.declaration import LEVEL_PLACEHOLDER
from packsolve.external.resolution import Resolved
from packsolve.outcome import Outcome, Status

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
    """One attempt of an external solver, as a solver child runs it: called with the attempt's Budget.

    keep: bytes of the program's own output (stdout beyond the answer, stderr) the Outcome keeps.
    """

    program: Resolved
    level_json: str
    limits: Limits
    keep: int = DEFAULT_OUTPUT_KEEP

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
                command = spawn.Command(argv, self.program.cwd, env, stdin, self.keep)
                raw = spawn.run(command, self.limits, remove)
            except OSError as exc:  # exec refused it: no interpreter line, a directory, no permission
                return Outcome(Status.ERROR, message=f"cannot start {argv[0]}: {exc.strerror or exc}")
            return answer.outcome_of(raw, self.limits, self.keep)
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
            ("PACKSOLVE_CPU_LIMIT", self.limits.cpu_limit),
        ):
            if value is not None:
                env[name] = f"{value:g}" if isinstance(value, float) else str(value)
        return env
