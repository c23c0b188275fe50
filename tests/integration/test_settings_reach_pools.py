"""The settings a command line resolves (flag > environment > ./packsolve.toml > default) are the ones its
pool processes use: a local run's pool processes and their solver children, and a real Celery worker's
pool processes. Each test gives a setting through one source, a different value through a weaker one,
and looks at what the pool process did: where its solver built its pattern tables (cache_dir), which
kinds it could solve (extra_kinds), which database it wrote to (database_url), how long its lease runs
(lease_ttl).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from packsolve import settings
from tests.support.chaos_pack import export_records
from tests.support.inprocess import invoke
from tests.support.kinds import chaos_kind
from tests.support.services import run_cli, wait_for_run

# A 3x3 sliding level: its `pdb` heuristic builds two small pattern tables in the cache directory,
# inside the solver child of the pool process that runs it.
SLIDING = {"kind": "sliding", "tiles": [[1, 4, 2], [3, 0, 5], [6, 7, 8]]}
TABLES = "sliding-pdb-v1-3x3-*.bin"


@pytest.fixture(autouse=True)
def no_settings_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No setting comes from the test's own environment; the default cache directory is the test's."""
    for name in ("database_url", "cache_dir", "extra_kinds", "lease_ttl", "result_flush"):
        monkeypatch.delenv(settings.env_name(name), raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "default-cache"))


def write_pack(folder: Path, chaos: int) -> Path:
    """Write a pack of the sliding level and chaos levels (a kind only extra_kinds registers)."""
    folder.mkdir(parents=True)
    path = folder / "pack.jsonl"
    lines = [SLIDING] + [{"kind": "chaos", "id": i, "ms": 20} for i in range(chaos)]
    path.write_text("".join(json.dumps(level) + "\n" for level in lines))
    return path


def write_settings(cwd: Path, **values: object) -> None:
    """Write cwd/packsolve.toml with these [settings]."""
    cwd.mkdir(parents=True, exist_ok=True)
    lines = ["[settings]"] + [f"{name} = {json.dumps(value)}" for name, value in values.items()]
    (cwd / "packsolve.toml").write_text("\n".join(lines) + "\n")


def tables(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob(TABLES))


def solved_all(database: str, run_id: int, levels: int) -> None:
    records = export_records(database, run_id)
    assert len(records) == levels and {r["status"] for r in records} == {"solved"}, records


def test_a_local_runs_pool_processes_use_the_file_and_the_environment_the_command_resolved(
    tmp_path: Path,
) -> None:
    cwd, from_file, from_env = tmp_path / "cwd", tmp_path / "file-cache", tmp_path / "env-cache"
    write_settings(cwd, cache_dir=str(from_file), extra_kinds=[chaos_kind.ENV])
    pack = write_pack(tmp_path / "pack", chaos=4)
    db = f"sqlite:///{tmp_path / 'local.db'}"

    res = run_cli("solve", str(pack), "-q", "-j", "2", "--database-url", db, cwd=cwd)
    assert res.returncode == 0, res.stderr
    solved_all(db, 1, 5)  # the pool processes knew the chaos kind: the file's extra_kinds reached them
    assert len(tables(from_file)) == 2  # built by the solver child where the file said
    assert tables(tmp_path / "default-cache" / "packsolve") == []

    # The environment wins over the file, in the pool processes too.
    res = run_cli(
        "solve",
        str(pack),
        "-q",
        "-j",
        "2",
        "--database-url",
        db,
        cwd=cwd,
        env={"PACKSOLVE_CACHE_DIR": str(from_env)},
    )
    assert res.returncode == 0, res.stderr
    solved_all(db, 2, 5)
    assert len(tables(from_env)) == 2


def test_a_celery_workers_pool_processes_use_the_flag_the_file_and_the_environment_it_resolved(
    tmp_path: Path, broker: str, start_worker
) -> None:
    from packsolve.db.models import Worker
    from packsolve.db.session import get_engine, session_scope

    cwd, from_file = tmp_path / "worker-cwd", tmp_path / "file-cache"
    write_settings(cwd, cache_dir=str(from_file), extra_kinds=[chaos_kind.ENV], lease_ttl=7)
    real, decoy = tmp_path / "real.db", tmp_path / "decoy.db"
    real_url = f"sqlite:///{real}"
    invoke("db", "upgrade", "--database-url", real_url)
    # PACKSOLVE_DATABASE_URL names the decoy; the flag, which wins, the real database.
    start_worker(
        broker, f"sqlite:///{decoy}", "pools@test", concurrency=2, cwd=cwd, args=["--database-url", real_url]
    )

    pack = write_pack(tmp_path / "pack", chaos=4)
    env = {
        "PACKSOLVE_DATABASE_URL": real_url,
        "PACKSOLVE_BROKER_URL": broker,
        "PACKSOLVE_EXTRA_KINDS": chaos_kind.ENV,
    }
    res = invoke("submit", str(pack), env=env)
    assert res.returncode == 0, res.stderr
    run_id = int(res.stdout.strip().splitlines()[-1])
    wait_for_run(real_url, run_id, timeout=120)

    records = export_records(real_url, run_id)
    assert {r["status"] for r in records} == {"solved"} and len(records) == 5, (
        records
    )  # the file's extra_kinds
    assert {r["worker"] for r in records} == {
        "pools@test"
    }  # the flag's database, written by the pool processes
    assert not decoy.exists()
    assert len(tables(from_file)) == 2  # the file's cache_dir, in the pool process's solver child
    with session_scope(get_engine(real_url)) as s:
        leases = [w for w in s.query(Worker).all() if w.host == "pools@test" and w.lease_until > w.renewed_at]
        ttls = {round((w.lease_until - w.renewed_at).total_seconds(), 1) for w in leases}
    assert leases and ttls == {7.0}, ttls  # the file's lease_ttl, in each pool process's lease
