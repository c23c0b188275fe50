"""The pure core (levels, outcome, budget, puzzles, execution) imports no celery, redis, sqlalchemy, click."""

from __future__ import annotations

import subprocess
import sys
import textwrap

FORBIDDEN = ("celery", "kombu", "redis", "sqlalchemy", "click", "alembic")


def test_pure_core_imports_no_infrastructure():
    code = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        import packsolve.levels, packsolve.outcome, packsolve.budget, packsolve.execution
        import packsolve.puzzles as puzzles
        for mod in pkgutil.walk_packages(puzzles.__path__, "packsolve.puzzles."):
            importlib.import_module(mod.name)
        for name in puzzles.KINDS:  # and whatever each kind imports on first use
            puzzles.KINDS[name]
        bad = sorted(m for m in sys.modules if m.split(".")[0] in {FORBIDDEN!r})
        print(",".join(bad))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"pure core imported: {out.stdout.strip()}"


def test_every_listed_kind_is_present():
    from packsolve.puzzles import _MODULES, KINDS

    assert sorted(KINDS) == sorted(_MODULES)
