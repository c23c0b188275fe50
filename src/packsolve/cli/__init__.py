"""The packsolve command line (its click group is in root.py): `main`, and `cli`, `COMMANDS` on first use.

`packsolve --version` answers here, before any command's module (click, rich, the puzzle kinds) is
imported: it is what a script or a package check runs, and should cost a bare interpreter's start.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    """Run the packsolve command line; `--version` alone is answered without loading the commands."""
    if sys.argv[1:] == ["--version"]:
        from packsolve import __version__

        print(f"packsolve, version {__version__}")  # as click's version_option words it
        return
    from packsolve.cli.root import cli

    cli(prog_name="packsolve")


def __getattr__(name: str) -> Any:
    """Return root.py's `cli` or `COMMANDS`, imported when first asked for."""
    if name in ("cli", "COMMANDS"):
        from packsolve.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
