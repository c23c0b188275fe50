"""Where a declared external program is on this machine: its executable, SHA-256, argv and directory.

``resolve`` finds the program a declaration names on the machine that runs it (a worker, or the
machine of a local run) and the SHA-256 of that file, which the run's provenance records
(external/provenance.py) and the solver child runs (execution/programs.py).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass

from packsolve.external.declaration import ExternalSolver


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
