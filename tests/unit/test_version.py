"""`packsolve --version` answers at once: it imports none of the commands' libraries."""

from __future__ import annotations

import re
import subprocess
import sys

from packsolve import __version__
from tests.support.services import child_env

HEAVY = ("click", "rich", "sqlalchemy", "celery")
COMMANDS = ("packsolve.levels", "packsolve.puzzles", "packsolve.cli.root")


def test_version_prints_the_version_and_imports_nothing_heavy() -> None:
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "packsolve", "--version"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and res.stdout == f"packsolve, version {__version__}\n", res
    imported = set(re.findall(r"\|\s+([\w.]+)\s*$", res.stderr, re.MULTILINE))
    assert imported and not [m for m in imported if m.split(".")[0] in HEAVY or m in COMMANDS]
