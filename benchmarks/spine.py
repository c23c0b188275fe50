"""The spine end to end, as a new user runs it: local solve, then the same pack on two workers.

  python -m benchmarks.spine [PACK]        # default: examples/packs; results in benchmarks/results/spine.md

1. `packsolve solve PACK --time-limit 10 --jobs 2` into a fresh SQLite file, then
   `packsolve export latest --format jsonl`; every solution checked by its kind's verify.
2. The same pack through `packsolve submit` with two `packsolve worker` processes on a
   redis-server started for the run and a fresh PostgreSQL database; same checks.
3. A level `plain` cannot finish, under `--time-limit 1`: how far past the limit it ends.
The statuses of both runs must agree level by level.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import RESULTS, ROOT, parser, pg_database, publish, redis_server
from packsolve.levels import read_levels
from packsolve.puzzles import get_kind

CLI = [sys.executable, "-m", "packsolve"]
PG_ADMIN = os.environ.get("PACKSOLVE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([*CLI, *args], env={**os.environ, **env}, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"packsolve {' '.join(args)} failed:\n{res.stderr}")
    return res


def checked_export(pack: Path, env: dict[str, str]) -> dict[str, dict]:
    """Return export records by level name, after checking every solution with its kind's verify."""
    records = [json.loads(line) for line in cli("export", "latest", env=env).stdout.splitlines()]
    levels = {lv.hash: lv for lv in read_levels([pack])}
    for r in records:
        if r["status"] == "solved":
            kind = get_kind(r["kind"])
            problem = kind.verify(kind.parse(levels[r["level_hash"]].data), r["solution"])
            assert problem is None, (r["level"], problem)
    return {r["level"]: r for r in records}


def counts(records: dict[str, dict]) -> str:
    tally: dict[str, int] = {}
    for r in records.values():
        tally[r["status"]] = tally.get(r["status"], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pack", type=Path, nargs="?", default=ROOT / "examples" / "packs")
    pack = p.parse_args().pack.resolve()
    work = Path(tempfile.mkdtemp(prefix="packsolve-spine-"))
    lines = [
        "# The spine end to end",
        "",
        f"pack: `{pack.relative_to(ROOT) if pack.is_relative_to(ROOT) else pack}`",
        f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)",
        "",
    ]
    try:
        env = {"PACKSOLVE_DATABASE_URL": f"sqlite:///{work / 'local.db'}"}
        t = time.monotonic()
        cli("solve", str(pack), "--time-limit", "10", "--jobs", "2", "-q", env=env)
        local_s = time.monotonic() - t
        local = checked_export(pack, env)
        lines.append(
            f"- local `solve --jobs 2`: {len(local)} levels in {local_s:.1f} s wall ({counts(local)}); "
            "every solution verified"
        )
        with pg_database(PG_ADMIN) as url, redis_server() as broker:
            env = {"PACKSOLVE_DATABASE_URL": url, "PACKSOLVE_BROKER_URL": broker}
            workers = [start_worker(name, env, work) for name in ("w1", "w2")]
            try:
                lines += distributed(pack, env, work, local)
                lines += past_the_limit(env, work)
            finally:
                for w in workers:
                    os.killpg(w.pid, signal.SIGTERM)
                for w in workers:
                    w.wait(30)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    publish("\n".join(lines) + "\n", RESULTS / "spine.md")


def start_worker(name: str, env: dict[str, str], work: Path) -> subprocess.Popen:
    """Start `packsolve worker -n NAME@spine` in a session of its own, its log in work/NAME.log."""
    log = open(work / f"{name}.log", "w")  # noqa: SIM115 (lives as long as the worker)
    argv = [*CLI, "worker", "-n", f"{name}@spine"]
    env = {**os.environ, **env}
    return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def distributed(pack: Path, env: dict[str, str], work: Path, local: dict[str, dict]) -> list[str]:
    """Submit the pack to the two workers once they are ready; return the lines saying how it went.

    Every solution is verified, and the statuses must agree level by level with the local run's.
    """
    while not all(" ready." in (work / f"{n}.log").read_text() for n in ("w1", "w2")):
        time.sleep(0.2)
    t = time.monotonic()
    run_id = cli("submit", str(pack), "--time-limit", "10", env=env).stdout.split()[-1]
    while json.loads(cli("status", run_id, "--format", "json", env=env).stdout)["done"] < len(local):
        time.sleep(0.2)
    dist_s = time.monotonic() - t
    dist = checked_export(pack, env)
    by_worker: dict[str, int] = {}
    for r in dist.values():
        by_worker[r["worker"]] = by_worker.get(r["worker"], 0) + 1
    same = all(dist[name]["status"] == r["status"] for name, r in local.items())
    assert same, "the statuses of the local and the distributed run differ"
    return [
        f"- distributed, 2 workers, PostgreSQL: {len(dist)} levels in {dist_s:.1f} s from submit to "
        f"the last result ({counts(dist)}); per worker {by_worker}; every solution verified",
        f"- statuses agree level by level between the two runs: {same}",
    ]


def past_the_limit(env: dict[str, str], work: Path) -> list[str]:
    """Run a level `plain` cannot finish under --time-limit 1, then a small one; return the line."""
    hard = work / "hard"
    hard.mkdir()
    (hard / "a.json").write_text(
        json.dumps({"kind": "onestroke", "grid": ["S.#" + "." * 11] + ["." * 14] * 13})
    )
    (hard / "b.json").write_text(json.dumps({"kind": "onestroke", "grid": ["S...", "...."]}))
    cli("submit", str(hard), "--heuristic", "plain", "--time-limit", "1", env=env)
    while json.loads(cli("status", "--format", "json", env=env).stdout)["done"] < 2:
        time.sleep(0.2)
    recs = sorted(checked_export(hard, env).values(), key=lambda r: r["level"])
    return [
        f"- `plain` on a 14x14 level under `--time-limit 1`: {recs[0]['status']} after "
        f"{recs[0]['wall_s']:.2f} s wall, {recs[0]['nodes']:,} nodes; the next level: "
        f"{recs[1]['status']} by {recs[1]['worker']}"
    ]


if __name__ == "__main__":
    main()
