"""A run of several heuristics side by side (`solve --heuristic a,b,c`, issue 36; on workers:
test_matrix_distributed): each (level, heuristic) gives what a run of that heuristic alone gives; the
matrix is ordered level by level; rerun, --skip-solved and resume take its cells one by one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.inprocess import exported, invoke

PACKS = Path(__file__).resolve().parents[2] / "examples" / "packs"
# Node counts mean the same in every run; a node limit (not a time limit) makes who fails the same too.
NODE_LIMIT = "20000"
SUDOKU = ("plain", "dlx", "propagate")
SLIDING = ("astar", "idastar", "pdb")
MATRIX = f"sudoku={'+'.join(SUDOKU)},sliding={'+'.join(SLIDING)}"
DECIDED = {"solved", "no_solution"}


def pack(tmp_path: Path) -> Path:
    out = tmp_path / "pack"
    out.mkdir(parents=True)
    shutil.copy(PACKS / "sudoku" / "hard.sdk", out / "hard.sdk")
    shutil.copy(PACKS / "sliding" / "levels.json", out / "levels.json")
    return out


def solve(env: dict[str, str], *args: str) -> dict:
    out = invoke("solve", *args, "--node-limit", NODE_LIMIT, "-j", "2", "-q", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def cells(records: list[dict]) -> dict[tuple[str, str], tuple[str, int]]:
    return {(r["level_hash"], r["heuristic"]): (r["status"], r["nodes"]) for r in records}


@pytest.mark.slow
def test_a_matrix_run_gives_each_heuristic_what_its_own_run_gives(tmp_path: Path, sqlite_url: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    levels = pack(tmp_path)
    solve(env, str(levels), "--heuristic", MATRIX, "--label", "matrix")
    matrix = exported("matrix", env)
    separate: dict[tuple[str, str], tuple[str, int]] = {}
    for i in range(3):
        label = f"alone-{i}"
        solve(env, str(levels), "--heuristic", f"sudoku={SUDOKU[i]},sliding={SLIDING[i]}", "--label", label)
        separate |= cells(exported(label, env))

    assert cells(matrix) == separate and len(matrix) == len(separate)
    # Level by level: each level's heuristics next to each other, in the order given.
    for i in range(0, len(matrix), 3):
        group = matrix[i : i + 3]
        assert len({r["level_hash"] for r in group}) == 1
        assert [r["heuristic"] for r in group] == list(SUDOKU if group[0]["kind"] == "sudoku" else SLIDING)
    assert any(r["status"] not in DECIDED for r in matrix)  # something for rerun and --skip-solved

    # report matrix of one kind: a column per heuristic of the run, each cell its attempt.
    out = invoke("report", "matrix", "matrix", "--kind", "sudoku", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [c["label"] for c in data["columns"]] == list(SUDOKU)
    for row in data["rows"]:
        got = [(c["status"], c["nodes"]) for c in row["cells"]]
        assert got == [separate[row["level_hash"], h] for h in SUDOKU]
    decided_by_any = {h for (h, _), (status, _) in separate.items() if status in DECIDED}
    sudoku_levels = {r["level_hash"] for r in matrix if r["kind"] == "sudoku"}
    assert data["virtual_best"]["decided"] == len(decided_by_any & sudoku_levels)

    # A scatter of any two of its heuristics.
    plot = tmp_path / "plain-dlx.svg"
    args = ("report", "matrix", "matrix", "--kind", "sudoku", "--scatter", str(plot), "--pair", "plain,dlx")
    out = invoke(*args, env=env)
    assert out.returncode == 0, out.stderr
    assert plot.read_text().lstrip().startswith("<?xml") and "plain: wall s (PAR-2)" in plot.read_text()
    out = invoke(*args[:-1], "plain,astar", env=env)
    assert out.returncode == 2 and "name two columns as X,Y, from plain, dlx, propagate" in out.stderr

    # report compare keeps one result per level and run: it sends a matrix run to report matrix.
    out = invoke("report", "compare", "matrix", "alone-0", env=env)
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1
    assert "tried each level with several heuristics" in out.stderr and "report matrix" in out.stderr

    # Over every kind, a column per place in the --heuristic text: sudoku's i-th heuristic beside sliding's.
    out = invoke("report", "matrix", "matrix", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    whole = json.loads(out.stdout)
    places = [set(place) for place in zip(SUDOKU, SLIDING, strict=True)]
    assert [set(c["label"].split("|")) for c in whole["columns"]] == places
    assert whole["virtual_best"]["levels"] == len(whole["rows"]) == len(matrix) // 3
    for row in whole["rows"]:
        names = SUDOKU if row["kind"] == "sudoku" else SLIDING
        assert [(c["status"], c["nodes"]) for c in row["cells"]] == [
            separate[row["level_hash"], h] for h in names
        ]

    # report summary: each heuristic's figures are its attempts' in the export; the table has a row each.
    out = invoke("report", "summary", "matrix", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert sorted(summary["by_heuristic"]) == sorted(SUDOKU + SLIDING)
    for name, f in summary["by_heuristic"].items():
        mine = [r for r in matrix if r["heuristic"] == name]
        assert f["total"] == len(mine) and f["decided"] == sum(r["status"] in DECIDED for r in mine)
        assert f["solved"] == sum(r["status"] == "solved" for r in mine)
        assert f["nodes_total"] == sum(r["nodes"] for r in mine)
        assert f["cpu_s_total"] == pytest.approx(sum(r["cpu_s"] for r in mine), abs=2e-3)
    table = invoke("report", "summary", "matrix", env=env)
    assert table.returncode == 0, table.stderr
    for name, f in summary["by_heuristic"].items():
        assert any(
            line.split()[:4] == [name, str(f["solved"]), str(f["decided"]), str(f["total"])]
            for line in table.stdout.splitlines()
        )

    # report hardest ranks each level once, by its best heuristic: decided first, then the lowest PAR-2.
    out = invoke("report", "hardest", "--run", "matrix", "--top", "100", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    hardest = json.loads(out.stdout)
    by_level: dict[str, list[dict]] = {}
    for r in matrix:
        by_level.setdefault(r["level_hash"], []).append(r)
    assert sorted(h["level_hash"] for h in hardest) == sorted(by_level)

    def goodness(r: dict) -> tuple:
        decided = r["status"] in DECIDED
        return (not decided, r["wall_s"] if decided else 2 * r["wall_s"])

    for h in hardest:
        attempts = by_level[h["level_hash"]]
        least = min(goodness(r) for r in attempts)
        # The export rounds times: heuristics equally fast to 0.1 ms may each be the best.
        best = [(r["heuristic"], r["status"], r["nodes"]) for r in attempts if goodness(r) == least]
        assert (h["heuristic"], h["status"], h["nodes"]) in best
    undecided = [h["status"] not in DECIDED for h in hardest]
    assert undecided == sorted(undecided, reverse=True)  # levels no heuristic decided come first

    # --skip-solved runs only the cells not decided before with their heuristic.
    failed = {k for k, (status, _) in separate.items() if status not in DECIDED}
    out = invoke(
        "solve", str(levels), "--heuristic", MATRIX, "--skip-solved", "--label", "skipping",
        "--node-limit", NODE_LIMIT, "-j", "2", "--format", "json", env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["total"] == len(failed)
    settled = set(separate) - failed
    said = f"{len(settled)} attempt(s) of {len({h for h, _ in settled})} level(s) carried over"
    assert said in out.stderr, out.stderr
    assert set(cells(exported("skipping", env))) == failed

    # rerun of the matrix run: the cells that failed, each with its own heuristic.
    out = invoke("rerun", "matrix", "--status", "timeout", "-q", "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    child = str(json.loads(out.stdout)["run"])
    timed_out = {k for k, r in cells(matrix).items() if r[0] == "timeout"}
    assert timed_out and set(cells(exported(child, env))) == timed_out


def test_check_counts_a_matrix_s_levels_once_and_its_heuristics_each(tmp_path: Path, sqlite_url: str) -> None:
    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    out = invoke("check", str(pack(tmp_path)), "--heuristic", MATRIX, "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    check = json.loads(out.stdout)
    alone = invoke("check", str(pack(tmp_path / "alone")), "--format", "json", env=env)
    assert alone.returncode == 0, alone.stderr
    assert check["levels"] == json.loads(alone.stdout)["levels"]
    for kind, names in (("sudoku", SUDOKU), ("sliding", SLIDING)):
        entry = check["kinds"][kind]
        assert entry["heuristics"] == {name: entry["levels"] for name in names}
    assert check["distributed"]["problem"] is None  # submit sends a matrix too
    # solve says both counts as it starts.
    out = invoke(
        "solve", str(pack(tmp_path / "solve")), "--heuristic", MATRIX, "--node-limit", NODE_LIMIT, env=env
    )
    assert out.returncode == 0, out.stderr
    assert f"run 1: {3 * check['levels']} attempt(s) ({check['levels']} level(s)) to run" in out.stderr


@pytest.mark.slow
def test_resuming_a_matrix_run_runs_only_its_attempts_without_a_result(
    tmp_path: Path, sqlite_url: str
) -> None:
    import sqlalchemy as sa

    env = {"PACKSOLVE_DATABASE_URL": sqlite_url}
    levels = pack(tmp_path)
    run = str(solve(env, str(levels), "--heuristic", MATRIX, "--label", "matrix")["run"])
    before = cells(exported("matrix", env))
    # As a stop leaves them: one heuristic's attempts of two levels cancelled before their result.
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as conn:
        picked = conn.execute(
            sa.text("SELECT id, level_hash, heuristic FROM attempts WHERE heuristic IN ('dlx', 'idastar')")
        ).all()[:2]
        for attempt_id, _, _ in picked:
            conn.execute(
                sa.text(
                    "UPDATE attempts SET status = 'cancelled', wall_s = NULL, nodes = NULL, "
                    "message = 'cancelled by the user before it ran' WHERE id = :id"
                ),
                {"id": attempt_id},
            )
        untouched = dict(
            conn.execute(
                sa.text("SELECT id, finished_at FROM attempts WHERE run_id = :r"), {"r": int(run)}
            ).all()
        )
    engine.dispose()
    out = invoke("resume", run, "-q", env=env)
    assert out.returncode == 0, out.stderr
    assert cells(exported("matrix", env)) == before  # each ran again with its own heuristic, nothing else
    engine = sa.create_engine(sqlite_url)
    with engine.connect() as conn:
        after = dict(
            conn.execute(
                sa.text("SELECT id, finished_at FROM attempts WHERE run_id = :r"), {"r": int(run)}
            ).all()
        )
    engine.dispose()
    rerun = {i for i in after if after[i] != untouched[i]}
    assert rerun == {attempt_id for attempt_id, _, _ in picked}
