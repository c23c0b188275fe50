"""External solver programs as declared in TOML: ``[solvers.NAME]`` with kind, command and stdin.

A declaration names a heuristic of one kind that is a program in any language::

    [solvers.warnsdorff-c]
    kind = "knights_tour"
    command = ["./bin/knight", "{level}"]   # {level}: a file holding the level's canonical JSON
    stdin = true                            # also send that JSON on standard input (default true)

The run records the declaration; a task names the program and the SHA-256 of its declaration
(``ProgramRef``), never a command. A worker runs only the programs declared on its own machine
(its ``packsolve.toml`` or ``--solvers FILE``) whose declaration has that very hash, and resolves
the command there (execution.programs.resolve): a first word with a slash is a path, looked
for from the directory of the file that declared it (``base``), then from the current
directory; a bare name is looked up on the PATH. docs/external-solvers.md has the protocol.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packsolve.errors import SolverFileError, UnknownHeuristic
from packsolve.puzzles import KINDS, PuzzleKind

DEFAULT_FILE = "packsolve.toml"
LEVEL_PLACEHOLDER = "{level}"
KEYS = ("kind", "command", "stdin")
# Letters, digits and - _ . only: a name is written in --heuristic, where "," and "=" separate.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_NAME = 64  # the attempts' heuristic column
EXAMPLE = '[solvers.NAME] with kind = "knights_tour" and command = ["./bin/knight", "{level}"]'


@dataclass(frozen=True)
class ExternalSolver:
    """One declared solver program: its heuristic name, kind, command (argv), stdin, and base directory."""

    name: str
    kind: str
    command: tuple[str, ...]
    stdin: bool = True
    base: str = ""  # absolute directory of the declaring file: relative paths in command start there

    def to_json(self) -> dict[str, Any]:
        """Return the declaration as it travels in a task and is recorded with a run."""
        return {
            "name": self.name,
            "kind": self.kind,
            "command": list(self.command),
            "stdin": self.stdin,
            "base": self.base,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExternalSolver:
        """Return the declaration to_json wrote; raise ValueError if data is not one."""
        try:
            command = tuple(str(word) for word in data["command"])
            stdin = bool(data.get("stdin", True))
            return cls(str(data["name"]), str(data["kind"]), command, stdin, str(data.get("base", "")))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a solver declaration: {type(exc).__name__}: {exc}") from None

    def digest(self) -> str:
        """Return the SHA-256 of the declaration's canonical JSON: name, kind, command and stdin.

        Where the declaring file lies (base) is left out: two machines that declare the
        program alike, each in its own directory, agree on it.
        """
        fields = {"name": self.name, "kind": self.kind, "command": list(self.command), "stdin": self.stdin}
        text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def ref(self) -> ProgramRef:
        """Return how a task names this program: its name and its declaration's digest."""
        return ProgramRef(self.name, self.digest())

    def shown(self) -> str:
        """Return the command as a person would type it (for reports and messages)."""
        return " ".join(json.dumps(w) if (" " in w or not w) else w for w in self.command)


@dataclass(frozen=True)
class ProgramRef:
    """A declared program as a task names it: the name and the SHA-256 of its declaration, no command."""

    name: str
    sha256: str

    def to_json(self) -> dict[str, str]:
        """Return the reference as it travels in a task."""
        return {"name": self.name, "sha256": self.sha256}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProgramRef:
        """Return the reference to_json wrote; raise ValueError if data is not one."""
        try:
            name, sha256 = data["name"], data["sha256"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a program reference: {type(exc).__name__}: {exc}") from None
        if not isinstance(name, str) or not isinstance(sha256, str):
            raise ValueError("not a program reference: name and sha256 must be strings")
        return cls(name, sha256)


Solvers = Mapping[str, ExternalSolver]


def declared_as(solvers: Solvers, ref: ProgramRef) -> ExternalSolver:
    """Return the declaration ref names, with the same digest; raise ValueError saying why not."""
    solver = solvers.get(ref.name)
    if solver is None:
        here = ", ".join(sorted(solvers)) or "none"
        raise ValueError(
            f"program {ref.name!r} is not declared on this worker (declared here: {here}); declare it in "
            "the worker's packsolve.toml or `packsolve worker --solvers FILE`, as the submitter did"
        )
    if solver.digest() != ref.sha256:
        raise ValueError(
            f"program {ref.name!r} is declared differently on this worker (declaration "
            f"{solver.digest()[:12]}, the task's {ref.sha256[:12]}): its kind, command and stdin must "
            "match the submitter's declaration"
        )
    return solver


def load_solvers(path: str | os.PathLike[str] | None = None) -> dict[str, ExternalSolver]:
    """Return the solvers declared in path, or in ./packsolve.toml if path is None and it exists.

    Raise SolverFileError (one line: the file, what is wrong and what would work) if
    the file given does not exist or a declaration is malformed.
    """
    if path is None:
        default = Path(DEFAULT_FILE)
        if not default.is_file():
            return {}
        return _load(default, required=False)
    given = Path(path)
    if not given.is_file():
        raise SolverFileError(f"--solvers {path}: no such file (declare solvers there as {EXAMPLE})")
    return _load(given, required=True)


def _load(path: Path, required: bool) -> dict[str, ExternalSolver]:
    """Read and check one TOML file; required: a file without any [solvers] table is an error."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SolverFileError(f"{path}: cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SolverFileError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("solvers")
    if table is None:
        if required:
            raise SolverFileError(f"{path}: declares no solver; write one as {EXAMPLE}")
        return {}
    if not isinstance(table, dict):
        raise SolverFileError(f"{path}: 'solvers' must be a table of [solvers.NAME] sections")
    base = str(path.resolve().parent)
    return {name: _declaration(path, name, entry, base) for name, entry in table.items()}


def _declaration(path: Path, name: str, entry: Any, base: str) -> ExternalSolver:
    """Return one checked declaration; raise SolverFileError naming the section and the fix."""
    where = f"{path}: [solvers.{name}]"
    if not NAME.match(name) or len(name) > MAX_NAME:
        raise SolverFileError(
            f"{where}: a solver name is at most {MAX_NAME} letters, digits, '-', '_' and '.'"
        )
    if not isinstance(entry, dict):
        raise SolverFileError(f"{where} must be a table: {EXAMPLE}")
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise SolverFileError(f"{where}: unknown key {unknown[0]!r} (the keys are {', '.join(KEYS)})")
    kind = entry.get("kind")
    if not isinstance(kind, str) or not kind:
        raise SolverFileError(
            f'{where}: needs kind = "KIND", the puzzle kind it solves (see `packsolve kinds`)'
        )
    command = entry.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(w, str) for w in command)
        or not command[0]
    ):
        raise SolverFileError(
            f'{where}: command must be a non-empty list of strings, e.g. ["./bin/knight", "{{level}}"]'
        )
    stdin = entry.get("stdin", True)
    if not isinstance(stdin, bool):
        raise SolverFileError(f"{where}: stdin must be true or false, not {stdin!r}")
    if kind in KINDS and (name in KINDS[kind].solvers or name == "default"):
        raise SolverFileError(
            f"{where}: {name!r} is a built-in heuristic of {kind}; give the program another name"
        )
    return ExternalSolver(name, kind, tuple(command), stdin, base)


def declared_in(recorded: Mapping[str, Any] | None) -> dict[str, ExternalSolver]:
    """Return the declarations a run recorded (its options' "solvers"); skip any that cannot be read."""
    out = {}
    for name, data in (recorded or {}).items():
        try:
            out[name] = ExternalSolver.from_json(data)
        except ValueError:
            continue
    return out


def program_for(solvers: Solvers, kind: str, heuristic: str) -> ExternalSolver | None:
    """Return the declared program that is heuristic for kind; None if it is a built-in heuristic."""
    solver = solvers.get(heuristic)
    return solver if solver is not None and solver.kind == kind else None


def for_kind(solvers: Solvers, kind: str) -> list[str]:
    """Return the names of the declared programs of kind, sorted."""
    return sorted(name for name, s in solvers.items() if s.kind == kind)


def heuristic_of(kind: PuzzleKind, name: str | None, solvers: Solvers) -> str:
    """Return the heuristic name resolved for kind: built-in or a declared program of that kind.

    Raise UnknownHeuristic listing both, and where programs are declared.
    """
    if name is not None and program_for(solvers, kind.name, name) is not None:
        return name
    try:
        return kind.solver(name)[0]
    except UnknownHeuristic:
        external = for_kind(solvers, kind.name)
        choices = ", ".join([*sorted(kind.solvers), *external, "default"])
        where = (
            ""
            if external
            else "; external solver programs are declared in ./packsolve.toml or --solvers FILE"
        )
        raise UnknownHeuristic(
            f"kind {kind.name!r} has no heuristic {name!r} (choose from: {choices}{where})"
        ) from None
