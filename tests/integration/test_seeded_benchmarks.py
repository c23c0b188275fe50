"""The benchmarks measure what a user meets: seeded runs carry what a real finish builds; no machine paths."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

from packsolve.db.models import Run, RunSnapshot
from packsolve.db.session import get_engine, session_scope
from packsolve.figures.run_figures import kept_final
from tests.support.inprocess import invoke

ROOT = Path(__file__).resolve().parents[2]
# Where the machine the benchmarks ran on kept its checkouts and scratch files; a shared lock file
# (the netns tests') and the cluster's own scratch pattern are the product's, not a machine's.
MACHINE_PATH = re.compile(r"/work/|/root/|/tmp/(?!packsolve-netns\.lock|psn-<token>)")


def test_seeded_runs_carry_what_a_real_finish_builds(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bench.db'}"
    assert invoke("db", "upgrade", "--database-url", url).returncode == 0
    seeded = subprocess.run(
        [sys.executable, "-m", "benchmarks.seed_attempts", url, "--runs", "2", "--levels", "300"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert seeded.returncode == 0, seeded.stderr
    with session_scope(get_engine(url, read_only=True)) as session:
        runs = session.scalars(select(Run).order_by(Run.id)).all()
        assert [r.finished_at is not None for r in runs] == [True, True]
        for run in runs:
            assert kept_final(session, run.id) is not None, run.id
        for name in ("failures", "vector"):
            kept = select(func.count()).select_from(RunSnapshot).where(RunSnapshot.name == name)
            assert session.scalar(kept) == 2, name


def test_benchmarks_and_docs_name_no_path_of_the_machine_they_ran_on() -> None:
    files = [*ROOT.joinpath("benchmarks").rglob("*.py"), *ROOT.joinpath("benchmarks").rglob("*.md")]
    files += list(ROOT.joinpath("docs").glob("*.md"))
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert found == []
    skips = [str(p.relative_to(ROOT)) for p in files if p.suffix == ".py" and "# fmt: skip" in p.read_text()]
    assert skips == []
